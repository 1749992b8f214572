/* SPDX-License-Identifier: MIT */
/*
 * The shared reservations of an RBD LUN (rbd_pr.c): the store's state and its operations, for
 * the files that share them (rbd_pr_poll.c: the periodic check of the object).
 */
#ifndef SCSITGT_BACKEND_RBD_PR_INT_H
#define SCSITGT_BACKEND_RBD_PR_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/rbd_int.h"
#include "libscsitgt/pr.h"

/* The largest state read back: 256 registrations of the longest names, events, margin. */
#define PR_READ_MAX (256u * 1024)
/* How often the loop checks the watch (pr_check_cb) and reads the object (rbd_pr_poll.c). */
#define PR_CHECK_MS 500
/* How long a read of the object vouches for the copy (rbd_pr_poll.c): the staleness bound of
 * a copy that missed a notify, and how long a commit whose notify failed waits before its
 * answer. */
#define PR_POLL_LEASE_MS 2000u

enum pr_op_kind {
	PR_OP_FETCH,
	PR_OP_WRITE,
	PR_OP_NOTIFY,
	PR_OP_EVENT,  /* a notify received by the watch */
	PR_OP_WERROR, /* the watch broke */
	PR_OP_RELOAD, /* the state read after a reconnection (buf) */
	PR_OP_RESET,  /* our notify of a LOGICAL UNIT RESET came back */
	PR_OP_POLL,   /* the periodic read of the object (rbd_pr_poll.c) */
};

struct pr_op {
	struct pr_op *next;
	struct scsitgt__rbd_pr *st;
	enum pr_op_kind kind;
	rados_completion_t comp;
	rados_read_op_t rop;
	rados_write_op_t wop;
	struct scsitgt_pr_req *req;
	/* fetch: the read buffer; event: the payload (owned) */
	char *buf;
	size_t len;
	int prval;
	/* commit: the state to notify (owned by the core until the request is answered) */
	const void *data;
	/* notify: the reply */
	char *reply;
	size_t reply_len;
	uint64_t notify_id;
	/* event: sent by this very client (librados delivers a notify to its sender's watch) */
	bool own;
	/* event: announced to the core (scsitgt_lun_start_pr_delivery()): completed once done */
	bool marked;
	/* reset: the backend's reset_async() callback */
	scsitgt_done_cb reset_cb;
	void *reset_cb_arg;
	int err;
	/* poll: when it was sent and the copy's sequence then; write: when it came back */
	uint64_t issued_ms, issued_seq;
	/* To pr_aio_done (rbd_int.h): given after the op is filled in, before librados has it. */
	struct scsitgt__rbd_handover ho;
};

struct scsitgt__rbd_pr {
	struct scsitgt__rbd_ctx *rc;
	/* NULL once stopping, and once the core let go of the store (pr_detach: the LUN may be
	 * freed from then on, before the backend's close: an engine that gave up on an io of
	 * it, docs/threading.md "Teardown"). */
	struct scsitgt_lun *lun;
	/* The LUN once the store is installed, for the watch callback's mark (librados' thread),
	 * under mark_mu, which the callback holds from its read to the end of its mark; NULL
	 * before the install, once detached and once stopping: whoever sets it NULL knows that
	 * no callback uses the LUN any more when the lock is released. */
	pthread_mutex_t mark_mu;
	struct scsitgt_lun *mark_lun;
	/* The ioctx: created and destroyed on the worker thread (attach, a reconnection of the
	 * backend's client, teardown); the loop uses it under io_mu while io_ok. */
	pthread_mutex_t io_mu;
	rados_ioctx_t io;
	bool io_ok;
	char oid[96];
	uint32_t notify_timeout_ms;
	/* The watch (rados_watch2): set on the worker thread under io_mu, read by the loop's
	 * watch check under it too. */
	uint64_t cookie;
	bool watching;
	/* Worker thread only: between scsitgt__rbd_pr_disconnect() and _connected() (the
	 * client is being replaced: no re-watch on the old one). */
	bool reconnecting;
	/* The watch check (pr_check_cb, loop): every PR_CHECK_MS; the copy is called stale when
	 * the watch was last confirmed more than stale_ms ago (0: never, no bound known). */
	uv_timer_t check;
	uint64_t stale_ms;
	/* uv handles (async, check) whose close callback has not run yet */
	unsigned int open_handles;
	/* Fault injection (scsitgt_backend_rbd_set_pr_watch_fault()): the watch is gone and no
	 * re-watch starts while set; fault_job unwatches on the worker. Loop. */
	bool fault_hold, fault_queued;
	/* scsitgt_backend_rbd_set_pr_notify_fault(): commits are not notified. Loop. */
	bool fault_notify;
	struct scsitgt__rbd_job fault_job;
	/* The watch callbacks' hand-over (rbd_int.h): given before each rados_watch2 (the
	 * worker) and by each callback when it returns, taken by the callbacks and after
	 * rados_watch_flush (the worker, before it changes io or frees). */
	struct scsitgt__rbd_handover watch_ho;
	/* librados threads -> loop */
	uv_async_t async;
	pthread_mutex_t mu;
	struct pr_op *done_head, *done_tail; /* under mu */
	/* Under mu: the client is being replaced (scsitgt__rbd_pr_disconnect(), worker): the
	 * loop calls the copy stale (unsync_err: -ESHUTDOWN fenced, else unreachable) where
	 * the queue was then, after unsync_after (NULL: before the whole queue), so in order
	 * with the RELOAD that follows. A flag, not an op: it needs no memory (review34 N4). */
	bool unsync;
	int unsync_err;
	struct pr_op *unsync_after;
	unsigned int inflight; /* aio ops not yet back on the loop */
	bool stopping, rewatching;
	/* the last re-watch failed (logged once; pr_check_cb retries it) */
	bool rewatch_failed;
	/* attach, and teardown (unwatch, flush, destroy the ioctx): both on the worker, in
	 * order, before the backend's close job shuts the cluster handle down */
	struct scsitgt__rbd_job job, stop_job;
	bool attaching;
	scsitgt_done_cb attach_cb;
	void *attach_cb_arg;
	uint8_t *init_state;
	size_t init_len;
	bool cleared; /* attach found every gateway gone with APTPL off and cleared the state */
	/* resets from other gateways applied here whose acknowledgement waits (pr_reset_applied) */
	struct pr_reset_ack *reset_acks;
	/* The copy's lease (scsitgt__rbd_pr_lease()): until when the watch (0: no bound) and the
	 * last read of the object (0: none yet) vouch for it; a read in flight; its failure
	 * logged. Loop. */
	uint64_t watch_lease_ms, poll_lease_ms;
	bool polling, poll_failed;
	/* Before the attach's re-read (worker, read by the loop once the job is done). */
	uint64_t init_issued_ms;
	/* Commits stored whose notify reached nobody, answered at their time (the timer). */
	uv_timer_t later;
	struct pr_later *later_head, *later_tail;
};

/* A LOGICAL UNIT RESET or a reservation state notified by another gateway, acknowledged once
 * applied here (its aborts over). */
struct pr_reset_ack {
	struct pr_reset_ack *next;
	struct scsitgt__rbd_pr *st; /* NULL once the state stopped: nothing to acknowledge */
	uint64_t notify_id;
};

/* The lease's clock (libscsitgt/pr.h): CLOCK_MONOTONIC in ms, coarse. */
uint64_t scsitgt__rbd_pr_clock_ms(void);
/* Log @fmt ("%s/%s: %s: %s": pool, object, @what, strerror(@err)). */
void scsitgt__rbd_pr_log(struct scsitgt__rbd_pr *st, enum scsitgt_log_level level, const char *fmt,
			 const char *what, int err);
struct pr_op *scsitgt__rbd_pr_op_create(struct scsitgt__rbd_pr *st, enum pr_op_kind kind,
					struct scsitgt_pr_req *req);
void scsitgt__rbd_pr_op_free(struct pr_op *op);
/* The state's APTPL bit, whether it holds anything, and its change sequence; false when it is
 * not a state this code can read. */
bool scsitgt__rbd_pr_peek(const uint8_t *b, size_t len, bool *aptpl, bool *empty, uint64_t *seq);

/* rbd_pr_poll.c. Loop: a read of the object (at most one in flight) if the copy is watched. */
void scsitgt__rbd_pr_poll(struct scsitgt__rbd_pr *st);
/* Loop: its result: a change the watch missed applied, the lease renewed. */
void scsitgt__rbd_pr_poll_done(struct pr_op *op);
/* Loop: a read of the object started at @issued_ms, when the copy had @issued_seq, vouches
 * for the copy: its state (@buf, @len; 0: empty) applied if newer, or if the object went
 * back under the copy (scsitgt__lun_resync_pr_state()), and the lease renewed. */
void scsitgt__rbd_pr_resynced(struct scsitgt__rbd_pr *st, const void *buf, size_t len,
			      uint64_t issued_ms, uint64_t issued_seq);
/* Loop: the copy's lease: the later of what the watch (st->watch_lease_ms) and the reads
 * (st->poll_lease_ms) vouch for. */
void scsitgt__rbd_pr_lease(struct scsitgt__rbd_pr *st);
/* Loop: answer @req (a stored commit whose notify reached nobody) GOOD once every other
 * gateway's copy applied it or its lease ran out: PR_POLL_LEASE_MS after @written_ms. */
void scsitgt__rbd_pr_commit_later(struct scsitgt__rbd_pr *st, struct scsitgt_pr_req *req,
				  uint64_t written_ms);
/* Loop: answer (@answer) or drop (the LUN let go of the store) every commit still waiting. */
void scsitgt__rbd_pr_commit_flush(struct scsitgt__rbd_pr *st, bool answer);

#endif
