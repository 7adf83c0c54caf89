#!/bin/sh
# Back-to-back `git commit` outside, then `git commit` inside nsrun, N times
# (default 50): counts the runs that reported a conflict. Each host commit
# ends before nsrun starts, so every conflict is a false one.
# Usage: bench/git-race.sh NSRUN [N]   (prints "conflicts C of N" and exits 1 if C > 0)
set -u
nsrun=${1:?usage: git-race.sh NSRUN [N]}
n=${2:-50}
command -v git >/dev/null 2>&1 || { echo "skip: no git"; exit 77; }
d=$(mktemp -d "${TMPDIR:-/tmp}/nsr-race.XXXXXX") || exit 99
trap 'rm -rf "$d"' EXIT INT TERM
G=$d/repo
mkdir -p "$G"
git -C "$G" init -q && git -C "$G" config user.email t@t && git -C "$G" config user.name t || exit 99
echo 0 > "$G/a" && git -C "$G" add a && git -C "$G" commit -qm init || exit 99
conflicts=0 failed=0 i=0
while [ "$i" -lt "$n" ]; do
	i=$((i + 1))
	echo "out $i" > "$G/a"
	git -C "$G" commit -qam "out $i" || { failed=$((failed + 1)); continue; }
	"$nsrun" -p "$G" --state-dir "$d/state" -- sh -c "echo in $i > b; git add b && git -c user.email=t@t -c user.name=t commit -qm 'in $i'" \
		>"$d/out" 2>"$d/err"
	rc=$?
	if grep -q conflict "$d/err"; then
		conflicts=$((conflicts + 1))
		[ "$conflicts" -le 3 ] && sed 's/^/# /' "$d/err" >&2
		# Put the repo back in step for the next round.
		git -C "$G" reset -q --hard HEAD 2>/dev/null
	elif [ "$rc" -ne 0 ] || [ "$(git -C "$G" log -1 --format=%s)" != "in $i" ]; then
		failed=$((failed + 1))
		[ "$failed" -le 3 ] && sed 's/^/# /' "$d/err" >&2
	fi
	# Keep the state dir small: old runs are not needed.
	rm -rf "$d/state"
done
echo "conflicts $conflicts of $n (other failures $failed)"
[ "$conflicts" -eq 0 ] && [ "$failed" -eq 0 ]
