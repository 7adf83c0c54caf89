#!/bin/sh
# A session step is a full run: a call the policy refuses gets the
# policy's errno (not ENOSYS) and is recorded in the step's report, step
# by step; the agent, a step and the daemon end with the fds they should
# (the refused-call socket belongs to the confinement, the daemon keeps no
# fd per step); the caller's environment passes through the one-shot
# deny list (--clearenv: none), never cut short.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
[ "$(uname -m)" = x86_64 ] || skip_all "the probe uses x86_64 system call numbers"
d=$(scratch)
P=$d/proj
S=$d/state
NS="--state-dir $S"
mkdir -p "$P"
gone() { ! kill -0 "$1" 2>/dev/null; }
refused() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d.get('refused') or {}; c={x['name']: x for x in r.get('syscalls', [])}; print(eval(sys.argv[2]))" "$@" 2>&1; }

cat > "$P/probe.py" <<'EOF'
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
calls = {"mount": (165, 0, 0, 0, 0, 0), "keyctl": (250, 0, 0, 0), "bpf": (321, 0, 0, 0)}
for spec in sys.argv[1:]:
    name, n = spec.split("=")
    for i in range(int(n)):
        r = libc.syscall(*[ctypes.c_long(a) for a in calls[name]])
        e = ctypes.get_errno() if r < 0 else 0
    print(name, e)
EOF

# The errnos a one-shot run's command gets.
run "$NSRUN" -p "$P" $NS --discard -- python3 "$P/probe.py" mount=1 keyctl=1 bpf=1
oneshot=$out
like "$oneshot" "^mount 1$" "a one-shot run's command gets EPERM for mount"

run "$NSRUN" session start --project "$P" $NS --json
is "$rc" 0 "session start succeeds"
ID=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
DPID=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
[ -n "$ID" ] || { diag "$err"; done_testing; }

run "$NSRUN" exec $NS --report "$d/r1.json" "$ID" -- python3 "$P/probe.py" mount=3 keyctl=2
is "$out" "$(printf 'mount 1\nkeyctl 38')" "a step gets the policy's errnos (EPERM, ENOSYS for keyctl), as a one-shot run"
is "$(refused "$d/r1.json" 'r["recorded"]')" "True" "the step's report has a refused section, recorded"
is "$(refused "$d/r1.json" "c['mount']['count'], c['mount']['errno'], c['keyctl']['count']")" "(3, 'EPERM', 2)" \
	"the step's refused calls are counted, with their errno"
is "$(refused "$d/r1.json" "c['mount']['first_comm']")" "python3" "and the first caller's name"

run "$NSRUN" exec $NS --report "$d/r2.json" "$ID" -- python3 "$P/probe.py" bpf=2
is "$out" "bpf 1" "the next step gets the policy's errno too"
is "$(refused "$d/r2.json" "sorted(c), c['bpf']['count']")" "(['bpf'], 2)" "the next step's report has only its own refused calls"
run "$NSRUN" exec $NS --report "$d/r3.json" "$ID" -- true
is "$(refused "$d/r3.json" "r['recorded'], r['syscalls']")" "(True, [])" "a step that was refused nothing has an empty record"
run "$NSRUN" exec $NS --report "$d/r4.json" "$ID" -- sh -c "python3 $P/probe.py mount=1 & python3 $P/probe.py mount=1; wait"
is "$(refused "$d/r4.json" "c['mount']['count']")" "2" "a step's child processes count for the step"

# The fds a step starts with: its stdio only (and the listing's own).
run "$NSRUN" exec $NS "$ID" -- python3 -c 'import os; print(sorted(int(f) for f in os.listdir("/proc/self/fd")))'
is "$out" "[0, 1, 2, 3]" "a step has only its stdio (3 is the listing's own dir fd)"

# The daemon keeps no fd per step: the same set after more steps.
fds() { ls "/proc/$1/fd" 2>/dev/null | sort -n | tr '\n' ' '; }
before=$(fds "$DPID")
for i in 1 2 3 4 5; do "$NSRUN" exec $NS "$ID" -- python3 "$P/probe.py" mount=1 >/dev/null 2>&1; done
same_fds() { [ "$(fds "$DPID")" = "$before" ]; }
if [ -n "$before" ]; then
	# A client's hangup reaches the daemon a moment after the client ends.
	wait_until 5 same_fds
	is "$(fds "$DPID")" "$before" "the daemon's fds are the same after five more steps with refused calls"
else
	skip "the daemon keeps no fd per step" "/proc/$DPID/fd is not readable here"
fi

# The agent (a step's parent, seen from the host): its stdio, its socket
# and its signalfd; the refused-call socket is gone once it is confined.
MARK=sleep-$$-720
"$NSRUN" exec $NS "$ID" -- python3 -c 'import time; time.sleep(30)' "$MARK" >/dev/null 2>&1 &
epid=$!
spid=
wait_until 10 sh -c "pgrep -f '^python3 -c .* $MARK\$' >/dev/null" && spid=$(pgrep -f "^python3 -c .* $MARK\$" | head -1)
apid=$(awk '/^PPid:/ { print $2 }' "/proc/${spid:-0}/status" 2>/dev/null)
if [ -n "$apid" ] && [ -r "/proc/$apid/fd" ] && ls "/proc/$apid/fd" >/dev/null 2>&1; then
	kinds=$(for f in /proc/$apid/fd/*; do readlink "$f" | sed 's/:.*//'; done | sort | tr '\n' ' ')
	n=$(ls "/proc/$apid/fd" | wc -l)
	is "$n:$kinds" "5:/dev/null /dev/null /dev/null anon_inode socket " \
		"the agent holds its stdio, its socket to the daemon and its signalfd, nothing else"
else
	skip "the agent's fd set" "the agent's /proc/PID/fd is not readable as $(id -un) (it is not dumpable)"
fi
[ -n "$spid" ] && kill "$spid" 2>/dev/null
wait "$epid" 2>/dev/null

# The caller's environment passes through the deny list a one-shot run
# uses: a secret-looking name or a URL with credentials stays out, an
# ordinary variable gets in; --clearenv starts from nothing.
show='echo "${MY_TOKEN-unset}:${T720_PLAIN-unset}:${T720_URL-unset}:${NSRUN-unset}"'
run env MY_TOKEN=x T720_PLAIN=plain T720_URL=https://me:pw@example.invalid/ "$NSRUN" -p "$P" $NS --discard -- sh -c "$show"
oneshot_env=$out
is "$oneshot_env" "unset:plain:unset:1" "a one-shot run drops the secret-looking variables"
run env MY_TOKEN=x T720_PLAIN=plain T720_URL=https://me:pw@example.invalid/ "$NSRUN" exec $NS "$ID" -- sh -c "$show"
is "$rc:$out" "0:$oneshot_env" "a step sees the caller's environment as a one-shot run's command does"
run env T720_PLAIN=plain "$NSRUN" exec $NS --clearenv --env ONLY=1 "$ID" -- /usr/bin/env
is "$rc:$out" "0:ONLY=1" "--clearenv: only --env"
run env T720_PLAIN=plain "$NSRUN" exec $NS --unset-env T720_PLAIN --env T720_SET=2 "$ID" -- sh -c 'echo "${T720_PLAIN-unset}:$T720_SET"'
is "$out" "unset:2" "--unset-env and --env apply after the caller's environment"
big=$(python3 -c 'print("x" * 70000)')
run env T720_BIG="$big" "$NSRUN" exec $NS "$ID" -- true
like "$rc:$err" "^125:.*exceed 65536 bytes" "an environment too large for the wire is an error, not cut short"

# The session's server filters each step's environment with the list it
# read when the session started (the exec client sends its own as it
# is), and a list that cannot be read stops a run, one-shot or session,
# before it starts: nothing it names gets through unchecked.
dd=$d/data
mkdir -p "$dd"
cp -R "$NSR_STAGE/profiles" "$NSR_STAGE/seccomp" "$dd/"
chmod -R u+w "$dd" # the stage may be read-only (a distcheck tree)
echo 'T720_CUSTOM*' >> "$dd/profiles/env-deny.list"
run env NSRUN_DATADIR="$dd" "$NSRUN" session start --project "$P" --state-dir "$d/s2" --json
is "$rc" 0 "a session starts with the deny list of its data dir"
ID2=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
run env T720_CUSTOM_X=1 T720_PLAIN=plain "$NSRUN" exec --state-dir "$d/s2" "$ID2" -- sh -c 'echo "${T720_CUSTOM_X-unset}:${T720_PLAIN-unset}"'
is "$rc:$out" "0:unset:plain" "a step's environment goes through the session's list, not the exec client's"
run "$NSRUN" session stop --state-dir "$d/s2" --discard "$ID2"
is "$rc" 0 "... and that session stops"
rm "$dd/profiles/env-deny.list"
run env MY_TOKEN=x NSRUN_DATADIR="$dd" "$NSRUN" -p "$P" --state-dir "$d/s3" --discard -- sh -c 'echo "ran: ${MY_TOKEN-unset}"'
like "$rc:$err" "^125:.*env-deny.list" "a one-shot run whose deny list cannot be read does not start"
is "$out" "" "... and its command never runs"
run env NSRUN_DATADIR="$dd" "$NSRUN" session start --project "$P" --state-dir "$d/s3"
like "$rc:$err" "^125:.*env-deny.list" "... nor does a session"

# --timeout: 124 for the step, quickly; the session lives on.
t0=$(date +%s)
run "$NSRUN" exec $NS --timeout 1 --report "$d/rt.json" "$ID" -- sleep 30
t1=$(date +%s)
is "$rc" 124 "--timeout 1 on sleep 30: exit 124"
check "... within a few seconds ($((t1 - t0))s)" [ $((t1 - t0)) -le 5 ]
like "$err" "timed out after 1s" "... and says so"
is "$(refused "$d/rt.json" "d.get('timed_out'), r['timeout']")" "(True, {'after_ms': 1000, 'killed': False})" \
	"the step's report says it timed out, as a one-shot report does"
is "$(refused "$d/rt.json" "900 <= d['duration_ms'] < 6000, d['started_at'][:2]")" "(True, '20')" \
	"... with its start time and duration"
run "$NSRUN" exec $NS "$ID" -- echo still here
is "$rc:$out" "0:still here" "the next exec works"
run "$NSRUN" exec $NS --timeout 1 --kill-after 1 "$ID" -- sh -c 'trap "" TERM; sleep 30'
is "$rc" 124 "a step that ignores SIGTERM is killed after --kill-after: 124"
like "$err" "SIGKILL after --kill-after" "... and says so"
run "$NSRUN" exec $NS --timeout 0 "$ID" -- true
like "$rc:$err" "^125:.*--timeout wants a duration" "--timeout 0 is refused"

# --rlimit: the step's own limits, soft and hard; the next step has none.
run "$NSRUN" exec $NS --rlimit nofile=64:128 --rlimit core=0 "$ID" -- sh -c 'ulimit -Sn; ulimit -Hn; ulimit -c'
is "$rc:$out" "$(printf '0:64\n128\n0')" "--rlimit sets the step's soft and hard limits"
run "$NSRUN" exec $NS "$ID" -- sh -c 'ulimit -Sn'
unlike "$out" "^64$" "the next step does not inherit them"
run "$NSRUN" exec $NS --rlimit nofile=64 --cwd /nonexistent "$ID" -- true
like "$rc:$err" "^125:" "a step with limits and a missing --cwd fails with 125"
run "$NSRUN" exec $NS --rlimit nofile=64 "$ID" -- /nonexistent/cmd
is "$rc" 127 "a step with limits whose command is missing: 127"
run "$NSRUN" exec $NS --rlimit bogus=1 "$ID" -- true
like "$rc:$err" "^125:.*--rlimit" "an unknown limit is refused"

# --events-fd: the step's changes, live, as a one-shot run's.
run "$NSRUN" exec $NS --events-fd 3 "$ID" -- sh -c "echo a > $P/ev; sleep 0.3; echo b >> $P/ev" 3>"$d/events"
is "$rc" 0 "exec --events-fd runs the step"
like "$(cat "$d/events" 2>/dev/null)" '"event":"create".*"path":"ev"' "--events-fd: the step's new file is a create event"
like "$(tr '\n' ' ' < "$d/events" 2>/dev/null)" '"path":"ev".*"event":"modify".*"path":"ev"' "... and its later write a modify"
run "$NSRUN" exec $NS --events-fd 9 "$ID" -- true
like "$rc:$err" "^125:.*--events-fd wants an open fd" "--events-fd of a closed fd is refused"

run "$NSRUN" session stop $NS --discard "$ID"
is "$rc" 0 "session stop"
check "the daemon is gone" wait_until 10 gone "$DPID"
done_testing
