/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <assert.h>
#include <string.h>

#include "plan-eq.h"

#if defined(__x86_64__)
/* A tripwire: a field added to nsr_plan or nsr_op must be compared below
 * (then update the size here). */
/* Not compared: timing (NSRUN_TIMING's table, a debugging aid, not a setting). */
static_assert(sizeof(nsr_plan) == 968, "nsr_plan changed: update tests/unit/plan-eq.c");
static_assert(sizeof(nsr_op) == 80, "nsr_op changed: update tests/unit/plan-eq.c");
#endif

static const char *show(const char *s) {
        return s ? s : "(null)";
}

#define DIFF_STR(what, x, y)                                                                                           \
        do {                                                                                                           \
                if (!((x) == NULL && (y) == NULL) && !streq((x), (y)))                                                 \
                        return nsr_asprintf("%s: \"%s\" vs \"%s\"", (what), show(x), show(y));                         \
        } while (0)
#define DIFF_INT(what, x, y)                                                                                           \
        do {                                                                                                           \
                if ((long long) (x) != (long long) (y))                                                                \
                        return nsr_asprintf("%s: %lld vs %lld", (what), (long long) (x), (long long) (y));             \
        } while (0)

static char *diff_strv(const char *what, char *const *x, char *const *y) {
        size_t nx = nsr_strv_length(x), ny = nsr_strv_length(y);
        if (nx != ny)
                return nsr_asprintf("%s: %zu vs %zu entries", what, nx, ny);
        for (size_t i = 0; i < nx; i++)
                if (!streq(x[i], y[i]))
                        return nsr_asprintf("%s[%zu]: \"%s\" vs \"%s\"", what, i, x[i], y[i]);
        return NULL;
}

#define DIFF_STRV(what, x, y)                                                                                          \
        do {                                                                                                           \
                char *_d = diff_strv((what), (x), (y));                                                                \
                if (_d)                                                                                                \
                        return _d;                                                                                     \
        } while (0)

static char *diff_op(const nsr_op *x, const nsr_op *y) {
        DIFF_INT("type", x->type, y->type);
        DIFF_INT("flags", x->flags, y->flags);
        DIFF_STR("source", x->source, y->source);
        DIFF_STR("dest", x->dest, y->dest);
        DIFF_STR("workdir", x->workdir, y->workdir);
        DIFF_STRV("overlay_srcs", x->overlay_srcs, y->overlay_srcs);
        DIFF_INT("fd", x->fd, y->fd);
        DIFF_INT("perms", x->perms, y->perms);
        DIFF_INT("size", x->size, y->size);
        DIFF_INT("verify_dev", x->verify_dev, y->verify_dev);
        DIFF_INT("verify_ino", x->verify_ino, y->verify_ino);
        DIFF_INT("slot", x->slot, y->slot);
        return NULL;
}

static char *diff_env(const nsr_env_edit *x, const nsr_env_edit *y) {
        DIFF_INT("action", x->action, y->action);
        DIFF_STR("name", x->name, y->name);
        DIFF_STR("value", x->value, y->value);
        return NULL;
}

static char *diff_cap(const nsr_cap_edit *x, const nsr_cap_edit *y) {
        DIFF_INT("add", x->add, y->add);
        DIFF_INT("cap", x->cap, y->cap);
        return NULL;
}

static char *diff_seccomp(const nsr_seccomp_prog *x, const nsr_seccomp_prog *y) {
        DIFF_INT("kind", x->kind, y->kind);
        if (x->kind != NSR_SECCOMP_DATA)
                DIFF_INT("fd", x->fd, y->fd);
        DIFF_INT("len", x->len, y->len);
        if (x->len > 0 && (!x->data || !y->data || memcmp(x->data, y->data, x->len) != 0))
                return nsr_strdup("data differs");
        return NULL;
}

#define DIFF_ARRAY(name, fn, x, nx, y, ny)                                                                             \
        do {                                                                                                           \
                DIFF_INT("n_" name, (nx), (ny));                                                                       \
                for (size_t _i = 0; _i < (nx); _i++) {                                                                 \
                        _cleanup_free_ char *_d = fn(&(x)[_i], &(y)[_i]);                                              \
                        if (_d)                                                                                        \
                                return nsr_asprintf(name "[%zu].%s", _i, _d);                                          \
                }                                                                                                      \
        } while (0)

char *test_plan_diff(const nsr_plan *a, const nsr_plan *b, unsigned flags) {
        DIFF_ARRAY("ops", diff_op, a->ops, a->n_ops, b->ops, b->n_ops);

        DIFF_INT("unshare_user", a->unshare_user, b->unshare_user);
        DIFF_INT("unshare_user_try", a->unshare_user_try, b->unshare_user_try);
        DIFF_INT("unshare_ipc", a->unshare_ipc, b->unshare_ipc);
        DIFF_INT("unshare_pid", a->unshare_pid, b->unshare_pid);
        DIFF_INT("unshare_net", a->unshare_net, b->unshare_net);
        DIFF_INT("unshare_uts", a->unshare_uts, b->unshare_uts);
        DIFF_INT("unshare_cgroup", a->unshare_cgroup, b->unshare_cgroup);
        DIFF_INT("unshare_cgroup_try", a->unshare_cgroup_try, b->unshare_cgroup_try);
        DIFF_INT("userns_fd", a->userns_fd, b->userns_fd);
        DIFF_INT("userns2_fd", a->userns2_fd, b->userns2_fd);
        DIFF_INT("pidns_fd", a->pidns_fd, b->pidns_fd);
        DIFF_INT("disable_userns", a->disable_userns, b->disable_userns);
        DIFF_INT("assert_userns_disabled", a->assert_userns_disabled, b->assert_userns_disabled);

        DIFF_INT("has_uid", a->has_uid, b->has_uid);
        DIFF_INT("has_gid", a->has_gid, b->has_gid);
        DIFF_INT("uid", a->uid, b->uid);
        DIFF_INT("gid", a->gid, b->gid);

        DIFF_ARRAY("env", diff_env, a->env, a->n_env, b->env, b->n_env);
        DIFF_STR("chdir", a->chdir, b->chdir);
        DIFF_STR("argv0", a->argv0, b->argv0);

        DIFF_ARRAY("caps", diff_cap, a->caps, a->n_caps, b->caps, b->n_caps);
        DIFF_ARRAY("seccomp", diff_seccomp, a->seccomp, a->n_seccomp, b->seccomp, b->n_seccomp);

        DIFF_INT("info_fd", a->info_fd, b->info_fd);
        DIFF_INT("json_status_fd", a->json_status_fd, b->json_status_fd);
        DIFF_INT("block_fd", a->block_fd, b->block_fd);
        DIFF_INT("userns_block_fd", a->userns_block_fd, b->userns_block_fd);
        DIFF_INT("sync_fd", a->sync_fd, b->sync_fd);
        DIFF_STRV("lock_files", a->lock_files, b->lock_files);

        DIFF_INT("die_with_parent", a->die_with_parent, b->die_with_parent);
        DIFF_INT("new_session", a->new_session, b->new_session);
        DIFF_INT("as_pid_1", a->as_pid_1, b->as_pid_1);
        DIFF_INT("level_prefix", a->level_prefix, b->level_prefix);
        DIFF_STR("exec_label", a->exec_label, b->exec_label);
        DIFF_STR("file_label", a->file_label, b->file_label);

        DIFF_STRV("argv", a->argv, b->argv);

        if (!(flags & TEST_PLAN_EQ_IGNORE_NSRUN_ONLY)) {
                DIFF_STRV("seccomp_policies", a->seccomp_policies, b->seccomp_policies);
                DIFF_INT("trace_bwrap", a->trace_bwrap, b->trace_bwrap);
                DIFF_INT("trace_bwrap_fd", a->trace_bwrap_fd, b->trace_bwrap_fd);
                DIFF_INT("map_all_ids", a->map_all_ids, b->map_all_ids);
                DIFF_INT("landlock_scope", a->landlock_scope, b->landlock_scope);
                DIFF_STRV("proj.projects", a->proj.projects, b->proj.projects);
                DIFF_INT("proj.home", a->proj.home, b->proj.home);
                DIFF_STRV("proj.hide", a->proj.hide, b->proj.hide);
                DIFF_STRV("proj.rw", a->proj.rw, b->proj.rw);
                DIFF_STRV("proj.ro", a->proj.ro, b->proj.ro);
                DIFF_STRV("proj.keep_env", a->proj.keep_env, b->proj.keep_env);
                DIFF_STR("proj.state_dir", a->proj.state_dir, b->proj.state_dir);
                DIFF_STR("proj.report_file", a->proj.report_file, b->proj.report_file);
                DIFF_INT("proj.report_fd", a->proj.report_fd, b->proj.report_fd);
                DIFF_INT("proj.events_fd", a->proj.events_fd, b->proj.events_fd);
                DIFF_INT("proj.keep_days", a->proj.keep_days, b->proj.keep_days);
                DIFF_INT("proj.backup_limit", a->proj.backup_limit, b->proj.backup_limit);
                DIFF_INT("proj.snapshot_limit", a->proj.snapshot_limit, b->proj.snapshot_limit);
                DIFF_INT("proj.sandbox", a->proj.sandbox, b->proj.sandbox);
                DIFF_INT("proj.no_overlay", a->proj.no_overlay, b->proj.no_overlay);
                DIFF_INT("proj.workspace_root", a->proj.workspace_root, b->proj.workspace_root);
                /* Not compared: proj.config_files and config_policy_dirs say
                 * which files the options came from, not what they do. */
                DIFF_INT("net_log_fd", a->net_log_fd, b->net_log_fd);
                DIFF_INT("egress.n_allow", a->egress.n_allow, b->egress.n_allow);
                DIFF_INT("egress.n_deny", a->egress.n_deny, b->egress.n_deny);
                for (size_t i = 0; i < a->egress.n_allow; i++)
                        DIFF_STR("egress.allow", a->egress.allow[i].text, b->egress.allow[i].text);
                for (size_t i = 0; i < a->egress.n_deny; i++)
                        DIFF_STR("egress.deny", a->egress.deny[i].text, b->egress.deny[i].text);
                DIFF_INT("run.timeout_ms", a->run.timeout_ms, b->run.timeout_ms);
                DIFF_INT("run.kill_after_ms", a->run.kill_after_ms, b->run.kill_after_ms);
                DIFF_INT("run.has_kill_after", a->run.has_kill_after, b->run.has_kill_after);
                if (memcmp(a->run.rlim, b->run.rlim, sizeof(a->run.rlim)) != 0)
                        return nsr_strdup("run.rlim differs");
                DIFF_INT("run.pids", a->run.pids, b->run.pids);
                DIFF_INT("run.pids_explicit", a->run.pids_explicit, b->run.pids_explicit);
                DIFF_INT("run.tmp_size", a->run.tmp_size, b->run.tmp_size);
                DIFF_INT("run.memory", a->run.memory, b->run.memory);
                DIFF_INT("run.cpu_milli", a->run.cpu_milli, b->run.cpu_milli);
                DIFF_INT("proj.flags",
                         a->proj.allow_nested | a->proj.discard << 1 | a->proj.keep << 2 | a->proj.quiet << 3 |
                                 a->proj.verbose << 4,
                         b->proj.allow_nested | b->proj.discard << 1 | b->proj.keep << 2 | b->proj.quiet << 3 |
                                 b->proj.verbose << 4);
        }
        /* share_net records only which net option came last while parsing;
         * the resulting unshare_net is compared above. */

        DIFF_INT("resolved", a->resolved, b->resolved);
        DIFF_INT("needs_devpts", a->needs_devpts, b->needs_devpts);
        return NULL;
}
