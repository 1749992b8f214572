/* SPDX-License-Identifier: MIT */
/*
 * The io_uring engine of the aio backend (liburing): one ring per submission context, its
 * eventfd registered (io_uring_register_eventfd). Reads and writes are IORING_OP_READV /
 * WRITEV, FLUSH is IORING_OP_FSYNC with IORING_FSYNC_DATASYNC, UNMAP and WRITE ZEROES on files
 * are IORING_OP_FALLOCATE. Buffered reads and writes go to the kernel's io-wq at once
 * (IOSQE_ASYNC) on the rings the uring_async option says (uring_setup, uring_issue); what the
 * engine needs of the kernel is probed at setup (see the top of aio.c).
 */
#include <errno.h>
#include <linux/fs.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>

#include "backend/aio_int.h"

/* Most entries of an io_uring submission queue (the kernel's IORING_MAX_ENTRIES). */
#define AIO_URING_MAX_ENTRIES 32768

/*
 * A ring of queue_depth entries whose completions signal al->lc.efd. On failure the ring is gone
 * again and *why says what the kernel lacks.
 */
static int uring_setup(struct aio_loop *al, const char **why)
{
	static const struct {
		int op;
		const char *name;
	} need[] = {
		{ IORING_OP_READV, "no IORING_OP_READV" },
		{ IORING_OP_WRITEV, "no IORING_OP_WRITEV" },
		{ IORING_OP_FSYNC, "no IORING_OP_FSYNC" },
		{ IORING_OP_FALLOCATE, "no IORING_OP_FALLOCATE (Linux < 5.6)" },
	};
	struct aio_ctx *ac = al->ac;
	struct io_uring_params p;
	struct io_uring_probe *probe;
	unsigned int entries = al->depth;
	int rc;

	if (entries > AIO_URING_MAX_ENTRIES) {
		entries = AIO_URING_MAX_ENTRIES;
	}
	memset(&p, 0, sizeof(p));
	rc = io_uring_queue_init_params(entries, &al->ring, &p);
	if (rc < 0) {
		*why = rc == -ENOSYS ? "no io_uring in this kernel (or a seccomp filter)" :
		       rc == -EPERM  ? "io_uring is disabled (sysctl kernel.io_uring_disabled)" :
				       "ring setup failed";
		return rc;
	}
	al->ring_set = true;
	rc = -ENOTSUP;
	if (!(p.features & IORING_FEAT_SUBMIT_STABLE)) {
		*why = "submissions are not stable (Linux < 5.5)";
		goto fail;
	}
	probe = io_uring_get_probe_ring(&al->ring);
	if (probe == NULL) {
		*why = "no opcode probe (Linux < 5.6)";
		goto fail;
	}
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!io_uring_opcode_supported(probe, need[i].op)) {
			*why = need[i].name;
			io_uring_free_probe(probe);
			goto fail;
		}
	}
	io_uring_free_probe(probe);
	rc = io_uring_register_eventfd(&al->ring, al->lc.efd);
	if (rc < 0) {
		*why = "eventfd registration failed";
		goto fail;
	}
	/*
	 * Buffered I/O: IOSQE_ASYNC on this ring or not (uring_issue). AUTO punts on the home
	 * loop's ring only: without workers that loop serves every connection, and a copy or a
	 * readahead submission inside its io_uring_enter() delays them all; a worker loop's ring
	 * tries inline first, as io-wq threads on top of the loops compete for the same CPUs
	 * (docs/benchmarks-io-uring.md, "cold-cache.sh, stop 26").
	 */
	al->uring_punt = ac->uring_async == SCSITGT_BACKEND_AIO_URING_ASYNC_ALWAYS ||
			 (ac->uring_async == SCSITGT_BACKEND_AIO_URING_ASYNC_AUTO && al->lc.home);
	/* Every request in the kernel has its SQ entry and its CQ entry (the CQ ring is
	 * twice as large): completions cannot overflow. */
	al->depth = entries;
	return 0;

fail:
	io_uring_queue_exit(&al->ring);
	al->ring_set = false;
	return rc;
}

static void uring_teardown(struct aio_loop *al)
{
	if (al->ring_set) {
		io_uring_queue_exit(&al->ring);
		al->ring_set = false;
	}
}

/* Push what the SQ ring holds to the kernel; on failure retry from the next poll callback. */
static void uring_submit(struct aio_loop *al)
{
	int rc = scsitgt__aio_test_submit_fail(al->ac);

	if (rc == 0) {
		rc = io_uring_submit(&al->ring);
	}

	al->uring_unsubmitted = io_uring_sq_ready(&al->ring) != 0;
	if (rc >= 0 || !al->uring_unsubmitted) {
		return;
	}
	/*
	 * io_uring_enter(2) took nothing (EAGAIN: no memory for the requests; the CQ ring cannot
	 * overflow, every request has its entry). The entries stay queued; signal our own eventfd
	 * so that the loop retries on its next turn instead of waiting for a completion that may
	 * never come.
	 */
	scsitgt__log(&al->ac->log, SCSITGT_LOG_WARNING, AIO_SUBSYS,
		     "%s: io_uring submission failed (%s); retrying", al->ac->path, strerror(-rc));
	(void)eventfd_write(al->lc.efd, 1);
}

static void uring_issue(struct aio_loop *al, struct aio_req *req)
{
	struct aio_ctx *ac = al->ac;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&al->ring);
	uint64_t off = req->off + req->done;
	bool unsubmitted = al->uring_unsubmitted;

	if (sqe == NULL) {
		/* Full of entries a failed submission left: after the next completion. */
		scsitgt__aio_req_park(al, req, true);
		return;
	}
	if (unsubmitted) {
		/*
		 * al->kiov is reused by the next request, and the kernel reads an entry's iovecs
		 * when it takes the entry, not before: an entry that may wait carries no data. It
		 * is a NOP whose completion issues the request again (scsitgt__aio_req_event).
		 */
		io_uring_prep_nop(sqe);
		req->requeue = true;
	} else if (req->phase == AIO_PHASE_SYNC) {
		/* SBC-4 SYNCHRONIZE CACHE: fdatasync semantics, as the libaio engine. */
		io_uring_prep_fsync(sqe, ac->fd, IORING_FSYNC_DATASYNC);
	} else if (req->phase == AIO_PHASE_DEALLOC) {
		/* Files only (block device discards stay BLKDISCARD ioctls, see aio_submit). */
		io_uring_prep_fallocate(sqe, ac->fd,
					(req->type == SCSITGT_IO_UNMAP ? FALLOC_FL_PUNCH_HOLE :
									 FALLOC_FL_ZERO_RANGE) |
						FALLOC_FL_KEEP_SIZE,
					(off_t)req->off, (off_t)req->len);
	} else {
		unsigned int n = (unsigned int)scsitgt__aio_req_kiov(al, req);

		if (req->type == SCSITGT_IO_READ) {
			io_uring_prep_readv(sqe, ac->fd, al->kiov, n, (off_t)off);
		} else {
			io_uring_prep_writev(sqe, ac->fd, al->kiov, n, (off_t)off);
			if (req->used_dsync) {
				sqe->rw_flags = RWF_DSYNC;
			}
			/* read back from the SQE (io_uring_prep_rw() cleared rw_flags) */
			if (sqe->rw_flags & RWF_DSYNC)
				atomic_fetch_add_explicit(&ac->dsync_writes, 1,
							  memory_order_relaxed);
		}
		if (!ac->direct && al->uring_punt) {
			/*
			 * Buffered, punting (uring_setup): straight to io-wq. Without IOSQE_ASYNC
			 * the kernel first tries the request inline, in io_uring_enter() on the
			 * loop's thread: it copies the data between the page cache and the iovecs
			 * there and submits the readahead of a miss. Measured with
			 * bench/cold-cache.sh's reader (1 MiB sequential reads, cold cache, strace
			 * -T of the loop thread): the loop's io_uring_enter() took p50 231-1115 us
			 * without it, 12 us with it.
			 */
			sqe->flags |= IOSQE_ASYNC;
		}
	}
	io_uring_sqe_set_data(sqe, req);
	al->inflight++;
	uring_submit(al);
	if (!unsubmitted && al->uring_unsubmitted && !req->requeue) {
		/* This entry failed to go in with the data pointing at al->kiov: make it the NOP
		 * above (the kernel has not looked at it). */
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, req);
		req->requeue = true;
	}
}

/* Take the ring's completions in batches and finish or continue their requests. */
static void uring_reap(struct aio_loop *al)
{
	struct {
		struct aio_req *req;
		int res;
	} done[AIO_EVENT_BATCH];
	struct io_uring_cqe *cqe;
	unsigned int head;
	unsigned int n;

	if (al->uring_unsubmitted) {
		uring_submit(al);
	}
	do {
		n = 0;
		io_uring_for_each_cqe(&al->ring, head, cqe)
		{
			if (n == AIO_EVENT_BATCH) {
				break;
			}
			done[n].req = io_uring_cqe_get_data(cqe);
			done[n].res = cqe->res;
			n++;
		}
		/* Free the CQ entries before anything is issued again. */
		io_uring_cq_advance(&al->ring, n);
		for (unsigned int i = 0; i < n; i++) {
			scsitgt__aio_req_event(al, done[i].req, done[i].res);
		}
	} while (n == AIO_EVENT_BATCH);
}

const struct aio_engine scsitgt__aio_uring = {
	.name = "io_uring",
	.id = SCSITGT_BACKEND_AIO_ENGINE_IO_URING,
	.dealloc_ops = true,
	.dsync_refused_in_completion = true,
	.setup = uring_setup,
	.teardown = uring_teardown,
	.issue = uring_issue,
	.reap = uring_reap,
};
