#!/bin/sh
# An apply that fails (the project's disk full, a file-size limit) rolls
# back and keeps the run: "nsrun commit RUN" applies it once the cause is
# fixed, and a commit that fails again leaves it kept.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
run_of() { printf '%s\n' "$1" | sed -n 's/.*run \([^ ]*\) kept: the apply failed.*/\1/p' | head -1; }
state_of() { "$NSRUN" history $NS | awk -v r="$1" '$1 == r { print $2; exit }'; }

# 1. The file-size limit: the project on another file system than the state
# dir (/dev/shm), so that the apply copies the data and the copy fails with
# EFBIG. A second project on the state dir's file system applies (renames).
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$d")" ]; then
	P1=$d/p1; mkdir -p "$P1"; echo old > "$P1/x"
	P2=$(mktemp -d /dev/shm/nsr-t802.XXXXXX); chmod 755 "$P2"; echo old > "$P2/a"
	# SIGXFSZ ignored: the write fails with EFBIG instead of killing nsrun.
	# The command itself lifts the soft limit.
	run sh -c 'trap "" XFSZ; ulimit -S -f 1000; exec "$@"' sh "$NSRUN" -p "$P1" -p "$P2" $NS --report "$d/r1.json" -- \
		sh -c 'ulimit -S -f unlimited; echo new > x; cd "$0" && head -c 2000000 /dev/zero > big && echo new > a' "$P2"
	is "$rc" 125 "an apply that fails (EFBIG) exits 125"
	like "$err" "the apply failed and was rolled back" "... it was rolled back"
	like "$err" "run [^ ]* kept: the apply failed" "... and the run is kept, and nsrun says so"
	id=$(run_of "$err")
	is "$(cat "$P2/a"):$(test -e "$P2/big" && echo big)" "old:" "... nothing of the failed project reached it"
	is "$(state_of "$id")" "kept" "... history shows the run kept"
	like "$(cat "$d/r1.json" 2>/dev/null)" '"outcome": *"failed"' "... the report says the apply failed"
	like "$(cat "$d/r1.json" 2>/dev/null)" '"error": *\{"kind": *"apply-failed"' "... with the error kind apply-failed"
	# Still limited: the commit fails and rolls back, and the run stays kept.
	run sh -c 'trap "" XFSZ; ulimit -S -f 1000; exec "$@"' sh "$NSRUN" commit $NS "$id"
	is "$rc" 1 "a commit that fails again exits 1"
	is "$(state_of "$id")" "kept" "... and leaves the run kept"
	is "$(cat "$P2/a")" "old" "... with nothing applied"
	run "$NSRUN" commit $NS "$id"
	is "$rc" 0 "once the cause is gone, nsrun commit applies the run"
	is "$(cat "$P2/a"):$(wc -c < "$P2/big" 2>/dev/null)" "new:2000000" "... the failed project's work is in place"
	is "$(cat "$P1/x")" "new" "... and the project that had applied keeps its change"
	like "$err" "$P1: applied already" "... which is not applied twice"
	is "$(state_of "$id")" "committed" "... and the run is committed"
	rm -rf "$P2"
else
	skip "an apply that fails with EFBIG" "needs a writable /dev/shm on another file system than $d"
fi

# 2. ENOSPC: the project on a small tmpfs (root mounts it).
if is_root && mkdir -p "$d/mnt" && mount -t tmpfs -o size=1m tmpfs "$d/mnt" 2>/dev/null; then
	P=$d/mnt/p; mkdir -p "$P"; echo old > "$P/a"
	run "$NSRUN" -p "$P" $NS -- sh -c 'head -c 2000000 /dev/zero > big; echo new > a'
	is "$rc" 125 "an apply that fails (ENOSPC on the project's disk) exits 125"
	like "$err" "No space left on device" "... and says why"
	id=$(run_of "$err")
	is "$(state_of "$id")" "kept" "... the run is kept"
	is "$(cat "$P/a"):$(test -e "$P/big" && echo big)" "old:" "... with nothing applied"
	mount -o remount,size=8m "$d/mnt"
	run "$NSRUN" commit $NS "$id"
	is "$rc:$(cat "$P/a"):$(wc -c < "$P/big" 2>/dev/null)" "0:new:2000000" "... once there is room, nsrun commit applies it"
	umount "$d/mnt"
else
	skip "an apply that fails with ENOSPC" "needs root to mount a small tmpfs as the project's disk"
fi
done_testing
