#!/bin/sh
# --seccomp and --add-seccomp-fd with programs made by python3-seccomp.
. "$NSR_TESTS/lib.sh"
/usr/bin/python3 -c 'import seccomp' 2>/dev/null || skip_all "python3-seccomp is not installed (apt-get install python3-seccomp)"
d=$(scratch)
gen() { # gen FILE SYSCALL ERRNO
	/usr/bin/python3 - "$@" <<'PY'
import errno, seccomp, sys
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
f.add_rule(seccomp.ERRNO(getattr(errno, sys.argv[3])), sys.argv[2])
with open(sys.argv[1], "wb") as out:
    f.export_bpf(out)
PY
}
gen "$d/uname.bpf" uname EPERM
gen "$d/getcwd.bpf" getcwd ENOTSUP

run "$NSRUN" $BASE --seccomp 3 -- uname 3<"$d/uname.bpf"
like "$rc:$err" "^1:uname: cannot get system name: Operation not permitted" "--seccomp: the program blocks uname with EPERM"
run "$NSRUN" $BASE --seccomp 3 -- sh -c 'grep Seccomp: /proc/self/status; pwd' 3<"$d/uname.bpf"
like "$out" "Seccomp:	2" "--seccomp: the command runs in filter mode"
run "$NSRUN" $BASE --add-seccomp-fd 3 --add-seccomp-fd 4 -- sh -c 'uname; /usr/bin/python3 -c "import os; os.getcwd()"' 3<"$d/uname.bpf" 4<"$d/getcwd.bpf"
like "$err" "Operation not permitted" "--add-seccomp-fd: the first program applies"
like "$err" "OSError: .Errno 95. Operation not supported" "--add-seccomp-fd: the second program stacks"
run "$NSRUN" $BASE --unshare-pid --seccomp 3 -- uname 3<"$d/uname.bpf"
is "$rc" 1 "--seccomp applies under a pid namespace too"
run "$NSRUN" $BASE --seccomp 3 --add-seccomp-fd 4 -- true 3<"$d/uname.bpf" 4<"$d/uname.bpf"
is "$rc:$err" "1:nsrun: --add-seccomp-fd cannot be combined with --seccomp" "--seccomp then --add-seccomp-fd"
run "$NSRUN" $BASE --add-seccomp-fd 4 --seccomp 3 -- true 3<"$d/uname.bpf" 4<"$d/uname.bpf"
is "$rc:$err" "1:nsrun: --seccomp cannot be combined with --add-seccomp-fd" "--add-seccomp-fd then --seccomp"
printf 'abcde' > "$d/bad.bpf"
run "$NSRUN" $BASE --seccomp 3 -- true 3<"$d/bad.bpf"
is "$rc:$err" "1:nsrun: Invalid seccomp data, must be multiple of 8" "--seccomp: bad length"
run "$NSRUN" $BASE --add-seccomp-fd 3 -- true 3<"$d/bad.bpf"
is "$rc:$err" "1:nsrun: Invalid seccomp data, must be multiple of 8" "--add-seccomp-fd: bad length"
head -c 16 /dev/zero > "$d/junk.bpf"
run "$NSRUN" $BASE --seccomp 3 -- true 3<"$d/junk.bpf"
like "$rc:$err" "^1:nsrun: " "a program the kernel rejects fails with a message"
run "$NSRUN" $BASE --seccomp x -- true
is "$rc:$err" "1:nsrun: Invalid fd: x" "--seccomp with a bad fd"
rm -rf "$d"
done_testing
