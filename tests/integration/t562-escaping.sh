#!/bin/sh
# issue 23.11: one escaping rule for every printer. Hostile text (ESC, an
# OSC 52 clipboard write, CSI, a raw C1 byte and an encoded one, a bidi
# override, invalid UTF-8, a newline followed by a fake line) goes through
# each place nsrun prints text from a project, a profile, a run record or
# the caller: --trace-bwrap, profile show, profile check, history,
# session list, diff,
# errors, doctor, seccomp check, the stderr summary and the network
# summary. Their output holds no byte a terminal obeys, and no line of its
# own starts with the fake text; --trace-bwrap stays shell syntax that
# reads back the same path.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
command -v python3 >/dev/null || skip_all "needs python3"
command -v script >/dev/null || skip_all "needs script(1) for a terminal"
umask 022
d=$(scratch)
NS="--state-dir $d/state"
# One line of hostile text (profiles are read by lines), and the same
# with a newline and a fake line after it (for names).
H1=$(printf 'X\033]52;c;cHduZWQ=\007Y\033[2J\233Z\302\233\342\200\256\377')
H="$H1
FAKE"

# clean WHAT: checks $out and $err: valid UTF-8, no control but newline
# and tab, no C1, no invisible character, no line that starts with FAKE.
clean() {
	printf '%s\n%s\n' "$out" "$err" > "$d/shown"
	why=$(python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
try:
    t = b.decode("utf-8")
except UnicodeDecodeError as e:
    print("invalid UTF-8 at byte %d" % e.start); sys.exit()
inv = {0x61c, 0x200e, 0x200f, 0x2060, 0xfeff, 0x2028, 0x2029} | set(range(0x202a, 0x202f)) \
    | set(range(0x2066, 0x206a)) | set(range(0x200b, 0x200e))
for i, ch in enumerate(t):
    c = ord(ch)
    if (c < 0x20 and ch not in "\n\t") or 0x7f <= c < 0xa0 or c in inv:
        print("U+%04X at %d: %r" % (c, i, t[max(0, i - 20):i + 20])); sys.exit()
for l in t.split("\n"):
    if l.startswith("FAKE"):
        print("a line starts with the fake text"); sys.exit()
' "$d/shown")
	if [ -z "$why" ]; then ok "$1"; else not_ok "$1"; diag "$why"; fi
	# The text itself was printed (escaped): the check is not vacuous.
	case "$out$err" in
	*cHduZWQ*) ok "$1: the hostile text is shown" ;;
	*) not_ok "$1: the hostile text is shown"; diag "out: $out" "err: $err" ;;
	esac
}

# A project whose local profile hides a path with the hostile text.
P=$d/p
mkdir -p "$P/.nsrun" "$d/$H1" "$d/$H"
printf 'hide "%s/%s"\n' "$d" "$H1" > "$P/.nsrun/profile"

# --trace-bwrap.
run "$NSRUN" --trace-bwrap -p "$P" $NS -- true
is "$rc" 0 "trace: it runs"
like "$out" "--tmpfs" "trace: the hidden path is in it"
clean "trace: no control reaches the terminal"
# It is still shell syntax: the words read back, the path among them.
printf 'bwrap() { for a; do printf "%%s\\n" "$a"; done; }\n%s\n' "$(printf '%s\n' "$out" | head -1)" > "$d/trace.sh"
words=$(sh "$d/trace.sh" | grep -c "^$d/X")
is "$words" 2 "trace: sh reads the hidden path back byte for byte"
sh "$d/trace.sh" | grep -Fqx "$d/$H1"
is "$?" 0 "trace: ... as the very same bytes"

# profile show and profile check, in the project.
run sh -c "cd '$P' && '$NSRUN' profile show"
like "$out" "^hide " "profile show: the line is shown"
clean "profile show: no control reaches the terminal"
printf 'hide "%s"\n' "$H1" > "$d/bad.profile"
run "$NSRUN" profile check "$d/$H1/../bad.profile"
clean "profile check: no control reaches the terminal"

# A run in a project named with the hostile text: it creates a file named
# with it, and a protected one. The stderr summary names them.
Q="$d/$H"
run "$NSRUN" -p "$Q" $NS -- sh -c 'echo "$1" > "$1"; mkdir -p .vscode && echo x > ".vscode/$1"' sh "$H"
is "$rc" 0 "run: it runs"
like "$err" "protected" "summary: it names the protected file"
clean "summary: no control reaches the terminal"

# history: the run record holds the project's path and the command.
run "$NSRUN" history $NS
like "$out" "FAKE" "history: the project is listed"
clean "history: no control reaches the terminal"

# session list: a session's record names its project.
run "$NSRUN" session start --project "$Q" $NS
sid=$(printf '%s\n' "$out" | head -1)
run "$NSRUN" session list $NS
like "$out" "^$sid pid" "session list: the session is listed"
clean "session list: no control reaches the terminal"
run "$NSRUN" session stop --discard $NS "$sid"
is "$rc" 0 "session: it stops"

# diff of a kept run, on a terminal (the body is shown, not sent).
run "$NSRUN" -p "$Q" $NS --keep -- sh -c 'echo "$1" > "new$1"; echo "$1" >> "$1"' sh "$H"
id=$(printf '%s\n' "$err" | sed -n 's/.*nsrun diff \([0-9TZ.a-f-]*\).*/\1/p' | head -1)
[ -n "$id" ] || id=$(ls "$d/state/runs" | tail -1)
run script -qec "'$NSRUN' diff $NS $id" /dev/null
out=$(printf '%s' "$out" | tr -d '\r')
like "$out" "FAKE" "diff: the change is shown"
clean "diff: no control reaches the terminal"

# Errors: a project that does not exist, a profile file that does not.
run "$NSRUN" -p "$d/missing$H" $NS -- true
check "error: the run fails" test "$rc" -ne 0
clean "error (-p): no control reaches the terminal"
run "$NSRUN" --profile "$d/missing$H" -p "$P" $NS -- true
clean "error (--profile): no control reaches the terminal"

# doctor and seccomp check, with the text in the paths they are given.
run "$NSRUN" doctor --state-dir "$d/$H"
clean "doctor: no control reaches the terminal"
run "$NSRUN" seccomp check "$d/$H"
check "seccomp check: it fails" test "$rc" -ne 0
clean "seccomp check: no control reaches the terminal"

# The network: the host names a command asks the egress proxy for end up
# in the stderr summary. The HTTP proxy refuses a head with such bytes
# before it names a target (a 400 that names nsrun); SOCKS5 carries a
# domain name as length-prefixed bytes, so the hostile text reaches the
# record and the summary, which must show it escaped.
mkdir -p "$d/p2"
run "$NSRUN" -p "$d/p2" $NS --allow-host example.invalid -- python3 -c '
import os, socket
port = int(os.environ["HTTP_PROXY"].rstrip("/").rsplit(":", 1)[1])
h = b"X\x1b]52;c;cHduZWQ=\x07Y\x9b\xc2\x9bZ\nFAKE.example"
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"CONNECT " + h + b":443 HTTP/1.1\r\nHost: " + h + b":443\r\n\r\n")
print(s.recv(200).decode("latin-1").split("\r\n")[0])
sport = int(os.environ["ALL_PROXY"].rstrip("/").rsplit(":", 1)[1])
s = socket.create_connection(("127.0.0.1", sport))
s.sendall(b"\x05\x01\x00")
s.recv(2)
s.sendall(b"\x05\x01\x00\x03" + bytes([len(h)]) + h + b"\x01\xbb")
s.recv(10)'
like "$out" "^HTTP/1.1 400 " "network: the HTTP proxy answers the hostile head with a 400"
like "$err" "network: " "network: the summary is printed"
clean "network summary: no control reaches the terminal"

rm -rf "$d"
done_testing
