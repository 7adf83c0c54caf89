/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Launching a project run: what confines the command (the namespace
 * sandbox, best-effort Landlock and seccomp, or none), its seccomp filters
 * and Landlock ruleset, the --events-fd watcher, the launch, and another
 * way to run it when the first could not start it. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/timing.h"
#include "egress/relay.h"
#include "project/events.h"
#include "project/fence.h"
#include "project/internal.h"
#include "sandbox/confine.h"
#include "sandbox/landlock.h"
#include "sandbox/launch.h"
#include "seccomp/compile.h"

/* ---- live writes: snapshots, the other launchers ------------------------- */

/* Every live project gets its snapshot (once) at RUN/backup/pN. */
static int take_snapshots(nsr_project *pj, int run_fd, nsr_error *err) {
        const nsr_project_opts *o = &pj->plan->proj;
        if (mkdirat(run_fd, "backup", 0700) < 0 && errno != EEXIST)
                return nsr_error_set(err, errno, "cannot create the backup dir");
        _cleanup_close_ int bdir = openat(run_fd, "backup", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (bdir < 0)
                return nsr_error_set(err, errno, "cannot open the backup dir");
        for (size_t i = 0; i < pj->n; i++) {
                project_entry *e = &pj->p[i];
                if (e->snap)
                        continue;
                char name[32];
                snprintf(name, sizeof(name), "p%zu", i);
                nsr_snapshot_opts so = { .limit = o->snapshot_limit };
                int r = nsr_snapshot_take(e->fd, bdir, name, &so, &e->snap, err);
                if (r < 0)
                        return nsr_error_prefix(err, "%s", e->path);
        }
        return 0;
}

/* The plan's project overlays become writable binds (live writes). */
static void use_binds(nsr_project *pj) {
        nsr_plan *p = pj->plan;
        for (size_t i = 0; i < p->n_ops; i++) {
                nsr_op *op = &p->ops[i];
                if (op->type != NSR_OP_OVERLAY || !(op->flags & NSR_OPF_VERIFY))
                        continue;
                op->type = NSR_OP_BIND;
                free(op->source);
                op->source = nsr_strdup(op->dest);
                free(op->workdir);
                op->workdir = NULL;
                nsr_strv_free(op->overlay_srcs);
                op->overlay_srcs = NULL;
        }
}

static void switch_to_live(nsr_project *pj) {
        pj->live = true;
        use_binds(pj);
}

/* The seccomp programs: the plan's policies, and in best-effort mode
 * fallback.policy on top (no sockets at all); --sandbox=off: none. The
 * plan's own --seccomp/--add-seccomp-fd programs stay namespace mode's. */
static int compile_filters(const nsr_plan *p, confinement conf, nsr_bpf **ret, size_t *ret_n, nsr_error *err) {
        size_t n_pol = conf == CONF_NONE ? 0 : nsr_strv_length(p->seccomp_policies);
        size_t n = n_pol + (conf == CONF_LANDLOCK ? 1 : 0);
        nsr_bpf *bpf = nsr_malloc0((n + 1) * sizeof(nsr_bpf));
        int r = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                /* --allow-host: TCP sockets for the relay, instead of none. */
                if (i == n_pol && !nsr_egress_rules_empty(&p->egress))
                        r = nsr_relay_fallback_bpf(&bpf[i].data, &bpf[i].len, err);
                else
                        r = nsr_seccomp_policy_bpf(i < n_pol ? p->seccomp_policies[i] : "fallback", &bpf[i].data,
                                                   &bpf[i].len, err);
        }
        *ret = bpf;
        *ret_n = n;
        return r;
}

static void free_filters(nsr_bpf *bpf, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(bpf[i].data);
        free(bpf);
}

/* Best-effort mode's Landlock ruleset. Without Landlock nothing would
 * keep the command from the home dir and every other file the user can
 * write: seccomp alone confines no path. So best-effort mode refuses to
 * run then; only --sandbox=off runs without isolation, when asked. */
static int landlock_ruleset(nsr_project *pj, const char *tmpdir, const uint16_t *ports, size_t n_ports, int *ret_fd,
                            bool *ret_tcp, char *why, size_t why_len, nsr_error *err) {
        *ret_fd = -1;
        int abi = nsr_landlock_abi_probe();
        if (abi < 0)
                return nsr_error_set(err, -abi,
                                     "best-effort mode cannot confine the file system here: no user namespace (%s) "
                                     "and no Landlock (landlock_create_ruleset fails); nothing ran. Run \"nsrun "
                                     "doctor\" for details; --sandbox=off runs without any isolation",
                                     why);
        _cleanup_strv_free_ char **paths = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; i < pj->n; i++)
                nsr_strv_extend(&paths, pj->p[i].path);
        _cleanup_strv_free_ char **ttys = NULL;
        (void) nsr_confine_terminals(&ttys);
        nsr_confine_paths cp = {
                .hidden = pj->hidden,
                .projects = paths,
                .rw = pj->rw,
                .ro = pj->ro,
                .tmpdir = tmpdir,
                .terminals = ttys,
        };
        _cleanup_(nsr_confine_rules_done) nsr_landlock_rules rules = { 0 };
        int r = nsr_confine_rules(&cp, &rules, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_ports && i < ELEMENTSOF(rules.connect_ports); i++)
                rules.connect_ports[rules.n_connect_ports++] = ports[i];
        int fd = -1;
        nsr_landlock_info info;
        r = nsr_landlock_build(&rules, &fd, &info, err);
        if (r < 0)
                return r;
        snprintf(why, why_len, "Landlock ABI %d: %zu rules%s%s", info.abi, info.n_rules,
                 info.tcp ? (n_ports ? ", TCP only to nsrun's relay" : ", no TCP") : ", TCP not covered (ABI < 4)",
                 info.scope ? ", scoped" : "");
        *ret_fd = fd;
        *ret_tcp = info.tcp;
        return 0;
}

/* Best-effort mode: the private TMPDIR made, and the Landlock ruleset
 * that confines the command (to nsrun's relay alone, with --allow-host). */
static int confine_landlock(nsr_project *pj, int run_fd, attempt *a, const char *tmpdir, const nsr_relay *relay,
                            const uint16_t *relay_ports, int *ruleset, nsr_error *err) {
        int r = 0;

        if (mkdirat(run_fd, "tmp", 0700) < 0 && errno != EEXIST)
                r = nsr_error_set(err, errno, "cannot create the private temp dir %s", tmpdir);
        char info[sizeof(a->reason) + 64];
        snprintf(info, sizeof(info), "%s", a->reason);
        bool tcp = false;
        if (r >= 0)
                r = landlock_ruleset(pj, tmpdir, relay_ports, relay ? 2 : 0, ruleset, &tcp, info, sizeof(info), err);
        if (r >= 0 && relay && !tcp)
                r = nsr_error_setx(err, EPERM,
                                   "--allow-host in best-effort mode needs Landlock ABI 4 or later to confine "
                                   "TCP to nsrun's relay (%s); the run is refused",
                                   info);
        if (r >= 0 && relay)
                note(pj,
                     "nsrun: best-effort --allow-host: the relay is on 127.0.0.1:%u and :%u; Landlock "
                     "limits TCP by port, not address, so those two port numbers reach any host directly",
                     (unsigned) relay_ports[0], (unsigned) relay_ports[1]);
        if (r >= 0) {
                a->landlock = true;
                note(pj, "nsrun: best-effort sandbox: landlock, seccomp (no user namespace: %s)", a->reason);
        }
        return r;
}

/* --events-fd: the watcher that reports the projects' changes as they
 * happen. */
static int start_events(nsr_project *pj, pid_t *watcher, int *watcher_stop, nsr_error *err) {
        nsr_plan *p = pj->plan;
        nsr_events_project *ev = nsr_malloc0((pj->n + 1) * sizeof(nsr_events_project));
        char **snaps = nsr_malloc0((pj->n + 1) * sizeof(char *));
        for (size_t i = 0; i < pj->n; i++) {
                snaps[i] = pj->live ? nsr_asprintf("%s/backup/p%zu", pj->run_dir, i) : NULL;
                ev[i] = (nsr_events_project){ .path = pj->p[i].path,
                                              .upper = pj->live ? pj->p[i].path : pj->p[i].upper,
                                              .lower = snaps[i] };
        }
        int r = nsr_events_start(p->proj.events_fd, ev, pj->n, watcher, watcher_stop, err);
        for (size_t i = 0; i < pj->n; i++)
                free(snaps[i]);
        free(snaps);
        free(ev);
        return r;
}

/* The run dir goes through the monitor, after the clone, when the root
 * needs of it only the overlays' upper and work dirs, which the child opens
 * last (nsr_launch_extra.after_clone): the namespace sandbox with its
 * overlay, no workspace skeleton (bound from the run dir), no --events-fd
 * (its watcher starts on the upper dirs before the launch), and not for a
 * session, whose daemon makes it once. Live writes snapshot into it before
 * anything runs; the other sandboxes have no monitor of this kind. */
bool project_run_dir_deferred(const run_ctx *c) {
        const nsr_project *pj = c->pj;
        return c->a.conf == CONF_NAMESPACES && !pj->live && !pj->skel && !pj->session && pj->plan->proj.events_fd == -1;
}

static int make_run_dir(void *userdata, nsr_error *err) {
        run_ctx *c = userdata;
#ifdef NSR_TEST_HOOKS
        /* A slow state dir: the tests show the root waits for it. */
        const char *delay = getenv("NSRUN_TEST_RUN_DIR_DELAY_MS");
        if (delay)
                (void) usleep((useconds_t) atoi(delay) * 1000);
#endif
        int r = project_create_run(c, err);
        nsr_timing_mark_now(c->pj->plan->timing, "run dir and record, beside the root");
        return r;
}

/* The plan's hidden paths (NSR_PREPARE_DEFER_HIDDEN), looked up now. A
 * failure before the run dir is made leaves no run (as a run dir that
 * could not be made); after it, the run failed to launch (a retry on
 * another confinement that made its run dir first). */
static int fill_hidden_now(run_ctx *c, char **ret_packed, size_t *ret_len, nsr_error *err) {
        nsr_project *pj = c->pj;
        int r = nsr_profile_fill(TAKE_PTR(pj->later), pj->plan, ret_packed, ret_len, err);
        if (r < 0 && c->run_fd < 0)
                c->create_failed = true;
        return r;
}

/* The same in the monitor, while the child makes its namespaces
 * (nsr_launch_extra.fill_slots), before the run dir (make_run_dir). */
static int fill_hidden(void *userdata, char **ret_packed, size_t *ret_len, nsr_error *err) {
        run_ctx *c = userdata;
        int r = fill_hidden_now(c, ret_packed, ret_len, err);
        nsr_timing_mark_now(c->pj->plan->timing, "monitor: hidden paths looked up");
        return r;
}

/* One launch: the command runs, or nothing ran (-errno, err set). */
static int launch_once(run_ctx *c, const struct timespec *fence, nsr_launch_result *lr, nsr_error *err) {
        nsr_project *pj = c->pj;
        attempt *a = &c->a;
        int run_fd = c->run_fd;
        nsr_plan *p = pj->plan;
        bool egress = !nsr_egress_rules_empty(&p->egress);
        /* Without isolation the command would have the host's whole
         * network: refuse rather than pretend to filter it. */
        if (a->conf == CONF_NONE && egress)
                return nsr_error_setx(err, EPERM,
                                      "--allow-host needs a sandbox that confines the network; --sandbox=off has "
                                      "none, so the run is refused");
        /* Best-effort mode: the relay listens on the host's loopback and
         * Landlock lets the command connect to it alone (see relay.h). */
        _cleanup_(nsr_relay_freep) nsr_relay *relay = NULL;
        _cleanup_strv_free_ char **relay_env = NULL;
        uint16_t relay_ports[2] = { 0, 0 };
        if (a->conf == CONF_LANDLOCK && egress) {
                if (p->net_log_fd != -1 && fcntl(p->net_log_fd, F_SETFD, FD_CLOEXEC) < 0)
                        return nsr_error_set(err, errno, "--net-log-fd %d", p->net_log_fd);
                int k = nsr_relay_new(&p->egress, p->net_log_fd, &relay, err);
                if (k >= 0)
                        k = nsr_relay_listen_host(relay, &relay_ports[0], &relay_ports[1], err);
                if (k < 0)
                        return k;
                relay_env = nsr_malloc0(sizeof(char *));
                nsr_relay_env_ports(&relay_env, relay_ports[0], relay_ports[1]);
        }
        nsr_bpf *bpf = NULL;
        size_t n_bpf = 0;
        int r = compile_filters(p, a->conf, &bpf, &n_bpf, err);
        nsr_timing_mark_now(p->timing, "seccomp filters (compiled or cached)");
        _cleanup_close_ int ruleset = -1;
        _cleanup_free_ char *tmpdir = NULL;
        if (r >= 0 && a->conf == CONF_LANDLOCK) {
                /* The private TMPDIR, inside the run dir (the state dir is
                 * hidden; this one dir is granted). */
                tmpdir = nsr_asprintf("%s/tmp", pj->run_dir);
                r = confine_landlock(pj, run_fd, a, tmpdir, relay, relay_ports, &ruleset, err);
        } else if (r >= 0 && a->conf == CONF_NONE)
                note(pj, "nsrun: --sandbox=off: no isolation at all; the projects are still snapshotted, captured "
                         "and reported");

        /* --pids is RLIMIT_NPROC in the sandbox's own user namespace;
         * without one it would count every process of the user. */
        if (r >= 0 && a->conf != CONF_NAMESPACES && p->run.pids) {
                if (p->run.pids_explicit)
                        r = nsr_error_setx(err, EOPNOTSUPP,
                                           "--pids needs the namespace sandbox: without a user namespace of its own, "
                                           "RLIMIT_NPROC would count every process of the user");
                p->run.pids = 0;
        }
        pid_t watcher = -1;
        int watcher_stop = -1;
        if (r >= 0 && p->proj.events_fd != -1)
                r = start_events(pj, &watcher, &watcher_stop, err);
        /* A session keeps one overlay mounted for many commands: the
         * other sandboxes have none to keep. */
        if (r >= 0 && pj->session && (a->conf != CONF_NAMESPACES || pj->live))
                r = nsr_error_setx(err, EOPNOTSUPP,
                                   "sessions need the namespace sandbox with an overlay; this host or these options "
                                   "give %s",
                                   a->conf == CONF_NAMESPACES ? "live writes (no overlay)" : "no namespaces");
        /* Everything a session started must end with it: its pid
         * namespace is what takes the background processes down. */
        if (r >= 0 && pj->session && (!p->unshare_pid || p->pidns_fd != -1 || p->as_pid_1))
                r = nsr_error_setx(err, EOPNOTSUPP,
                                   "sessions need a pid namespace of their own (no --pidns "
                                   "or --as-pid-1)");
        if (r >= 0) {
                nsr_refused_done(&a->refused);
                bool record = n_bpf > 0;
#ifdef NSR_TEST_HOOKS
                /* bench/refused.sh: the same run without the record. */
                if (getenv("NSRUN_TEST_NO_REFUSED_RECORD"))
                        record = false;
#endif
                if (record)
                        nsr_refused_init(&a->refused, bpf[0].data, bpf[0].len, p->proj.events_fd);
                if (a->conf == CONF_NAMESPACES) {
                        nsr_launch_extra extra = { .bpf = bpf,
                                                   .n_bpf = n_bpf,
                                                   .kill_leftovers = true,
                                                   .start_fence = *fence,
                                                   .refused = record ? &a->refused : NULL,
                                                   .session = pj->session,
                                                   .hold_mounts = !pj->session };
                        _cleanup_free_ char *runs = run_fd < 0 ? nsr_asprintf("%s/runs", pj->state_dir) : NULL;
                        if (runs) {
                                extra.after_clone = make_run_dir;
                                extra.after_clone_data = c;
                                extra.after_clone_under = runs;
                        }
                        if (pj->later) {
                                extra.fill_slots = fill_hidden;
                                extra.fill_slots_data = c;
                        }
                        nsr_timing_mark_now(p->timing, "landlock, events, listeners ready");
                        r = nsr_launch(p, &extra, lr, err);
                        a->landlock = lr->landlock;
                } else {
                        nsr_confine_opts co = { .plan = p,
                                                .relay = relay,
                                                .extra_env = relay_env,
                                                .landlock_fd = ruleset,
                                                .bpf = bpf,
                                                .n_bpf = n_bpf,
                                                .tmpdir = tmpdir,
                                                .spare = &watcher,
                                                .n_spare = watcher > 0 ? 1 : 0,
                                                .refused = record ? &a->refused : NULL };
                        r = nsr_confine_run(&co, lr, err);
                }
        }
        lr->events_dropped += nsr_events_stop(watcher, watcher_stop);
        free_filters(bpf, n_bpf);
        if (tmpdir) {
                nsr_error e2 = { 0 };
                (void) nsr_rm_rf_at(run_fd, "tmp", &e2);
        }
        return r;
}

/* The home's throwaway overlay failed to mount: nested in a sandbox that
 * hid files in the home with mounts of its own, those mounts are locked
 * children of the home, and overlay refuses such a lower layer (EINVAL,
 * "failed to clone lowerpath"). The home is then bound read-only, with the
 * enclosing sandbox's hiding intact. */
static bool home_overlay_failed(nsr_project *pj, const nsr_error *err) {
        nsr_plan *p = pj->plan;
        /* The launch got this plan: err->op names the op that failed. */
        if (err->kind == NSR_ERR_OVERLAY_MOUNT && err->op >= 1 && err->op <= p->n_ops) {
                nsr_op *op = &p->ops[err->op - 1];
                if (op->type != NSR_OP_TMP_OVERLAY)
                        return false;
                op->type = NSR_OP_RO_BIND;
                free(op->source);
                op->source = nsr_strdup(op->dest);
                nsr_strv_free(op->overlay_srcs);
                op->overlay_srcs = NULL;
                note(pj,
                     "nsrun: the home %s cannot be overlaid here (it holds mounts of the enclosing sandbox): it "
                     "is read-only instead",
                     op->dest);
                return true;
        }
        return false;
}

/* Nothing ran: may another way run it? */
static bool retry_after(nsr_project *pj, attempt *a, const nsr_error *err) {
        const nsr_project_opts *o = &pj->plan->proj;
        if (a->conf != CONF_NAMESPACES)
                return false;
        if ((err->code == EINVAL || err->code == EOPNOTSUPP) && home_overlay_failed(pj, err))
                return true;
        if (!pj->live && !o->keep && !o->workspace_root && err->kind == NSR_ERR_OVERLAY_MOUNT &&
            (err->code == EINVAL || err->code == EOPNOTSUPP)) {
                /* The usual cause: the project already sits on an overlay
                 * (nsrun or a container inside nsrun), and the kernel
                 * stacks overlays only two deep. */
                char buf[NSR_ERROR_MSG_MAX + 256];
                nsr_error_format(err, buf, sizeof(buf));
                note(pj,
                     "nsrun: the overlay cannot be mounted (%s; an overlay stack too deep?): running with "
                     "--no-overlay (writes go to the projects, a snapshot backs them)",
                     buf);
                switch_to_live(pj);
                return true;
        }
        if (o->sandbox == NSR_SANDBOX_BEST_EFFORT && nsr_hostcheck_hint(err)) {
                /* The probe said yes, the real launch says no: same thing. */
                nsr_error_format(err, a->reason, sizeof(a->reason));
                a->conf = CONF_LANDLOCK;
                switch_to_live(pj);
                return true;
        }
        return false;
}

static int64_t ns_between(struct timespec a, struct timespec b) {
        return (int64_t) (b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
}

/* The realtime clock stepped back during the run (settimeofday, a VM
 * resumed, NTP stepping) when less realtime than monotonic time passed:
 * a host write after the start can then carry a ctime before run_start.
 * Moving run_start back by the step keeps such writes conflicts; NTP's
 * slewing moves both clocks alike and changes nothing. */
static struct timespec start_after_clock_steps(struct timespec run_start, struct timespec started,
                                               struct timespec ended, struct timespec mono_start,
                                               struct timespec mono_end) {
        int64_t back = ns_between(mono_start, mono_end) - ns_between(started, ended);
        if (back <= 1000000) /* a millisecond of noise between the readings */
                return run_start;
        int64_t t = (int64_t) run_start.tv_sec * 1000000000 + run_start.tv_nsec - back;
        return (struct timespec){ .tv_sec = (time_t) (t / 1000000000), .tv_nsec = (long) (t % 1000000000) };
}

/* What will confine the command. Best-effort mode asks first whether the
 * namespace sandbox can be built (a probe in a child, about a
 * millisecond); required mode just tries it. */
int project_choose_confinement(run_ctx *c, nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        attempt *a = &c->a;

        a->conf = CONF_NAMESPACES;
        if (p->proj.sandbox == NSR_SANDBOX_OFF)
                a->conf = CONF_NONE;
        else if (p->proj.sandbox == NSR_SANDBOX_BEST_EFFORT &&
                 !nsr_hostcheck_userns_works(a->reason, sizeof(a->reason)))
                a->conf = CONF_LANDLOCK;
        if (a->conf != CONF_NAMESPACES && !pj->live)
                switch_to_live(pj);
        /* A session keeps its own overlay (its --keep is implied): say
         * why it cannot have one here, and what works instead. */
        if (pj->session && a->conf == CONF_NAMESPACES && pj->live)
                return nsr_error_setxk(err, NSR_ERR_USAGE, EOPNOTSUPP,
                                       "sessions need the overlay, which --no-overlay turns off: start the session "
                                       "without it");
        if (pj->session && a->conf != CONF_NAMESPACES)
                return nsr_error_setxk(
                        err, a->conf == CONF_LANDLOCK ? NSR_ERR_CLONE : NSR_ERR_USAGE, EOPNOTSUPP,
                        "sessions need the namespace sandbox with an overlay, and here %s%s%s; run each command "
                        "as a one-shot run instead (nsrun --sandbox=best-effort -p DIR -- COMMAND), whose writes go "
                        "live with a snapshot to undo them",
                        a->conf == CONF_LANDLOCK ? "user namespaces are refused" : "--sandbox=off was asked for",
                        a->conf == CONF_LANDLOCK && a->reason[0] ? ": " : "",
                        a->conf == CONF_LANDLOCK ? a->reason : "");
        if (pj->live && p->proj.keep)
                return nsr_error_setx(err, EINVAL,
                                      "--keep needs the overlay, and here the command would write to the projects "
                                      "themselves (%s)",
                                      a->conf == CONF_LANDLOCK ? "best-effort mode without user namespaces"
                                                               : "--no-overlay");
        return 0;
}

/* The command runs (another way if the first could not start it).
 * -errno if nothing ran. */
int project_launch(run_ctx *c, nsr_error *err) {
        nsr_project *pj = c->pj;
        nsr_plan *p = pj->plan;
        int r;

        /* nsrun's own fds never reach the sandbox: a command that could
         * write to the report or the event stream could forge them. */
        if (p->proj.report_fd != -1)
                (void) fcntl(p->proj.report_fd, F_SETFD, FD_CLOEXEC);
        if (p->proj.events_fd != -1)
                (void) fcntl(p->proj.events_fd, F_SETFD, FD_CLOEXEC);

        /* The command starts once every later host write gets a ctime
         * after run_start: at once when the kernel's ctime floor can be
         * put past it (fence.c), else when the coarse clock passes it. */
        struct timespec fence = c->run_start;
        bool floor = true;
#ifdef NSR_TEST_HOOKS
        if (getenv("NSRUN_TEST_NO_CTIME_FLOOR"))
                floor = false;
#endif
        if (floor && nsr_fence_raise_floor(c->statefd, &c->run_start)) {
                fence = (struct timespec){ 0 };
                nsr_timing_mark_now(p->timing, "start fence: ctime floor past T");
        }
        nsr_launch_result lr = { .exit_code = NSR_EXIT_FAILURE, .mnt_ns = -1 };
        for (int tries = 0;; tries++) {
                /* The hidden paths: looked up by the monitor that makes the
                 * run dir (launch_once), else now, before a run dir made
                 * here, so that a failure leaves no run behind. */
                if (pj->later && !(project_run_dir_deferred(c) && c->run_fd < 0)) {
                        r = fill_hidden_now(c, NULL, NULL, err);
                        if (r < 0)
                                break;
                }
                /* The run dir, unless the monitor makes it (a retry may
                 * have left the overlay). */
                r = c->run_fd < 0 && !project_run_dir_deferred(c) ? project_create_run(c, err) : 0;
                /* Live writes: the snapshots first, before anything runs
                 * (a project over --snapshot-limit is refused here). */
                if (r >= 0 && pj->live)
                        r = take_snapshots(pj, c->run_fd, err);
                if (r >= 0) {
                        nsr_strv_free(lr.limits_hit);
                        safe_close(lr.mnt_ns);
                        lr = (nsr_launch_result){ .exit_code = NSR_EXIT_FAILURE, .mnt_ns = -1 };
                        r = launch_once(c, &fence, &lr, err);
                }
                if (r >= 0 || c->create_failed || tries >= 3 || !retry_after(pj, &c->a, err))
                        break;
                nsr_error_clear(err);
        }
        c->lr = lr; /* owned by c */
        if (p->proj.events_fd != -1)
                p->proj.events_fd = safe_close(p->proj.events_fd);
        struct timespec mono_end;
        clock_gettime(CLOCK_REALTIME, &c->ended);
        clock_gettime(CLOCK_MONOTONIC, &mono_end);
        c->run_start = start_after_clock_steps(c->run_start, c->started, c->ended, c->mono_start, mono_end);
        return r;
}
