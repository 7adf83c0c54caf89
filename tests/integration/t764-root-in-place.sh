#!/bin/sh
# A plan whose first op binds the whole "/" on "/" gets its root in place
# (issue 28): the mount namespace's own copy of the host's tree with that
# op's flags, no tmpfs root, no pivot. The command must see exactly what
# the pivot shows it (the same mounts, the same flags), the host's tree
# must stay as it was, and everything the build reads or writes after the
# flags are set (the kernel's nodes, a nested user namespace's maps, the
# layers of --tmp-overlay and of project mode's overlay, --bind-data) must
# still work. With the test hooks, NSRUN_TEST_ROOT_PIVOT=1 builds the same
# plan by the pivot and NSRUN_TEST_NO_DETACHED=1 acts as a kernel before
# 6.15, which keeps the pivot for plans that need detached mounts.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
mkdir -p "$d/p"
echo a >"$d/p/f"
echo data >"$d/data"

hooks() { [ -n "${NSR_TEST_HOOKS:-}" ]; }
# The mounts the command sees: mount point, per-mount options, type. The
# host's own mounts under /tmp come and go with the tests that run beside
# this one (t803 mounts a small tmpfs there): only this test's are listed.
MOUNTS="awk -v own='$d' '{ if (index(\$5, \"/tmp/\") == 1 && index(\$5, own) != 1) next; print \$5, \$6, \$(NF-2) }' /proc/self/mountinfo"
full="--ro-bind / / --unshare-all --dev /dev --proc /proc --tmpfs /tmp --die-with-parent"

# 1. What the command sees, and what it may do.
run "$NSRUN" $full -- sh -c "
	touch /usr/nsrun-t764 2>/dev/null && echo usr-writable
	echo x >/dev/null && echo devnull
	echo y >/tmp/y && cat /tmp/y
	test -e /proc/self/status && echo proc"
is "$rc" 0 "in place: the launch works"
is "$out" "devnull
y
proc" "... / is read-only, /dev/null, a tmpfs on /tmp and a fresh /proc work"
check "... the host's / was never written" test ! -e /usr/nsrun-t764

run env NSRUN_TIMING=1 "$NSRUN" $full -- true
like "$err" "^  child: root in place " "... and NSRUN_TIMING shows the root was built in place"
if hooks; then
	run "$NSRUN" $full -- sh -c "$MOUNTS"
	placed=$out
	run env NSRUN_TEST_ROOT_PIVOT=1 NSRUN_TIMING=1 "$NSRUN" $full -- true
	like "$err" "^  child: root on a tmpfs " "NSRUN_TEST_ROOT_PIVOT=1 builds it on a tmpfs"
	run env NSRUN_TEST_ROOT_PIVOT=1 "$NSRUN" $full -- sh -c "$MOUNTS"
	is "$rc" 0 "the same plan by the pivot works"
	is "$placed" "$out" "... and shows the same mounts with the same flags as the root in place"
	like "$placed" "^/ ro,nosuid,nodev" "... where / is read-only, nosuid and nodev"
else
	for c in "a tmpfs root" "the pivot works" "the same mounts" "/ read-only"; do
		skip "$c" "NSRUN_TEST_ROOT_PIVOT needs a build with --enable-test-hooks (NSR_TEST_HOOKS=1)"
	done
fi

# 2. The host's tree keeps its flags: the recursive flags were set on the
# namespace's copy only.
host_flags() { awk '$5 == "/" {print $6}' /proc/self/mountinfo | head -n1; }
before=$(host_flags)
run "$NSRUN" --ro-bind / / -- true
is "$(host_flags)" "$before" "the host's / keeps its flags ($before) after a root in place"
check "... and the host's tree is still writable where it was" sh -c ": >'$d/after'"

# 3. A nested user namespace (--dev maps root first, then the requested
# ids): its maps are written after the flags made /proc read-only.
run "$NSRUN" --ro-bind / / --unshare-user --uid 4321 --gid 4322 --dev /dev -- sh -c 'id -u; id -g'
is "$rc" 0 "a nested user namespace under a root in place works"
is "$out" "4321
4322" "... with the requested ids"
# With a fresh /proc of the sandbox's own (--proc in a new pid namespace),
# the maps go through it; a later op that lands in it (even on the very
# file the maps are written to), a --remount-ro, or --disable-userns (a
# sysctl, which that /proc may cover read-only) takes the clone of the
# host's /proc instead. Each way maps the same ids.
nested="--ro-bind / / --unshare-user --unshare-pid --uid 4321 --gid 4322 --dev /dev --proc /proc"
for extra in "" "--tmpfs /proc/tty" "--ro-bind /dev/null /proc/1/uid_map" "--remount-ro /proc" "--disable-userns"; do
	run "$NSRUN" $nested $extra -- sh -c 'id -u; id -g; cat /proc/self/uid_map' 2>&1
	is "$rc:$(echo "$out" | head -n2 | tr '\n' ' ')" "0:4321 4322 " "--proc and a nested namespace${extra:+, with $extra}: the requested ids"
	like "$out" "^ *4321 +0 +1\$" "... mapped onto root of the first namespace"
done

# A clone and its flags are one call (open_tree_attr, Linux 6.15) where the
# kernel has it. A kernel without it (ENOSYS) or a filter that refuses what
# it does not know (EPERM, as Docker's profile does) gets the two calls of
# old: the same flags on /dev's nodes and on a bind either way.
R=$NSR_HELPERS/nsr-restrict
NODE_FLAGS="awk '\$5 == \"/dev/null\" || \$5 == \"/mnt\" { print \$5, \$6 }' /proc/self/mountinfo"
run "$NSRUN" --ro-bind / / --unshare-all --dev /dev --proc /proc --ro-bind /tmp /mnt -- sh -c "$NODE_FLAGS"
is "$rc" 0 "a launch with --dev and a --ro-bind works"
like "$out" "^/dev/null [^ ]*nosuid" "... /dev/null is nosuid"
like "$out" "^/mnt ro,nosuid,nodev(,| |\$)" "... and the bind of a host dir (rw, suid) read-only, nosuid and nodev"
flags_here=$out
for e in ENOSYS EPERM; do
	if [ -x "$R" ]; then
		run "$R" --deny-open-tree-attr $e -- "$NSRUN" --ro-bind / / --unshare-all --dev /dev --proc /proc \
			--ro-bind /tmp /mnt -- sh -c "$NODE_FLAGS"
		is "$rc:$out" "0:$flags_here" "... the same where open_tree_attr fails with $e"
	else
		skip "... the same where open_tree_attr fails with $e" "the nsr-restrict helper was not built"
	fi
done

# 4. Detached mounts: --tmp-overlay's layers and --bind-data's file live in
# the scratch, which is never attached.
detached_case() {
	run env "$@" "$NSRUN" --ro-bind / / --overlay-src /usr --tmp-overlay /usr \
		--tmpfs /mnt --ro-bind-data 3 /mnt/t764 -- sh -c 'echo w >/usr/nsrun-t764 && cat /usr/nsrun-t764 /mnt/t764' \
		3<"$d/data"
}
detached_case NSRUN_T764=1
is "$rc" 0 "--tmp-overlay and --ro-bind-data under a root in place work"
is "$out" "w
data" "... the overlay takes writes and the data file is there"
check "... and the host's /usr is untouched" test ! -e /usr/nsrun-t764
run env NSRUN_TIMING=1 "$NSRUN" --ro-bind / / --overlay-src /usr --tmp-overlay /usr -- true
like "$err" "^  child: root in place " "... in place (the scratch a detached mount)"
if hooks; then
	detached_case NSRUN_TEST_NO_DETACHED=1
	is "$rc:$out" "0:w
data" "... the same by the pivot, as on a kernel before 6.15"
	run env NSRUN_TEST_NO_DETACHED=1 NSRUN_TIMING=1 "$NSRUN" --ro-bind / / --overlay-src /usr --tmp-overlay /usr -- true
	like "$err" "^  child: root on a tmpfs " "... which that hook really keeps"
else
	for c in "the same by the pivot" "that hook keeps the pivot"; do
		skip "... $c" "NSRUN_TEST_NO_DETACHED needs a build with --enable-test-hooks (NSR_TEST_HOOKS=1)"
	done
fi

# 5. Project mode: its overlay's upper dir is on the host's tree, which the
# flags make read-only; the writes must reach it all the same, and the home
# layer must take writes.
S=$d/s
project_case() {
	run env "$1" "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- \
		sh -c 'cat f; echo "$1" >>f; echo h >"$HOME/nsrun-t764" && cat "$HOME/nsrun-t764"; touch /usr/x 2>/dev/null || echo ro' \
		sh "$2"
	wait_background
}
project_case NSRUN_TIMING=1 b
is "$rc" 0 "project mode under a root in place works"
like "$err" "^  child: root in place " "... in place (the upper dir from the gate's clone)"
is "$out" "a
h
ro" "... it sees the project, its home takes writes, / is read-only"
is "$(cat "$d/p/f")" "a
b" "... and its write to the project is applied"
if hooks; then
	project_case NSRUN_TEST_NO_DETACHED=1 c
	is "$rc:$(tail -n1 "$d/p/f")" "0:c" "project mode by the pivot (a kernel before 6.15) works the same"
	run env NSRUN_TEST_NO_DETACHED=1 NSRUN_TIMING=1 "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
	wait_background
	like "$err" "^  child: root on a tmpfs " "... and was built on a tmpfs"
	run env NSRUN_TEST_ROOT_PIVOT=1 "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c "$MOUNTS"
	wait_background
	pivot=$out
	run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c "$MOUNTS"
	wait_background
	is "$out" "$pivot" "... and project mode shows the same mounts with the same flags either way"
else
	for c in "project mode by the pivot" "built on a tmpfs" "project mode's mounts"; do
		skip "$c" "the hooks need a build with --enable-test-hooks (NSR_TEST_HOOKS=1)"
	done
fi
check "the host's home was never written" test ! -e "$HOME/nsrun-t764"

# The root's detached mounts (the scratch and shared tmpfs, the gate's
# clone of the state dir, a clone of /proc) reach host dirs: while the
# command runs, nothing holds them. The child hands them to the monitor
# before pid 1 and the command let go of theirs, and the monitor lets go
# as the command starts. A detached tree's fd reads as "/".
roots_held() { # the fds of process $1 that read as "/"
	for f in /proc/"$1"/fd/*; do
		if [ "$(readlink "$f" 2>/dev/null)" = / ]; then echo "$f"; fi
	done
}
mkfifo "$d/go" "$d/ready"
# The fifos are opened on the host's side: the command's stdin and stdout.
"$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c 'echo ready; read x' <"$d/go" >"$d/ready" &
mon=$!
exec 6>"$d/go"
read -r line <"$d/ready"
pid1=$(pgrep -P "$mon" | head -n1)
held_mon=$(roots_held "$mon")
held_pid1=$( [ -n "$pid1" ] && [ -r "/proc/$pid1/fd" ] && ls "/proc/$pid1/fd" >/dev/null 2>&1 && roots_held "$pid1" || echo unreadable)
echo go >&6
exec 6>&-
wait "$mon"
rc=$?
wait_background
is "$rc:$line:$held_mon" "0:ready:" "while the command runs, the monitor holds none of the root's detached mounts"
if [ "$held_pid1" = unreadable ]; then
	skip "... nor does pid 1" "pid 1's fds cannot be read as uid $(id -u)"
else
	is "$held_pid1" "" "... nor does pid 1"
fi

# 6. Not in place: a plan whose first op is not the whole root, or a later
# op on "/", still builds (by the pivot).
run "$NSRUN" $MINROOT -- /bin/sh -c 'test ! -e /etc/passwd && echo empty'
is "$rc:$out" "0:empty" "a plan without a root bind works"
run "$NSRUN" --ro-bind / / $MINROOT -- /bin/sh -c 'test ! -e /etc/passwd && echo covered'
is "$rc:$out" "0:covered" "a later op on / covers the root, as by the pivot"
run env NSRUN_TIMING=1 "$NSRUN" --ro-bind / / $MINROOT -- /bin/true
like "$err" "^  child: root on a tmpfs " "... which it was built by"

done_testing
