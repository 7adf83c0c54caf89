/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libmount, loaded when first used.
 *
 * Only the mount-table readers (the doctor's probes and the overlay depth
 * check) need libmount, but a library named at link time is mapped by every
 * launch, and libmount brings libblkid, libselinux and libpcre2 with it:
 * about 0.4 ms of a 3 ms launch on the benchmark machine. So nsrun is not
 * linked against it; the functions below have libmount's own names and
 * prototypes (the header checks them), load libmount.so.1 on the first call
 * and forward to it.
 *
 * Our definitions are not exported (an executable's symbols are not in its
 * dynamic table unless a shared object it links needs them), so libmount's
 * calls to itself never land here.
 *
 * When the library cannot be loaded, every function fails the way libmount
 * reports failure (NULL, or a negative errno), which the callers already
 * handle: a doctor check then says the mount table could not be read. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <libmount/libmount.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "sandbox/libmount.h"

#define MOUNTLIB_SONAME "libmount.so.1"

#define MOUNTLIB_FUNCS(X)                                                                                              \
        X(struct libmnt_table *, mnt_new_table_from_file, (const char *filename), (filename), NULL)                    \
        X(struct libmnt_iter *, mnt_new_iter, (int direction), (direction), NULL)                                      \
        X(int, mnt_table_next_fs, (struct libmnt_table * tb, struct libmnt_iter * itr, struct libmnt_fs * *fs),        \
          (tb, itr, fs), -ENOSYS)                                                                                      \
        X(struct libmnt_fs *, mnt_table_find_devno, (struct libmnt_table * tb, dev_t devno, int direction),            \
          (tb, devno, direction), NULL)                                                                                \
        X(struct libmnt_fs *, mnt_table_find_target, (struct libmnt_table * tb, const char *path, int direction),      \
          (tb, path, direction), NULL)                                                                                 \
        X(const char *, mnt_fs_get_fstype, (struct libmnt_fs * fs), (fs), NULL)                                        \
        X(const char *, mnt_fs_get_fs_options, (struct libmnt_fs * fs), (fs), NULL)                                    \
        X(const char *, mnt_fs_get_root, (struct libmnt_fs * fs), (fs), NULL)                                          \
        X(const char *, mnt_fs_get_target, (struct libmnt_fs * fs), (fs), NULL)                                        \
        X(int, mnt_optstr_next_option, (char **optstr, char **name, size_t *namesz, char **value, size_t *valuesz),    \
          (optstr, name, namesz, value, valuesz), -ENOSYS)

static struct {
#define X(ret, name, params, args, fail) ret(*name) params;
        MOUNTLIB_FUNCS(X)
#undef X
        void (*mnt_unref_table)(struct libmnt_table *tb);
        void (*mnt_free_iter)(struct libmnt_iter *itr);
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[256];
static const char *load_fix = "install libmount (Debian: libmount1)";

/* Whether this process may dlopen libmount. A static nsrun (configure.ac,
 * --disable-static-pie) loads it with the C library on disk, which must be
 * the one linked in: when they differ (libc6 upgraded since nsrun was
 * built), glibc can abort the whole process inside dlopen. So a child
 * tries first, unable to dump core, and its failure is libmount's. A
 * dynamic nsrun has an interpreter (AT_BASE), and nothing to check. The
 * test hook makes the child abort, in any build (t400). */
static bool load_is_safe(void) {
        bool abort_child = nsr_test_hook_on("NSRUN_TEST_LIBMOUNT_ABORT");
        if (getauxval(AT_BASE) != 0 && !abort_child)
                return true;
        pid_t pid = fork();
        if (pid < 0)
                return false;
        if (pid == 0) {
                struct rlimit none = { 0, 0 };
                (void) setrlimit(RLIMIT_CORE, &none);
                (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
                if (abort_child)
                        abort();
                void *h = dlopen(MOUNTLIB_SONAME, RTLD_NOW | RTLD_LOCAL);
                _exit(h && dlsym(h, "mnt_new_table_from_file") ? 0 : 1);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return false;
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void load(void) {
        if (!load_is_safe()) {
                snprintf(load_error, sizeof(load_error),
                         "this static nsrun cannot load " MOUNTLIB_SONAME
                         " with the C library installed now, not the one it was built with");
                load_fix = "rebuild nsrun, or configure it with --disable-static-pie";
                return;
        }
        void *h = dlopen(MOUNTLIB_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                const char *e = dlerror();
                snprintf(load_error, sizeof(load_error), "%s", e ? e : "cannot load " MOUNTLIB_SONAME);
                return;
        }
#define X(ret, name, params, args, fail)                                                                               \
        if (!(*(void **) &api.name = dlsym(h, #name))) {                                                               \
                snprintf(load_error, sizeof(load_error), "%s has no %s", MOUNTLIB_SONAME, #name);                      \
                return;                                                                                                \
        }
        MOUNTLIB_FUNCS(X)
        X(void, mnt_unref_table, , , )
        X(void, mnt_free_iter, , , )
#undef X
        /* The handle stays open for the life of the process, on purpose. */
        loaded = true;
}

const char *nsr_mountlib_fix(void) {
        return load_fix;
}

bool nsr_mountlib_available(const char **ret_error) {
        (void) pthread_once(&load_once, load);
        if (!loaded && ret_error)
                *ret_error = load_error;
        return loaded;
}

#define X(ret, name, params, args, fail)                                                                               \
        ret name params {                                                                                              \
                if (!nsr_mountlib_available(NULL))                                                                     \
                        return fail;                                                                                   \
                return api.name args;                                                                                  \
        }
MOUNTLIB_FUNCS(X)
#undef X

/* Only a loaded library can have made the object, hence no load here. */
void mnt_unref_table(struct libmnt_table *tb) {
        if (tb && loaded)
                api.mnt_unref_table(tb);
}

void mnt_free_iter(struct libmnt_iter *itr) {
        if (itr && loaded)
                api.mnt_free_iter(itr);
}
