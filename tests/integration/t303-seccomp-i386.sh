#!/bin/sh
# An i386 binary cannot get around the filters: the same probes as t301,
# built with gcc -m32, against every shipped profile. Then socketcall(2),
# which only i386 has, and whose documented behaviour is that its
# SYS_SOCKET operation is refused outright (its arguments are out of the
# filter's sight).
. "$NSR_TESTS/lib.sh"
. "$NSR_TESTS/seccomp-lib.sh"

PROBE32="$NSR_HELPERS/nsr-sysprobe32"
[ -x "$PROBE32" ] || skip_all "no i386 probe helper: gcc -m32 -static could not link when configure ran (on Debian: apt-get install gcc-multilib, then run configure again)"
"$PROBE32" --list >/dev/null 2>&1 || skip_all "this kernel cannot run i386 binaries (IA32 emulation is off)"

# ELF class 1 (32-bit) and machine 3 (i386).
is "$(od -An -tu1 -j4 -N1 "$PROBE32" | tr -d ' ')" 1 "the helper is a 32-bit ELF file"
is "$(od -An -tu2 -j18 -N2 "$PROBE32" | tr -d ' ')" 3 "the helper is an i386 binary"
run sandbox_probe "$PROBE32" "" --witness mount
is "$out" "mount ENOSYS" "the i386 helper runs in a sandbox"

for profile in $(shipped_profiles); do
	# fallback.policy refuses every socket: checked on its own below.
	[ "$profile" = fallback ] && continue
	check_profile "$PROBE32" "$profile" "i386 $profile"
done

# fallback.policy: socket() and socketcall(SYS_SOCKET) alike fail with
# EACCES, whatever the family; other calls go through.
res=$(sandbox_probe "$PROBE32" fallback --witness socket_unix socket_inet socket_packet socketcall_unix \
	socketcall_packet ioctl_tcgets 2>&1)
for p in socket_unix socket_inet socket_packet socketcall_unix socketcall_packet; do
	is "$(printf '%s\n' "$res" | result_of $p)" EACCES "[i386 fallback] $p refused with EACCES"
done
is "$(printf '%s\n' "$res" | result_of ioctl_tcgets)" ENOSYS "[i386 fallback] ioctl_tcgets is let through"

# socketcall: the direct socket() call stays precise, while socketcall's
# SYS_SOCKET is refused whatever the family.
res=$(sandbox_probe "$PROBE32" default socket_unix socketcall_unix 2>&1)
is "$(printf '%s\n' "$res" | result_of socket_unix)" ok "[i386 default] direct socket(AF_UNIX) works"
is "$(printf '%s\n' "$res" | result_of socketcall_unix)" EAFNOSUPPORT \
	"[i386 default] socketcall(SYS_SOCKET) is refused even for AF_UNIX (documented limit)"
res=$(sandbox_probe "$PROBE32" default --witness socketcall_packet 2>&1)
is "$(printf '%s\n' "$res" | result_of socketcall_packet)" EAFNOSUPPORT \
	"[i386 default] socketcall(SYS_SOCKET) cannot make an AF_PACKET socket"
res=$(sandbox_probe "$PROBE32" "" socketcall_unix 2>&1)
is "$(printf '%s\n' "$res" | result_of socketcall_unix)" ok "[i386 no policy] socketcall(SYS_SOCKET) works (control)"
res=$(sandbox_probe "$PROBE32" permissive socketcall_unix 2>&1)
is "$(printf '%s\n' "$res" | result_of socketcall_unix)" ok "[i386 permissive] no socket rules, so socketcall works"

seccomp_done_testing
