#!/bin/sh
# The start fence by the kernel's multigrain ctime floor (docs/conflicts.md,
# issue 28): on Linux 6.13 and later, with the state dir on ext4, xfs, btrfs
# or tmpfs, nsrun puts the floor past T and proves it, and the command
# starts without waiting for the coarse clock. A host write right after the
# command started is still a conflict, 30 runs of 30. Where the proof fails
# (a planted ctime-floor entry, the test hook) the command waits as before.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
command -v python3 >/dev/null 2>&1 || skip_all "needs python3"
rel=$(uname -r)
major=${rel%%.*}; minor=${rel#*.}; minor=${minor%%[!0-9]*}
[ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 13 ]; } ||
	skip_all "kernel $rel: multigrain ctimes and their floor came with 6.13 (the coarse-clock fence is t290's)"
case $(stat -f -c %T "$d") in
ext2/ext3 | xfs | btrfs | tmpfs) ;;
*) skip_all "the scratch dir is on $(stat -f -c %T "$d"), not a file system known to stamp from the kernel's clock" ;;
esac
P=$d/proj; S=$d/sync; mkdir -p "$P" "$S"

# 1. The floor is raised and the command does not wait for the coarse clock.
run env NSRUN_TIMING=1 "$NSRUN" -p "$P" $NS -- true
is "$rc" 0 "a project run"
like "$err" "^  start fence: ctime floor past T " "the ctime floor was put past T"
unlike "$err" "child: start fence \\(coarse clock\\)" "... and the command did not wait for the coarse clock"

# 2. A host write right after the command started is a conflict, every
# time: a file whose ctime was asked for (the next change gets a fine
# ctime) and one whose was not (coarse, floored).
host_writer() { host_write_when_ready "$S" "$P/f" "$1"; }
missed=0 n=0 floor=0
for i in $(seq 15); do
	for mode in stat nostat; do
		n=$((n + 1))
		rm -f "$S/ready" "$S/go"; echo base > "$P/f"
		[ "$mode" = stat ] && stat "$P/f" >/dev/null
		host_writer "$mode" & hw=$!
		NSRUN_TIMING=1 "$NSRUN" -p "$P" $NS --rw "$S" -- sh -c 'cat f >/dev/null; : > '"$S"'/ready; i=0
			while [ ! -e '"$S"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; echo sandbox >> f' \
			>/dev/null 2>"$d/err"
		wait $hw
		grep -q "start fence: ctime floor past T" "$d/err" && floor=$((floor + 1))
		if ! grep -q "f changed on the host during the run" "$d/err" || [ "$(cat "$P/f")" != "base
host" ]; then
			missed=$((missed + 1)); diag "$mode: $(grep -v '^ ' "$d/err")" "f: $(cat "$P/f")"
		fi
	done
done
is "$floor" "$n" "the floor was put past T in every run ($n)"
is "$missed" "0" "a host write right after the command started is a conflict, $n runs of $n, and the host's version stays"

# 3. A file the host wrote just before the run is not a conflict.
ok_runs=0
for i in $(seq 10); do
	echo "host $i" > "$P/h"; stat "$P/h" >/dev/null
	run "$NSRUN" -p "$P" $NS -- sh -c 'echo sandbox >> h'
	case $err in *conflict*) diag "$err" ;; *) [ "$(tail -1 "$P/h")" = sandbox ] && ok_runs=$((ok_runs + 1)) ;; esac
done
is "$ok_runs" "10" "a file the host wrote just before the run is applied over, 10 times of 10"

# 4. A planted ctime-floor entry is never followed: that run waits for the
# coarse clock, and the next makes its own file.
echo victim > "$d/victim"; chmod 0644 "$d/victim"
before=$(stat -c '%Z %z %a' "$d/victim")
rm -f "$d/state/ctime-floor"; ln -s "$d/victim" "$d/state/ctime-floor"
run env NSRUN_TIMING=1 "$NSRUN" -p "$P" $NS -- true
is "$rc" 0 "a run with a symlink planted as the floor file"
like "$err" "child: start fence \\(coarse clock\\)" "... waits for the coarse clock"
unlike "$err" "ctime floor past T" "... and does not claim the floor"
is "$(stat -c '%Z %z %a' "$d/victim")" "$before" "... the symlink's target was not touched"
check "... the symlink is gone" test ! -L "$d/state/ctime-floor"
run env NSRUN_TIMING=1 "$NSRUN" -p "$P" $NS -- true
like "$err" "ctime floor past T" "the next run makes its own floor file and uses it"
check "... a regular file" test -f "$d/state/ctime-floor" -a ! -L "$d/state/ctime-floor"

# 5. Without the floor (the test hook) the command waits for the coarse
# clock, and host writes after its start are still conflicts.
run env NSRUN_TIMING=1 NSRUN_TEST_NO_CTIME_FLOOR=1 "$NSRUN" -p "$P" $NS -- true
case $err in
*"ctime floor past T"*) skip "the coarse-clock fallback" "this nsrun was built without --enable-test-hooks" ;;
*)
	like "$err" "child: start fence \\(coarse clock\\)" "with the floor turned off the command waits for the coarse clock"
	missed=0
	for mode in stat nostat stat nostat stat nostat; do
		rm -f "$S/ready" "$S/go"; echo base > "$P/f"
		[ "$mode" = stat ] && stat "$P/f" >/dev/null
		host_writer "$mode" & hw=$!
		NSRUN_TEST_NO_CTIME_FLOOR=1 "$NSRUN" -p "$P" $NS --rw "$S" -- sh -c 'cat f >/dev/null; : > '"$S"'/ready; i=0
			while [ ! -e '"$S"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; echo sandbox >> f' \
			>/dev/null 2>"$d/err"
		wait $hw
		grep -q "f changed on the host during the run" "$d/err" || { missed=$((missed + 1)); diag "$(cat "$d/err")"; }
	done
	is "$missed" "0" "... and a host write right after the command started is a conflict, 6 runs of 6"
	;;
esac
done_testing
