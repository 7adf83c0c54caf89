#!/bin/sh
# --userns, --userns2, --pidns, --disable-userns, --assert-userns-disabled.
. "$NSR_TESTS/lib.sh"
d=$(scratch)

run "$NSRUN" $BASE --unshare-user --disable-userns -- sh -c 'unshare -U true 2>&1; echo rc=$?'
like "$out" "rc=1" "--disable-userns: creating a user namespace inside fails"
like "$out" "No space left on device" "... because max_user_namespaces is 1 (ENOSPC)"
run "$NSRUN" $BASE --unshare-user -- sh -c 'unshare -U true && echo nested-ok'
is "$out" "nested-ok" "without --disable-userns a nested user namespace can be created (the test can fail)"
run "$NSRUN" $BASE --unshare-user --assert-userns-disabled -- true
is "$rc:$err" "1:nsrun: creation of new user namespaces was not disabled as requested" "--assert-userns-disabled fails when they are not"
run "$NSRUN" $BASE --unshare-user --disable-userns --assert-userns-disabled -- echo fine
is "$rc:$out" "0:fine" "--assert-userns-disabled passes with --disable-userns"
run "$NSRUN" $BASE --disable-userns -- true
is "$rc:$err" "1:nsrun: --disable-userns requires --unshare-user" "--disable-userns needs an explicit --unshare-user"

# A holder sandbox whose namespaces the next runs join.
"$NSRUN" $BASE --unshare-user --unshare-pid --info-fd 3 -- sleep 10 3>"$d/holder" &
holder=$!
for _ in $(seq 50); do [ -s "$d/holder" ] && break; sleep 0.05; done
hp=$(sed -n 's/^    "child-pid": \([0-9]*\),$/\1/p' "$d/holder")
run "$NSRUN" $BASE --userns 3 -- readlink /proc/self/ns/user 3<"/proc/$hp/ns/user"
is "$out" "$(readlink "/proc/$hp/ns/user")" "--userns joins the user namespace on the fd"
run "$NSRUN" $BASE --userns 0 -- readlink /proc/self/ns/user <"/proc/$hp/ns/user"
is "$out" "$(readlink "/proc/$hp/ns/user")" "--userns 0 works (fd 0 is a valid fd)"
run "$NSRUN" $BASE --userns 3 --pidns 4 --proc /proc -- sh -c 'ls /proc | grep -c "^[0-9]"' 3<"/proc/$hp/ns/user" 4<"/proc/$hp/ns/pid"
like "$out" "^[2-5]$" "--pidns joins the pid namespace: the holder's processes are visible"
run "$NSRUN" $BASE --userns 3 --pidns 4 --unshare-pid -- sh -c 'echo $$; readlink /proc/self/ns/pid' 3<"/proc/$hp/ns/user" 4<"/proc/$hp/ns/pid"
is "$(echo "$out" | head -1)" "2" "--pidns with --unshare-pid nests a new pid namespace inside"
# --userns2: a user namespace nested in the joined one. The holder's pid 1
# is in namespace A; its command, "unshare -U", made B inside A.
"$NSRUN" $BASE --unshare-user --unshare-pid --info-fd 3 -- unshare -U sleep 10 3>"$d/holder2" &
holder2=$!
for _ in $(seq 50); do [ -s "$d/holder2" ] && break; sleep 0.05; done
h1=$(sed -n 's/^    "child-pid": \([0-9]*\),$/\1/p' "$d/holder2")
for _ in $(seq 50); do h2=$(cat "/proc/$h1/task/$h1/children" 2>/dev/null | tr -d ' '); [ -n "$h2" ] && [ "$(readlink "/proc/$h2/ns/user")" != "$(readlink "/proc/$h1/ns/user")" ] && break; sleep 0.05; done
run "$NSRUN" $BASE --userns 3 --userns2 4 -- readlink /proc/self/ns/user 3<"/proc/$h1/ns/user" 4<"/proc/$h2/ns/user"
is "$out" "$(readlink "/proc/$h2/ns/user")" "--userns2 switches to the nested user namespace after setup"
run "$NSRUN" $BASE --userns 3 --userns2 3 -- true 3<"/proc/$h1/ns/user"
is "$rc:$err" "1:nsrun: Setting userns2 failed: Invalid argument" "--userns2 naming the joined namespace itself fails"
kill $holder2 2>/dev/null; wait $holder2 2>/dev/null
run "$NSRUN" $BASE --userns 3 --unshare-user -- true 3<"/proc/$hp/ns/user"
is "$rc:$err" "1:nsrun: --userns is not compatible with --unshare-user" "--userns and --unshare-user conflict (0.12.0's words)"
run "$NSRUN" $BASE --userns 3 -- true 3</dev/null
like "$rc:$err" "^1:nsrun: Joining specified user namespace failed: Invalid argument|^1:nsrun: Joining the specified user namespace failed" "--userns with an fd that is not a namespace fails"
kill $holder 2>/dev/null; wait $holder 2>/dev/null
rm -rf "$d"
done_testing
