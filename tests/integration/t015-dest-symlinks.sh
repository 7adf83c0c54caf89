#!/bin/sh
# bubblewrap 0.12.0's rules for a destination: parents resolve inside the
# new root (GHSA-pxhw-h44j-8pfx), the last component is never followed, and
# a mount onto a symlink is refused. The effect is checked on the host:
# nothing lands outside the sandbox, and the refusals are bwrap's.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
mkdir -p "$d/src" "$d/host"
echo data > "$d/src/file"
# A root of its own (a tmpfs), so destinations can be made anywhere.
MIN="--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64"

# A mount onto a symlink would follow it; bwrap 0.12 refuses, and so must we,
# whatever the link points at (here: a host directory bound earlier).
run "$NSRUN" $MIN --bind "$d/host" /h --symlink /h /lnk --bind "$d/src" /lnk -- true
is "$rc:$err" "1:nsrun: Can't mount on symlink destination /lnk" "a bind onto a symlink is refused"
run "$NSRUN" $MIN --bind "$d/host" /h --symlink /h /lnk --tmpfs /lnk -- true
is "$rc:$err" "1:nsrun: Can't mount on symlink destination /lnk" "a tmpfs onto a symlink is refused"
run "$NSRUN" $MIN --symlink /usr /u --remount-ro /u -- true
is "$rc:$err" "1:nsrun: Can't mount on symlink destination /u" "--remount-ro of a symlink is refused"
run "$NSRUN" $MIN --bind "$d/host" /h --symlink /h/f /lnk --ro-bind "$d/src/file" /lnk -- true
is "$rc:$err" "1:nsrun: Can't mount on symlink destination /lnk" "a file bind onto a symlink is refused"
is "$(ls -A "$d/host")" "" "... and creates nothing where the link points"

# --dir and --file do not follow a symlink either.
run "$NSRUN" $MIN --bind "$d/host" /h --symlink /h /lnk --dir /lnk -- true
is "$rc:$err" "1:nsrun: Destination is not a directory /lnk" "--dir on a symlink is refused"
run "$NSRUN" $MIN --bind "$d/host" /h --symlink /h/new /lnk --file 3 /lnk -- true 3<"$d/src/file"
is "$rc:$err" "1:nsrun: Can't create file /lnk: Too many levels of symbolic links" "--file onto a symlink fails"
is "$(ls -A "$d/host")" "" "... and writes nothing through it"
run "$NSRUN" $MIN --dir /d --ro-bind "$d/src/file" /d -- true
is "$rc:$err" "1:nsrun: Destination is not a file /d" "a file bind onto a directory is refused"

# Parents: an absolute symlink among them resolves inside the new root.
# The link names the host directory's own path, which exists in the
# sandbox only as a directory of its tmpfs root: the files made through
# the link land there, not on the host.
run "$NSRUN" $MIN --dir "$d/host" --symlink "$d/host" /up --dir /up/made --file 3 /up/f -- sh -c \
	"test -d '$d/host/made' && test -f '$d/host/f' && echo inside" 3<"$d/src/file"
is "$rc:$out" "0:inside" "an absolute parent symlink resolves inside the new root"
is "$(ls -A "$d/host")" "" "... so nothing was made on the host"
run "$NSRUN" $MIN --symlink "$d/host" /up --dir /up/made -- true
is "$rc:$err" "1:nsrun: Can't mkdir parents for /up/made: No such file or directory" \
	"a parent symlink to a path missing in the new root fails, even though the host has it"
is "$(ls -A "$d/host")" "" "... and makes nothing on the host"

done_testing
