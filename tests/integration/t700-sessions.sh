#!/bin/sh
# Sessions: one sandbox, many commands. A background server outlives the
# command that started it and is reached from the next one; changes
# accumulate and are committed twice, with a host edit between (a
# conflict); the view inside stays coherent; exit statuses, stdio, --cwd,
# --env and signals pass through; the control socket is out of reach from
# inside; stop leaves nothing running; kill -9 of the daemon leaves a kept
# run.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj
S=$d/state
NS="--state-dir $S"
mkdir -p "$P"
echo one > "$P/a"; echo keep > "$P/k"; echo old > "$P/h"
command -v python3 >/dev/null || skip_all "needs python3 for the background server"

# poll SECONDS COMMAND...: until the command succeeds, or the deadline.
poll() {
	_end=$(($(date +%s) + $1)); shift
	while ! "$@" 2>/dev/null; do
		[ "$(date +%s)" -ge "$_end" ] && return 1
		sleep 0.05
	done
}
gone() { ! kill -0 "$1" 2>/dev/null; }
# settle FILE...: until the clock is past the files' ctimes by more than the
# coarse clock's lag, so that a start taken now is after them (an edit in
# the same tick as a start counts as a conflict, on purpose).
settle() {
	python3 -c 'import os, sys, time
m = max(os.lstat(f).st_ctime for f in sys.argv[1:])
while time.time() < m + 0.05: time.sleep(0.005)' "$@"
}
settle "$P/a" "$P/k" "$P/h"

run "$NSRUN" session start --project "$P" $NS --json
is "$rc" 0 "session start succeeds"
ID=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
DPID=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
like "$ID" "^[0-9]{8}T[0-9.]+Z-[0-9a-f]+$" "--json: the session id"
check "--json: the daemon's pid is alive" kill -0 "$DPID"
[ -n "$ID" ] || { diag "$err"; done_testing; }
ctl=$S/sessions/$ID/ctl
check "the control socket is in the state dir" test -S "$ctl"
is "$(stat -c %a "$S/sessions/$ID")" 700 "... in a 0700 dir"

# ---- stdio, exit status, cwd, env ---------------------------------------------
run "$NSRUN" exec $NS "$ID" -- sh -c 'echo out; echo err >&2; cat a; pwd; exit 3'
is "$rc:$out" "3:out
one
$P" "exec: the command's stdout and exit status; it starts in the project"
is "$err" "err" "exec: the command's stderr, and nothing else"
run sh -c "echo piped | '$NSRUN' exec $NS '$ID' -- cat"
is "$out" "piped" "exec: the caller's stdin"
run sh -c "'$NSRUN' exec $NS '$ID' -- sh -c 'cat; echo done' <&-"
is "$rc:$out" "0:done" "exec with stdin closed: the command reads /dev/null, not nsrun's socket"
run "$NSRUN" exec $NS --cwd /tmp --env FOO=bar --unset-env HOME "$ID" -- sh -c 'echo "$FOO:$PWD:$(pwd):${HOME-unset}"'
is "$out" "bar:/tmp:/tmp:unset" "--cwd, --env and --unset-env"
run "$NSRUN" exec $NS --cwd /no/such/dir "$ID" -- true
like "$rc:$err" "^125:nsrun: Can't chdir to /no/such/dir" "a missing --cwd: 125, and says so"
run "$NSRUN" exec $NS --env PATH=/nowhere "$ID" -- true
is "$rc" 127 "the command is looked up in its own PATH"
run "$NSRUN" exec $NS "$ID" -- /no/such/command
is "$rc" 127 "a missing command exits 127"
like "$err" "No such file" "... and says why"
run "$NSRUN" exec $NS "$ID" -- sh -c 'kill -TERM $$'
is "$rc" 143 "a command killed by a signal: 128+N"
run "$NSRUN" exec $NS "$ID" -- sh -c 'cat /proc/self/status | grep -E "^(CapEff|NoNewPrivs|Seccomp):" | tr -s "\t " " " | tr "\n" " "'
is "$out" "CapEff: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " "the command is confined as a one-shot command (no caps, no_new_privs, seccomp)"
run "$NSRUN" exec $NS "$ID" -- sh -c 'ps -o sid= -p $$; echo $$'
set -- $out
is "${1:-}" "${2:-x}" "each command leads a session of its own"

# ---- exec --report: what changed while that command ran ------------------------
"$NSRUN" exec $NS "$ID" -- sh -c 'echo 1 > rx; echo 2 > ry' >/dev/null
run "$NSRUN" exec $NS --report "$d/r.json" "$ID" -- sh -c 'echo 3 > rx; rm ry; echo n > rn; exit 4'
is "$rc" 4 "exec --report keeps the command's status"
is "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["exit_code"], d["includes_background_processes"], sorted((c["path"], c["change"]) for c in d["projects"][0]["changes"]))' "$d/r.json" 2>&1)" \
   "4 True [('rn', 'created'), ('rx', 'created'), ('ry', 'reverted')]" \
   "exec --report: only what changed during the command, and it says background processes count"
"$NSRUN" exec $NS "$ID" -- rm -f rx rn >/dev/null

# ---- signals from the caller reach the command --------------------------------
"$NSRUN" exec $NS "$ID" -- sh -c 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.05; done' >"$d/sig.out" 2>&1 &
cpid=$!
poll 10 grep -q ready "$d/sig.out"
kill -TERM "$cpid"
wait "$cpid"; src=$?
is "$src:$(grep -c -e ready -e got-term "$d/sig.out")" "7:2" "SIGTERM to exec reaches the command, whose status comes back"

# ---- the state dir and the control socket are out of reach from inside -------
run "$NSRUN" exec $NS "$ID" -- python3 -c '
import socket, sys, os
print(os.path.exists(sys.argv[1]), os.path.isdir(sys.argv[2]) and len(os.listdir(sys.argv[2])) > 0)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1]); print("connected")
except OSError as e:
    print("refused")' "$ctl" "$S"
is "$out" "False False
refused" "inside, the state dir is hidden (empty at most) and the control socket absent"

# ---- the daemon answers its own uid only (SO_PEERCRED) ---------------------------
cat > "$d/ping.py" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.settimeout(10)
try:
    s.send(struct.pack("<IIIiII", 0x6e737331, 8, 0, 0, 0, 0))  # PING
    r = s.recv(64)
except (BrokenPipeError, ConnectionResetError):
    r = b""  # hung up on
print("pong" if len(r) >= 24 and struct.unpack("<I", r[4:8])[0] == 9 else "closed")
PY
ping() { python3 "$d/ping.py" "$1"; }
is "$(ping "$ctl" 2>&1)" "pong" "the daemon answers its own user"
if is_root && [ -n "${NSR_TEST_USER:-}" ] && id "$NSR_TEST_USER" >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	# Open the 0700 dirs and the socket: the uid check is what remains.
	# The harness holds the test user's lock for the whole test, so no
	# other suite's run as that user takes this process for a leftover.
	chmod 0711 "$S" "$S/sessions" "$S/sessions/$ID"; chmod 0777 "$ctl"
	is "$(setpriv --reuid="$NSR_TEST_USER" --regid="$NSR_TEST_USER" --clear-groups \
		python3 "$d/ping.py" "$ctl" 2>&1 | tail -1)" \
	   "closed" "another user that reaches the socket is hung up on"
	chmod 0700 "$S" "$S/sessions" "$S/sessions/$ID"
else
	skip "another user that reaches the socket is hung up on" "needs root, setpriv and the harness's test user"
fi

# ---- no slot limits, no blocking writes (issue 25.2) -------------------------------
# 200 callers at once (the server once had 128 slots and hung up on the
# rest), and one caller that sends and never reads: it costs its own
# connection only; a caller after it is answered at once.
cat > "$d/many.py" <<'PY'
import socket, struct, sys, time
PING = struct.pack("<IIIiII", 0x6e737331, 8, 0, 0, 0, 0)
def pong(s):
    r = s.recv(64)
    return len(r) >= 24 and struct.unpack("<I", r[4:8])[0] == 9
conns = []
for _ in range(200):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(sys.argv[1])  # blocking: waits while the backlog is full
    c.settimeout(10)
    conns.append(c)
for c in conns:
    c.send(PING)
print("many", sum(1 for c in conns if pong(c)))
for c in conns:
    c.close()
# The flood: PINGs until this side's buffer is full, nothing read.
f = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
f.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
f.connect(sys.argv[1])
f.setblocking(False)
sent = 0
deadline = time.time() + 10
while time.time() < deadline and sent < 100000:
    try:
        f.send(PING)
        sent += 1
    except BlockingIOError:
        time.sleep(0.01)
    except (BrokenPipeError, ConnectionResetError):
        break
o = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
o.connect(sys.argv[1])
o.settimeout(5)
t = time.time()
o.send(PING)
print("other", pong(o), time.time() - t < 2)
# The flooder was hung up on: reading its backlog ends at EOF.
f.setblocking(True)
f.settimeout(10)
n = 0
try:
    while f.recv(64):
        n += 1
    print("flooder", "hung up")
except (ConnectionResetError, BrokenPipeError):
    print("flooder", "hung up")
except socket.timeout:
    print("flooder", "still served", n)
PY
run python3 "$d/many.py" "$ctl"
is "$out" "many 200
other True True
flooder hung up" "200 callers at once are all answered; a caller that never reads is hung up on, and the next is answered at once"

# ---- a background server, reached from the next command -----------------------
run "$NSRUN" exec $NS "$ID" -- sh -c 'echo served > page; setsid nohup python3 -m http.server --bind 127.0.0.1 --directory "$PWD" 8000 >/dev/null 2>&1 < /dev/null & echo started'
is "$rc:$out" "0:started" "exec starts a server in the background and returns"
run "$NSRUN" exec $NS "$ID" -- python3 -c '
import time, urllib.request
end = time.time() + 20
while True:
    try:
        print(urllib.request.urlopen("http://127.0.0.1:8000/page", timeout=2).read().decode().strip()); break
    except OSError:
        if time.time() > end: print("unreachable"); break
        time.sleep(0.05)'
is "$out" "served" "the next exec reaches the server on loopback"
run "$NSRUN" session list $NS
like "$out" "^$ID pid $DPID, 0 running, $P$" "session list shows it"
run "$NSRUN" session list $NS --json
like "$out" "\"id\":\"$ID\".*\"commands_running\":0" "session list --json"

# ---- changes across commands; commit twice with a host edit between -----------
"$NSRUN" exec $NS "$ID" -- sh -c 'echo two > a; echo new > b' >/dev/null
"$NSRUN" exec $NS "$ID" -- sh -c 'rm k; mkdir d; echo f > d/f; echo sandbox > h' >/dev/null
run "$NSRUN" session diff $NS "$ID"
like "$out" "\+two" "session diff shows what accumulated"
run "$NSRUN" session commit $NS "$ID"
is "$rc" 0 "session commit succeeds"
like "$err" "^nsrun: $P: [0-9]+ created, 2 modified, 1 deleted; committed \(run " "... and reports the changes"
is "$(cat "$P/a"):$(cat "$P/b"):$(cat "$P/d/f"):$(cat "$P/h")" "two:new:f:sandbox" "the changes are in the project"
check "the deletion too" test ! -e "$P/k"
run "$NSRUN" exec $NS "$ID" -- sh -c 'cat a b h; ls k 2>&1 >/dev/null | wc -l'
is "$out" "two
new
sandbox
1" "inside, the view is unchanged by the commit"
run "$NSRUN" session commit $NS "$ID"
like "$err" "no changes; committed" "a second commit right away applies nothing"

echo host > "$P/h"           # the sandbox wrote h before: a conflict next
echo fresh > "$P/c"           # new on the host, untouched inside
"$NSRUN" exec $NS "$ID" -- sh -c 'echo sandbox2 > h; echo three > a' >/dev/null
run "$NSRUN" exec $NS "$ID" -- cat c
is "$out" "fresh" "a host-side edit is visible inside"
run "$NSRUN" session commit $NS "$ID"
is "$rc" 0 "the second commit runs"
like "$err" "conflict: h changed on the host" "... and reports the host edit as a conflict"
is "$(cat "$P/h"):$(cat "$P/a")" "host:three" "the host's edit stays; the rest applies (only what changed since)"
run "$NSRUN" exec $NS "$ID" -- cat a
is "$out" "three" "inside, the view stays coherent after the second commit"

# ---- stop: nothing is left running ----------------------------------------------
check "before the stop, the server runs (seen from the host)" sh -c "ps -u $(id -u) -o args= | grep -q 'http[.]server .*$P'"
run "$NSRUN" session stop $NS "$ID"
is "$rc" 0 "session stop"
like "$err" "session $ID stopped" "... says so"
check "the daemon is gone" poll 10 gone "$DPID"
# (the server's args name this test's project: another test's server is not ours)
check "the background server died with the session" poll 10 sh -c "! ps -u $(id -u) -o args= | grep -q 'http[.]server .*$P'"
check "the session dir is gone" test ! -e "$S/sessions/$ID"
run "$NSRUN" diff $NS "$ID"
like "$out" "kept" "the stopped session is a kept run"
run "$NSRUN" exec $NS "$ID" -- true
is "$rc" 125 "exec into a stopped session fails with 125"

run "$NSRUN" session start --project "$P" $NS --as-pid-1
like "$rc:$err" "^125:nsrun: sessions need a pid namespace of their own" "a setup error reaches the caller before the daemon detaches"
run "$NSRUN" session start --project "$P" $NS --report "$d/never.json"
like "$rc:$err" "^125:.*does not take --report" "session start refuses --report (exec --report reports one command)"

# ---- stop --commit, and undo ------------------------------------------------------
run "$NSRUN" session start --project "$P" $NS
C=$out
"$NSRUN" exec $NS "$C" -- sh -c 'echo u > undo-me' >/dev/null
run "$NSRUN" session stop $NS --commit "$C"
is "$rc:$(cat "$P/undo-me" 2>/dev/null)" "0:u" "stop --commit applies what accumulated"
like "$err" "1 created; committed \(run " "... as a commit run of its own"
run "$NSRUN" undo $NS "$C"
like "$rc:$err" "^0:.*changed nothing" "the session's own run has nothing to undo"
run "$NSRUN" undo $NS -p "$P"
check "undo -p restores what the session's commit applied" test ! -e "$P/undo-me"

# ---- a stop that cannot record the run's end says so, and fails ----
run "$NSRUN" session start --project "$P" $NS
M=$out
if [ -n "$M" ] && [ -f "$S/runs/$M/meta" ]; then
	mv "$S/runs/$M/meta" "$S/runs/$M/meta.saved" && mkdir "$S/runs/$M/meta"
	run "$NSRUN" session stop $NS "$M"
	like "$rc:$err" "^1:.*outcome \(kept\) could not be recorded: .*meta" "stop: a run whose meta cannot be written is an error, not silence"
	rmdir "$S/runs/$M/meta"; mv "$S/runs/$M/meta.saved" "$S/runs/$M/meta"
else
	not_ok "stop: a failed meta update is an error (no session: $err)"
fi

# ---- network rules apply to a session: the monitor's relay serves every exec ----
if command -v curl >/dev/null; then
	run "$NSRUN" session start --project "$P" $NS --allow-host example.invalid
	E=$out
	run "$NSRUN" exec $NS "$E" -- curl -s -o /dev/null -w '%{http_code}' http://denied.example.org/
	is "$out" 403 "--allow-host: the session's relay refuses another host"
	run "$NSRUN" session stop $NS --discard "$E"
	like "$err" "network: .*refused: denied.example.org:80" "... and the stop reports it"
else
	skip "--allow-host in a session" "needs curl"
fi

# ---- idle timeout ----------------------------------------------------------------------
run "$NSRUN" session start --project "$P" $NS --idle-timeout 1s --json
I2=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
check "an idle session stops by itself" poll 20 gone "${I2:-0}"
# A caller killed mid-command: its command gets SIGHUP, and the session,
# idle again, stops.
run "$NSRUN" session start --project "$P" $NS --idle-timeout 1s --json
I3=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["pid"])' 2>/dev/null)
set -- $I3
"$NSRUN" exec $NS "${1:-none}" -- sh -c 'echo up; exec sleep 1000' >"$d/hup.out" 2>&1 &
hpid=$!
poll 10 grep -q up "$d/hup.out"
kill -9 "$hpid"; wait "$hpid" 2>/dev/null
check "a caller killed mid-command hangs its command up; the idle session then stops" poll 20 gone "${2:-0}"

# ---- SIGTERM to the daemon -------------------------------------------------------------
run "$NSRUN" session start --project "$P" $NS --json
T=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["pid"])' 2>/dev/null)
set -- $T
TID=${1:-none} TPID=${2:-0}
"$NSRUN" exec $NS "$TID" -- sh -c 'echo t > tfile' >/dev/null
kill -TERM "$TPID"
check "SIGTERM ends the daemon" poll 20 gone "$TPID"
check "... and keeps the session's changes as a run" grep -q "^state kept" "$S/runs/$TID/meta"

# ---- kill -9 of the daemon ------------------------------------------------------------
# (first as seen by the session commands, then by the run commands)
run "$NSRUN" session start --project "$P" $NS --json
K=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["pid"])' 2>/dev/null)
set -- $K
# Never "kill -9 0" (this script's own process group) when the start failed.
[ -n "${2:-}" ] || diag "the session did not start (status $rc): $err"
kill -9 "${2:-999999999}"
check "a killed daemon dies" poll 10 gone "${2:-999999999}"
run "$NSRUN" session list $NS
like "$err" "session ${1:-none} ended without a stop .* kept as run ${1:-none}" "session list says a killed session's changes are a kept run"
unlike "$out" "${1:-none}" "... and lists it no more"

run "$NSRUN" session start --project "$P" $NS --json
K=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["pid"])' 2>/dev/null)
set -- $K
KID=${1:-none} KPID=${2:-0}
"$NSRUN" exec $NS "$KID" -- sh -c 'echo killed > kfile; setsid nohup sleep 1000 >/dev/null 2>&1 < /dev/null &'
kill -9 "$KPID"
check "the daemon died" poll 10 gone "$KPID"
check "its processes die with it" poll 10 sh -c "! ps -u $(id -u) -o args= | grep -q '^sleep 1000'"
run "$NSRUN" diff $NS "$KID"
like "$out" "run $KID, kept" "the next nsrun call (here diff) recovers it as a kept run"
like "$out" "^\+killed$" "... with the changes made before the kill"
check "... and its session dir is gone" test ! -e "$S/sessions/$KID"
run "$NSRUN" commit $NS "$KID"
is "$rc:$(cat "$P/kfile" 2>/dev/null)" "0:killed" "... which commits like any kept run"
# ---- the socket's path ---------------------------------------------------------------
# A client connects by the socket's path when it fits in sun_path, and
# through an fd of the session's dir when it does not; either way a
# session with no dir and one with no daemon are told apart.
L=$d/$(printf 'l%.0s' $(seq 90))/state
run "$NSRUN" session start --project "$P" --state-dir "$L" --json
LID=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
is "$rc" 0 "a session starts in a state dir whose socket path is longer than sun_path"
check "... (its socket path is longer than 108 bytes)" [ "$(printf '%s' "$L/sessions/$LID/ctl" | wc -c)" -gt 108 ]
run "$NSRUN" exec --state-dir "$L" "${LID:-none}" -- echo long
is "$rc:$out" "0:long" "... and exec reaches it"
run "$NSRUN" session stop --state-dir "$L" --discard "${LID:-none}"
is "$rc" 0 "... and it stops"
NOID=20990101T000000.000Z-abcdef
run "$NSRUN" exec $NS "$NOID" -- true
like "$rc:$err" "^125:.*no session $NOID" "exec of an id with no session dir: no session"
mkdir "$S/sessions/$NOID"
run "$NSRUN" exec $NS "$NOID" -- true
like "$rc:$err" "^125:.*session $NOID is not running" "exec of a session dir with no daemon: not running"
rmdir "$S/sessions/$NOID"
# ---- the daemon's parent exits late --------------------------------------------------
# On a loaded machine the daemon may get far before the middle process of
# its double fork exits (a test hook makes that middle wait until the
# daemon is ready). Nothing ties the daemon's life to that process.
if [ -n "${NSR_TEST_HOOKS:-}" ]; then
	run env NSRUN_TEST_SESSION_MIDDLE_STAYS=1 "$NSRUN" session start --project "$P" $NS --json
	is "$rc" 0 "session start succeeds when the daemon is ready before its parent exits"
	K=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["pid"])' 2>/dev/null)
	set -- $K
	[ -n "${2:-}" ] || diag "the session did not start (status $rc): $err"
	run "$NSRUN" exec $NS "${1:-none}" -- echo alive
	is "$rc:$out" "0:alive" "... and the daemon outlives that parent"
	run "$NSRUN" session stop $NS --discard "${1:-none}"
	is "$rc" 0 "... and stops"
	check "... its daemon gone" poll 10 gone "${2:-999999999}"
else
	for t in "a late parent: start" "... exec" "... stop" "... gone"; do skip "$t" "no test hooks in this build"; done
fi
done_testing
