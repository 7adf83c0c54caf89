/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The subcommands' one error printer, and the error object their --json
 * output ends with when they fail: {"error": {"kind", "message", "hint"}},
 * the same member a project run's report carries, so that a program
 * driving nsrun reads every failure one way. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "project/report.h"

/* main.c is the only caller of begin/end; the subcommands only print. */
static struct {
        bool json;
        bool taken; /* first holds the first error said */
        nsr_error first;
} errs;

void nsr_cmd_errors_begin(bool json) {
        errs.json = json;
        errs.taken = false;
        errs.first = (nsr_error){ 0 };
}

void nsr_cmd_print_error(const nsr_error *e) {
        char buf[NSR_ERROR_MSG_MAX + 256];
        nsr_error_format(e, buf, sizeof(buf));
        nsr_utf8_fprintf_line(stderr, "nsrun: %s\n", buf);
        if (!errs.taken) {
                errs.first = *e;
                errs.taken = true;
        }
}

void nsr_cmd_note_text(nsr_error_kind kind, const char *text) {
        nsr_error e = { 0 };
        /* One line: the last one said (notes may come before the error),
         * without "nsrun: ". */
        const char *end = text + strlen(text);
        while (end > text && end[-1] == '\n')
                end--;
        const char *start = end;
        while (start > text && start[-1] != '\n')
                start--;
        text = start;
        size_t len = (size_t) (end - start);
        if (strncmp(text, "nsrun: ", 7) == 0 && len >= 7) {
                text += 7;
                len -= 7;
        }
        (void) nsr_error_setxk(&e, kind, EIO, "%.*s", (int) len, text);
        if (!errs.taken) {
                errs.first = e;
                errs.taken = true;
        }
}

int nsr_cmd_errors_end(int rc) {
        if (!errs.json || rc == 0)
                return rc;
        /* A status that is an answer, not a failure (doctor's verdict, undo's
         * 3), said nothing through the error printer: no object then. */
        if (!errs.taken)
                return rc;
        nsr_error e = errs.first;
        if (rc == NSR_EXIT_USAGE && (e.kind == NSR_ERR_NONE || e.kind == NSR_ERR_SETUP))
                e.kind = NSR_ERR_USAGE;
        _cleanup_(nsr_json_freep) nsr_json *j = nsr_json_new(stdout, 0, 0);
        nsr_json_object_begin(j, NULL);
        nsr_report_emit_error(j, &e, NULL);
        nsr_json_object_end(j);
        nsr_error je = { 0 };
        (void) nsr_json_finish(j, "error", NULL, NULL, &je);
        return rc;
}
