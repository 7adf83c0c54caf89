#!/bin/sh
# --info-fd, --json-status-fd (byte-exact), --block-fd, --userns-block-fd,
# --sync-fd and --args.
. "$NSR_TESTS/lib.sh"
d=$(scratch)

ino() { stat -L -c %i "/proc/$1/ns/$2"; }

# --info-fd: pretty JSON, child-pid first, then one key per new namespace
# (mnt always, never user), closed before the command runs.
"$NSRUN" $BASE --unshare-net --unshare-uts --unshare-pid --info-fd 3 -- sh -c 'sleep 0.5' 3>"$d/info" &
w=$!
for _ in $(seq 50); do [ -s "$d/info" ] && break; sleep 0.05; done
pid=$(sed -n 's/^    "child-pid": \([0-9]*\),$/\1/p' "$d/info")
expected=$(printf '{\n    "child-pid": %s,\n    "mnt-namespace": %s,\n    "net-namespace": %s,\n    "pid-namespace": %s,\n    "uts-namespace": %s\n}\n' \
	"$pid" "$(ino "$pid" mnt)" "$(ino "$pid" net)" "$(ino "$pid" pid)" "$(ino "$pid" uts)")
wait $w
is "$(cat "$d/info")" "$expected" "--info-fd: bwrap's exact format and key order"
[ "$(tail -c 1 "$d/info" | od -An -c | tr -d ' ')" = '\n' ] && ok "--info-fd ends with a newline" || not_ok "--info-fd ends with a newline"
run "$NSRUN" $BASE --unshare-all --info-fd 3 -- true 3>"$d/info2"
like "$(cat "$d/info2")" '"cgroup-namespace": [0-9]+,
    "ipc-namespace": [0-9]+,
    "mnt-namespace": [0-9]+,
    "net-namespace": [0-9]+,
    "pid-namespace": [0-9]+,
    "uts-namespace": [0-9]+
}' "--info-fd with --unshare-all lists cgroup, ipc, mnt, net, pid and uts in that order"
unlike "$(cat "$d/info2")" "user-namespace" "the user namespace is never listed"

run "$NSRUN" $BASE --unshare-pid --json-status-fd 3 -- sh -c 'exit 7' 3>"$d/json"
is "$rc" 7 "--json-status-fd: the command's status"
like "$(head -1 "$d/json")" '^\{ "child-pid": [0-9]+, "mnt-namespace": [0-9]+, "pid-namespace": [0-9]+ \}$' "--json-status-fd: the first line"
is "$(sed -n 2p "$d/json")" '{ "exit-code": 7 }' "--json-status-fd: the exit-code line"
is "$(wc -l < "$d/json")" "2" "--json-status-fd: exactly two lines"
run "$NSRUN" $BASE --json-status-fd 3 -- sh -c 'kill -TERM $$' 3>"$d/json"
is "$(sed -n 2p "$d/json")" '{ "exit-code": 143 }' "--json-status-fd: a signal gives 128+N"
run "$NSRUN" $BASE --json-status-fd 3 -- /nonexistent 3>"$d/json"
is "$rc:$(wc -l < "$d/json")" "1:1" "--json-status-fd: no exit-code line when exec fails"
run "$NSRUN" $BASE --json-status-fd 3 --chdir /nonexistent -- true 3>"$d/json"
is "$rc:$(grep -c exit-code "$d/json")" "1:0" "--json-status-fd: no exit-code line when setup fails"
run "$NSRUN" $BASE --info-fd 3 --json-status-fd 4 -- true 3>"$d/i" 4>"$d/j"
is "$(head -1 "$d/j" | sed 's/[0-9]*//g')" '{ "child-pid": , "mnt-namespace":  }' "info and json together"
# A monitor that is slow to write (a test hook, where built in) makes a
# command that does not wait for it certain to run.
if [ -n "${NSR_TEST_HOOKS:-}" ]; then
	NSRUN_TEST_MONITOR_DELAY_MS=300; export NSRUN_TEST_MONITOR_DELAY_MS
else
	diag "no test hooks in this build: the never-ran checks below race a fast monitor"
fi
rm -f "$d/ran"
run "$NSRUN" $BASE --bind "$d" "$d" --info-fd 99 -- touch "$d/ran"
like "$rc:$err" "^1:nsrun: Write to info_fd: Bad file descriptor" "a bad --info-fd fails"
# A control launch that runs: had the failed one started its command,
# that would have run by the time the control's has.
"$NSRUN" $BASE --bind "$d" "$d" -- touch "$d/control"
wait_until 10 test -e "$d/control"
[ ! -e "$d/ran" ] && ok "and the command never ran" || not_ok "and the command never ran"
rm -f "$d/ran"
run "$NSRUN" $BASE --bind "$d" "$d" --unshare-pid --json-status-fd 99 -- touch "$d/ran"
like "$rc:$err" "^1:nsrun: Write to info_fd: Bad file descriptor" "a bad --json-status-fd fails (bwrap's message)"
rm -f "$d/control"
"$NSRUN" $BASE --bind "$d" "$d" --unshare-pid -- touch "$d/control"
wait_until 10 test -e "$d/control"
[ ! -e "$d/ran" ] && ok "and the command never ran, pid 1 or not" || not_ok "and the command never ran, pid 1 or not"
unset NSRUN_TEST_MONITOR_DELAY_MS

# --block-fd: the command waits for data on the fd.
rm -f "$d/ran"
mkfifo "$d/fifo"
"$NSRUN" $BASE --bind "$d" "$d" --block-fd 3 -- touch "$d/ran" 3<>"$d/fifo" &
w=$!
# A whole launch started after it has run its command: the blocked one
# would have too.
rm -f "$d/control"
"$NSRUN" $BASE --bind "$d" "$d" -- touch "$d/control"
check "--block-fd: a launch started later has run" test -e "$d/control"
check "--block-fd: nothing runs before data arrives" test ! -e "$d/ran"
# Bounded: if nsrun died, nothing reads the fifo and its open would block.
timeout 10 sh -c 'echo go > "$1"' _ "$d/fifo"
wait $w
check "--block-fd: the command runs after data arrives" test -e "$d/ran"

# --userns-block-fd: setup waits; another process writes the id maps.
if ! is_root; then
	rm -f "$d/info" "$d/ran"
	exec 8<>"$d/fifo"
	"$NSRUN" $BASE --bind "$d" "$d" --unshare-user --info-fd 3 --userns-block-fd 4 -- sh -c "cat /proc/self/uid_map > $d/ran" 3>"$d/info" 4<&8 &
	w=$!
	for _ in $(seq 50); do [ -s "$d/info" ] && break; sleep 0.05; done
	pid=$(sed -n 's/^    "child-pid": \([0-9]*\),$/\1/p' "$d/info")
	# Without maps written by us, the sandbox would run with no mapping.
	printf '0 %s 1\n' "$(id -u)" > "/proc/$pid/uid_map" 2>/dev/null
	echo deny > "/proc/$pid/setgroups" 2>/dev/null
	printf '0 %s 1\n' "$(id -g)" > "/proc/$pid/gid_map" 2>/dev/null
	echo x >&8
	wait $w
	like "$(cat "$d/ran" 2>/dev/null)" "^ +0 +$(id -u) +1$" "--userns-block-fd: the maps written by another process are used"
	exec 8<&-
fi
run "$NSRUN" $BASE --userns-block-fd 4 -- true
is "$rc:$err" "1:nsrun: --userns-block-fd requires --unshare-user" "--userns-block-fd needs --unshare-user"
run "$NSRUN" $BASE --unshare-user --userns-block-fd 4 -- true
is "$rc:$err" "1:nsrun: --userns-block-fd requires --info-fd" "--userns-block-fd needs --info-fd"

# --sync-fd: held open by pid 1 while the sandbox lives.
"$NSRUN" $BASE --sync-fd 3 -- true 3>"$d/fifo2"
is "$?" 0 "--sync-fd runs"
python3 - "$NSRUN" <<'PY' > "$d/sync.out"
import os, subprocess, sys, time
r, w = os.pipe()
p = subprocess.Popen([sys.argv[1], "--ro-bind", "/", "/", "--sync-fd", str(w), "--", "sleep", "0.5"], pass_fds=[w])
os.close(w)
t0 = time.time()
os.read(r, 1)   # EOF only when every holder of the write end is gone
print("closed-after-exit" if p.poll() is not None or time.time() - t0 > 0.3 else "closed-early")
p.wait()
PY
is "$(cat "$d/sync.out")" "closed-after-exit" "--sync-fd stays open until the sandbox ends"

# --args: NUL-separated, repeatable, not nested.
printf -- '--setenv\0A\0from-args\0' > "$d/args1"
printf -- '--setenv\0B\0two' > "$d/args2"
run "$NSRUN" --args 3 --args 4 $BASE -- sh -c 'echo "$A $B"' 3<"$d/args1" 4<"$d/args2"
is "$out" "from-args two" "--args: NUL-separated words, trailing NUL optional, repeatable"
printf -- '--args\0005\0' > "$d/args3"
run "$NSRUN" --args 3 $BASE -- true 3<"$d/args3"
is "$rc:$err" "1:nsrun: --args not supported in arguments file" "--args inside an args file is refused"
python3 -c 'import sys; sys.stdout.write("\0".join(["--unsetenv", "X"] * 4500))' > "$d/args4"
run "$NSRUN" --args 3 $BASE -- true 3<"$d/args4"
is "$rc:$err" "1:nsrun: Exceeded maximum number of arguments 9000" "more than 9000 arguments are refused"
rm -rf "$d"
done_testing
