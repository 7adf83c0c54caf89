#!/bin/sh
# The compile cache: a launch stores the compiled filter, later launches use
# it, and an entry that is corrupt, writable by others or owned by someone
# else is ignored. A cache that cannot be written never fails a launch.
. "$NSR_TESTS/lib.sh"
. "$NSR_TESTS/seccomp-lib.sh"

d=$(scratch)
cache="$XDG_CACHE_HOME/nsrun/seccomp"
entries() { ls "$cache" 2>/dev/null | grep -c '\.bpf$'; }
mount_probe() { sandbox_probe "$PROBE" "${1:-default}" --witness mount 2>&1; }

run $NSRUN $SBX --seccomp-policy default -- true
is "$rc" 0 "a launch with default.policy works"
is "$(entries)" 1 "it stored one compiled filter"
entry=$(ls "$cache"/*.bpf)
is "$(stat -c %a "$cache")" 700 "the cache directory is private (0700)"
is "$(stat -c %a "$entry")" 600 "the entry is private (0600)"
is "$(stat -c %u "$entry")" "$(id -u)" "the entry belongs to the caller"
cp "$entry" "$d/saved"
run $NSRUN $SBX --seccomp-policy default -- true
is "$(entries)" 1 "a second launch adds nothing"
check "and leaves the entry as it was" cmp -s "$entry" "$d/saved"
is "$(mount_probe)" "mount EPERM" "the cached filter denies mount"

# Prove that launches use the entry: plant a valid entry for default.policy's
# key that holds permissive.policy's program, which allows mount.
$NSRUN seccomp compile permissive -o "$d/permissive.bpf"
plant() { # writes a well-formed entry for $entry holding $d/permissive.bpf
	/usr/bin/python3 - "$entry" "$d/permissive.bpf" <<'PY'
import hashlib, os, sys
path, body = sys.argv[1], open(sys.argv[2], "rb").read()
key = bytes.fromhex(os.path.basename(path)[:-len(".bpf")])
tmp = path + ".plant"
with open(tmp, "wb") as f:
    f.write(b"NSRBPF01" + key + hashlib.sha256(body).digest() + body)
os.chmod(tmp, 0o600)
os.rename(tmp, path)
PY
}
if [ -x /usr/bin/python3 ]; then
	plant
	is "$(mount_probe)" "mount ENOSYS" "a launch loads the cached program (a planted one allows mount)"

	plant
	printf 'X' | dd of="$entry" bs=1 seek=$(($(wc -c < "$entry") - 1)) conv=notrunc 2>/dev/null
	is "$(mount_probe)" "mount EPERM" "an entry whose checksum fails is ignored"
	check "and replaced by a good one" test "$(wc -c < "$entry")" -eq "$(wc -c < "$d/saved")"

	plant
	truncate -s -3 "$entry"
	is "$(mount_probe)" "mount EPERM" "a torn entry (not whole instructions) is ignored"

	plant
	chmod 0622 "$entry"
	is "$(mount_probe)" "mount EPERM" "an entry others can write is ignored"
	is "$(stat -c %a "$entry")" 600 "and replaced by a private one"

	if is_root; then
		plant
		chown 65534 "$entry"
		is "$(mount_probe)" "mount EPERM" "an entry owned by another user is ignored"
		is "$(stat -c %u "$entry")" 0 "and replaced by one of our own"
	else
		skip "an entry owned by another user is ignored" "only root can give a file away"
	fi
else
	skip "planted cache entries" "/usr/bin/python3 is not installed"
fi

# The key covers included files: editing one gives a new entry.
mkdir "$d/pol"
cp "$NSR_SECCOMP_DIR"/*.policy "$d/pol/"
# The copies keep the source's mode, read-only under make distcheck.
chmod u+w "$d/pol/"*.policy
printf 'include nesting\n' > "$d/pol/mine.policy"
n0=$(entries)
run $NSRUN $SBX --seccomp-policy "$d/pol/mine.policy" -- true
is "$rc:$err" "0:" "a policy of one's own launches"
is "$(entries)" $((n0 + 1)) "a policy of one's own gets its own entry"
echo '# edited' >> "$d/pol/nesting.policy"
is "$(tail -n 1 "$d/pol/nesting.policy")" "# edited" "the included file was edited"
run $NSRUN $SBX --seccomp-policy "$d/pol/mine.policy" -- true
is "$rc:$err" "0:" "and launches after an included file is edited"
is "$(entries)" $((n0 + 2)) "editing an included file gives a new entry"

# A cache that cannot be used never fails a launch.
: > "$d/not-a-dir"
res=$(XDG_CACHE_HOME="$d/not-a-dir" sandbox_probe "$PROBE" default --witness mount 2>&1)
is "$res" "mount EPERM" "XDG_CACHE_HOME that is a file: the launch compiles and works"
mkdir -p "$d/ro/nsrun/seccomp"
chmod 0700 "$d/ro/nsrun" "$d/ro/nsrun/seccomp"
chmod 0500 "$d/ro/nsrun/seccomp"
if is_root; then
	skip "a read-only cache" "root can write anywhere"
else
	res=$(XDG_CACHE_HOME="$d/ro" sandbox_probe "$PROBE" default --witness mount 2>&1)
	is "$res" "mount EPERM" "a read-only cache directory: the launch compiles and works"
fi
chmod 0700 "$d/ro/nsrun/seccomp"
if is_root; then
	mkdir -p "$d/theirs"
	chown 65534 "$d/theirs"
	res=$(XDG_CACHE_HOME="$d/theirs" sandbox_probe "$PROBE" default --witness mount 2>&1)
	is "$res" "mount EPERM" "a cache base owned by someone else: the launch works"
	is "$(ls -A "$d/theirs")" "" "and nothing is written there"
else
	skip "a cache base owned by someone else" "only root can give a directory away"
fi

rm -rf "$d"
seccomp_done_testing
