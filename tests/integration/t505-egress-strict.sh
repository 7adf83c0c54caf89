#!/bin/sh
# The HTTP proxy parses strictly (issue 23 item 10): a request head with
# a bare LF, a folded line, whitespace before a colon, a Host that is not
# the target's, two Hosts, or both Content-Length and Transfer-Encoding
# gets a 400 that names nsrun and reaches no server; a second request
# behind the first (pipelined, or after its body) never reaches the
# server; ordinary requests with and without bodies still work.
. "$NSR_TESTS/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed for the upstream server and the client"
command -v curl >/dev/null 2>&1 || skip_all "curl is needed as a client"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
cd "$d" || exit 1

# A lenient upstream that serves every request on a connection until the
# client's EOF (as servers that ignore "Connection: close" do), and logs
# one line per request: "PATH host=HOSTS body=BYTES".
cat >upstream.py <<'PYEOF'
import os, socket, socketserver, sys
log = sys.argv[1] + "/requests.log"
class H(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            if not line.strip():
                continue
            parts = line.split()
            path = parts[1] if len(parts) > 1 else b"?"
            hosts, length, chunked = [], 0, False
            while True:
                h = self.rfile.readline()
                if not h or h in (b"\r\n", b"\n"):
                    break
                k, _, v = h.partition(b":")
                k = k.strip().lower()
                if k == b"host":
                    hosts.append(v.strip())
                elif k == b"content-length":
                    length = int(v.strip() or 0)
                elif k == b"transfer-encoding":
                    chunked = True
            body = b""
            if chunked:
                while True:
                    n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if n == 0:
                        self.rfile.readline()
                        break
                    body += self.rfile.read(n)
                    self.rfile.readline()
            elif length:
                body = self.rfile.read(length)
            with open(log, "ab") as f:
                f.write(b"%s host=%s body=%d\n" % (path, b",".join(hosts), len(body)))
            out = path + b"\n"
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))
            self.wfile.flush()
class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
with S(("127.0.0.1", 0), H) as s:
    open(sys.argv[1] + "/port.tmp", "w").write("%d\n" % s.server_address[1])
    os.rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
    s.serve_forever()
PYEOF
python3 upstream.py "$d" &
srv=$!
trap 'kill $srv 2>/dev/null' EXIT
port_ready() { [ -s "$d/port" ]; }
wait_until 20 port_ready || { not_ok "the upstream server started"; done_testing; }
PORT=$(cat "$d/port")
NET="$BASE --dev /dev --proc /proc --allow-host 127.0.0.1:$PORT"
A="127.0.0.1:$PORT"

# The client inside: sends each case's bytes raw to the HTTP proxy,
# half-closes, and prints "NAME: STATUS..." (every response's status
# code, and "nsrun" when a 400 body names it).
cat >client.py <<'PYEOF'
import socket, sys
a = sys.argv[1]
cases = [
    ("bare-lf", b"GET http://%s/a HTTP/1.1\r\nHost: %s\r\nX-A: 1\nHost: other.example\r\n\r\n"),
    ("space-colon", b"GET http://%s/a HTTP/1.1\r\nHost: %s\r\nHost : other.example\r\n\r\n"),
    ("fold", b"GET http://%s/a HTTP/1.1\r\nHost: %s\r\nX-A: 1\r\n Host: other.example\r\n\r\n"),
    ("other-host", b"GET http://%s/a HTTP/1.1\r\nHost: other.example\r\n\r\n"),
    ("two-hosts", b"GET http://%s/a HTTP/1.1\r\nHost: %s\r\nHost: %s\r\n\r\n"),
    ("no-host-1.1", b"GET http://%s/a HTTP/1.1\r\n\r\n"),
    ("cl-te", b"POST http://%s/a HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /cl-te-smuggled HTTP/1.1\r\nHost: other.example\r\n\r\n"),
    ("two-cl", b"POST http://%s/a HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nContent-Length: 45\r\n\r\nGET /two-cl-smuggled HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("bad-cl", b"POST http://%s/a HTTP/1.1\r\nHost: %s\r\nContent-Length: +5\r\n\r\nhello"),
    ("te-gzip", b"POST http://%s/a HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
    ("connect-body", b"CONNECT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 3\r\n\r\nabc"),
    ("pipelined", b"GET http://%s/first HTTP/1.1\r\nHost: %s\r\n\r\nGET /pipelined-smuggled HTTP/1.1\r\nHost: other.example\r\n\r\n"),
    ("after-body", b"POST http://%s/withbody HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhelloGET /after-body-smuggled HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("chunked", b"POST http://%s/chunked HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\n\r\nGET /chunked-smuggled HTTP/1.1\r\nHost: x\r\n\r\n"),
    ("http-1.0", b"GET http://%s/old HTTP/1.0\r\n\r\n"),
]
for name, raw in cases:
    n = raw.count(b"%s")
    data = raw % ((a.encode(),) * n)
    s = socket.create_connection(("127.0.0.1", 3128), timeout=15)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    got = b""
    try:
        while True:
            k = s.recv(65536)
            if not k:
                break
            got += k
    except OSError:
        pass
    s.close()
    codes = [l.split(b" ")[1].decode() for l in got.split(b"\r\n") if l.startswith(b"HTTP/1.1 ")]
    tag = " nsrun" if b"\r\n\r\nnsrun: " in got else ""
    print("%s: %s%s" % (name, ",".join(codes) or "none", tag))
PYEOF
run $NSRUN $NET -- python3 "$d/client.py" "$A"
for c in bare-lf space-colon fold other-host two-hosts no-host-1.1 cl-te two-cl bad-cl te-gzip connect-body; do
	is "$(printf '%s\n' "$out" | grep "^$c: ")" "$c: 400 nsrun" "$c: refused with a 400 that names nsrun"
done
is "$(printf '%s\n' "$out" | grep "^pipelined: ")" "pipelined: 200" "pipelined: the first request is answered, once"
is "$(printf '%s\n' "$out" | grep "^after-body: ")" "after-body: 200" "a request behind a Content-Length body: one answer"
is "$(printf '%s\n' "$out" | grep "^chunked: ")" "chunked: 200" "a chunked body: answered once"
is "$(printf '%s\n' "$out" | grep "^http-1.0: ")" "http-1.0: 200" "HTTP/1.0 without Host is served"
is "$(sort "$d/requests.log" 2>/dev/null)" "/chunked host=$A body=8
/first host=$A body=0
/old host=$A body=0
/withbody host=$A body=5" "the server got exactly the four good requests, with their Host and bodies, and nothing smuggled"

# Ordinary clients still work: a GET, a POST with a body, a chunked upload.
: >"$d/requests.log"
printf 'x%.0s' $(seq 1 3000) >"$d/data"
C="curl -sS --max-time 20 --noproxy ''"
run $NSRUN $NET -- sh -c "$C http://$A/get; $C --data-binary @$d/data http://$A/post; $C -H 'Transfer-Encoding: chunked' --data-binary @$d/data http://$A/upload"
is "$out" "/get
/post
/upload" "curl: GET, POST and a chunked upload through the proxy"
is "$(sort "$d/requests.log")" "/get host=$A body=0
/post host=$A body=3000
/upload host=$A body=3000" "the server got each request once, with its whole body"
done_testing
