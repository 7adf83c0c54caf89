#!/bin/sh
# Project mode: no silent loss. A failed capture exits 125 and keeps the
# run; bad output targets and writable binds over a project are refused
# before the command starts; hard links and the root's mode survive.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"

# 1. An unreadable project: the command runs and writes, the capture fails.
if ! is_root; then
	P=$d/unreadable; mkdir -p "$P"; echo a > "$P/a"; chmod 000 "$P"
	run "$NSRUN" -p "$P" $NS --report "$d/r1.json" -- sh -c 'echo work > new'
	chmod 755 "$P"
	is "$rc" "125" "a failed capture exits 125"
	like "$(cat "$d/r1.json" 2>/dev/null)" '"outcome": *"failed"' "... the report says failed"
	like "$err" "run [^ ]* kept: the capture failed" "... the run is kept, and nsrun says so"
	run_id=$(printf '%s\n' "$err" | sed -n 's/.*run \([^ ]*\) kept: the capture failed.*/\1/p' | head -1)
	run "$NSRUN" commit $NS "$run_id"
	is "$rc:$(cat "$P/new" 2>/dev/null)" "0:work" "... and once the project is readable, nsrun commit applies the work"
else
	skip "a failed capture" "root reads any project"
fi
done_testing
