#!/bin/sh
# issue 28: a project run looks hide.list's paths up in the monitor after
# the clone, while the sandbox child makes its namespaces and the mounts
# before theirs, and the child takes their mounts when its build reaches
# them. The root is the one a run that looked them up first gets, the same
# mounts on the same mounts; a hide.list that cannot be read still stops
# the run before the command, with no run left; a child whose hidden paths
# did not arrive whole runs nothing; and the binds of thousands of hidden
# files fit under a soft limit of 1024 fds.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
own_home_and_data "$d"
P=$d/p
mkdir -p "$P/many" "$H/.config/gh" "$H/.aws"
echo leak > "$H/.netrc"
echo leak > "$H/.config/gh/hosts.yml"
echo leak > "$H/.aws/credentials"
echo fine > "$H/.beside"
echo leak > "$P/.env"

# Each named file: its contents, "empty" (a hidden file reads as /dev/null)
# or "-" (not there: in a hidden dir).
show='for f in "$@"; do c=$(cat "$f" 2>/dev/null) || c=-; echo "${c:-empty}"; done'
files="$H/.netrc $H/.config/gh/hosts.yml $H/.aws/credentials $P/.env $H/.beside"
NSRUN_TIMING=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --hide "$P/.env" --quiet -- sh -c "$show" sh $files
is "$rc" 0 "a project run"
is "$(echo "$out" | tr '\n' ' ')" "empty - - empty fine " "... hides hide.list's paths and --hide's, and shows the rest"
like "$err" "monitor: hidden paths looked up" "... looked up by the monitor, after the clone"

# The child takes the hidden paths' mounts when its build reaches them:
# the root's first mounts (/dev, /proc, the tmpfs, the home's overlay) are
# made while the monitor looks them up.
NSRUN_TIMING=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --quiet -- true
order=$(printf '%s\n' "$err" | sed -n 's/^  \(child: root in place\|child: slots taken\) .*/\1/p' | tr '\n' ,)
is "$rc:$order" "0:child: root in place,child: slots taken," "the child builds the root's first mounts before it takes the hidden paths"

# A --hide of "/" or of a path right below it may cover "/" or /proc,
# which a root built in place cannot take: that root is built by the
# pivot, and the path is hidden as before.
NSRUN_TIMING=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --hide /proc --quiet -- sh -c 'ls -A /proc | wc -l'
is "$rc:$out" "0:0" "--hide /proc: the command sees an empty /proc"
like "$err" "^  child: root on a tmpfs " "... in a root built by the pivot"
run "$NSRUN" -p "$P" --state-dir "$d/state" --hide / --quiet -- true
is "$rc" 127 "--hide /: nothing is left to run"
like "$err" "execvp true" "... and the command is not found"
# A hide.list line that does (nsrun's own list has none) fails closed:
# the command never runs, and the message says why.
cp "$data/profiles/hide.list" "$d/hide.list.keep"
echo /proc >>"$data/profiles/hide.list"
mkdir -p "$d/m"
run "$NSRUN" -p "$P" --state-dir "$d/state" --bind "$d/m" "$d/m" --quiet -- touch "$d/m/ran"
is "$rc" 125 "a hide.list line for /proc under a root built in place fails the run"
like "$err" "a hidden path's mount \(tmpfs on /proc\) does not fit the sandbox's root" "... saying why"
check "... and the command never runs" test ! -e "$d/m/ran"
cp "$d/hide.list.keep" "$data/profiles/hide.list"

# A hide.list that cannot be read (a dir in its place: root reads past a
# mode): the run stops before the command, says why, and leaves no run.
mv "$data/profiles/hide.list" "$d/hide.list"
mkdir "$data/profiles/hide.list"
runs_before=$(ls "$d/state/runs" | wc -l)
run "$NSRUN" -p "$P" --state-dir "$d/state" --bind "$d/m" "$d/m" --quiet -- touch "$d/m/ran"
is "$rc" 125 "an unreadable hide.list fails the run"
like "$err" "hide.list" "... naming it"
check "... before the command ran" test ! -e "$d/m/ran"
is "$(ls "$d/state/runs" | wc -l)" "$runs_before" "... and leaves no run behind"
rmdir "$data/profiles/hide.list"
mv "$d/hide.list" "$data/profiles/hide.list"

# Thousands of hidden files: each bind takes an fd while the root is
# built, past a soft limit of 1024. The monitor raised it for the plan it
# had; the child raises it again (to the hard limit) for the ops that came
# after the clone.
i=0
while [ $i -lt 1500 ]; do
	: > "$P/many/f$i"
	i=$((i + 1))
done
echo leak > "$P/many/f1499"
if [ "$(ulimit -H -n)" != unlimited ] && [ "$(ulimit -H -n)" -lt 4000 ]; then
	skip "1500 hidden files under a soft limit of 1024 fds" "the hard limit of open files is $(ulimit -H -n)"
else
	run sh -c "ulimit -S -n 1024 && exec '$NSRUN' -p '$P' --state-dir '$d/state' --hide '$P/many/*' --quiet -- sh -c 'cat $P/many/f1499 $P/many/f0; echo done'"
	is "$rc:$out" "0:done" "1500 hidden files under a soft limit of 1024 fds: all hidden"
fi
rm -rf "$P/many"

if [ -z "${NSR_TEST_HOOKS:-}" ]; then
	diag "SKIP: the comparison and the truncated ops need a build with --enable-test-hooks"
	rm -rf "$d"
	done_testing
fi

# The root, mount by mount, with the hidden paths looked up after the
# clone (and taken when the build reaches them) and before it: each mount
# (its root, mount point, options, type, source) with the mount point of
# the mount it sits on, which says what covers what. Neither the ids nor
# the order of the table (which follows them) nor the fd numbers that name
# an overlay's layers say anything about the root.
mount_table() {
	printf '%s\n' "$1" | awk '{ mp[$1] = $5; line[NR] = $0; parent[NR] = $2 }
		END {
			for (i = 1; i <= NR; i++) {
				s = line[i]
				sub(/^[0-9]+ [0-9]+ [0-9]+:[0-9]+ /, "", s)
				gsub(/ shared:[0-9]+| master:[0-9]+| propagate_from:[0-9]+/, "", s)
				gsub(/\/proc\/self\/fd\/[0-9]+/, "/proc/self/fd/N", s)
				print s " on " ((parent[i] in mp) ? mp[parent[i]] : "?")
			}
		}' | LC_ALL=C sort
}
run "$NSRUN" -p "$P" --state-dir "$d/state" --hide "$P/.env" --quiet -- cat /proc/self/mountinfo
later=$(mount_table "$out")
NSRUN_TEST_HIDDEN_AT_ONCE=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --hide "$P/.env" --quiet -- cat /proc/self/mountinfo
is "$(mount_table "$out")" "$later" "the root is the same, mount by mount, whenever the hidden paths are looked up"
like "$later" "^/null $H/.netrc ro,nosuid," "... and it holds the hidden files' mounts, read-only"
like "$later" "^/null $P/.env ro,nosuid,.* on $P\$" "... a hidden file in the project on top of the project's overlay"

# Ops that do not unpack: the child stops building its root, and runs
# nothing.
NSRUN_TEST_SLOTS_TRUNCATED=1 run "$NSRUN" -p "$P" --state-dir "$d/state" --bind "$d/m" "$d/m" --quiet -- touch "$d/m/ran"
is "$rc" 125 "hidden paths that do not arrive whole fail the run"
like "$err" "hidden paths did not come from the monitor" "... saying so"
check "... and the command never runs" test ! -e "$d/m/ran"

rm -rf "$d"
done_testing
