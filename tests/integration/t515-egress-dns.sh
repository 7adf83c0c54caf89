#!/bin/sh
# DNS inside (issue 27 item 1): with --allow-host and a network namespace
# the sandbox's /etc/resolv.conf names nsrun's answerer (127.0.0.53:53,
# UDP and TCP), which resolves an allowed name on the host through the
# address rules and answers NXDOMAIN at once for any other; every query is
# a "dns" record on --net-log-fd and in the report; hostile queries get
# FORMERR or nothing, and the answerer keeps serving. The same in one-shot
# runs, project mode and sessions.
#
# No traffic leaves the machine but for the npm registry's name (read at
# run time, never written here): "localhost" resolves on the host from
# /etc/hosts, and the sandbox gets an empty /etc/hosts so that its
# resolver must ask.
. "$NSR_TESTS/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed for the raw queries"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
cd "$d" || exit 1
: >"$d/hosts"

# dnsq.py MODE...: one query (or hostile bytes) to the answerer; prints
# what came back: "id=ok rcode=N an=N tc=N addrs=A,B", or "none".
cat >dnsq.py <<'EOF'
import socket, struct, sys
SRV = ("127.0.0.53", 53)
def query(name, qtype, qid=0x4242):
    m = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for l in name.split("."):
        m += bytes([len(l)]) + l.encode()
    return m + b"\0" + struct.pack(">HH", qtype, 1)
def show(r, qid=0x4242):
    if r is None:
        return "none"
    i, fl, qd, an, ns, ar = struct.unpack(">HHHHHH", r[:12])
    o = 12
    for _ in range(qd):
        while r[o]:
            o += r[o] + 1
        o += 5
    addrs = []
    for _ in range(an):
        o += 2
        t, c, ttl, rl = struct.unpack(">HHIH", r[o:o + 10])
        o += 10
        addrs.append(socket.inet_ntop(socket.AF_INET if t == 1 else socket.AF_INET6, r[o:o + rl]))
        o += rl
    return "id=%s rcode=%d an=%d tc=%d addrs=%s" % ("ok" if i == qid else "bad", fl & 15, an, (fl >> 9) & 1, ",".join(addrs))
def udp(msg):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(msg, SRV)
    try:
        return s.recv(65535)
    except socket.timeout:
        return None
def tcp(msg, frame=True):
    s = socket.create_connection(SRV, 2)
    s.sendall((struct.pack(">H", len(msg)) if frame else b"") + msg)
    b = b""
    while len(b) < 2 or len(b) < 2 + struct.unpack(">H", b[:2])[0]:
        c = s.recv(65535)
        if not c:
            return None
        b += c
    return b[2:]
mode = sys.argv[1]
try:
    if mode in ("udp", "tcp"):
        m = query(sys.argv[2], {"A": 1, "AAAA": 28, "HTTPS": 65}[sys.argv[3]])
        print(show(udp(m) if mode == "udp" else tcp(m)))
    elif mode == "garbage":
        # Shorter than a header; an answer (QR set); a header and junk.
        print(show(udp(b"\x01\x02\x03")), show(udp(b"\x42\x42\x81\x80" + bytes(8))),
              show(udp(struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0) + bytes(range(1, 256)))))
    elif mode == "loop":
        m = struct.pack(">HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0) + b"\xc0\x0c" + struct.pack(">HH", 1, 1)
        print(show(udp(m)))
    elif mode == "long":
        print(show(udp(query(".".join(["a" * 60] * 5), 1))))
    elif mode == "tcpzero":
        print(show(tcp(b"\0\0", frame=False)))
    elif mode == "flood":
        # 12 queries at once from one client, the resolver slowed down:
        # those past the per-client limit get SERVFAIL at once.
        import time
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t0 = time.monotonic()
        for i in range(12):
            s.sendto(query("localhost", 1, 0x100 + i), SRV)
        s.settimeout(8)
        got = []
        while len(got) < 12:
            try:
                r = s.recv(512)
            except socket.timeout:
                break
            got.append((r[3] & 15, time.monotonic() - t0))
        fast = [c for c, t in got if t < 0.5]
        print("servfail=%d fast_servfail=%d noerror=%d" % (sum(c == 2 for c, t in got), sum(c == 2 for c in fast),
                                                           sum(c == 0 for c, t in got)))
except OSError as e:
    print("error", e.__class__.__name__)
EOF

NET="$BASE --dev /dev --proc /proc --ro-bind $d/hosts /etc/hosts --allow-host localhost:*"

# ---- resolv.conf and getent --------------------------------------------------
run $NSRUN $NET -- sh -c 'cat /etc/resolv.conf; echo x >>/etc/resolv.conf || echo read-only'
is "$out" "# nsrun: names are answered by nsrun (--allow-host); see nsrun(1)
nameserver 127.0.0.53
options timeout:2 attempts:2
read-only" "/etc/resolv.conf inside names the answerer, and only it, read-only"

exec 3>"$d/netlog"
run $NSRUN $NET --net-log-fd 3 -- sh -c 'getent ahostsv4 localhost; echo "rc=$?"
	python3 -c "import subprocess, time
t = time.monotonic(); r = subprocess.run([\"getent\", \"hosts\", \"refused.example\"]).returncode
print(\"refused\", r, int((time.monotonic() - t) * 1000))"'
exec 3>&-
like "$out" "^127\.0\.0\.1 +STREAM localhost" "getent ahostsv4: an allowed name resolves through nsrun (empty /etc/hosts inside)"
like "$out" "rc=0" "... getent succeeds"
ms=$(printf '%s\n' "$out" | awk '/^refused/ { print $3 }')
is "$(printf '%s\n' "$out" | awk '/^refused/ { print $2 }')" 2 "getent hosts: a name not allowed is not found"
check "... at once: ${ms:-?} ms, well under a second" test "${ms:-9999}" -lt 500
log=$(cat "$d/netlog")
like "$log" '"host":"localhost","port":53,"protocol":"dns","via":"dns","allowed":true,"reason":null,"address":"127.0.0.1"' \
	"--net-log-fd: the allowed query's record, with the address answered"
like "$log" '"host":"refused.example","port":53,"protocol":"dns","via":"dns","allowed":false,"reason":"host not in --allow-host","address":null' \
	"--net-log-fd: the refused query's record, with the reason"

# ---- raw queries: UDP, TCP, types, hostile bytes ---------------------------------
run $NSRUN $NET -- sh -c "python3 $d/dnsq.py udp localhost A; python3 $d/dnsq.py tcp LocalHost A
	python3 $d/dnsq.py udp localhost HTTPS; python3 $d/dnsq.py udp other.example A
	python3 $d/dnsq.py garbage; python3 $d/dnsq.py loop; python3 $d/dnsq.py long
	python3 $d/dnsq.py tcpzero; python3 $d/dnsq.py udp localhost A"
l() { printf '%s\n' "$out" | sed -n "${1}p"; }
is "$(l 1)" "id=ok rcode=0 an=1 tc=0 addrs=127.0.0.1" "UDP: A for an allowed name"
is "$(l 2)" "id=ok rcode=0 an=1 tc=0 addrs=127.0.0.1" "TCP: the same, the name's case as asked"
is "$(l 3)" "id=ok rcode=0 an=0 tc=0 addrs=" "HTTPS for an allowed name: NODATA"
is "$(l 4)" "id=ok rcode=3 an=0 tc=0 addrs=" "a name not allowed: NXDOMAIN"
is "$(l 5)" "none none id=ok rcode=1 an=0 tc=0 addrs=" "garbage: no answer without a header or to an answer; FORMERR to junk after a header"
is "$(l 6)" "id=ok rcode=1 an=0 tc=0 addrs=" "a compression loop in the name: FORMERR"
is "$(l 7)" "id=ok rcode=1 an=0 tc=0 addrs=" "a name over 253 bytes: FORMERR"
is "$(l 8)" "none" "TCP: a zero-length message closes the connection"
is "$(l 9)" "id=ok rcode=0 an=1 tc=0 addrs=127.0.0.1" "after all that, the answerer still serves"

# Allowed for some port is enough; denied for every port is not.
N2="$BASE --dev /dev --proc /proc"
run $NSRUN $N2 --allow-host localhost:5432 -- python3 "$d/dnsq.py" udp localhost A
is "$out" "id=ok rcode=0 an=1 tc=0 addrs=127.0.0.1" "a name allowed for one port only resolves"
run $NSRUN $N2 --allow-host "localhost:*" --deny-host localhost:443 -- python3 "$d/dnsq.py" udp localhost A
is "$out" "id=ok rcode=0 an=1 tc=0 addrs=127.0.0.1" "a name denied for one port, allowed for others, resolves"
exec 3>"$d/netlog3"
run $NSRUN $N2 --allow-host "localhost:*" --deny-host localhost --net-log-fd 3 -- python3 "$d/dnsq.py" udp localhost A
exec 3>&-
is "$out" "id=ok rcode=3 an=0 tc=0 addrs=" "a name denied for every port: NXDOMAIN"
like "$(cat "$d/netlog3")" '"allowed":false,"reason":"denied by --deny-host localhost"' "... and the record names the deny pattern"

# The host's resolv.conf may be a symlink (systemd-resolved's stub file
# under /run): the sandbox reads nsrun's file through it all the same.
# (The mount goes on the link itself: its target is never made.)
run $NSRUN $NET --tmpfs /etc --symlink /nsrun-absent/resolve/stub-resolv.conf /etc/resolv.conf -- \
	sh -c 'grep nameserver /etc/resolv.conf; test -e /nsrun-absent/resolve/stub-resolv.conf || echo no-target'
is "$out" "nameserver 127.0.0.53
no-target" "/etc/resolv.conf a dangling symlink in the sandbox's root: the sandbox reads nsrun's file there"

# The limits: 8 queries in flight from one client, the rest SERVFAIL.
if [ "${NSR_TEST_HOOKS:-}" = 1 ]; then
	run env NSRUN_TEST_RESOLVE_DELAY_MS=1000 $NSRUN $NET -- python3 "$d/dnsq.py" flood
	is "$out" "servfail=4 fast_servfail=4 noerror=8" "a client with 12 queries in flight: 8 answered, 4 SERVFAIL at once"
else
	skip "a client with 12 queries in flight" "needs a build with --enable-test-hooks (NSRUN_TEST_RESOLVE_DELAY_MS)"
fi

# An allowed name whose every address is refused (this host's own name,
# from its /etc/hosts, on loopback or a private address): NXDOMAIN, and
# the record says why.
hn=$(hostname 2>/dev/null)
own=$(getent -s files ahostsv4 "$hn" 2>/dev/null | awk 'NR == 1 { print $1 }')
case "$own" in
127.* | 10.* | 192.168.*)
	exec 3>"$d/netlog2"
	run $NSRUN $BASE --dev /dev --proc /proc --ro-bind "$d/hosts" /etc/hosts --allow-host "$hn" --net-log-fd 3 -- \
		python3 "$d/dnsq.py" udp "$hn" A
	exec 3>&-
	is "$out" "id=ok rcode=3 an=0 tc=0 addrs=" "an allowed name that resolves to $own only: NXDOMAIN"
	like "$(cat "$d/netlog2")" '"allowed":false,"reason":"resolves to a (loopback|private) address \('"$own"'\)"' \
		"... and its record gives the address class"
	;;
*)
	skip "an allowed name whose addresses are refused" "this host's name is not in its /etc/hosts on a loopback or private address"
	skip "... its record" "as above"
	;;
esac

# ---- project mode: the report --------------------------------------------------
# The query script goes into the project: project mode has a /tmp of its own.
mkdir -p "$d/proj" "$d/state"
cp dnsq.py "$d/proj/"
run $NSRUN -p "$d/proj" --state-dir "$d/state" --report "$d/report.json" \
	--allow-host "localhost:*" -- sh -c 'grep nameserver /etc/resolv.conf; python3 dnsq.py udp localhost A'
like "$out" "^nameserver 127\.0\.0\.53" "project mode: resolv.conf names the answerer"
like "$out" "id=ok rcode=0 an=1 tc=0 addrs=127\.0\.0\.1" "project mode: the name resolves"
is "$(python3 -c 'import json, sys
n = [r for r in json.load(open(sys.argv[1]))["network"] if r["protocol"] == "dns"]
print(len(n) > 0, all(r["host"] == "localhost" and r["port"] == 53 and r["via"] == "dns" for r in n), n[0]["address"] if n else "")' \
	"$d/report.json" 2>&1)" "True True 127.0.0.1" "the report's network holds the DNS queries"
# Project mode's resolv.conf lives in its shared tmpfs (no tmpfs of its
# own for one file): read-only, the only thing of that tmpfs's root the
# command can reach, and not counted as a change.
run $NSRUN -p "$d/proj" --state-dir "$d/state" --allow-host "localhost:*" -- \
	sh -c 'echo x >>/etc/resolv.conf || echo read-only; rm -f /etc/resolv.conf || echo kept;
		grep -c "^nameserver" /etc/resolv.conf; grep -c " /etc/resolv.conf " /proc/self/mountinfo'
is "$rc:$out" "0:read-only
kept
1
1" "project mode: resolv.conf read-only, not removable, one nameserver, one mount"

# ---- sessions ----------------------------------------------------------------------
run $NSRUN session start --project "$d/proj" --state-dir "$d/state" --allow-host "localhost:*"
S=$out
if [ "$rc" = 0 ] && [ -n "$S" ]; then
	run $NSRUN exec --state-dir "$d/state" "$S" -- sh -c 'python3 dnsq.py udp localhost A; python3 dnsq.py tcp no.example A'
	is "$out" "id=ok rcode=0 an=1 tc=0 addrs=127.0.0.1
id=ok rcode=3 an=0 tc=0 addrs=" "session: nsrun exec resolves an allowed name, and not another"
	run $NSRUN session stop --state-dir "$d/state" --discard "$S"
else
	not_ok "session: started (rc $rc: $err)"
fi

# ---- a real name: the npm registry's, as npm is configured -------------------------
reg=$(npm config get registry 2>/dev/null | sed -n 's,^https\?://\([^/:]*\).*,\1,p')
if [ -n "$reg" ] && getent ahostsv4 "$reg" >/dev/null 2>&1; then
	run $NSRUN $BASE --dev /dev --proc /proc --allow-host "$reg" -- sh -c "getent ahostsv4 $reg | head -1; getent ahostsv4 x.$reg; echo rc=\$?"
	like "$out" "^[0-9.]+ +STREAM" "the npm registry's name resolves inside"
	like "$out" "rc=2" "... a name under it, not allowed, does not"
else
	skip "the npm registry's name resolves inside" "npm, or the registry's name, is not available here"
	skip "... a name under it" "as above"
fi
done_testing
