#!/bin/sh
# The relay refuses the host's own addresses (issue 23 item 12): a name
# the rules allow that resolves to an address of one of the host's
# interfaces would reach services bound to 0.0.0.0 or ::. The test makes
# its own network namespace (and mount namespace, for /etc/hosts) so the
# "host" has a public-looking address of its own, 203.0.113.5 and
# 2001:db8::5 on lo, and a server on 0.0.0.0; names map to them through
# the namespace's own /etc/hosts, which the relay's resolver reads.
. "$NSR_TESTS/lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed for the server and the client"
command -v ip >/dev/null 2>&1 || skip_all "ip (iproute2) is needed to give the namespace an address"
command -v unshare >/dev/null 2>&1 || skip_all "unshare is needed to make the test's namespaces"
if is_root; then U="unshare -mn"; else U="unshare -rmn"; fi
$U true 2>/dev/null || skip_all "cannot make a network and mount namespace here ($U)"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
cd "$d" || exit 1

cat >hosts <<'HEOF'
127.0.0.1 localhost
203.0.113.5 svc.nsrt.test
2001:db8::5 svc6.nsrt.test
203.0.113.7 svc7.nsrt.test
HEOF
cat >server.py <<'PYEOF'
import os, socket, socketserver, sys
class H(socketserver.StreamRequestHandler):
    def handle(self):
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n")
class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
class S6(S):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        S.server_bind(self)
s = S(("0.0.0.0", 0), H)
port = s.server_address[1]
s6 = S6(("::", port), H)
import threading
threading.Thread(target=s6.serve_forever, daemon=True).start()
open(sys.argv[1] + ".tmp", "w").write("%d\n" % port)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PYEOF
# Inside the test's namespaces: prints one line per case.
cat >inner.sh <<'SHEOF'
set -u
ip link set lo up
ip addr add 203.0.113.5/32 dev lo
ip -6 addr add 2001:db8::5/128 dev lo nodad 2>/dev/null || echo "no-v6"
mount --bind "$D/hosts" /etc/hosts
python3 "$D/server.py" "$D/port" &
srv=$!
i=0
while [ ! -s "$D/port" ] && [ $i -lt 2000 ]; do i=$((i + 1)); sleep 0.01; done
PORT=$(cat "$D/port")
python3 -c "import socket; socket.create_connection(('203.0.113.5', $PORT), timeout=5); print('direct-ok')"
C="curl -sS --max-time 20 --noproxy '' -w ' %{http_code}\n'"
NET="--ro-bind / / --dev /dev --proc /proc"
echo "wild: $($NSRUN $NET --allow-host "*.nsrt.test:$PORT" -- sh -c "$C http://svc.nsrt.test:$PORT/" 2>/dev/null | tr '\n' '|')"
echo "name: $($NSRUN $NET --allow-host "svc.nsrt.test:$PORT" -- sh -c "$C http://svc.nsrt.test:$PORT/" 2>/dev/null | tr '\n' '|')"
echo "socks: $($NSRUN $NET --allow-host "*.nsrt.test:$PORT" -- sh -c "curl -sS --max-time 20 --noproxy '' -x socks5h://127.0.0.1:1080 http://svc.nsrt.test:$PORT/; echo rc=\$?" 2>/dev/null | tr '\n' '|')"
echo "exact: $($NSRUN $NET --allow-host "203.0.113.5:$PORT" -- sh -c "$C http://203.0.113.5:$PORT/" 2>/dev/null | tr '\n' '|')"
echo "wild6: $($NSRUN $NET --allow-host "*.nsrt.test:$PORT" -- sh -c "$C http://svc6.nsrt.test:$PORT/" 2>/dev/null | tr '\n' '|')"
echo "exact6: $($NSRUN $NET --allow-host "[2001:db8::5]:$PORT" -- sh -c "$C http://[2001:db8::5]:$PORT/" 2>/dev/null | tr '\n' '|')"
# An address the host gains while the relay runs is refused too.
$NSRUN $NET --bind "$D" "$D" --allow-host "*.nsrt.test:$PORT" -- sh -c ": >$D/running; while [ ! -e $D/added ]; do sleep 0.05; done; $C http://svc7.nsrt.test:$PORT/" >"$D/late.out" 2>/dev/null &
late=$!
i=0
while [ ! -e "$D/running" ] && [ $i -lt 2000 ]; do i=$((i + 1)); sleep 0.01; done
ip addr add 203.0.113.7/32 dev lo
: >"$D/added"
wait $late
echo "late: $(tr '\n' '|' <"$D/late.out")"
kill $srv
SHEOF
run env D="$d" NSRUN="$NSRUN" $U sh "$d/inner.sh"
[ -n "$err" ] && diag "$err"
if printf '%s\n' "$out" | grep -q '^direct-ok$'; then ok "the namespace has 203.0.113.5 and a server on 0.0.0.0"; else
	not_ok "the namespace has 203.0.113.5 and a server on 0.0.0.0"; diag "$out"; fi
line() { printf '%s\n' "$out" | sed -n "s/^$1: //p"; }
is "$(line wild)" "nsrun refused the connection to svc.nsrt.test:$(cat "$d/port"): resolves to an address of this host (203.0.113.5)| 403|" \
	"a wildcard-allowed name that resolves to the host's own address is refused, 403"
is "$(line name)" "nsrun refused the connection to svc.nsrt.test:$(cat "$d/port"): resolves to an address of this host (203.0.113.5)| 403|" \
	"a name allowed exactly is refused too: the pattern does not name the address"
like "$(line socks)" "rc=97" "through SOCKS5 as well"
is "$(line exact)" "hello| 200|" "a pattern that is the address itself reaches it"
is "$(line late)" "nsrun refused the connection to svc7.nsrt.test:$(cat "$d/port"): resolves to an address of this host (203.0.113.7)| 403|" \
	"an address the host gained while the relay ran is refused too"
if printf '%s\n' "$out" | grep -q '^no-v6$'; then
	skip "IPv6: the host's own address is refused" "no IPv6 in the test's namespace"
	skip "IPv6: the exact address pattern reaches it" "no IPv6 in the test's namespace"
else
	is "$(line wild6)" "nsrun refused the connection to svc6.nsrt.test:$(cat "$d/port"): resolves to an address of this host (2001:db8::5)| 403|" \
		"IPv6: the host's own address is refused"
	is "$(line exact6)" "hello| 200|" "IPv6: the exact address pattern reaches it"
fi
done_testing
