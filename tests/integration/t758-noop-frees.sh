#!/bin/sh
# A run frees no block on its own path (issue 28): on a file system
# mounted with "discard" each freed block costs a synchronous discard. The
# reserve a run held goes to the next run (STATE/reserve.spare, taken only
# when it is a whole reserve of the user's own, never through a symlink),
# and the run's empty layers and its first meta go to RUN/trash, removed in
# the background. A full state dir still frees the spare (t803).
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
S=$d/s
mkdir -p "$d/p"
echo a >"$d/p/f"
spare=$S/reserve.spare

run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a no-op project run"
check "it leaves its reserve to the next run" test -f "$spare" -a ! -L "$spare"
blocks=$(stat -c '%b %B' "$spare" | awk '{ print $1 * $2 }')
check "... a whole reserve (256 KiB allocated, $blocks bytes)" test "$blocks" -ge 262144
ino=$(stat -c %i "$spare")
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a second no-op run"
is "$(stat -c %i "$spare" 2>/dev/null)" "$ino" "... took the spare and gave it back (same inode)"

# Each run's layers and first meta went to the trash, and the trash goes.
wait_background
n=0 left=0
for r in "$S/runs"/*/; do
	n=$((n + 1))
	for e in p0/upper p0/work trash; do
		[ -e "$r$e" ] && { left=$((left + 1)); diag "$r$e is still there"; }
	done
done
is "$n:$left" "2:0" "two runs, and no layer or trash left once the background work is done"
check "the recorded outcome is readable" sh -c "'$NSRUN' history --state-dir '$S' | grep -q committed"

# A run with a change still applies it and records it.
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c 'echo b > f'
is "$rc:$(cat "$d/p/f")" "0:b" "a run with a change applies it"

# Never trusted from a planted entry: a symlink to a file of the user's
# is not followed (the file keeps its content, size and inode), a file with
# a second link or a short file is not taken as the reserve.
echo victim >"$d/victim"
rm -f "$spare"; ln -s "$d/victim" "$spare"
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a run with a symlink planted as the spare"
is "$(cat "$d/victim"):$(stat -c %s "$d/victim")" "victim:7" "... the symlink's target is untouched"
check "... the spare is a regular file again" test -f "$spare" -a ! -L "$spare"
ln -f "$spare" "$d/second-link"
ino=$(stat -c %i "$spare")
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a run with a spare that has a second link"
check "... it was not taken (a new reserve, another inode)" test "$(stat -c %i "$spare")" != "$ino"
is "$(stat -c %i "$d/second-link")" "$ino" "... and the other link is left alone"
rm -f "$spare"; printf x >"$spare"
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a run with a short file as the spare"
blocks=$(stat -c '%b %B' "$spare" | awk '{ print $1 * $2 }')
check "... it was replaced by a whole reserve ($blocks bytes)" test "$blocks" -ge 262144
done_testing
