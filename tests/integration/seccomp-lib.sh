# Shared by the t30x-seccomp tests (sourced after lib.sh; not a test itself).
#
# Shipped policies are found through NSRUN_DATADIR, as in an uninstalled
# build; the compile cache goes to a scratch dir so a test never sees (or
# leaves) entries in the real home.
export NSRUN_DATADIR="$NSR_STAGE"
SECCOMP_CACHE=$(scratch)
export XDG_CACHE_HOME="$SECCOMP_CACHE"
trap 'rm -rf "$SECCOMP_CACHE"' EXIT

# The sandbox every probe runs in.
SBX="--ro-bind / / --dev /dev --proc /proc --unshare-pid"

PROBE="$NSR_HELPERS/nsr-sysprobe"

# Every probe that some shipped rule is meant to stop:
#   PROBE  SYSTEM-CALL  ERRNO-THE-RULE-GIVES
# Each shipped deny rule must have a probe here; t301 checks that.
PROBES_DENY='
reboot reboot EPERM
kexec_load kexec_load EPERM
kexec_file_load kexec_file_load EPERM
init_module init_module EPERM
finit_module finit_module EPERM
delete_module delete_module EPERM
swapon swapon EPERM
swapoff swapoff EPERM
acct acct EPERM
quotactl quotactl EPERM
quotactl_fd quotactl_fd EPERM
syslog syslog EPERM
bpf bpf EPERM
perf_event_open perf_event_open EPERM
userfaultfd userfaultfd EPERM
add_key add_key ENOSYS
request_key request_key ENOSYS
keyctl keyctl ENOSYS
io_uring_setup io_uring_setup ENOSYS
io_uring_enter io_uring_enter ENOSYS
io_uring_register io_uring_register ENOSYS
open_by_handle_at open_by_handle_at EPERM
modify_ldt modify_ldt EPERM
uselib uselib EPERM
personality_exec personality EPERM
personality_norandom personality EPERM
personality_exec_high personality EPERM
ioctl_tiocsti ioctl EPERM
ioctl_tiocsti_high ioctl EPERM
ioctl_tioclinux ioctl EPERM
socket_packet socket EAFNOSUPPORT
socket_packet_high socket EAFNOSUPPORT
socket_alg socket EAFNOSUPPORT
socket_vsock socket EAFNOSUPPORT
socket_bluetooth socket EAFNOSUPPORT
socket_key socket EAFNOSUPPORT
socket_family_99 socket EAFNOSUPPORT
socket_netlink_audit socket EAFNOSUPPORT
mount mount EPERM
umount umount EPERM
umount2 umount2 EPERM
pivot_root pivot_root EPERM
move_mount move_mount EPERM
open_tree open_tree EPERM
open_tree_attr open_tree_attr EPERM
fsopen fsopen EPERM
fsmount fsmount EPERM
fsconfig fsconfig EPERM
fspick fspick EPERM
mount_setattr mount_setattr EPERM
setns setns EPERM
unshare_user unshare EPERM
clone_user clone EPERM
clone3 clone3 ENOSYS
ptrace ptrace EPERM
process_vm_readv process_vm_readv EPERM
process_vm_writev process_vm_writev EPERM
prlimit64_other prlimit64 EPERM
sched_setaffinity_other sched_setaffinity EPERM
sched_setparam_other sched_setparam EPERM
sched_setscheduler_other sched_setscheduler EPERM
sched_setattr_other sched_setattr EPERM
migrate_pages_other migrate_pages EPERM
move_pages_other move_pages EPERM
get_robust_list_other get_robust_list EPERM
setpriority_other setpriority EPERM
setpriority_user setpriority EPERM
ioprio_set_other ioprio_set EPERM
ioprio_set_user ioprio_set EPERM
pidfd_open pidfd_open ENOSYS
pidfd_getfd pidfd_getfd ENOSYS
process_madvise process_madvise ENOSYS
process_mrelease process_mrelease ENOSYS
kcmp kcmp EPERM
'

# Calls the same rules must let through (the harmless personality values,
# unix/inet/netlink-route sockets, unshare without a user namespace, other
# ioctls), including with garbage in the upper half of int arguments.
PROBES_PASS='ioctl_tcgets socket_unix socket_unix_high socket_inet socket_inet6 socket_netlink_route
socket_netlink_route_high personality_linux personality_linux32 personality_query unshare_none
prlimit64_self sched_setaffinity_self setpriority_self ioprio_set_self'

# policy_denies FILE: the system calls FILE's deny rules name, includes
# followed the way nsrun follows them for shipped policies.
policy_denies() {
	while read -r _kw _name _rest; do
		case $_kw in
		deny) echo "$_name" ;;
		include) policy_denies "$(dirname "$1")/$_name.policy" ;;
		esac
	done < "$1"
}

# sandbox_probe BIN POLICY ARGS...: runs BIN ARGS in the sandbox, with
# --seccomp-policy POLICY unless POLICY is empty; prints BIN's output.
sandbox_probe() {
	_bin=$1 _pol=$2
	shift 2
	if [ -n "$_pol" ]; then
		$NSRUN $SBX --seccomp-policy "$_pol" -- "$_bin" "$@"
	else
		$NSRUN $SBX -- "$_bin" "$@"
	fi
}

# result_of NAME < RESULTS: the result printed for probe NAME.
result_of() {
	awk -v n="$1" '$1 == n { print $2; found = 1 } END { if (!found) print "missing" }'
}

# The shipped profiles, in a stable order.
shipped_profiles() {
	(cd "$NSR_SECCOMP_DIR" && ls) | sed -n 's/\.policy$//p' | LC_ALL=C sort
}

# nsrun's monitor returns as soon as the sandbox's pid 1 has reported the
# command's status, as bwrap does, so pid 1 ends as an orphan that the host's
# init reaps. Some inits (this CI's among them) reap only every second or
# so, and the harness counts a not-yet-reaped zombie as a process left
# behind. Wait a little for ours to go before finishing.
seccomp_done_testing() {
	_i=0
	while [ $_i -lt 50 ] && ps -u "$(id -u)" -o stat= 2>/dev/null | grep -q '^Z'; do
		sleep 0.2
		_i=$((_i + 1))
	done
	done_testing
}

dangerous_probes() {
	"$1" --list | awk '$2 == "dangerous" { print $1 }'
}

# check_profile BIN PROFILE [LABEL]
#
# For every probe: when PROFILE (with its includes) has a deny rule for the
# probe's system call, the call must fail with the rule's errno; otherwise
# the policy must leave it alone.
#
# Probes whose rule errno is not ENOSYS run under the helper's --witness
# filter (see nsr-sysprobe.c): the policy's errno proves the policy denied
# the call, and ENOSYS proves it did not, whatever the kernel would have
# said. The others (rule errno ENOSYS) run plainly and are compared with
# the same call made without any policy, which must give something else.
check_profile() {
	_bin=$1 _profile=$2 _label=${3:-$2}
	_denied=$(policy_denies "$NSR_SECCOMP_DIR/$_profile.policy" | sort -u)
	_danger=$(dangerous_probes "$_bin")
	_witness= _plain=
	while read -r _p _sc _e; do
		[ -n "$_p" ] || continue
		if [ "$NSR_WHO" = root ] && printf '%s\n' $_danger | grep -qx "$_p"; then
			continue
		fi
		if [ "$_e" = ENOSYS ]; then _plain="$_plain $_p"; else _witness="$_witness $_p"; fi
	done <<EOF
$PROBES_DENY
EOF
	_wres=$(sandbox_probe "$_bin" "$_profile" --witness $_witness $PROBES_PASS 2>&1)
	_pres=$(sandbox_probe "$_bin" "$_profile" $_plain 2>&1)
	_pctl=$(sandbox_probe "$_bin" "" $_plain 2>&1)

	while read -r _p _sc _e; do
		[ -n "$_p" ] || continue
		if [ "$NSR_WHO" = root ] && printf '%s\n' $_danger | grep -qx "$_p"; then
			skip "[$_label] $_p" "dangerous calls are tried only as the unprivileged test user"
			continue
		fi
		_is_denied=no
		printf '%s\n' "$_denied" | grep -qx "$_sc" && _is_denied=yes
		if [ "$_e" = ENOSYS ]; then
			_got=$(printf '%s\n' "$_pres" | result_of "$_p")
			_ctl=$(printf '%s\n' "$_pctl" | result_of "$_p")
			if [ "$_got" = unsupported ]; then
				skip "[$_label] $_p" "this call or argument form does not exist on this arch"
			elif [ "$_ctl" = ENOSYS ]; then
				skip "[$_label] $_p" "this kernel answers ENOSYS without any filter"
			elif [ $_is_denied = yes ]; then
				is "$_got" ENOSYS "[$_label] $_sc denied ($_p)"
			else
				is "$_got" "$_ctl" "[$_label] $_sc not denied ($_p)"
			fi
			continue
		fi
		_got=$(printf '%s\n' "$_wres" | result_of "$_p")
		if [ "$_got" = unsupported ]; then
			skip "[$_label] $_p" "this call or argument form does not exist on this arch"
		elif [ $_is_denied = yes ]; then
			is "$_got" "$_e" "[$_label] $_sc denied with $_e ($_p)"
		else
			is "$_got" ENOSYS "[$_label] $_sc not denied ($_p)"
		fi
	done <<EOF
$PROBES_DENY
EOF
	for _p in $PROBES_PASS; do
		_got=$(printf '%s\n' "$_wres" | result_of "$_p")
		if [ "$_got" = unsupported ]; then
			skip "[$_label] $_p" "this argument form does not exist on this arch"
		else
			is "$_got" ENOSYS "[$_label] $_p is let through"
		fi
	done
}
