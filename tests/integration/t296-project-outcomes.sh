#!/bin/sh
# Project mode: no silent loss. A failed capture exits 125 and keeps the
# run; bad output targets and writable binds over a project are refused
# before the command starts; hard links and the root's mode survive.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
NS="--state-dir $d/state"
: > "$d/nothing-to-write"

# 1. The project turns unreadable while the command runs (it wrote
# already): the capture fails.
if ! is_root; then
	P=$d/unreadable S=$d/sync; mkdir -p "$P" "$S"; echo a > "$P/a"
	(i=0; while [ ! -e "$S/wrote" ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
	 chmod 000 "$P"; : > "$S/go") &
	run "$NSRUN" -p "$P" $NS --rw "$S" --report "$d/r1.json" -- sh -c 'echo work > new; : > '"$S"'/wrote; i=0
		while [ ! -e '"$S"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done'
	wait
	chmod 755 "$P"
	is "$rc" "125" "a failed capture exits 125"
	like "$(cat "$d/r1.json" 2>/dev/null)" '"outcome": *"failed"' "... the report says failed"
	like "$err" "run [^ ]* kept: the capture failed" "... the run is kept, and nsrun says so"
	run_id=$(printf '%s\n' "$err" | sed -n 's/.*run \([^ ]*\) kept: the capture failed.*/\1/p' | head -1)
	run "$NSRUN" commit $NS "$run_id"
	is "$rc:$(cat "$P/new" 2>/dev/null)" "0:work" "... and once the project is readable, nsrun commit applies the work"
else
	skip "a failed capture" "root reads any project"
fi

# 2. Bad output targets are refused with 125 before the command starts.
P=$d/proj; mkdir -p "$P"
run "$NSRUN" -p "$P" $NS --report "$d/nonexistent/dir/r.json" -- sh -c 'echo x > ran'
is "$rc:$(test -e "$P/ran" && echo ran)" "125:" "--report in a dir that does not exist: 125, and nothing ran"
like "$err" "--report .*nonexistent/dir/r.json: .*No such file or directory" "... with the reason"
run "$NSRUN" -p "$P" $NS --report-fd 9 -- sh -c 'echo x > ran'
is "$rc:$(test -e "$P/ran" && echo ran)" "125:" "a closed --report-fd: 125, and nothing ran"
like "$err" "--report-fd 9: Bad file descriptor" "... with the reason"
run "$NSRUN" -p "$P" $NS --events-fd 9 -- sh -c 'echo x > ran'
is "$rc:$(test -e "$P/ran" && echo ran)" "125:" "a closed --events-fd: 125, and nothing ran"
run "$NSRUN" -p "$P" $NS --report-fd 9 -- sh -c 'echo x > ran' 9<"$d/nothing-to-write"
is "$rc:$(test -e "$P/ran" && echo ran)" "125:" "a --report-fd open only for reading: 125, and nothing ran"
run "$NSRUN" -p "$P" $NS --report "$d/ok.json" -- sh -c 'echo x > ran'
like "$rc:$(cat "$d/ok.json")" '^0:.*"outcome": *"committed"' "a good --report still gets the report"
rm -f "$P/ran"

# 3. Writable binds over a project would write to the host outside the
# transaction: refused, and nothing runs.
echo keep > "$P/f"
for opts in "--bind $P $P" "--rw $P" "--bind / /" "--dev-bind / /" "--bind $d /mnt" "--rw $P/." "--bind $P/sub-none-yet $P"; do
	run "$NSRUN" -p "$P" $NS $opts -- sh -c 'echo changed > f'
	is "$rc:$(cat "$P/f")" "125:keep" "$opts in project mode: refused (125), the project untouched"
done
mkdir -p "$P/sub"
run "$NSRUN" -p "$P" $NS --rw "$P/sub" -- sh -c 'echo x > sub/x'
like "$rc:$err" "^125:.*--rw .*is inside the project" "--rw of a dir inside the project: refused, with the reason"
mkdir -p "$d/cache"
run "$NSRUN" -p "$P" $NS --rw "$d/cache" --bind "$d/cache" /mnt -- sh -c 'echo x > /mnt/y; echo z > f'
is "$rc:$(cat "$d/cache/y"):$(cat "$P/f")" "0:x:z" "writable binds elsewhere still work"

# 4. Hard links: the overlay copies a linked file up alone, so the sandbox
# saw its other names unchanged; the apply does the same and says so.
H=$d/links; mkdir -p "$H"; echo base > "$H/a"; ln "$H/a" "$H/b"
run "$NSRUN" -p "$H" $NS --report "$d/links.json" -- sh -c 'echo x >> a; cat b'
is "$rc:$out:$(cat "$H/a" | tr '\n' ' ')" "0:base:base x " "a hard-linked file changed inside: its name gets the new version"
like "$err" "note: a had other hard links on the host; the new version replaced this name only" "... and the split is reported on stderr"
like "$(cat "$d/links.json")" '"split_hard_links": *\[ *"a" *\]' "... and in the report"

# 5. The project root's own mode shows inside.
M=$d/mode; mkdir -p "$M"; chmod 750 "$M"
run "$NSRUN" -p "$M" $NS -- stat -c %a .
is "$rc:$out" "0:750" "a 0750 project root shows as 0750 inside"
chmod 700 "$M"
run "$NSRUN" -p "$M" $NS -- stat -c %a .
is "$rc:$out" "0:700" "... and a 0700 one as 0700"
chmod 755 "$M"
run "$NSRUN" -p "$M" $NS -- chmod 700 .
like "$err" "1 metadata changed; committed" "chmod 700 . inside is reported, not silent"
is "$(stat -c %a "$M")" "700" "... and applied (t298 tests the root's mode in full)"

# 6. The summary says how much applied when something conflicted.
C=$d/counts S2=$d/sync2; mkdir -p "$C" "$S2"; echo 1 > "$C/f1"; echo 2 > "$C/f2"
(i=0; while [ ! -e "$S2/ready" ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
 echo host >> "$C/f1"; : > "$S2/go") &
run "$NSRUN" -p "$C" $NS --rw "$S2" -- sh -c ': > '"$S2"'/ready; i=0
	while [ ! -e '"$S2"'/go ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done; echo in >> f1; echo in >> f2'
wait
like "$err" "2 modified; conflict, 1 of 2 applied" "a conflict on one of two files: the summary says 1 of 2 applied"
is "$(tail -1 "$C/f1"):$(tail -1 "$C/f2")" "host:in" "... which is what happened"
done_testing
