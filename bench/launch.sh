#!/bin/sh
# Launch cost: nsrun against /usr/bin/bwrap and the bare unshare(1) floor, on
# the same argv, side by side in one hyperfine run so that the ratios survive
# a noisy machine. Runs as an unprivileged user (the product's real path):
# as root it switches to $NSR_BENCH_USER (created if missing).
#   bench/launch.sh [--nsrun PATH] [--runs N] [--json FILE]
set -eu
nsrun=${NSRUN:-src/nsrun}
runs=200
json=
while [ $# -gt 0 ]; do
	case $1 in
	--nsrun) nsrun=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	*) echo "usage: $0 [--nsrun PATH] [--runs N] [--json FILE]" >&2; exit 2 ;;
	esac
done
command -v hyperfine >/dev/null || { echo "bench: hyperfine is not installed (apt-get install hyperfine)" >&2; exit 1; }
[ -x /usr/bin/bwrap ] || { echo "bench: /usr/bin/bwrap is missing (apt-get install bubblewrap)" >&2; exit 1; }

stage=$(mktemp -d /tmp/nsrun-bench.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
cp "$nsrun" "$stage/nsrun"
chmod 0755 "$stage/nsrun"
out=${json:-$stage/launch.json}

as_user=
if [ "$(id -u)" -eq 0 ]; then
	user=${NSR_BENCH_USER:-nsrun-test}
	id "$user" >/dev/null 2>&1 || useradd -m -s /bin/sh "$user"
	as_user="setpriv --reuid=$user --regid=$user --init-groups"
	touch "$out" && chown "$user" "$out"
fi

minimal="--ro-bind / / -- /bin/true"
full="--ro-bind / / --unshare-all --dev /dev --proc /proc --die-with-parent --new-session -- /bin/true"
# shellcheck disable=SC2086
$as_user hyperfine -N --warmup 20 --runs "$runs" --export-json "$out" \
	-n "nsrun minimal" "$stage/nsrun $minimal" \
	-n "bwrap minimal" "/usr/bin/bwrap $minimal" \
	-n "nsrun full" "$stage/nsrun $full" \
	-n "bwrap full" "/usr/bin/bwrap $full" \
	-n "unshare floor" "unshare -Urmpinuf --mount-proc /bin/true"

python3 - "$out" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
med = lambda n: r[n]["median"] * 1000
print()
print("| case | nsrun median (ms) | bwrap median (ms) | ratio | target |")
print("|---|---|---|---|---|")
for case, target in (("minimal", 0.75), ("full", 0.65)):
    a, b = med("nsrun " + case), med("bwrap " + case)
    print(f"| {case} | {a:.2f} | {b:.2f} | {a/b:.2f} | <= {target} {'met' if a/b <= target else 'NOT met'} |")
f = med("unshare floor")
print(f"| full vs unshare floor ({f:.2f} ms) | {med('nsrun full'):.2f} | | {med('nsrun full')/f:.2f} | <= 1.3 |")
PY
