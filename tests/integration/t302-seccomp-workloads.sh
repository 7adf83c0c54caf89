#!/bin/sh
# Ordinary development work runs unchanged under default.policy: sh, make,
# gcc, python3, git commit, tar and a threaded program. And the point of
# default-nested.policy: a nested nsrun works under it, and not under default.
. "$NSR_TESTS/lib.sh"
. "$NSR_TESTS/seccomp-lib.sh"

work=$(scratch)
W="$SBX --tmpfs /tmp --bind $work $work --chdir $work --setenv HOME $work"
w() { $NSRUN $W --seccomp-policy default -- "$@"; }

run w cat /proc/self/status
like "$out" 'Seccomp:[[:space:]]+2' "the workloads really run under a filter"

run w sh -c 'echo one; (echo two); x=$(echo three | tr a-z A-Z); echo "$x"; for i in 1 2; do echo "$i"; done | wc -l'
is "$out" "one
two
THREE
2" "sh: subshells, command substitution, pipes"

printf 'all: out.txt\nout.txt: in.txt\n\tcp in.txt out.txt\n' > "$work/Makefile"
echo data > "$work/in.txt"
run w make -s
is "$rc" 0 "make runs"
is "$(cat "$work/out.txt" 2>/dev/null)" data "make built its target"

if command -v gcc >/dev/null 2>&1; then
	printf '#include <stdio.h>\nint main(void) { puts("built and ran"); return 0; }\n' > "$work/hello.c"
	run w sh -c 'gcc -O2 -Wall -o hello hello.c && ./hello'
	is "$out" "built and ran" "gcc builds a program, which runs"
else
	skip "gcc builds a program" "gcc is not installed"
fi

if [ -x /usr/bin/python3 ]; then
	run w /usr/bin/python3 -c '
import threading, subprocess, socket, tempfile, os
r = []
t = [threading.Thread(target=lambda i=i: r.append(i * i)) for i in range(4)]
[x.start() for x in t]; [x.join() for x in t]
out = subprocess.run(["echo", "child"], capture_output=True, text=True).stdout.strip()
a, b = socket.socketpair(); a.send(b"sock"); got = b.recv(4).decode()
with tempfile.TemporaryDirectory() as d: open(os.path.join(d, "f"), "w").write("x")
print(sum(r), out, got)'
	is "$out" "14 child sock" "python3: threads, subprocess, sockets, temp files"
else
	skip "python3" "/usr/bin/python3 is not installed"
fi

if command -v git >/dev/null 2>&1; then
	run w sh -c 'git init -q repo && cd repo && echo hello > f && git add f &&
		git -c user.name=Test -c user.email=test@example.com commit -q -m "first commit" &&
		git log --format=%s'
	is "$out" "first commit" "git init, add and commit"
else
	skip "git commit" "git is not installed"
fi

run w sh -c 'mkdir -p src/sub && echo a > src/sub/a && tar czf src.tgz src && mkdir x && tar xzf src.tgz -C x && cat x/src/sub/a'
is "$out" a "tar creates and extracts a compressed archive"

# (The sandbox's own /tmp hides the staged helpers: run a copy.)
cp "$NSR_HELPERS/nsr-threads" "$work/"
run w "$work/nsr-threads"
is "$out" 319999600000 "a threaded program (clone3 falls back to clone)"

# Nesting. Under default-nested, a nested nsrun can build its sandbox; under
# default it cannot. The staged nsrun is visible through the read-only /.
inner="$NSRUN --ro-bind / / --dev /dev --proc /proc --unshare-pid -- echo nested"
run $NSRUN $SBX --seccomp-policy default-nested -- $inner
is "$out" nested "default-nested: a nested nsrun builds its own sandbox"
run $NSRUN $SBX --seccomp-policy default -- $inner
isnt_ok=no
[ "$rc" -ne 0 ] && [ -z "$out" ] && isnt_ok=yes
is "$isnt_ok" yes "default: a nested nsrun cannot (rc $rc: $(printf '%s' "$err" | head -n 1))"

rm -rf "$work"
seccomp_done_testing
