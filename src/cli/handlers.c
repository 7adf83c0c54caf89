/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The option handlers, one per family of options: what each option of the
 * table does to the plan (cli_handle), with bwrap's checks of its
 * arguments. The order of parsing is cli.c's. */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli-internal.h"
#include "cli/options.h"

static void warn_last(parser *ps, const char *opt) {
        nsr_strv_push(&ps->plan->warnings, nsr_asprintf("%c"
                                                        "Only the last %s option will take effect",
                                                        ps->plan->level_prefix ? '1' : '0', opt));
}

static int parse_fd_arg(const char *s, int *ret, nsr_error *err) {
        /* bwrap uses strtol: leading blanks and '+' are fine, a sign or junk
         * after the number is not, and neither is a negative fd. */
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (!*s || !end || *end != '\0' || v < 0 || errno == ERANGE || v > INT_MAX)
                return nsr_error_setx(err, EINVAL, "Invalid fd: %s", s);
        *ret = (int) v;
        return 0;
}

static int parse_id_arg(const char *s, const char *what, unsigned *ret, nsr_error *err) {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (!*s || !end || *end != '\0' || v < 0 || errno == ERANGE || v > INT_MAX)
                return nsr_error_setx(err, EINVAL, "Invalid %s: %s", what, s);
        *ret = (unsigned) v;
        return 0;
}

static int parse_octal_arg(const char *s, const char *opt, mode_t *ret, nsr_error *err) {
        /* bwrap uses strtoul(..., 8): blanks and '+' are accepted, "-0" is 0,
         * and any other negative number wraps to something above 07777. */
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(s, &end, 8);
        if (!*s || !end || *end != '\0' || errno == ERANGE || v > 07777)
                return nsr_error_setx(err, EINVAL, "%s takes an octal argument <= 07777", opt);
        *ret = (mode_t) v;
        return 0;
}

static int parse_size_arg(const char *s, uint64_t *ret, nsr_error *err) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 0);
        if (errno != 0 || !isdigit((unsigned char) s[0]) || !end || *end != '\0' || v == 0)
                return nsr_error_setx(err, EINVAL, "--size takes a non-zero number of bytes");
        if (v > (unsigned long long) (SIZE_MAX >> 1))
                return nsr_error_setx(err, EINVAL, "--size (for tmpfs) is limited to %zu", (size_t) (SIZE_MAX >> 1));
        *ret = v;
        return 0;
}

static int parse_cap_arg(const char *s, int *ret, nsr_error *err) {
        if (strcasecmp(s, "ALL") == 0) {
                *ret = -1;
                return 0;
        }
        cap_value_t c;
        if (cap_from_name(s, &c) < 0 || c < 0 || c > 63)
                return nsr_error_setx(err, EINVAL, "unknown cap: %s", s);
        *ret = (int) c;
        return 0;
}

static int read_fd_data(int fd, char **ret, size_t *ret_len) {
        /* A limit so a runaway pipe cannot eat memory: 64 MiB is far above
         * any argument list or seccomp program. */
        return nsr_read_all(fd, 64u << 20, ret, ret_len);
}

static nsr_op *add_op(parser *ps, nsr_op_type type, const char *source, const char *dest) {
        nsr_op *op = nsr_plan_add_op(ps->plan, type);
        op->source = source ? nsr_strdup(source) : NULL;
        op->dest = dest ? nsr_strdup(dest) : NULL;
        if (nsr_op_type_takes_perms(type)) {
                op->perms = ps->pending_perms;
                ps->pending_perms = NSR_PERMS_UNSET;
        }
        if (type == NSR_OP_TMPFS && ps->pending_size) {
                op->size = ps->size;
                ps->pending_size = false;
        }
        return op;
}

/* The handlers, one per family of options. Each gets one option whose
 * arguments are vals[0..nargs) and returns 0 or -errno; typed is the
 * spelling the caller used. The table below says which handles which. */
typedef int handler_fn(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                       nsr_error *err);

static int handle_nothing(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                          nsr_error *err) {
        /* --help and --version: the caller stops parsing at them. */
        (void) ps, (void) o, (void) typed, (void) vals, (void) in_args_file, (void) err;
        return 0;
}

/* An --args file is configuration nsrun read: its path, for protection
 * when it lies inside a project. */
static void note_config_fd(parser *ps, int fd) {
        struct stat st;
        char link[64], path[PATH_MAX];
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof(path) - 1);
        if (n <= 0 || path[0] != '/')
                return;
        path[n] = '\0';
        nsr_strv_extend(&ps->plan->proj.config_files, path);
}

static int handle_args(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                       nsr_error *err) {
        _cleanup_free_ char *data = NULL;
        _cleanup_strv_free_ char **words = NULL;
        size_t len = 0;
        int fd, r;
        (void) o, (void) typed, (void) in_args_file;
        r = parse_fd_arg(vals[0], &fd, err);
        if (r < 0)
                return r;
        note_config_fd(ps, fd);
        r = read_fd_data(fd, &data, &len);
        if (r < 0)
                return nsr_error_set(err, -r, "Can't read --args data");
        close(fd);
        size_t i = 0;
        while (i < len) {
                size_t l = strnlen(data + i, len - i);
                nsr_strv_push(&words, nsr_strndup(data + i, l));
                i += l + 1;
        }
        size_t nw = nsr_strv_length(words);
        ps->total_args += nw;
        if (ps->total_args > NSR_MAX_ARGS)
                return nsr_error_setx(err, E2BIG, "Exceeded maximum number of arguments %u", NSR_MAX_ARGS);
        return cli_parse_list(ps, words, nw, true, err);
}

/* Options that only switch something on. */
static int handle_flag(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                       nsr_error *err) {
        nsr_plan *p = ps->plan;
        nsr_opt_id id = o->id;
        (void) typed, (void) vals, (void) in_args_file;
        bool *flag = id == NSR_OPT_LEVEL_PREFIX              ? &p->level_prefix
                     : id == NSR_OPT_UNSHARE_USER            ? &p->unshare_user
                     : id == NSR_OPT_UNSHARE_USER_TRY        ? &p->unshare_user_try
                     : id == NSR_OPT_UNSHARE_IPC             ? &p->unshare_ipc
                     : id == NSR_OPT_UNSHARE_PID             ? &p->unshare_pid
                     : id == NSR_OPT_UNSHARE_UTS             ? &p->unshare_uts
                     : id == NSR_OPT_UNSHARE_CGROUP          ? &p->unshare_cgroup
                     : id == NSR_OPT_UNSHARE_CGROUP_TRY      ? &p->unshare_cgroup_try
                     : id == NSR_OPT_DISABLE_USERNS          ? &p->disable_userns
                     : id == NSR_OPT_ASSERT_USERNS_DISABLED  ? &p->assert_userns_disabled
                     : id == NSR_OPT_NEW_SESSION             ? &p->new_session
                     : id == NSR_OPT_DIE_WITH_PARENT         ? &p->die_with_parent
                     : id == NSR_OPT_AS_PID_1                ? &p->as_pid_1
                     : id == NSR_OPT_NOT_A_SECURITY_BOUNDARY ? &p->not_a_security_boundary
                     : id == NSR_OPT_TRACE_BWRAP             ? &p->trace_bwrap
                     : id == NSR_OPT_ALLOW_NESTED            ? &p->proj.allow_nested
                     : id == NSR_OPT_DISCARD                 ? &p->proj.discard
                     : id == NSR_OPT_KEEP                    ? &p->proj.keep
                     : id == NSR_OPT_QUIET                   ? &p->proj.quiet
                     : id == NSR_OPT_VERBOSE                 ? &p->proj.verbose
                     : id == NSR_OPT_NO_OVERLAY              ? &p->proj.no_overlay
                     : id == NSR_OPT_WORKSPACE_ROOT          ? &p->proj.workspace_root
                                                             : NULL;
        if (!flag)
                return nsr_error_setx(err, EINVAL, "%s is no flag", o->name);
        *flag = true;
        return 0;
}

/* The net namespace's two switches, and --unshare-all. */
static int handle_net(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                      nsr_error *err) {
        nsr_plan *p = ps->plan;
        (void) typed, (void) vals, (void) in_args_file, (void) err;
        if (o->id == NSR_OPT_UNSHARE_ALL) {
                p->unshare_user_try = p->unshare_ipc = p->unshare_pid = true;
                p->unshare_uts = p->unshare_cgroup_try = p->unshare_net = true;
        }
        p->unshare_net = o->id != NSR_OPT_SHARE_NET;
        p->share_net = o->id == NSR_OPT_SHARE_NET;
        return 0;
}

/* Options that hold one fd; bwrap warns when one is given twice. */
static int handle_fd(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                     nsr_error *err) {
        nsr_plan *p = ps->plan;
        nsr_opt_id id = o->id;
        (void) typed, (void) in_args_file;
        bool warn = id != NSR_OPT_REPORT_FD && id != NSR_OPT_EVENTS_FD && id != NSR_OPT_NET_LOG_FD;
        int *slot = id == NSR_OPT_USERNS            ? &p->userns_fd
                    : id == NSR_OPT_USERNS2         ? &p->userns2_fd
                    : id == NSR_OPT_PIDNS           ? &p->pidns_fd
                    : id == NSR_OPT_SYNC_FD         ? &p->sync_fd
                    : id == NSR_OPT_BLOCK_FD        ? &p->block_fd
                    : id == NSR_OPT_USERNS_BLOCK_FD ? &p->userns_block_fd
                    : id == NSR_OPT_INFO_FD         ? &p->info_fd
                    : id == NSR_OPT_JSON_STATUS_FD  ? &p->json_status_fd
                    : id == NSR_OPT_TRACE_BWRAP_FD  ? &p->trace_bwrap_fd
                    : id == NSR_OPT_REPORT_FD       ? &p->proj.report_fd
                    : id == NSR_OPT_EVENTS_FD       ? &p->proj.events_fd
                    : id == NSR_OPT_NET_LOG_FD      ? &p->net_log_fd
                                                    : NULL;
        if (!slot)
                return nsr_error_setx(err, EINVAL, "%s holds no fd", o->name);
        if (warn && *slot != -1)
                warn_last(ps, o->name);
        return parse_fd_arg(vals[0], slot, err);
}

/* The command's identity and environment. */
static int handle_process(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                          nsr_error *err) {
        nsr_plan *p = ps->plan;
        nsr_opt_id id = o->id;
        (void) typed, (void) in_args_file;
        if (id == NSR_OPT_ARGV0) {
                if (ps->seen_argv0)
                        return nsr_error_setx(err, EINVAL, "--argv0 used multiple times");
                ps->seen_argv0 = true;
                p->argv0 = nsr_strdup(vals[0]);
                return 0;
        }
        if (id == NSR_OPT_UID || id == NSR_OPT_GID) {
                bool is_uid = id == NSR_OPT_UID;
                unsigned v = 0;
                if (is_uid ? p->has_uid : p->has_gid)
                        warn_last(ps, o->name);
                int r = parse_id_arg(vals[0], is_uid ? "uid" : "gid", &v, err);
                if (r < 0)
                        return r;
                *(is_uid ? &p->uid : &p->gid) = v;
                *(is_uid ? &p->has_uid : &p->has_gid) = true;
                return 0;
        }
        if (id == NSR_OPT_CHDIR) {
                if (p->chdir)
                        warn_last(ps, o->name);
                free(p->chdir);
                p->chdir = nsr_strdup(vals[0]);
                return 0;
        }
        if (id == NSR_OPT_LOCK_FILE) {
                nsr_strv_extend(&p->lock_files, vals[0]);
                return 0;
        }
        if (id == NSR_OPT_CLEARENV) {
                nsr_plan_add_env(p, NSR_ENV_CLEAR, NULL, NULL);
                return 0;
        }
        /* setenv(3) and unsetenv(3) refuse an empty name or one with '='. */
        if (!vals[0][0] || strchr(vals[0], '='))
                return nsr_error_setx(err, EINVAL, id == NSR_OPT_SETENV ? "setenv failed" : "unsetenv failed");
        if (id == NSR_OPT_SETENV)
                nsr_plan_add_env(p, NSR_ENV_SET, vals[0], vals[1]);
        else
                nsr_plan_add_env(p, NSR_ENV_UNSET, vals[0], NULL);
        return 0;
}

/* Capabilities and SELinux labels. */
static int handle_privileges(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                             nsr_error *err) {
        nsr_plan *p = ps->plan;
        (void) typed, (void) in_args_file;
        if (o->id == NSR_OPT_EXEC_LABEL || o->id == NSR_OPT_FILE_LABEL) {
                char **slot = o->id == NSR_OPT_EXEC_LABEL ? &p->exec_label : &p->file_label;
                if (*slot)
                        warn_last(ps, o->name);
                /* nsrun is built without libselinux, like a bwrap built
                 * without SELinux support. */
                return nsr_error_setx(err, ENOTSUP, "labeling not supported on this system");
        }
        int cap = 0;
        int r = parse_cap_arg(vals[0], &cap, err);
        if (r < 0)
                return r;
        p->caps = nsr_realloc_array(p->caps, p->n_caps + 1, sizeof(nsr_cap_edit));
        p->caps[p->n_caps++] = (nsr_cap_edit){ .add = o->id == NSR_OPT_CAP_ADD, .cap = cap };
        return 0;
}

/* The mount operations that take paths: SRC DEST, or DEST alone. */
static int handle_path_op(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                          nsr_error *err) {
        nsr_plan *p = ps->plan;
        nsr_opt_id id = o->id;
        (void) typed, (void) in_args_file, (void) err;
        if (id == NSR_OPT_HOSTNAME)
                for (size_t i = 0; i < p->n_ops; i++)
                        if (p->ops[i].type == NSR_OP_HOSTNAME) {
                                warn_last(ps, o->name);
                                break;
                        }
        bool try_ = id == NSR_OPT_BIND_TRY || id == NSR_OPT_DEV_BIND_TRY || id == NSR_OPT_RO_BIND_TRY;
        nsr_op_type two = id == NSR_OPT_BIND || id == NSR_OPT_BIND_TRY           ? NSR_OP_BIND
                          : id == NSR_OPT_DEV_BIND || id == NSR_OPT_DEV_BIND_TRY ? NSR_OP_DEV_BIND
                          : id == NSR_OPT_RO_BIND || id == NSR_OPT_RO_BIND_TRY   ? NSR_OP_RO_BIND
                          : id == NSR_OPT_SYMLINK                                ? NSR_OP_SYMLINK
                                                                                 : _NSR_OP_TYPE_INVALID;
        if (two != _NSR_OP_TYPE_INVALID) {
                nsr_op *op = add_op(ps, two, vals[0], vals[1]);
                op->flags |= try_ ? NSR_OPF_TRY : 0;
                return 0;
        }
        nsr_op_type one = id == NSR_OPT_REMOUNT_RO ? NSR_OP_REMOUNT_RO
                          : id == NSR_OPT_PROC     ? NSR_OP_PROC
                          : id == NSR_OPT_DEV      ? NSR_OP_DEV
                          : id == NSR_OPT_TMPFS    ? NSR_OP_TMPFS
                          : id == NSR_OPT_MQUEUE   ? NSR_OP_MQUEUE
                          : id == NSR_OPT_DIR      ? NSR_OP_DIR
                                                   : NSR_OP_HOSTNAME;
        add_op(ps, one, NULL, vals[0]);
        return 0;
}

/* The mount operations whose source is an fd: FD DEST. */
static int handle_fd_op(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                        nsr_error *err) {
        nsr_opt_id id = o->id;
        int fd;
        (void) typed, (void) in_args_file;
        int r = parse_fd_arg(vals[0], &fd, err);
        if (r < 0)
                return r;
        nsr_op *op = add_op(ps,
                            id == NSR_OPT_BIND_FD      ? NSR_OP_BIND_FD
                            : id == NSR_OPT_RO_BIND_FD ? NSR_OP_RO_BIND_FD
                            : id == NSR_OPT_FILE       ? NSR_OP_FILE
                            : id == NSR_OPT_BIND_DATA  ? NSR_OP_BIND_DATA
                                                       : NSR_OP_RO_BIND_DATA,
                            NULL, vals[1]);
        op->fd = fd;
        return 0;
}

/* --overlay-src collects lower layers for the next overlay, which takes
 * them all. */
static int handle_overlay(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                          nsr_error *err) {
        nsr_op *op;
        (void) typed, (void) in_args_file;
        if (o->id == NSR_OPT_OVERLAY_SRC) {
                nsr_strv_extend(&ps->pending_overlay, vals[0]);
                return 0;
        }
        size_t have = nsr_strv_length(ps->pending_overlay);
        if (o->id == NSR_OPT_RO_OVERLAY && have < 2)
                return nsr_error_setx(err, EINVAL, "--ro-overlay requires at least two --overlay-src");
        if (have < 1)
                return nsr_error_setx(err, EINVAL, "%s requires at least one --overlay-src", o->name);
        if (o->id == NSR_OPT_OVERLAY) {
                op = add_op(ps, NSR_OP_OVERLAY, vals[0], vals[2]);
                op->workdir = nsr_strdup(vals[1]);
        } else
                op = add_op(ps, o->id == NSR_OPT_TMP_OVERLAY ? NSR_OP_TMP_OVERLAY : NSR_OP_RO_OVERLAY, NULL, vals[0]);
        op->overlay_srcs = TAKE_PTR(ps->pending_overlay);
        return 0;
}

/* --perms and --size modify the next operation; --chmod has its own mode. */
static int handle_mode(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                       nsr_error *err) {
        mode_t m = 0;
        int r;
        (void) typed, (void) in_args_file;
        if (o->id == NSR_OPT_SIZE) {
                uint64_t v = 0;
                if (ps->pending_size)
                        return nsr_error_setx(err, EINVAL, "--size given twice for the same action");
                r = parse_size_arg(vals[0], &v, err);
                if (r < 0)
                        return r;
                ps->pending_size = true;
                ps->size = v;
                return 0;
        }
        if (o->id == NSR_OPT_PERMS && ps->pending_perms != NSR_PERMS_UNSET)
                return nsr_error_setx(err, EINVAL, "--perms given twice for the same action");
        r = parse_octal_arg(vals[0], o->name, &m, err);
        if (r < 0)
                return r;
        if (o->id == NSR_OPT_PERMS) {
                ps->pending_perms = m;
                return 0;
        }
        nsr_op *op = add_op(ps, NSR_OP_CHMOD, NULL, vals[1]);
        op->perms = m;
        return 0;
}

static int handle_seccomp(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                          nsr_error *err) {
        nsr_plan *p = ps->plan;
        int fd, r;
        (void) typed, (void) in_args_file;
        if (o->id == NSR_OPT_SECCOMP_POLICY) {
                if (!vals[0][0])
                        return nsr_error_setx(err, EINVAL, "--seccomp-policy needs a name or a path");
                nsr_strv_extend(&p->seccomp_policies, vals[0]);
                if (strchr(vals[0], '/')) {
                        /* A policy file, and the files its includes find
                         * next to it: configuration nsrun reads. */
                        char real[PATH_MAX];
                        _cleanup_free_ char *cwd = vals[0][0] == '/' ? NULL : getcwd(NULL, 0);
                        /* As named too: a symlink on the way is what the
                         * next run follows. */
                        nsr_strv_push(&p->proj.config_files, cwd ? nsr_path_join(cwd, vals[0]) : nsr_strdup(vals[0]));
                        if (realpath(vals[0], real)) {
                                nsr_strv_extend(&p->proj.config_files, real);
                                *strrchr(real, '/') = '\0';
                                nsr_strv_extend(&p->proj.config_policy_dirs, *real ? real : "/");
                        }
                }
                return 0;
        }
        if (o->id == NSR_OPT_SECCOMP) {
                if (ps->seen_add_seccomp)
                        return nsr_error_setx(err, EINVAL, "--seccomp cannot be combined with --add-seccomp-fd");
                if (ps->seen_seccomp)
                        warn_last(ps, o->name);
                r = parse_fd_arg(vals[0], &fd, err);
                if (r < 0)
                        return r;
                ps->seen_seccomp = true;
                /* Last one wins: drop an earlier --seccomp. */
                for (size_t i = 0; i < p->n_seccomp; i++)
                        free(p->seccomp[i].data);
                p->n_seccomp = 0;
                p->seccomp = nsr_realloc_array(p->seccomp, 1, sizeof(nsr_seccomp_prog));
                p->seccomp[0] = (nsr_seccomp_prog){ .kind = NSR_SECCOMP_FD, .fd = fd };
                p->n_seccomp = 1;
                return 0;
        }
        if (ps->seen_seccomp)
                return nsr_error_setx(err, EINVAL, "--add-seccomp-fd cannot be combined with --seccomp");
        r = parse_fd_arg(vals[0], &fd, err);
        if (r < 0)
                return r;
        ps->seen_add_seccomp = true;
        char *data = NULL;
        size_t len = 0;
        r = read_fd_data(fd, &data, &len);
        if (r < 0)
                return nsr_error_set(err, -r, "Can't read seccomp data");
        close(fd);
        if (len % 8 != 0) {
                free(data);
                return nsr_error_setx(err, EINVAL, "Invalid seccomp data, must be multiple of 8");
        }
        p->seccomp = nsr_realloc_array(p->seccomp, p->n_seccomp + 1, sizeof(nsr_seccomp_prog));
        p->seccomp[p->n_seccomp++] = (nsr_seccomp_prog){ .kind = NSR_SECCOMP_DATA, .fd = fd, .data = data, .len = len };
        return 0;
}

/* Project mode's paths: the projects, what to hide or bind, where state
 * and the report go. */
static int handle_project_path(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                               nsr_error *err) {
        nsr_plan *p = ps->plan;
        nsr_opt_id id = o->id;
        (void) in_args_file;
        if (id == NSR_OPT_PROJECT) {
                if (!vals[0][0])
                        return nsr_error_setx(err, EINVAL, "%s needs a directory", typed);
                nsr_strv_extend(&p->proj.projects, vals[0]);
                return 0;
        }
        if (id == NSR_OPT_STATE_DIR || id == NSR_OPT_REPORT) {
                if (id == NSR_OPT_STATE_DIR && !vals[0][0])
                        return nsr_error_setx(err, EINVAL, "--state-dir needs a directory");
                char **slot = id == NSR_OPT_STATE_DIR ? &p->proj.state_dir : &p->proj.report_file;
                free(*slot);
                *slot = nsr_strdup(vals[0]);
                return 0;
        }
        if (id == NSR_OPT_KEEP_ENV) {
                nsr_strv_extend(&p->proj.keep_env, vals[0]);
                return 0;
        }
        if (!vals[0][0])
                return nsr_error_setx(err, EINVAL, "%s needs a path", o->name);
        /* A relative path is relative to where nsrun runs, as for
         * --project and --state-dir. */
        _cleanup_free_ char *cwd = NULL;
        if (vals[0][0] != '/' && !nsr_startswith(vals[0], "~/") && !(cwd = getcwd(NULL, 0)))
                return nsr_error_set(err, errno, "%s %s: cannot find the current dir", o->name, vals[0]);
        char *path = cwd ? nsr_asprintf("%s/%s", streq(cwd, "/") ? "" : cwd, vals[0]) : nsr_strdup(vals[0]);
        nsr_strv_push(id == NSR_OPT_HIDE ? &p->proj.hide : id == NSR_OPT_RW ? &p->proj.rw : &p->proj.ro, path);
        return 0;
}

/* Project mode's choices: home, sandbox, conflicts, and the limits of
 * what it keeps. */
static int handle_project_mode(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                               nsr_error *err) {
        nsr_plan *p = ps->plan;
        nsr_opt_id id = o->id;
        (void) typed, (void) in_args_file;
        if (id == NSR_OPT_HOME) {
                nsr_home_mode m = nsr_home_mode_from_string(vals[0]);
                if (m < 0)
                        return nsr_error_setx(err, EINVAL, "%s takes overlay, ro or hide, not \"%s\"", o->name,
                                              vals[0]);
                p->proj.home = m;
        } else if (id == NSR_OPT_SANDBOX) {
                nsr_sandbox_mode m = nsr_sandbox_mode_from_string(vals[0]);
                if (m < 0)
                        return nsr_error_setx(err, EINVAL, "%s takes required, best-effort or off, not \"%s\"", o->name,
                                              vals[0]);
                p->proj.sandbox = m;
        } else if (id == NSR_OPT_ON_CONFLICT) {
                nsr_conflict_mode m;
                if (nsr_conflict_mode_parse(o->name, vals[0], &m, err) < 0)
                        return -EINVAL;
                p->proj.on_conflict = m;
        } else if (id == NSR_OPT_KEEP_DAYS) {
                unsigned v = 0;
                if (parse_id_arg(vals[0], o->name, &v, err) < 0)
                        return nsr_error_setx(err, EINVAL, "%s takes a number of days, not \"%s\"", o->name, vals[0]);
                p->proj.keep_days = (long) v;
        } else if (id == NSR_OPT_BACKUP_LIMIT) {
                if (nsr_parse_size_suffix(vals[0], &p->proj.backup_limit) < 0)
                        return nsr_error_setx(err, EINVAL, "%s takes a size such as 2G, not \"%s\"", o->name, vals[0]);
        } else if (nsr_parse_size_suffix(vals[0], &p->proj.snapshot_limit) < 0)
                return nsr_error_setx(err, EINVAL, "%s takes a size such as 1G, not \"%s\"", o->name, vals[0]);
        return 0;
}

static int handle_profile(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                          nsr_error *err) {
        (void) ps, (void) o, (void) typed, (void) vals;
        /* Read before the command line (nsr_cli_prescan), so that the
         * command line wins; an --args file comes too late. */
        if (in_args_file)
                return nsr_error_setx(err, EINVAL, "--profile cannot be used inside an --args file");
        return 0;
}

static int handle_egress(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                         nsr_error *err) {
        (void) typed, (void) in_args_file;
        return nsr_egress_rules_add(&ps->plan->egress, o->id == NSR_OPT_DENY_HOST, vals[0], err);
}

/* Run control: time, rlimits and cgroup limits. */
static int handle_runctl(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
                         nsr_error *err) {
        nsr_plan *p = ps->plan;
        nsr_opt_id id = o->id;
        (void) typed, (void) in_args_file;
        if (id == NSR_OPT_TIMEOUT || id == NSR_OPT_KILL_AFTER) {
                uint64_t ms = 0;
                int r = nsr_parse_duration(vals[0], &ms);
                if (r < 0 || (id == NSR_OPT_TIMEOUT && ms == 0))
                        return nsr_error_setx(err, EINVAL,
                                              "%s takes a duration such as 90, 90s, 1.5s, 5m or 1h%s, not \"%s\"",
                                              o->name, id == NSR_OPT_TIMEOUT ? " (above 0)" : "", vals[0]);
                if (id == NSR_OPT_TIMEOUT)
                        p->run.timeout_ms = ms;
                else {
                        p->run.kill_after_ms = ms;
                        p->run.has_kill_after = true;
                }
        } else if (id == NSR_OPT_RLIMIT) {
                nsr_rlimit_id rid;
                nsr_rlimit_spec sp;
                int r = nsr_parse_rlimit(vals[0], &rid, &sp, err);
                if (r < 0)
                        return r;
                p->run.rlim[rid] = sp;
        } else if (id == NSR_OPT_PIDS) {
                uint64_t v = 0;
                if (nsr_parse_u64(vals[0], &v) < 0 || v == 0 || v > (1u << 22))
                        return nsr_error_setx(err, EINVAL, "--pids takes a number from 1 to %u, not \"%s\"", 1u << 22,
                                              vals[0]);
                p->run.pids = v;
                p->run.pids_explicit = true;
        } else if (id == NSR_OPT_TMP_SIZE || id == NSR_OPT_MEMORY) {
                uint64_t v = 0;
                if (nsr_parse_size_suffix(vals[0], &v) < 0 || v < 4096)
                        return nsr_error_setx(err, EINVAL, "%s takes a size such as 512M or 2G, not \"%s\"", o->name,
                                              vals[0]);
                *(id == NSR_OPT_TMP_SIZE ? &p->run.tmp_size : &p->run.memory) = v;
        } else if (nsr_parse_cpu(vals[0], &p->run.cpu_milli) < 0)
                return nsr_error_setx(err, EINVAL,
                                      "--cpu takes a number of CPUs from 0.01 to 1000 (1.5, 50%%), "
                                      "not \"%s\"",
                                      vals[0]);
        /* Above what the host has: refused wherever it is written. */
        if (!ps->hb_known) {
                nsr_host_bounds_detect(&ps->hb);
                ps->hb_known = true;
        }
        nsr_rlimit_id rid = _NSR_RLIMIT_INVALID;
        nsr_rlimit_spec sp;
        if (id == NSR_OPT_RLIMIT && nsr_parse_rlimit(vals[0], &rid, &sp, err) < 0)
                return -EINVAL;
        return nsr_runctl_check_host(&p->run, o->name, rid, &ps->hb, err);
}

/* Which handler takes which option: every entry of the options table has
 * one (check-cli tests that). */
static handler_fn *const handlers[_NSR_OPT_MAX] = {
        [NSR_OPT_HELP] = handle_nothing,
        [NSR_OPT_VERSION] = handle_nothing,
        [NSR_OPT_ARGS] = handle_args,
        [NSR_OPT_ARGV0] = handle_process,
        [NSR_OPT_LEVEL_PREFIX] = handle_flag,
        [NSR_OPT_UNSHARE_ALL] = handle_net,
        [NSR_OPT_SHARE_NET] = handle_net,
        [NSR_OPT_UNSHARE_USER] = handle_flag,
        [NSR_OPT_UNSHARE_USER_TRY] = handle_flag,
        [NSR_OPT_UNSHARE_IPC] = handle_flag,
        [NSR_OPT_UNSHARE_PID] = handle_flag,
        [NSR_OPT_UNSHARE_NET] = handle_net,
        [NSR_OPT_UNSHARE_UTS] = handle_flag,
        [NSR_OPT_UNSHARE_CGROUP] = handle_flag,
        [NSR_OPT_UNSHARE_CGROUP_TRY] = handle_flag,
        [NSR_OPT_USERNS] = handle_fd,
        [NSR_OPT_USERNS2] = handle_fd,
        [NSR_OPT_DISABLE_USERNS] = handle_flag,
        [NSR_OPT_ASSERT_USERNS_DISABLED] = handle_flag,
        [NSR_OPT_PIDNS] = handle_fd,
        [NSR_OPT_UID] = handle_process,
        [NSR_OPT_GID] = handle_process,
        [NSR_OPT_HOSTNAME] = handle_path_op,
        [NSR_OPT_CHDIR] = handle_process,
        [NSR_OPT_CLEARENV] = handle_process,
        [NSR_OPT_SETENV] = handle_process,
        [NSR_OPT_UNSETENV] = handle_process,
        [NSR_OPT_LOCK_FILE] = handle_process,
        [NSR_OPT_SYNC_FD] = handle_fd,
        [NSR_OPT_BIND] = handle_path_op,
        [NSR_OPT_BIND_TRY] = handle_path_op,
        [NSR_OPT_DEV_BIND] = handle_path_op,
        [NSR_OPT_DEV_BIND_TRY] = handle_path_op,
        [NSR_OPT_RO_BIND] = handle_path_op,
        [NSR_OPT_RO_BIND_TRY] = handle_path_op,
        [NSR_OPT_BIND_FD] = handle_fd_op,
        [NSR_OPT_RO_BIND_FD] = handle_fd_op,
        [NSR_OPT_REMOUNT_RO] = handle_path_op,
        [NSR_OPT_OVERLAY_SRC] = handle_overlay,
        [NSR_OPT_OVERLAY] = handle_overlay,
        [NSR_OPT_TMP_OVERLAY] = handle_overlay,
        [NSR_OPT_RO_OVERLAY] = handle_overlay,
        [NSR_OPT_EXEC_LABEL] = handle_privileges,
        [NSR_OPT_FILE_LABEL] = handle_privileges,
        [NSR_OPT_PROC] = handle_path_op,
        [NSR_OPT_DEV] = handle_path_op,
        [NSR_OPT_TMPFS] = handle_path_op,
        [NSR_OPT_MQUEUE] = handle_path_op,
        [NSR_OPT_DIR] = handle_path_op,
        [NSR_OPT_FILE] = handle_fd_op,
        [NSR_OPT_BIND_DATA] = handle_fd_op,
        [NSR_OPT_RO_BIND_DATA] = handle_fd_op,
        [NSR_OPT_SYMLINK] = handle_path_op,
        [NSR_OPT_SECCOMP] = handle_seccomp,
        [NSR_OPT_ADD_SECCOMP_FD] = handle_seccomp,
        [NSR_OPT_BLOCK_FD] = handle_fd,
        [NSR_OPT_USERNS_BLOCK_FD] = handle_fd,
        [NSR_OPT_INFO_FD] = handle_fd,
        [NSR_OPT_JSON_STATUS_FD] = handle_fd,
        [NSR_OPT_NEW_SESSION] = handle_flag,
        [NSR_OPT_DIE_WITH_PARENT] = handle_flag,
        [NSR_OPT_AS_PID_1] = handle_flag,
        [NSR_OPT_CAP_ADD] = handle_privileges,
        [NSR_OPT_CAP_DROP] = handle_privileges,
        [NSR_OPT_PERMS] = handle_mode,
        [NSR_OPT_SIZE] = handle_mode,
        [NSR_OPT_CHMOD] = handle_mode,
        [NSR_OPT_NOT_A_SECURITY_BOUNDARY] = handle_flag,
        [NSR_OPT_TRACE_BWRAP] = handle_flag,
        [NSR_OPT_TRACE_BWRAP_FD] = handle_fd,
        [NSR_OPT_SECCOMP_POLICY] = handle_seccomp,
        [NSR_OPT_PROJECT] = handle_project_path,
        [NSR_OPT_HOME] = handle_project_mode,
        [NSR_OPT_HIDE] = handle_project_path,
        [NSR_OPT_RW] = handle_project_path,
        [NSR_OPT_RO] = handle_project_path,
        [NSR_OPT_KEEP_ENV] = handle_project_path,
        [NSR_OPT_ALLOW_NESTED] = handle_flag,
        [NSR_OPT_STATE_DIR] = handle_project_path,
        [NSR_OPT_REPORT] = handle_project_path,
        [NSR_OPT_REPORT_FD] = handle_fd,
        [NSR_OPT_DISCARD] = handle_flag,
        [NSR_OPT_KEEP] = handle_flag,
        [NSR_OPT_ON_CONFLICT] = handle_project_mode,
        [NSR_OPT_QUIET] = handle_flag,
        [NSR_OPT_VERBOSE] = handle_flag,
        [NSR_OPT_EVENTS_FD] = handle_fd,
        [NSR_OPT_KEEP_DAYS] = handle_project_mode,
        [NSR_OPT_BACKUP_LIMIT] = handle_project_mode,
        [NSR_OPT_SANDBOX] = handle_project_mode,
        [NSR_OPT_NO_OVERLAY] = handle_flag,
        [NSR_OPT_SNAPSHOT_LIMIT] = handle_project_mode,
        [NSR_OPT_PROFILE] = handle_profile,
        [NSR_OPT_WORKSPACE_ROOT] = handle_flag,
        [NSR_OPT_ALLOW_HOST] = handle_egress,
        [NSR_OPT_DENY_HOST] = handle_egress,
        [NSR_OPT_NET_LOG_FD] = handle_fd,
        [NSR_OPT_TIMEOUT] = handle_runctl,
        [NSR_OPT_KILL_AFTER] = handle_runctl,
        [NSR_OPT_RLIMIT] = handle_runctl,
        [NSR_OPT_PIDS] = handle_runctl,
        [NSR_OPT_TMP_SIZE] = handle_runctl,
        [NSR_OPT_MEMORY] = handle_runctl,
        [NSR_OPT_CPU] = handle_runctl,
};

int cli_handle(parser *ps, const nsr_option *o, const char *typed, char *const *vals, bool in_args_file,
               nsr_error *err) {
        if (o->id < 0 || o->id >= _NSR_OPT_MAX)
                return nsr_error_setx(err, EINVAL, "Unknown option %s", typed);
        if (!handlers[o->id])
                return nsr_error_setx(err, ENOSYS, "%s has no handler", o->name);
        if ((o->flags & NSR_OPTF_PROJECT) && !ps->project_only)
                ps->project_only = o;
        return handlers[o->id](ps, o, typed, vals, in_args_file, err);
}
