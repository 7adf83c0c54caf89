/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network namespace setup. */
#pragma once

#include "base/error.h"

/* Brings up "lo" with 127.0.0.1/8 in the current (new) network namespace. */
int nsr_netns_loopback_up(nsr_error *err);
/* Adds ipv4 (in 127/8) to "lo" as a second address. glibc's
 * getaddrinfo(AI_ADDRCONFIG) counts every IPv4 address but 127.0.0.1 as
 * "IPv4 configured", so with it such lookups (getent ahosts, and every
 * program that asks so) are answered in a namespace that has loopback
 * only, instead of failing before they ask. */
int nsr_netns_loopback_add(const char *ipv4, nsr_error *err);
