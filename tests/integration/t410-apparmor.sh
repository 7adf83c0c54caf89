#!/bin/sh
# contrib/apparmor/nsrun: the profile make generates compiles with
# apparmor_parser, nsrun gets capabilities and its children none, and
# "make install-apparmor" installs it under DESTDIR.
#
# Skips (with the reason) as the unprivileged user and without
# apparmor_parser (Debian: apt-get install apparmor); a profile the parser
# rejects fails. The AppArmor 4 rules ("userns,", "mqueue," and abi 4.0)
# need apparmor_parser 4.0 (Ubuntu 24.04); an older parser (Debian 12 has
# 3.0.8) compiles the profile without them, and says so.
. "$NSR_TESTS/lib.sh"
is_root || skip_all "apparmor_parser runs as root only (running as $NSR_WHO)"
parser=$(command -v apparmor_parser 2>/dev/null)
[ -n "$parser" ] || skip_all "apparmor_parser is not installed (Debian: apt-get install apparmor)"
: "${NSR_BUILDDIR:?run through make check}"
profile=$NSR_BUILDDIR/contrib/apparmor/nsrun
d=$(scratch)

if [ ! -f "$profile" ]; then
	not_ok "make generated $profile"
	done_testing
fi
unlike "$(cat "$profile")" "@BINDIR@" "the generated profile has no placeholder left"
attach=$(sed -n 's/^profile nsrun \([^ ]*\) .*{$/\1/p' "$profile")
like "$attach" "^/.*/nsrun$" "the nsrun profile attaches to the installed binary ($attach)"

# Compile (-Q: do not load into the kernel, -T and -K: no cache).
version=$("$parser" --version 2>/dev/null | sed -n '1s/.*version \([0-9][0-9.]*\).*/\1/p')
compiled=$profile
if [ "${version%%.*}" -ge 4 ] 2>/dev/null; then
	run "$parser" -QTK "$profile"
	is "$rc" 0 "apparmor_parser $version compiles the profile"
	[ "$rc" -eq 0 ] || diag "$err"
else
	skip "the userns and mqueue rules and abi 4.0" "apparmor_parser ${version:-?} predates AppArmor 4.0"
	compiled=$d/nsrun-3
	sed -e 's|^abi <abi/4.0>,$|abi <abi/3.0>,|' -e '/^[[:space:]]*\(userns\|mqueue\),$/d' "$profile" > "$compiled"
	run "$parser" -QTK "$compiled"
	is "$rc" 0 "apparmor_parser ${version:-?} compiles the profile without its AppArmor 4 rules"
	[ "$rc" -eq 0 ] || diag "$err"
	like "$(cat "$profile")" "^  userns,$" "the nsrun profile does have the userns rule"
fi

# What the compiled policy grants, from the parser's debug dump.
run "$parser" -QTK -d "$compiled"
dump=$out
nsrun_caps=$(printf '%s\n' "$dump" | sed -n '/^Name:[[:space:]]*nsrun$/,/^Name:/p' | sed -n 's/^Capabilities: //p')
sandbox=$(printf '%s\n' "$dump" | sed -n '/^Name:[[:space:]]*nsrun_sandbox$/,/^Name:/p')
like "$nsrun_caps" "(^| )sys_admin( |$)" "nsrun may use capabilities (sys_admin) in its namespaces"
like "$nsrun_caps" "(^| )setuid( |$)" "... and setuid"
unlike "$sandbox" "^Capabilities: [a-z]" "nsrun_sandbox allows no capability"
like "$sandbox" "^Deny Caps: .*sys_admin" "nsrun_sandbox denies every capability (sys_admin among them)"
is "$("$parser" -QTK -N "$compiled" 2>/dev/null | tr '\n' ' ')" "nsrun nsrun_sandbox " "two profiles: nsrun and nsrun_sandbox"
like "$(cat "$profile")" "-> &nsrun_sandbox," "what nsrun executes is stacked with nsrun_sandbox"

# The check can fail: a broken copy is rejected.
sed 's/^  mount,$/  mount,\n  nosuchrule,/' "$compiled" > "$d/broken"
like "$(cat "$d/broken")" "^  nosuchrule,$" "(the broken copy has the bad rule)"
run "$parser" -QTK "$d/broken"
check "a profile with a syntax error is rejected (rc $rc)" test "$rc" -ne 0

# make install-apparmor honours DESTDIR; uninstall-apparmor removes it.
if command -v make >/dev/null 2>&1 && [ -f "$NSR_BUILDDIR/Makefile" ]; then
	run env -u MAKEFLAGS -u MFLAGS make -s -C "$NSR_BUILDDIR" install-apparmor DESTDIR="$d/dest"
	installed=$(find "$d/dest" -path '*/apparmor.d/nsrun' -type f 2>/dev/null)
	check "make install-apparmor installs apparmor.d/nsrun under DESTDIR" test -n "$installed"
	[ -n "$installed" ] && is "$(cmp "$installed" "$profile" && echo same)" same "... the generated profile"
	run env -u MAKEFLAGS -u MFLAGS make -s -C "$NSR_BUILDDIR" uninstall-apparmor DESTDIR="$d/dest"
	check "make uninstall-apparmor removes it" test ! -e "$installed"
else
	skip "make install-apparmor" "no make or no Makefile in $NSR_BUILDDIR"
fi
rm -rf "$d"
done_testing
