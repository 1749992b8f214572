/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake_backend.h"

/* Per-io private bytes (io_ctx_size): the outcome decided at submit time. */
struct fb_io_ctx {
	int status;
	bool sense;
	uint8_t key, asc, ascq;
	bool at, partial;
	uint64_t at_lba;
};

void fake_backend_opts_init(struct fake_backend_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->block_size = 512;
	o->num_blocks = 2048;
	o->store = true;
	o->mode = FAKE_SYNC;
}

static int fb_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct fake_backend *fb = bctx;

	if (geo->block_size == 0)
		geo->block_size = fb->o.block_size;
	if (geo->num_blocks == 0)
		geo->num_blocks = fb->o.num_blocks;
	if (geo->block_size != fb->o.block_size || geo->num_blocks != fb->o.num_blocks)
		return -EINVAL;
	geo->physical_block_exponent = fb->o.phys_exp;
	geo->optimal_transfer_blocks = fb->o.opt_blocks;
	geo->unmap_granularity_blocks = fb->o.unmap_gran;
	geo->flags = fb->o.geo_flags;
	return 0;
}

static void fb_free(struct fake_backend *fb)
{
	if (fb->closed_flag)
		*fb->closed_flag = true;
	pthread_mutex_destroy(&fb->lock);
	free(fb->data);
	free(fb->mapped);
	free(fb->recs);
	free(fb->pending);
	free(fb->threads);
	free(fb);
}

struct fb_close_req {
	struct fake_backend *fb;
	scsitgt_done_cb cb;
	void *cb_arg;
};

static void fb_timer_closed(uv_handle_t *h)
{
	struct fb_close_req *req = h->data;
	struct fake_backend *fb = req->fb;
	scsitgt_done_cb cb = req->cb;
	void *cb_arg = req->cb_arg;

	free(req);
	fb_free(fb);
	if (cb)
		cb(cb_arg, 0);
}

static void fb_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct fake_backend *fb = bctx;
	struct fb_close_req *req;

	if (fb->completing) {
		/* The last io's completion let the LUN close us; the loop that completes
		 * ios still walks this backend, so finish closing once it is done. */
		fb->close_deferred = true;
		fb->close_cb = cb;
		fb->close_cb_arg = cb_arg;
		return;
	}
	for (size_t i = 0; i < fb->nthreads; i++)
		pthread_join(fb->threads[i], NULL);
	fb->nthreads = 0;
	if (!fb->timer_used) {
		fb_free(fb);
		if (cb)
			cb(cb_arg, 0);
		return;
	}
	req = malloc(sizeof(*req));
	if (req == NULL)
		abort();
	req->fb = fb;
	req->cb = cb;
	req->cb_arg = cb_arg;
	fb->timer.data = req;
	uv_close((uv_handle_t *)&fb->timer, fb_timer_closed);
}

static bool fb_supports(void *bctx, enum scsitgt_io_type type)
{
	struct fake_backend *fb = bctx;

	return type <= SCSITGT_IO_WRITE || (fb->o.supports & (1u << type));
}

/* A SCSITGT_IO_GET_LBA_STATUS answer from the mapped bytes: at most o.lba_extent_max extents
 * (0: as many as the array holds), each at most o.lba_extent_blocks long (0: unbounded). */
static void fb_lba_extents(struct fake_backend *fb, struct scsitgt_io *io)
{
	size_t count, i = 0;
	struct scsitgt_lba_extent *ext = scsitgt_io_get_lba_extents(io, &count);
	uint64_t lba = scsitgt_io_get_lba(io);
	uint64_t end = lba + scsitgt_io_get_num_blocks(io);

	if (fb->o.lba_extent_max && fb->o.lba_extent_max < count)
		count = fb->o.lba_extent_max;
	while (fb->mapped && lba < end && i < count) {
		uint64_t n = 1;

		while (lba + n < end && fb->mapped[lba + n] == fb->mapped[lba] &&
		       (fb->o.lba_extent_blocks == 0 || n < fb->o.lba_extent_blocks))
			n++;
		ext[i].num_blocks = n;
		ext[i].status = fb->mapped[lba] ? SCSITGT_LBA_MAPPED : SCSITGT_LBA_DEALLOCATED;
		i++;
		lba += n;
	}
}

/* Move the data of a READ or WRITE between the iovecs and the store. */
static void fb_transfer(struct fake_backend *fb, struct scsitgt_io *io)
{
	enum scsitgt_io_type type = scsitgt_io_get_type(io);
	uint64_t off = scsitgt_io_get_lba(io) * fb->o.block_size;
	const struct iovec *iov;
	int iovcnt;

	iov = scsitgt_io_get_iov(io, &iovcnt);
	pthread_mutex_lock(&fb->lock);
	if (type == SCSITGT_IO_GET_LBA_STATUS) {
		fb_lba_extents(fb, io);
		pthread_mutex_unlock(&fb->lock);
		return;
	}
	if (type == SCSITGT_IO_WRITE_SAME) {
		for (uint32_t b = 0; fb->data && b < scsitgt_io_get_num_blocks(io); b++)
			memcpy(fb->data + off + (size_t)b * fb->o.block_size, iov[0].iov_base,
			       fb->o.block_size);
		iovcnt = 0; /* one block for the whole range, not data at off */
	}
	for (int i = 0; i < iovcnt; i++) {
		if (type == SCSITGT_IO_READ) {
			if (fb->data)
				memcpy(iov[i].iov_base, fb->data + off, iov[i].iov_len);
			else
				memset(iov[i].iov_base, 0, iov[i].iov_len);
		} else if (type == SCSITGT_IO_WRITE && fb->data) {
			memcpy(fb->data + off, iov[i].iov_base, iov[i].iov_len);
		}
		off += iov[i].iov_len;
	}
	if ((type == SCSITGT_IO_WRITE_ZEROES || (type == SCSITGT_IO_UNMAP && fb->mapped)) &&
	    fb->data)
		memset(fb->data + off, 0, (size_t)scsitgt_io_get_num_blocks(io) * fb->o.block_size);
	if (fb->mapped && (type == SCSITGT_IO_WRITE || type == SCSITGT_IO_WRITE_ZEROES ||
			   type == SCSITGT_IO_UNMAP || type == SCSITGT_IO_WRITE_SAME))
		memset(fb->mapped + scsitgt_io_get_lba(io), type != SCSITGT_IO_UNMAP,
		       scsitgt_io_get_num_blocks(io));
	pthread_mutex_unlock(&fb->lock);
}

static int fb_get_lba_status(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out)
{
	struct fake_backend *fb = bctx;
	uint64_t n = 1;

	if (lba >= fb->o.num_blocks)
		return -EINVAL;
	while (lba + n < fb->o.num_blocks && fb->mapped[lba + n] == fb->mapped[lba])
		n++;
	*num_blocks_out = n;
	*mapped_out = fb->mapped[lba];
	return 0;
}

/* Finish an io on the loop thread as decided at submit. */
/* A WRITE failing at a block writes the blocks before it (scsitgt_io_complete_partial()). */
static void fb_write_prefix(struct fake_backend *fb, struct scsitgt_io *io, uint64_t nblocks)
{
	size_t left = (size_t)nblocks * fb->o.block_size, off = 0;
	const struct iovec *iov;
	int iovcnt;

	if (scsitgt_io_get_type(io) != SCSITGT_IO_WRITE || fb->data == NULL)
		return;
	iov = scsitgt_io_get_iov(io, &iovcnt);
	pthread_mutex_lock(&fb->lock);
	for (int i = 0; i < iovcnt && left; i++) {
		size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;

		memcpy(fb->data + scsitgt_io_get_lba(io) * fb->o.block_size + off, iov[i].iov_base,
		       n);
		off += n;
		left -= n;
	}
	pthread_mutex_unlock(&fb->lock);
}

static void fb_finish(struct fake_backend *fb, struct scsitgt_io *io)
{
	struct fb_io_ctx *c = scsitgt_io_get_ctx(io);

	if (c->sense) {
		scsitgt_io_complete_sense(io, c->key, c->asc, c->ascq);
		return;
	}
	if (c->status == 0)
		fb_transfer(fb, io);
	if (c->partial) {
		fb_write_prefix(fb, io, c->at_lba - scsitgt_io_get_lba(io));
		scsitgt_io_complete_partial(io, c->status, c->at_lba);
		return;
	}
	if (c->at) {
		scsitgt_io_complete_at(io, c->status, c->at_lba);
		return;
	}
	scsitgt_io_complete(io, c->status);
}

static void fb_timer_cb(uv_timer_t *t)
{
	struct fake_backend *fb = t->data;

	fake_backend_complete_pending(fb);
}

static void fb_hold(struct fake_backend *fb, struct scsitgt_io *io)
{
	if (fb->npending == fb->pending_cap) {
		size_t cap = fb->pending_cap ? fb->pending_cap * 2 : 8;

		fb->pending = realloc(fb->pending, cap * sizeof(*fb->pending));
		if (fb->pending == NULL)
			abort();
		fb->pending_cap = cap;
	}
	fb->pending[fb->npending++] = io;
}

struct fb_thread_arg {
	struct fake_backend *fb;
	struct scsitgt_io *io;
};

static void *fb_thread_main(void *arg)
{
	struct fb_thread_arg *ta = arg;
	struct fb_io_ctx *c = scsitgt_io_get_ctx(ta->io);

	/* The io is lent to this thread until the threadsafe completion. */
	if (c->status == 0)
		fb_transfer(ta->fb, ta->io);
	scsitgt_io_complete_threadsafe(ta->io, c->status);
	free(ta);
	return NULL;
}

static void fb_submit(void *bctx, struct scsitgt_io *io)
{
	struct fake_backend *fb = bctx;
	struct fb_io_ctx *c = scsitgt_io_get_ctx(io);
	struct fake_io_rec *r;
	const struct iovec *iov;
	int iovcnt;

	if (fb->nrecs == fb->recs_cap) {
		size_t cap = fb->recs_cap ? fb->recs_cap * 2 : 16;

		fb->recs = realloc(fb->recs, cap * sizeof(*fb->recs));
		if (fb->recs == NULL)
			abort();
		fb->recs_cap = cap;
	}
	r = &fb->recs[fb->nrecs++];
	r->type = scsitgt_io_get_type(io);
	r->lba = scsitgt_io_get_lba(io);
	r->num_blocks = scsitgt_io_get_num_blocks(io);
	r->flags = scsitgt_io_get_flags(io);
	iov = scsitgt_io_get_iov(io, &iovcnt);
	r->iovcnt = iovcnt;
	r->bytes = 0;
	for (int i = 0; i < iovcnt; i++)
		r->bytes += iov[i].iov_len;

	memset(c, 0, sizeof(*c));
	if (fb->fail_count && (fb->fail_types == 0 || (fb->fail_types & (1u << r->type)))) {
		fb->fail_count--;
		if (fb->fail_sense) {
			c->sense = true;
			c->key = fb->fail_key;
			c->asc = fb->fail_asc;
			c->ascq = fb->fail_ascq;
		} else {
			c->status = fb->fail_errno;
			c->at = fb->fail_at;
			c->partial = fb->fail_at && fb->fail_partial;
			c->at_lba = fb->fail_at_lba;
		}
	}

	switch (fb->o.mode) {
	case FAKE_SYNC:
		fb_finish(fb, io);
		break;
	case FAKE_ASYNC:
		fb_hold(fb, io);
		uv_timer_start(&fb->timer, fb_timer_cb, 0, 0);
		break;
	case FAKE_MANUAL:
		fb_hold(fb, io);
		break;
	case FAKE_THREAD: {
		struct fb_thread_arg *ta = malloc(sizeof(*ta));

		if (ta == NULL || c->sense)
			abort(); /* exact sense has no thread-safe completion call */
		ta->fb = fb;
		ta->io = io;
		if (fb->nthreads == fb->threads_cap) {
			size_t cap = fb->threads_cap ? fb->threads_cap * 2 : 8;

			fb->threads = realloc(fb->threads, cap * sizeof(*fb->threads));
			if (fb->threads == NULL)
				abort();
			fb->threads_cap = cap;
		}
		if (pthread_create(&fb->threads[fb->nthreads], NULL, fb_thread_main, ta) != 0)
			abort();
		fb->nthreads++;
		break;
	}
	}
}

int fake_backend_create(struct fake_backend **out, const struct fake_backend_opts *o)
{
	struct fake_backend *fb = calloc(1, sizeof(*fb));

	if (fb == NULL)
		return -ENOMEM;
	fb->o = *o;
	if (o->store) {
		fb->data = calloc(o->num_blocks, o->block_size);
		if (fb->data == NULL) {
			free(fb);
			return -ENOMEM;
		}
	}
	if (o->lba_status) {
		fb->mapped = calloc(1, o->num_blocks);
		if (fb->mapped == NULL) {
			free(fb->data);
			free(fb);
			return -ENOMEM;
		}
	}
	pthread_mutex_init(&fb->lock, NULL);
	if (o->mode == FAKE_ASYNC || o->loop) {
		if (o->loop == NULL || uv_timer_init(o->loop, &fb->timer) != 0) {
			fb_free(fb);
			return -EINVAL;
		}
		fb->timer.data = fb;
		fb->timer_used = true;
	}
	fb->ops.size = sizeof(fb->ops);
	fb->ops.name = "fake";
	fb->ops.io_ctx_size = sizeof(struct fb_io_ctx);
	fb->ops.open = fb_open;
	fb->ops.close = fb_close;
	fb->ops.submit = fb_submit;
	fb->ops.supports = o->no_supports_cb ? NULL : fb_supports;
	fb->ops.get_lba_status = o->lba_status ? fb_get_lba_status : NULL;
	/* It stores each write under its lock, all or none, as the RAM backend does. */
	fb->ops.flags = o->no_atomic_write ? 0 : SCSITGT_BACKEND_ATOMIC_WRITE;
	*out = fb;
	return 0;
}

int fake_backend_lun_create(struct scsitgt_lun **lun_out, struct fake_backend **fb_out,
			    struct scsitgt_target *tgt, uint64_t id, uint32_t lun_flags,
			    const struct fake_backend_opts *o)
{
	struct scsitgt_lun_opts lo;

	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.flags = lun_flags;
	return fake_backend_lun_create_opts(lun_out, fb_out, tgt, &lo, o);
}

int fake_backend_lun_create_opts(struct scsitgt_lun **lun_out, struct fake_backend **fb_out,
				 struct scsitgt_target *tgt, const struct scsitgt_lun_opts *opts,
				 const struct fake_backend_opts *o)
{
	struct scsitgt_lun_opts lo = *opts;
	struct fake_backend *fb;
	struct scsitgt_lun *lun;
	int rc;

	rc = fake_backend_create(&fb, o);
	if (rc < 0)
		return rc;
	lo.backend = &fb->ops;
	lo.backend_ctx = fb;
	rc = scsitgt_lun_create(&lun, tgt, &lo);
	if (rc < 0) {
		fb_close(fb, NULL, NULL);
		return rc;
	}
	if (lun_out)
		*lun_out = lun;
	if (fb_out)
		*fb_out = fb;
	return 0;
}

void fake_backend_fail_next(struct fake_backend *fb, int err, unsigned int count)
{
	fb->fail_sense = false;
	fb->fail_at = false;
	fb->fail_types = 0;
	fb->fail_errno = err;
	fb->fail_count = count;
}

void fake_backend_fail_type_at(struct fake_backend *fb, enum scsitgt_io_type type, int err,
			       uint64_t lba, bool partial)
{
	fake_backend_fail_type(fb, type, err, 1);
	fb->fail_at = true;
	fb->fail_partial = partial;
	fb->fail_at_lba = lba;
}

void fake_backend_fail_type(struct fake_backend *fb, enum scsitgt_io_type type, int err,
			    unsigned int count)
{
	fake_backend_fail_next(fb, err, count);
	fb->fail_types = 1u << type;
}

void fake_backend_fail_next_sense(struct fake_backend *fb, uint8_t key, uint8_t asc, uint8_t ascq)
{
	fb->fail_sense = true;
	fb->fail_types = 0;
	fb->fail_key = key;
	fb->fail_asc = asc;
	fb->fail_ascq = ascq;
	fb->fail_count = 1;
}

void fake_backend_complete_pending(struct fake_backend *fb)
{
	bool outer = !fb->completing;

	/* Completing may submit more ios (and grow the array): take them one at a time. */
	fb->completing = true;
	while (fb->npending) {
		struct scsitgt_io *io = fb->pending[0];

		fb->npending--;
		memmove(&fb->pending[0], &fb->pending[1], fb->npending * sizeof(*fb->pending));
		fb_finish(fb, io);
	}
	if (!outer)
		return;
	fb->completing = false;
	if (fb->close_deferred)
		fb_close(fb, fb->close_cb, fb->close_cb_arg);
}

void fake_backend_complete_first(struct fake_backend *fb)
{
	struct scsitgt_io *io;

	if (fb->npending == 0)
		return;
	io = fb->pending[0];
	fb->npending--;
	memmove(&fb->pending[0], &fb->pending[1], fb->npending * sizeof(*fb->pending));
	fb_finish(fb, io);
}

void fake_backend_destroy(struct fake_backend *fb)
{
	fb_close(fb, NULL, NULL);
}

const struct fake_io_rec *fake_backend_last(const struct fake_backend *fb)
{
	return fb->nrecs ? &fb->recs[fb->nrecs - 1] : NULL;
}
