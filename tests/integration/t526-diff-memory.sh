#!/bin/sh
# issue 12.6: nsrun diff runs in linear space. A new 1 MB text file and a
# 1 MB file with scattered changes diff in under 50 MB of RSS and a second
# of CPU time; the plain O(ND)-space algorithm took gigabytes here. The
# diff must also be right: patch(1) turns the old files into the new ones.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
[ -x /usr/bin/time ] || { echo "1..0 # SKIP /usr/bin/time (GNU time) is missing"; exit 77; }
d=$(scratch)
P=$d/p
mkdir -p "$P"
python3 - "$P" <<'PY'
import random, sys
random.seed(12)
lines = ['line %d %08x some words to fill a line of a source file\n' % (i, random.getrandbits(32)) for i in range(17000)]
open(sys.argv[1] + '/changed.txt', 'w').write(''.join(lines))
PY
cp "$P/changed.txt" "$d/changed.orig"
sleep 0.05
run "$NSRUN" -p "$P" --state-dir "$d/state" --keep -- python3 -c '
import random
random.seed(34)
l = open("changed.txt").read().splitlines(True)
for i in range(0, len(l), 37): l[i] = "changed %d\n" % i
for i in range(100, len(l), 500): l.insert(i, "inserted %d\n" % i)
del l[5000:5100]
open("changed.txt", "w").write("".join(l))
open("new.txt", "w").write("".join("new line %d %08x of a brand new file of about a megabyte\n" % (i, random.getrandbits(32)) for i in range(17000)))
'
kept=$(echo "$err" | sed -n 's/.*run \([0-9A-Za-z.-]*\) kept.*/\1/p' | head -1)
like "$kept" '^[0-9]{8}T' "a run with a new and a changed 1 MB file is kept"
cp "$d/state/runs/$kept/p0/upper/changed.txt" "$d/changed.new"
cp "$d/state/runs/$kept/p0/upper/new.txt" "$d/new.new"

# A cap on the address space, so that a regression fails here instead of
# eating the machine's memory.
# The 1 GiB address-space cap stands for "the old diff aborts"; AddressSanitizer
# reserves terabytes of shadow and cannot start under it, so a sanitizer build
# is held to the RSS bound below only.
vlimit="ulimit -v 1048576"
ldd "$NSRUN" 2>/dev/null | grep -q libasan && vlimit=:
( $vlimit; /usr/bin/time -o "$d/time" -f '%M %U %S' "$NSRUN" diff --state-dir "$d/state" "$kept" >"$d/diff" 2>"$d/err" )
is "$?" 0 "nsrun diff succeeds"
# GNU time's last line holds the numbers ("Command terminated..." comes first).
set -- $(tail -n 1 "$d/time") x x x
case "$1$2$3" in *[!0-9.]*) rss=999999 user=9 sys=9 ;; *) rss=$1 user=$2 sys=$3 ;; esac
diag "nsrun diff: max RSS ${rss:-?} KB, CPU ${user:-?} s user + ${sys:-?} s sys"
check "... in under 50 MB of RSS (${rss:-?} KB)" test "${rss:-999999}" -lt 51200
check "... and under a second of CPU time" python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) + float(sys.argv[2]) < 1.0 else 1)" "${user:-9}" "${sys:-9}"
unlike "$(cat "$d/diff")" 'too many differences|too large' "both files get a real diff"

# The diff is right.
if command -v patch >/dev/null 2>&1; then
	mkdir -p "$d/apply/a" "$d/apply/b"
	cp "$d/changed.orig" "$d/apply/changed.txt"
	( cd "$d/apply" && patch -s -p1 < "$d/diff" ) >/dev/null 2>&1
	check "patch(1) turns the old file into the new one with it" cmp -s "$d/apply/changed.txt" "$d/changed.new"
	check "... and makes the new file" cmp -s "$d/apply/new.txt" "$d/new.new"
else
	skip "the diff applies" "patch(1) is missing"
fi

rm -rf "$d"
done_testing
