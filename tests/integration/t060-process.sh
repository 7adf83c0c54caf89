#!/bin/sh
# --die-with-parent, --new-session, --as-pid-1, the reaper and signal
# forwarding, capabilities and no_new_privs.
. "$NSR_TESTS/lib.sh"
d=$(scratch)

status_field() { grep "^$1:" /proc/self/status | cut -f2; }

run "$NSRUN" $BASE -- grep NoNewPrivs /proc/self/status
like "$out" "NoNewPrivs:	1" "no_new_privs is always set"
run "$NSRUN" $BASE --unshare-user -- sh -c 'grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb)" /proc/self/status | cut -f2 | sort -u'
if is_root; then
	like "$out" "[0-9a-f]{16}" "root in a user namespace keeps caps (within its bounding set)"
else
	is "$out" "0000000000000000" "a caller who is not root ends with no capabilities at all"
fi
run "$NSRUN" $BASE --unshare-user --uid 0 -- sh -c 'grep CapEff /proc/self/status | cut -f2; unshare -U true 2>&1; mount -t tmpfs none /tmp 2>&1'
if ! is_root; then
	like "$out" "^0000000000000000" "uid 0 in the sandbox still has no capabilities"
	like "$out" "mount: .*(permission denied|must be superuser)" "... so it cannot mount"
fi
run "$NSRUN" $BASE --unshare-user --cap-drop ALL --cap-add CAP_NET_RAW -- sh -c 'grep -E "^Cap(Eff|Amb|Bnd)" /proc/self/status | cut -f2 | sort -u'
is "$out" "0000000000002000" "--cap-drop ALL --cap-add keeps exactly that capability (effective, ambient, bounding)"
run "$NSRUN" $BASE --unshare-user --cap-add ALL --cap-drop CAP_SYS_ADMIN -- sh -c 'grep CapEff /proc/self/status | cut -f2'
is "$(( (0x$out >> 21) & 1 )):$(( (0x$out >> 12) & 1 ))" "0:1" "--cap-drop after --cap-add ALL removes only that one"
run "$NSRUN" $BASE --cap-add cap_bogus -- true
is "$rc:$err" "1:nsrun: unknown cap: cap_bogus" "--cap-add with an unknown name"
if is_root; then
	run "$NSRUN" $BASE -- sh -c 'grep CapEff /proc/self/status | cut -f2'
	is "$out" "$(status_field CapEff)" "real root keeps its capabilities by default"
	run "$NSRUN" $BASE --cap-drop ALL -- sh -c 'grep -E "^Cap(Eff|Prm)" /proc/self/status | cut -f2 | sort -u; touch /proc/sys/x 2>/dev/null; cat /etc/shadow >/dev/null && echo read-shadow'
	is "$out" "0000000000000000" "real root with --cap-drop ALL has none, and cannot regain them"
fi

# pid 1 and the reaper.
run "$NSRUN" $BASE --unshare-pid -- sh -c 'echo $$; cat /proc/1/comm 2>/dev/null || true'
is "$(echo "$out" | head -1)" "2" "under --unshare-pid the command is pid 2 (pid 1 is the reaper)"
run "$NSRUN" $BASE --unshare-pid --as-pid-1 -- sh -c 'echo $$'
is "$out" "1" "--as-pid-1 makes the command pid 1"
run "$NSRUN" $BASE --as-pid-1 -- true
is "$rc:$err" "1:nsrun: Specifying --as-pid-1 requires --unshare-pid" "--as-pid-1 needs --unshare-pid"
run "$NSRUN" $BASE --unshare-pid --proc /proc -- sh -c 'sh -c "sleep 0.2 &" ; sleep 0.5; ps -eo stat,comm | grep -c "^Z"'
is "$out" "0" "the reaper reaps orphaned zombies"

# Signal forwarding: SIGTERM to nsrun reaches the command, through pid 1.
for mode in "--unshare-pid" ""; do
	rm -f "$d/trap"
	"$NSRUN" $BASE --bind "$d" "$d" $mode -- sh -c "trap 'echo got-term > $d/trap; exit 3' TERM; echo ready > $d/ready; while :; do sleep 0.1; done" &
	pid=$!
	for _ in $(seq 50); do [ -s "$d/ready" ] && break; sleep 0.1; done
	kill -TERM $pid
	wait $pid
	st=$?
	rm -f "$d/ready"
	is "$st:$(cat "$d/trap" 2>/dev/null)" "3:got-term" "SIGTERM to nsrun reaches the command (${mode:-no pid namespace})"
done
# --die-with-parent: killing the caller kills the sandbox.
# The sandbox sleeps 30 s (a token nothing else runs): it is seen
# running, nsrun is killed, and the sleep must then go well before its end.
# (Checking for a file it would write after the sleep proved nothing: it
# could not exist yet at any time the test looked.)
tok=30.$$
sh -c "\"$NSRUN\" $BASE --unshare-pid --die-with-parent -- sleep $tok & echo \$! > $d/nsrun.pid; wait" &
parent=$!
sleeping() { pgrep -f "^sleep $tok\$" >/dev/null; }
check "--die-with-parent: the sandbox runs" wait_until 30 sleeping
kill -KILL "$(cat "$d/nsrun.pid")" 2>/dev/null
check "--die-with-parent: the sandbox dies with nsrun" wait_until 10 eval '! sleeping'
pkill -KILL -f "^sleep $tok\$" 2>/dev/null
wait $parent 2>/dev/null

# --new-session: no controlling terminal, so TIOCSTI cannot inject.
if command -v script >/dev/null 2>&1; then
	run script -qec "$NSRUN $BASE --new-session -- python3 -c 'import os; print(os.getsid(0) == os.getpid())'" /dev/null
	like "$out" "True" "--new-session runs the command as a session leader"
	run script -qec "$NSRUN $BASE --new-session --cap-drop ALL -- python3 -c '
import fcntl, termios, sys
try:
    fcntl.ioctl(0, termios.TIOCSTI, b\"x\"); print(\"injected\")
except OSError as e: print(\"blocked\", e.errno)'" /dev/null
	like "$out" "blocked" "--new-session blocks TIOCSTI injection into the caller's terminal"
	run script -qec "$NSRUN $BASE --cap-drop ALL -- python3 -c '
import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b\"x\"); print(\"injected\")
except OSError as e: print(\"blocked\", e.errno)'" /dev/null
	if echo "$out" | grep -q injected; then ok "without --new-session TIOCSTI works (the previous test can fail)"
	else skip "TIOCSTI control" "TIOCSTI is disabled on this kernel (dev.tty.legacy_tiocsti=0)"; fi
else
	skip "--new-session" "script(1) is not installed"
fi

# --lock-file: pid 1 holds a read lock for the sandbox's life.
touch "$d/lock"
run "$NSRUN" $BASE --bind "$d" "$d" --lock-file "$d/lock" -- sh -c "cat /proc/locks | grep -c READ"
is "$out" "1" "--lock-file takes a read lock"
run "$NSRUN" $BASE --unshare-pid --as-pid-1 --lock-file /x -- true
is "$rc:$err" "1:nsrun: Specifying --as-pid-1 and --lock-file is not permitted" "--lock-file and --as-pid-1 conflict"
run "$NSRUN" $BASE --lock-file /nonexistent-lock -- true
is "$rc:$err" "1:nsrun: Unable to open lock file /nonexistent-lock: No such file or directory" "a missing lock file fails"
# The status comes back as soon as pid 1 has it: nsrun does not wait for
# pid 1's exit and the namespaces' teardown (bwrap returns there too). A
# test hook makes pid 1 slow to exit; it is still alive when nsrun returns.
if [ -n "${NSR_TEST_HOOKS:-}" ]; then
	NSRUN_TEST_PID1_EXIT_DELAY_MS=5000; export NSRUN_TEST_PID1_EXIT_DELAY_MS
	run "$NSRUN" $BASE --unshare-pid --info-fd 3 -- sh -c 'exit 5' 3>"$d/info"
	unset NSRUN_TEST_PID1_EXIT_DELAY_MS
	pid1=$(sed -n 's/.*"child-pid": *\([0-9]*\).*/\1/p' "$d/info")
	is "$rc" 5 "the command's status comes back"
	if [ -n "$pid1" ] && kill -0 "$pid1" 2>/dev/null; then
		ok "before pid 1 has finished exiting"
		kill -KILL "$pid1" 2>/dev/null
	else
		not_ok "before pid 1 has finished exiting"
	fi
else
	skip "the status comes back before pid 1 exits" "no test hooks in this build"
fi

rm -rf "$d"
done_testing
