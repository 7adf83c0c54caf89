#!/bin/sh
# issue 12.7: what the next run trusts is never visible from a run: the
# state dir (layers, backups, journals) and the cache of compiled seccomp
# filters are masked in the last mount round, after every --ro/--rw and
# every bind of the caller's, and at any other path a bind maps them to.
. "$NSR_TESTS/lib.sh"
export NSRUN_DATADIR="$NSR_STAGE"
d=$(scratch)
H=$d/home
mkdir -p "$H/.cache" "$H/.local/state" "$d/p"
# A home of our own: the default state dir ($H/.local/state/nsrun) and the
# cache ($H/.cache/nsrun) live in it.
HOME=$H; export HOME
unset XDG_CACHE_HOME XDG_STATE_HOME
P=$d/p

run "$NSRUN" -p "$P" -- true
is "$rc" 0 "a first run fills the cache and the state dir"
check "the filter cache exists on the host" test -d "$H/.cache/nsrun/seccomp"
n_cached=$(ls "$H/.cache/nsrun/seccomp" | wc -l)
check "... with an entry" test "$n_cached" -ge 1

# --rw ~/.cache: the cache stays hidden and unwritable.
run "$NSRUN" -p "$P" --rw "$H/.cache" -- sh -c '
	ls -A ~/.cache/nsrun | wc -l
	for f in ~/.cache/nsrun/seccomp/*.bpf; do echo poison > "$f" && echo WROTE; done 2>/dev/null
	mkdir -p ~/.cache/nsrun/seccomp 2>/dev/null && echo x > ~/.cache/nsrun/seccomp/planted.bpf 2>/dev/null && echo PLANTED
	true'
unlike "$out" 'WROTE|PLANTED' "--rw ~/.cache: the command can write no cache entry"
is "$(echo "$out" | head -1)" "0" "... and sees the cache dir empty"
check "the host's cache is unchanged" test ! -e "$H/.cache/nsrun/seccomp/planted.bpf"
unlike "$(cat "$H"/.cache/nsrun/seccomp/*.bpf | head -c 64)" '^poison' "... its entries intact"
run "$NSRUN" -p "$P" -- true
is "$rc" 0 "the next run still works"

# --ro ~: the state dir stays hidden.
run "$NSRUN" -p "$P" --ro "$H" -- sh -c 'ls -A ~/.local/state/nsrun | wc -l'
is "$out" "0" "--ro ~: the state dir is empty inside"

# --rw ~/.local: hidden and unwritable.
run "$NSRUN" -p "$P" --rw "$H/.local" -- sh -c 'ls -A ~/.local/state/nsrun | wc -l; touch ~/.local/state/nsrun/pwn 2>/dev/null && echo WROTE; true'
is "$(echo "$out" | head -1)" "0" "--rw ~/.local: the state dir is empty inside"
unlike "$out" WROTE "... and cannot be written"
check "... nothing lands in the host's state dir" test ! -e "$H/.local/state/nsrun/pwn"

# --home hide with --rw ~/.local: the same.
run "$NSRUN" -p "$P" --home hide --rw "$H/.local" -- sh -c 'ls -A ~/.local/state/nsrun | wc -l'
is "$out" "0" "--home hide --rw ~/.local: the state dir is empty inside"

# A bind of the caller's that maps the state dir elsewhere.
run "$NSRUN" -p "$P" --ro-bind "$H/.local" /tmp/alias --ro-bind "$H/.cache" /tmp/calias -- sh -c \
	'ls -A /tmp/alias/state/nsrun | wc -l; ls -A /tmp/calias/nsrun | wc -l'
is "$out" "0
0" "a bind to another path shows neither the state dir nor the cache"

rm -rf "$d"
done_testing
