/* SPDX-License-Identifier: MIT */
/* Backend ios: submission, the public accessors and the completion calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/cmd.h"
#include "core/fabric.h"

/* Home: submit an io forwarded by a command of another shard (scsitgt_io.fwd). */
static void io_fwd_submit(struct scsitgt__msg *msg)
{
	struct scsitgt_io *io = scsitgt__container_of(msg, struct scsitgt_io, tsq_msg);

	io->lun->ops.submit(io->lun->bctx, io);
}

int scsitgt__io_submit(struct scsitgt__cmd *cmd, enum scsitgt_io_type type, uint64_t lba,
		       uint32_t num_blocks, const struct iovec *iov, int iovcnt, uint32_t flags,
		       scsitgt__io_done_fn done)
{
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt_io *io;
	size_t cap;
	/* A backend without SCSITGT_BACKEND_MULTI_LOOP is called on home only (backend.h). */
	bool fwd = cmd->shard->index != 0 && !(lun->ops.flags & SCSITGT_BACKEND_MULTI_LOOP);

	/* Zeroed, the backend's context included, as the backend API promises. */
	io = scsitgt__cache_zalloc(&cmd->shard->cache, sizeof(*io) + lun->ops.io_ctx_size, &cap);
	if (io == NULL)
		return -ENOMEM;
	io->alloc_size = (uint32_t)cap;
	io->cmd = cmd;
	io->shard = cmd->shard;
	io->fwd = fwd;
	io->lun = lun;
	io->done = done;
	io->type = type;
	/* lent memory would be released on the command's loop, not the backend's. */
	io->flags = fwd ? flags & ~SCSITGT_IO_FLAG_MAY_LEND : flags;
	io->lba = lba;
	io->num_blocks = num_blocks;
	io->iovcnt = iov ? iovcnt : 0;
	if (iov && iovcnt <= 2) {
		memcpy(io->iov_inline, iov, (size_t)iovcnt * sizeof(*iov));
		io->iov = io->iov_inline;
	} else {
		io->iov = iov;
	}
	cmd->ios_inflight++;
	/* the LUN knows what its backend holds, so a timed-out teardown can give it up. */
	scsitgt__list_add_tail(&scsitgt__lun_part(lun, cmd->shard)->ios, &io->lun_node);
	if (fwd) {
		io->tsq_msg.fn = io_fwd_submit;
		scsitgt__engine_post(cmd->shard->engine, &io->tsq_msg);
		return 0;
	}
	lun->ops.submit(lun->bctx, io);
	return 0;
}

/* Map a backend's errno to a sense reason (documented at scsitgt_io_complete()). */
static enum scsitgt__sense_reason io_errno_reason(const struct scsitgt_io *io, int status)
{
	switch (status) {
	case 0:
		return SCSITGT__SR_OK;
	case -EIO:
		return io->type == SCSITGT_IO_READ || io->type == SCSITGT_IO_GET_LBA_STATUS ?
			       SCSITGT__SR_READ_ERROR :
			       SCSITGT__SR_WRITE_ERROR;
	case -ENOSPC:
		return SCSITGT__SR_SPACE_ALLOC_FAILED;
	case -EROFS:
		return SCSITGT__SR_WRITE_PROTECTED;
	case -ENOMEM:
	case -EAGAIN:
		return SCSITGT__SR_BUSY;
	case -ENOTSUP:
		return SCSITGT__SR_INVALID_OPCODE;
	default:
		return SCSITGT__SR_INTERNAL_FAILURE;
	}
}

static void io_lend_release(struct scsitgt_io *io)
{
	if (io->lent_data && io->lent_release)
		io->lent_release(io->lent_arg);
	io->lent_data = NULL;
}

SCSITGT_EXPORT int scsitgt_io_lend_data(struct scsitgt_io *io, const void *data, size_t len,
					void (*release)(void *arg), void *arg)
{
	if (io == NULL || data == NULL || io->type != SCSITGT_IO_READ ||
	    !(io->flags & SCSITGT_IO_FLAG_MAY_LEND) || io->lent_data ||
	    len != (uint64_t)io->num_blocks * io->lun->geo.block_size)
		return -EINVAL;
	io->lent_data = data;
	io->lent_release = release;
	io->lent_arg = arg;
	return 0;
}

static void io_finish_here(struct scsitgt_io *io, enum scsitgt__sense_reason reason)
{
	struct scsitgt__cmd *cmd;
	struct scsitgt__cache *cache;

	/* an io an engine shutdown gave up on may come back on any thread, after the
	 * engine is gone: it only frees its own memory (core/drain.c). */
	if (atomic_load(&io->tstate) == SCSITGT__IO_ORPHAN ||
	    io->cmd->state == SCSITGT__CMD_ABANDONED) {
		io_lend_release(io);
		scsitgt__drain_io_orphan_done(io);
		return;
	}
	cmd = io->cmd;
	/* lent Data-In goes with a good READ to its command (only a plain READ, one io, is
	 * allowed to lend); anything else gives it back now. */
	if (io->lent_data) {
		if (reason == SCSITGT__SR_OK && cmd->lent_data == NULL &&
		    !scsitgt__cmd_aborted(cmd)) {
			cmd->lent_data = io->lent_data;
			cmd->lent_release = io->lent_release;
			cmd->lent_arg = io->lent_arg;
			io->lent_data = NULL;
		} else {
			io_lend_release(io);
		}
	}
	/* done may free the command (an aborted one); keep what the io's release needs. */
	cache = &io->shard->cache;
	scsitgt__list_remove(&io->lun_node);
	cmd->ios_inflight--;
	if (reason == SCSITGT__SR_RAW)
		cmd->io_raw = io->raw;
	/* SBC-4 §4.18.1: a medium error reports the LBA of the first block in error. The first
	 * failing io of the command supplies it. */
	if (reason != SCSITGT__SR_OK && io->error_lba_valid && cmd->io_reason == SCSITGT__SR_OK &&
	    !cmd->detail.info_valid) {
		cmd->detail.info_valid = true;
		cmd->detail.info = io->error_lba;
	}
	io->done(cmd, io, reason);
	scsitgt__cache_free(cache, io, io->alloc_size);
}

/* The command's shard: a forwarded io's completion came back from home. */
static void io_fwd_back(struct scsitgt__msg *msg)
{
	struct scsitgt_io *io = scsitgt__container_of(msg, struct scsitgt_io, tsq_msg);

	io_finish_here(io, io->fwd_reason);
}

static void io_finish(struct scsitgt_io *io, enum scsitgt__sense_reason reason)
{
	/* A forwarded io completes on home: its command finishes on its own shard. */
	if (io->fwd && atomic_load(&io->tstate) != SCSITGT__IO_ORPHAN) {
		io->fwd_reason = reason;
		io->tsq_msg.fn = io_fwd_back;
		scsitgt__worker_post(io->shard->worker, &io->tsq_msg);
		return;
	}
	io_finish_here(io, reason);
}

void scsitgt__io_complete_here(struct scsitgt_io *io)
{
	io_finish_here(io, io_errno_reason(io, io->status));
}

void scsitgt__io_done_complete_cmd(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				   enum scsitgt__sense_reason reason)
{
	if (reason != SCSITGT__SR_OK && cmd->io_reason == SCSITGT__SR_OK)
		cmd->io_reason = reason;
	if (cmd->ios_inflight || cmd->holds)
		return;
	if (cmd->io_reason == SCSITGT__SR_RAW) {
		scsitgt__cmd_complete_raw(cmd, cmd->io_raw.key, cmd->io_raw.asc, cmd->io_raw.ascq);
		return;
	}
	if (cmd->io_reason == SCSITGT__SR_OK && cmd->dir == SCSITGT__DIR_IN)
		cmd->data_len = cmd->xfer_len;
	scsitgt__cmd_complete(cmd, cmd->io_reason);
}

SCSITGT_EXPORT void scsitgt_io_complete(struct scsitgt_io *io, int status)
{
	io_finish(io, io_errno_reason(io, status));
}

SCSITGT_EXPORT void scsitgt_io_complete_at(struct scsitgt_io *io, int status, uint64_t lba)
{
	if (status < 0) {
		io->error_lba_valid = true;
		io->error_lba = lba;
	}
	scsitgt_io_complete(io, status);
}

SCSITGT_EXPORT void scsitgt_io_complete_partial(struct scsitgt_io *io, int status, uint64_t lba)
{
	if (status < 0 && lba >= io->lba && lba - io->lba < io->num_blocks)
		io->partial = true;
	scsitgt_io_complete_at(io, status, lba);
}

SCSITGT_EXPORT void scsitgt_io_complete_sense(struct scsitgt_io *io, uint8_t key, uint8_t asc,
					      uint8_t ascq)
{
	if (key == 0) {
		io_finish(io, SCSITGT__SR_OK);
		return;
	}
	io->raw.status = 0x02;
	io->raw.key = key & 0x0f;
	io->raw.asc = asc;
	io->raw.ascq = ascq;
	io_finish(io, SCSITGT__SR_RAW);
}

SCSITGT_EXPORT void scsitgt_io_complete_threadsafe(struct scsitgt_io *io, int status)
{
	int lent = SCSITGT__IO_LENT;

	/* an orphan (its engine gave up on it, and may be gone) is finished right here; its
	 * lent data goes back first, before its command and LUN shell can go (backend.h). */
	if (!atomic_compare_exchange_strong(&io->tstate, &lent, SCSITGT__IO_QUEUED)) {
		io_lend_release(io);
		scsitgt__drain_io_orphan_done(io);
		return;
	}
	/* A QUEUED io keeps its engine alive until drained; its shard's loop finishes it. */
	io->status = status;
	scsitgt__shard_post_io(io->shard, io);
}

void scsitgt__io_abort_cmd(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt__list *pos, *tmp;

	if (lun == NULL || lun->ops.abort == NULL)
		return;
	/* abort() never completes the io from inside (backend.h); the safe walk still copes
	 * with one that does. */
	scsitgt__list_foreach_safe(pos, tmp, &scsitgt__lun_part(lun, cmd->shard)->ios)
	{
		struct scsitgt_io *io = scsitgt__container_of(pos, struct scsitgt_io, lun_node);

		/* One the backend already completed from its thread has nothing to cancel; a
		 * forwarded one is on home, not offered (backend.h). */
		if (io->cmd == cmd && !io->fwd && atomic_load(&io->tstate) == SCSITGT__IO_LENT)
			lun->ops.abort(lun->bctx, io);
	}
}

void scsitgt__io_drain_threadsafe(struct scsitgt_engine *engine)
{
	struct scsitgt__mpsc_node *n = scsitgt__mpsc_take_all(&scsitgt__shard_home(engine)->tsq);

	while (n) {
		struct scsitgt_io *io = scsitgt__container_of(n, struct scsitgt_io, tsq_msg.node);

		n = n->next;
		scsitgt_io_complete(io, io->status);
	}
}

SCSITGT_EXPORT enum scsitgt_io_type scsitgt_io_get_type(const struct scsitgt_io *io)
{
	return io->type;
}

SCSITGT_EXPORT uint64_t scsitgt_io_get_lba(const struct scsitgt_io *io)
{
	return io->lba;
}

SCSITGT_EXPORT uint32_t scsitgt_io_get_num_blocks(const struct scsitgt_io *io)
{
	return io->num_blocks;
}

SCSITGT_EXPORT uint32_t scsitgt_io_get_block_size(const struct scsitgt_io *io)
{
	return io->lun->geo.block_size;
}

SCSITGT_EXPORT const struct iovec *scsitgt_io_get_iov(const struct scsitgt_io *io, int *iovcnt)
{
	/* GET LBA STATUS carries its extent array in the iovec: not data (below). */
	bool data = io->type != SCSITGT_IO_GET_LBA_STATUS;

	if (iovcnt)
		*iovcnt = data ? io->iovcnt : 0;
	return data ? io->iov : NULL;
}

SCSITGT_EXPORT struct scsitgt_lba_extent *scsitgt_io_get_lba_extents(struct scsitgt_io *io,
								     size_t *count_out)
{
	bool ok = io->type == SCSITGT_IO_GET_LBA_STATUS && io->iovcnt == 1;

	if (count_out)
		*count_out = ok ? io->iov[0].iov_len / sizeof(struct scsitgt_lba_extent) : 0;
	return ok ? io->iov[0].iov_base : NULL;
}

SCSITGT_EXPORT uint32_t scsitgt_io_get_flags(const struct scsitgt_io *io)
{
	return io->flags;
}

SCSITGT_EXPORT void *scsitgt_io_get_ctx(struct scsitgt_io *io)
{
	return io->lun->ops.io_ctx_size ? io->ctx : NULL;
}

SCSITGT_EXPORT uv_loop_t *scsitgt_io_get_loop(const struct scsitgt_io *io)
{
	return io->fwd ? io->shard->engine->loop : io->shard->loop;
}

SCSITGT_EXPORT struct scsitgt_lun *scsitgt_io_get_lun(const struct scsitgt_io *io)
{
	return io->lun;
}
