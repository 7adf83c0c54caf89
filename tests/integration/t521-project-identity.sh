#!/bin/sh
# issue 12.3: a kept run is committed, and a run undone, only into the very
# directory it was made in. The run records the project's st_dev/st_ino;
# when the path is replaced (by a symlink to the home, by another dir) or
# reached through a symlink, commit, undo and diff refuse.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
mkdir -p "$d/home" "$d/p" "$d/u"; echo 'orig rc' > "$d/home/.bashrc"
sleep 0.05

# --- commit into a project that became a symlink to the home ----------
P=$d/p
run "$NSRUN" -p "$P" $NS --keep -- sh -c 'echo evil > .bashrc; echo x > new'
kept=$(echo "$err" | sed -n 's/.*run \([0-9A-Za-z.-]*\) kept.*/\1/p' | head -1)
like "$kept" '^[0-9]{8}T' "the run is kept"
mv "$P" "$d/p.real"; ln -s "$d/home" "$P"
run "$NSRUN" commit $NS "$kept"
is "$rc" 1 "commit refuses a project path that is now a symlink"
like "$err" 'no longer the directory' "... saying why"
is "$(cat "$d/home/.bashrc")" "orig rc" "... and writes nothing into the symlink's target"
check "... nothing at all" test ! -e "$d/home/new"
run "$NSRUN" diff $NS "$kept"
is "$rc" 1 "diff refuses it too"

# --- replaced by another directory at the same path ----------------------
rm "$P"; mkdir "$P"
run "$NSRUN" commit $NS "$kept"
is "$rc" 1 "commit refuses a new directory at the project's path"
check "... and writes nothing into it" test ! -e "$P/new"

# --- the original back in place: the commit works -----------------------
rmdir "$P"; mv "$d/p.real" "$P"
run "$NSRUN" commit $NS "$kept"
is "$rc" 0 "with the original back, commit works"
is "$(cat "$P/new" 2>/dev/null)" "x" "... and applies the run"

# --- undo into a replaced project ---------------------------------------
P=$d/u
run "$NSRUN" -p "$P" $NS -- sh -c 'echo made > .bashrc'
is "$rc" 0 "a run commits"
applied=$(echo "$err" | sed -n 's/.*(run \([0-9A-Za-z.-]*\)).*/\1/p' | head -1)
like "$applied" '^[0-9]{8}T' "... and says its run id"
mv "$P" "$d/u.real"; ln -s "$d/home" "$P"
run "$NSRUN" undo $NS "$applied"
is "$rc" 1 "undo refuses a project path that is now a symlink"
like "$err" 'no longer the directory' "... saying why"
is "$(cat "$d/home/.bashrc")" "orig rc" "... and the home's file is untouched"
rm "$P"; mv "$d/u.real" "$P"
run "$NSRUN" undo $NS -p "$P"
is "$rc" 0 "with the original back, undo works"
check "... and removes what the run made" test ! -e "$P/.bashrc"

rm -rf "$d"
done_testing
