#!/bin/sh
# issue 23.8: one memory budget for all of a sandbox's tmpfs. /tmp,
# /var/tmp, /dev/shm, the home layer and /run/user/N share one total
# (--tmp-size, default a quarter of the RAM): each with a cap of its own,
# together they would reach the whole RAM. Filling the budget is ENOSPC
# inside, and so is making more inodes than it allows.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
P=$d/p
S=$d/state
NS="--state-dir $S"
mkdir -p "$P"

# Each place gets as much as it takes, up to 24M; the sizes in KiB and
# dd's complaint are printed. The home layer is written where $HOME is.
fill='for f in /tmp/big /var/tmp/big /dev/shm/big "$XDG_RUNTIME_DIR/big" "$HOME/big"; do
	e=$(dd if=/dev/zero of="$f" bs=1M count=24 2>&1 | grep -c "No space left on device")
	echo "$(($(stat -c %s "$f") / 1024)) $e"
done'
run "$NSRUN" -p "$P" $NS --discard -q --tmp-size 32M -- sh -c "$fill"
is "$rc" 0 "a run that fills its tmpfs still ends normally"
total=0 nospc=0 lines=0
while read -r kib e; do
	total=$((total + kib)); nospc=$((nospc + e)); lines=$((lines + 1))
done <<EOF
$out
EOF
is "$lines" 5 "all five places were written (/tmp, /var/tmp, /dev/shm, /run/user/N, the home layer)"
if [ "$total" -le $((32 * 1024)) ]; then ok "together they hold at most --tmp-size 32M (${total}K written)"
else not_ok "together they hold at most --tmp-size 32M (${total}K written)"; diag "$out"; fi
if [ "$nospc" -ge 4 ]; then ok "filling the shared budget is ENOSPC inside ($nospc of 5 writes)"
else not_ok "filling the shared budget is ENOSPC inside ($nospc of 5 writes)"; diag "$out"; fi

# What /tmp holds counts against /var/tmp at once (one superblock).
run "$NSRUN" -p "$P" $NS --discard -q --tmp-size 32M -- sh -c \
	'dd if=/dev/zero of=/tmp/a bs=1M count=20 2>/dev/null; df -k /var/tmp /dev/shm "$XDG_RUNTIME_DIR" | awk "NR > 1 {print \$4}" | tr "\n" " "'
set -- $out
all_low=1
for a in "$@"; do [ "$a" -le $((13 * 1024)) ] || all_low=0; done
if [ $# -eq 3 ] && [ "$all_low" -eq 1 ]; then ok "20M in /tmp leaves at most 12M for /var/tmp, /dev/shm and /run/user/N ($*)"
else not_ok "20M in /tmp leaves at most 12M for /var/tmp, /dev/shm and /run/user/N ($*)"; fi

# The default total: a quarter of the RAM, for all of them together.
run "$NSRUN" -p "$P" $NS --discard -q -- sh -c \
	'for m in /tmp /var/tmp /dev/shm "$XDG_RUNTIME_DIR"; do stat -c %d "$m"; done | sort -u | wc -l; df -k /tmp | awk "NR == 2 {print \$2}"'
set -- $out
is "${1:-}" 1 "without --tmp-size, /tmp, /var/tmp, /dev/shm and /run/user/N are one file system"
ram=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
if [ -n "${2:-}" ] && [ "$2" -le $((ram / 4 + 4)) ]; then ok "... of a quarter of the RAM (${2}K of ${ram}K)"
else not_ok "... of a quarter of the RAM (${2:-?}K of ${ram}K)"; fi

# Inodes cost kernel memory the size does not count: bounded too.
run "$NSRUN" -p "$P" $NS --discard -q --tmp-size 64M -- sh -c \
	'i=0; while [ $i -lt 40000 ] && true 2>/dev/null >"/tmp/f$i"; do i=$((i + 1)); done; echo $i; true >/tmp/last'
set -- $out
if [ -n "${1:-}" ] && [ "$1" -lt 40000 ]; then ok "making empty files stops at an inode bound ($1 with --tmp-size 64M)"
else not_ok "making empty files stops at an inode bound (${1:-?} with --tmp-size 64M)"; fi
like "$err" "No space left on device" "... with ENOSPC"

# Still an ordinary /tmp: modes, and a normal run works.
run "$NSRUN" -p "$P" $NS --discard -q -- sh -c 'stat -c %a "$XDG_RUNTIME_DIR"; echo hi > /tmp/x && cat /tmp/x'
is "$out" "700
hi" "/run/user/N keeps mode 0700 and /tmp works"

# A DNS answerer's resolv.conf lives in the shared tmpfs only when that
# is 1 MiB or more: the smallest budget is still the command's whole.
run "$NSRUN" -p "$P" $NS --discard -q --tmp-size 4k --allow-host 127.0.0.1:9 -- sh -c \
	'grep -c "^nameserver" /etc/resolv.conf; head -c 4096 /dev/zero >/tmp/page && stat -c %s /tmp/page'
is "$rc:$out" "0:1
4096" "--tmp-size 4k with --allow-host: /tmp still holds its one page"
run "$NSRUN" -p "$P" $NS --discard -q --tmp-size 2M --allow-host 127.0.0.1:9 -- sh -c \
	'grep -c "^nameserver" /etc/resolv.conf; df -k /tmp | awk "NR == 2 {print \$3}"'
is "$rc:$out" "0:1
$(($(getconf PAGESIZE) / 1024))" "--tmp-size 2M with --allow-host: resolv.conf takes one page of it"

# The trace says so: bwrap has no way to share one size.
run "$NSRUN" --trace-bwrap -p "$P" $NS --tmp-size 32M -- true
like "$out$err" "nsrun-only: the tmpfs of --tmpfs, --dev and --tmp-overlay with --size 33554432 are dirs of one tmpfs" \
	"--trace-bwrap names the shared budget"

rm -rf "$d"
done_testing
