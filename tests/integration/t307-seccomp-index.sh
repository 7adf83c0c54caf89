#!/bin/sh
# The compile cache's index: a launch whose policy files are all as they
# were takes the program the index names without reading the policy, and a
# policy edited in place between two launches (same size, same inode, its
# mtime put back: only the ctime tells) takes effect in the second launch.
. "$NSR_TESTS/lib.sh"
. "$NSR_TESTS/seccomp-lib.sh"

d=$(scratch)
cache="$XDG_CACHE_HOME/nsrun/seccomp"
pol="$d/mine.policy"
other="$d/other.policy"
# Same length on purpose: the edit below keeps the size.
printf 'deny swapon errno EPERM\n' > "$pol"
printf 'deny mount errno EBUSY\n' > "$other"
idx_files() { ls "$cache" 2>/dev/null | grep '\.idx$'; }
not() { ! "$@"; }
mount_with() { sandbox_probe "$PROBE" "$1" --witness mount 2>&1; }
# A file is indexed once its ctime is a few seconds old (a change in the
# same clock tick could keep the ctime): launch until the entry appears.
indexed_after_launch() { # POLICY COUNT
	mount_with "$1" > /dev/null
	[ "$(idx_files | wc -l)" -ge "$2" ]
}

is "$(mount_with "$pol")" "mount ENOSYS" "mine.policy allows mount"
check "a launch indexes the policy once its file has settled" wait_until 30 indexed_after_launch "$pol" 1
mine_idx=$(idx_files)
is "$(printf '%s\n' "$mine_idx" | wc -l)" 1 "one policy, one index entry"
is "$(stat -c %a:%u "$cache/$mine_idx")" "600:$(id -u)" "the entry is private and the caller's"
is "$(mount_with "$pol")" "mount ENOSYS" "a launch through the index gets the same filter"
check "other.policy gets an entry of its own" wait_until 30 indexed_after_launch "$other" 2
other_idx=$(idx_files | grep -vx "$mine_idx")

# Prove that a launch through the index does not read the policy: point
# mine.policy's entry at other.policy's text (a well-formed entry, its
# checksum redone), and the launch loads other.policy's program.
plant() { # ENTRY DIGEST-FROM
	/usr/bin/python3 - "$1" "$2" <<'PY'
import hashlib, os, sys
path, src = sys.argv[1], sys.argv[2]
mine, theirs = open(path, "rb").read(), open(src, "rb").read()
body = mine[:40] + theirs[40:72] + mine[72:-32]
tmp = path + ".plant"
with open(tmp, "wb") as f:
    f.write(body + hashlib.sha256(body).digest())
os.chmod(tmp, 0o600)
os.rename(tmp, path)
PY
}
if [ -x /usr/bin/python3 ]; then
	plant "$cache/$mine_idx" "$cache/$other_idx"
	is "$(mount_with "$pol")" "mount EBUSY" "unchanged files: the program the index names, the policy unread"
	printf 'X' | dd of="$cache/$mine_idx" bs=1 seek=50 conv=notrunc 2>/dev/null
	cp "$cache/$mine_idx" "$d/corrupt"
	is "$(mount_with "$pol")" "mount ENOSYS" "a corrupt entry is ignored: the policy is read"
	check "and the entry is written anew" not cmp -s "$cache/$mine_idx" "$d/corrupt"
	is "$(mount_with "$pol")" "mount ENOSYS" "which the next launch uses"
else
	skip "a planted index entry" "/usr/bin/python3 is not installed"
fi

# The edit: in place, same size, mtime put back. Only the ctime differs.
touch -r "$pol" "$d/ref"
before=$(stat -c '%s %i %.9Y %.9Z' "$pol")
printf 'deny mount  errno EPERM\n' | dd of="$pol" conv=notrunc 2>/dev/null
touch -m -r "$d/ref" "$pol"
after=$(stat -c '%s %i %.9Y %.9Z' "$pol")
is "${after% *}" "${before% *}" "the edit kept the size, the inode and the mtime"
check "and changed the ctime" test "${after##* }" != "${before##* }"
is "$(mount_with "$pol")" "mount EPERM" "the next launch applies the edit: mount fails with the policy's errno"
is "$(mount_with "$pol")" "mount EPERM" "and so does the one after"

rm -rf "$d"
seccomp_done_testing
