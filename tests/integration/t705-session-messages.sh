#!/bin/sh
# What the session server sends an exec client, spoken to over its control
# socket directly: a step without a pty gets its EXIT and no STARTED (a
# message it has no use for, and a wake-up less); a step with one gets
# STARTED with the pty's master first. A request sent at once after the
# connect, one sent late, and a connection closed before any request are
# all served, and the session goes on. The environment an exec sends is
# the deny list's: a name a pattern matches (in any case) stays out, the
# list's exceptions and the rest pass. A step without --cwd gets the
# session's cwd as PWD.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null || skip_all "needs python3 to speak the control protocol"
d=$(scratch)
P=$d/proj
S=$d/state
NS="--state-dir $S"
mkdir -p "$P"

run "$NSRUN" session start --project "$P" $NS
is "$rc" 0 "session start succeeds"
ID=$out
[ -n "$ID" ] || { diag "$err"; done_testing; }
CTL=$S/sessions/$ID/ctl

# client MODE: one exec over the control socket; prints the types of the
# messages that came back, then the exit status, or what went wrong.
client() {
	python3 - "$CTL" "$1" <<'PY'
import array, fcntl, os, socket, struct, sys, termios, time
ctl, mode = sys.argv[1], sys.argv[2]
MAGIC, EXEC, STARTED, EXIT = 0x6e737331, 1, 2, 3
TTY_OUT = 1 << 2
names = {2: "STARTED", 3: "EXIT", 7: "ERROR", 10: "SUSPENDED"}
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
# Through the dir's fd: the path may be longer than sun_path.
dfd = os.open(os.path.dirname(ctl), os.O_PATH | os.O_DIRECTORY)
s.connect("/proc/self/fd/%d/ctl" % dfd)
if mode == "hangup":
    s.close()
    print("closed")
    sys.exit(0)
if mode == "late":
    time.sleep(0.3)
null_r = os.open("/dev/null", os.O_RDONLY)
null_w = os.open("/dev/null", os.O_WRONLY)
payload = b"a/bin/true\0C-\0"
flags, fds = 0, [null_r, null_w, null_w]
if mode == "tty":
    flags, fds = TTY_OUT, [null_r, null_w]
hdr = struct.pack("<IIIiII", MAGIC, EXEC, 0, (24 << 16) | 80, flags, len(payload))
s.sendmsg([hdr, payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
seen, held = [], []
while True:
    msg, anc, _, _ = s.recvmsg(65536 + 24, socket.CMSG_SPACE(3 * 4))
    if not msg:
        print("hangup before EXIT:", " ".join(seen))
        sys.exit(1)
    magic, typ, _id, value, fl, ln = struct.unpack("<IIIiII", msg[:24])
    got = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            got += array.array("i", data[: len(data) - len(data) % 4]).tolist()
    word = names.get(typ, str(typ))
    for fd in got:
        try:
            # TIOCGPTN: _IOR("T", 0x30, unsigned int)
            fcntl.ioctl(fd, getattr(termios, "TIOCGPTN", 0x80045430), b"\0\0\0\0")
            word += "+master"
        except OSError:
            word += "+fd"
        held.append(fd)  # a master closed now would hang the step up
    seen.append(word)
    if typ == EXIT:
        print(" ".join(seen), "status", value)
        sys.exit(0)
PY
}

run client plain
is "$out" "EXIT status 0" "a step without a pty: EXIT alone, no STARTED"
run client tty
is "$out" "STARTED+master EXIT status 0" "a step with a pty: STARTED with the master, then EXIT"
run client late
is "$out" "EXIT status 0" "a request sent well after the connect is served"
run client hangup
is "$out" "closed" "a connection closed before any request"
run "$NSRUN" exec $NS "$ID" -- sh -c 'exit 7'
is "$rc" 7 "the session serves the next exec after a bare connection"

# The environment: the deny list's patterns, in any case, and its
# exceptions; what matches nothing passes.
run env GITHUB_TOKEN=t my_secret_thing=s Db_Password=p MYSQL_PWD=m PWD=/x OLDPWD=/y \
	KEYBOARD=k AUTHOR=z OP_SESSION_me=o NOTAKEY=1 \
	"$NSRUN" exec $NS "$ID" -- sh -c 'env | sort'
is "$rc" 0 "an exec with a mixed environment"
for v in GITHUB_TOKEN my_secret_thing Db_Password MYSQL_PWD OP_SESSION_me; do
	unlike "$out" "^$v=" "$v stays out of the step"
done
like "$out" "^OLDPWD=/y" "OLDPWD, an exception, passes"
like "$out" "^KEYBOARD=k" "KEYBOARD passes"
like "$out" "^AUTHOR=z" "AUTHOR (not *_AUTH, *_AUTH_*) passes"
like "$out" "^NOTAKEY=1" "NOTAKEY passes"

# PWD: the agent's own cwd (the session's) when the exec gives none, not
# the caller's (printenv: a shell would set PWD again itself).
run env PWD=/nowhere "$NSRUN" exec $NS "$ID" -- printenv PWD
is "$rc" 0 "an exec without --cwd"
pwd_env=$out
run "$NSRUN" exec $NS "$ID" -- pwd -P
is "$pwd_env" "$out" "its PWD is where it runs, not the caller's"

run "$NSRUN" session stop $NS --discard "$ID"
is "$rc" 0 "session stop"
done_testing
