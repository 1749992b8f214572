/* SPDX-License-Identifier: MIT */
/*
 * Internal to the aio backend: the context shared by its files (aio.c: options, probes,
 * geometry, open, close, submit; aio_req.c: the request state machine after submit, errno
 * mapping; aio_hooks.c: the test hooks; aio_libaio.c and aio_uring.c: the two kernel engines
 * behind struct aio_engine). See the comment at the top of aio.c.
 */
#ifndef SCSITGT_BACKEND_AIO_INT_H
#define SCSITGT_BACKEND_AIO_INT_H

#include <libaio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <uv.h>

#include "backend/loop_ctx.h"
#include "libscsitgt/backend_aio.h"
#include "scsitgt_config.h"
#include "util/log.h"

#if SCSITGT_HAVE_URING
#include <liburing.h>
#endif

#define AIO_SUBSYS "aio"
/* Events taken from the kernel per io_getevents() call or per batch of CQ entries. */
#define AIO_EVENT_BATCH 64
/* Most iovecs in one iocb (UIO_MAXIOV); longer lists are bounced. */
#define AIO_IOV_MAX 1024

/* What an in-flight request is waiting for. */
enum aio_phase {
	/* The read or write (possibly a resubmitted remainder). */
	AIO_PHASE_RW,
	/* The fdatasync of a FLUSH, or the one after a FUA write (no RWF_DSYNC). */
	AIO_PHASE_SYNC,
	/* UNMAP or WRITE ZEROES as an IORING_OP_FALLOCATE (io_uring engine). */
	AIO_PHASE_DEALLOC,
};

/* Per-io private area (io_ctx_size): the iocb and the progress of one io. */
struct aio_req {
	/* First member: the kernel hands back this pointer in io_event.obj. */
	struct iocb iocb;
	struct scsitgt_io *io;
	/* Next request waiting for a kernel slot. */
	struct aio_req *next;
	enum scsitgt_io_type type;
	enum aio_phase phase;
	/* A FUA write whose durability needs a FLUSH after the write. */
	bool sync_after;
	/* The iocb carried RWF_DSYNC. */
	bool used_dsync;
	/* io_uring: the write came back -EINVAL / -EOPNOTSUPP with RWF_DSYNC and goes again
	 * without it: its success proves the flag refused (scsitgt__aio_req_event). */
	bool dsync_probe;
	/* Byte range of the io and how much of it is done. */
	uint64_t off;
	size_t len;
	size_t done;
	/* The data: the io's iovecs, or the bounce buffer. */
	const struct iovec *iov;
	int iovcnt;
	void *bounce;
	struct iovec bounce_iov;
	unsigned int stalls;
	/* io_uring: the entry went in as a NOP after a failed submission; issue it again. */
	bool requeue;
};

struct aio_ctx;

/*
 * What one loop submits through: the engine's kernel context (a libaio io_context or an
 * io_uring ring), signalling the eventfd of the loop's context (loop_ctx.h: lc.efd, watched on
 * that loop), and the requests of that loop. The home loop's is made at create; another
 * loop's at its first submit (SCSITGT_BACKEND_MULTI_LOOP), and torn down on that loop when
 * the context closes. Used only on its loop's thread; lc.loop and ac never change.
 */
struct aio_loop {
	/* First: the loop, its eventfd and handles, closing (loop_ctx.h). */
	struct scsitgt__loop_ctx lc;
	struct aio_ctx *ac;
	/* libaio */
	io_context_t ioctx;
	bool ioctx_set;
#if SCSITGT_HAVE_URING
	struct io_uring ring;
	bool ring_set;
	/* A submission failed: entries wait in the SQ ring for the next io_uring_enter(). */
	bool uring_unsubmitted;
	/* Buffered reads and writes carry IOSQE_ASYNC (ac->uring_async for this loop). */
	bool uring_punt;
#endif
	/* Requests the kernel context holds (the queue depth, or less for another loop's
	 * context when the kernel refused that many: aio_loop_setup). */
	unsigned int depth;
	unsigned int inflight;
	/* Read and write completions the kernel posted on this loop, for the tests (aio_hooks.h);
	 * per loop and written only by it, so the count costs a completion no shared write. */
	atomic_ulong rw_events;
	/* Requests waiting for a free kernel slot, FIFO. */
	struct aio_req *pend_head;
	struct aio_req *pend_tail;
	/* Scratch iovecs for a submission: the kernel copies them during the call. */
	struct iovec kiov[AIO_IOV_MAX];
};

/* A kernel I/O engine (aio_libaio.c, aio_uring.c). */
struct aio_engine {
	/* For logs: "libaio", "io_uring". */
	const char *name;
	enum scsitgt_backend_aio_engine id;
	/* UNMAP and WRITE ZEROES on files are engine operations (AIO_PHASE_DEALLOC). */
	bool dealloc_ops;
	/* A refused RWF_DSYNC shows in the completion (-EINVAL / -EOPNOTSUPP). */
	bool dsync_refused_in_completion;
	/*
	 * Set up the kernel context of @al (al->lc.efd exists) for @al->depth requests; may lower
	 * al->depth to what the engine takes. On failure nothing is left and *why says what the
	 * kernel lacks.
	 */
	int (*setup)(struct aio_loop *al, const char **why);
	/* Release the kernel context (nothing in flight any more). */
	void (*teardown)(struct aio_loop *al);
	/* Give the kernel @req in its phase (AIO_PHASE_SYNC only while ac->fdsync_ok). */
	void (*issue)(struct aio_loop *al, struct aio_req *req);
	/* The eventfd fired (it is read already): take every completion. */
	void (*reap)(struct aio_loop *al);
};

extern const struct aio_engine scsitgt__aio_libaio;
#if SCSITGT_HAVE_URING
extern const struct aio_engine scsitgt__aio_uring;
#endif

struct aio_ctx {
	/* The LUN's home loop (the options' loop). */
	uv_loop_t *loop;
	struct scsitgt__logger log;
	char *path;
	int fd;
	const struct aio_engine *engine;
	/* The engine the options ask for (home's context chooses at create). */
	enum scsitgt_backend_aio_engine want_engine;
	/* Every loop's submission context (struct aio_loop): home's made at create and watched
	 * from open() on, another loop's at its first submit. */
	struct scsitgt__loop_ctxs loops;
	bool blockdev;
	dev_t rdev; /* the device (block devices) or the file's device (files) */
	bool read_only;
	bool write_through;
	bool direct;
	/* O_DIRECT alignment of buffer addresses and lengths, and of file offsets. */
	uint32_t mem_align;
	uint32_t off_align;
	/* Block devices: logical and physical block sizes. */
	uint32_t dev_lbs;
	uint32_t dev_pbs;
	bool opened;
	uint32_t block_size;
	/* The blocks of the medium the LUN may use: the medium's, at most limit_blocks. Written
	 * on home (open, get_size, resize), read on every loop; an io past it fails MEDIUM ERROR
	 * (aio_submit). */
	_Atomic uint64_t num_blocks;
	/* The LUN's num_blocks given at open when it was below the medium's (0: the whole
	 * medium); moved only by resize() (backend_aio.h, "A LUN smaller than its medium"). */
	uint64_t limit_blocks;
	bool can_unmap;
	bool can_write_zeroes;
	/* What the kernel turned out to accept (assumed until refused, on any loop). */
	atomic_bool rwf_dsync_ok;
	atomic_bool fdsync_ok;
	/* flushes issued (AIO_PHASE_SYNC), for the tests (aio_hooks.h) */
	atomic_ulong syncs;
	/* writes handed to the kernel with RWF_DSYNC in their iocb or SQE, for the tests */
	atomic_ulong dsync_writes;
	/*
	 * The first -EIO or -ENOSPC a flush-class request got (aio.c, "Lost writes"; kept by
	 * aio_req.c): every later FLUSH and FUA write fails with it until the LUN is opened
	 * again. 0: none. Any loop.
	 */
	atomic_int sync_error;
	/* Test hook (aio_hooks.h): the next flush-class request ends with this error. */
	atomic_int sync_error_inject;
	/* Another loop's context could not be set up: logged once as an ERROR (any loop). */
	atomic_bool loop_setup_failed;
	/* Test hook (aio_hooks.h): another loop's context setup is refused above this depth as
	 * the kernel refuses one beyond fs.aio-max-nr (0: no limit). */
	unsigned int test_loop_depth_limit;
	/* Test hook (aio_hooks.h): the next test_submit_fail_n submissions fail with this. */
	int test_submit_err;
	atomic_int test_submit_fail_n;
	/* Test hook (aio_hooks.h): the next test_event_inject_n completions report this. */
	long test_event_inject_res;
	atomic_int test_event_inject_n;
	unsigned int queue_depth;
	/* io_uring, buffered: which loops' rings punt to io-wq (see uring_setup). */
	enum scsitgt_backend_aio_uring_async uring_async;
	bool closing;
	scsitgt_done_cb close_cb;
	void *close_cb_arg;
};

static inline uint32_t aio_max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Start a request submit prepared: issue it, or queue it while the kernel context is full. */
void scsitgt__aio_req_start(struct aio_loop *al, struct aio_req *req);
/* Issue as many requests waiting for a kernel slot as the kernel takes. */
void scsitgt__aio_drain_pending(struct aio_loop *al);
/* Copy the first @len bytes into (@in) or out of the request's bounce buffer. */
void scsitgt__aio_bounce_copy(struct aio_req *req, const struct iovec *iov, int iovcnt, bool in,
			      size_t len);
/* Fill al->kiov with the part of the request's data not done yet; returns the count. */
int scsitgt__aio_req_kiov(struct aio_loop *al, const struct aio_req *req);
/* Queue a request behind the others waiting for a kernel slot; @front for a retry. */
void scsitgt__aio_req_park(struct aio_loop *al, struct aio_req *req, bool front);
/* Complete the request's io with @status (0 or a negative errno, mapped). */
void scsitgt__aio_req_finish(struct aio_ctx *ac, struct aio_req *req, int status);
/* Whether @len bytes of @iov go to the kernel as they are (else they are bounced). */
bool scsitgt__aio_iov_usable(const struct aio_ctx *ac, const struct iovec *iov, int iovcnt,
			     size_t len);
/* One kernel completion with result @res (bytes, or a negative errno). */
void scsitgt__aio_req_event(struct aio_loop *al, struct aio_req *req, long res);
/* The kernel refuses RWF_DSYNC: later FUA writes are followed by a flush (logged once). */
void scsitgt__aio_dsync_refused(struct aio_ctx *ac);
/* RWF_DSYNC refused at submission: this write goes again, followed by a flush, and so do later
 * FUA writes. */
void scsitgt__aio_req_dsync_refused(struct aio_loop *al, struct aio_req *req);
/* Test hook (aio_hooks.h): the error a submission to the kernel fails with, 0 for none. */
int scsitgt__aio_test_submit_fail(struct aio_ctx *ac);
/* Synchronous fdatasync on the loop: the documented fallback of old kernels. */
void scsitgt__aio_req_sync_now(struct aio_ctx *ac, struct aio_req *req);

#endif /* SCSITGT_BACKEND_AIO_INT_H */
