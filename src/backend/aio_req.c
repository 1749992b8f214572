/* SPDX-License-Identifier: MIT */
/*
 * The life of an aio request after submit (aio.c) handed it a phase: issue it to the loop's
 * engine or park it while the kernel context is full and drain the parked ones as slots free,
 * take each kernel completion (scsitgt__aio_req_event: short transfers resubmitted, EINTR and
 * EAGAIN retried, a refused RWF_DSYNC or aio fdsync replaced by its fallback, a deallocation
 * made durable in write-through mode, bounce buffers copied back), and finish it: errno
 * mapping and the lost-writeback latch of flush-class requests (aio.c, "Lost writes" and
 * "Errors"). Runs on the loop that submitted the request, with that loop's struct aio_loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend/aio_int.h"
#include "libscsitgt/backend_aio.h"
#include "util/log.h"

/* A resubmitted transfer that moves nothing this many times in a row fails with -EIO. */
#define AIO_MAX_STALLS 2
/* A request the kernel answers -EINTR or -EAGAIN is issued again, up to this many times. */
#define AIO_MAX_RETRIES 8

static void aio_req_issue(struct aio_loop *al, struct aio_req *req);

/* Errors as the core wants them (backend.h scsitgt_io_complete()). */
static int aio_map_errno(int err)
{
	switch (err) {
	case -EDQUOT:
	case -EFBIG:
		return -ENOSPC;
	case -ENXIO:
	case -ENODEV:
		/* The device went away under us: a medium error for the initiator. */
		return -EIO;
	case -EBADF:
		/* A write through a read-only descriptor. */
		return -EROFS;
	case -EINTR:
		/* Still interrupted after AIO_MAX_RETRIES tries (a file system's request that
		 * keeps being interrupted): BUSY, which the initiator retries, as an exhausted
		 * -EAGAIN, not an INTERNAL TARGET FAILURE that Linux sd fails at once. */
		return -EAGAIN;
	default:
		return err;
	}
}

/* Whether @req's success promises that earlier writes are durable (aio.c, "Lost writes"). */
static bool aio_req_flush_class(const struct aio_req *req)
{
	return req->type == SCSITGT_IO_FLUSH || req->phase == AIO_PHASE_SYNC || req->used_dsync;
}

/* Keep a flush-class request's lost-write error, or give it the one kept before. */
static int aio_sync_error_latch(struct aio_ctx *ac, const struct aio_req *req, int status)
{
	int kept = 0;

	if (status == 0) {
		status = atomic_exchange_explicit(&ac->sync_error_inject, 0, memory_order_relaxed);
	}
	if (status == -EIO || status == -ENOSPC) {
		/* A flush fails only for writes it could not make durable. A FUA write's ENOSPC
		 * is its own allocation (nothing cached). Its EIO may be an earlier writeback's,
		 * which the RWF_DSYNC flush consumed: also in O_DIRECT mode, whose LUN has page
		 * cache too (partial-block UNMAP / WRITE ZEROES zeroing, file systems that fall
		 * back to buffered writes). The EIO of its own data is kept as well: the cost is
		 * FLUSHes that fail until the LUN is opened again, on a medium that fails writes.
		 * A block device in O_DIRECT mode has no page cache of its own to lose: there an
		 * O_DIRECT FUA write's EIO is its own sectors', and keeping it would turn one bad
		 * sector into a LUN whose every flush fails (reviewk K2). */
		bool lost = req->phase == AIO_PHASE_SYNC ||
			    (status == -EIO &&
			     (!ac->direct || !ac->blockdev || req->type == SCSITGT_IO_FLUSH));

		if (!lost) {
			return status;
		}
		/* A lost write is a WRITE ERROR whatever the writeback failed with: ENOSPC as
		 * SPACE ALLOCATION FAILED WRITE PROTECT would tell the initiator to free space
		 * and retry, and the kept error would then fail it forever (reviewj J2). */
		if (atomic_compare_exchange_strong_explicit(&ac->sync_error, &kept, -EIO,
							    memory_order_relaxed,
							    memory_order_relaxed)) {
			scsitgt__log(
				&ac->log, SCSITGT_LOG_ERROR, AIO_SUBSYS,
				"%s: a flush failed (%s): writes may be lost; every later "
				"SYNCHRONIZE CACHE and FUA write fails until the LUN is opened "
				"again",
				ac->path, strerror(-status));
		}
		return -EIO;
	}
	if (status == 0) {
		kept = atomic_load_explicit(&ac->sync_error, memory_order_relaxed);
		return kept;
	}
	return status;
}

void scsitgt__aio_req_finish(struct aio_ctx *ac, struct aio_req *req, int status)
{
	struct scsitgt_io *io = req->io;

	if (status != -ECANCELED && aio_req_flush_class(req)) {
		status = aio_sync_error_latch(ac, req, aio_map_errno(status));
	}
	if (status < 0) {
		status = aio_map_errno(status);
		scsitgt__log(&ac->log, SCSITGT_LOG_WARNING, AIO_SUBSYS,
			     "%s: io type %d at byte %" PRIu64 " (+%zu) failed: %s", ac->path,
			     (int)req->type, req->off, req->len, strerror(-status));
	}
	if (status < 0 && req->type == SCSITGT_IO_READ && req->bounce && req->done) {
		/* The blocks read before the failure go to the initiator (complete_partial); the
		 * rest of the bounce buffer was never written. */
		int iovcnt;
		const struct iovec *iov = scsitgt_io_get_iov(io, &iovcnt);

		scsitgt__aio_bounce_copy(req, iov, iovcnt, false, req->done);
	}
	free(req->bounce);
	req->bounce = NULL;
	if (status < 0 && (req->type == SCSITGT_IO_READ || req->type == SCSITGT_IO_WRITE)) {
		/* Short transfers were resubmitted, so the failure starts where the data stopped,
		 * and the whole blocks before it were read into the iovecs or written. */
		scsitgt_io_complete_partial(io, status, (req->off + req->done) / ac->block_size);
		return;
	}
	scsitgt_io_complete(io, status);
}

int scsitgt__aio_req_kiov(struct aio_loop *al, const struct aio_req *req)
{
	size_t skip = req->done;
	size_t left = req->len - req->done;
	int n = 0;

	for (int i = 0; i < req->iovcnt && left > 0; i++) {
		size_t l = req->iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		l -= skip;
		if (l > left) {
			l = left;
		}
		al->kiov[n].iov_base = (uint8_t *)req->iov[i].iov_base + skip;
		al->kiov[n].iov_len = l;
		n++;
		left -= l;
		skip = 0;
	}
	return n;
}

void scsitgt__aio_req_park(struct aio_loop *al, struct aio_req *req, bool front)
{
	req->next = NULL;
	if (al->pend_head == NULL) {
		al->pend_head = al->pend_tail = req;
	} else if (front) {
		req->next = al->pend_head;
		al->pend_head = req;
	} else {
		al->pend_tail->next = req;
		al->pend_tail = req;
	}
}

void scsitgt__aio_dsync_refused(struct aio_ctx *ac)
{
	if (atomic_exchange_explicit(&ac->rwf_dsync_ok, false, memory_order_relaxed)) {
		scsitgt__log(&ac->log, SCSITGT_LOG_NOTICE, AIO_SUBSYS,
			     "%s: kernel refuses RWF_DSYNC; FUA writes are followed by a flush",
			     ac->path);
	}
}

void scsitgt__aio_req_dsync_refused(struct aio_loop *al, struct aio_req *req)
{
	scsitgt__aio_dsync_refused(al->ac);
	req->used_dsync = false;
	req->sync_after = true;
	aio_req_issue(al, req);
}

void scsitgt__aio_req_sync_now(struct aio_ctx *ac, struct aio_req *req)
{
	int rc = fdatasync(ac->fd) < 0 ? -errno : 0;

	scsitgt__aio_req_finish(ac, req, rc);
}

static void aio_req_issue(struct aio_loop *al, struct aio_req *req)
{
	if (req->phase == AIO_PHASE_SYNC)
		atomic_fetch_add_explicit(&al->ac->syncs, 1, memory_order_relaxed);
	if (req->phase == AIO_PHASE_SYNC &&
	    !atomic_load_explicit(&al->ac->fdsync_ok, memory_order_relaxed)) {
		scsitgt__aio_req_sync_now(al->ac, req);
		return;
	}
	al->ac->engine->issue(al, req);
}

/* Issue as many waiting requests as the kernel takes. */
void scsitgt__aio_drain_pending(struct aio_loop *al)
{
	while (al->pend_head && al->inflight < al->depth) {
		struct aio_req *req = al->pend_head;
		unsigned int before = al->inflight;

		al->pend_head = req->next;
		if (al->pend_head == NULL) {
			al->pend_tail = NULL;
		}
		aio_req_issue(al, req);
		if (al->inflight == before && al->pend_head == req) {
			/* Parked again: the kernel is still full. */
			break;
		}
	}
}

void scsitgt__aio_req_start(struct aio_loop *al, struct aio_req *req)
{
	if (al->pend_head || al->inflight >= al->depth) {
		scsitgt__aio_req_park(al, req, false);
		return;
	}
	aio_req_issue(al, req);
}

/* Copy the first @len bytes between the io's iovecs and the bounce buffer. */
void scsitgt__aio_bounce_copy(struct aio_req *req, const struct iovec *iov, int iovcnt, bool in,
			      size_t len)
{
	uint8_t *p = req->bounce;
	size_t left = len < req->len ? len : req->len;

	for (int i = 0; i < iovcnt && left > 0; i++) {
		size_t l = iov[i].iov_len < left ? iov[i].iov_len : left;

		if (in) {
			memcpy(p, iov[i].iov_base, l);
		} else {
			memcpy(iov[i].iov_base, p, l);
		}
		p += l;
		left -= l;
	}
}

/* A read or write is complete in the kernel: copy out, flush if FUA needs it, finish. */
static void aio_req_rw_done(struct aio_loop *al, struct aio_req *req)
{
	if (req->type == SCSITGT_IO_READ && req->bounce) {
		int iovcnt;
		const struct iovec *iov = scsitgt_io_get_iov(req->io, &iovcnt);

		scsitgt__aio_bounce_copy(req, iov, iovcnt, false, req->len);
	}
	if (req->sync_after) {
		req->phase = AIO_PHASE_SYNC;
		aio_req_issue(al, req);
		return;
	}
	scsitgt__aio_req_finish(al->ac, req, 0);
}

void scsitgt__aio_req_event(struct aio_loop *al, struct aio_req *req, long res)
{
	struct aio_ctx *ac = al->ac;
	size_t left = req->len - req->done;
	size_t unit;
	size_t done;

	al->inflight--;
	if (req->requeue) {
		/* The NOP of a failed submission (io_uring engine): the real thing now. */
		req->requeue = false;
		aio_req_issue(al, req);
		return;
	}
	if (req->phase == AIO_PHASE_RW) {
		atomic_store_explicit(&al->rw_events,
				      atomic_load_explicit(&al->rw_events, memory_order_relaxed) +
					      1,
				      memory_order_relaxed);
	}
	if (atomic_load_explicit(&ac->test_event_inject_n, memory_order_relaxed) > 0 &&
	    atomic_fetch_sub_explicit(&ac->test_event_inject_n, 1, memory_order_relaxed) > 0) {
		res = ac->test_event_inject_res;
	}
	if ((res == -EINTR || res == -EAGAIN) && ++req->stalls < AIO_MAX_RETRIES) {
		/* Try again, not an error: io_uring hands a file system's interrupted request
		 * (NFS, FUSE: -ERESTARTSYS) back as -EINTR. Every phase is idempotent. */
		aio_req_issue(al, req);
		return;
	}
	if (req->phase == AIO_PHASE_DEALLOC && res >= 0 && ac->write_through) {
		/* O_DSYNC covers writes, not fallocate (ext4's punch hole ignores it): the
		 * deallocation is made durable before it completes, there being no FLUSH. */
		req->phase = AIO_PHASE_SYNC;
		aio_req_issue(al, req);
		return;
	}
	if (req->phase == AIO_PHASE_SYNC || req->phase == AIO_PHASE_DEALLOC) {
		scsitgt__aio_req_finish(ac, req, res < 0 ? (int)res : 0);
		return;
	}
	if ((res == -EINVAL || res == -EOPNOTSUPP) && req->used_dsync &&
	    ac->engine->dsync_refused_in_completion) {
		/*
		 * io_uring reports a refused RWF_DSYNC in the completion, but so it does anything
		 * else wrong with the write (an O_DIRECT alignment the kernel refuses). The same
		 * write goes again without the flag, followed by a flush: only its success shows
		 * that the flag was refused and turns it off for the LUN (reviewg F4).
		 */
		req->used_dsync = false;
		req->sync_after = true;
		req->dsync_probe = true;
		aio_req_issue(al, req);
		return;
	}
	if (req->dsync_probe) {
		req->dsync_probe = false;
		if (res > 0) {
			scsitgt__aio_dsync_refused(ac);
		}
	}
	if (res < 0) {
		scsitgt__aio_req_finish(ac, req, (int)res);
		return;
	}
	if (res == 0) {
		/* Nothing moved: end of file (the file shrank) or a device that gave up. */
		scsitgt__aio_req_finish(ac, req, -EIO);
		return;
	}
	done = req->done + ((size_t)res < left ? (size_t)res : left);
	if (done < req->len && ac->direct) {
		/* The remainder must start aligned again: redo the unaligned tail. */
		unit = aio_max_u32(ac->off_align, ac->mem_align);
		done -= done % unit;
	}
	if (done >= req->len) {
		req->done = req->len;
		aio_req_rw_done(al, req);
		return;
	}
	if (done == req->done) {
		if (++req->stalls >= AIO_MAX_STALLS) {
			scsitgt__aio_req_finish(ac, req, -EIO);
			return;
		}
	} else {
		req->stalls = 0;
	}
	/* SBC-4 does not know partial transfers: resubmit the rest. */
	req->done = done;
	aio_req_issue(al, req);
}
