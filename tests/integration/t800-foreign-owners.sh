#!/bin/sh
# Files the user may write are writable inside, whoever owns them: a
# group-writable file of a supplementary group in a setgid dir (a shared
# checkout), a file of group root the user owns, a root-owned file of mode
# 666. The commit writes into the host's file, which keeps its owner,
# group, mode and inode; undo and a failed apply put the content back the
# same way.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
U=${NSR_TEST_USER:-nsrun-test}
G=nsrfo$(id -u "$U" 2>/dev/null)
F=$NSR_STAGE/t800
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
ids() { stat -c '%u:%g:%a:%i' "$@" | tr '\n' ' '; }

# The tree: made by the root half (it can chown), left in the harness's
# stage dir for the user half.
make_tree() { # DIR OWNER GROUP
	rm -rf "$1"; mkdir -p "$1/sub" "$1/rdir"
	chown "$2:$3" "$1"; chmod 2775 "$1"
	echo s > "$1/shared"; chown "12345:$3" "$1/shared"; chmod 664 "$1/shared"
	echo o > "$1/owngrp"; chown "$2:$3" "$1/owngrp"; chmod 644 "$1/owngrp"
	echo r > "$1/rootfile"; chown 0:0 "$1/rootfile"; chmod 666 "$1/rootfile"
	echo u > "$1/untouched"; chown "12345:$3" "$1/untouched"; chmod 664 "$1/untouched"
	chown "12345:$3" "$1/sub"; chmod 2775 "$1/sub"
	echo w > "$1/sub/s"; chown "12345:$3" "$1/sub/s"; chmod 664 "$1/sub/s"
	echo f > "$1/rdir/f"; chown 0:0 "$1/rdir" "$1/rdir/f"; chmod 755 "$1/rdir"; chmod 666 "$1/rdir/f"
}

if is_root; then
	# The user half's tree, with a group of its own that the test user
	# is in (the harness starts it with --init-groups).
	if id "$U" >/dev/null 2>&1 && { getent group "$G" >/dev/null || groupadd "$G"; } && gpasswd -a "$U" "$G" >/dev/null 2>&1; then
		make_tree "$F/p" "$U" "$G"
		make_tree "$F/p2" "$U" "$G"
		chmod 755 "$F"
	fi
	# As root every id is mapped: the same tree works as it always did.
	# (Root inside has no CAP_DAC_OVERRIDE: the file is writable by all.)
	P=$d/p; make_tree "$P" 4242 4242; chmod 666 "$P/shared"
	before=$(ids "$P/shared" "$P/rootfile")
	run "$NSRUN" -p "$P" --state-dir "$d/state" -- sh -c 'echo x >> shared; echo z >> rootfile'
	is "$rc:$(cat "$P/shared" "$P/rootfile" | tr '\n' ' ')" "0:s x r z " "as root, files of other owners are written"
	is "$(stat -c '%u:%g:%a' "$P/shared" "$P/rootfile" | tr '\n' ' ')" "12345:4242:666 0:0:666 " \
		"... and keep their owner, group and mode"
	done_testing
fi

if [ ! -d "$F/p" ]; then
	skip_all "needs the tree of files of other owners that the root half of this test makes (run it through the harness as root)"
fi
if ! id -G | tr ' ' '\n' | grep -qx "$(getent group "$G" | cut -d: -f3)"; then
	skip_all "the test user is not in the group $G (the harness starts it with --init-groups)"
fi
P=$F/p
NS="--state-dir $d/state"
before=$(ids "$P/shared" "$P/owngrp" "$P/rootfile" "$P/sub/s" "$P/rdir/f")
run "$NSRUN" -p "$P" $NS --report "$d/r1.json" -- sh -c 'echo x >> shared; echo y >> owngrp; echo z >> rootfile; echo w2 >> sub/s; echo g >> rdir/f; echo new > sub/new; mkdir newd; echo x > newd/x'
is "$rc" 0 "a command writes files of other owners"
unlike "$err" "Value too large" "... without EOVERFLOW"
is "$(cat "$P/shared" "$P/owngrp" "$P/rootfile" "$P/sub/s" "$P/rdir/f" | tr '\n' ' ')" "s x o y r z w w2 f g " \
	"... and the commit brings every write to the host"
is "$(ids "$P/shared" "$P/owngrp" "$P/rootfile" "$P/sub/s" "$P/rdir/f")" "$before" \
	"... each file keeps its owner, group, mode and inode (written in place)"
is "$(cat "$P/sub/new" 2>/dev/null)" "new" "a new file in a dir of another owner (setgid, group-writable)"
gid=$(getent group "$G" | cut -d: -f3)
is "$(stat -c %g "$P/sub/new" "$P/newd" "$P/newd/x" 2>/dev/null | tr '\n' ' ')" "$gid $gid $gid " \
	"new entries in a setgid dir take its group, as the user's own writes there would"
is "$(json "$d/r1.json" 'sorted((c["path"], c["change"]) for c in d["projects"][0]["changes"])')" \
	"[('newd', 'created'), ('newd/x', 'created'), ('owngrp', 'modified'), ('rdir/f', 'modified'), ('rootfile', 'modified'), ('shared', 'modified'), ('sub/new', 'created'), ('sub/s', 'modified')]" \
	"the report shows the changes as usual, and nothing for the files copied but untouched"
like "$err" "3 created, 5 modified" "... and so does the summary"

run "$NSRUN" -p "$P" $NS -- true
like "$err" "no changes" "a command that writes nothing changes nothing, whoever owns the files"

run "$NSRUN" undo $NS -p "$P"
is "$rc:$(cat "$P/shared" "$P/rootfile" | tr '\n' ' ')" "0:s r " "undo puts the old content back"
is "$(ids "$P/shared" "$P/owngrp" "$P/rootfile" "$P/sub/s" "$P/rdir/f")" "$before" "... into the same files"

# A dir found clean (nothing of another group in it) is not looked into
# again until it changes: a file added and given the group is seen.
Q=$d/q; mkdir -p "$Q/clean"; echo a > "$Q/clean/own"
run "$NSRUN" -p "$Q" $NS -- true
echo g > "$Q/clean/g"; chgrp "$G" "$Q/clean/g"; chmod 664 "$Q/clean/g"
run "$NSRUN" -p "$Q" $NS -- sh -c 'echo x >> clean/g'
is "$rc:$(cat "$Q/clean/g" | tr '\n' ' '):$(stat -c %g "$Q/clean/g")" "0:g x :$gid" \
	"a file of the group added to a dir that was clean the run before is writable"

if [ "${NSR_TEST_HOOKS:-0}" = 1 ]; then
	P=$F/p2
	before=$(ids "$P/shared")
	# Step 1 writes shared in place, step 2 fails: the rollback writes
	# the old content back.
	run env NSRUN_TEST_ENOSPC_AT=2 "$NSRUN" -p "$P" $NS -- sh -c 'echo x >> shared; echo n > zz'
	is "$rc" 125 "an apply that fails after a write in place exits 125"
	is "$(cat "$P/shared"):$(ids "$P/shared")" "s:$before" "... and the rollback puts the content back into the same file"
	id=$(printf '%s\n' "$err" | sed -n 's/.*run \([^ ]*\) kept: the apply failed.*/\1/p' | head -1)
	run "$NSRUN" commit $NS "$id"
	is "$rc:$(cat "$P/shared" | tr '\n' ' '):$(ids "$P/shared")" "0:s x :$before" "... and nsrun commit applies the kept run"
	# Killed right after the write in place: the next run rolls it back.
	run env NSRUN_TEST_CRASH_AT=1 "$NSRUN" -p "$P" $NS -- sh -c 'echo y >> shared; echo m > zz2'
	is "$rc" 99 "an apply killed after a write in place"
	run "$NSRUN" -p "$P" $NS -- true
	like "$err" "rolled back 1 interrupted apply" "... is rolled back by the next run"
	is "$(cat "$P/shared" | tr '\n' ' '):$(ids "$P/shared")" "s x :$before" "... into the same file, with its old content"
else
	skip "a failed or killed write in place" "needs a build with --enable-test-hooks (NSR_TEST_HOOKS=1)"
fi
done_testing
