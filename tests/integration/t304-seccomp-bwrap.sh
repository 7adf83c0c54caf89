#!/bin/sh
# "nsrun seccomp compile" exports BPF that real bubblewrap loads with
# --seccomp FD, and that program denies exactly what nsrun's own
# --seccomp-policy denies.
. "$NSR_TESTS/lib.sh"
. "$NSR_TESTS/seccomp-lib.sh"

BWRAP=/usr/bin/bwrap
[ -x "$BWRAP" ] || skip_all "bubblewrap is not installed at $BWRAP"
run $BWRAP $SBX -- true
[ "$rc" -eq 0 ] || skip_all "$BWRAP cannot build a sandbox here: $err"

d=$(scratch)
danger=$(dangerous_probes "$PROBE")
witness= plain=
while read -r p sc e; do
	[ -n "$p" ] || continue
	[ "$NSR_WHO" = root ] && printf '%s\n' $danger | grep -qx "$p" && continue
	if [ "$e" = ENOSYS ]; then plain="$plain $p"; else witness="$witness $p"; fi
done <<EOF2
$PROBES_DENY
EOF2

for profile in $(shipped_profiles); do
	run $NSRUN seccomp compile "$profile" -o "$d/$profile.bpf"
	is "$rc" 0 "[$profile] compiles to $d/$profile.bpf"
	via_bwrap=$($BWRAP $SBX --seccomp 3 -- "$PROBE" --witness $witness $PROBES_PASS 3<"$d/$profile.bpf" 2>&1)
	via_nsrun=$(sandbox_probe "$PROBE" "$profile" --witness $witness $PROBES_PASS 2>&1)
	is "$via_bwrap" "$via_nsrun" "[$profile] bwrap --seccomp with the exported program denies what nsrun denies"
	via_bwrap=$($BWRAP $SBX --seccomp 3 -- "$PROBE" $plain 3<"$d/$profile.bpf" 2>&1)
	via_nsrun=$(sandbox_probe "$PROBE" "$profile" $plain 2>&1)
	is "$via_bwrap" "$via_nsrun" "[$profile] the same for the calls denied with ENOSYS"
	# nsrun's bwrap-compatible --seccomp FD takes the same file.
	via_fd=$($NSRUN $SBX --seccomp 3 -- "$PROBE" --witness $witness $PROBES_PASS 3<"$d/$profile.bpf" 2>&1)
	is "$via_fd" "$(sandbox_probe "$PROBE" "$profile" --witness $witness $PROBES_PASS 2>&1)" \
		"[$profile] nsrun --seccomp FD with the exported program matches --seccomp-policy"
done

# The comparison above would also hold if nothing were denied at all.
res=$($BWRAP $SBX --seccomp 3 -- "$PROBE" --witness ioctl_tiocsti mount socket_packet 3<"$d/default.bpf" 2>&1)
is "$res" "ioctl_tiocsti EPERM
mount EPERM
socket_packet EAFNOSUPPORT" "[default] under bwrap, TIOCSTI, mount and AF_PACKET are denied"

# The exported program covers i386 too.
if [ -x "$NSR_HELPERS/nsr-sysprobe32" ] && "$NSR_HELPERS/nsr-sysprobe32" --list >/dev/null 2>&1; then
	res=$($BWRAP $SBX --seccomp 3 -- "$NSR_HELPERS/nsr-sysprobe32" --witness ioctl_tiocsti mount socket_packet 3<"$d/default.bpf" 2>&1)
	is "$res" "ioctl_tiocsti EPERM
mount EPERM
socket_packet EAFNOSUPPORT" "[default] under bwrap, an i386 program is denied the same calls"
else
	skip "[default] under bwrap, an i386 program is denied the same calls" "no runnable i386 probe helper (gcc-multilib)"
fi

rm -rf "$d"
seccomp_done_testing
