#!/bin/sh
# --unshare-*, --share-net, --uid/--gid/--hostname, and loopback.
. "$NSR_TESTS/lib.sh"

ns_of() { readlink "/proc/self/ns/$1"; }
for ns in ipc pid net uts cgroup; do
	host=$(ns_of $ns)
	run "$NSRUN" $BASE --unshare-$ns -- readlink /proc/self/ns/$ns
	if [ "$ns" = pid ]; then
		# /proc is the host's here; the command is in the new pid ns,
		# which /proc/self/ns/pid shows for it.
		:
	fi
	if [ -n "$out" ] && [ "$out" != "$host" ]; then ok "--unshare-$ns gives a new $ns namespace"
	else not_ok "--unshare-$ns gives a new $ns namespace"; diag "host $host, sandbox $out $err"; fi
	run "$NSRUN" $BASE -- readlink /proc/self/ns/$ns
	is "$out" "$host" "without --unshare-$ns the $ns namespace is shared"
done
run "$NSRUN" $BASE -- readlink /proc/self/ns/mnt
if [ "$out" != "$(ns_of mnt)" ]; then ok "a mount namespace is always new"; else not_ok "a mount namespace is always new"; fi
run "$NSRUN" $BASE -- readlink /proc/self/ns/user
if is_root; then is "$out" "$(ns_of user)" "real root gets no implicit user namespace"
else if [ "$out" != "$(ns_of user)" ]; then ok "a caller who is not root gets a user namespace"; else not_ok "a caller who is not root gets a user namespace"; fi; fi
run "$NSRUN" $BASE --unshare-user -- readlink /proc/self/ns/user
if [ "$out" != "$(ns_of user)" ]; then ok "--unshare-user gives a new user namespace"; else not_ok "--unshare-user gives a new user namespace"; fi

run "$NSRUN" $BASE --unshare-all -- sh -c 'for n in ipc net pid uts cgroup user; do readlink /proc/self/ns/$n; done'
cnt=0; for n in ipc net pid uts cgroup user; do echo "$out" | grep -qx "$(ns_of $n)" && cnt=$((cnt + 1)); done
is "$cnt" 0 "--unshare-all unshares ipc, net, pid, uts, cgroup and user"
run "$NSRUN" $BASE --unshare-all --share-net -- readlink /proc/self/ns/net
is "$out" "$(ns_of net)" "--share-net keeps the host network after --unshare-all"
run "$NSRUN" $BASE --share-net --unshare-all -- readlink /proc/self/ns/net
if [ "$out" != "$(ns_of net)" ]; then ok "--unshare-all after --share-net unshares the network again"; else not_ok "--unshare-all after --share-net unshares the network again"; fi

# The network namespace: loopback up, nothing else, nothing reachable.
run "$NSRUN" $BASE --unshare-net -- sh -c 'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "'
is "$out" "lo" "--unshare-net: only lo exists"
run "$NSRUN" $BASE --unshare-net -- python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname(), 2); print("loopback-ok")'
is "$out" "loopback-ok" "--unshare-net: loopback is up and usable"
# A listener on the host's loopback is not reachable from the sandbox.
port_file=$(scratch)/port
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
open(sys.argv[1], "w").write(str(s.getsockname()[1])); time.sleep(20)' "$port_file" &
srv=$!
wait_until 10 test -s "$port_file"
port=$(cat "$port_file")
run "$NSRUN" $BASE --unshare-net -- python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', $port), 2); print('reached')
except OSError as e: print('refused', e.errno)"
like "$out" "^refused" "--unshare-net: a host TCP service on 127.0.0.1 is unreachable"
run "$NSRUN" $BASE -- python3 -c "
import socket
socket.create_connection(('127.0.0.1', $port), 2); print('reached')"
is "$out" "reached" "without --unshare-net the same service is reachable (the test can fail)"
kill $srv 2>/dev/null; rm -f "$port_file"

run "$NSRUN" $BASE --unshare-uts --hostname sandbox-1 -- hostname
is "$out" "sandbox-1" "--hostname sets the hostname"
is "$(hostname)" "$(cat /proc/sys/kernel/hostname)" "the host's hostname is unchanged"
run "$NSRUN" $BASE --hostname x -- true
is "$rc:$err" "1:nsrun: Specifying --hostname requires --unshare-uts" "--hostname needs --unshare-uts"
run "$NSRUN" $BASE --unshare-uts --hostname a --hostname b -- hostname
is "$out:$err" "b:nsrun: Only the last --hostname option will take effect" "the last --hostname wins, with bwrap's warning"

run "$NSRUN" $BASE --unshare-user --uid 1234 --gid 4321 -- sh -c 'id -u; id -g; cat /proc/self/setgroups'
is "$out" "1234
4321
deny" "--uid and --gid set the ids; setgroups is denied"
run "$NSRUN" $BASE --unshare-user --uid 0 --gid 0 -- sh -c 'id -u; touch /etc/x 2>&1 | grep -c Read-only'
is "$out" "0
1" "--uid 0 is root in the namespace, yet the host stays read-only"
if is_root; then
	run "$NSRUN" $BASE --uid 5 -- true
	is "$rc:$err" "1:nsrun: Specifying --uid requires --unshare-user or --userns" "--uid needs a user namespace for root"
fi
run "$NSRUN" $BASE --uid x -- true
is "$rc:$err" "1:nsrun: Invalid uid: x" "--uid needs a number"
run "$NSRUN" $BASE --unshare-cgroup -- readlink /proc/self/ns/cgroup
if [ "$out" != "$(ns_of cgroup)" ]; then ok "--unshare-cgroup"; else not_ok "--unshare-cgroup"; fi
run "$NSRUN" $BASE --unshare-ipc -- sh -c 'ls /dev/mqueue 2>/dev/null | wc -l; python3 -c "import os; print(os.getpid() > 0)"'
is "$rc" 0 "--unshare-ipc runs"
done_testing
