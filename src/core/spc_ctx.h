/* SPDX-License-Identifier: MIT */
/*
 * The per-command contexts (cmd.h, union scsitgt__cmd_ctx) of the SPC families that keep more
 * than a value. Apart from spc.h because cmd.h includes them and spc.h includes cmd.h.
 */
#ifndef SCSITGT_CORE_SPC_CTX_H
#define SCSITGT_CORE_SPC_CTX_H

#include <stdint.h>

/* spc_diag.c SEND DIAGNOSTIC's default self-test: block 0, then the last block, read into one
 * block buffer. */
struct scsitgt__spc_diag_ctx {
	uint8_t *blk;
	uint64_t lba; /* the block being read */
};

#endif /* SCSITGT_CORE_SPC_CTX_H */
