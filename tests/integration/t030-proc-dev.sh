#!/bin/sh
# --proc and --dev.
. "$NSR_TESTS/lib.sh"

run "$NSRUN" $BASE --unshare-pid --proc /proc -- sh -c 'ls /proc | grep -c "^[0-9]*$"; grep " /proc " /proc/self/mountinfo'
like "$out" "^[1-3]
" "--proc in a pid namespace shows only the sandbox's processes"
like "$out" " /proc rw,nosuid,nodev,noexec,[a-z]+ - proc proc " "--proc mounts a fresh procfs, nosuid,nodev,noexec"
run "$NSRUN" $BASE --proc /proc -- sh -c 'test -d /proc/1 && echo host-pid-1'
is "$out" "host-pid-1" "--proc without a pid namespace shows the host's processes"
# bwrap re-binds sys, sysrq-trigger, irq and bus read-only when they are
# writable (access(W_OK)); this kernel has no sysrq-trigger and /proc/sys
# answers EACCES to access(), so irq and bus are the ones to check.
run "$NSRUN" $BASE --unshare-pid --proc /proc -- sh -c 'grep -E " /proc/(irq|bus) " /proc/self/mountinfo | cut -d" " -f5,6'
if is_root; then
	is "$out" "/proc/irq ro,nosuid,nodev,noexec,relatime
/proc/bus ro,nosuid,nodev,noexec,relatime" "/proc/irq and /proc/bus are re-bound read-only for root"
	run "$NSRUN" $BASE --unshare-pid --proc /proc -- sh -c 'cat /proc/irq/default_smp_affinity > /proc/irq/default_smp_affinity'
	like "$err" "Read-only file system" "... and really are read-only"
else
	is "$out" "" "/proc/irq and /proc/bus are left alone when they are not writable anyway"
	run "$NSRUN" $BASE --unshare-pid --proc /proc -- sh -c 'cat /proc/irq/default_smp_affinity > /proc/irq/default_smp_affinity'
	like "$err" "Permission denied" "... and really are not writable"
fi

run "$NSRUN" $BASE --dev /dev -- sh -c 'cd /dev && ls -A | tr "\n" " "'
is "$out" "core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " "--dev holds exactly bwrap's entries"
run "$NSRUN" $BASE --dev /dev -- sh -c 'for l in stdin stdout stderr fd core ptmx; do printf "%s=%s " $l $(readlink /dev/$l); done'
is "$out" "stdin=/proc/self/fd/0 stdout=/proc/self/fd/1 stderr=/proc/self/fd/2 fd=/proc/self/fd core=/proc/kcore ptmx=pts/ptmx " "--dev symlinks"
run "$NSRUN" $BASE --dev /dev -- sh -c 'echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c'
is "$rc:$(echo $out)" "0:4 4" "--dev nodes work although the tmpfs is nodev"
run "$NSRUN" $BASE --dev /dev -- sh -c 'grep -E " /dev(/pts)? " /proc/self/mountinfo'
like "$out" " /dev rw,nosuid,nodev,[a-z]+ - tmpfs tmpfs rw,mode=755" "--dev: /dev is a nosuid,nodev tmpfs with mode 0755"
like "$out" " /dev/pts rw,nosuid,noexec,[a-z]+ - devpts devpts .*mode=620,ptmxmode=666" "--dev: a new devpts instance"
run "$NSRUN" $BASE --dev /dev -- python3 -c 'import os; m, s = os.openpty(); print(os.ttyname(s))'
is "$rc:$out" "0:/dev/pts/0" "a pty can be opened in the new devpts"
run "$NSRUN" $BASE --dev /dev -- stat -c %a /dev/shm
is "$out" "755" "/dev/shm is a plain 0755 dir, as bwrap makes it"
run "$NSRUN" $BASE --dev /dev -- sh -c 'test -e /dev/console && echo yes || echo no'
is "$out" "no" "no /dev/console when stdout is not a terminal"
if command -v script >/dev/null 2>&1; then
	run script -qec "$NSRUN $BASE --dev /dev -- sh -c 'test -c /dev/console && echo console-ok'" /dev/null
	like "$out" "console-ok" "/dev/console is the caller's terminal when stdout is one"
else
	skip "/dev/console on a terminal" "script(1) is not installed"
fi
run "$NSRUN" $BASE --dev /dev --unshare-user --uid 1234 --gid 4321 -- sh -c 'id -u; id -g; cat /proc/self/uid_map'
like "$out" "^1234
4321
 +1234 +0 +1$" "--dev with another uid: root is mapped first, then a nested namespace maps the uid"
done_testing
