#!/bin/sh
# A script written for bwrap runs unchanged through a "bwrap" symlink to
# nsrun: it finds bwrap on PATH and uses binds, dev, proc, tmpfs with perms
# and size, symlink, env, info-fd and exit codes.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
mkdir -p "$d/bin" "$d/project"
ln -s "$NSRUN" "$d/bin/bwrap"
echo 'print("hello")' > "$d/project/main.py"

cat > "$d/tool.sh" <<'TOOL'
#!/bin/sh
# What an agent tool does: build a sandbox with bwrap from PATH.
project=$1; shift
exec bwrap \
	--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
	--symlink usr/sbin /sbin --ro-bind /etc /etc \
	--dev /dev --proc /proc \
	--perms 1777 --size 8388608 --tmpfs /tmp \
	--bind "$project" /workspace --chdir /workspace \
	--unshare-all --die-with-parent --new-session \
	--clearenv --setenv PATH /usr/bin:/bin --setenv HOME /tmp --setenv TOOL ok \
	--info-fd 3 \
	-- "$@"
TOOL
chmod +x "$d/tool.sh"

run env PATH="$d/bin:$PATH" sh "$d/tool.sh" "$d/project" sh -c '
	echo "tool=$TOOL pwd=$(pwd) home=$HOME";
	python3 main.py;
	stat -c %a /tmp; df -k /tmp | tail -1 | tr -s " " | cut -d" " -f2;
	test -c /dev/null && echo dev-ok; test -r /proc/self/status && echo proc-ok;
	echo out > result.txt; readlink /lib;
	exit 5' 3>"$d/info"
is "$rc" 5 "the tool sees the command's exit status"
is "$out" "tool=ok pwd=/workspace home=/tmp
hello
1777
8192
dev-ok
proc-ok
usr/lib" "binds, env, chdir, tmpfs perms and size, dev, proc and symlinks behave as under bwrap"
is "$(cat "$d/project/result.txt")" "out" "writes to the bound project reach the host"
like "$(cat "$d/info")" '^\{
    "child-pid": [0-9]+,' "the tool gets --info-fd JSON"
run env PATH="$d/bin:$PATH" bwrap --version
is "$out" "bubblewrap 0.12.0" "the tool's version check sees bwrap 0.12.0"
run env PATH="$d/bin:$PATH" sh "$d/tool.sh" "$d/project" /no/such/program 3>/dev/null
is "$rc:$err" "1:bwrap: execvp /no/such/program: No such file or directory" "a failure reads exactly like bwrap's"
rm -rf "$d"
done_testing
