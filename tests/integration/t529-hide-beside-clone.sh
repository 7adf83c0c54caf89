#!/bin/sh
# issue 28: a project run looks hide.list's paths up in the monitor after
# the clone, while the sandbox child makes its namespaces, and the child
# takes their mounts before it mounts anything. The root is the one a run
# that looked them up first gets, the same mounts in the same order; a
# hide.list that cannot be read still stops the run before the command,
# with no run left; a child whose hidden paths did not arrive whole mounts
# nothing and runs nothing; and the child has the fds for the binds of
# thousands of hidden files.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
own_home_and_data "$d"
P=$d/p
mkdir -p "$P/many" "$H/.config/gh" "$H/.aws"
echo leak > "$H/.netrc"
echo leak > "$H/.config/gh/hosts.yml"
echo leak > "$H/.aws/credentials"
echo fine > "$H/.beside"
echo leak > "$P/.env"

# Each named file: its contents, "empty" (a hidden file reads as /dev/null)
# or "-" (not there: in a hidden dir).
show='for f in "$@"; do c=$(cat "$f" 2>/dev/null) || c=-; echo "${c:-empty}"; done'
files="$H/.netrc $H/.config/gh/hosts.yml $H/.aws/credentials $P/.env $H/.beside"
NSRUN_TIMING=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --hide "$P/.env" --quiet -- sh -c "$show" sh $files
is "$rc" 0 "a project run"
is "$(echo "$out" | tr '\n' ' ')" "empty - - empty fine " "... hides hide.list's paths and --hide's, and shows the rest"
like "$err" "monitor: hidden paths looked up" "... looked up by the monitor, after the clone"

# A hide.list that cannot be read (a dir in its place: root reads past a
# mode): the run stops before the command, says why, and leaves no run.
mv "$data/profiles/hide.list" "$d/hide.list"
mkdir "$data/profiles/hide.list"
mkdir "$d/m"
runs_before=$(ls "$d/state/runs" | wc -l)
run "$NSRUN" -p "$P" --state-dir "$d/state" --bind "$d/m" "$d/m" --quiet -- touch "$d/m/ran"
is "$rc" 125 "an unreadable hide.list fails the run"
like "$err" "hide.list" "... naming it"
check "... before the command ran" test ! -e "$d/m/ran"
is "$(ls "$d/state/runs" | wc -l)" "$runs_before" "... and leaves no run behind"
rmdir "$data/profiles/hide.list"
mv "$d/hide.list" "$data/profiles/hide.list"

# Thousands of hidden files: each bind takes an fd while the root is
# built, past a soft limit of 1024. The monitor raised it for the plan it
# had; the child raises it again (to the hard limit) for the ops that came
# after the clone.
i=0
while [ $i -lt 1500 ]; do
	: > "$P/many/f$i"
	i=$((i + 1))
done
echo leak > "$P/many/f1499"
if [ "$(ulimit -H -n)" != unlimited ] && [ "$(ulimit -H -n)" -lt 4000 ]; then
	skip "1500 hidden files under a soft limit of 1024 fds" "the hard limit of open files is $(ulimit -H -n)"
else
	run sh -c "ulimit -S -n 1024 && exec '$NSRUN' -p '$P' --state-dir '$d/state' --hide '$P/many/*' --quiet -- sh -c 'cat $P/many/f1499 $P/many/f0; echo done'"
	is "$rc:$out" "0:done" "1500 hidden files under a soft limit of 1024 fds: all hidden"
fi
rm -rf "$P/many"

if [ -z "${NSR_TEST_HOOKS:-}" ]; then
	diag "SKIP: the comparison and the truncated ops need a build with --enable-test-hooks"
	rm -rf "$d"
	done_testing
fi

# The root, mount by mount (mount point, options, type, source; the ids
# differ), with the hidden paths looked up after the clone and before it.
mounts='sed -E "s/^[0-9]+ [0-9]+ [0-9]+:[0-9]+ //; s/ shared:[0-9]+| master:[0-9]+| propagate_from:[0-9]+//g" /proc/self/mountinfo'
run "$NSRUN" -p "$P" --state-dir "$d/state" --hide "$P/.env" --quiet -- sh -c "$mounts"
later=$out
NSRUN_TEST_HIDDEN_AT_ONCE=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --hide "$P/.env" --quiet -- sh -c "$mounts"
is "$out" "$later" "the root is the same, mount by mount, whenever the hidden paths are looked up"
like "$later" "$H/.netrc" "... and it holds the hidden files' mounts"

# Ops that do not unpack: the child mounts nothing and runs nothing.
NSRUN_TEST_SLOTS_TRUNCATED=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --bind "$d/m" "$d/m" --quiet -- touch "$d/m/ran"
is "$rc" 125 "hidden paths that do not arrive whole fail the run"
like "$err" "hidden paths did not come from the monitor" "... saying so"
check "... and the command never runs" test ! -e "$d/m/ran"

rm -rf "$d"
done_testing
