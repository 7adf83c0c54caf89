#!/bin/sh
# Project mode: "changed on the host during the run" (docs/conflicts.md).
# Host writes that end before nsrun starts are never conflicts, however
# close; every host write after the command started is one.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
command -v python3 >/dev/null 2>&1 || skip_all "needs python3"

# 1. git commit outside, right away git commit inside, 50 times.
if command -v git >/dev/null 2>&1; then
	G=$d/repo; mkdir -p "$G"
	(cd "$G" && git init -q && git config user.email t@t && git config user.name t && echo 0 > a && git add a &&
		git commit -qm init) >/dev/null 2>&1
	conflicts=0 lost=0 first=
	for i in $(seq 50); do
		echo "out $i" > "$G/a"
		git -C "$G" commit -qam "out $i"
		"$NSRUN" -p "$G" $NS -- sh -c "echo in $i > b; git add b && git -c user.email=t@t -c user.name=t commit -qm 'in $i'" \
			>/dev/null 2>"$d/err"
		if grep -q conflict "$d/err"; then
			conflicts=$((conflicts + 1))
			[ -n "$first" ] || first=$(cat "$d/err")
			git -C "$G" reset -q --hard HEAD
		elif [ "$(git -C "$G" log -1 --format=%s)" != "in $i" ]; then
			lost=$((lost + 1))
			[ -n "$first" ] || first=$(cat "$d/err")
		fi
		rm -rf "$d/state"
	done
	[ -n "$first" ] && diag "$first"
	is "$conflicts:$lost" "0:0" "50 back-to-back git commits outside then inside: no false conflict, every inside commit applied"
	check "... and the repository is sound" sh -c "git -C \"$G\" fsck >/dev/null 2>&1"
else
	skip "git commits outside then inside" "no git"
fi

# 2. A host write right after the command started (it signals through a
# --rw dir) is a conflict, every time, with a fine (stat first: multigrain
# timestamps) or a coarse ctime.
P=$d/proj; S=$d/sync; mkdir -p "$P" "$S"
host_writer() { host_write_when_ready "$S" "$P/f" "$1"; }
missed=0 n=0
for mode in stat nostat stat nostat stat nostat stat nostat stat nostat; do
	n=$((n + 1))
	rm -f "$S/ready" "$S/go"; echo base > "$P/f"
	[ "$mode" = stat ] && stat "$P/f" >/dev/null
	host_writer "$mode" & hw=$!
	"$NSRUN" -p "$P" $NS --rw "$S" -- sh -c 'cat f >/dev/null; : > '"$S"'/ready; i=0
		while [ ! -e '"$S"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; echo sandbox >> f' \
		>/dev/null 2>"$d/err"
	wait $hw
	if ! grep -q "f changed on the host during the run" "$d/err" || [ "$(cat "$P/f")" != "base
host" ]; then
		missed=$((missed + 1)); diag "$mode: $(cat "$d/err")" "f: $(cat "$P/f")"
	fi
done
is "$missed" "0" "a host write right after the command started is a conflict ($n runs) and the host's version stays"

# 3. The same for a file the command deletes, and for a dir it removes.
rm -f "$S/ready" "$S/go"; echo base > "$P/g"; mkdir -p "$P/dd"; echo x > "$P/dd/x"
python3 - "$S" "$P" <<'PY' &
import os, sys, time
s, p = sys.argv[1], sys.argv[2]
end = time.monotonic() + 20
while not os.path.exists(s + "/ready"):
	if time.monotonic() > end: sys.exit("no ready")
	time.sleep(0.0002)
with open(p + "/g", "a") as fh: fh.write("host\n")
with open(p + "/dd/x", "a") as fh: fh.write("host\n")
open(s + "/go", "w").close()
PY
hw=$!
run "$NSRUN" -p "$P" $NS --rw "$S" -- sh -c ': > '"$S"'/ready; i=0
	while [ ! -e '"$S"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; rm -rf g dd'
wait $hw
like "$err" "conflict: g changed on the host" "a host write to a file the command deletes is a conflict"
like "$err" "conflict: dd the host changed 'dd/x'" "... and to a file in a dir it removes"
check "... both stay" test -e "$P/g" -a -e "$P/dd/x"

# 4. A host write made just before the run (no command in between) is not.
ok_runs=0
for i in $(seq 20); do
	echo "host $i" > "$P/h"; stat "$P/h" >/dev/null
	run "$NSRUN" -p "$P" $NS -- sh -c 'echo sandbox >> h'
	case $err in *conflict*) diag "$err" ;; *) [ "$(tail -1 "$P/h")" = sandbox ] && ok_runs=$((ok_runs + 1)) ;; esac
done
is "$ok_runs" "20" "a file the host wrote just before the run is applied over, 20 times of 20"

# 5. A git dir is one unit: the host commits while the command commits.
# Nothing of the command's .git applies (not its objects either: refs,
# reflogs, index and objects only make sense together); its work tree
# file does.
if command -v git >/dev/null 2>&1; then
	G=$d/unit; rm -rf "$G" "$S"; mkdir -p "$G" "$S"
	(cd "$G" && git init -q && git config user.email t@t && git config user.name t && echo 0 > a && git add a &&
		git commit -qm init) >/dev/null 2>&1
	inside_commit() { # $1: extra nsrun options; the host commits once the command started
		rm -f "$S/ready" "$S/go"
		(i=0; while [ ! -e "$S/ready" ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
		 echo host >> "$G/a"; git -C "$G" commit -qam host; : > "$S/go") &
		hc=$!
		run "$NSRUN" -p "$G" $NS --rw "$S" $1 -- sh -c ': > '"$S"'/ready; i=0
			while [ ! -e '"$S"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
			echo new > n; git add n && git -c user.email=t@t -c user.name=t commit -qm inside && git rev-parse HEAD'
		wait $hc
	}
	inside_commit "--report $d/unit.json"
	sha=$out
	like "$(cat "$d/unit.json")" '"conflict_units": *\[ *"\.git" *\]' "the report names the git dir that conflicted as a unit"
	like "$err" "conflict in the git dir \.git: none of its changes were applied" "a conflict in .git names the git dir as the unit that conflicted"
	is "$(git -C "$G" log -1 --format=%s)" "host" "... the host's commit stays"
	check "... no object of the command's commit reached .git (nothing half-applied)" sh -c "! git -C '$G' cat-file -e '$sha' 2>/dev/null"
	is "$(cat "$G/n" 2>/dev/null)" "new" "... the work tree file outside .git applies (--on-conflict=apply-rest, the default)"
	check "... the repository is sound" sh -c "git -C '$G' fsck >/dev/null 2>&1"
	is "$rc" "0" "... the exit status is the command's"
	rm -f "$G/n"
	inside_commit "--on-conflict=keep-all"
	is "$rc:$(test -e "$G/n" && echo applied)" "0:" "--on-conflict=keep-all: nothing applies, the exit status is the command's"
	like "$err" "nothing applied \(--on-conflict=keep-all\)" "... and says so"
	like "$err" "run [^ ]* kept" "... the run is kept for review"
	run_id=$(printf '%s\n' "$err" | sed -n 's/.*run \([^ ]*\) kept.*/\1/p' | head -1)
	run "$NSRUN" diff --state-dir "$d/state" "$run_id"
	like "$out" "n" "... nsrun diff shows the kept run"
	inside_commit "--on-conflict=fail"
	is "$rc:$(test -e "$G/n" && echo applied)" "125:" "--on-conflict=fail: nothing applies and nsrun exits 125"
	run "$NSRUN" -p "$G" $NS --on-conflict=bogus -- true
	like "$rc:$err" "^125:.*--on-conflict takes apply-rest, keep-all, fail, prefer-host or prefer-sandbox" "a bad --on-conflict value is refused"
	run "$NSRUN" -p "$G" $NS --on-conflict=keep-all --trace-bwrap -- true
	like "$out" "nsrun-only: .*conflict.*keep-all" "the trace says what a conflict does"
else
	skip "git dir as one unit" "no git"
fi
done_testing
