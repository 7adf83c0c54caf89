#!/bin/sh
# --overlay-src, --overlay, --tmp-overlay, --ro-overlay.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
mkdir -p "$d/low1" "$d/low2" "$d/up" "$d/work" "$d/a,b:c\\d"
echo one > "$d/low1/f"; echo one > "$d/low1/only1"
echo two > "$d/low2/f"; echo two > "$d/low2/only2"
echo special > "$d/a,b:c\\d/s"

run "$NSRUN" $BASE --overlay-src "$d/low1" --overlay-src "$d/low2" --tmp-overlay /mnt -- sh -c 'cat /mnt/f /mnt/only1 /mnt/only2; echo new > /mnt/n && cat /mnt/n; grep " /mnt " /proc/self/mountinfo'
is "$(echo "$out" | head -4)" "two
one
two
new" "--tmp-overlay: the last --overlay-src is the top layer, and it is writable"
like "$out" " /mnt [^ ]+ - overlay overlay .*userxattr" "--tmp-overlay is an overlay with userxattr"
check "--tmp-overlay writes never reach a lower layer" test ! -e "$d/low2/n" -a ! -e "$d/low1/n"

run "$NSRUN" $BASE --bind "$d" "$d" --overlay-src "$d/low1" --overlay "$d/up" "$d/work" /mnt -- sh -c 'echo changed > /mnt/f; rm /mnt/only1; cat /mnt/f'
is "$out" "changed" "--overlay: writes are visible in the sandbox"
is "$(cat "$d/up/f" 2>/dev/null):$(cat "$d/low1/f")" "changed:one" "--overlay: writes land in RWSRC, the lower is untouched"
check "--overlay: a deletion leaves a whiteout in RWSRC" test -c "$d/up/only1"

run "$NSRUN" $BASE --overlay-src "$d/low1" --overlay-src "$d/low2" --ro-overlay /mnt -- sh -c 'cat /mnt/f; touch /mnt/x'
is "$out" "two" "--ro-overlay merges the layers"
like "$err" "Read-only file system" "--ro-overlay is read-only"
run "$NSRUN" $BASE --overlay-src "$d/low1" --ro-overlay /mnt -- true
is "$rc:$err" "1:nsrun: --ro-overlay requires at least two --overlay-src" "--ro-overlay needs two sources"
run "$NSRUN" $BASE --tmp-overlay /mnt -- true
is "$rc:$err" "1:nsrun: --tmp-overlay requires at least one --overlay-src" "--tmp-overlay needs a source"
run "$NSRUN" $BASE --overlay-src "$d/low1" --dir /x -- true
is "$rc:$err" "1:nsrun: --overlay-src must be followed by another --overlay-src or one of --overlay, --tmp-overlay, or --ro-overlay" "--overlay-src must be consumed"
run "$NSRUN" $BASE --overlay-src "$d/nope" --tmp-overlay /mnt -- true
is "$rc:$err" "1:nsrun: Can't find source path $d/nope: No such file or directory" "a missing overlay source"
run "$NSRUN" $BASE --overlay-src "$d/a,b:c\\d" --tmp-overlay /mnt -- cat /mnt/s
is "$rc:$out" "0:special" "a layer path with , : and \\ works"
run "$NSRUN" $BASE --overlay-src "$d/low1" --overlay "$d/low1" "$d/work" /mnt -- true
like "$rc:$err" "^1:nsrun: Can't make overlay mount on /mnt with options upperdir=$d/low1,workdir=$d/work,lowerdir=$d/low1,userxattr" "overlapping layers are refused with the options shown"
rm -rf "$d"
done_testing
