/* SPDX-License-Identifier: MIT */
/*
 * The libaio engine of the aio backend (Linux native AIO): reads and writes become
 * IOCB_CMD_PREADV / PWRITEV iocbs carrying the loop's eventfd (io_set_eventfd), FLUSH an
 * IOCB_CMD_FDSYNC iocb; the poll callback drains io_getevents() in batches. The kernel runs
 * buffered I/O inside io_submit() (see the top of aio.c); UNMAP and WRITE ZEROES stay
 * synchronous calls in aio.c.
 */
#include <errno.h>
#include <linux/fs.h>
#include <string.h>
#include <time.h>

#include "backend/aio_int.h"

static int libaio_setup(struct aio_loop *al, const char **why)
{
	int rc = io_setup((int)al->depth, &al->ioctx);

	if (rc < 0) {
		/* EAGAIN: the system-wide fs.aio-max-nr has not that many events left. */
		*why = rc == -EAGAIN ? "io_setup failed (fs.aio-max-nr reached)" :
				       "io_setup failed";
		return rc;
	}
	al->ioctx_set = true;
	return 0;
}

static void libaio_teardown(struct aio_loop *al)
{
	if (al->ioctx_set) {
		io_destroy(al->ioctx);
		al->ioctx_set = false;
	}
}

static void libaio_issue(struct aio_loop *al, struct aio_req *req)
{
	struct aio_ctx *ac = al->ac;
	struct iocb *cbs[1] = { &req->iocb };
	int rc;

	if (req->phase == AIO_PHASE_SYNC) {
		io_prep_fdsync(&req->iocb, ac->fd);
	} else {
		int n = scsitgt__aio_req_kiov(al, req);
		long long off = (long long)(req->off + req->done);

		if (req->type == SCSITGT_IO_READ) {
			io_prep_preadv(&req->iocb, ac->fd, al->kiov, n, off);
		} else {
			io_prep_pwritev(&req->iocb, ac->fd, al->kiov, n, off);
			if (req->used_dsync) {
				req->iocb.aio_rw_flags = RWF_DSYNC;
			}
		}
	}
	/* read back from the iocb as the kernel gets it (io_prep_*() cleared the flags) */
	if (req->iocb.aio_rw_flags & RWF_DSYNC)
		atomic_fetch_add_explicit(&ac->dsync_writes, 1, memory_order_relaxed);
	io_set_eventfd(&req->iocb, al->lc.efd);
	req->iocb.data = req;

	rc = scsitgt__aio_test_submit_fail(ac);
	if (rc == 0) {
		rc = io_submit(al->ioctx, 1, cbs);
	}
	if (rc == 1) {
		al->inflight++;
		return;
	}
	if (rc == 0) {
		rc = -EAGAIN;
	}
	if (rc == -EAGAIN && al->inflight > 0) {
		/* The kernel is full: retry as soon as something completes. */
		scsitgt__aio_req_park(al, req, true);
		return;
	}
	if (rc == -EINVAL && req->phase == AIO_PHASE_SYNC) {
		/* IOCB_CMD_FDSYNC needs Linux 4.18: see the comment at the top of aio.c. */
		atomic_store_explicit(&ac->fdsync_ok, false, memory_order_relaxed);
		scsitgt__log(&ac->log, SCSITGT_LOG_NOTICE, AIO_SUBSYS,
			     "%s: kernel refuses aio fdsync; flushing with fdatasync() on the loop",
			     ac->path);
		scsitgt__aio_req_sync_now(ac, req);
		return;
	}
	if (rc == -EINVAL && req->used_dsync) {
		scsitgt__aio_req_dsync_refused(al, req);
		return;
	}
	scsitgt__aio_req_finish(ac, req, rc);
}

static void libaio_reap(struct aio_loop *al)
{
	struct io_event ev[AIO_EVENT_BATCH];
	int n;

	do {
		struct timespec zero = { 0, 0 };

		n = io_getevents(al->ioctx, 0, AIO_EVENT_BATCH, ev, &zero);
		if (n == -EINTR) {
			n = AIO_EVENT_BATCH;
			continue;
		}
		if (n < 0) {
			scsitgt__log(&al->ac->log, SCSITGT_LOG_ERROR, AIO_SUBSYS,
				     "%s: io_getevents: %s", al->ac->path, strerror(-n));
			break;
		}
		for (int i = 0; i < n; i++) {
			scsitgt__aio_req_event(al, ev[i].data, (long)ev[i].res);
		}
	} while (n == AIO_EVENT_BATCH);
}

const struct aio_engine scsitgt__aio_libaio = {
	.name = "libaio",
	.id = SCSITGT_BACKEND_AIO_ENGINE_LIBAIO,
	.setup = libaio_setup,
	.teardown = libaio_teardown,
	.issue = libaio_issue,
	.reap = libaio_reap,
};
