#!/bin/sh
# A one-shot project run starts its background process (the trash, the
# next run's dir, the hourly gc) as it ends (issue 28, txn/state.h
# nsr_state_background_exit): the child shares nsrun's memory instead of a
# copy, and nsrun exits with nothing else to do. The caller must see none
# of it: nsrun's exit code, stdout closed when nsrun ends (a reader of
# "$(nsrun ...)" does not wait for the background), a background process
# in its own session with none of the caller's fds, which then does its
# work. The fork nsrun falls back to when the clone fails does the same.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
mkdir -p "$d/p"
echo a >"$d/p/f"

# The background process told to wait on $1: the nsrun process of ours
# whose environment names that file.
bg_pid() {
	for p in $(pgrep -u "$(id -u)" -x nsrun); do
		if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qx "NSRUN_TEST_BG_HOLD=$1"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

for mode in clone fork; do
	S=$d/s-$mode
	hold=$d/go-$mode
	if [ "$mode" = fork ]; then nc=1; else nc=; fi
	caller_sid=$(ps -o sid= -p $$ | tr -d ' ')
	# stdout through a pipe: the command substitution ends only when every
	# copy of its write end is closed.
	out=$(NSRUN_TEST_BG_HOLD=$hold NSRUN_TEST_BG_NO_CLONE=$nc \
		"$NSRUN" -p "$d/p" --state-dir "$S" -- sh -c 'echo out; exit 3' 2>"$d/err-$mode")
	rc=$?
	is "$rc:$out" "3:out" "[$mode] nsrun exits with the command's code, its output complete"
	check "[$mode] ... its summary on stderr" grep -q "no changes" "$d/err-$mode"
	# The background process waits on $hold: it is there, and nsrun is not.
	if wait_until 20 bg_pid "$hold" >/dev/null; then
		pid=$(bg_pid "$hold")
		ok "[$mode] its background process runs after nsrun ended"
		sid=$(ps -o sid= -p "$pid" | tr -d ' ')
		check "[$mode] ... in a session of its own ($sid, the caller's $caller_sid)" \
			test "$sid" = "$pid" -a "$sid" != "$caller_sid"
		fds=$(for f in 0 1 2; do readlink "/proc/$pid/fd/$f"; done | sort -u | tr '\n' ' ')
		is "$fds" "/dev/null " "[$mode] ... its stdin, stdout and stderr are /dev/null"
		# fd 3 holds the sandbox's mounts until the caller's copy is
		# closed, which fd 4 (a pipe) tells it.
		past=$(ls "/proc/$pid/fd" | sort -n | awk '$1 > 2' | while read -r f; do
			printf '%s=%s ' "$f" "$(readlink "/proc/$pid/fd/$f" | sed 's/:.*//')"; done)
		is "$past" "3=mnt 4=pipe " "[$mode] ... past them only the sandbox's mount namespace and its pipe"
	else
		not_ok "[$mode] its background process runs after nsrun ended"
		not_ok "[$mode] ... in a session of its own"
		not_ok "[$mode] ... its stdin, stdout and stderr are /dev/null"
		not_ok "[$mode] ... past them only the sandbox's mount namespace and its pipe"
	fi
	touch "$hold"
	check "[$mode] once let go, it makes the next run's dir" wait_until 30 test -d "$S/run.spare/p0/work"
	run_dir=$(ls -d "$S"/runs/*/ | head -n 1)
	check "[$mode] ... removes the run's trash" wait_until 30 test ! -e "${run_dir}trash"
	check "[$mode] ... and ends" wait_until 30 sh -c "! pgrep -u $(id -u) -x nsrun >/dev/null"
	run "$NSRUN" -p "$d/p" --state-dir "$S" --quiet -- sh -c 'echo b > f'
	is "$rc:$(cat "$d/p/f")" "0:b" "[$mode] the next run takes that dir and commits"
	echo a >"$d/p/f"
done

done_testing
