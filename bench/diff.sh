#!/bin/sh
# nsrun diff against GNU diff -u on the same 1 MB files, side by side in one
# hyperfine run (so the ratio survives a noisy machine), plus each one's
# peak RSS from GNU time. Two cases: a new 1 MB file (every line inserted)
# and a 1 MB file with scattered changes. A benchmark, not a test.
#
#   bench/diff.sh [NSRUN]        (default: ./src/nsrun, then nsrun on PATH)
set -eu
nsrun=${1:-}
[ -n "$nsrun" ] || { [ -x ./src/nsrun ] && nsrun=./src/nsrun || nsrun=$(command -v nsrun); }
nsrun=$(realpath "$nsrun")
here=$(cd "$(dirname "$0")" && pwd)
export NSRUN_DATADIR="${NSRUN_DATADIR:-$(dirname "$here")}"
for t in hyperfine python3 diff /usr/bin/time; do
	command -v "$t" >/dev/null 2>&1 || { echo "bench/diff.sh: $t is missing" >&2; exit 1; }
done
d=$(mktemp -d "${TMPDIR:-/tmp}/nsrun-diffbench.XXXXXX")
trap 'rm -rf "$d"' EXIT INT TERM
mkdir -p "$d/p"
python3 - "$d" <<'PY'
import random, sys
d = sys.argv[1]
random.seed(1)
lines = ['line %d %08x some words to fill a line of a source file\n' % (i, random.getrandbits(32)) for i in range(17000)]
open(d + '/p/changed.txt', 'w').write(''.join(lines))
open(d + '/changed.orig', 'w').write(''.join(lines))
PY
"$nsrun" -p "$d/p" --state-dir "$d/state" --keep -q -- python3 -c '
import random
random.seed(2)
l = open("changed.txt").read().splitlines(True)
for i in range(0, len(l), 37): l[i] = "changed %d\n" % i
for i in range(100, len(l), 500): l.insert(i, "inserted %d\n" % i)
open("changed.txt", "w").write("".join(l))
open("new.txt", "w").write("".join("new line %d %08x of a brand new file\n" % (i, random.getrandbits(32)) for i in range(24000)))
' 2>"$d/keep.err"
run=$(sed -n 's/.*run \([0-9A-Za-z.-]*\) kept.*/\1/p' "$d/keep.err" | head -1)
[ -n "$run" ] || { cat "$d/keep.err" >&2; exit 1; }
up=$d/state/runs/$run/p0/upper
: > "$d/empty"
ls -l "$up/new.txt" "$up/changed.txt" | awk '{ print "# " $5 " bytes  " $NF }'

# nsrun diff does both files in one call; diff -u gets the same two pairs.
ref="diff -u $d/changed.orig $up/changed.txt >/dev/null; diff -u $d/empty $up/new.txt >/dev/null; true"
ours="$nsrun diff --state-dir $d/state $run >/dev/null"
hyperfine -N --warmup 3 --runs "${RUNS:-30}" --export-json "$d/h.json" -n "diff -u" "sh -c '$ref'" \
	-n "nsrun diff" "sh -c '$ours'" >/dev/null
rss() { /usr/bin/time -f %M sh -c "$1" 2>&1 >/dev/null | tail -n 1; }
python3 - "$d/h.json" "$(rss "$ref")" "$(rss "$ours")" <<'PY'
import json, sys
r = {x['command']: x for x in json.load(open(sys.argv[1]))['results']}
ref, ours = r['diff -u'], r['nsrun diff']
print('| | median | peak RSS |')
print('|---|---|---|')
print('| diff -u (GNU diffutils) | %.1f ms | %s KB |' % (ref['median'] * 1e3, sys.argv[2]))
print('| nsrun diff | %.1f ms | %s KB |' % (ours['median'] * 1e3, sys.argv[3]))
print('ratio nsrun diff / diff -u: time %.2f, RSS %.2f' % (ours['median'] / ref['median'], int(sys.argv[3]) / int(sys.argv[2])))
PY
