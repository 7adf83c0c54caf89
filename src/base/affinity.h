/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A hand-off on one CPU: when the monitor stops until its child's execve
 * (launch.c, the shared-memory clone), the child is best started on the
 * CPU the monitor leaves; on a virtual machine a wake-up of an idle CPU
 * costs tens to hundreds of microseconds. So the monitor pins itself to
 * the CPU it runs on just for the clone, and both processes put the
 * caller's CPU set back before anything else: the monitor as the clone
 * returns, the child before the command is confined and exec'd. What the
 * command and everything it starts get is exactly the caller's set.
 * (Pinning a launch whose monitor goes on working beside its child made
 * it slower: the two then take turns on one CPU.)
 *
 * A hint only: where reading or setting the set fails (more CPUs than a
 * cpu_set_t holds, a cpuset that changed), nothing is pinned, or the
 * restore falls back to every CPU the kernel allows. */
#pragma once

#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct nsr_affinity {
        cpu_set_t saved;
        bool pinned;
        bool split; /* nsr_affinity_save marked it: the child may be kept off the monitor's CPU */
} nsr_affinity;

/* Pins the caller to the CPU it runs on, saving its set in *a, when the
 * set holds more than one CPU. */
void nsr_affinity_pin_here(nsr_affinity *a);

/* Puts the saved set back (once; a no-op when nothing was pinned).
 * Returns 0, or -errno when neither the saved set nor every CPU could be
 * set (the process then stays on the one CPU). */
int nsr_affinity_restore(nsr_affinity *a);

/* Puts the saved set back on another process (one the caller may name and
 * set), leaving *a as it is. Returns 0 or -errno. */
int nsr_affinity_restore_other(const nsr_affinity *a, pid_t pid);

/* The other case: a monitor that goes on working beside its child (project
 * mode looks up the hidden paths and makes the run dir while the child
 * makes its namespaces). A wake-up puts the woken child on the monitor's
 * CPU when that one runs nothing else, expecting the waker to sleep; this
 * monitor goes on working and keeps its child off the CPU until it stops
 * (0.2 to 0.5 ms of a project run here). So the child keeps off the
 * monitor's CPU while the monitor looks the hidden paths up:
 * nsr_affinity_save before the clone (the child gets the copy),
 * nsr_affinity_keep_off right after it (the new child is most often still
 * queued, and moving a queued task costs nothing), and
 * nsr_affinity_restore in the child as soon as it stops waiting for the
 * monitor (made its namespaces), nsr_affinity_reassert once the monitor
 * has certainly moved it (its hidden paths came). Only while every CPU is free for one of the two: with a CPU
 * hog on the other CPU, a child sent there waited for the hog's time slice
 * (a project no-op took 11 ms instead of 6). Measured against the
 * alternatives, interleaved (bench/README.md, "Thirteenth pass"): pinning
 * the monitor too, after the clone, cost it up to 0.2 ms whenever the new
 * child ran first on its CPU; the child moving itself as its first step
 * paid a migration of a running task. */

/* Saves the caller's set in *a, marked for a restore when it holds more
 * than one CPU (nothing to split otherwise). */
void nsr_affinity_save(nsr_affinity *a);

/* Gives pid the CPUs of the saved set but the one the caller runs on, when
 * *a is marked (nsr_affinity_save), that leaves a CPU, and no more tasks
 * are runnable on the machine than the set has CPUs (/proc/loadavg, the
 * caller and pid included). Returns 0 or -errno (nothing changed). */
int nsr_affinity_keep_off(const nsr_affinity *a, pid_t pid);

/* In the child of a split (*a as nsr_affinity_save left it, restored or
 * not): the saved set again, unless it is the set already. The child gives
 * its CPUs back with nsr_affinity_restore as soon as its waits for the
 * monitor are over, and this once more at a point the monitor reaches
 * only after its nsr_affinity_keep_off: a move that came after the first
 * restore (a monitor slow to make it) is undone there. Returns 0 or
 * -errno. */
int nsr_affinity_reassert(const nsr_affinity *a);
