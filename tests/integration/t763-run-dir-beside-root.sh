#!/bin/sh
# The run's dir is made by the monitor while the sandbox's child builds the
# root (issue 28): the child opens the overlay's upper and work dirs only
# once the monitor says they exist, and the command never runs before the
# run's meta says it is running. A run dir that cannot be made fails the
# run as it did before any launch: exit 125, the reason, nothing ran,
# nothing left behind.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
S=$d/s
mkdir -p "$d/p" "$d/mark"
echo a >"$d/p/f"
running() { "$NSRUN" history --state-dir "$S" | grep -c ' running ' ; }

# 1. A slow monitor: the root waits for the run dir (without the wait the
# child finds no upper dir and the run fails), and the command sees its
# project through the overlay, whose changes are applied.
if [ -n "${NSR_TEST_HOOKS:-}" ]; then
	run env NSRUN_TEST_RUN_DIR_DELAY_MS=300 "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- \
		sh -c 'cat f > seen; echo b > f'
	is "$rc" 0 "a run whose run dir comes 300 ms late works"
	is "$(cat "$d/p/seen"):$(cat "$d/p/f")" "a:b" "... the command saw the project and its writes were applied"
	is "$(running)" 0 "... and the run is not left running"
	wait_background
	run env NSRUN_TEST_RUN_DIR_DELAY_MS=300 NSRUN_TIMING=1 "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
	like "$err" "^  run dir and record, beside the root +[0-9]" \
		"... NSRUN_TIMING shows the run dir made beside the root's build"
	wait_background
else
	for c in "a run whose run dir comes late works" "... the command saw the project" "... not left running" \
		"... NSRUN_TIMING shows it"; do
		skip "$c" "the slow run dir needs a build with --enable-test-hooks (NSR_TEST_HOOKS=1)"
	done
fi

# 2. The run dir cannot be made: runs/ refuses new entries (read-only for
# the user, immutable for root).
refuse() { if is_root; then chattr +i "$S/runs" 2>/dev/null; else chmod 0500 "$S/runs"; fi; }
allow() { if is_root; then chattr -i "$S/runs"; else chmod 0700 "$S/runs"; fi; }
n_before=$(ls "$S/runs" | wc -l)
f_before=$(cat "$d/p/f")
if refuse; then
	run "$NSRUN" -p "$d/p" --state-dir "$S" --rw "$d/mark" -- sh -c ": > '$d/mark/ran'; echo c > f"
	allow
	is "$rc" 125 "a run dir that cannot be made: exit 125"
	like "$err" "cannot create the run dir runs/[^ ]+: (Permission denied|Operation not permitted)" \
		"... and it says why"
	check "... the command never ran" test ! -e "$d/mark/ran"
	is "$(cat "$d/p/f")" "$f_before" "... the project is untouched"
	is "$(ls "$S/runs" | wc -l)" "$n_before" "... no run dir is left behind"
	is "$(running)" 0 "... and no run is marked running"
	unlike "$err" "Can't find source path" "... the sandbox's child did not go on without it"
else
	for c in "exit 125" "says why" "never ran" "untouched" "nothing left" "not running" "child did not go on"; do
		skip "a run dir that cannot be made: $c" "chattr +i is not supported on $S (the root half needs it)"
	done
fi

# 3. Then runs work again.
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c 'echo d > f'
is "$rc:$(cat "$d/p/f")" "0:d" "once runs/ takes entries again, a run works"
wait_background
done_testing
