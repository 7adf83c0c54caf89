#!/bin/sh
# The next run's dir is made ahead (issue 28, txn/spare.h): a run's
# background process leaves STATE/run.spare (p0/upper, p0/work, trash),
# and the next one-project run takes it by one rename instead of making
# four dirs on its path. It is taken only when it is exactly that: empty
# dirs of the user's own that no one else may write; anything else is
# removed and the run makes its own dir. The state dir is hidden from
# every sandbox, but what a spare held would be the run's layer: a planted
# file must never become a change applied to the project.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
S=$d/s
mkdir -p "$d/p"
echo a >"$d/p/f"
spare=$S/run.spare

run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a no-op project run"
wait_until 30 test -d "$spare/p0/work"
check "its background process made the next run's dir" test -d "$spare/p0/upper" -a -d "$spare/trash" -a ! -L "$spare"
is "$(stat -c %a "$spare"):$(find "$spare" -mindepth 1 | wc -l)" "700:7" "... mode 0700, holding p0, p0/upper, p0/work, trash and three spare files only"
is "$(cd "$spare" && stat -c '%n %F %s %a %h' .spare-* | tr '\n' ' ')" \
	".spare-0 regular empty file 0 600 1 .spare-1 regular empty file 0 600 1 .spare-2 regular empty file 0 600 1 " \
	"... the spare files are empty regular files of mode 0600 with one link"
ino=$(stat -c %i "$spare")
spare_inos=$(stat -c %i "$spare"/.spare-* | sort | tr '\n' ' ')
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c 'echo b > f; echo n > new'
is "$rc:$(cat "$d/p/f"):$(cat "$d/p/new")" "0:b:n" "the next run takes it and applies its changes"
newest=$(ls -d "$S"/runs/*/ | sort | tail -n 1)
is "$(stat -c %i "$newest")" "$ino" "... its run dir is the spare (same inode)"
wait_background
# Its first files are the spare files renamed (no new inode on the run's
# path): p0/root, the meta (its final record appended to the first one,
# in the same file) and report.json.
taken=0
for i in $(stat -c %i "$newest/p0/root" "$newest/meta" "$newest/report.json" | sort -u); do
	case " $spare_inos" in *" $i "*) taken=$((taken + 1)) ;; esac
done
is "$taken" "3" "... p0/root, meta and report.json are the three spare files"
is "$(find "$newest" -maxdepth 1 -name '.spare-*' | wc -l)" "0" "... and none is left"
is "$(grep -c '^end$' "$newest/meta"):$(sed -n 's/^state //p' "$newest/meta" | tr '\n' ' ')" "2:running committed " \
	"... the meta holds the record of the run's start, then its outcome"
is "$(head -c 10 "$newest/p0/root")" "nsrun-root" "... p0/root holds the record"

# The layers a no-op run leaves serve the next run (the same inodes: none
# freed, none made), emptied of what overlayfs left in them; a run that
# changed something leaves a full upper dir, which is never reused.
upper_ino=$(stat -c %i "$spare/p0/upper")
work_ino=$(stat -c %i "$spare/p0/work")
trash_ino=$(stat -c %i "$spare/trash")
# Held open, a dir that is removed keeps its inode number: a new dir
# cannot come back under it by chance.
exec 7<"$spare/p0/upper" 8<"$spare/p0/work" 9<"$spare/trash"
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a no-op run takes the spare"
wait_background
wait_until 30 test -d "$spare/p0/work"
exec 7<&- 8<&- 9<&-
is "$(stat -c %i "$spare/p0/upper"):$(stat -c %i "$spare/p0/work"):$(stat -c %i "$spare/trash")" \
	"$upper_ino:$work_ino:$trash_ino" "... its upper, work and trash dirs are the next spare's"
is "$(find "$spare/p0" "$spare/trash" -mindepth 1 | sort | tr '\n' ' ')" "$spare/p0/upper $spare/p0/work " \
	"... and hold nothing (overlayfs's own work dir is gone)"
is "$(stat -c %a "$spare/p0/upper"):$(stat -c %a "$spare/p0/work")" "755:700" "... with the modes of new ones"
if command -v python3 >/dev/null; then
	is "$(python3 -c 'import os, sys; print(os.listxattr(sys.argv[1]))' "$spare/p0/upper")" "[]" \
		"... and no overlay xattr left on the upper dir"
fi
upper_ino=$(stat -c %i "$spare/p0/upper")
exec 7<"$spare/p0/upper"
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c 'echo c > f; echo m > more'
is "$rc:$(cat "$d/p/more")" "0:m" "a run that changes files"
wait_background
wait_until 30 test -d "$spare/p0/work"
exec 7<&-
check "... its upper dir, which held the changes, is not the next spare's" test "$(stat -c %i "$spare/p0/upper")" != "$upper_ino"
is "$(find "$spare/p0/upper" -mindepth 1 | wc -l)" "0" "... which is empty"

# What is not taken. Each time the run still works, applies nothing it did
# not write, and the planted spare is gone.
plant() { # what to plant, then a run that writes one file
	rm -rf "$spare"
	mkdir -p "$spare/p0/upper" "$spare/p0/work" "$spare/trash"
	chmod 700 "$spare" "$spare/p0" "$spare/p0/work" "$spare/trash"
	"$@"
	ino=$(stat -c %i "$spare")
	# Held open, the planted dir keeps its inode number even once it is
	# removed: a new dir cannot reuse it.
	exec 9<"$spare"
	run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c "echo $1 > mine"
	exec 9<&-
	newest=$(ls -d "$S"/runs/*/ | sort | tail -n 1)
	wait_background
}
plant sh -c "echo planted > '$spare/p0/upper/planted'"
is "$rc:$(cat "$d/p/mine")" "0:sh" "a spare with a file in its upper dir: the run works"
check "... the planted file is not applied to the project" test ! -e "$d/p/planted"
check "... nor taken as the run's dir (another inode)" test "$(stat -c %i "$newest")" != "$ino"
plant sh -c "mkdir '$spare/p0/work/work'"
check "a spare with something in its work dir is not taken" test "$(stat -c %i "$newest")" != "$ino"
plant sh -c "echo x > '$spare/extra'"
check "a spare with an extra entry is not taken" test "$(stat -c %i "$newest")" != "$ino"
plant chmod 770 "$spare/p0"
check "a spare that others may write is not taken" test "$(stat -c %i "$newest")" != "$ino"
plant rmdir "$spare/trash"
check "a spare that lacks a dir is not taken" test "$(stat -c %i "$newest")" != "$ino"
plant sh -c "echo planted > '$spare/.spare-1'"
check "a spare whose spare file holds bytes is not taken" test "$(stat -c %i "$newest")" != "$ino"
check "... the bytes reached no record of the run" sh -c "! grep -rq planted '$newest'"
plant ln -s "$d/victim-file" "$spare/.spare-0"
check "a spare whose spare file is a symlink is not taken" test "$(stat -c %i "$newest")" != "$ino"
check "... nothing was made at the link's target" test ! -e "$d/victim-file"

# Never followed: a symlink planted as the spare.
mkdir -p "$d/victim/p0/upper" "$d/victim/p0/work" "$d/victim/trash"
echo keep >"$d/victim/p0/upper/keep"
rm -rf "$spare"
ln -s "$d/victim" "$spare"
run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- true
is "$rc" 0 "a run with a symlink planted as the spare"
is "$(cat "$d/victim/p0/upper/keep")" "keep" "... the symlink's target is untouched"
check "... and nothing of it reached the project" test ! -e "$d/p/keep"
wait_background

# Two projects: the spare holds one; the run makes its own dir.
mkdir -p "$d/q"
run "$NSRUN" -p "$d/p" -p "$d/q" --state-dir "$S" --quiet -- sh -c "echo 2 > '$d/q/two'"
is "$rc:$(cat "$d/q/two")" "0:2" "a run with two projects works beside a spare"
done_testing
