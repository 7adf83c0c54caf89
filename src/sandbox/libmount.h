/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* nsrun is not linked against libmount: libmount.c defines the libmount
 * functions nsrun uses and loads libmount.so.1 on the first call (see there
 * for why). Callers include <libmount/libmount.h> and call libmount as
 * usual; this tells whether the library could be loaded, and if not, why. */
bool nsr_mountlib_available(const char **ret_error);
/* What fixes that, once nsr_mountlib_available() said false. */
const char *nsr_mountlib_fix(void);
