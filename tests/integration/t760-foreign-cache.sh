#!/bin/sh
# The foreign-owner walk's cache (issue 28): a dir found clean last time
# and unchanged since (same inode, mtime and ctime) is not read again; the
# subdirs the last walk found in it are looked into by name. A file of
# another group added deep down, or in a new subdir, is still found and
# writable; a cache that names ".." or a path is not followed (the dir is
# read instead), and nothing outside the project is copied.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
U=${NSR_TEST_USER:-nsrun-test}
G=nsrfo$(id -u "$U" 2>/dev/null)
if is_root; then
	# The user half needs a group of its own that the test user is in
	# (the harness starts it with --init-groups); t800 uses the same.
	if id "$U" >/dev/null 2>&1; then
		getent group "$G" >/dev/null || groupadd "$G"
		gpasswd -a "$U" "$G" >/dev/null 2>&1
	fi
	# As root every id is mapped and there is no walk: a deep tree runs.
	P=$d/p; mkdir -p "$P/a/b/c"; echo f > "$P/a/b/c/f"
	run "$NSRUN" -p "$P" --state-dir "$d/s" -- sh -c 'echo x >> a/b/c/f'
	is "$rc:$(cat "$P/a/b/c/f" | tr '\n' ' ')" "0:f x " "as root, a deep tree runs and commits"
	done_testing
fi
gid=$(getent group "$G" | cut -d: -f3)
if [ -z "$gid" ] || ! id -G | tr ' ' '\n' | grep -qx "$gid"; then
	skip_all "the test user is not in the group $G (the root half adds it; the harness starts it with --init-groups)"
fi
S=$d/s
NS="--state-dir $S"
P=$d/p
mkdir -p "$P/a/b/c/d" "$P/a/e" "$P/x"
for f in a/b/c/d/f a/e/f x/f top; do echo o > "$P/$f"; done

run "$NSRUN" -p "$P" $NS -- true
run "$NSRUN" -p "$P" $NS -- true
is "$rc" 0 "two no-op runs over a tree of the user's own"
cache=$(find "$S/projects" -name foreign-clean -type f | head -n 1)
is "$(head -n 1 "$cache" 2>/dev/null)" "nsrun-foreign-clean 2" "the walk's cache names the subdirs of each clean dir"
is "$(tail -n +2 "$cache" | wc -l)" "7" "... one line for each of the 7 dirs (the project and its 6 subdirs)"
is "$(awk -v h="$(printf a | xxd -p)" '$7 == h || $8 == h' "$cache" | wc -l)" "1" "... and the project's line names its subdir a"

# A file of the group added deep down: only its dir changed; the dirs
# above are passed through by name.
echo g > "$P/a/b/c/d/g"; chgrp "$G" "$P/a/b/c/d/g"; chmod 664 "$P/a/b/c/d/g"
run "$NSRUN" -p "$P" $NS -- sh -c 'echo x >> a/b/c/d/g'
is "$rc:$(cat "$P/a/b/c/d/g" | tr '\n' ' '):$(stat -c %g "$P/a/b/c/d/g")" "0:g x :$gid" \
	"a file of another group added deep in a clean tree is writable, and keeps its group"
unlike "$err" "Value too large" "... without EOVERFLOW"

# A new subdir of a clean dir, with such a file: the parent changed, and
# is read again.
mkdir "$P/a/e/new"; echo h > "$P/a/e/new/h"; chgrp "$G" "$P/a/e/new/h"; chmod 664 "$P/a/e/new/h"
run "$NSRUN" -p "$P" $NS -- sh -c 'echo y >> a/e/new/h'
is "$rc:$(cat "$P/a/e/new/h" | tr '\n' ' ')" "0:h y " "a file of another group in a new subdir of a clean dir is writable"

# A cache that names ".." (or a path) for the project: not followed.
echo o > "$d/outside"; chgrp "$G" "$d/outside"; chmod 664 "$d/outside"
run "$NSRUN" -p "$P" $NS -- true
for bad in "2e2e" "612f62"; do
	root=$(stat -c '%d %i' "$P") times=$(stat --printf='%.9Y %.9Z' "$P" | tr '.' ' ')
	set -- $times
	{ echo "nsrun-foreign-clean 2"; echo "$root $1 $2 $3 $4 $bad"; } > "$cache"
	run "$NSRUN" -p "$P" $NS -- sh -c 'echo z >> a/b/c/d/g'
	is "$rc:$(tail -n 1 "$P/a/b/c/d/g")" "0:z" "a cache that names $(printf '%s' "$bad" | xxd -r -p) for the project: the run still works"
	check "... nothing outside the project was copied" test -z "$(find "$S" -name outside)"
	is "$(cat "$d/outside")" "o" "... and the file outside is untouched"
done
done_testing
