/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "project/workspace.h"

typedef enum kind {
        KIND_NONE,
        KIND_DIR,
        KIND_FILE,
        KIND_SYMLINK,
} kind;

static kind mount_point_kind(const nsr_op *op) {
        struct stat st;
        switch (op->type) {
        case NSR_OP_CHMOD:
        case NSR_OP_REMOUNT_RO:
        case NSR_OP_HOSTNAME:
        case NSR_OP_SLOT: /* a workspace root's plan has none (profile.c) */
                return KIND_NONE;
        case NSR_OP_SYMLINK:
                return KIND_SYMLINK;
        case NSR_OP_FILE:
        case NSR_OP_BIND_DATA:
        case NSR_OP_RO_BIND_DATA:
                return KIND_FILE;
        case NSR_OP_BIND:
        case NSR_OP_RO_BIND:
        case NSR_OP_DEV_BIND:
                /* bwrap makes a file for a source that is not a dir */
                return op->source && stat(op->source, &st) == 0 && !S_ISDIR(st.st_mode) ? KIND_FILE : KIND_DIR;
        case NSR_OP_BIND_FD:
        case NSR_OP_RO_BIND_FD:
        case NSR_OP_OVERLAY:
        case NSR_OP_TMP_OVERLAY:
        case NSR_OP_RO_OVERLAY:
        case NSR_OP_PROC:
        case NSR_OP_DEV:
        case NSR_OP_TMPFS:
        case NSR_OP_MQUEUE:
        case NSR_OP_DIR:
                return KIND_DIR;
        case _NSR_OP_TYPE_MAX:
        case _NSR_OP_TYPE_INVALID:
                break;
        }
        return KIND_NONE;
}

/* Makes rel (normalised, relative, no "..") below dirfd. */
static void make_entry(int dirfd, const char *rel, kind k, const char *target) {
        _cleanup_free_ char *copy = nsr_strdup(rel);
        _cleanup_close_ int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        char *name = copy;
        for (char *slash; cur >= 0 && (slash = strchr(name, '/')); name = slash + 1) {
                *slash = '\0';
                if (mkdirat(cur, name, 0755) < 0 && errno != EEXIST)
                        return;
                int next = openat(cur, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                safe_close(cur);
                cur = next;
        }
        if (cur < 0)
                return;
        switch (k) {
        case KIND_DIR:
                (void) mkdirat(cur, name, 0755);
                break;
        case KIND_FILE:
                safe_close(openat(cur, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
                break;
        case KIND_SYMLINK:
                (void) symlinkat(target, cur, name);
                break;
        case KIND_NONE:
                break;
        }
}

int nsr_workspace_skeleton(const nsr_plan *plan, int project_fd, int skel_fd, nsr_error *err) {
        for (size_t i = 0; i < plan->n_ops; i++) {
                const nsr_op *op = &plan->ops[i];
                kind k = mount_point_kind(op);
                if (k == KIND_NONE || !op->dest)
                        continue;
                _cleanup_free_ char *norm = nsr_path_normalize(op->dest);
                const char *rel = norm + strspn(norm, "/");
                if (!*rel || norm[0] != '/' || streq(rel, "..") || nsr_startswith(rel, "../") || strstr(rel, "/../") ||
                    nsr_endswith(rel, "/.."))
                        continue;
                /* Only below a name the project lacks: the project's own
                 * entries stay as they are. */
                _cleanup_free_ char *top = nsr_strndup(rel, strcspn(rel, "/"));
                struct stat st;
                if (fstatat(project_fd, top, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        continue;
                make_entry(skel_fd, rel, k, op->source);
        }
        (void) err;
        return 0;
}
