/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --workspace-root: the skeleton layer.
 *
 * With the project mounted as /, every mount point the root needs (usr,
 * etc, proc, dev, tmp, run, the bin -> usr/bin symlinks...) would be made
 * in the overlay's upper dir and come back as changes to the project. They
 * are made instead, before the launch, in a skeleton dir that joins the
 * overlay as a lower layer: the sandbox sees them, the capture never does. */
#pragma once

#include "base/error.h"
#include "cli/plan.h"

/* Makes in skel_fd (an empty dir of the run) the mount point of every op
 * of plan whose path, below /, starts with a name the project does not
 * have (project_fd). Best effort per entry: a mount point it cannot make
 * is made by the mount code at run time, in the upper dir. */
int nsr_workspace_skeleton(const nsr_plan *plan, int project_fd, int skel_fd, nsr_error *err);
