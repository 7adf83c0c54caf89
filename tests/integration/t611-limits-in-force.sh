#!/bin/sh
# "Tightening only" against the value in force (issue 23, item 2): a line of
# a file the sandbox can write (.nsrun/profile) is compared with the value
# in force once the built-in defaults, the config files, the profiles and
# the command line are counted, not only with earlier files; a lower line
# holds against the command line; and a value above what the host has
# (pid_max, RAM, the caller's hard rlimit) is refused wherever it is
# written, the command line included.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/proj
mkdir -p "$P/.nsrun" "$d/cfg/nsrun" "$d/m"
export XDG_CONFIG_HOME="$d/cfg"
NS="--state-dir $d/state"
[ -n "${HOME:-}" ] && [ -d "$HOME" ] || skip_all "needs a HOME"

# refused LINE PATTERN DESC: .nsrun/profile holding LINE stops the run before
# the command (exit 125, the reason on stderr, no marker written).
refused() {
	printf '%s\n' "$1" > "$P/.nsrun/profile"
	rm -f "$d/m/ran"
	run "$NSRUN" -p "$P" $NS --rw "$d/m" -q -- sh -c "touch '$d/m/ran'"
	if [ "$rc" = 125 ] && [ ! -e "$d/m/ran" ] && printf '%s\n' "$err" | grep -Eq -- "$2"; then ok "$3"
	else not_ok "$3"; diag "rc=$rc ran=$([ -e "$d/m/ran" ] && echo yes || echo no)" "err: $err"; fi
}

# ---- against the built-in defaults --------------------------------------------
refused "kill-after 1h" \
	"profile:1: --kill-after 1h would loosen --kill-after 5s, the value in force" \
	".nsrun/profile: kill-after 1h is above the built-in 5s: refused"
refused "pids 5000" "--pids 5000 would loosen --pids 4096" \
	".nsrun/profile: pids 5000 is above the built-in 4096: refused"
ram=$(awk '/^MemTotal:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo)
half=$((ram / 2))
refused "tmp-size $half" "--tmp-size $half would loosen --tmp-size" \
	".nsrun/profile: tmp-size of half the RAM is above the built-in quarter: refused"
refused "tmp-size 1T" "--tmp-size|above" ".nsrun/profile: tmp-size 1T is refused"
refused "snapshot-limit 2G" "--snapshot-limit 2G would loosen" \
	".nsrun/profile: snapshot-limit above the built-in 1G: refused"
refused "rlimit core=1M" "--rlimit core=1M would loosen core's soft limit 0" \
	".nsrun/profile: rlimit core above the built-in 0: refused"
refused "backup-limit 1" "undo history" ".nsrun/profile: backup-limit is the caller's: refused, saying why"

# ---- lower lines apply, against the command line too ----------------------------
printf 'rlimit nofile=100\n' > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -q -- sh -c 'ulimit -n'
is "$rc:$out" "0:100" ".nsrun/profile: a lower rlimit applies"
printf 'on-conflict fail\n' > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -q -- true
is "$rc" 0 ".nsrun/profile: a stricter on-conflict applies"

printf 'timeout 1\nkill-after 1\n' > "$P/.nsrun/profile"
t0=$(date +%s)
run "$NSRUN" -p "$P" $NS -q --timeout 1h --kill-after 1h -- sleep 20
t1=$(date +%s)
if [ "$rc" = 124 ] && [ $((t1 - t0)) -lt 15 ]; then ok "timeout 1 in .nsrun/profile holds against --timeout 1h"
else not_ok "timeout 1 in .nsrun/profile holds against --timeout 1h"; diag "rc=$rc after $((t1 - t0))s" "$err"; fi

printf 'home ro\n' > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -q --home overlay -- sh -c 'touch ~/.nsr-t611 2>/dev/null && echo wrote || echo refused'
is "$rc:$out" "0:refused" "home ro in .nsrun/profile holds against --home overlay"

printf 'timeout 1h\n' > "$P/.nsrun/profile"
run "$NSRUN" -p "$P" $NS -q --timeout 1 --kill-after 1 -- sleep 20
is "$rc" 124 "a higher line leaves the command line's stricter --timeout 1 alone"
rm -f "$P/.nsrun/profile"

# ---- host bounds, whoever writes them ---------------------------------------------
pid_max=$(cat /proc/sys/kernel/pid_max)
over=$((pid_max + 1))
if [ "$over" -le 4194304 ]; then
	run "$NSRUN" -p "$P" $NS -q --pids "$over" -- true
	like "$rc:$err" "^125:.*--pids $over is above $pid_max, this host's pid_max" \
		"--pids above pid_max is refused on the command line"
	printf 'pids %s\n' "$over" > "$d/cfg/nsrun/config"
	run "$NSRUN" -p "$P" $NS -q -- true
	like "$rc:$err" "^125:.*config:1: --pids $over is above $pid_max" "... and in the user's config"
	rm -f "$d/cfg/nsrun/config"
else
	skip "--pids above pid_max" "pid_max is $pid_max: no value above it that --pids takes"
	skip "... in the user's config" "pid_max is $pid_max"
fi
big=$((ram + 1048576))
run "$NSRUN" -p "$P" $NS -q --tmp-size "$big" -- true
like "$rc:$err" "^125:.*--tmp-size $big is above $ram, the bytes of RAM" "--tmp-size above the RAM is refused"
run "$NSRUN" -p "$P" $NS -q --memory "$big" -- true
like "$rc:$err" "^125:.*--memory $big is above $ram" "--memory above the RAM is refused, before any cgroup"
hard=$(sh -c 'ulimit -Hn')
if [ "$hard" != unlimited ]; then
	run "$NSRUN" -p "$P" $NS -q --rlimit "nofile=$((hard + 1))" -- true
	like "$rc:$err" "^125:.*--rlimit nofile: $((hard + 1)) is above your hard limit \\($hard\\)" \
		"--rlimit above the caller's hard limit is refused before the run"
	run "$NSRUN" $BASE --rlimit "nofile=unlimited" -- true
	like "$rc:$err" "^1:.*--rlimit nofile: unlimited is above your hard limit" "... outside project mode too (a parse error there: exit 1)"
else
	skip "--rlimit above the caller's hard limit" "the hard limit of open files is unlimited here"
	skip "... outside project mode too" "the hard limit of open files is unlimited here"
fi
done_testing
