#!/bin/sh
# --allow-host: the egress relay. An upstream server on the host's
# loopback (started here), reached from the sandbox's private network only
# through nsrun's HTTP proxy (plain and CONNECT) and SOCKS5 proxy; refused
# hosts, ports, denials and rebinding; the record in the report, on
# stderr and on --net-log-fd, exactly; garbage and floods.
. "$NSR_TESTS/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed for the upstream server"
command -v curl >/dev/null 2>&1 || skip_all "curl is needed as the client"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
cd "$d" || exit 1

# The upstream: answers every request with a fixed response and closes.
#   /hello -> "hello\n"; /len -> the length of the request head it got;
#   /host -> the Host headers it got;
#   /big -> 64 MiB of zeros.
cat >upstream.py <<'EOF'
import socket, socketserver, sys
class H(socketserver.StreamRequestHandler):
    def handle(self):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        head = head[:head.index(b"\r\n\r\n") + 4]
        path = head.split(b" ")[1]
        if path == b"/big":
            n = 64 << 20
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % n)
            block = b"\0" * 65536
            try:
                for _ in range(n // len(block)):
                    self.wfile.write(block)
            except OSError:
                pass
            return
        if path == b"/hello":
            body = b"hello\n"
        elif path == b"/host":
            hosts = [l[5:].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"host:")]
            body = b",".join(hosts) + b"\n"
        else:
            body = b"%d\n" % len(head)
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
with S(("127.0.0.1", 0), H) as s:
    open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.server_address[1])
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    s.serve_forever()
EOF
python3 upstream.py "$d/port" &
srv=$!
trap 'kill $srv 2>/dev/null' EXIT
i=0
while [ ! -s "$d/port" ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.05; done
PORT=$(cat "$d/port" 2>/dev/null)
[ -n "$PORT" ] || { not_ok "the upstream server started"; done_testing; }
# The server listens before it writes the port file.
is "$(curl -sS --noproxy '*' "http://127.0.0.1:$PORT/hello")" "hello" "the upstream answers on the host"

NET="$BASE --dev /dev --proc /proc --allow-host 127.0.0.1:$PORT"
# NO_PROXY covers 127.0.0.1, which is right for a real sandbox (loopback
# inside stays inside); here the upstream is on the host's loopback, so
# curl is told to use the proxy for it anyway.
C="curl -sS --max-time 20 --noproxy ''"

# ---- the three ways through ---------------------------------------------
run $NSRUN $NET -- sh -c "$C http://127.0.0.1:$PORT/hello"
is "$out" "hello" "HTTP proxy (from HTTP_PROXY): an absolute-URI request reaches the upstream"
is "$rc" 0 "nsrun exits with the command's status"
is "$err" "nsrun: network: 1 connection to 1 host, none refused" "the one-line summary on stderr"

run $NSRUN $NET -- sh -c "$C -H 'Host: other.example' http://127.0.0.1:$PORT/host"
is "$out" "nsrun: the Host header differs from the request target" "HTTP proxy: a Host header other than the checked URI's is refused"
run $NSRUN $NET -- sh -c "$C http://127.0.0.1:$PORT/host"
is "$out" "127.0.0.1:$PORT" "HTTP proxy: the server gets one Host, the checked URI's"

run $NSRUN $NET -- sh -c "$C -p http://127.0.0.1:$PORT/hello"
is "$out" "hello" "HTTP CONNECT (--proxytunnel) reaches the upstream"

run $NSRUN $NET -- sh -c "$C -x socks5h://127.0.0.1:1080 http://127.0.0.1:$PORT/hello"
is "$out" "hello" "SOCKS5 with an address reaches the upstream"

run $NSRUN $NET -- sh -c "grep -q ' lo\$' /proc/net/if_inet6 2>/dev/null || { echo no-v6; exit; }; $C -x 'http://[::1]:3128' http://127.0.0.1:$PORT/hello; $C -x 'socks5h://[::1]:1080' http://127.0.0.1:$PORT/hello"
if [ "$out" = no-v6 ]; then
	skip "the proxies on [::1]" "loopback has no IPv6 inside"
else
	is "$out" "hello
hello" "the proxies listen on [::1] too when loopback has IPv6"
fi

run $NSRUN $BASE --allow-host "localhost:$PORT" -- sh -c "$C -x socks5h://127.0.0.1:1080 http://localhost:$PORT/hello"
is "$out" "hello" "SOCKS5 with a name (socks5h), resolved on the host; localhost may be loopback"

run $NSRUN $NET -- sh -c "$C -x socks5h://127.0.0.1:1080 http://localhost:$PORT/hello; echo rc=\$?"
like "$out" "rc=97" "SOCKS5: a name not allowed is refused (the address is, the name is not)"
like "$err" "SOCKS5.*\\(2\\)|not allowed" "SOCKS5: the answer is 2, connection not allowed by ruleset"

run $NSRUN $NET -- sh -c 'env | grep -i _proxy= | sort'
is "$out" "ALL_PROXY=socks5h://127.0.0.1:1080
HTTPS_PROXY=http://127.0.0.1:3128
HTTP_PROXY=http://127.0.0.1:3128
NO_PROXY=localhost,127.0.0.1,::1
all_proxy=socks5h://127.0.0.1:1080
http_proxy=http://127.0.0.1:3128
https_proxy=http://127.0.0.1:3128
no_proxy=localhost,127.0.0.1,::1" "the proxy variables are set inside, both cases"

# ---- refusals -------------------------------------------------------------
run $NSRUN $NET -- sh -c "$C -w ' %{http_code}' http://refused.invalid/x"
is "$out" "nsrun refused the connection to refused.invalid:80: host not in --allow-host
 403" "a host not allowed: 403 with a body naming nsrun, the host and the reason"
is "$err" "nsrun: network: 1 connection to 1 host, 1 refused: refused.invalid:80" "the summary names the refused host"

head -c 2000000 /dev/zero >"$d/body"
run $NSRUN $NET -- sh -c "$C -o /dev/null -w '%{http_code}' -H 'Expect:' --data-binary @$d/body http://refused.invalid/x"
is "$out" "403" "a refused request with a 2 MB body still gets its 403 (no reset)"

other=$((PORT == 65535 ? PORT - 1 : PORT + 1))
run $NSRUN $NET -- sh -c "$C -w ' %{http_code}' http://127.0.0.1:$other/"
is "$out" "nsrun refused the connection to 127.0.0.1:$other: port not in --allow-host
 403" "an allowed host on another port: 403"

run $NSRUN $NET -- sh -c "$C -p -w '%{http_connect}' https://refused.invalid/"
is "$out" "403" "CONNECT to a host not allowed: 403"

run $NSRUN $NET --deny-host 127.0.0.1 -- sh -c "$C -w ' %{http_code}' http://127.0.0.1:$PORT/hello"
is "$out" "nsrun refused the connection to 127.0.0.1:$PORT: denied by --deny-host 127.0.0.1
 403" "--deny-host wins over --allow-host"

run $NSRUN $BASE --allow-host "*.invalid" -- sh -c "$C -w ' %{http_code}' http://invalid/"
like "$out" "host not in --allow-host" "*.domain does not match the domain itself"

# Rebinding: a name the rules allow that resolves to a loopback address.
# "localhost" itself is allowed to; any other name from /etc/hosts is not.
rebind=$(awk '$1 ~ /^127\./ { for (i = 2; i <= NF; i++) if ($i !~ /^localhost/ && $i !~ /^#/) { print $i; exit } }' /etc/hosts)
if [ -n "$rebind" ]; then
	run $NSRUN $BASE --allow-host "$rebind:$PORT" -- sh -c "$C -w ' %{http_code}' http://$rebind:$PORT/hello"
	like "$out" "^nsrun refused the connection to $rebind:$PORT: resolves to a loopback address \\(127\\.[0-9.]+\\)" \
		"rebinding: $rebind (allowed by name) resolves to loopback and is refused"
	like "$out" " 403$" "rebinding: 403"
	run $NSRUN $BASE --allow-host "$rebind:$PORT" -- sh -c "$C -x socks5h://127.0.0.1:1080 http://$rebind:$PORT/hello; echo rc=\$?"
	like "$out" "rc=97" "rebinding through SOCKS5 is refused too"
else
	skip "rebinding" "no name other than localhost maps to 127.x in /etc/hosts"
	skip "rebinding: 403" "same"
	skip "rebinding through SOCKS5" "same"
fi

# ---- no way around the proxy ------------------------------------------------
run $NSRUN $NET -- sh -c "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:$PORT/hello; echo rc=\$?"
like "$out" "rc=7" "a direct connection, without the proxy, fails: only loopback inside"
run $NSRUN $NET -- sh -c "curl -sS --max-time 5 --noproxy '*' http://10.255.255.1:80/; echo rc=\$?"
like "$out" "rc=[1-9]" "no route to anything outside"

# ---- the record -----------------------------------------------------------------
exec 5>"$d/net.log"
run $NSRUN $NET --net-log-fd 5 -- sh -c "$C http://127.0.0.1:$PORT/len; $C -w ' %{http_code}' http://refused.invalid/x >/dev/null"
exec 5>&-
up=$(printf '%s' "$out" | tr -d '\n')
resp=$(printf 'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n' $((${#up} + 1)) "$up" | wc -c)
cat >"$d/check.py" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
def strip(x):
    return {k: v for k, v in x.items() if k not in ("started_at", "duration_ms")}
print(json.dumps([strip(x) for x in lines], sort_keys=True))
print(all(set(x) == {"host", "port", "protocol", "via", "allowed", "reason", "address", "bytes_up", "bytes_down", "started_at", "duration_ms"} for x in lines))
print(all(x["started_at"].endswith("Z") and len(x["started_at"]) == 24 and isinstance(x["duration_ms"], int) for x in lines))
EOF
exp="[{\"address\": \"127.0.0.1\", \"allowed\": true, \"bytes_down\": $resp, \"bytes_up\": $up, \"host\": \"127.0.0.1\", \"port\": $PORT, \"protocol\": \"http\", \"reason\": null, \"via\": \"proxy\"}, {\"address\": null, \"allowed\": false, \"bytes_down\": 0, \"bytes_up\": 0, \"host\": \"refused.invalid\", \"port\": 80, \"protocol\": \"http\", \"reason\": \"host not in --allow-host\", \"via\": \"proxy\"}]"
got=$(python3 "$d/check.py" "$d/net.log")
is "$got" "$exp
True
True" "--net-log-fd: one exact JSON line per connection (bytes up = the head the server got, down = its response)"

# Project mode: the same in the report's "network".
mkdir -p "$d/proj" "$d/state"
exec 5>"$d/net2.log"
run $NSRUN -p "$d/proj" --state-dir "$d/state" --report "$d/report.json" --allow-host "127.0.0.1:$PORT" --net-log-fd 5 \
	-- sh -c "$C -x socks5h://127.0.0.1:1080 http://127.0.0.1:$PORT/len; $C -w ' %{http_code}' http://refused.invalid/x >/dev/null; $C -p http://127.0.0.1:$PORT/len"
exec 5>&-
up1=$(printf '%s\n' "$out" | sed -n 1p) up2=$(printf '%s\n' "$out" | sed -n 2p)
like "$out" "^[0-9]+
[0-9]+$" "project mode: SOCKS5 and CONNECT through the relay"
like "$err" "nsrun: network: 3 connections to 2 hosts, 1 refused: refused.invalid:80" "project mode: the summary"
resp() { printf 'HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n' $((${#1} + 1)) "$1" | wc -c; }
cat >"$d/check2.py" <<'EOF2'
import json, sys
rep = json.load(open(sys.argv[1]))["network"]
log = [json.loads(l) for l in open(sys.argv[2])]
print(rep == log)
print(" ".join("%s:%s:%s:%s:%s" % (x["protocol"], x["host"], x["allowed"], x["bytes_up"], x["bytes_down"]) for x in rep))
EOF2
is "$(python3 "$d/check2.py" "$d/report.json" "$d/net2.log")" "True
socks5:127.0.0.1:True:$up1:$(resp "$up1") http:refused.invalid:False:0:0 connect:127.0.0.1:True:$up2:$(resp "$up2")" \
	"project mode: the report's network equals the live log, exactly"
like "$err" "nsrun: refused: connect refused\.invalid:80" "project mode: the refused line names the refused connection"
is "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["refused"]["connections"]; print([(c["host"], c["port"], c["reason"], c["count"]) for c in r])' "$d/report.json")" \
	"[('refused.invalid', 80, 'host not in --allow-host', 1)]" "project mode: the report's refused record has the refused connection"
run $NSRUN -p "$d/proj" --state-dir "$d/state" --sandbox=off --allow-host "127.0.0.1:$PORT" -- true
is "$rc" 125 "--sandbox=off with --allow-host is refused (no network namespace to filter)"
like "$err" "--allow-host needs a sandbox that confines the network; --sandbox=off has none" "and says why"

# Best-effort mode (no user namespaces here): the relay listens on the
# host's loopback, Landlock lets the command connect to it alone, and
# seccomp allows TCP sockets only.
R=$NSR_HELPERS/nsr-restrict
landlock=$("$NSRUN" doctor 2>/dev/null | sed -n 's/^OK      landlock: ABI \([0-9]*\).*/\1/p')
if [ ! -x "$R" ]; then
	skip "best-effort mode" "the nsr-restrict helper was not built"
elif [ "${landlock:-0}" -lt 4 ]; then
	run "$R" --max-userns 0 -- $NSRUN -p "$d/proj" --state-dir "$d/state" --sandbox=best-effort \
		--allow-host "127.0.0.1:$PORT" -- sh -c "echo ran"
	is "$rc:$out" "125:" "best-effort mode without Landlock ABI 4 refuses --allow-host and runs nothing"
else
	exec 5>"$d/net3.log"
	run "$R" --max-userns 0 -- $NSRUN -p "$d/proj" --state-dir "$d/state" --sandbox=best-effort \
		--allow-host "127.0.0.1:$PORT" --net-log-fd 5 -- sh -c "
		$C http://127.0.0.1:$PORT/hello
		$C -p http://127.0.0.1:$PORT/hello
		$C -x \"\$ALL_PROXY\" http://127.0.0.1:$PORT/hello
		$C -w ' %{http_code}\n' http://refused.invalid/
		curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:$PORT/hello 2>/dev/null; echo direct=\$?
		python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)' 2>/dev/null; echo udp=\$?
		python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>/dev/null; echo unix=\$?"
	exec 5>&-
	is "$out" "hello
hello
hello
nsrun refused the connection to refused.invalid:80: host not in --allow-host
 403
direct=7
udp=1
unix=1" "best-effort mode: HTTP, CONNECT and SOCKS5 through the relay on the host's loopback; refusal; no direct TCP, no UDP, no unix socket"
	like "$err" "nsrun: network: 4 connections to 2 hosts, 1 refused: refused.invalid:80" "best-effort mode: the summary"
	like "$err" "best-effort --allow-host: the relay is on 127\.0\.0\.1:[0-9]+ and :[0-9]+; Landlock limits TCP by port, not address" \
		"best-effort mode: nsrun says it is weaker"
	is "$(wc -l <"$d/net3.log" | tr -d ' ')" 4 "best-effort mode: the live log"
fi

# ---- bad input ------------------------------------------------------------------
run $NSRUN $BASE --allow-host "a b" -- true
like "$err" "--allow-host a b: not a host pattern" "a bad pattern is refused with the option's name"
run $NSRUN $BASE --unshare-all --share-net --allow-host example.org -- true
like "$err" "cannot be combined with --share-net" "--allow-host with --share-net is refused"
run $NSRUN -p "$d/proj" --state-dir "$d/state" --share-net --allow-host example.org -- sh -c "echo ran"
is "$rc:$out" "125:" "project mode: --share-net with --allow-host is refused, nothing runs"
like "$err" "cannot be combined with --share-net" "and says why"
run $NSRUN $BASE --net-log-fd 1 -- true
like "$err" "--net-log-fd needs --allow-host" "--net-log-fd alone is refused"
run $NSRUN --trace-bwrap $BASE --allow-host "*.example.org:8443" --deny-host bad.example.org -- true
like "$out" "--unshare-net" "the trace shows the private network"
like "$out" "# nsrun-only: --allow-host '\\*.example.org:8443' --deny-host bad.example.org: the network namespace has only loopback" \
	"the trace names the rules in an nsrun-only line"
run $NSRUN --help
like "$out" "--allow-host PATTERN" "--help lists --allow-host"

# ---- protocol errors get their answers ---------------------------------------------
cat >"$d/answers.py" <<'EOF'
import socket
def ask(port, data, n=64):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    got = b""
    try:
        while len(got) < n:
            k = s.recv(4096)
            if not k:
                break
            got += k
    except OSError:
        pass
    s.close()
    return got
print(ask(3128, b"A" * 17000).split(b"\r\n")[0].decode())
print(ask(3128, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").split(b"\r\n")[0].decode())
print(ask(3128, b"GET https://x/ HTTP/1.1\r\n\r\n").split(b"\r\n")[0].decode())
print(ask(3128, b"CONNECT x HTTP/1.1\r\n\r\n").split(b"\r\n")[0].decode())
print(ask(3128, b"GET http://u@x/ HTTP/1.1\r\n\r\n").split(b"\r\n")[0].decode())
print(ask(1080, b"\x05\x01\x02", 2).hex())
print(ask(1080, b"\x05\x01\x00\x05\x03\x00\x01\x7f\x00\x00\x01\x00\x50", 12).hex())
print(ask(1080, b"\x05\x01\x00\x05\x01\x00\x09\x00\x00", 12).hex())
print(ask(1080, b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00", 12).hex() or "closed")
EOF
run $NSRUN $NET -- python3 "$d/answers.py"
is "$out" "HTTP/1.1 431 Request Header Fields Too Large
HTTP/1.1 400 Bad Request
HTTP/1.1 400 Bad Request
HTTP/1.1 400 Bad Request
HTTP/1.1 400 Bad Request
05ff
050005070001000000000000
050005080001000000000000
closed" "protocol errors: 431 for a huge head, 400 for a non-proxy request, https:// without CONNECT, a port-less CONNECT and userinfo; SOCKS5: no acceptable method, command and address type not supported; SOCKS4 closed"
is "$err" "nsrun: network: no connections" "none of them counts as a connection"

# ---- a lookup slower than the deadline ------------------------------------------------
# Test hooks: the resolver takes 2.5 s, the deadline is 1 s. The client
# gets its 502 and holds the connection past the late answer, which must
# find nothing to connect.
if [ "${NSR_TEST_HOOKS:-}" = 1 ]; then
cat >"$d/slow.py" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
t0 = time.time()
s.sendall(b"GET http://localhost:%s/hello HTTP/1.1\r\nHost: localhost:%s\r\n\r\n" % (sys.argv[1].encode(), sys.argv[1].encode()))
got = b""
while True:
    k = s.recv(4096)
    if not k:
        break
    got += k
print(got.split(b"\r\n")[0].decode(), got.split(b"\r\n\r\n", 1)[1].decode().strip())
time.sleep(max(0, t0 + 4 - time.time()))
s.close()
EOF
exec 5>"$d/slow.log"
run env NSRUN_TEST_RELAY_TIMEOUT_S=1 NSRUN_TEST_RESOLVE_DELAY_MS=2500 $NSRUN $BASE --allow-host "localhost:$PORT" --net-log-fd 5 \
	-- python3 "$d/slow.py" "$PORT"
exec 5>&-
is "$out" "HTTP/1.1 502 Bad Gateway nsrun could not connect to localhost:$PORT: timed out" "a lookup past the deadline: 502, timed out"
like "$(cat "$d/slow.log")" '"reason":"timed out","address":null,"bytes_up":0,"bytes_down":0' "the late answer connected nothing"
else
	skip "a lookup past the deadline: 502, timed out" "needs a build with --enable-test-hooks (NSRUN_TEST_RESOLVE_DELAY_MS)"
	skip "the late answer connected nothing" "needs a build with --enable-test-hooks"
fi

# ---- garbage and floods ------------------------------------------------------------
cat >"$d/flood.py" <<'EOF'
import os, resource, socket, sys, time
port = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def conn(p):
    s = socket.create_connection(("127.0.0.1", p), timeout=10)
    return s
# Garbage of every kind, to both proxies.
for p in (3128, 1080):
    for junk in (os.urandom(3000), b"\x05\x01\x02", b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00",
                 b"\x05\x01\x00\x05\x01\x00\x09\xff\x00", b"GET / HTTP/1.1\r\n\r\n", b"CONNECT x\r\n\r\n",
                 b"A" * 20000, b"\r\n\r\n", b"GET http://[::1 HTTP/1.1\r\n\r\n"):
        s = conn(p)
        try:
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            s.recv(65536)
        except OSError:
            pass
        s.close()
# A client that asks for 64 MiB and never reads.
slow = conn(3128)
slow.sendall(b"GET http://127.0.0.1:%d/big HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (port, port))
# 1000 connections held open, saying nothing.
held = []
for i in range(1000):
    try:
        held.append(conn(3128 if i % 2 else 1080))
    except OSError as e:
        print("flood connect failed", e)
        break
# The relay still serves.
t = time.time()
s = conn(3128)
s.sendall(b"GET http://127.0.0.1:%d/hello HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (port, port))
data = b""
while True:
    c = s.recv(4096)
    if not c:
        break
    data += c
print(data.split(b"\r\n\r\n", 1)[1].decode().strip(), "after", len(held), "held open")
EOF
run $NSRUN $NET -- python3 "$d/flood.py" "$PORT"
is "$out" "hello after 1000 held open" "after garbage, 1000 idle connections and a client that never reads, a normal request is served"
is "$rc" 0 "the relay survived: nsrun exits with the command's status"
like "$err" "^nsrun: network: [0-9]+ connections? to " "and reports"

done_testing
