#!/bin/sh
# --bind, --ro-bind, --dev-bind, the -try forms, --bind-fd, --ro-bind-fd,
# --remount-ro: the real effect on files, not just the mount table.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
mkdir -p "$d/src/sub" "$d/ro"
echo data > "$d/src/file"
echo ro > "$d/ro/file"

run "$NSRUN" $BASE --bind "$d/src" /mnt -- sh -c 'echo new > /mnt/created && cat /mnt/file'
is "$rc:$out" "0:data" "--bind: the source is visible at the destination"
is "$(cat "$d/src/created" 2>/dev/null)" "new" "--bind: writes reach the host"

run "$NSRUN" $BASE --ro-bind "$d/ro" /mnt -- sh -c 'echo x > /mnt/file'
like "$err" "Read-only file system" "--ro-bind: a write fails with EROFS"
is "$(cat "$d/ro/file")" "ro" "--ro-bind: the host file is unchanged"

# A submount under a read-only bind is read-only too (one recursive
# mount_setattr), even though it was writable where it came from.
run "$NSRUN" --bind / / --tmpfs /mnt --dir /mnt/inner --bind "$d/src" /mnt/inner -- true
run "$NSRUN" $BASE --bind "$d/src" /mnt/w --ro-bind /mnt /mnt -- sh -c 'touch /mnt/w/x'
like "$err" "Read-only file system" "--ro-bind makes an existing submount read-only"
run "$NSRUN" $BASE --tmpfs /mnt --bind "$d/src" /mnt/w -- sh -c 'touch /mnt/w/rw-ok && echo ok'
is "$out" "ok" "a writable bind inside a tmpfs stays writable"

# Binds are nosuid and, except --dev-bind, nodev.
run "$NSRUN" $BASE --bind "$d/src" /mnt -- sh -c 'grep " /mnt " /proc/self/mountinfo'
like "$out" " /mnt [a-z]+,nosuid,nodev" "--bind is nosuid,nodev"
run "$NSRUN" $BASE --dev-bind /dev /dev -- sh -c 'echo hi > /dev/null && head -c 1 /dev/zero | od -An -tx1'
is "$rc:$(echo $out)" "0:00" "--dev-bind: device nodes work"
run "$NSRUN" $BASE --bind /dev /mnt -- sh -c 'head -c 1 /mnt/zero'
like "$err" "Permission denied" "--bind of /dev: device nodes do not work (nodev)"

# -try forms.
run "$NSRUN" $BASE --bind-try "$d/missing" /mnt/nope -- sh -c 'test -e /mnt/nope; echo $?'
is "$rc:$out" "0:1" "--bind-try with a missing source is skipped, leaving no mount point"
run "$NSRUN" $BASE --ro-bind-try "$d/ro" /mnt -- cat /mnt/file
is "$out" "ro" "--ro-bind-try with an existing source binds it"
run "$NSRUN" $BASE --dev-bind-try "$d/missing" /mnt -- true
is "$rc" 0 "--dev-bind-try with a missing source is skipped"
run "$NSRUN" $BASE --bind "$d/missing" /mnt -- true
is "$rc:$err" "1:nsrun: Can't find source path $d/missing: No such file or directory" "--bind with a missing source fails with bwrap's message"

# Files and created mount points.
run "$NSRUN" $BASE --tmpfs /tmp --ro-bind "$d/src/file" /tmp/a/b/f -- sh -c 'cat /tmp/a/b/f; stat -c %a /tmp/a /tmp/a/b'
is "$out" "data
700
700" "binding a file creates missing parents 0700, as bwrap does"
run "$NSRUN" $BASE --tmpfs /tmp --bind "$d/src" /tmp/x --bind-try "$d/missing" /tmp/y -- sh -c 'stat -c "%F" /tmp/x; ls /tmp'
is "$out" "directory
x" "a directory mount point is created; a skipped -try op creates nothing"

# --bind-fd / --ro-bind-fd
exec 5<"$d/src"
run "$NSRUN" $BASE --ro-bind-fd 5 /mnt -- sh -c 'cat /mnt/file; touch /mnt/z'
is "$out" "data" "--ro-bind-fd binds the directory open on the fd"
like "$err" "Read-only" "--ro-bind-fd is read-only"
run "$NSRUN" $BASE --bind-fd 5 /mnt -- sh -c 'touch /mnt/from-fd'
check "--bind-fd is writable" test -e "$d/src/from-fd"
exec 5<&-
run "$NSRUN" $BASE --bind-fd 9 /mnt -- true
is "$rc" 1 "--bind-fd with a closed fd fails"

# --remount-ro is not recursive.
run "$NSRUN" $BASE --bind "$d/src" /mnt --bind "$d/src/sub" /mnt/sub --remount-ro /mnt -- sh -c 'touch /mnt/a || echo ro; touch /mnt/sub/b && echo rw'
is "$out" "ro
rw" "--remount-ro makes the mount read-only but not its submounts"
run "$NSRUN" $BASE --remount-ro /nonexistent-path -- true
is "$rc:$err" "1:nsrun: Can't create file /nonexistent-path: No such file or directory" "--remount-ro of a missing path fails (bwrap 0.12's message)"

# A --remount-ro right after the op that mounts its dest is set on the new
# mount before it is attached (issue 28): the same effect, still only on
# that mount, and none when the op mounted nothing.
run "$NSRUN" $BASE --bind "$d/src" /mnt --remount-ro /mnt --tmpfs /media --remount-ro /media -- \
	sh -c 'touch /mnt/c || echo ro; touch /media/c || echo ro; cat /mnt/file'
is "$rc:$out" "0:ro
ro
data" "a bind and a tmpfs each followed by --remount-ro of their dest are read-only"
check "... and the bind's host dir stays writable outside" sh -c ": >'$d/src/c' && rm '$d/src/c'"
run "$NSRUN" $BASE --bind "$d/src" /mnt --bind "$d/src/sub" /mnt/sub --remount-ro /mnt/sub -- \
	sh -c 'touch /mnt/sub/d || echo ro; touch /mnt/d && echo rw'
is "$rc:$out" "0:ro
rw" "... the flag goes on the op's mount only, not the one below it"
rm -f "$d/src/d"
# Binds of one source share its lookup (project mode binds /dev/null over
# every hidden file), never the flags: each clone has its op's own.
run "$NSRUN" $BASE --tmpfs /mnt --bind "$d/src/file" /mnt/a --remount-ro /mnt/a --bind "$d/src/file" /mnt/b \
	--dev-bind /dev/null /mnt/n1 --remount-ro /mnt/n1 --dev-bind /dev/null /mnt/n2 \
	--bind "$d/src" /mnt/x --remount-ro /mnt/x --bind "$d/src" /mnt/y -- \
	sh -c 'echo a >> /mnt/a || echo ro-a; echo b >> /mnt/b && echo rw-b; touch /mnt/x/e || echo ro-x;
		touch /mnt/y/e && echo rw-y; echo n > /mnt/n2 && echo n2-writes;
		awk "\$5 ~ /^\/mnt\/n[12]\$/ { split(\$6, o, \",\"); print \$5, o[1], (\$6 ~ /nodev/ ? \"nodev\" : \"dev\") }" /proc/self/mountinfo'
is "$rc:$out" "0:ro-a
rw-b
ro-x
rw-y
n2-writes
/mnt/n1 ro dev
/mnt/n2 rw dev" "binds of one source: read-only where a --remount-ro follows, writable where none does"
is "$(cat "$d/src/file")" "data
b" "... and the writable one wrote the host file"
printf 'data\n' > "$d/src/file"
rm -f "$d/src/e"
run "$NSRUN" $BASE --tmpfs /mnt --bind "$d/src/file" /mnt/a --bind "$d/src/file" /mnt/b --remount-ro /mnt/b -- \
	sh -c 'echo a >> /mnt/a && echo rw-a; echo b >> /mnt/b || echo ro-b'
is "$rc:$out" "0:rw-a
ro-b" "... the first one writable and a later one read-only"
printf 'data\n' > "$d/src/file"
run "$NSRUN" $BASE --ro-bind-try /nonexistent-src /mnt --remount-ro /mnt -- true
is "$rc:$err" "1:nsrun: Can't remount readonly on /mnt: Unable to find \"/newroot/mnt\" in mount table" \
	"... after a -try bind that mounted nothing, the --remount-ro runs on its own (bwrap's message)"

# Sources are resolved as the caller: a path the caller cannot read fails.
if ! is_root && ! test -x /root; then
	run "$NSRUN" $BASE --bind /root/anything /mnt -- true
	is "$rc:$err" "1:nsrun: Can't find source path /root/anything: Permission denied" "a source the caller cannot reach is refused"
fi

# Symlinks in destinations resolve inside the new root, never on the host.
run "$NSRUN" $MINROOT --dir /etc --symlink /etc /link --ro-bind "$d/src" /link/x -- /usr/bin/test -e /etc/x/file
is "$rc" 0 "an absolute symlink made by --symlink points inside the sandbox"
check "the host /etc was not touched" test ! -e /etc/x

rm -rf "$d"
done_testing
