#!/bin/sh
# Bad input: one message, exit 1, nothing run — under both names.
. "$NSR_TESTS/lib.sh"
d=$(scratch)
ln -s "$NSRUN" "$d/bwrap"
marker=$d/ran

# each line: expected message (after "NAME: ") <TAB> arguments [<TAB> "end"
# when the arguments must end the command line, as for a missing argument]
while IFS='	' read -r msg args where; do
	[ -z "$msg" ] && continue
	for name in nsrun bwrap; do
		bin=$NSRUN; [ $name = bwrap ] && bin=$d/bwrap
		# shellcheck disable=SC2086
		if [ "$where" = end ]; then run "$bin" $args
		else run "$bin" $args -- touch "$marker"; fi
		is "$rc:$err" "1:$name: $msg" "$name $args"
	done
done <<EOF2
Unknown option --xyzzy	--xyzzy
Unknown option -x	-x
--bind takes two arguments	--bind /a	end
--ro-bind-try takes two arguments	--ro-bind-try /a	end
--bind-fd takes two arguments	--ro-bind-fd 3	end
--chdir takes one argument	--chdir	end
--tmpfs takes an argument	--tmpfs	end
--overlay takes three arguments	--overlay-src /a --overlay /a /b	end
Invalid fd: x	--info-fd x
Invalid fd: -1	--sync-fd -1
--perms takes an octal argument <= 07777	--perms 8 --dir /x
--perms takes an octal argument <= 07777	--perms 10000 --dir /x
--size takes a non-zero number of bytes	--size 0 --tmpfs /x
--size takes a non-zero number of bytes	--size abc --tmpfs /x
--size (for tmpfs) is limited to 9223372036854775807	--size 9223372036854775808 --tmpfs /x
Can't find source path /nonexistent-src: No such file or directory	--ro-bind / / --bind /nonexistent-src /x
Specifying --as-pid-1 requires --unshare-pid	--as-pid-1
--disable-userns requires --unshare-user	--disable-userns
labeling not supported on this system	--exec-label foo
labeling not supported on this system	--file-label foo
unknown cap: CAP_NOPE	--cap-drop CAP_NOPE
EOF2
check "no bad command line ran the command" test ! -e "$marker"
rm -rf "$d"
done_testing
