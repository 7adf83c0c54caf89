/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Killing every process a command left behind, without a pid namespace
 * (best-effort mode and --sandbox=off).
 *
 * In namespace mode the kernel does it: when the sandbox's pid 1 exits,
 * every process in its pid namespace is killed. Without namespaces the
 * command's leftovers (a daemon, a chain of shells, a setsid'd double
 * fork, a fork loop) would keep running with the sandbox's Landlock
 * rights, write the project once nsrun has put the protected paths back
 * and recorded the run, and keep the user's terminal. So nsrun is a child
 * subreaper while the command runs (every orphan below it is re-parented
 * to it, never to init), and afterwards kills its whole tree:
 *
 *   loop until no descendant but a zombie is left:
 *     read every /proc/PID/stat: pid, parent, state, start time;
 *     the descendants are the processes whose chain of parents reaches
 *     nsrun (the spared children and theirs excepted);
 *     open a pidfd for each, check through /proc that it is still the same
 *     process (parent and start time), and SIGKILL it through the pidfd;
 *     wait until they have exited (poll on the pidfds), reap ours.
 *
 * A process forked while a round runs has a parent in the tree: either the
 * parent is killed and the child comes to nsrun (subreaper), or the next
 * round finds it. There is no round limit: the loop ends when the tree is
 * empty, however deep it was or however fast it forked. The pidfd makes
 * the kill race-free against pid reuse: a pid checked and then recycled by
 * an unrelated process of the user is never signalled (without pidfds,
 * before Linux 5.3, a plain kill follows the same check).
 *
 * With a delegated cgroup (v2) nsrun could instead put the command in a
 * cgroup of its own and write cgroup.kill (Linux 5.14): the kernel then
 * kills every member at once. This host's callers seldom own one (a
 * systemd user session does; a container or CI job usually does not), and
 * the tree walk needs nothing, so it is the one used; the cgroup is a
 * possible later addition ("nsrun doctor" reports, as "cgroup", whether
 * the caller owns one). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Kills and reaps every descendant of the calling process except the
 * children in spare[] and their descendants. The caller must have been a
 * child subreaper since before the first descendant was started, and must
 * not reap the spared children concurrently. Returns the number of
 * processes killed (>= 0); never gives up while a descendant is left. */
size_t nsr_killtree(const pid_t *spare, size_t n_spare);
