#!/bin/sh
# Project mode: one test per leak. Secrets in files and the environment,
# host sockets, loopback TCP, writes outside the project, .git protection,
# setuid bits, unmounting the masks, TIOCSTI.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj
mkdir -p "$P"
NS="--state-dir $d/state"
[ -n "${HOME:-}" ] && [ -d "$HOME" ] && [ -w "$HOME" ] || skip_all "needs a writable HOME"

# A secret in the home dir, and a history file.
mkdir -p "$HOME/.ssh"
echo "PRIVATE KEY" > "$HOME/.ssh/id_nsrtest"
echo "secret history" > "$HOME/.bash_history.nsrtest"
run "$NSRUN" -p "$P" $NS -- sh -c 'ls -A ~/.ssh | wc -l; cat ~/.ssh/id_nsrtest 2>&1; touch ~/.ssh/x 2>&1'
like "$out" "^0
cat: .*No such file or directory" "~/.ssh is an empty directory inside"
like "$out" "Read-only file system" "... and read-only"
echo "ssh-ed25519 AAAA" > "$HOME/.ssh/id_nsrtest.pub"
run "$NSRUN" -p "$P" $NS --ro "$HOME/.ssh/id_nsrtest.pub" -- sh -c 'cat ~/.ssh/id_nsrtest.pub; ls -A ~/.ssh; touch ~/.ssh/x 2>/dev/null || echo read-only'
is "$out" "ssh-ed25519 AAAA
id_nsrtest.pub
read-only" "--ro of one file in a hidden dir shows that file only, and the dir stays read-only"
rm -f "$HOME/.ssh/id_nsrtest.pub"
run "$NSRUN" -p "$P" $NS --hide "$HOME/.bash_history.nsrtest" -- cat "$HOME/.bash_history.nsrtest"
is "$rc:$out" "0:" "--hide makes a file read as empty (/dev/null)"
if is_root; then
	run "$NSRUN" -p "$P" $NS -- sh -c 'wc -c < /etc/shadow'
	is "$out" "0" "/etc/shadow is hidden even from root"
fi

# Secrets in the environment.
run env GITHUB_TOKEN=ghp_x MY_API_KEY=k AWS_PROFILE=p DATABASE_URL=postgres://u:p@h SSH_AUTH_SOCK=/tmp/a HARMLESS=ok \
	"$NSRUN" -p "$P" $NS -- sh -c 'env | sort | grep -E "^(GITHUB_TOKEN|MY_API_KEY|AWS_PROFILE|DATABASE_URL|SSH_AUTH_SOCK|HARMLESS)="'
is "$out" "HARMLESS=ok" "secret-looking variables are dropped, others kept"
run env GITHUB_TOKEN=ghp_x "$NSRUN" -p "$P" $NS --keep-env GITHUB_TOKEN -- sh -c 'echo $GITHUB_TOKEN'
is "$out" "ghp_x" "--keep-env keeps one"

# Host sockets: one in $XDG_RUNTIME_DIR, one under /run when we can.
rt=$d/xdg; mkdir -p "$rt"; chmod 700 "$rt"
python3 -c '
import socket, sys, time, os
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(30)' "$rt/agent.sock" &
sock=$!
for _ in $(seq 50); do [ -S "$rt/agent.sock" ] && break; sleep 0.1; done
run env XDG_RUNTIME_DIR="$rt" "$NSRUN" -p "$P" $NS -- sh -c 'echo $XDG_RUNTIME_DIR; stat -c %a "$XDG_RUNTIME_DIR"; ls -A "$XDG_RUNTIME_DIR" | wc -l; python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX)
try: s.connect(sys.argv[1]); print(\"reached\")
except OSError as e: print(\"unreachable\", e.errno)" '"$rt/agent.sock"
like "$out" "^$rt
700
0
unreachable" "\$XDG_RUNTIME_DIR is a private empty 0700 dir; the host socket is unreachable"
run python3 -c "
import socket
s = socket.socket(socket.AF_UNIX); s.connect('$rt/agent.sock'); print('reached')"
is "$out" "reached" "the same socket is reachable outside (the test can fail)"
kill $sock 2>/dev/null
if is_root; then
	rd=/run/nsrun-test.$$ # unique: another suite may run this at the same time
	mkdir -p "$rd"
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(30)' "$rd/s.sock" &
	sock=$!
	for _ in $(seq 50); do [ -S "$rd/s.sock" ] && break; sleep 0.1; done
	run "$NSRUN" -p "$P" $NS -- sh -c 'ls -A /run; test -e "$1/s.sock" && echo visible' sh "$rd"
	unlike "$out" "visible|nsrun-test" "/run is hidden: host sockets there are invisible"
	kill $sock 2>/dev/null; rm -rf "$rd"
fi

# Sockets elsewhere. A listener at $1 for 30 s; probe connects from inside.
listen() {
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); time.sleep(30)' "$1" &
	sock=$!
	for _ in $(seq 50); do [ -S "$1" ] && break; sleep 0.1; done
}
sprobe='import socket, sys
s = socket.socket(socket.AF_UNIX)
try: s.connect(sys.argv[1]); print("reached")
except OSError as e: print("unreachable", e.errno)'
# An agent socket in the home dir (1Password, Bitwarden, gpg keep theirs
# there): the home overlay gives it a new inode, so connect() is refused.
mkdir -p "$HOME/.nsrun-test-agent"
listen "$HOME/.nsrun-test-agent/agent.sock"
run "$NSRUN" -p "$P" $NS -- python3 -c "$sprobe" "$HOME/.nsrun-test-agent/agent.sock"
is "$out" "unreachable 111" "a host socket in the home dir is unreachable through the home overlay"
run python3 -c "$sprobe" "$HOME/.nsrun-test-agent/agent.sock"
is "$out" "reached" "... and reachable outside (the test can fail)"
kill $sock 2>/dev/null; rm -rf "$HOME/.nsrun-test-agent"
# A socket on a plain read-only bind still accepts connections (the mount
# flag does not cover sockets): --hide is the way to cut it off.
mkdir -p "$d/daemon"
listen "$d/daemon/d.sock"
run "$NSRUN" -p "$P" $NS --ro "$d/daemon" -- python3 -c "$sprobe" "$d/daemon/d.sock"
is "$out" "reached" "a socket on a read-only bind is reachable (documented)"
run "$NSRUN" -p "$P" $NS --ro "$d/daemon" --hide "$d/daemon/d.sock" -- python3 -c "$sprobe" "$d/daemon/d.sock"
is "$out" "unreachable 111" "--hide SOCKET cuts it off"
kill $sock 2>/dev/null

# A secret inside the project: --hide goes over the project's overlay.
echo "SECRET=1" > "$P/.env"
run "$NSRUN" -p "$P" $NS --hide "$P/.env" -- sh -c 'echo "[$(cat .env)]"; echo leaked > .env; echo "[$(cat .env)]"'
is "$out" "[]
[]" "--hide of a file inside the project: it reads as empty, writes vanish (/dev/null)"
is "$(cat "$P/.env")" "SECRET=1" "... and the file itself is untouched"
rm -f "$P/.env"

# Descriptors the caller leaked: a file fd could be reopened writable
# through /proc/self/fd, a dir fd reaches past the read-only root.
echo host > "$d/leak"
run "$NSRUN" -p "$P" $NS -- sh -c 'ls /proc/self/fd | sort -n | tr "\n" " "; echo pwned > /proc/self/fd/7 2>/dev/null; ls /proc/self/fd/8/ >/dev/null 2>&1 && echo dir-reached' 7<"$d/leak" 8<"$d"
is "$out" "0 1 2 3 " "fds the caller left open above 2 do not reach the command"
is "$(cat "$d/leak")" "host" "... so a leaked fd cannot write the host file behind it"
run "$NSRUN" --ro-bind / / -- sh -c 'test -e /proc/self/fd/7 && echo passed' 7<"$d/leak"
is "$out" "passed" "bwrap mode still passes inherited fds, as bwrap does"

# Nor do they, or the monitor's own (the project's dir, the state dir),
# stay with pid 1 while the command runs: a command that can read pid 1's
# fds (the same user; only a Landlock scope of ABI 6 stands between them)
# would reach the host's project dir past the overlay through them. Seen
# from the host, where pid 1's fds can be read.
mkfifo "$d/go" "$d/ready"
"$NSRUN" -p "$P" $NS -- sh -c 'echo ready; read x' <"$d/go" >"$d/ready" 7<"$d/leak" 8<"$d" &
mon=$!
exec 6>"$d/go"
read -r line <"$d/ready"
pid1=$(pgrep -P "$mon" | head -n1)
reach=
for f in /proc/"$pid1"/fd/*; do
	case "${f##*/}" in 0 | 1 | 2) continue ;; esac # stdio: the command's too
	t=$(readlink "$f" 2>/dev/null) || continue
	case "$t" in "$d" | "$d"/*) reach="$reach ${f##*/}:$t" ;; esac
done
listed=$(ls "/proc/$pid1/fd" 2>/dev/null | wc -l)
echo go >&6
exec 6>&-
wait "$mon"
rc=$?
rm -f "$d/go" "$d/ready"
is "$rc:$line" "0:ready" "a project run whose command waits"
check "... pid 1's fds can be read from the host ($listed of them)" test "$listed" -gt 0
is "$reach" "" "... and none of pid 1's reaches the project's dir, the state dir or a leaked fd's file"
run "$NSRUN" -p "$P" $NS -- sh -c 'touch /run/x 2>&1; test -w /run && echo writable'
like "$out" "Read-only file system" "/run inside is read-only"

# Loopback TCP on the host is unreachable; --share-net opens it.
pf=$d/port
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
open(sys.argv[1], "w").write(str(s.getsockname()[1])); time.sleep(30)' "$pf" &
srv=$!
for _ in $(seq 50); do [ -s "$pf" ] && break; sleep 0.1; done
port=$(cat "$pf")
probe="import socket
try: socket.create_connection(('127.0.0.1', $port), 2); print('reached')
except OSError as e: print('unreachable')"
run "$NSRUN" -p "$P" $NS -- python3 -c "$probe"
is "$out" "unreachable" "a host service on 127.0.0.1 is unreachable"
run "$NSRUN" -p "$P" $NS --share-net -- python3 -c "$probe"
is "$out" "reached" "--share-net opens the host's loopback (documented)"
kill $srv 2>/dev/null

# Writes outside the project.
run "$NSRUN" -p "$P" $NS -- sh -c 'touch /etc/nsr-x 2>&1; echo home > ~/nsr-home-write; cat ~/nsr-home-write; touch /tmp/nsr-tmp'
like "$out" "Read-only file system" "the host root is read-only"
like "$out" "home$" "the home dir is writable inside (a throwaway layer)"
check "... but nothing reaches the host's home" test ! -e "$HOME/nsr-home-write"
check "... nor the host's /tmp" test ! -e /tmp/nsr-tmp
check "... nor /etc" test ! -e /etc/nsr-x
run "$NSRUN" -p "$P" $NS --home ro -- sh -c 'touch ~/nsr-ro 2>&1'
like "$out" "Read-only file system" "--home ro makes the home read-only"
run "$NSRUN" -p "$P" $NS --home hide -- sh -c 'ls -A ~ | wc -l'
is "$out" "0" "--home hide shows an empty home"
mkdir -p "$d/cache"
run "$NSRUN" -p "$P" $NS --rw "$d/cache" -- sh -c "echo live > '$d/cache/c'"
is "$(cat "$d/cache/c" 2>/dev/null)" "live" "--rw paths are writable and live"

# .git protection.
if command -v git >/dev/null 2>&1; then
	G=$d/repo; mkdir -p "$G"
	(cd "$G" && git init -q && git config user.email t@t && git config user.name t && echo a > a && git add a && git commit -qm init) >/dev/null 2>&1
	run "$NSRUN" -p "$G" $NS -- sh -c '(echo evil > .git/hooks/pre-commit) 2>&1; chmod +x .git/hooks/pre-commit 2>&1; git config core.hooksPath /tmp 2>&1; echo b > b; git add b && git -c user.email=t@t -c user.name=t commit -qm two && echo committed-inside'
	like "$out" "Read-only file system" ".git/hooks is read-only inside"
	like "$out" "committed-inside" "a normal git add and commit work inside"
	check "no hook reached the host" test ! -e "$G/.git/hooks/pre-commit"
	is "$(git -C "$G" config core.hooksPath)" "" ".git/config was not changed"
	is "$(git -C "$G" log --format=%s | head -1)" "two" "the commit made inside is applied"
	N=$d/fresh; mkdir -p "$N"
	run "$NSRUN" -p "$N" $NS --report "$d/gi.json" -- sh -c 'git init -q && echo "#!/bin/sh" > .git/hooks/post-checkout && echo ok'
	check "a hook created by git init during the run is dropped" test ! -e "$N/.git/hooks/post-checkout"
	like "$err" "protected: [0-9]+ changes? dropped, e\.g\. " "... and the summary says so"
	like "$(python3 -c 'import json,sys; print([c["path"] for c in json.load(open(sys.argv[1]))["projects"][0]["protected"]])' "$d/gi.json")" "\.git/hooks/post-checkout" "... and the report lists it as protected"
else
	skip ".git protection" "git is not installed"
fi

# setuid bits never reach the project.
run "$NSRUN" -p "$P" $NS -- sh -c 'cp /bin/true suid && chmod 4755 suid; stat -c %a suid'
is "$(stat -c %a "$P/suid" 2>/dev/null)" "755" "a setuid bit set inside is stripped at apply"

# The masks cannot be undone from inside.
run "$NSRUN" -p "$P" $NS -- sh -c 'umount /run 2>&1; umount -l ~/.ssh 2>&1; cat /proc/self/status | grep -E "^(CapEff|Seccomp):"'
like "$out" "^umount: /run: (must be superuser|.*not permitted|.*denied)" "umount runs, and is refused"
like "$out" "CapEff:	0000000000000000" "no capabilities inside"
like "$out" "Seccomp:	2" "a seccomp filter is on"
run "$NSRUN" -p "$P" $NS -- sh -c 'umount /run && echo unmounted'
unlike "$out" "unmounted" "the /run mask cannot be unmounted"

# TIOCSTI on a real pty.
if command -v script >/dev/null 2>&1; then
	run script -qec "$NSRUN -p $P $NS -- python3 -c '
import fcntl, termios
try: fcntl.ioctl(0, termios.TIOCSTI, b\"x\"); print(\"injected\")
except OSError as e: print(\"blocked\", e.errno)'" /dev/null
	like "$out" "blocked" "TIOCSTI cannot inject into the caller's terminal"
else
	skip "TIOCSTI" "script(1) is not installed"
fi
rm -rf "$HOME/.ssh/id_nsrtest" "$HOME/.bash_history.nsrtest"
rmdir "$HOME/.ssh" 2>/dev/null
rm -rf "$d"
done_testing
