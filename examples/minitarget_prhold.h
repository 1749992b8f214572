/* SPDX-License-Identifier: MIT */
/* minitarget's prhold LUN flag (tests only): see minitarget_prhold.c. */
#ifndef MINITARGET_PRHOLD_H
#define MINITARGET_PRHOLD_H

#include <uv.h>

struct scsitgt_lun;

/* Put @lun's reservations in a store whose lease has run out for good, on @loop (home):
 * its read and write commands are held until something ends them. 0 or a negative errno. */
int minitarget_prhold_setup(uv_loop_t *loop, struct scsitgt_lun *lun);

#endif
