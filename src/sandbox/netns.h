/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network namespace setup. */
#pragma once

#include "base/error.h"

/* Brings up "lo" with 127.0.0.1/8 in the current (new) network namespace. */
int nsr_netns_loopback_up(nsr_error *err);
