/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/dirent.h"
#include "cli/runctl.h"

static const struct {
        const char *name;
        int resource;
} rlimits[_NSR_RLIMIT_MAX] = {
        [NSR_RLIMIT_AS] = { "as", RLIMIT_AS },
        [NSR_RLIMIT_CORE] = { "core", RLIMIT_CORE },
        [NSR_RLIMIT_CPU] = { "cpu", RLIMIT_CPU },
        [NSR_RLIMIT_DATA] = { "data", RLIMIT_DATA },
        [NSR_RLIMIT_FSIZE] = { "fsize", RLIMIT_FSIZE },
        [NSR_RLIMIT_LOCKS] = { "locks", RLIMIT_LOCKS },
        [NSR_RLIMIT_MEMLOCK] = { "memlock", RLIMIT_MEMLOCK },
        [NSR_RLIMIT_MSGQUEUE] = { "msgqueue", RLIMIT_MSGQUEUE },
        [NSR_RLIMIT_NICE] = { "nice", RLIMIT_NICE },
        [NSR_RLIMIT_NOFILE] = { "nofile", RLIMIT_NOFILE },
        [NSR_RLIMIT_NPROC] = { "nproc", RLIMIT_NPROC },
        [NSR_RLIMIT_RSS] = { "rss", RLIMIT_RSS },
        [NSR_RLIMIT_RTPRIO] = { "rtprio", RLIMIT_RTPRIO },
        [NSR_RLIMIT_RTTIME] = { "rttime", RLIMIT_RTTIME },
        [NSR_RLIMIT_SIGPENDING] = { "sigpending", RLIMIT_SIGPENDING },
        [NSR_RLIMIT_STACK] = { "stack", RLIMIT_STACK },
};

nsr_rlimit_id nsr_rlimit_from_name(const char *name) {
        for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++)
                if (strcasecmp(name, rlimits[i].name) == 0)
                        return (nsr_rlimit_id) i;
        return _NSR_RLIMIT_INVALID;
}

const char *nsr_rlimit_name(nsr_rlimit_id id) {
        if (id < 0 || id >= _NSR_RLIMIT_MAX)
                return NULL;
        return rlimits[id].name;
}

int nsr_rlimit_resource(nsr_rlimit_id id) {
        if (id < 0 || id >= _NSR_RLIMIT_MAX)
                return -EINVAL;
        return rlimits[id].resource;
}

/* ---- parsers ------------------------------------------------------------- */

/* A decimal number with at most three fractional digits, scaled by 1000:
 * "1.5" -> 1500. The rest of the string is left in *end. */
static int parse_milli(const char *s, uint64_t *ret, const char **end) {
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        uint64_t whole = 0;
        while (isdigit((unsigned char) *s)) {
                if (whole > (UINT64_MAX / 10000) - 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t) (*s - '0');
                s++;
        }
        uint64_t frac = 0;
        if (*s == '.') {
                s++;
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                unsigned digits = 0;
                while (isdigit((unsigned char) *s)) {
                        if (digits < 3) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                digits++;
                        } else if (*s != '0')
                                return -EINVAL; /* finer than a millisecond */
                        s++;
                }
                for (; digits < 3; digits++)
                        frac *= 10;
        }
        *ret = whole * 1000 + frac;
        *end = s;
        return 0;
}

int nsr_parse_duration(const char *s, uint64_t *ret_ms) {
        if (!s)
                return -EINVAL;
        uint64_t milli = 0;
        const char *end = NULL;
        int r = parse_milli(s, &milli, &end);
        if (r < 0)
                return r;
        /* milli is the number times 1000; the unit turns it into ms. */
        uint64_t mul_num = 1, mul_den = 1;
        if (streq(end, "") || streq(end, "s"))
                mul_num = 1;
        else if (streq(end, "ms"))
                mul_den = 1000;
        else if (streq(end, "m"))
                mul_num = 60;
        else if (streq(end, "h"))
                mul_num = 3600;
        else if (streq(end, "d"))
                mul_num = 86400;
        else
                return -EINVAL;
        if (milli > NSR_DURATION_MAX_MS * mul_den / mul_num + 1)
                return -ERANGE;
        uint64_t ms = milli * mul_num;
        if (ms % mul_den)
                return -EINVAL; /* "1.5ms" */
        ms /= mul_den;
        if (ms > NSR_DURATION_MAX_MS)
                return -ERANGE;
        *ret_ms = ms;
        return 0;
}

const char *nsr_format_duration(uint64_t ms, char *buf, size_t len) {
        if (ms == 0)
                snprintf(buf, len, "0s");
        else if (ms % 86400000 == 0)
                snprintf(buf, len, "%" PRIu64 "d", ms / 86400000);
        else if (ms % 3600000 == 0)
                snprintf(buf, len, "%" PRIu64 "h", ms / 3600000);
        else if (ms % 60000 == 0)
                snprintf(buf, len, "%" PRIu64 "m", ms / 60000);
        else if (ms % 1000 == 0)
                snprintf(buf, len, "%" PRIu64 "s", ms / 1000);
        else if (ms < 1000)
                snprintf(buf, len, "%" PRIu64 "ms", ms);
        else {
                /* "1.5s", "1.25s", "1.005s": no trailing zeros */
                char frac[8];
                snprintf(frac, sizeof(frac), "%03u", (unsigned) (ms % 1000));
                size_t l = strlen(frac);
                while (l > 0 && frac[l - 1] == '0')
                        frac[--l] = '\0';
                snprintf(buf, len, "%" PRIu64 ".%ss", ms / 1000, frac);
        }
        return buf;
}

static int parse_limit_value(const char *s, uint64_t *ret) {
        if (strcasecmp(s, "unlimited") == 0 || strcasecmp(s, "infinity") == 0) {
                *ret = NSR_RLIM_INFINITY;
                return 0;
        }
        if (streq(s, "0")) {
                *ret = 0;
                return 0;
        }
        uint64_t v = 0;
        int r = nsr_parse_size_suffix(s, &v);
        if (r < 0)
                return r;
        /* RLIM_INFINITY is all ones: a number that large means unlimited
         * to the kernel, so it must be spelt "unlimited". */
        if (v == NSR_RLIM_INFINITY)
                return -ERANGE;
        *ret = v;
        return 0;
}

int nsr_parse_rlimit(const char *s, nsr_rlimit_id *ret_id, nsr_rlimit_spec *ret, nsr_error *err) {
        const char *eq = strchr(s, '=');
        if (!eq)
                return nsr_error_setx(err, EINVAL, "--rlimit takes NAME=SOFT[:HARD], not \"%s\"", s);
        _cleanup_free_ char *name = nsr_strndup(s, (size_t) (eq - s));
        nsr_rlimit_id id = nsr_rlimit_from_name(name);
        if (id < 0) {
                char names[256] = "";
                for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++) {
                        strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
                        strncat(names, rlimits[i].name, sizeof(names) - strlen(names) - 1);
                }
                return nsr_error_setx(err, EINVAL, "--rlimit: unknown limit \"%s\" (known: %s)", name, names);
        }
        const char *val = eq + 1;
        const char *colon = strchr(val, ':');
        _cleanup_free_ char *soft = colon ? nsr_strndup(val, (size_t) (colon - val)) : nsr_strdup(val);
        const char *hard = colon ? colon + 1 : NULL;
        nsr_rlimit_spec sp = { 0 };
        if (soft[0]) {
                if (parse_limit_value(soft, &sp.soft) < 0)
                        return nsr_error_setx(err, EINVAL, "--rlimit %s: \"%s\" is not a number or \"unlimited\"", name,
                                              soft);
                sp.has_soft = true;
        }
        if (hard && hard[0]) {
                if (parse_limit_value(hard, &sp.hard) < 0)
                        return nsr_error_setx(err, EINVAL, "--rlimit %s: \"%s\" is not a number or \"unlimited\"", name,
                                              hard);
                sp.has_hard = true;
        }
        if (!colon && sp.has_soft) {
                /* "NAME=N" sets both, as prlimit does. */
                sp.hard = sp.soft;
                sp.has_hard = true;
        }
        if (!sp.has_soft && !sp.has_hard)
                return nsr_error_setx(err, EINVAL, "--rlimit %s: no value", name);
        if (sp.has_soft && sp.has_hard && sp.soft > sp.hard)
                return nsr_error_setx(err, EINVAL, "--rlimit %s: the soft limit is above the hard limit", name);
        *ret_id = id;
        *ret = sp;
        return 0;
}

int nsr_parse_cpu(const char *s, uint64_t *ret_milli) {
        uint64_t milli = 0;
        const char *end = NULL;
        int r = parse_milli(s, &milli, &end);
        if (r < 0)
                return r;
        if (streq(end, "%"))
                milli /= 100;
        else if (*end)
                return -EINVAL;
        /* cpu.max's quota has a floor of 1 ms per 100 ms period. */
        if (milli < 10 || milli > 1000000)
                return -ERANGE;
        *ret_milli = milli;
        return 0;
}

/* ---- defaults and description ---------------------------------------------- */

void nsr_runctl_project_defaults(nsr_runctl *rc) {
        nsr_rlimit_spec *core = &rc->rlim[NSR_RLIMIT_CORE];
        if (!core->has_soft && !core->has_hard)
                *core = (nsr_rlimit_spec){ .has_soft = true, .has_hard = true, .soft = 0, .hard = 0 };
        nsr_rlimit_spec *nofile = &rc->rlim[NSR_RLIMIT_NOFILE];
        if (!nofile->has_soft && !nofile->has_hard)
                *nofile = (nsr_rlimit_spec){ .has_soft = true,
                                             .has_hard = true,
                                             .soft = NSR_NOFILE_DEFAULT_SOFT,
                                             .hard = NSR_NOFILE_DEFAULT_HARD,
                                             .clamp = true };
        if (!rc->pids)
                rc->pids = NSR_PIDS_DEFAULT;
        if (!rc->has_kill_after)
                rc->kill_after_ms = NSR_KILL_AFTER_DEFAULT_MS;
}

uint64_t nsr_tmp_size_default(void) {
        struct sysinfo si;
        uint64_t ram = 0;
        if (sysinfo(&si) == 0)
                ram = (uint64_t) si.totalram * si.mem_unit;
        uint64_t q = ram / 4;
        return q < NSR_TMP_SIZE_MIN ? NSR_TMP_SIZE_MIN : q;
}

void nsr_runctl_effective_rlimit(const nsr_runctl *rc, nsr_rlimit_id id, uint64_t *ret_soft, uint64_t *ret_hard) {
        nsr_runctl d = *rc;
        nsr_runctl_project_defaults(&d);
        const nsr_rlimit_spec *s = &d.rlim[id];
        struct rlimit cur = { RLIM_INFINITY, RLIM_INFINITY };
        (void) getrlimit(rlimits[id].resource, &cur);
        uint64_t csoft = cur.rlim_cur == RLIM_INFINITY ? NSR_RLIM_INFINITY : (uint64_t) cur.rlim_cur;
        uint64_t chard = cur.rlim_max == RLIM_INFINITY ? NSR_RLIM_INFINITY : (uint64_t) cur.rlim_max;
        uint64_t soft = s->has_soft ? s->soft : csoft, hard = s->has_hard ? s->hard : chard;
        if (id == NSR_RLIMIT_NPROC && !s->has_soft && !s->has_hard && d.pids)
                soft = hard = d.pids;
        if (s->clamp) {
                hard = hard < chard ? hard : chard;
                soft = soft < hard ? soft : hard;
        }
        *ret_soft = soft;
        *ret_hard = hard;
}

void nsr_host_bounds_detect(nsr_host_bounds *ret) {
        *ret = (nsr_host_bounds){ .pid_max = UINT64_C(1) << 22 };
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        _cleanup_close_ int fd = open("/proc/sys/kernel/pid_max", O_RDONLY | O_CLOEXEC);
        uint64_t v = 0;
        if (fd >= 0 && nsr_read_all(fd, 64, &text, &len) >= 0) {
                text[strcspn(text, "\n")] = '\0';
                if (nsr_parse_u64(text, &v) >= 0 && v > 0)
                        ret->pid_max = v;
        }
        struct sysinfo si;
        ret->ram = sysinfo(&si) == 0 ? (uint64_t) si.totalram * si.mem_unit : NSR_RLIM_INFINITY;
        for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++) {
                struct rlimit cur = { RLIM_INFINITY, RLIM_INFINITY };
                (void) getrlimit(rlimits[i].resource, &cur);
                ret->hard[i] = cur.rlim_max == RLIM_INFINITY ? NSR_RLIM_INFINITY : (uint64_t) cur.rlim_max;
        }
}

static void format_value(uint64_t v, char *buf, size_t len);

static int above(nsr_error *err, const char *opt, uint64_t v, uint64_t bound, const char *what) {
        return nsr_error_setx(err, ERANGE, "%s %" PRIu64 " is above %" PRIu64 ", %s: refused, whoever asks", opt, v,
                              bound, what);
}

int nsr_runctl_check_host(const nsr_runctl *rc, const char *opt, nsr_rlimit_id rid, const nsr_host_bounds *hb,
                          nsr_error *err) {
        if (streq(opt, "--pids") && rc->pids > hb->pid_max)
                return above(err, opt, rc->pids, hb->pid_max, "this host's pid_max (/proc/sys/kernel/pid_max)");
        if (streq(opt, "--tmp-size") && rc->tmp_size > hb->ram)
                return above(err, opt, rc->tmp_size, hb->ram, "the bytes of RAM this host has");
        if (streq(opt, "--memory") && rc->memory > hb->ram)
                return above(err, opt, rc->memory, hb->ram, "the bytes of RAM this host has");
        if (streq(opt, "--rlimit") && rid >= 0 && rid < _NSR_RLIMIT_MAX) {
                /* Raising a hard limit needs CAP_SYS_RESOURCE in the initial
                 * user namespace, which the sandbox never has: the kernel
                 * would refuse it in the child; say so before anything ran,
                 * with the bound. */
                const nsr_rlimit_spec *s = &rc->rlim[rid];
                uint64_t v = s->has_hard ? s->hard : s->soft;
                if ((s->has_hard || s->has_soft) && hb->hard[rid] != NSR_RLIM_INFINITY &&
                    (v == NSR_RLIM_INFINITY || v > hb->hard[rid])) {
                        char a[32];
                        format_value(v, a, sizeof(a));
                        return nsr_error_setx(err, ERANGE,
                                              "--rlimit %s: %s is above your hard limit (%" PRIu64
                                              "), and nsrun cannot raise the hard limit",
                                              rlimits[rid].name, a, hb->hard[rid]);
                }
        }
        return 0;
}

void nsr_runctl_merge(nsr_runctl *dst, const nsr_runctl *src) {
        if (src->timeout_ms)
                dst->timeout_ms = src->timeout_ms;
        if (src->has_kill_after) {
                dst->kill_after_ms = src->kill_after_ms;
                dst->has_kill_after = true;
        }
        for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++)
                if (src->rlim[i].has_soft || src->rlim[i].has_hard)
                        dst->rlim[i] = src->rlim[i];
        if (src->pids) {
                dst->pids = src->pids;
                dst->pids_explicit = src->pids_explicit;
        }
        if (src->tmp_size)
                dst->tmp_size = src->tmp_size;
        if (src->memory)
                dst->memory = src->memory;
        if (src->cpu_milli)
                dst->cpu_milli = src->cpu_milli;
}

bool nsr_runctl_has_rlimits(const nsr_runctl *rc) {
        if (rc->pids)
                return true;
        for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++)
                if (rc->rlim[i].has_soft || rc->rlim[i].has_hard)
                        return true;
        return false;
}

static void format_value(uint64_t v, char *buf, size_t len) {
        if (v == NSR_RLIM_INFINITY)
                snprintf(buf, len, "unlimited");
        else
                snprintf(buf, len, "%" PRIu64, v);
}

char **nsr_runctl_describe(const nsr_runctl *rc) {
        char **v = nsr_malloc0(sizeof(char *));
        char a[32], b[32];
        if (rc->timeout_ms)
                nsr_strv_push(&v, nsr_asprintf("--timeout %s: then SIGTERM to every process of the sandbox, SIGKILL "
                                               "%s later; exit status 124",
                                               nsr_format_duration(rc->timeout_ms, a, sizeof(a)),
                                               nsr_format_duration(rc->has_kill_after ? rc->kill_after_ms
                                                                                      : NSR_KILL_AFTER_DEFAULT_MS,
                                                                   b, sizeof(b))));
        for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++) {
                const nsr_rlimit_spec *s = &rc->rlim[i];
                if (!s->has_soft && !s->has_hard)
                        continue;
                format_value(s->soft, a, sizeof(a));
                format_value(s->hard, b, sizeof(b));
                nsr_strv_push(&v,
                              nsr_asprintf("--rlimit %s=%s:%s%s", rlimits[i].name, s->has_soft ? a : "",
                                           s->has_hard ? b : "", s->clamp ? " (at most the current hard limit)" : ""));
        }
        if (rc->pids)
                nsr_strv_push(
                        &v,
                        nsr_asprintf("--pids %" PRIu64 ": RLIMIT_NPROC in the new user namespace%s", rc->pids,
                                     rc->pids_explicit ? ", and pids.max in a delegated cgroup if there is one" : ""));
        if (rc->tmp_size)
                nsr_strv_push(&v, nsr_asprintf("--tmp-size %" PRIu64 ": the total all tmpfs project mode mounts share",
                                               rc->tmp_size));
        if (rc->memory)
                nsr_strv_push(&v, nsr_asprintf("--memory %" PRIu64 ": memory.max of a cgroup for the run", rc->memory));
        if (rc->cpu_milli)
                nsr_strv_push(&v, nsr_asprintf("--cpu %" PRIu64 ".%03" PRIu64 ": cpu.max of a cgroup for the run",
                                               rc->cpu_milli / 1000, rc->cpu_milli % 1000));
        return v;
}

/* ---- applying ------------------------------------------------------------- */

static rlim_t to_rlim(uint64_t v) {
        return v == NSR_RLIM_INFINITY ? RLIM_INFINITY : (rlim_t) v;
}

static int apply_one(nsr_rlimit_id id, const nsr_rlimit_spec *s, nsr_error *err) {
        struct rlimit cur;
        int res = rlimits[id].resource;
        if (getrlimit(res, &cur) < 0)
                return nsr_error_set(err, errno, "getrlimit(%s)", rlimits[id].name);
        struct rlimit nl = cur;
        if (s->has_hard)
                nl.rlim_max = to_rlim(s->hard);
        if (s->has_soft)
                nl.rlim_cur = to_rlim(s->soft);
        if (s->clamp) {
                /* A default never raises the hard limit. */
                if (cur.rlim_max != RLIM_INFINITY && (nl.rlim_max == RLIM_INFINITY || nl.rlim_max > cur.rlim_max))
                        nl.rlim_max = cur.rlim_max;
                if (nl.rlim_max != RLIM_INFINITY && (nl.rlim_cur == RLIM_INFINITY || nl.rlim_cur > nl.rlim_max))
                        nl.rlim_cur = nl.rlim_max;
        } else if (!s->has_hard && nl.rlim_max != RLIM_INFINITY &&
                   (nl.rlim_cur == RLIM_INFINITY || nl.rlim_cur > nl.rlim_max))
                return nsr_error_setx(err, EINVAL, "--rlimit %s: the soft limit is above the hard limit (%ju)",
                                      rlimits[id].name, (uintmax_t) cur.rlim_max);
        if (setrlimit(res, &nl) < 0) {
                if (errno == EPERM)
                        return nsr_error_set(err, errno,
                                             "--rlimit %s: cannot raise the hard limit above %ju without privilege",
                                             rlimits[id].name, (uintmax_t) cur.rlim_max);
                return nsr_error_set(err, errno, "--rlimit %s", rlimits[id].name);
        }
        return 0;
}

int nsr_runctl_apply_rlimits(const nsr_runctl *rc, nsr_error *err) {
        for (size_t i = 0; i < _NSR_RLIMIT_MAX; i++) {
                const nsr_rlimit_spec *s = &rc->rlim[i];
                if (!s->has_soft && !s->has_hard)
                        continue;
                int r = apply_one((nsr_rlimit_id) i, s, err);
                if (r < 0)
                        return r;
        }
        const nsr_rlimit_spec *nproc = &rc->rlim[NSR_RLIMIT_NPROC];
        if (rc->pids && !nproc->has_soft && !nproc->has_hard) {
                nsr_rlimit_spec s = { .has_soft = true, .has_hard = true, .soft = rc->pids, .hard = rc->pids };
                int r = apply_one(NSR_RLIMIT_NPROC, &s, err);
                if (r < 0)
                        return nsr_error_prefix(err, "--pids %" PRIu64, rc->pids);
        }
        return 0;
}

/* ---- the deadline ---------------------------------------------------------- */

static int arm(int fd, uint64_t ms) {
        struct itimerspec its = { .it_value = { .tv_sec = (time_t) (ms / 1000),
                                                .tv_nsec = (long) (ms % 1000) * 1000000L } };
        if (ms == 0)
                its.it_value.tv_nsec = 1; /* 0 would disarm it */
        return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

int nsr_deadline_start(nsr_deadline *d, const nsr_runctl *rc, nsr_error *err) {
        *d = (nsr_deadline){ .fd = -1 };
        if (!rc->timeout_ms)
                return 0;
        d->kill_after_ms = rc->has_kill_after ? rc->kill_after_ms : NSR_KILL_AFTER_DEFAULT_MS;
        d->fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (d->fd < 0)
                return nsr_error_set(err, errno, "timerfd_create");
        int r = arm(d->fd, rc->timeout_ms);
        if (r < 0) {
                d->fd = safe_close(d->fd);
                return nsr_error_set(err, -r, "timerfd_settime");
        }
        return 0;
}

nsr_deadline_step nsr_deadline_next(nsr_deadline *d) {
        uint64_t n;
        if (d->fd < 0 || read(d->fd, &n, sizeof(n)) != (ssize_t) sizeof(n))
                return NSR_DEADLINE_NONE;
        if (d->fired == 0) {
                d->fired = 1;
                if (arm(d->fd, d->kill_after_ms) < 0) {
                        /* No second timer: kill now rather than never. */
                        d->fired = 2;
                        return NSR_DEADLINE_KILL;
                }
                return NSR_DEADLINE_TERM;
        }
        d->fired = 2;
        return NSR_DEADLINE_KILL;
}

void nsr_deadline_event(nsr_outq *q, nsr_deadline_step step) {
        if (!q || (step != NSR_DEADLINE_TERM && step != NSR_DEADLINE_KILL))
                return;
        const char *line = step == NSR_DEADLINE_TERM ? "{\"event\":\"timeout\",\"signal\":\"SIGTERM\"}\n"
                                                     : "{\"event\":\"timeout\",\"signal\":\"SIGKILL\"}\n";
        nsr_outq_put(q, line, strlen(line));
}

void nsr_deadline_done(nsr_deadline *d) {
        d->fd = safe_close(d->fd);
}

static int ns_inode(pid_t pid, ino_t *ret) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int) pid);
        if (stat(path, &st) < 0)
                return -errno;
        *ret = st.st_ino;
        return 0;
}

size_t nsr_signal_pidns(pid_t pid1, int sig) {
        ino_t ns;
        if (ns_inode(pid1, &ns) < 0)
                return 0;
        _cleanup_closedir_ DIR *d = NULL;
        if (nsr_opendir_at(AT_FDCWD, "/proc", 0, &d) < 0)
                return 0;
        size_t n = 0;
        /* Best effort, and the count says how far it got. */
        FOREACH_DIRENT(de, d, break) {
                uint32_t pid;
                if (nsr_parse_u32(de->d_name, &pid) < 0 || pid == 0 || (pid_t) pid == pid1)
                        continue;
                /* The pidfd first, then the check: a pid that was reused
                 * between the two is caught by the check, and the pidfd
                 * keeps the process it names from then on. */
                _cleanup_close_ int pfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
                if (pfd < 0)
                        continue;
                ino_t other;
                if (ns_inode((pid_t) pid, &other) < 0 || other != ns)
                        continue;
                if (syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) == 0)
                        n++;
        }
        return n;
}
