#!/bin/sh
# Project mode: Landlock scoping of abstract sockets, --ro, the state dir
# out of reach, the backup quota, what the sandbox sees when the host edits
# the project during the run, and an overlay stack too deep (--no-overlay
# then).
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
S=$d/state
NS="--state-dir $S"
P=$d/proj; mkdir -p "$P"

# Abstract unix sockets are per network namespace; with --share-net the
# host's would be reachable, unless Landlock (ABI 6) scopes them.
name="nsrun-test-$$"
python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind("\0" + sys.argv[1]); s.listen(1); time.sleep(20)' "$name" &
srv=$!
probe="import socket, sys
s = socket.socket(socket.AF_UNIX)
try: s.connect('\\0$name'); print('reached')
except OSError as e: print('blocked', e.errno)"
reachable() { [ "$(python3 -c "$probe")" = reached ]; }
check "the host's abstract socket is reachable outside (the test can fail)" wait_until 10 reachable
# Whether the kernel can scope them is asked of the kernel (doctor's probe),
# not of the run's own report, which a bug could get wrong both ways.
scope=$("$NSRUN" doctor --json | python3 -c 'import json, sys; print({c["name"]: c for c in json.load(sys.stdin)["checks"]}["landlock-scope"]["ok"])')
run "$NSRUN" -p "$P" $NS --share-net --report "$d/ll.json" -- python3 -c "$probe"
if [ "$scope" = True ]; then
	like "$out" "^blocked" "with --share-net, Landlock scoping blocks the host's abstract sockets"
	is "$(python3 -c 'import json,sys; print("landlock" in json.load(open(sys.argv[1]))["layers"])' "$d/ll.json")" True \
		"... and the report lists the landlock layer"
else
	skip "Landlock scoping of abstract sockets" "the kernel has no Landlock ABI 6 (doctor: landlock-scope fails)"
	like "$out" "^reached" "without Landlock ABI 6, --share-net leaves abstract sockets reachable (documented)"
fi
run "$NSRUN" -p "$P" $NS -- python3 -c "$probe"
like "$out" "^blocked" "without --share-net the host's abstract sockets are in another namespace"
kill $srv 2>/dev/null

# --ro adds a read-only path; --home hide hides the rest of the home.
mkdir -p "$d/tools"; echo tool > "$d/tools/t"
run "$NSRUN" -p "$P" $NS --ro "$d/tools" -- sh -c "cat '$d/tools/t'; echo x > '$d/tools/t'"
is "$out" "tool" "--ro makes a path readable"
like "$err" "Read-only file system" "... and read-only"

# The state dir is never reachable inside, even when it lies in the home.
if [ -n "${HOME:-}" ] && [ -w "$HOME" ]; then
	hs=$HOME/.nsrun-test-state-$$
	run "$NSRUN" -p "$P" --state-dir "$hs" -- sh -c "ls -A '$hs' | wc -l; touch '$hs/x' 2>&1"
	like "$out" "^0" "the state dir is empty inside"
	like "$out" "Read-only file system" "... and read-only"
	rm -rf "$hs"
fi

# The backup quota prunes the oldest runs of a project, never the 3 newest
# applied ones (issue 23.7).
Q=$d/quota; mkdir -p "$Q"; head -c 300000 /dev/urandom > "$Q/big"
for i in 1 2 3 4 5; do
	"$NSRUN" -p "$Q" --state-dir "$d/qs" --quiet -- sh -c "head -c 300000 /dev/urandom > big"
done
is "$(ls "$d/qs/runs" | wc -l)" "5" "five runs, each with a 300 KB backup"
run "$NSRUN" gc --state-dir "$d/qs" --backup-limit 1000K
is "$rc" 0 "gc --backup-limit"
is "$(ls "$d/qs/runs" | wc -l)" "3" "the oldest runs beyond the quota are pruned"
run "$NSRUN" gc --state-dir "$d/qs" --backup-limit 1K
is "$(ls "$d/qs/runs" | wc -l)" "3" "the 3 newest applied runs are always kept"
run "$NSRUN" undo --state-dir "$d/qs" -p "$Q"
is "$rc" 0 "the kept run can still be undone"

# Host edits to the project while the overlay is mounted: overlayfs calls
# them undefined. What happens here (kernel notes this): a file the sandbox
# has not copied up yet shows the host's new content; once copied up, the
# sandbox keeps its own copy and host edits are invisible to it.
H=$d/live; mkdir -p "$H"; echo v1 > "$H/a"; echo v1 > "$H/b"
sleep 0.05 # past the coarse clock's tick: the host's edit below is after the run's start
SY=$d/sync-live; mkdir -p "$SY"
"$NSRUN" -p "$H" $NS --rw "$SY" --report "$d/live.json" -- sh -c "echo touch >> b; echo > '$SY/ready'; while [ ! -e '$SY/go' ]; do sleep 0.01; done; cat a; cat b" >"$d/live.out" 2>/dev/null &
w=$!
wait_until 30 test -e "$SY/ready" || diag "the command did not start"
echo v2 > "$H/a"; echo v2 > "$H/b"
touch "$SY/go"
wait $w
is "$(sed -n 1p "$d/live.out")" "v2" "a host edit to a file not copied up is visible inside"
is "$(sed -n 2p "$d/live.out")" "v1" "a file already copied up keeps the sandbox's view"
is "$(cat "$H/b")" "v2" "... and the host's edit is not overwritten (a conflict)"

# An overlay stack too deep: the project is bound instead, with a message.
if is_root; then
	skip "overlay stack too deep" "the nested sandboxes need a fresh /proc, which a root-run outer sandbox covers"
else
	mkdir -p "$d/l1/p"
	run "$NSRUN" --ro-bind / / --dev /dev --proc /proc --unshare-pid --tmpfs /tmp --bind "$d" "$d" \
		--ro-bind "$NSR_STAGE" "$NSR_STAGE" --overlay-src "$d/l1" --tmp-overlay /mnt -- \
		"$NSRUN" --ro-bind / / --proc /proc --unshare-pid --dev /dev --tmpfs /tmp --bind "$d" "$d" \
		--ro-bind "$NSR_STAGE" "$NSR_STAGE" \
		--overlay-src /mnt --tmp-overlay /mnt -- \
		"$NSRUN" -p /mnt/p --state-dir "$d/deep" -- true
	is "$rc" 0 "a project on an overlay two deep still runs (t260 has more)"
	like "$err" "overlay stack too deep.*running with --no-overlay" "... with --no-overlay, and a message that says why"
fi
rm -rf "$d"
done_testing
