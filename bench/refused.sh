#!/bin/sh
# The cost of the refused-call record (a seccomp listener answered by the
# monitor): project-mode runs with and without it (NSRUN_TEST_NO_REFUSED_RECORD,
# so the binary must be built with --enable-test-hooks), side by side in one
# hyperfine run per workload:
#   - build: cc compiles a small file 8 times (no refused call);
#   - refused: 10,000 refused mount(2) calls from one process.
# As root it switches to $NSR_BENCH_USER (nsrun-test).
#   bench/refused.sh [--nsrun PATH] [--runs N]
set -eu
nsrun=${NSRUN:-src/nsrun}
runs=20
while [ $# -gt 0 ]; do
	case $1 in
	--nsrun) nsrun=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	*) echo "usage: $0 [--nsrun PATH] [--runs N]" >&2; exit 2 ;;
	esac
done
command -v hyperfine >/dev/null || { echo "bench: hyperfine is not installed" >&2; exit 1; }
command -v cc >/dev/null || { echo "bench: no C compiler for the build workload" >&2; exit 1; }
srcdir=$(cd "$(dirname "$0")/.." && pwd)

stage=$(mktemp -d /tmp/nsrun-bench.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
cp "$nsrun" "$stage/nsrun"
cp -r "$srcdir/seccomp" "$srcdir/profiles" "$stage/"
mkdir -p "$stage/proj"
cat > "$stage/proj/x.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { return strcmp(*(char **) a, *(char **) b); }
int main(int argc, char **argv) { qsort(argv, (size_t) argc, sizeof(char *), cmp); for (int i = 0; i < argc; i++) puts(argv[i]); return 0; }
C
cat > "$stage/proj/refuse.py" <<'PY'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for i in range(10000):
    libc.syscall(165, 0, 0, 0, 0, 0)
PY
chmod -R a+rX "$stage"

as_user=
if [ "$(id -u)" -eq 0 ]; then
	user=${NSR_BENCH_USER:-nsrun-test}
	id "$user" >/dev/null 2>&1 || useradd -m -s /bin/sh "$user"
	as_user="setpriv --reuid=$user --regid=$user --init-groups"
	# The integration harness kills what the test user leaves running:
	# take its lock, as a test run does.
	exec 9>"/tmp/nsrun-test-user.$user.lock"
	flock 9
	mkdir -p "$stage/state"
	chown -R "$user" "$stage/proj" "$stage/state"
	touch "$stage/build.json" "$stage/refuse.json"
	chown "$user" "$stage/build.json" "$stage/refuse.json"
fi
run="env NSRUN_DATADIR=$stage $stage/nsrun -p $stage/proj --state-dir $stage/state --discard -q --"
build="sh -c 'for i in 1 2 3 4 5 6 7 8; do cc -O2 -c x.c -o /tmp/x\$i.o; done'"
# Check first that the build makes no refused call.
$as_user sh -c "$run $build" 2>&1 | grep "refused" && echo "bench: the build workload makes refused calls" >&2
for w in build refuse; do
	if [ $w = build ]; then cmd=$build; else cmd="python3 refuse.py"; fi
	$as_user hyperfine -N --warmup 2 --runs "$runs" --export-json "$stage/$w.json" \
		-n "$w, with the record" "$run $cmd" \
		-n "$w, without" "env NSRUN_TEST_NO_REFUSED_RECORD=1 $run $cmd" >/dev/null
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
on, off = r[0]["median"], r[1]["median"]
print("%-8s with the record %.1f ms, without %.1f ms: ratio %.3f" % (sys.argv[2], on * 1000, off * 1000, on / off))' "$stage/$w.json" "$w"
done
