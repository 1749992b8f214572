/* SPDX-License-Identifier: MIT */
/*
 * The RBD backend's request path (docs/rbd.md; rbd.c has the image, its worker thread and
 * its jobs).
 *
 * I/O. READ and WRITE become rbd_aio_readv() / rbd_aio_writev() on the io's own iovecs (librbd
 * copies the data in between); READs of 64 KiB and more whose data may be lent go through
 * librbd's C++ API instead and send librbd's own buffer (rbd_zc.h, docs/rbd.md "Zero-copy
 * I/O"). The backend is SCSITGT_BACKEND_MULTI_LOOP: ios are submitted on their command's loop
 * (home or an engine worker) and complete there. Each completion's callback, on librbd's
 * thread, only pushes the request on the lock-free queue of the loop that submitted it and
 * writes that loop's eventfd when the queue was empty (rbd_loop.h); the loop's uv_poll_t takes
 * the queue and finishes the requests. That costs one eventfd write per burst of completions,
 * as librbd's own image notification did when every io ran on home (one eventfd per image,
 * rbd_poll_io_events(), which cannot tell loops apart), and no lock or allocation per io.
 * What must be single stays on home: the jobs (rbd.c), the update watch and resize, the hooks
 * of the HA and PR code (rbd_int.h), and the decisions about fencing: an io of another loop
 * that meets an error those care about completes on its loop and tells home.
 *
 * WRITE SAME of a non-zero block is rbd_aio_writesame() over the range. GET LBA STATUS is a
 * job on the worker thread (rbd_diff_iterate2() with whole objects) that fills the io's extent
 * array, then completes the io on the loop.
 *
 * Durability (SBC-4 §4.14, §5.24). librbd's client cache (rbd_cache, on by default) acknowledges
 * writes before the OSDs have them: the geometry then reports a volatile write cache, FLUSH is
 * rbd_aio_flush() and a FUA write is the write followed by rbd_aio_flush() before the io
 * completes. With write_through (rbd_cache=false) every write is on the OSDs when it completes
 * and no cache is reported.
 *
 * Errors are never a silent success: a failed librbd call, a short read or a blocklisted
 * client fail the io with sense data that says what happened (scsitgt__rbd_io_fail()).
 *
 * Like every in-tree backend it uses only the public headers and util/.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/rbd_int.h"
#include "backend/rbd_zc.h"

/* librbd refuses iovec arrays longer than IOV_MAX; longer lists are bounced. */
#define RBD_IOV_MAX IOV_MAX
/* READs of at least this many bytes skip librbd's copy when the image allows it (rbd_zc.h);
 * smaller ones keep the C API, whose copy costs less than the bufferlist around it. */
#define RBD_ZC_MIN_BYTES (64u * 1024)

/* What an in-flight request waits for. */
enum rbd_phase {
	RBD_PHASE_IO,
	/* The flush after a FUA write. */
	RBD_PHASE_FUA_FLUSH,
};

/* Per-io private area (io_ctx_size). */
struct rbd_req {
	struct scsitgt_io *io;
	enum scsitgt_io_type type;
	enum rbd_phase phase;
	uint64_t off;
	size_t len;
	/* A contiguous copy for iovec lists longer than librbd takes. */
	void *bounce;
	/* A zero-copy READ (rbd_zc.h): librbd's bufferlist, until lent or copied out. */
	struct scsitgt__rbd_zc_data *zc_data;
	/* The loop that submitted the io, where it completes; stored (release) after every other
	 * field, before librbd has the request, and loaded (acquire) by the completion callback:
	 * the hand-over TSan sees, since librbd's own synchronisation is invisible to it. */
	_Atomic(struct scsitgt__rbd_loop *) lp;
	/* The result, written by the completion callback (librbd's thread) or the GET LBA STATUS
	 * job's end (home) before posting the request back to its loop. */
	ssize_t ret;
	struct scsitgt__rbd_cq_node cq;
};

/* ---- I/O ---- */

static void rbd_loop_drain(void *arg, struct scsitgt__rbd_loop *lp,
			   struct scsitgt__rbd_cq_node *node);

static int rbd_op_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct scsitgt__rbd_ctx *rc = bctx;
	uint64_t blocks;
	uint32_t bs;
	int r;

	if (rc->opened || rc->closing || rc->image == NULL) {
		return -EBUSY;
	}
	bs = geo->block_size ? geo->block_size : 512;
	if (bs != 512 && bs != 4096) {
		return -EINVAL;
	}
	blocks = rc->size_bytes / bs;
	if (blocks == 0) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: %" PRIu64 " bytes is less than one block", rc->pool,
			     rc->image_name, rc->size_bytes);
		return -EINVAL;
	}
	if (geo->num_blocks != 0 && geo->num_blocks != blocks) {
		/* The LUN follows the image: a different size would go stale on a resize. */
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: holds %" PRIu64 " blocks, %" PRIu64 " asked", rc->pool,
			     rc->image_name, blocks, geo->num_blocks);
		return -EINVAL;
	}
	r = scsitgt__rbd_worker_start(rc);
	if (r < 0) {
		return r;
	}
	/* Home's completion queue now; another loop's at its first submit. */
	r = scsitgt__rbd_loops_start(&rc->loops, rc->loop, rbd_loop_drain, rc, &rc->log);
	if (r < 0) {
		return r;
	}
	geo->block_size = bs;
	geo->num_blocks = blocks;
	geo->flags &= ~(SCSITGT_GEOMETRY_WRITE_CACHE | SCSITGT_GEOMETRY_LBPRZ |
			SCSITGT_GEOMETRY_NON_ROTATIONAL);
	if (rc->cache) {
		geo->flags |= SCSITGT_GEOMETRY_WRITE_CACHE;
	}
	if (rc->obj_size >= bs && rc->obj_size / bs <= UINT32_MAX) {
		geo->optimal_transfer_blocks = (uint32_t)(rc->obj_size / bs);
	}
	/* Discards below rbd_discard_granularity_bytes change nothing: say so in VPD B0. No
	 * LBPRZ: zeros come from WRITE ZEROES (rbd_aio_write_zeroes), never from a discard. */
	if (geo->size >= offsetof(struct scsitgt_lun_geometry, unmap_granularity_blocks) +
				 sizeof(geo->unmap_granularity_blocks) &&
	    rc->discard_granularity > bs && rc->discard_granularity / bs <= UINT32_MAX) {
		geo->unmap_granularity_blocks = (uint32_t)(rc->discard_granularity / bs);
	}
	rc->block_size = bs;
	rc->num_blocks = blocks;
	rc->opened = true;
	/* A resize seen between the open job and now is picked up on the next wake-up. */
	if (atomic_load(&rc->update_pending)) {
		uv_async_send(&rc->async);
	}
	return 0;
}

/* A zero-copy READ's data: lend it to the transport, or copy it into the io's iovecs. Returns
 * @ret, or -EIO when the copy came out short. */
static ssize_t rbd_zc_read_done(struct scsitgt__rbd_ctx *rc, struct rbd_req *req, ssize_t ret)
{
	struct scsitgt__rbd_zc_data *d = req->zc_data;
	const struct iovec *iov;
	const void *p;
	int iovcnt;

	req->zc_data = NULL;
	if (ret >= 0) {
		p = scsitgt__rbd_zc_data_contiguous(d, req->len);
		if (p && scsitgt_io_lend_data(req->io, p, req->len, scsitgt__rbd_zc_data_release,
					      d) == 0) {
			atomic_fetch_add_explicit(&rc->zc_lent, 1, memory_order_relaxed);
			return ret; /* released by the core once the data is sent */
		}
		/* Several buffers (a read across objects, a hole): one copy, as the C API. */
		iov = scsitgt_io_get_iov(req->io, &iovcnt);
		if (scsitgt__rbd_zc_data_copy(d, iov, iovcnt) != req->len) {
			ret = -EIO;
		}
		atomic_fetch_add_explicit(&rc->zc_copied, 1, memory_order_relaxed);
	}
	scsitgt__rbd_zc_data_release(d);
	return ret;
}

static void rbd_req_done(struct scsitgt__rbd_ctx *rc, struct rbd_req *req, ssize_t ret)
{
	struct scsitgt_io *io = req->io;

	if (ret >= 0 && req->type == SCSITGT_IO_READ && (size_t)ret != req->len) {
		/* Never report success for data we do not have. */
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: short read at byte %" PRIu64 ": %zd of %zu", rc->pool,
			     rc->image_name, req->off, ret, req->len);
		ret = -EIO;
	}
	if (req->zc_data) {
		ret = rbd_zc_read_done(rc, req, ret);
	}
	if (ret >= 0 && req->bounce && req->type == SCSITGT_IO_READ) {
		int iovcnt;
		const struct iovec *iov = scsitgt_io_get_iov(io, &iovcnt);
		size_t done = 0;

		for (int i = 0; i < iovcnt; i++) {
			memcpy(iov[i].iov_base, (char *)req->bounce + done, iov[i].iov_len);
			done += iov[i].iov_len;
		}
	}
	free(req->bounce);
	req->bounce = NULL;
	if (ret < 0) {
		scsitgt__rbd_io_fail(rc, io, (int)ret);
		return;
	}
	scsitgt_io_complete(io, 0);
}

static int rbd_req_issue(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_loop *lp,
			 struct rbd_req *req);

/* The io's loop: a request librbd (or the GET LBA STATUS job) is done with. */
static void rbd_loop_drain(void *arg, struct scsitgt__rbd_loop *lp,
			   struct scsitgt__rbd_cq_node *node)
{
	struct scsitgt__rbd_ctx *rc = arg;
	struct rbd_req *req = (struct rbd_req *)((char *)node - offsetof(struct rbd_req, cq));
	ssize_t ret = req->ret;

	if (ret >= 0 && (req->type == SCSITGT_IO_WRITE || req->type == SCSITGT_IO_WRITE_SAME) &&
	    req->phase == RBD_PHASE_IO && (scsitgt_io_get_flags(req->io) & SCSITGT_IO_FLAG_FUA) &&
	    rc->cache) {
		/* SBC-4 §5.47: FUA, the write reaches the medium before GOOD. */
		req->phase = RBD_PHASE_FUA_FLUSH;
		ret = rbd_req_issue(rc, lp, req);
		if (ret == 0) {
			return;
		}
	}
	scsitgt__rbd_loop_end(lp);
	if (lp->lc.closing) {
		/* An io the engine gave up on (docs/threading.md "A backend that never completes"):
		 * it completes as any other (an orphan's memory goes), then the close goes on. */
		scsitgt__log(&rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
			     "%s/%s: io type %d at block %" PRIu64 " came back from librbd during "
			     "the close (%s): completed",
			     rc->pool, rc->image_name, (int)req->type, req->off / rc->block_size,
			     ret < 0 ? strerror((int)-ret) : "done");
	}
	rbd_req_done(rc, req, ret);
}

/* librbd's thread: the operation finished. Hand the request to its loop, touch nothing else. */
static void rbd_aio_cb(rbd_completion_t c, void *arg)
{
	struct rbd_req *req = arg;
	struct scsitgt__rbd_loop *lp = atomic_load_explicit(&req->lp, memory_order_acquire);

	req->ret = rbd_aio_get_return_value(c);
	rbd_aio_release(c);
	scsitgt__rbd_loop_post(lp, &req->cq);
}

/* Whether a READ goes through rbd_zc.h (docs/rbd.md, "Zero-copy I/O"): big enough, and its
 * data goes out untouched, so that librbd's buffer may be sent as it is. */
static bool rbd_zc_read_wanted(struct scsitgt__rbd_ctx *rc, struct rbd_req *req)
{
	return rc->zc_reads && req->type == SCSITGT_IO_READ && req->len >= RBD_ZC_MIN_BYTES &&
	       req->len <= UINT_MAX &&
	       (scsitgt_io_get_flags(req->io) & SCSITGT_IO_FLAG_MAY_LEND) != 0;
}

/* Start the request's current librbd operation on @lp (the io's loop); 0 or a negative errno
 * (nothing started). */
static int rbd_req_issue(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_loop *lp,
			 struct rbd_req *req)
{
	struct scsitgt_io *io = req->io;
	rbd_completion_t c;
	const struct iovec *iov;
	int iovcnt;
	int r;

	r = rbd_aio_create_completion(req, rbd_aio_cb, &c);
	if (r < 0) {
		return r;
	}
	/* The callback may run before the call below returns, on librbd's thread. */
	scsitgt__rbd_loop_hold(lp);
	atomic_store_explicit(&req->lp, lp, memory_order_release);
	if (req->phase == RBD_PHASE_FUA_FLUSH) {
		r = rbd_aio_flush(rc->image, c);
		goto out;
	}
	switch (req->type) {
	case SCSITGT_IO_READ:
	case SCSITGT_IO_WRITE:
		if (rbd_zc_read_wanted(rc, req)) {
			r = scsitgt__rbd_zc_read(&rc->image, req->off, req->len, c, &req->zc_data);
			break;
		}
		iov = scsitgt_io_get_iov(io, &iovcnt);
		if (iovcnt > RBD_IOV_MAX) {
			struct iovec one;
			size_t done = 0;

			req->bounce = malloc(req->len);
			if (req->bounce == NULL) {
				r = -ENOMEM;
				break;
			}
			if (req->type == SCSITGT_IO_WRITE) {
				for (int i = 0; i < iovcnt; i++) {
					memcpy((char *)req->bounce + done, iov[i].iov_base,
					       iov[i].iov_len);
					done += iov[i].iov_len;
				}
			}
			one.iov_base = req->bounce;
			one.iov_len = req->len;
			r = req->type == SCSITGT_IO_READ ?
				    rbd_aio_readv(rc->image, &one, 1, req->off, c) :
				    rbd_aio_writev(rc->image, &one, 1, req->off, c);
		} else if (req->type == SCSITGT_IO_READ) {
			r = rbd_aio_readv(rc->image, iov, iovcnt, req->off, c);
		} else {
			r = rbd_aio_writev(rc->image, iov, iovcnt, req->off, c);
		}
		break;
	case SCSITGT_IO_FLUSH:
		r = rbd_aio_flush(rc->image, c);
		break;
	case SCSITGT_IO_UNMAP:
		/* librbd drops what is below rbd_discard_granularity_bytes or off its alignment
		 * (the data stays): fine for UNMAP, which is advisory with LBPRZ 0. */
		r = rbd_aio_discard(rc->image, req->off, req->len, c);
		break;
	case SCSITGT_IO_WRITE_ZEROES:
		/* Zeros guaranteed (librbd may deallocate whole objects to get them). */
		r = rbd_aio_write_zeroes(rc->image, req->off, req->len, c, 0, 0);
		break;
	case SCSITGT_IO_WRITE_SAME:
		/* The one block repeated over the range (len a multiple of it, as librbd wants);
		 * the core sends zero blocks to WRITE ZEROES instead. */
		iov = scsitgt_io_get_iov(io, &iovcnt);
		if (iovcnt != 1 || iov[0].iov_len != rc->block_size) {
			r = -EINVAL;
			break;
		}
		r = rbd_aio_writesame(rc->image, req->off, req->len, iov[0].iov_base,
				      iov[0].iov_len, c, 0);
		break;
	default:
		r = -ENOTSUP;
		break;
	}
out:
	if (r < 0) {
		/* Nothing started: librbd never calls back (its calls fail before taking the
		 * completion). */
		rbd_aio_release(c);
		scsitgt__rbd_loop_unhold(lp);
		free(req->bounce);
		req->bounce = NULL;
		return r;
	}
	return 0;
}

/* ---- GET LBA STATUS: the image's allocation, on the worker thread ---- */

/* Most of the image one query looks at, in RADOS objects: bounds the time a query holds the
 * worker when the image has no object map (one RADOS listing per object). */
#define RBD_LBAS_MAX_OBJECTS 4096

/* One allocated region from rbd_diff_iterate2(), in blocks: [first, last). */
struct rbd_lbas_region {
	uint64_t first, last;
};

struct rbd_lbas_job {
	struct scsitgt__rbd_job job;
	struct rbd_req *req;
	/* The io's extent array (written on the worker, the io is lent to us until completed). */
	struct scsitgt_lba_extent *ext;
	size_t count, used;
	uint32_t block_size;
	uint64_t next; /* the block after the last extent */
	uint64_t end;  /* the block after the range asked */
	/* The regions as librbd reported them (worker thread only). */
	struct rbd_lbas_region *regions;
	size_t nregions, cap;
	int err;
};

/* Extend the list with @n blocks of @status; false when the array is full. */
static bool rbd_lbas_put(struct rbd_lbas_job *lj, uint64_t n, uint32_t status)
{
	if (n == 0) {
		return true;
	}
	if (lj->used && lj->ext[lj->used - 1].status == status) {
		lj->ext[lj->used - 1].num_blocks += n;
	} else if (lj->used < lj->count) {
		lj->ext[lj->used].num_blocks = n;
		lj->ext[lj->used].status = status;
		lj->used++;
	} else {
		return false;
	}
	lj->next += n;
	return true;
}

/* rbd_diff_iterate2()'s callback (worker thread): one allocated region. Collected first:
 * without an object map librbd lists objects concurrently, and the order of the callbacks
 * is not promised. Partly covered blocks count as mapped (never a wrong "deallocated"). */
static int rbd_lbas_region(uint64_t off, size_t len, int exists, void *arg)
{
	struct rbd_lbas_job *lj = arg;
	struct rbd_lbas_region *r;

	if (!exists || len == 0) {
		return 0;
	}
	if (lj->nregions == lj->cap) {
		size_t cap = lj->cap ? lj->cap * 2 : 64;

		r = realloc(lj->regions, cap * sizeof(*r));
		if (r == NULL) {
			lj->err = -ENOMEM;
			return -ENOMEM;
		}
		lj->regions = r;
		lj->cap = cap;
	}
	r = &lj->regions[lj->nregions++];
	r->first = off / lj->block_size;
	r->last = (off + len + lj->block_size - 1) / lj->block_size;
	return 0;
}

static int rbd_lbas_cmp(const void *a, const void *b)
{
	const struct rbd_lbas_region *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* The extents from the sorted regions: the gaps between them hold no object (deallocated). */
static void rbd_lbas_fill(struct rbd_lbas_job *lj)
{
	qsort(lj->regions, lj->nregions, sizeof(*lj->regions), rbd_lbas_cmp);
	for (size_t i = 0; i < lj->nregions; i++) {
		uint64_t first = lj->regions[i].first, last = lj->regions[i].last;

		if (last > lj->end) {
			last = lj->end;
		}
		if (last <= lj->next) {
			continue;
		}
		if (first < lj->next) {
			first = lj->next;
		}
		if (!rbd_lbas_put(lj, first - lj->next, SCSITGT_LBA_DEALLOCATED) ||
		    !rbd_lbas_put(lj, last - first, SCSITGT_LBA_MAPPED)) {
			return; /* the answer is full: it ends here */
		}
	}
	/* No object after the last region up to the end of the range. */
	rbd_lbas_put(lj, lj->end - lj->next, SCSITGT_LBA_DEALLOCATED);
}

static void rbd_lbas_work(struct scsitgt__rbd_job *job)
{
	struct rbd_lbas_job *lj = (struct rbd_lbas_job *)job;
	struct scsitgt__rbd_ctx *rc = job->rc;
	uint64_t off = lj->next * lj->block_size;
	int r;

	if (rc->image == NULL) {
		job->status = -ESHUTDOWN;
		return;
	}
	job->status = 0;
	if (lj->end <= lj->next) {
		return; /* the image shrank under the query: nothing to say, the core says mapped */
	}
	/* Whole objects: answered from the object map when the image has one (fast-diff). */
	r = rbd_diff_iterate2(rc->image, NULL, off, (lj->end - lj->next) * lj->block_size, 1, 1,
			      rbd_lbas_region, lj);
	if (r == 0) {
		rbd_lbas_fill(lj);
	}
	free(lj->regions);
	lj->regions = NULL;
	job->status = lj->err ? lj->err : r;
}

/* Home: the query ran; the io completes on its own loop (rbd_loop_drain), as librbd's do. */
static void rbd_lbas_done(struct scsitgt__rbd_job *job)
{
	struct rbd_lbas_job *lj = (struct rbd_lbas_job *)job;
	struct rbd_req *req = lj->req;

	req->ret = job->status;
	free(lj);
	scsitgt__rbd_loop_post(atomic_load_explicit(&req->lp, memory_order_acquire), &req->cq);
}

/* Queue the io's allocation query on the worker thread (from any loop: the thread runs from
 * open() to close); 0 or a negative errno (nothing queued). */
static int rbd_lbas_start(struct scsitgt__rbd_ctx *rc, struct scsitgt__rbd_loop *lp,
			  struct rbd_req *req)
{
	struct scsitgt_io *io = req->io;
	struct rbd_lbas_job *lj;
	uint64_t max_blocks,
		num_blocks = atomic_load_explicit(&rc->num_blocks, memory_order_relaxed);

	if (!rc->thread_started) {
		return -EIO;
	}
	lj = calloc(1, sizeof(*lj));
	if (lj == NULL) {
		return -ENOMEM;
	}
	lj->req = req;
	lj->ext = scsitgt_io_get_lba_extents(io, &lj->count);
	lj->block_size = rc->block_size;
	lj->next = scsitgt_io_get_lba(io);
	lj->end = lj->next + scsitgt_io_get_num_blocks(io);
	max_blocks = rc->obj_size ? RBD_LBAS_MAX_OBJECTS * (rc->obj_size / rc->block_size) : 0;
	if (max_blocks && lj->end - lj->next > max_blocks) {
		lj->end = lj->next + max_blocks;
	}
	if (lj->end > num_blocks) {
		lj->end = num_blocks;
	}
	lj->job.work = rbd_lbas_work;
	lj->job.done = rbd_lbas_done;
	scsitgt__rbd_loop_hold(lp);
	atomic_store_explicit(&req->lp, lp, memory_order_release);
	scsitgt__rbd_job_push(rc, &lj->job);
	return 0;
}

static void rbd_submit(void *bctx, struct scsitgt_io *io)
{
	struct scsitgt__rbd_ctx *rc = bctx;
	struct rbd_req *req = scsitgt_io_get_ctx(io);
	struct scsitgt__rbd_loop *lp;
	int r;

	memset(req, 0, sizeof(*req));
	req->io = io;
	req->type = scsitgt_io_get_type(io);
	req->phase = RBD_PHASE_IO;
	req->off = scsitgt_io_get_lba(io) * rc->block_size;
	req->len = (size_t)scsitgt_io_get_num_blocks(io) * rc->block_size;
	if (rc->read_only && req->type != SCSITGT_IO_READ &&
	    req->type != SCSITGT_IO_GET_LBA_STATUS) {
		scsitgt_io_complete(io, -EROFS);
		return;
	}
	/* SCSITGT_BACKEND_MULTI_LOOP: the io completes on its loop, through that loop's queue. */
	r = scsitgt__rbd_loop_get(&rc->loops, scsitgt_io_get_loop(io), &lp);
	if (r < 0) {
		/* BUSY: the initiator retries. */
		scsitgt_io_complete(io, -EAGAIN);
		return;
	}
	/* Counted before rc->fenced is read (see there): home waits for this count to reach 0
	 * before it replaces the client under a fenced context. */
	scsitgt__rbd_loop_begin(lp);
	if (rc->fenced) {
		scsitgt__rbd_loop_end(lp);
		scsitgt__rbd_io_fail(rc, io, -ESHUTDOWN);
		return;
	}
	if (req->type == SCSITGT_IO_GET_LBA_STATUS) {
		r = rbd_lbas_start(rc, lp, req);
	} else {
		r = rbd_req_issue(rc, lp, req);
	}
	if (r < 0) {
		scsitgt__rbd_loop_end(lp);
		scsitgt__rbd_io_fail(rc, io, r);
	}
}

static bool rbd_supports(void *bctx, enum scsitgt_io_type type)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	switch (type) {
	case SCSITGT_IO_READ:
		return true;
	case SCSITGT_IO_WRITE:
		return !rc->read_only;
	case SCSITGT_IO_FLUSH:
		return rc->cache;
	case SCSITGT_IO_UNMAP:
	case SCSITGT_IO_WRITE_ZEROES:
	case SCSITGT_IO_WRITE_SAME:
		return !rc->read_only;
	case SCSITGT_IO_GET_LBA_STATUS:
		return true;
	default:
		return false;
	}
}

/* ---- errors ---- */

/* What ios of other loops than home tell home (rc->loop_events). */
#define RBD_EV_FENCED (1u << 0)
#define RBD_EV_EROFS (1u << 1)
#define RBD_EV_ETIMEDOUT (1u << 2)
#define RBD_EV_EIO (1u << 3)

/* Any loop: tell home (scsitgt__rbd_loop_events() when the uv_async_t fires). */
static void rbd_post_event(struct scsitgt__rbd_ctx *rc, unsigned int ev)
{
	atomic_fetch_or_explicit(&rc->loop_events, ev, memory_order_release);
	uv_async_send(&rc->async);
}

/* Home: the client is blocklisted; say so and tell the hook. */
static void rbd_fenced_tell(struct scsitgt__rbd_ctx *rc)
{
	scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
		     "%s/%s: this client was blocklisted (fenced)", rc->pool, rc->image_name);
	if (rc->hooks.fenced) {
		rc->hooks.fenced(rc, rc->hooks.arg);
	}
}

/* An operation said this client is blocklisted: note it once (any loop) and tell the hook
 * (on home: now; from another loop: when home wakes). */
void scsitgt__rbd_set_fenced(struct scsitgt__rbd_ctx *rc, bool home)
{
	atomic_store(&rc->blocklisted, true);
	if (atomic_exchange(&rc->fenced, true)) {
		return;
	}
	if (home) {
		rbd_fenced_tell(rc);
	} else {
		rbd_post_event(rc, RBD_EV_FENCED);
	}
}

/* Home: what ios of the other loops reported since the last wake-up, for the hooks. */
void scsitgt__rbd_loop_events(struct scsitgt__rbd_ctx *rc)
{
	unsigned int ev = atomic_exchange_explicit(&rc->loop_events, 0, memory_order_acquire);

	if (ev == 0) {
		return;
	}
	if (rc->hooks.io_failed) {
		if (ev & RBD_EV_EROFS) {
			rc->hooks.io_failed(rc, -EROFS, rc->hooks.arg);
		}
		if (ev & RBD_EV_ETIMEDOUT) {
			rc->hooks.io_failed(rc, -ETIMEDOUT, rc->hooks.arg);
		}
		if (ev & RBD_EV_EIO) {
			rc->hooks.io_failed(rc, -EIO, rc->hooks.arg);
		}
	}
	if (ev & RBD_EV_FENCED) {
		rbd_fenced_tell(rc);
	}
}

void scsitgt__rbd_io_fail(struct scsitgt__rbd_ctx *rc, struct scsitgt_io *io, int err)
{
	bool home = scsitgt_io_get_loop(io) == rc->loop;

	/* The hooks are home's (rbd_int.h): another loop's io tells home and goes on. */
	if (home && rc->hooks.io_failed) {
		rc->hooks.io_failed(rc, err, rc->hooks.arg);
	} else if (!home) {
		rbd_post_event(rc, err == -EROFS     ? RBD_EV_EROFS :
				   err == -ETIMEDOUT ? RBD_EV_ETIMEDOUT :
						       RBD_EV_EIO);
	}
	if (err != -EROFS || !rc->read_only) {
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: io type %d at block %" PRIu64 " (+%" PRIu32 ") failed: %s",
			     rc->pool, rc->image_name, (int)scsitgt_io_get_type(io),
			     scsitgt_io_get_lba(io), scsitgt_io_get_num_blocks(io), strerror(-err));
	}
	switch (err) {
	case -EROFS:
		if (rc->read_only) {
			/* Our own read-only open: DATA PROTECT, WRITE PROTECTED. */
			scsitgt_io_complete(io, -EROFS);
			return;
		}
		/*
		 * Another client owns the image's exclusive lock (another gateway is active):
		 * this path is not the one to write through. SPC-5 §5.16.2.4.4 / Table 52:
		 * NOT READY, LOGICAL UNIT NOT ACCESSIBLE, TARGET PORT IN STANDBY STATE; a
		 * multipath initiator retries on another path. Not a medium error.
		 */
		scsitgt_io_complete_sense(io, 0x02, 0x04, 0x0b);
		return;
	case -ESHUTDOWN:
		/*
		 * This client was blocklisted (fenced by a gateway that took the lock over): the
		 * io did not happen and never will through this connection. NOT READY, LOGICAL
		 * UNIT NOT ACCESSIBLE, ASYMMETRIC ACCESS STATE TRANSITION: retry elsewhere.
		 */
		scsitgt__rbd_set_fenced(rc, home);
		scsitgt_io_complete_sense(io, 0x02, 0x04, 0x0a);
		return;
	case -ETIMEDOUT:
		/* The cluster did not answer within op_timeout_s: NOT READY, LOGICAL UNIT IS IN
		 * PROCESS OF BECOMING READY, which initiators retry after a delay. */
		scsitgt_io_complete_sense(io, 0x02, 0x04, 0x01);
		return;
	default:
		break;
	}
	if (scsitgt_io_get_type(io) == SCSITGT_IO_READ ||
	    scsitgt_io_get_type(io) == SCSITGT_IO_WRITE) {
		scsitgt_io_complete_at(io, err, scsitgt_io_get_lba(io));
		return;
	}
	scsitgt_io_complete(io, err);
}

/* SAM-5 §6.3.3: the reset is the logical unit's, which every gateway exports. */
static void rbd_reset_async(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	scsitgt__rbd_pr_reset(bctx, cb, cb_arg);
}

/* The LUN is being destroyed (backend.h): an image update seen from now on resizes nothing.
 * The LUN may be freed before close(), or without close() when an engine shutdown gives up
 * on an io this backend holds; rbd_size_done() runs on this same loop. */
static void rbd_detach(void *bctx, struct scsitgt_lun *lun)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	(void)lun;
	rc->lun = NULL;
}

/* ---- the table and the host's calls ---- */

static const struct scsitgt_backend_ops rbd_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "rbd",
	.io_ctx_size = sizeof(struct rbd_req),
	.open = rbd_op_open,
	.close = scsitgt__rbd_op_close,
	.submit = rbd_submit,
	.supports = rbd_supports,
	.reset_async = rbd_reset_async,
	.detach = rbd_detach,
	/* submit() on the io's loop (rbd_loop.h); everything else on home. */
	.flags = SCSITGT_BACKEND_MULTI_LOOP,
};

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_rbd_ops(void)
{
	return &rbd_ops;
}
