/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/plan.h"

nsr_plan *nsr_plan_new(void) {
        nsr_plan *p = nsr_malloc0(sizeof(*p));
        p->userns_fd = p->userns2_fd = p->pidns_fd = -1;
        p->info_fd = p->json_status_fd = p->block_fd = p->userns_block_fd = p->sync_fd = -1;
        p->trace_bwrap_fd = -1;
        p->net_log_fd = -1;
        p->proj.report_fd = -1;
        p->proj.events_fd = -1;
        p->proj.keep_days = -1;
        return p;
}

nsr_plan *nsr_plan_free(nsr_plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_ops; i++) {
                free(p->ops[i].source);
                free(p->ops[i].dest);
                free(p->ops[i].workdir);
                nsr_strv_free(p->ops[i].overlay_srcs);
        }
        free(p->ops);
        for (size_t i = 0; i < p->n_env; i++) {
                free(p->env[i].name);
                free(p->env[i].value);
        }
        free(p->env);
        free(p->chdir);
        free(p->argv0);
        free(p->caps);
        for (size_t i = 0; i < p->n_seccomp; i++)
                free(p->seccomp[i].data);
        free(p->seccomp);
        nsr_strv_free(p->seccomp_policies);
        nsr_strv_free(p->lock_files);
        free(p->exec_label);
        free(p->file_label);
        nsr_strv_free(p->argv);
        nsr_strv_free(p->warnings);
        nsr_egress_rules_done(&p->egress);
        nsr_strv_free(p->proj.projects);
        nsr_strv_free(p->proj.hide);
        nsr_strv_free(p->proj.rw);
        nsr_strv_free(p->proj.ro);
        nsr_strv_free(p->proj.config_files);
        nsr_strv_free(p->proj.config_policy_dirs);
        nsr_strv_free(p->proj.keep_env);
        free(p->proj.state_dir);
        free(p->proj.report_file);
        free(p);
        return NULL;
}

nsr_op *nsr_plan_add_op(nsr_plan *p, nsr_op_type type) {
        p->ops = nsr_realloc_array(p->ops, p->n_ops + 1, sizeof(nsr_op));
        nsr_op *op = &p->ops[p->n_ops++];
        *op = (nsr_op){ .type = type, .fd = -1, .perms = NSR_PERMS_UNSET };
        return op;
}

void nsr_plan_add_env(nsr_plan *p, nsr_env_action action, const char *name, const char *value) {
        p->env = nsr_realloc_array(p->env, p->n_env + 1, sizeof(nsr_env_edit));
        p->env[p->n_env++] = (nsr_env_edit){
                .action = action,
                .name = name ? nsr_strdup(name) : NULL,
                .value = value ? nsr_strdup(value) : NULL,
        };
}

static const char *const op_names[_NSR_OP_TYPE_MAX] = {
        [NSR_OP_BIND] = "bind",
        [NSR_OP_RO_BIND] = "ro-bind",
        [NSR_OP_DEV_BIND] = "dev-bind",
        [NSR_OP_BIND_FD] = "bind-fd",
        [NSR_OP_RO_BIND_FD] = "ro-bind-fd",
        [NSR_OP_REMOUNT_RO] = "remount-ro",
        [NSR_OP_OVERLAY] = "overlay",
        [NSR_OP_TMP_OVERLAY] = "tmp-overlay",
        [NSR_OP_RO_OVERLAY] = "ro-overlay",
        [NSR_OP_PROC] = "proc",
        [NSR_OP_DEV] = "dev",
        [NSR_OP_TMPFS] = "tmpfs",
        [NSR_OP_MQUEUE] = "mqueue",
        [NSR_OP_DIR] = "dir",
        [NSR_OP_FILE] = "file",
        [NSR_OP_BIND_DATA] = "bind-data",
        [NSR_OP_RO_BIND_DATA] = "ro-bind-data",
        [NSR_OP_SYMLINK] = "symlink",
        [NSR_OP_CHMOD] = "chmod",
        [NSR_OP_HOSTNAME] = "hostname",
        [NSR_OP_SLOT] = "slot",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(nsr_op_type, nsr_op_type, op_names)

bool nsr_op_type_takes_perms(nsr_op_type t) {
        switch (t) {
        case NSR_OP_TMPFS:
        case NSR_OP_DIR:
        case NSR_OP_FILE:
        case NSR_OP_BIND_DATA:
        case NSR_OP_RO_BIND_DATA:
                return true;
        case NSR_OP_BIND:
        case NSR_OP_RO_BIND:
        case NSR_OP_DEV_BIND:
        case NSR_OP_BIND_FD:
        case NSR_OP_RO_BIND_FD:
        case NSR_OP_REMOUNT_RO:
        case NSR_OP_OVERLAY:
        case NSR_OP_TMP_OVERLAY:
        case NSR_OP_RO_OVERLAY:
        case NSR_OP_PROC:
        case NSR_OP_DEV:
        case NSR_OP_MQUEUE:
        case NSR_OP_SYMLINK:
        case NSR_OP_CHMOD:
        case NSR_OP_HOSTNAME:
        case NSR_OP_SLOT:
        case _NSR_OP_TYPE_MAX:
        case _NSR_OP_TYPE_INVALID:
                break;
        }
        return false;
}

mode_t nsr_op_perms(const nsr_op *op) {
        if (op->perms != NSR_PERMS_UNSET)
                return op->perms;
        switch (op->type) {
        case NSR_OP_FILE:
                return 0666;
        case NSR_OP_BIND_DATA:
        case NSR_OP_RO_BIND_DATA:
                return 0600;
        case NSR_OP_TMPFS:
        case NSR_OP_DIR:
                return 0755;
        case NSR_OP_BIND:
        case NSR_OP_RO_BIND:
        case NSR_OP_DEV_BIND:
        case NSR_OP_BIND_FD:
        case NSR_OP_RO_BIND_FD:
        case NSR_OP_REMOUNT_RO:
        case NSR_OP_OVERLAY:
        case NSR_OP_TMP_OVERLAY:
        case NSR_OP_RO_OVERLAY:
        case NSR_OP_PROC:
        case NSR_OP_DEV:
        case NSR_OP_MQUEUE:
        case NSR_OP_SYMLINK:
        case NSR_OP_CHMOD:
        case NSR_OP_HOSTNAME:
        case NSR_OP_SLOT:
        case _NSR_OP_TYPE_MAX:
        case _NSR_OP_TYPE_INVALID:
                break;
        }
        /* Ops without --perms: bwrap's internal value is 0, which makes
         * their missing parents 0700. */
        return 0;
}

static const char *const home_modes[_NSR_HOME_MODE_MAX] = {
        [NSR_HOME_OVERLAY] = "overlay",
        [NSR_HOME_RO] = "ro",
        [NSR_HOME_HIDE] = "hide",
};

DEFINE_STRING_TABLE_LOOKUP(nsr_home_mode, nsr_home_mode, home_modes)

static const char *const sandbox_modes[_NSR_SANDBOX_MODE_MAX] = {
        [NSR_SANDBOX_REQUIRED] = "required",
        [NSR_SANDBOX_BEST_EFFORT] = "best-effort",
        [NSR_SANDBOX_OFF] = "off",
};

DEFINE_STRING_TABLE_LOOKUP(nsr_sandbox_mode, nsr_sandbox_mode, sandbox_modes)

static const char *const conflict_modes[_NSR_CONFLICT_MODE_MAX] = {
        [NSR_CONFLICT_APPLY_REST] = "apply-rest",
        [NSR_CONFLICT_KEEP_ALL] = "keep-all",
        [NSR_CONFLICT_FAIL] = "fail",
        [NSR_CONFLICT_PREFER_HOST] = "prefer-host",
        [NSR_CONFLICT_PREFER_SANDBOX] = "prefer-sandbox",
};

DEFINE_STRING_TABLE_LOOKUP(nsr_conflict_mode, nsr_conflict_mode, conflict_modes)

#define MOVE_ARRAY(dst, ndst, src, nsrc, type)                                                                         \
        do {                                                                                                           \
                (dst) = nsr_realloc_array((dst), (ndst) + (nsrc) + 1, sizeof(type));                                   \
                for (size_t _i = 0; _i < (nsrc); _i++)                                                                 \
                        (dst)[(ndst)++] = (src)[_i];                                                                   \
                free(src);                                                                                             \
                (src) = NULL;                                                                                          \
                (nsrc) = 0;                                                                                            \
        } while (0)

static void move_strv(char ***dst, char ***src) {
        for (size_t i = 0; *src && (*src)[i]; i++)
                nsr_strv_push(dst, (*src)[i]);
        free(*src);
        *src = NULL;
}

#define TAKE_SCALAR_FD(field)                                                                                          \
        do {                                                                                                           \
                if (u->field != -1)                                                                                    \
                        p->field = u->field;                                                                           \
        } while (0)

#define TAKE_SCALAR_STR(field)                                                                                         \
        do {                                                                                                           \
                if (u->field) {                                                                                        \
                        free(p->field);                                                                                \
                        p->field = TAKE_PTR(u->field);                                                                 \
                }                                                                                                      \
        } while (0)

void nsr_plan_append(nsr_plan *p, nsr_plan *u) {
        MOVE_ARRAY(p->ops, p->n_ops, u->ops, u->n_ops, nsr_op);
        MOVE_ARRAY(p->env, p->n_env, u->env, u->n_env, nsr_env_edit);
        MOVE_ARRAY(p->caps, p->n_caps, u->caps, u->n_caps, nsr_cap_edit);
        if (u->n_seccomp) {
                for (size_t i = 0; i < p->n_seccomp; i++)
                        free(p->seccomp[i].data);
                free(p->seccomp);
                p->seccomp = TAKE_PTR(u->seccomp);
                p->n_seccomp = u->n_seccomp;
                u->n_seccomp = 0;
        }
        /* The user's own policies replace the profile's. */
        if (u->seccomp_policies) {
                nsr_strv_free(p->seccomp_policies);
                p->seccomp_policies = TAKE_PTR(u->seccomp_policies);
        }
        move_strv(&p->lock_files, &u->lock_files);
        nsr_runctl_merge(&p->run, &u->run);

        p->unshare_user |= u->unshare_user;
        p->unshare_user_try |= u->unshare_user_try;
        p->unshare_ipc |= u->unshare_ipc;
        p->unshare_pid |= u->unshare_pid;
        p->unshare_net = u->share_net ? false : (p->unshare_net || u->unshare_net);
        /* Kept, so that validation can refuse what needs the private
         * network (--allow-host) rather than drop the user's choice. */
        if (u->share_net)
                p->share_net = true;
        else if (u->unshare_net)
                p->share_net = false;
        p->unshare_uts |= u->unshare_uts;
        p->unshare_cgroup |= u->unshare_cgroup;
        p->unshare_cgroup_try |= u->unshare_cgroup_try;
        p->disable_userns |= u->disable_userns;
        p->assert_userns_disabled |= u->assert_userns_disabled;
        p->die_with_parent |= u->die_with_parent;
        p->new_session |= u->new_session;
        p->as_pid_1 |= u->as_pid_1;
        p->level_prefix |= u->level_prefix;
        p->trace_bwrap |= u->trace_bwrap;
        TAKE_SCALAR_FD(userns_fd);
        TAKE_SCALAR_FD(userns2_fd);
        TAKE_SCALAR_FD(pidns_fd);
        TAKE_SCALAR_FD(info_fd);
        TAKE_SCALAR_FD(json_status_fd);
        TAKE_SCALAR_FD(block_fd);
        TAKE_SCALAR_FD(userns_block_fd);
        TAKE_SCALAR_FD(sync_fd);
        TAKE_SCALAR_FD(trace_bwrap_fd);
        TAKE_SCALAR_FD(net_log_fd);
        nsr_egress_rules_append(&p->egress, &u->egress);
        TAKE_SCALAR_STR(chdir);
        TAKE_SCALAR_STR(argv0);
        TAKE_SCALAR_STR(exec_label);
        TAKE_SCALAR_STR(file_label);
        if (u->has_uid) {
                p->uid = u->uid;
                p->has_uid = true;
        }
        if (u->has_gid) {
                p->gid = u->gid;
                p->has_gid = true;
        }
        if (u->argv) {
                nsr_strv_free(p->argv);
                p->argv = TAKE_PTR(u->argv);
        }
}

bool nsr_plan_has_slots(const nsr_plan *p) {
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].type == NSR_OP_SLOT)
                        return true;
        return false;
}

int nsr_plan_fill_slots(nsr_plan *p, nsr_plan *const *slots, size_t n) {
        size_t total = 0;
        for (size_t i = 0; i < p->n_ops; i++) {
                if (p->ops[i].type != NSR_OP_SLOT) {
                        total++;
                        continue;
                }
                if (p->ops[i].slot >= n || !slots[p->ops[i].slot])
                        return -EINVAL;
                total += slots[p->ops[i].slot]->n_ops;
        }
        nsr_op *ops = nsr_realloc_array(NULL, total + 1, sizeof(nsr_op));
        size_t k = 0;
        for (size_t i = 0; i < p->n_ops; i++) {
                nsr_op *op = &p->ops[i];
                if (op->type != NSR_OP_SLOT) {
                        ops[k++] = *op;
                        continue;
                }
                nsr_plan *s = slots[op->slot];
                for (size_t j = 0; j < s->n_ops; j++)
                        ops[k++] = s->ops[j];
                /* Moved: a slot named twice gives its ops once. */
                s->n_ops = 0;
        }
        free(p->ops);
        p->ops = ops;
        p->n_ops = k;
        return 0;
}

/* The packing: a u32 count of slots, then per slot a u32 count of ops,
 * then per op four numbers (u32 type, u32 flags, u32 perms, u64 size) and
 * two strings (a u32 length, UINT32_MAX for none, then the bytes). Native
 * byte order: it never leaves the machine, nor the process tree. */
static void put_u32(FILE *f, uint32_t v) {
        fwrite(&v, sizeof(v), 1, f);
}

static void put_str(FILE *f, const char *s) {
        size_t l = s ? strlen(s) : 0;
        put_u32(f, s ? (uint32_t) l : UINT32_MAX);
        fwrite(s ? s : "", 1, l, f);
}

/* An op that holds more than a hiding uses does not travel. */
static bool packable(const nsr_op *op) {
        return op->type != NSR_OP_SLOT && !op->workdir && !op->overlay_srcs && op->fd == -1 &&
               !(op->flags & NSR_OPF_VERIFY) && (!op->source || strlen(op->source) < UINT32_MAX) &&
               (!op->dest || strlen(op->dest) < UINT32_MAX);
}

char *nsr_plan_slots_pack(nsr_plan *const *slots, size_t n, size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        bool ok = true;
        put_u32(f, (uint32_t) n);
        for (size_t i = 0; i < n && ok; i++) {
                put_u32(f, (uint32_t) slots[i]->n_ops);
                for (size_t j = 0; j < slots[i]->n_ops && ok; j++) {
                        const nsr_op *op = &slots[i]->ops[j];
                        if (!(ok = packable(op)))
                                break;
                        put_u32(f, (uint32_t) op->type);
                        put_u32(f, op->flags);
                        put_u32(f, (uint32_t) op->perms);
                        fwrite(&op->size, sizeof(op->size), 1, f);
                        put_str(f, op->source);
                        put_str(f, op->dest);
                }
        }
        ok = ok && !ferror(f);
        if (fclose(f) != 0 || !ok) {
                free(buf);
                return NULL;
        }
        *ret_len = len;
        return buf;
}

typedef struct unpacker {
        const char *buf;
        size_t len, at;
} unpacker;

static bool get(unpacker *u, void *data, size_t len) {
        if (u->len - u->at < len)
                return false;
        memcpy(data, u->buf + u->at, len);
        u->at += len;
        return true;
}

static bool get_str(unpacker *u, char **ret) {
        uint32_t l;
        if (!get(u, &l, sizeof(l)))
                return false;
        if (l == UINT32_MAX)
                return true;
        if (u->len - u->at < l || memchr(u->buf + u->at, '\0', l))
                return false;
        *ret = nsr_strndup(u->buf + u->at, l);
        u->at += l;
        return true;
}

void nsr_plan_slots_free(nsr_plan **slots, size_t n) {
        for (size_t i = 0; slots && i < n; i++)
                nsr_plan_free(slots[i]);
        free(slots);
}

int nsr_plan_slots_unpack(const char *buf, size_t len, nsr_plan ***ret, size_t *ret_n) {
        unpacker u = { .buf = buf, .len = len };
        uint32_t n;
        /* Each slot takes four bytes at least. */
        if (!get(&u, &n, sizeof(n)) || n > len / 4)
                return -EINVAL;
        nsr_plan **slots = nsr_malloc0(((size_t) n + 1) * sizeof(nsr_plan *));
        for (size_t i = 0; i < n; i++) {
                slots[i] = nsr_plan_new();
                uint32_t n_ops;
                if (!get(&u, &n_ops, sizeof(n_ops)))
                        goto bad;
                for (uint32_t j = 0; j < n_ops; j++) {
                        uint32_t type, flags, perms;
                        uint64_t size;
                        if (!get(&u, &type, sizeof(type)) || !get(&u, &flags, sizeof(flags)) ||
                            !get(&u, &perms, sizeof(perms)) || !get(&u, &size, sizeof(size)) || type >= NSR_OP_SLOT ||
                            (flags & NSR_OPF_VERIFY))
                                goto bad;
                        nsr_op *op = nsr_plan_add_op(slots[i], (nsr_op_type) type);
                        op->flags = flags;
                        op->perms = (mode_t) perms;
                        op->size = size;
                        if (!get_str(&u, &op->source) || !get_str(&u, &op->dest))
                                goto bad;
                }
        }
        if (u.at != len)
                goto bad;
        *ret = slots;
        *ret_n = n;
        return 0;
bad:
        nsr_plan_slots_free(slots, n);
        return -EINVAL;
}

static bool file_starts_with(const char *path, const char *prefix, bool exact) {
        char buf[64];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        int n = nsr_read_full(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return false;
        buf[n] = '\0';
        return exact ? streq(buf, prefix) : nsr_startswith(buf, prefix);
}

static bool userns_possible(void) {
        struct stat st;
        return stat("/proc/self/ns/user", &st) == 0 &&
               !file_starts_with("/sys/module/user_namespace/parameters/enable", "N", false) &&
               !file_starts_with("/proc/sys/user/max_user_namespaces", "0\n", true);
}

static bool cgroupns_possible(void) {
        struct stat st;
        return stat("/proc/self/ns/cgroup", &st) == 0;
}

void nsr_caller_detect(nsr_caller *ret) {
        *ret = (nsr_caller){ .uid = getuid(), .gid = getgid() };
        ret->userns_possible = userns_possible();
        ret->cgroupns_possible = cgroupns_possible();
}

void nsr_caller_detect_for(const nsr_plan *p, nsr_caller *ret) {
        *ret = (nsr_caller){ .uid = getuid(), .gid = getgid() };
        /* What nsr_plan_validate reads: a user namespace for
         * --unshare-user-try, unless it is one anyway (a caller who is not
         * root, without --userns); a cgroup one for either cgroup option. */
        if (p->unshare_user_try && !(ret->uid != 0 && p->userns_fd == -1))
                ret->userns_possible = userns_possible();
        if (p->unshare_cgroup || p->unshare_cgroup_try)
                ret->cgroupns_possible = cgroupns_possible();
}

/* --allow-host: the command gets a private network namespace, reached only
 * through the relay. nsrun-only, so it is checked before bwrap's checks. */
static int validate_egress(nsr_plan *p, nsr_error *err) {
        if (nsr_egress_rules_empty(&p->egress)) {
                if (p->net_log_fd != -1)
                        return nsr_error_setx(err, EINVAL, "--net-log-fd needs --allow-host");
                return 0;
        }
        if (p->share_net)
                return nsr_error_setx(err, EINVAL,
                                      "--allow-host gives the command a private network reached only through "
                                      "nsrun's proxy; it cannot be combined with --share-net");
        p->unshare_net = true;
        return 0;
}

int nsr_plan_validate(nsr_plan *p, const nsr_caller *caller, nsr_error *err) {
        int ek = validate_egress(p, err);
        if (ek < 0)
                return ek;
        /* The order of these checks is bwrap's, so that a command line with
         * several mistakes gets the same first complaint. */
        if (p->userns_block_fd != -1 && !p->unshare_user)
                return nsr_error_setx(err, EINVAL, "--userns-block-fd requires --unshare-user");
        if (p->userns_block_fd != -1 && p->info_fd == -1)
                return nsr_error_setx(err, EINVAL, "--userns-block-fd requires --info-fd");
        if (p->userns_fd != -1 && p->unshare_user)
                return nsr_error_setx(err, EINVAL, "--userns is not compatible with --unshare-user");
        if (p->userns_fd != -1 && p->unshare_user_try)
                return nsr_error_setx(err, EINVAL, "--userns is not compatible with --unshare-user-try");
        if (p->disable_userns && !p->unshare_user)
                return nsr_error_setx(err, EINVAL, "--disable-userns requires --unshare-user");
        if (p->disable_userns && p->userns_block_fd != -1)
                return nsr_error_setx(err, EINVAL, "--disable-userns is not compatible with --userns-block-fd");

        /* Callers who are not root always get a user namespace: it is what
         * lets them mount at all. */
        if (caller->uid != 0 && p->userns_fd == -1)
                p->unshare_user = true;
        if (p->unshare_user_try && caller->userns_possible)
                p->unshare_user = true;
        p->unshare_user_try = false;
        if (!p->argv)
                return 0; /* the caller prints usage; bwrap checks nothing more */

        if (!p->has_uid)
                p->uid = caller->uid;
        if (!p->has_gid)
                p->gid = caller->gid;
        if (p->uid != caller->uid && !p->unshare_user && p->userns_fd == -1)
                return nsr_error_setx(err, EINVAL, "Specifying --uid requires --unshare-user or --userns");
        if (p->gid != caller->gid && !p->unshare_user && p->userns_fd == -1)
                return nsr_error_setx(err, EINVAL, "Specifying --gid requires --unshare-user or --userns");
        bool hostname = false;
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].type == NSR_OP_HOSTNAME)
                        hostname = true;
        if (hostname && !p->unshare_uts)
                return nsr_error_setx(err, EINVAL, "Specifying --hostname requires --unshare-uts");
        if (p->as_pid_1 && !p->unshare_pid)
                return nsr_error_setx(err, EINVAL, "Specifying --as-pid-1 requires --unshare-pid");
        if (p->as_pid_1 && p->lock_files)
                return nsr_error_setx(err, EINVAL, "Specifying --as-pid-1 and --lock-file is not permitted");
        if (p->unshare_cgroup && !caller->cgroupns_possible)
                return nsr_error_setx(err, EINVAL,
                                      "Cannot create new cgroup namespace because the kernel does not support it");
        if (p->unshare_cgroup_try && caller->cgroupns_possible)
                p->unshare_cgroup = true;
        p->unshare_cgroup_try = false;

        p->needs_devpts = false;
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].type == NSR_OP_DEV)
                        p->needs_devpts = true;
        p->resolved = true;
        return 0;
}

static ssize_t env_find(char **env, const char *name) {
        size_t l = strlen(name);
        for (size_t i = 0; env && env[i]; i++)
                if (strncmp(env[i], name, l) == 0 && env[i][l] == '=')
                        return (ssize_t) i;
        return -1;
}

char **nsr_plan_build_env(const nsr_plan *p, char *const *base) {
        char **env = nsr_strv_copy(base);
        for (size_t i = 0; i < p->n_env; i++) {
                const nsr_env_edit *e = &p->env[i];
                ssize_t k;
                switch (e->action) {
                case NSR_ENV_CLEAR:
                        nsr_strv_free(env);
                        env = nsr_malloc0(sizeof(char *));
                        break;
                case NSR_ENV_SET:
                        k = env_find(env, e->name);
                        if (k >= 0) {
                                free(env[k]);
                                env[k] = nsr_asprintf("%s=%s", e->name, e->value);
                        } else
                                nsr_strv_push(&env, nsr_asprintf("%s=%s", e->name, e->value));
                        break;
                case NSR_ENV_UNSET:
                        while ((k = env_find(env, e->name)) >= 0) {
                                free(env[k]);
                                memmove(env + k, env + k + 1, (nsr_strv_length(env + k + 1) + 1) * sizeof(char *));
                        }
                        break;
                case _NSR_ENV_ACTION_MAX:
                case _NSR_ENV_ACTION_INVALID:
                        break;
                }
        }
        return env;
}

bool nsr_plan_caps(const nsr_plan *p, uint64_t start, uint64_t all, uint64_t *ret) {
        uint64_t c = start;
        for (size_t i = 0; i < p->n_caps; i++) {
                const nsr_cap_edit *e = &p->caps[i];
                uint64_t bits = e->cap < 0 ? all : (UINT64_C(1) << e->cap);
                if (e->add)
                        c |= bits;
                else
                        c &= ~bits;
        }
        *ret = c;
        return p->n_caps > 0;
}

unsigned nsr_plan_unshared(const nsr_plan *p) {
        unsigned ns = NSR_NS_MNT;
        if (p->unshare_user)
                ns |= NSR_NS_USER;
        if (p->unshare_ipc)
                ns |= NSR_NS_IPC;
        if (p->unshare_pid)
                ns |= NSR_NS_PID;
        if (p->unshare_net)
                ns |= NSR_NS_NET;
        if (p->unshare_uts)
                ns |= NSR_NS_UTS;
        if (p->unshare_cgroup)
                ns |= NSR_NS_CGROUP;
        return ns;
}

int nsr_conflict_mode_parse(const char *opt, const char *val, nsr_conflict_mode *ret, nsr_error *err) {
        nsr_conflict_mode m = nsr_conflict_mode_from_string(val);
        if (m < 0)
                return nsr_error_setx(err, EINVAL,
                                      "%s takes apply-rest, keep-all, fail, prefer-host or prefer-sandbox, not \"%s\"",
                                      opt, val);
        *ret = m;
        return 0;
}
