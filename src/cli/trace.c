/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

#include "base/utf8.h"
#include "cli/options.h"
#include "cli/trace.h"

/* Every option name comes from the options table, never a second spelling. */
#define OPT(x) (nsr_options[NSR_OPT_##x].name)

static void add(char ***v, const char *s) {
        nsr_strv_extend(v, s);
}

static void addf(char ***v, const char *fmt, ...) _printf_(2, 3);
static void addf(char ***v, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        nsr_strv_push(v, nsr_vasprintf(fmt, ap));
        va_end(ap);
}

static void add_fd(char ***v, const char *opt, int fd) {
        if (fd == -1)
                return;
        add(v, opt);
        addf(v, "%d", fd);
}

static char *cap_name(int cap) {
        char *n = cap_to_name((cap_value_t) cap);
        if (!n)
                return nsr_asprintf("%d", cap);
        char *r = nsr_strdup(n);
        cap_free(n);
        for (char *s = r; *s; s++)
                *s = (char) toupper((unsigned char) *s);
        return r;
}

static const char *op_option(const nsr_op *op) {
        bool try_ = op->flags & NSR_OPF_TRY;
        switch (op->type) {
        case NSR_OP_BIND:
                return try_ ? OPT(BIND_TRY) : OPT(BIND);
        case NSR_OP_RO_BIND:
                return try_ ? OPT(RO_BIND_TRY) : OPT(RO_BIND);
        case NSR_OP_DEV_BIND:
                return try_ ? OPT(DEV_BIND_TRY) : OPT(DEV_BIND);
        case NSR_OP_BIND_FD:
                return OPT(BIND_FD);
        case NSR_OP_RO_BIND_FD:
                return OPT(RO_BIND_FD);
        case NSR_OP_REMOUNT_RO:
                return OPT(REMOUNT_RO);
        case NSR_OP_OVERLAY:
                return OPT(OVERLAY);
        case NSR_OP_TMP_OVERLAY:
                return OPT(TMP_OVERLAY);
        case NSR_OP_RO_OVERLAY:
                return OPT(RO_OVERLAY);
        case NSR_OP_PROC:
                return OPT(PROC);
        case NSR_OP_DEV:
                return OPT(DEV);
        case NSR_OP_TMPFS:
                return OPT(TMPFS);
        case NSR_OP_MQUEUE:
                return OPT(MQUEUE);
        case NSR_OP_DIR:
                return OPT(DIR);
        case NSR_OP_FILE:
                return OPT(FILE);
        case NSR_OP_BIND_DATA:
                return OPT(BIND_DATA);
        case NSR_OP_RO_BIND_DATA:
                return OPT(RO_BIND_DATA);
        case NSR_OP_SYMLINK:
                return OPT(SYMLINK);
        case NSR_OP_CHMOD:
                return OPT(CHMOD);
        case NSR_OP_HOSTNAME:
                return OPT(HOSTNAME);
        case NSR_OP_SLOT: /* filled before any trace (project/prepare.c) */
        case _NSR_OP_TYPE_MAX:
        case _NSR_OP_TYPE_INVALID:
                break;
        }
        return NULL;
}

static void add_op(char ***v, const nsr_op *op) {
        const char *opt = op_option(op);
        if (!opt)
                return;
        if (op->perms != NSR_PERMS_UNSET && nsr_op_type_takes_perms(op->type)) {
                add(v, OPT(PERMS));
                addf(v, "%04o", (unsigned) op->perms);
        }
        if (op->type == NSR_OP_TMPFS && op->size) {
                add(v, OPT(SIZE));
                addf(v, "%llu", (unsigned long long) op->size);
        }
        for (size_t i = 0; op->overlay_srcs && op->overlay_srcs[i]; i++) {
                add(v, OPT(OVERLAY_SRC));
                add(v, op->overlay_srcs[i]);
        }
        add(v, opt);
        switch (op->type) {
        case NSR_OP_BIND:
        case NSR_OP_RO_BIND:
        case NSR_OP_DEV_BIND:
        case NSR_OP_SYMLINK:
                add(v, op->source);
                add(v, op->dest);
                break;
        case NSR_OP_BIND_FD:
        case NSR_OP_RO_BIND_FD:
        case NSR_OP_FILE:
        case NSR_OP_BIND_DATA:
        case NSR_OP_RO_BIND_DATA:
                addf(v, "%d", op->fd);
                add(v, op->dest);
                break;
        case NSR_OP_OVERLAY:
                add(v, op->source);
                add(v, op->workdir);
                add(v, op->dest);
                break;
        case NSR_OP_CHMOD:
                addf(v, "%04o", (unsigned) op->perms);
                add(v, op->dest);
                break;
        case NSR_OP_REMOUNT_RO:
        case NSR_OP_TMP_OVERLAY:
        case NSR_OP_RO_OVERLAY:
        case NSR_OP_PROC:
        case NSR_OP_DEV:
        case NSR_OP_TMPFS:
        case NSR_OP_MQUEUE:
        case NSR_OP_DIR:
        case NSR_OP_HOSTNAME:
                add(v, op->dest);
                break;
        case NSR_OP_SLOT:
        case _NSR_OP_TYPE_MAX:
        case _NSR_OP_TYPE_INVALID:
                break;
        }
}

char **nsr_trace_argv(const nsr_plan *p) {
        char **v = nsr_malloc0(sizeof(char *));
        if (p->level_prefix)
                add(&v, OPT(LEVEL_PREFIX));
        if (p->unshare_user)
                add(&v, OPT(UNSHARE_USER));
        if (p->unshare_user_try)
                add(&v, OPT(UNSHARE_USER_TRY));
        if (p->unshare_ipc)
                add(&v, OPT(UNSHARE_IPC));
        if (p->unshare_pid)
                add(&v, OPT(UNSHARE_PID));
        if (p->unshare_net)
                add(&v, OPT(UNSHARE_NET));
        if (p->unshare_uts)
                add(&v, OPT(UNSHARE_UTS));
        if (p->unshare_cgroup)
                add(&v, OPT(UNSHARE_CGROUP));
        if (p->unshare_cgroup_try)
                add(&v, OPT(UNSHARE_CGROUP_TRY));
        add_fd(&v, OPT(USERNS), p->userns_fd);
        add_fd(&v, OPT(USERNS2), p->userns2_fd);
        add_fd(&v, OPT(PIDNS), p->pidns_fd);
        if (p->disable_userns)
                add(&v, OPT(DISABLE_USERNS));
        if (p->assert_userns_disabled)
                add(&v, OPT(ASSERT_USERNS_DISABLED));
        if (p->has_uid) {
                add(&v, OPT(UID));
                addf(&v, "%u", (unsigned) p->uid);
        }
        if (p->has_gid) {
                add(&v, OPT(GID));
                addf(&v, "%u", (unsigned) p->gid);
        }
        for (size_t i = 0; i < p->n_env; i++) {
                const nsr_env_edit *e = &p->env[i];
                switch (e->action) {
                case NSR_ENV_CLEAR:
                        add(&v, OPT(CLEARENV));
                        break;
                case NSR_ENV_SET:
                        add(&v, OPT(SETENV));
                        add(&v, e->name);
                        add(&v, e->value);
                        break;
                case NSR_ENV_UNSET:
                        add(&v, OPT(UNSETENV));
                        add(&v, e->name);
                        break;
                case _NSR_ENV_ACTION_MAX:
                case _NSR_ENV_ACTION_INVALID:
                        break;
                }
        }
        if (p->chdir) {
                add(&v, OPT(CHDIR));
                add(&v, p->chdir);
        }
        if (p->argv0) {
                add(&v, OPT(ARGV0));
                add(&v, p->argv0);
        }
        for (size_t i = 0; i < p->n_caps; i++) {
                add(&v, p->caps[i].add ? OPT(CAP_ADD) : OPT(CAP_DROP));
                if (p->caps[i].cap < 0)
                        add(&v, "ALL");
                else
                        nsr_strv_push(&v, cap_name(p->caps[i].cap));
        }
        for (size_t i = 0; i < p->n_seccomp; i++)
                add_fd(&v, p->seccomp[i].kind == NSR_SECCOMP_FD ? OPT(SECCOMP) : OPT(ADD_SECCOMP_FD), p->seccomp[i].fd);
        add_fd(&v, OPT(INFO_FD), p->info_fd);
        add_fd(&v, OPT(JSON_STATUS_FD), p->json_status_fd);
        add_fd(&v, OPT(BLOCK_FD), p->block_fd);
        add_fd(&v, OPT(USERNS_BLOCK_FD), p->userns_block_fd);
        add_fd(&v, OPT(SYNC_FD), p->sync_fd);
        for (size_t i = 0; p->lock_files && p->lock_files[i]; i++) {
                add(&v, OPT(LOCK_FILE));
                add(&v, p->lock_files[i]);
        }
        if (p->die_with_parent)
                add(&v, OPT(DIE_WITH_PARENT));
        if (p->new_session)
                add(&v, OPT(NEW_SESSION));
        if (p->as_pid_1)
                add(&v, OPT(AS_PID_1));
        if (p->not_a_security_boundary)
                add(&v, OPT(NOT_A_SECURITY_BOUNDARY));
        for (size_t i = 0; i < p->n_ops; i++)
                add_op(&v, &p->ops[i]);
        add(&v, "--");
        for (size_t i = 0; p->argv && p->argv[i]; i++)
                add(&v, p->argv[i]);
        return v;
}

char **nsr_trace_notes(const nsr_plan *p) {
        char **v = nsr_malloc0(sizeof(char *));
        for (size_t i = 0; i < p->n_seccomp; i++)
                addf(&v, "fd %d: a seccomp BPF program (%s)", p->seccomp[i].fd,
                     p->seccomp[i].kind == NSR_SECCOMP_FD ? OPT(SECCOMP) : OPT(ADD_SECCOMP_FD));
        for (size_t i = 0; i < p->n_ops; i++) {
                const nsr_op *op = &p->ops[i];
                if (op->type == NSR_OP_BIND_FD || op->type == NSR_OP_RO_BIND_FD)
                        addf(&v, "fd %d: a directory or path to bind at %s", op->fd, op->dest);
                else if (op->type == NSR_OP_FILE || op->type == NSR_OP_BIND_DATA || op->type == NSR_OP_RO_BIND_DATA)
                        addf(&v, "fd %d: the contents of %s", op->fd, op->dest);
        }
        if (p->info_fd != -1)
                addf(&v, "fd %d: receives the %s JSON", p->info_fd, OPT(INFO_FD));
        if (p->json_status_fd != -1)
                addf(&v, "fd %d: receives the %s JSON lines", p->json_status_fd, OPT(JSON_STATUS_FD));
        if (p->block_fd != -1)
                addf(&v, "fd %d: the sandbox waits for data on it (%s)", p->block_fd, OPT(BLOCK_FD));
        if (p->userns_block_fd != -1)
                addf(&v, "fd %d: setup waits for data on it (%s)", p->userns_block_fd, OPT(USERNS_BLOCK_FD));
        if (p->sync_fd != -1)
                addf(&v, "fd %d: held open while the sandbox lives (%s)", p->sync_fd, OPT(SYNC_FD));
        if (p->userns_fd != -1)
                addf(&v, "fd %d: a user namespace to join", p->userns_fd);
        if (p->userns2_fd != -1)
                addf(&v, "fd %d: a user namespace to switch to after setup", p->userns2_fd);
        if (p->pidns_fd != -1)
                addf(&v, "fd %d: a pid namespace to join", p->pidns_fd);
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].flags & NSR_OPF_VERIFY)
                        addf(&v, "nsrun-only: %s is resolved once; the overlay fails if it changes before the mount",
                             p->ops[i].dest);
        uint64_t shared = 0;
        for (size_t i = 0; i < p->n_ops; i++)
                if ((p->ops[i].flags & NSR_OPF_SHARED_TMP) && p->ops[i].size > shared &&
                    (p->ops[i].type == NSR_OP_TMPFS || p->ops[i].type == NSR_OP_DEV ||
                     p->ops[i].type == NSR_OP_TMP_OVERLAY))
                        shared = p->ops[i].size;
        if (shared)
                addf(&v,
                     "nsrun-only: the tmpfs of --tmpfs, --dev and --tmp-overlay with --size %llu are dirs of one "
                     "tmpfs: together they hold at most %llu bytes",
                     (unsigned long long) shared, (unsigned long long) shared);
        if (p->close_inherited_fds)
                addf(&v,
                     "nsrun-only: file descriptors above 2 that the caller left open are closed before the command runs");
        if (p->landlock_scope)
                addf(&v, "nsrun-only: Landlock scopes abstract unix sockets and signals to the sandbox (ABI 6+)");
        if (p->map_all_ids)
                addf(&v, "nsrun-only: the whole uid/gid range is mapped into the user namespace");
        if (p->proj.projects && (p->proj.no_overlay || p->proj.sandbox == NSR_SANDBOX_OFF))
                addf(&v,
                     "nsrun-only: the command writes to the projects in place; a snapshot taken before it runs "
                     "is compared with them afterwards, and the changes are reported and %s",
                     p->proj.discard ? "put back" : "recorded so that nsrun undo can restore them");
        else if (p->proj.projects)
                addf(&v,
                     "nsrun-only: after the command, the changes in the upper layers are captured, reported and "
                     "%s",
                     p->proj.discard ? "discarded"
                     : p->proj.keep  ? "kept for review"
                                     : "committed to the projects as one transaction");
        if (p->proj.projects && !p->proj.discard && !p->proj.keep)
                addf(&v, "nsrun-only: a path the host changed after the command started is a conflict; %s (%s=%s)",
                     p->proj.on_conflict == NSR_CONFLICT_APPLY_REST
                             ? "the rest applies, a git dir with a conflict is held back whole"
                     : p->proj.on_conflict == NSR_CONFLICT_KEEP_ALL ? "then nothing applies and the run is kept"
                     : p->proj.on_conflict == NSR_CONFLICT_FAIL
                             ? "then nothing applies, the run is kept and nsrun exits 125"
                     : p->proj.on_conflict == NSR_CONFLICT_PREFER_HOST
                             ? "the host's version stays, the sandbox's is set aside, the rest applies"
                             : "the sandbox's version overwrites the host's, which is backed up for nsrun undo",
                     OPT(ON_CONFLICT), nsr_conflict_mode_to_string(p->proj.on_conflict));
        if (p->proj.projects && p->proj.sandbox == NSR_SANDBOX_BEST_EFFORT)
                addf(&v,
                     "nsrun-only: where user namespaces are forbidden, none of the above applies: Landlock and "
                     "seccomp confine the command instead (%s=%s)",
                     OPT(SANDBOX), nsr_sandbox_mode_to_string(p->proj.sandbox));
        if (p->proj.projects && p->proj.sandbox == NSR_SANDBOX_OFF)
                addf(&v, "nsrun-only: %s=%s: none of the above applies; the command runs without isolation",
                     OPT(SANDBOX), nsr_sandbox_mode_to_string(p->proj.sandbox));
        if (p->proj.projects && p->seccomp_policies)
                addf(&v, "nsrun-only: system calls the first policy refuses are answered by nsrun through a seccomp "
                         "listener (same errno) and recorded in the report");
        {
                _cleanup_strv_free_ char **rc = nsr_runctl_describe(&p->run);
                for (size_t i = 0; rc[i]; i++)
                        addf(&v, "nsrun-only: %s", rc[i]);
        }
        if (p->seccomp_policies) {
                char *list = nsr_strdup("");
                for (size_t i = 0; p->seccomp_policies[i]; i++) {
                        char *n = nsr_asprintf("%s%s%s %s", list, i ? " " : "", OPT(SECCOMP_POLICY),
                                               p->seccomp_policies[i]);
                        free(list);
                        list = n;
                }
                addf(&v, "nsrun-only: %s (compiled to BPF and loaded before the programs above)", list);
                free(list);
        }
        if (!nsr_egress_rules_empty(&p->egress)) {
                char *list = nsr_strdup("");
                for (size_t i = 0; i < p->egress.n_allow + p->egress.n_deny; i++) {
                        bool deny = i >= p->egress.n_allow;
                        const nsr_egress_pattern *pat =
                                deny ? &p->egress.deny[i - p->egress.n_allow] : &p->egress.allow[i];
                        _cleanup_free_ char *q = nsr_shell_quote(pat->text);
                        char *n = nsr_asprintf("%s%s%s %s", list, i ? " " : "", deny ? OPT(DENY_HOST) : OPT(ALLOW_HOST),
                                               q);
                        free(list);
                        list = n;
                }
                addf(&v,
                     "nsrun-only: %s: the network namespace has only loopback; nsrun serves an HTTP proxy on "
                     "127.0.0.1:%d and a SOCKS5 proxy on 127.0.0.1:%d inside it, connects only to matching hosts "
                     "and sets HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY",
                     list, NSR_EGRESS_HTTP_PORT, NSR_EGRESS_SOCKS_PORT);
                free(list);
        }
        if (p->net_log_fd != -1)
                addf(&v, "nsrun-only: fd %d: receives a JSON line per proxied connection (%s)", p->net_log_fd,
                     OPT(NET_LOG_FD));
        return v;
}

char *nsr_shell_quote(const char *s) {
        return nsr_utf8_escape_flags(s, NSR_ESCAPE_SHELL);
}

char *nsr_trace_shell(const nsr_plan *p) {
        _cleanup_strv_free_ char **argv = nsr_trace_argv(p);
        _cleanup_strv_free_ char **notes = nsr_trace_notes(p);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return nsr_strdup("");
        fputs("bwrap", f);
        for (size_t i = 0; argv[i]; i++) {
                _cleanup_free_ char *q = nsr_shell_quote(argv[i]);
                fprintf(f, " %s", q);
        }
        fputc('\n', f);
        /* A note holds paths a profile chose: one comment line each, with
         * nothing a terminal obeys. */
        for (size_t i = 0; notes[i]; i++) {
                _cleanup_free_ char *shown = nsr_utf8_escape_flags(notes[i], NSR_ESCAPE_KEEP_BACKSLASH);
                fprintf(f, "# %s\n", shown);
        }
        fclose(f);
        return buf;
}

char *nsr_trace_nul(const nsr_plan *p, size_t *ret_len) {
        _cleanup_strv_free_ char **argv = nsr_trace_argv(p);
        size_t len = strlen("bwrap") + 1;
        for (size_t i = 0; argv[i]; i++)
                len += strlen(argv[i]) + 1;
        char *buf = nsr_malloc0(len + 1), *o = buf;
        memcpy(o, "bwrap", 6);
        o += 6;
        for (size_t i = 0; argv[i]; i++) {
                size_t l = strlen(argv[i]) + 1;
                memcpy(o, argv[i], l);
                o += l;
        }
        *ret_len = len;
        return buf;
}
