/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Entries made in the new root rather than mounted from elsewhere:
 * --dir, --file, --bind-data and --ro-bind-data (a file of the caller's
 * fd's bytes, bound read-only for the -ro form), --symlink, --chmod. Each
 * destination is opened beneath the new root (rootfs_open_dest). */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/syscalls.h"
#include "sandbox/rootfs-internal.h"

int rootfs_do_dir(builder *b, const nsr_op *op, nsr_error *err) {
        _cleanup_close_ int fd = rootfs_open_dest(b, op, DEST_DIR, (int) nsr_op_perms(op), false, false, err);
        return fd < 0 ? fd : 0;
}

static int read_op_data(const nsr_op *op, char **ret, size_t *ret_len) {
        /* The data comes from the caller; 1 GiB is a sanity bound. */
        int r = nsr_read_all(op->fd, (size_t) 1 << 30, ret, ret_len);
        close(op->fd);
        return r;
}

int rootfs_do_file(builder *b, const nsr_op *op, nsr_error *err) {
        _cleanup_close_ int fd = rootfs_open_dest(b, op, DEST_FILE, (int) nsr_op_perms(op), true, false, err);
        if (fd < 0)
                return fd;
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = read_op_data(op, &data, &len);
        if (r < 0 || (r = nsr_write_all(fd, data, len)) < 0)
                return nsr_error_set(err, -r, "Can't write data to file %s", op->dest);
        return 0;
}

int rootfs_do_bind_data(builder *b, const nsr_op *op, nsr_error *err) {
        char name[64];
        snprintf(name, sizeof(name), "bindfile%u", b->n_bindfile++);
        mode_t perms = nsr_op_perms(op);
        _cleanup_close_ int fd = openat(b->scratch, name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, perms);
        if (fd < 0)
                return nsr_error_set(err, errno, "Can't create tmpfile for %s", op->dest);
        if (fchmod(fd, perms) < 0)
                return nsr_error_set(err, errno, "Can't set mode %#o on file to be used for %s", (unsigned) perms,
                                     op->dest);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = read_op_data(op, &data, &len);
        if (r < 0 || (r = nsr_write_all(fd, data, len)) < 0)
                return nsr_error_set(err, -r, "Can't write data to file %s", op->dest);
        _cleanup_close_ int target = rootfs_open_dest(b, op, DEST_FILE, -1, false, true, err);
        if (target < 0)
                return target;
        unsigned attrs =
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (op->type == NSR_OP_RO_BIND_DATA ? MOUNT_ATTR_RDONLY : 0);
        _cleanup_close_ int tree = rootfs_clone_tree(b->scratch, name, false, attrs);
        r = tree < 0 ? tree : rootfs_attach(tree, target);
        (void) unlinkat(b->scratch, name, 0);
        if (r < 0)
                return rootfs_bind_error(err, -r, "tmpfile", op->dest);
        return 0;
}

int rootfs_do_symlink(builder *b, const nsr_op *op, nsr_error *err) {
        _cleanup_free_ char *norm = NULL;
        const char *name;
        _cleanup_close_ int parent = rootfs_open_parent(b->root, op->dest, rootfs_parent_mode(op), &norm, &name);
        if (parent < 0)
                return nsr_error_set(err, -parent, "Can't mkdir parents for %s", op->dest);
        if (symlinkat(op->source, parent, name) == 0)
                return 0;
        if (errno != EEXIST)
                return nsr_error_set(err, errno, "Can't make symlink at %s", op->dest);
        /* Since bwrap 0.9 an identical existing symlink is fine. */
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
                return nsr_error_setx(err, EEXIST, "Can't make symlink at %s: destination exists and is not a symlink",
                                      op->dest);
        char buf[PATH_MAX];
        ssize_t k = readlinkat(parent, name, buf, sizeof(buf) - 1);
        if (k < 0)
                return nsr_error_set(err, errno,
                                     "Can't make symlink at %s: destination exists, and cannot read symlink target",
                                     op->dest);
        buf[k] = '\0';
        if (streq(buf, op->source))
                return 0;
        return nsr_error_setx(err, EEXIST, "Can't make symlink at %s: existing destination is %s", op->dest, buf);
}

int rootfs_do_chmod(builder *b, const nsr_op *op, nsr_error *err) {
        /* Resolved in the new root; a symlink as the last component is
         * not followed (bwrap 0.12). */
        _cleanup_close_ int fd = rootfs_open_in_root(b->root, op->dest, O_PATH | O_NOFOLLOW);
        if (fd < 0)
                return nsr_error_set(err, -fd, "Can't open %s", op->dest);
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        if (chmod(p, op->perms) < 0)
                return nsr_error_set(err, errno, "Can't chmod %#o %s", (unsigned) op->perms, op->dest);
        return 0;
}
