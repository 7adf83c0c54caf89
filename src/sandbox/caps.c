/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "base/util.h"
#include "sandbox/caps.h"

int nsr_caps_last(void) {
        /* Read once: the launch asks in the parent and again in the child,
         * which shares this memory, and the value never changes. */
        static int cached = -1;
        if (cached >= 0)
                return cached;
        char buf[16];
        _cleanup_close_ int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                int n = nsr_read_full(fd, buf, sizeof(buf) - 1);
                if (n > 0) {
                        buf[n] = '\0';
                        int v = atoi(buf);
                        if (v > 0 && v < 64)
                                return cached = v;
                }
        }
        return cached = CAP_LAST_CAP;
}

uint64_t nsr_caps_all(void) {
        int last = nsr_caps_last();
        return last >= 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1;
}

int nsr_caps_current(uint64_t *ret) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2];
        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        *ret = (uint64_t) d[0].effective | ((uint64_t) d[1].effective << 32);
        return 0;
}

int nsr_caps_bound(uint64_t keep, nsr_error *err) {
        /* Every drop must succeed: a capability the kernel would not drop
         * (EPERM) stays in the set, and a sandbox must not start with it.
         * EINVAL is a capability this kernel does not have. Checking each
         * drop here spares reading the set back afterwards (one prctl a
         * capability, in pid 1 and again in the command). */
        int last = nsr_caps_last();
        for (int c = 0; c <= last; c++) {
                if (keep & (UINT64_C(1) << c))
                        continue;
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return nsr_error_set(err, errno, "Dropping capability %d from bounds", c);
        }
        return 0;
}

int nsr_caps_bound_drop(uint64_t drop, nsr_error *err) {
        int last = nsr_caps_last();
        for (int c = 0; c <= last; c++) {
                if (!(drop & (UINT64_C(1) << c)))
                        continue;
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
                        return nsr_error_set(err, errno, "Dropping capability %d from bounds", c);
        }
        return 0;
}

int nsr_caps_set(uint64_t keep, nsr_error *err) {
        int last = nsr_caps_last();
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2];
        for (int i = 0; i < 2; i++) {
                uint32_t v = (uint32_t) (keep >> (32 * i));
                d[i].effective = d[i].permitted = d[i].inheritable = v;
        }
        if (syscall(SYS_capset, &h, d) < 0)
                return nsr_error_set(err, errno, "capset failed");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return nsr_error_set(err, errno, "Clearing ambient capabilities");
        for (int c = 0; c <= last; c++) {
                if (!(keep & (UINT64_C(1) << c)))
                        continue;
                if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0 && errno != EINVAL)
                        return nsr_error_set(err, errno, "Adding ambient capability %d", c);
        }
        return 0;
}

static int get_sets(struct __user_cap_data_struct d[2]) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        return syscall(SYS_capget, &h, d) < 0 ? -errno : 0;
}

int nsr_caps_permitted(uint64_t *ret) {
        struct __user_cap_data_struct d[2];
        int r = get_sets(d);
        if (r < 0)
                return r;
        *ret = (uint64_t) d[0].permitted | ((uint64_t) d[1].permitted << 32);
        return 0;
}

int nsr_caps_raise_effective(uint64_t caps) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2];
        int r = get_sets(d);
        if (r < 0)
                return r;
        d[0].effective = (uint32_t) caps;
        d[1].effective = (uint32_t) (caps >> 32);
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}
