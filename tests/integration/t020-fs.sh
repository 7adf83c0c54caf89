#!/bin/sh
# --tmpfs, --dir, --file, --bind-data, --ro-bind-data, --symlink, --chmod,
# --perms, --size, --mqueue.
. "$NSR_TESTS/lib.sh"

run "$NSRUN" $BASE --tmpfs /tmp -- sh -c 'stat -c %a /tmp; grep " /tmp " /proc/self/mountinfo; touch /tmp/x && echo w'
like "$out" "^755" "--tmpfs: mode 0755 by default"
like "$out" "tmpfs tmpfs" "--tmpfs mounts a tmpfs"
like "$out" " /tmp [a-z]+,nosuid,nodev" "--tmpfs is nosuid,nodev"
like "$out" "w$" "--tmpfs is writable"
run "$NSRUN" $BASE --perms 01777 --tmpfs /tmp -- stat -c %a /tmp
is "$out" "1777" "--perms sets the tmpfs mode"
run "$NSRUN" $BASE --size 1048576 --tmpfs /tmp -- sh -c 'df -k /tmp | tail -1'
like "$out" "^tmpfs +1024 " "--size is visible to df"
run "$NSRUN" $BASE --size 1048576 --tmpfs /tmp -- sh -c 'yes | head -c 2000000 > /tmp/big'
like "$err" "No space left on device" "--size limits what fits"
run "$NSRUN" $BASE --size 1M --tmpfs /tmp -- true
is "$rc:$err" "1:nsrun: --size takes a non-zero number of bytes" "--size with a unit suffix is refused"
run "$NSRUN" $BASE --size 0x100000 --perms 0700 --tmpfs /tmp -- sh -c 'df -k /tmp | tail -1; stat -c %a /tmp'
like "$out" "^tmpfs +1024 .*
700$" "--size takes hex, and --perms and --size can come in either order"

run "$NSRUN" $BASE --tmpfs /tmp --dir /tmp/a/b -- stat -c %a /tmp/a /tmp/a/b
is "$out" "755
755" "--dir: 0755, and its parents 0755"
run "$NSRUN" $BASE --tmpfs /tmp --perms 0750 --dir /tmp/a/b -- stat -c %a /tmp/a /tmp/a/b
is "$out" "750
750" "--perms 0750 --dir: parents follow the group and other bits"
run "$NSRUN" $BASE --tmpfs /tmp --perms 0700 --dir /tmp/a/b -- stat -c %a /tmp/a /tmp/a/b
is "$out" "700
700" "--perms 0700 --dir: parents lose group and other"
run "$NSRUN" $BASE --tmpfs /tmp --dir /tmp/a --perms 0700 --dir /tmp/a -- stat -c %a /tmp/a
is "$out" "755" "--dir on an existing dir leaves it alone"
run "$NSRUN" $BASE --tmpfs /tmp --file 3 /tmp/f --dir /tmp/f -- true 3</dev/null
like "$rc:$err" "^1:nsrun: Destination is not a directory /tmp/f\$" "--dir over a file fails (bwrap 0.12's message)"

printf 'file contents\n' > "${TMPDIR:-/tmp}/nsr-data.$$"
run "$NSRUN" $BASE --tmpfs /tmp --file 3 /tmp/d/f -- sh -c 'cat /tmp/d/f; stat -c %a /tmp/d/f /tmp/d' 3<"${TMPDIR:-/tmp}/nsr-data.$$"
is "$out" "file contents
666
755" "--file writes the fd's data, mode 0666, parents 0755"
run "$NSRUN" $BASE --tmpfs /tmp --perms 0640 --file 3 /tmp/f -- stat -c %a /tmp/f 3</dev/null
is "$out" "640" "--perms applies to --file"
run "$NSRUN" $BASE --tmpfs /tmp --bind-data 3 /tmp/b -- sh -c 'cat /tmp/b; stat -c %a /tmp/b; echo more >> /tmp/b && cat /tmp/b' 3<"${TMPDIR:-/tmp}/nsr-data.$$"
is "$out" "file contents
600
file contents
more" "--bind-data: the data, mode 0600, writable"
run "$NSRUN" $BASE --tmpfs /tmp --ro-bind-data 3 /tmp/r -- sh -c 'cat /tmp/r; echo x >> /tmp/r' 3<"${TMPDIR:-/tmp}/nsr-data.$$"
is "$out" "file contents" "--ro-bind-data: the data"
like "$err" "Read-only file system" "--ro-bind-data is read-only"
run "$NSRUN" $BASE --ro-bind-data 3 /etc/hostname -- cat /etc/hostname 3<"${TMPDIR:-/tmp}/nsr-data.$$"
is "$rc:$out" "0:file contents" "--ro-bind-data over an existing file of a read-only bind"
run "$NSRUN" $BASE --ro-bind-data 3 /etc/nsr-injected -- true 3<"${TMPDIR:-/tmp}/nsr-data.$$"
like "$rc:$err" "^1:nsrun: Can't create file /etc/nsr-injected: Read-only file system" "--ro-bind-data cannot create a mount point on a read-only bind"
check "... and the host is untouched" test ! -e /etc/nsr-injected
rm -f "${TMPDIR:-/tmp}/nsr-data.$$"
bin=${TMPDIR:-/tmp}/nsr-bin.$$
head -c 4096 /dev/urandom > "$bin"
run sh -c "cat '$bin' | '$NSRUN' $BASE --tmpfs /tmp --file 3 /tmp/bin -- md5sum /tmp/bin 3<&0"
is "${out%% *}" "$(md5sum < "$bin" | cut -d' ' -f1)" "--file copies binary data from a pipe exactly"
rm -f "$bin"

run "$NSRUN" $BASE --tmpfs /tmp --symlink ../target /tmp/l/link -- sh -c 'readlink /tmp/l/link; stat -c %a /tmp/l'
is "$out" "../target
700" "--symlink creates the link verbatim; parents 0700"
run "$NSRUN" $BASE --tmpfs /tmp --symlink a /tmp/l --symlink a /tmp/l -- readlink /tmp/l
is "$rc:$out" "0:a" "--symlink is idempotent for the same target"
run "$NSRUN" $BASE --tmpfs /tmp --symlink a /tmp/l --symlink b /tmp/l -- true
is "$rc:$err" "1:nsrun: Can't make symlink at /tmp/l: existing destination is a" "--symlink over a different link fails"
run "$NSRUN" $BASE --tmpfs /tmp --dir /tmp/d --symlink a /tmp/d -- true
is "$rc:$err" "1:nsrun: Can't make symlink at /tmp/d: destination exists and is not a symlink" "--symlink over a dir fails"

run "$NSRUN" $BASE --tmpfs /tmp --dir /tmp/d --chmod 0711 /tmp/d -- stat -c %a /tmp/d
is "$out" "711" "--chmod changes the mode"
run "$NSRUN" $BASE --tmpfs /tmp --chmod 0755 /tmp/nope -- true
is "$rc:$err" "1:nsrun: Can't open /tmp/nope: No such file or directory" "--chmod needs an existing path"
run "$NSRUN" $BASE --tmpfs /tmp --chmod 0888 /tmp -- true
is "$rc:$err" "1:nsrun: --chmod takes an octal argument <= 07777" "--chmod needs octal"

run "$NSRUN" $BASE --perms 0700 --bind /tmp /mnt -- true
is "$rc:$err" "1:nsrun: --perms must be followed by an option that creates a file" "--perms before an op that takes none"
run "$NSRUN" $BASE --perms 0700 --perms 0700 --dir /x -- true
is "$rc:$err" "1:nsrun: --perms given twice for the same action" "--perms twice"
run "$NSRUN" $BASE --perms 9 --dir /x -- true
is "$rc:$err" "1:nsrun: --perms takes an octal argument <= 07777" "--perms needs octal"
run "$NSRUN" $BASE --size 100 --dir /x -- true
is "$rc:$err" "1:nsrun: --size must be followed by --tmpfs" "--size before an op that is not --tmpfs"

run "$NSRUN" $BASE --unshare-ipc --tmpfs /tmp --mqueue /tmp/mq -- sh -c 'grep " /tmp/mq " /proc/self/mountinfo'
like "$out" "mqueue" "--mqueue mounts an mqueue fs"
run "$NSRUN" $BASE --tmpfs /tmp --mqueue /tmp/mq -- true
if is_root; then
	is "$rc" 0 "--mqueue without --unshare-ipc works for real root"
else
	like "$rc:$err" "^1:nsrun: Can't mount mqueue on /tmp/mq: " "--mqueue needs an IPC namespace of our own"
fi
done_testing
