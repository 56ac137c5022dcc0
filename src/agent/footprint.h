/* footprint.h: keeps the agent's resident code small for a life of years.
 *
 * Promise: gp_footprint_trim() tells the kernel that the process reads the file-backed,
 * read-only mappings of its binary and libraries at random (a page fault maps that page,
 * not the 64 KiB around it the kernel's fault-around would map: footprint.c says how, and
 * where the kernel cannot) and drops the
 * pages of those it can drop without losing anything (code, and read-only data no
 * relocation wrote: mappings with no private copy), so what stays resident is what the
 * steady loop touches again. Nothing else changes: a dropped page comes back from the
 * file on its next use (a minor fault). Returns the KiB of resident pages it dropped;
 * 0 where it cannot tell (no /proc/self/smaps, not Linux). */
#ifndef GP_AGENT_FOOTPRINT_H
#define GP_AGENT_FOOTPRINT_H

#include <stddef.h>

size_t gp_footprint_trim(void);
/* Whether a dropped page comes back alone (1) or with the 64 KiB around it (0: the kernel
 * lacks userfaultfd's WP_ASYNC mode, Linux < 6.7, or userfaultfd is off). Opens the
 * registration at the first call (footprint.c). */
int gp_footprint_lean_faults(void);

#endif
