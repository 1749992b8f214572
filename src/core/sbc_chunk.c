/* SPDX-License-Identifier: MIT */
/* The bounded piecewise range walk (see sbc_chunk.h). */
#include <stdlib.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/range_lock.h"
#include "core/sbc.h"
#include "core/sbc_chunk.h"

struct scsitgt__sbc_chunker *scsitgt__sbc_chunker_new(struct scsitgt__cmd *cmd, uint64_t lba,
						      uint64_t nblocks, uint32_t buf_len)
{
	struct scsitgt__sbc_chunker *ch = calloc(1, sizeof(*ch));
	uint32_t bs = cmd->lun->geo.block_size;

	if (ch == NULL)
		return NULL;
	if (buf_len) {
		ch->buf = calloc(1, buf_len);
		if (ch->buf == NULL) {
			free(ch);
			return NULL;
		}
	}
	ch->cmd = cmd;
	ch->buf_len = buf_len;
	ch->start = lba;
	ch->next = lba;
	ch->end = lba + nblocks;
	ch->max_blocks = SCSITGT__SBC_CHUNK_BYTES / bs;
	ch->reason = SCSITGT__SR_OK;
	return ch;
}

static void chunker_free(struct scsitgt__sbc_chunker *ch)
{
	free(ch->buf);
	free(ch);
}

/* The command was given up with a piece in the backend (core/drain.c): the walk goes with it,
 * its buffer once that io is back (cmd.h, struct scsitgt__cmd_ctx_ops). */
static void chunk_ctx_free(struct scsitgt__cmd *cmd)
{
	chunker_free(cmd->ctx.chunker);
	cmd->ctx.chunker = NULL;
}

static const struct scsitgt__cmd_ctx_ops chunk_ctx_ops = {
	.free = chunk_ctx_free,
};

static void chunk_end(struct scsitgt__sbc_chunker *ch)
{
	struct scsitgt__cmd *cmd = ch->cmd;
	enum scsitgt__sense_reason r = ch->reason;
	struct scsitgt__sense_detail detail = ch->detail;

	cmd->ctx.chunker = NULL;
	scsitgt__cmd_ctx_own(cmd, NULL);
	scsitgt__range_plain_end(cmd->lun, &ch->token);
	chunker_free(ch);
	if (r == SCSITGT__SR_RAW) {
		scsitgt__cmd_complete_raw(cmd, cmd->io_raw.key, cmd->io_raw.asc, cmd->io_raw.ascq);
		return;
	}
	scsitgt__cmd_complete_detail(cmd, r, &detail);
}

/* Submit pieces until one is in flight, or end the walk. Loops instead of recursing when
 * the backend completes inside submit(). */
static void chunk_pump(struct scsitgt__sbc_chunker *ch)
{
	if (ch->pumping) {
		ch->again = true;
		return;
	}
	ch->pumping = true;
	do {
		ch->again = false;
		if (ch->io_done) {
			ch->io_done = false;
			if (ch->reason == SCSITGT__SR_OK && ch->check && ch->cur_n)
				ch->reason = ch->check(ch, ch->cur_lba, ch->cur_n);
		}
		if (ch->reason != SCSITGT__SR_OK || scsitgt__cmd_aborted(ch->cmd)) {
			chunk_end(ch);
			return;
		}
		if (ch->next >= ch->end) {
			if (!ch->flush_after &&
			    !(ch->cached_writes &&
			      scsitgt__sbc_cache_written_through(ch->cmd->lun))) {
				chunk_end(ch);
				return;
			}
			/* The last io: the FLUSH; its completion ends the walk (cur_n 0: no
			 * check). */
			ch->flush_after = false;
			ch->cached_writes = false;
			ch->cur_lba = ch->start;
			ch->cur_n = 0;
			if (scsitgt__io_submit(ch->cmd, SCSITGT_IO_FLUSH, ch->start,
					       (uint32_t)(ch->end - ch->start), NULL, 0, 0,
					       scsitgt__sbc_chunk_io_done) < 0) {
				ch->reason = SCSITGT__SR_BUSY;
				ch->again = true;
			}
			continue;
		}
		uint64_t left = ch->end - ch->next;

		ch->cur_lba = ch->next;
		ch->cur_n = left < ch->max_blocks ? (uint32_t)left : ch->max_blocks;
		ch->next += ch->cur_n;
		if (ch->issue(ch, ch->cur_lba, ch->cur_n) < 0) {
			ch->reason = SCSITGT__SR_BUSY;
			ch->again = true;
		}
	} while (ch->again);
	ch->pumping = false;
}

void scsitgt__sbc_chunk_io_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				enum scsitgt__sense_reason reason)
{
	struct scsitgt__sbc_chunker *ch = cmd->ctx.chunker;

	(void)io;
	if (reason != SCSITGT__SR_OK && ch->reason == SCSITGT__SR_OK)
		ch->reason = reason;
	ch->io_done = true;
	chunk_pump(ch);
}

static void chunk_granted(struct scsitgt__cmd *cmd)
{
	chunk_pump(cmd->ctx.chunker);
}

void scsitgt__sbc_chunker_start(struct scsitgt__sbc_chunker *ch)
{
	struct scsitgt__cmd *cmd = ch->cmd;

	cmd->ctx.chunker = ch;
	scsitgt__cmd_ctx_own(cmd, &chunk_ctx_ops);
	if (!scsitgt__range_plain_begin(cmd, ch->next, ch->end - ch->next, &ch->token,
					chunk_granted)) {
		ch->reason = SCSITGT__SR_BUSY;
		chunk_end(ch);
	}
}
