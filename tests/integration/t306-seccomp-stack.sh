#!/bin/sh
# --seccomp-policy may be repeated and the filters stack in order, and the
# --seccomp / --add-seccomp-fd programs stack after them. Without any of
# them, nsrun, like bwrap, loads no filter.
. "$NSR_TESTS/lib.sh"
. "$NSR_TESTS/seccomp-lib.sh"

d=$(scratch)
# Two policies that deny the same call with different errnos. Among filters
# that return an errno, the kernel takes the most recently loaded one.
printf 'deny ioctl errno EXDEV if arg1 & 0xffffffff == 0x5401  # TCGETS\n' > "$d/a.policy"
printf 'deny ioctl errno EXFULL if arg1 & 0xffffffff == 0x5401\n' > "$d/b.policy"
printf 'deny ioctl errno EDQUOT if arg1 & 0xffffffff == 0x5401\n' > "$d/c.policy"
$NSRUN seccomp compile "$d/c.policy" -o "$d/c.bpf"

run $NSRUN $SBX -- "$PROBE" ioctl_tcgets
is "$out" "ioctl_tcgets EBADF" "no policy: the call reaches the kernel"
run $NSRUN $SBX --seccomp-policy "$d/a.policy" --seccomp-policy "$d/b.policy" -- "$PROBE" ioctl_tcgets
is "$out" "ioctl_tcgets EXFULL" "a then b: b was loaded last"
run $NSRUN $SBX --seccomp-policy "$d/b.policy" --seccomp-policy "$d/a.policy" -- "$PROBE" ioctl_tcgets
is "$out" "ioctl_tcgets EXDEV" "b then a: a was loaded last"
run $NSRUN $SBX --add-seccomp-fd 3 --seccomp-policy "$d/a.policy" -- "$PROBE" ioctl_tcgets 3<"$d/c.bpf"
is "$out" "ioctl_tcgets EDQUOT" "--add-seccomp-fd stacks after the policies, wherever it is given"
run $NSRUN $SBX --seccomp 3 --seccomp-policy "$d/a.policy" -- "$PROBE" ioctl_tcgets 3<"$d/c.bpf"
is "$out" "ioctl_tcgets EDQUOT" "--seccomp stacks after the policies too"

filters() { awk '/^Seccomp_filters:/ { print $2 }'; }
base=$($NSRUN $SBX -- cat /proc/self/status | filters)
mine=$(filters < /proc/self/status)
is "$base" "$mine" "without a policy nsrun loads no filter, like bwrap"
n=$($NSRUN $SBX --seccomp-policy "$d/a.policy" --seccomp-policy default --add-seccomp-fd 3 -- cat /proc/self/status 3<"$d/c.bpf" | filters)
is "$n" $((base + 3)) "two policies and one program are three filters"

# pid 1 (the reaper, under --unshare-pid): with nsrun's own policies it gets
# one small filter of its own; with programs from the caller it loads them
# all, as bwrap's pid 1 does.
n=$($NSRUN $SBX --seccomp-policy "$d/a.policy" --seccomp-policy default -- cat /proc/1/status | filters)
is "$n" $((base + 1)) "with policies, pid 1 has one filter of its own"
n=$($NSRUN $SBX --seccomp-policy "$d/a.policy" --add-seccomp-fd 3 -- cat /proc/1/status 3<"$d/c.bpf" | filters)
is "$n" $((base + 2)) "with a caller's program, pid 1 loads every filter (bwrap's way)"
# The reaper still does its job under its filter: it reaps an orphan,
# forwards a signal and reports the command's status.
$NSRUN $SBX --bind "$d" "$d" --seccomp-policy default -- sh -c "trap 'exit 7' TERM; (sleep 0.1 &); echo > '$d/ready'; i=0; while [ \$i -lt 50 ]; do sleep 0.1; i=\$((i+1)); done" &
pid=$!
wait_until 30 test -e "$d/ready" || diag "the command did not start"
kill -TERM $pid
wait $pid
is "$?" 7 "the confined pid 1 forwards SIGTERM and reports the command's status"
# The orphan outlives the command by 2 s: pid 1 (its host pid from
# --info-fd) must still be there to reap it when nsrun returns, and be gone
# once it has. (The former check looked for the orphan by its command line
# after it had ended, which a zombie does not have: it could not fail.)
run $NSRUN $SBX --info-fd 3 --seccomp-policy default -- sh -c 'sleep 2 & exit 3' 3>"$d/info"
is "$rc" 3 "the command's status comes back as soon as it exits"
pid1=$(sed -n 's/.*"child-pid": *\([0-9]*\).*/\1/p' "$d/info")
live() { [ -n "$pid1" ] && [ -e "/proc/$pid1" ] && ! grep -q '^[^)]*) Z' "/proc/$pid1/stat" 2>/dev/null; }
check "pid 1 stays for the orphan the command left" live
check "and exits once it has reaped it" wait_until 20 eval '! live'

rm -rf "$d"
seccomp_done_testing
