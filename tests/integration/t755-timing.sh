#!/bin/sh
# NSRUN_TIMING=1 prints where one run spent its time, phase by phase,
# the sandbox child's and the command's phases included (they mark a
# shared page); without it nothing is printed.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
mkdir -p "$d/p"

run env NSRUN_TIMING=1 "$NSRUN" -p "$d/p" --state-dir "$d/s" -- true
is "$rc" 0 "a project run with NSRUN_TIMING=1"
like "$err" "^nsrun timing \\(ms\\)" "the table is printed"
for phase in "options and profiles parsed" "prepare \\(projects" "run dir and record" "seccomp filters" \
	"monitor: clone" "child: ids mapped" "child: mounts" "command: confined" "command: execve" \
	"monitor: command ended" "capture" "apply" "report" "exit"; do
	like "$err" "^  $phase.* [0-9]+\\.[0-9]{3} +[0-9]+\\.[0-9]{3}$" "phase: $phase"
done
# In time order: the since-start column never goes down.
sorted=$(printf '%s\n' "$err" | sed -n 's/.* \([0-9]*\.[0-9]*\)$/\1/p')
is "$(printf '%s\n' "$sorted" | sort -n | tr '\n' ' ')" "$(printf '%s\n' "$sorted" | tr '\n' ' ')" "the phases are in time order"

run env NSRUN_TIMING=1 "$NSRUN" $BASE --unshare-all -- true
is "$rc" 0 "a plain launch with NSRUN_TIMING=1"
like "$err" "^  child: mounts" "a plain launch has the child's phases too"

run env NSRUN_TIMING=0 "$NSRUN" -p "$d/p" --state-dir "$d/s" -- true
unlike "$err" "timing" "NSRUN_TIMING=0 prints nothing"
run "$NSRUN" -p "$d/p" --state-dir "$d/s" -- true
unlike "$err" "timing" "without it nothing is printed"
done_testing
