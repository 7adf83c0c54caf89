#!/bin/sh
# A full state dir: nsrun says so and how much a run needs (exit 125),
# never leaves a run marked running, lets discard remove any run that is
# not live, and works again once space is freed.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
U=${NSR_TEST_USER:-nsrun-test}
# The user half needs a small file system of its own: the root half mounts
# one for it, unmounted once the harness is done (its stage dir gone).
M=/tmp/nsrun-t803.$U
# The mount carries the name of the harness run it belongs to, so that the
# cleaner of an earlier run never unmounts a later run's.
tag=.t803-$(basename "$NSR_STAGE")
if is_root; then
	# One left by a harness that is gone (its stage dir removed).
	for m in "$M"/.t803-*; do
		[ -e "$m" ] && [ ! -d "/tmp/${m##*/.t803-}" ] && umount "$M" 2>/dev/null
	done
	if mkdir -p "$M" && mount -t tmpfs -o size=4m,mode=0755 tmpfs "$M" 2>/dev/null && chown "$U" "$M" 2>/dev/null &&
		: > "$M/$tag"; then
		(i=0; while [ -d "$NSR_STAGE" ] && [ $i -lt 1800 ]; do sleep 1; i=$((i+1)); done
		 [ -e "$M/$tag" ] && umount "$M" && rmdir "$M") </dev/null >/dev/null 2>&1 &
	fi
	mkdir -p "$d/sd"
	mount -t tmpfs -o size=4m,mode=0755 tmpfs "$d/sd" 2>/dev/null || skip_all "cannot mount a tmpfs"
	SD=$d/sd
elif [ -e "$M/$tag" ] && [ "$(stat -c %u "$M")" = "$(id -u)" ] && mountpoint -q "$M"; then
	SD=$M
else
	skip_all "needs the small tmpfs $M that the root half of this test mounts (run it through the harness as root)"
fi
S=$SD/state
NS="--state-dir $S"
state_of() { "$NSRUN" history $NS | awk -v r="$1" '$1 == r { print $2; exit }'; }
P=$d/p; mkdir -p "$P"; echo a > "$P/a"

# 1. The command fills the state dir (its writes land in the run's layer).
run "$NSRUN" -p "$P" $NS --report "$d/r1.json" -- sh -c 'echo ok > small; head -c 8000000 /dev/zero > big; true'
is "$rc" 125 "a run that filled the state dir exits 125"
like "$(cat "$d/r1.json" 2>/dev/null)" '"error": *\{"kind": *"state-dir-full"' "... its report has the error kind state-dir-full"
like "$err" "the state dir $S filled up while the command ran" "... and says the state dir is full"
like "$err" "needs at least [0-9]+ KiB free" "... and how much a run needs"
id=$(printf '%s\n' "$err" | sed -n 's/.* run \([^ ]*\) kept, nothing applied.*/\1/p' | head -1)
is "$(state_of "$id")" "kept" "... the run is kept, not left running"
check "... nothing reached the project" test ! -e "$P/small"
unlike "$("$NSRUN" history $NS)" " running " "no run is marked running"

# 2. The next run: refused before anything runs, with the reason.
n_before=$(ls "$S/runs" | wc -l)
run "$NSRUN" -p "$P" $NS --report "$d/r2.json" -- sh -c 'echo x > x'
is "$rc" 125 "a run with the state dir full exits 125"
like "$(cat "$d/r2.json" 2>/dev/null)" '"error": *\{"kind": *"state-dir-full"' "... its report has the error kind state-dir-full"
like "$err" "the state dir $S is full: [0-9]+ KiB free, and a run needs at least [0-9]+ KiB" \
	"... it says the state dir is full and how much is needed"
unlike "$err" "mode" "... not a message about the project dir's mode"
is "$(ls "$S/runs" | wc -l)" "$n_before" "... and leaves no run dir behind"
check "... nothing ran" test ! -e "$P/x"

# 3. discard removes the kept run; then runs work again.
run "$NSRUN" discard $NS "$id"
is "$rc" 0 "discard removes the run that filled the state dir"
run "$NSRUN" -p "$P" $NS -- sh -c 'echo x > x'
is "$rc:$(cat "$P/x" 2>/dev/null)" "0:x" "once space is freed, a run works again"

# With --discard the run that filled the state dir is discarded, and says so.
run "$NSRUN" -p "$P" $NS --discard -- sh -c 'head -c 8000000 /dev/zero > big2; true'
is "$rc" 125 "--discard: a run that filled the state dir exits 125"
like "$err" "the state dir $S filled up while the command ran" "... and says why"
check "... nothing reached the project" test ! -e "$P/big2"
run "$NSRUN" -p "$P" $NS -- sh -c 'echo y > y'
is "$rc:$(cat "$P/y" 2>/dev/null)" "0:y" "... and its space is free again for the next run"

# 4. A run marked running whose nsrun is gone (killed) is not live:
# discard removes it.
SY=$d/sync; mkdir -p "$SY"
"$NSRUN" -p "$P" $NS --rw "$SY" -- sh -c ': > '"$SY"'/started; exec sleep 31' >/dev/null 2>&1 &
pid=$!
wait_until 20 test -e "$SY/started"
kill -KILL "$pid"; wait "$pid" 2>/dev/null
# The sandbox dies with its nsrun.
wait_until 20 sh -c '! pgrep -f "^sleep 31$" >/dev/null' || diag "the sandbox outlived its killed nsrun"
orphan=$("$NSRUN" history $NS | awk '$2 == "running" { print $1; exit }')
if [ -n "$orphan" ]; then
	run "$NSRUN" discard $NS "$orphan"
	is "$rc" 0 "discard removes a run whose nsrun was killed"
	is "$(state_of "$orphan")" "discarded" "... it is discarded"
else
	skip "discard of a run whose nsrun was killed" "the killed run was not left marked running"
fi

if is_root; then umount "$d/sd"; fi
done_testing
