#!/bin/sh
# --allow-host with a real client: npm, against the registry npm is
# configured with (read at run time, never written here), allowed by its
# host name alone; a second registry host is refused and recorded.
. "$NSR_TESTS/lib.sh"
command -v npm >/dev/null 2>&1 || skip_all "npm is not installed"
command -v curl >/dev/null 2>&1 || skip_all "curl is needed to probe the registry"
d=$(scratch)
cd "$d" || exit 1
export HOME="$d"
reg=$(npm config get registry 2>/dev/null)
host=$(printf '%s' "$reg" | sed -E 's#^[a-zA-Z]+://([^/:@]+).*#\1#')
[ -n "$host" ] && [ "$host" != "$reg" ] || skip_all "cannot read the registry from npm config get registry"
curl -sS --max-time 15 -o /dev/null "$reg" 2>/dev/null || skip_all "the npm registry is unreachable from this host"

exec 5>"$d/net.log"
run $NSRUN $BASE --dev /dev --proc /proc --tmpfs /tmp --allow-host "$host" --net-log-fd 5 \
	--setenv npm_config_cache /tmp/npm-cache --setenv npm_config_update_notifier false \
	--setenv npm_config_fund false --setenv npm_config_audit false -- \
	sh -c 'npm view is-number name; echo "rc=$?"; npm view is-number name --registry https://second-registry.invalid/ >/dev/null 2>&1; echo "rc=$?"'
exec 5>&-
is "$(printf '%s\n' "$out" | sed -n 1,2p)" "is-number
rc=0" "npm view through the relay, with only the registry's host allowed"
like "$(printf '%s\n' "$out" | sed -n 3p)" "^rc=[1-9]" "npm against a second host fails"
like "$err" "network: [0-9]+ connections? to 2 hosts, 1 refused: second-registry.invalid:443" "the summary names the refused host"
cat >"$d/check.py" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
host = sys.argv[2]
ok = [r for r in rows if r["host"] == host]
bad = [r for r in rows if r["host"] != host]
print(bool(ok) and all(r["allowed"] and r["protocol"] == "connect" and r["port"] == 443 and r["bytes_down"] > 0 for r in ok))
print([(r["host"], r["port"], r["allowed"], r["reason"]) for r in bad])
PY
is "$(python3 "$d/check.py" "$d/net.log" "$host")" "True
[('second-registry.invalid', 443, False, 'host not in --allow-host')]" "the live log: the registry over CONNECT, the second host refused"
done_testing
