/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "probe_backend.h"

static int probe_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct probe *p = bctx;

	p->open_calls++;
	if (p->open_rc < 0) {
		return p->open_rc;
	}
	if (p->open_block_size) {
		geo->block_size = p->open_block_size;
	}
	if (p->open_num_blocks) {
		geo->num_blocks = p->open_num_blocks;
	}
	return 0;
}

static void probe_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct probe *p = bctx;

	p->close_calls++;
	if (cb) {
		cb(cb_arg, 0);
	}
}

static bool probe_supports(void *bctx, enum scsitgt_io_type type)
{
	struct probe *p = bctx;

	p->supports_calls++;
	return type != SCSITGT_IO_UNMAP || p->supports_unmap;
}

struct probe_thread_arg {
	struct scsitgt_io *io;
	int status;
};

static void probe_thread(void *arg)
{
	struct probe_thread_arg a = *(struct probe_thread_arg *)arg;

	free(arg);
	scsitgt_io_complete_threadsafe(a.io, a.status);
}

static void probe_submit(void *bctx, struct scsitgt_io *io)
{
	struct probe *p = bctx;
	struct probe_thread_arg *a;
	const struct iovec *iov;

	p->submit_calls++;
	p->type = scsitgt_io_get_type(io);
	p->lba = scsitgt_io_get_lba(io);
	p->num_blocks = scsitgt_io_get_num_blocks(io);
	p->block_size = scsitgt_io_get_block_size(io);
	iov = scsitgt_io_get_iov(io, &p->iovcnt);
	memset(p->iov, 0, sizeof(p->iov));
	for (int i = 0; i < p->iovcnt && i < 4; i++) {
		p->iov[i] = iov[i];
	}
	p->flags = scsitgt_io_get_flags(io);
	p->ext = scsitgt_io_get_lba_extents(io, &p->next);
	p->lun = scsitgt_io_get_lun(io);
	p->loop = scsitgt_io_get_loop(io);
	p->ctx = scsitgt_io_get_ctx(io);
	p->ctx_zeroed = true;
	if (p->ctx) {
		for (int i = 0; i < PROBE_CTX_SIZE; i++) {
			if (((uint8_t *)p->ctx)[i]) {
				p->ctx_zeroed = false;
			}
		}
		memset(p->ctx, 0xee, PROBE_CTX_SIZE);
	}
	switch (p->mode) {
	case PROBE_SYNC:
		scsitgt_io_complete(io, p->status);
		break;
	case PROBE_SENSE:
		scsitgt_io_complete_sense(io, p->sense_key, p->sense_asc, p->sense_ascq);
		break;
	case PROBE_THREAD:
		a = malloc(sizeof(*a));
		if (a == NULL || p->nthreads == PROBE_MAX_HELD) {
			abort();
		}
		a->io = io;
		a->status = p->status;
		if (uv_thread_create(&p->threads[p->nthreads++], probe_thread, a) != 0) {
			abort();
		}
		break;
	case PROBE_HOLD:
		if (p->nheld == PROBE_MAX_HELD) {
			abort();
		}
		p->held[p->nheld++] = io;
		break;
	}
}

struct scsitgt_backend_ops probe_ops(bool with_ctx)
{
	struct scsitgt_backend_ops ops = {
		.size = sizeof(ops),
		.name = "probe",
		.io_ctx_size = with_ctx ? PROBE_CTX_SIZE : 0,
		.open = probe_open,
		.close = probe_close,
		.submit = probe_submit,
		.supports = probe_supports,
	};

	return ops;
}

void probe_join(struct probe *p)
{
	for (unsigned int i = 0; i < p->nthreads; i++) {
		uv_thread_join(&p->threads[i]);
	}
	p->nthreads = 0;
}
