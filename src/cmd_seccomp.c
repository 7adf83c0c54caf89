/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placeholder until the policy compiler lands. */
#include "config.h"

#include <stdio.h>

#include "cmd.h"

int nsr_cmd_seccomp(int argc, char **argv) {
        (void) argc;
        (void) argv;
        fputs("nsrun: seccomp: not implemented yet\n", stderr);
        return 1;
}
