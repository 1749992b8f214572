/* SPDX-License-Identifier: MIT */
/*
 * The per-command contexts (cmd.h, union scsitgt__cmd_ctx) of the SBC families that keep more
 * than a pointer. Apart from sbc.h because cmd.h includes them and sbc.h includes cmd.h.
 * READ and WRITE keep a struct scsitgt__range_token (range_lock.h), VERIFY and WRITE SAME
 * their range walk (sbc_chunk.h).
 */
#ifndef SCSITGT_CORE_SBC_CTX_H
#define SCSITGT_CORE_SBC_CTX_H

#include <stdint.h>

#include "core/range_lock.h"

/* sbc_verify.c WRITE AND VERIFY: written, then read back, under one plain-path hold of the
 * range. */
struct scsitgt__sbc_write_verify_ctx {
	struct scsitgt__range_token range;
	uint8_t *readback; /* the blocks read back after the write, or NULL */
};

/* sbc_atomic.c COMPARE AND WRITE, ORWRITE, WRITE ATOMIC. */
struct scsitgt__sbc_atomic_ctx {
	/* the exclusive entry of the range lock, stored by the grant; NULL before */
	struct scsitgt__range_entry *entry;
	/* the blocks read before the write (COMPARE AND WRITE, ORWRITE), or NULL */
	uint8_t *readback;
};

#endif /* SCSITGT_CORE_SBC_CTX_H */
