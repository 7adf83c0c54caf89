#!/bin/sh
# What the sandbox refused: project mode records each system call its
# seccomp policy refused (name, count, errno, first caller), in the
# report's "refused" section, in one stderr line and live on --events-fd;
# the command gets the very errno it gets without the record; clone3's
# ENOSYS probe is not recorded (threads still start); the timeout shows
# up there too.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed"
[ "$(uname -m)" = x86_64 ] || skip_all "the probe uses x86_64 system call numbers"
d=$(scratch)
S=$d/state
NS="--state-dir $S"
P=$d/proj; mkdir -p "$P"
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['refused']; c={x['name']: x for x in r['syscalls']}; print(eval(sys.argv[2]))" "$@"; }

# Each refused class, a known number of times; prints "name errno".
cat > "$P/probe.py" <<'EOF'
import ctypes, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
calls = {
    "mount": (165, 0, 0, 0, 0, 0),
    "umount2": (166, 0, 0),
    "pivot_root": (155, 0, 0),
    "setns": (308, 0, 0),
    "unshare": (272, 0x10000000),
    "keyctl": (250, 0, 0, 0),
    "add_key": (248, 0, 0, 0, 0, 0),
    "bpf": (321, 0, 0, 0),
    "io_uring_setup": (425, 1, 0),
    "socket": (41, 17, 3, 0),
    "ptrace": (101, 16, 1, 0, 0),
}
for spec in sys.argv[1:]:
    name, n = spec.split("=")
    for i in range(int(n)):
        r = libc.syscall(*[ctypes.c_long(a) for a in calls[name]])
        e = ctypes.get_errno() if r < 0 else 0
    print(name, e)
# A thread: glibc tries clone3 first (refused with ENOSYS), then clone.
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("thread ok")
EOF
set -- mount=3 umount2=1 pivot_root=1 setns=2 unshare=4 keyctl=5 add_key=1 bpf=1 io_uring_setup=2 socket=1

# The errnos without the record: the same policy, bwrap-style (no listener).
run "$NSRUN" $BASE --unshare-all --seccomp-policy default -- python3 "$P/probe.py" "$@"
plain=$out
like "$plain" "thread ok" "outside project mode the probe runs"
run "$NSRUN" -p "$P" $NS --discard --report "$d/r.json" --events-fd 3 -- python3 "$P/probe.py" "$@" 3>"$d/events"
is "$out" "$plain" "with the record, the command gets the same errnos (and threads start)"
is "$(json "$d/r.json" 'r["recorded"]')" "True" "the report says the calls were recorded"
for spec in "$@"; do
	name=${spec%=*} n=${spec#*=}
	is "$(json "$d/r.json" "c['$name']['count']")" "$n" "$name: counted $n times"
done
is "$(json "$d/r.json" "c['mount']['errno'], c['keyctl']['errno'], c['socket']['errno']")" \
	"('EPERM', 'ENOSYS', 'EAFNOSUPPORT')" "each with the errno the command got"
is "$(json "$d/r.json" "c['mount']['first_comm']")" "python3" "and the first caller's name"
is "$(json "$d/r.json" "'clone3' in c")" "False" "clone3's probe is not recorded"
is "$(json "$d/r.json" "[x['name'] for x in r['syscalls']][:2]")" "['keyctl', 'unshare']" "largest count first"
like "$err" "nsrun: refused: keyctl x5, unshare x4, mount x3" "one stderr line"
run python3 -c 'import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
r = [e for e in ev if e.get("event") == "refused"]
print(len(r), sorted(e["syscall"] for e in r)[:3])' "$d/events"
is "$out" "10 ['add_key', 'bpf', 'io_uring_setup']" "--events-fd gets one JSON line per refused syscall"

# ptrace, with a policy that refuses it; a hostile comm is escaped.
cp "$(command -v python3)" "$P/py\"th\\on"
run "$NSRUN" -p "$P" $NS --discard --seccomp-policy strict --report "$d/s.json" -- "$P/py\"th\\on" "$P/probe.py" ptrace=3
is "$(json "$d/s.json" "c['ptrace']['count'], c['ptrace']['errno']")" "(3, 'EPERM')" "--seccomp-policy strict: ptrace x3"
is "$(json "$d/s.json" "c['ptrace']['first_comm']")" 'py"th\\on' "the hostile comm is escaped (backslash doubled) and JSON-quoted"

# Best-effort mode (no user namespaces, simulated): the same record.
R=$NSR_HELPERS/nsr-restrict
if [ -x "$R" ]; then
	run "$R" --deny-userns EPERM -- "$NSRUN" -p "$P" $NS --sandbox=best-effort --discard --report "$d/be.json" -- \
		python3 "$P/probe.py" keyctl=4 mount=2
	is "$out" "keyctl 38
mount 1
thread ok" "best-effort mode: the same errnos"
	is "$(json "$d/be.json" "c['keyctl']['count'], c['mount']['count'], r['recorded']")" "(4, 2, True)" \
		"best-effort mode: keyctl x4, mount x2 recorded"
else
	skip "best-effort mode" "the nsr-restrict helper was not built"
fi

# Nothing refused: no line, an empty record.
run "$NSRUN" -p "$P" $NS --discard --report "$d/n.json" -- true
unlike "$err" "refused" "nothing refused: no stderr line"
is "$(json "$d/n.json" 'len(r["syscalls"]), r["timeout"]')" "(0, None)" "... and an empty record"

# The timeout is part of it.
run "$NSRUN" -p "$P" $NS --discard --timeout 0.3 --kill-after 0.3 --report "$d/t.json" --events-fd 3 -- sh -c 'trap "" TERM; sleep 30; sleep 30' 3>"$d/tev"
is "$(grep timeout "$d/tev")" '{"event":"timeout","signal":"SIGTERM"}
{"event":"timeout","signal":"SIGKILL"}' "--events-fd gets the timeout's steps"
like "$err" "nsrun: refused: timeout 300ms \(SIGKILL after --kill-after\)" "the timeout is in the line"
is "$(json "$d/t.json" 'r["timeout"]')" "{'after_ms': 300, 'killed': True}" "... and in the record"
done_testing
