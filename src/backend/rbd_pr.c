/* SPDX-License-Identifier: MIT */
/*
 * Persistent reservations of an RBD LUN shared by every gateway that exports the image: the
 * cluster store of include/libscsitgt/pr.h on a RADOS object next to the image (docs/rbd.md,
 * "Persistent reservations across gateways").
 *
 * - The object "scsitgt_pr.<image id>" in the image's pool and namespace holds the shared
 *   state (format version 2 of pr.h); its RADOS object version is the store's version.
 * - fetch: rados_aio_read_op_operate (read the whole object; the completion's version).
 * - commit: rados_aio_write_op_operate of write_full guarded by rados_write_op_assert_version
 *   (or an exclusive create when the object is missing), so that a commit made on an older
 *   version fails (-ERANGE/-EOVERFLOW/-EEXIST, reported as -ESTALE); then rados_aio_notify
 *   with the state as payload and a bounded timeout. Every gateway watches the object
 *   (rados_watch2); its watch callback hands the payload to the loop, which applies it
 *   (scsitgt_lun_apply_pr_state) and only then acknowledges the notify: when the notify
 *   completes, every gateway that acknowledged enforces the change.
 * - librados completes on its own threads: completions and watch events are queued under a
 *   mutex and the loop is woken through a uv_async_t. Blocking calls (attach: creating the
 *   object, the first read, rados_watch2; re-watching; unwatching) run on the backend's worker
 *   thread (scsitgt__rbd_queue_work), never on the loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/rbd_int.h"
#include "backend/rbd_pr_int.h"
#include "core/pr.h"
#include "libscsitgt/lun.h"
#include "libscsitgt/pr.h"
#include "libscsitgt/testing.h"
#include "util/be.h"

/* Payload of the attach probe (not a state: receivers only acknowledge it). */
static const char probe_payload[] = "scsitgt-pr-probe";
/* A LOGICAL UNIT RESET through one gateway (scsitgt__rbd_pr_reset): the others apply it. */
static const char reset_payload[] = "scsitgt-lun-reset";

/* The lease's clock (libscsitgt/pr.h): CLOCK_MONOTONIC in ms, coarse as librados' own clock
 * for the watch's age. */
uint64_t scsitgt__rbd_pr_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void scsitgt__rbd_pr_log(struct scsitgt__rbd_pr *st, enum scsitgt_log_level level, const char *fmt,
			 const char *what, int err)
{
	scsitgt__log(&st->rc->log, level, SCSITGT__RBD_SUBSYS, fmt, st->rc->pool, st->oid, what,
		     strerror(err < 0 ? -err : err));
}

/* librados thread: hand @op to the loop. */
static void pr_post(struct scsitgt__rbd_pr *st, struct pr_op *op)
{
	pthread_mutex_lock(&st->mu);
	op->next = NULL;
	if (st->done_tail)
		st->done_tail->next = op;
	else
		st->done_head = op;
	st->done_tail = op;
	pthread_mutex_unlock(&st->mu);
	uv_async_send(&st->async);
}

static void pr_aio_done(rados_completion_t c, void *arg)
{
	struct pr_op *op = arg;

	(void)c;
	scsitgt__rbd_handover_take(&op->ho);
	pr_post(op->st, op);
}

static void pr_watch_cb(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier_id,
			void *data, size_t data_len)
{
	struct scsitgt__rbd_pr *st = arg;
	struct scsitgt_lun *lun;
	struct pr_op *op;

	(void)handle;
	scsitgt__rbd_handover_take(&st->watch_ho);
	op = calloc(1, sizeof(*op));
	if (op && data_len) {
		op->buf = malloc(data_len);
		if (op->buf)
			memcpy(op->buf, data, data_len);
	}
	if (op == NULL || (data_len && op->buf == NULL)) {
		/* No memory to carry it: acknowledge at once; the next fetch catches up. */
		if (op)
			free(op);
		rados_notify_ack(st->io, st->oid, notify_id, st->cookie, NULL, 0);
		scsitgt__rbd_handover_give(&st->watch_ho);
		return;
	}
	op->st = st;
	op->kind = PR_OP_EVENT;
	op->len = data_len;
	op->notify_id = notify_id;
	op->own = notifier_id == rados_get_instance_id(rados_ioctx_get_cluster(st->io));
	/* Before the loop can see it: from now the core holds the commands a reservation could
	 * refuse until the loop has applied it (pr_async_cb), however late the loop runs. Under
	 * mark_mu: the LUN is not let go of (pr_set_mark_lun) in the middle of the mark. */
	pthread_mutex_lock(&st->mark_mu);
	lun = st->mark_lun;
	op->marked = lun && scsitgt_lun_start_pr_delivery(lun) == 0;
	pthread_mutex_unlock(&st->mark_mu);
	pr_post(st, op);
	scsitgt__rbd_handover_give(&st->watch_ho);
}

static void pr_watch_err_cb(void *arg, uint64_t cookie, int err)
{
	struct scsitgt__rbd_pr *st = arg;
	struct pr_op *op;

	(void)cookie;
	scsitgt__rbd_handover_take(&st->watch_ho);
	op = calloc(1, sizeof(*op));
	if (op) {
		op->st = st;
		op->kind = PR_OP_WERROR;
		op->err = err;
		pr_post(st, op);
	}
	scsitgt__rbd_handover_give(&st->watch_ho);
}

struct pr_op *scsitgt__rbd_pr_op_create(struct scsitgt__rbd_pr *st, enum pr_op_kind kind,
					struct scsitgt_pr_req *req)
{
	struct pr_op *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return NULL;
	op->st = st;
	op->kind = kind;
	op->req = req;
	if (rados_aio_create_completion2(op, pr_aio_done, &op->comp) < 0) {
		free(op);
		return NULL;
	}
	return op;
}

void scsitgt__rbd_pr_op_free(struct pr_op *op)
{
	if (op->comp)
		rados_aio_release(op->comp);
	if (op->rop)
		rados_release_read_op(op->rop);
	if (op->wop)
		rados_release_write_op(op->wop);
	if (op->reply)
		rados_buffer_free(op->reply);
	free(op->buf);
	free(op);
}

/* ---- the store's callbacks (loop) ---- */

/* A request that could not be started: answer it from the loop, never from inside the call. */
static void pr_post_error(struct scsitgt__rbd_pr *st, enum pr_op_kind kind,
			  struct scsitgt_pr_req *req, int err)
{
	struct pr_op *op = calloc(1, sizeof(*op));

	if (op == NULL) {
		/* No memory even for that: answering here breaks the contract less than never. */
		if (kind == PR_OP_FETCH)
			scsitgt_pr_req_complete_fetch(req, -ENOMEM, NULL, 0, 0);
		else
			scsitgt_pr_req_complete_commit(req, -ENOMEM);
		return;
	}
	op->st = st;
	op->kind = kind;
	op->req = req;
	op->err = err;
	pr_post(st, op);
}

/* After handing @op to librados with result @r: count it in flight, or free it (NULL if it
 * could not be allocated) and answer @req with the error on the loop. */
static void pr_op_submitted(struct scsitgt__rbd_pr *st, struct pr_op *op, enum pr_op_kind kind,
			    struct scsitgt_pr_req *req, int r)
{
	if (r == 0) {
		st->inflight++;
		return;
	}
	if (op)
		scsitgt__rbd_pr_op_free(op);
	pr_post_error(st, kind, req, r);
}

static void pr_fetch(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req)
{
	struct scsitgt__rbd_pr *st = arg;
	struct pr_op *op = scsitgt__rbd_pr_op_create(st, PR_OP_FETCH, req);
	int r = -ENOMEM;

	(void)lun;
	if (op)
		op->buf = malloc(PR_READ_MAX);
	if (op && op->buf) {
		op->rop = rados_create_read_op();
		if (op->rop) {
			rados_read_op_read(op->rop, 0, PR_READ_MAX, op->buf, &op->len, &op->prval);
			scsitgt__rbd_handover_give(&op->ho);
			pthread_mutex_lock(&st->io_mu);
			r = st->io_ok ? rados_aio_read_op_operate(op->rop, st->io, op->comp,
								  st->oid, 0) :
					-ENOTCONN;
			pthread_mutex_unlock(&st->io_mu);
		}
	}
	pr_op_submitted(st, op, PR_OP_FETCH, req, r);
}

static void pr_commit(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
		      const void *data, size_t len, uint64_t version)
{
	struct scsitgt__rbd_pr *st = arg;
	struct pr_op *op = scsitgt__rbd_pr_op_create(st, PR_OP_WRITE, req);
	int r = -ENOMEM;

	(void)lun;
	if (op) {
		op->data = data;
		op->len = len;
		op->wop = rados_create_write_op();
	}
	if (op && op->wop) {
		/* Compare and swap on the object version (version 0: the object is missing). */
		if (version == 0)
			rados_write_op_create(op->wop, LIBRADOS_CREATE_EXCLUSIVE, NULL);
		else
			rados_write_op_assert_version(op->wop, version);
		rados_write_op_write_full(op->wop, data, len);
		scsitgt__rbd_handover_give(&op->ho);
		pthread_mutex_lock(&st->io_mu);
		r = st->io_ok ? rados_aio_write_op_operate(op->wop, st->io, op->comp, st->oid, NULL,
							   0) :
				-ENOTCONN;
		pthread_mutex_unlock(&st->io_mu);
	}
	pr_op_submitted(st, op, PR_OP_WRITE, req, r);
}

/* Any thread: the copy's change sequence before a read made to resync it (0 without a LUN):
 * a read that finds an older one found the object gone back under the copy. Under mark_mu
 * (the LUN is not let go of meanwhile), as the watch callback reads it. */
static uint64_t pr_copy_seq(struct scsitgt__rbd_pr *st)
{
	uint64_t seq = 0;

	pthread_mutex_lock(&st->mark_mu);
	if (st->mark_lun)
		seq = scsitgt__lun_pr_seq(st->mark_lun);
	pthread_mutex_unlock(&st->mark_mu);
	return seq;
}

/*
 * Loop: a read made after watching again (a re-watch, a reconnection), sent when the copy was
 * at @issued_seq. Authoritative, as the periodic read (scsitgt__lun_resync_pr_state()): a
 * newer state is applied as a notify's, and an object gone back under the copy (deleted,
 * replaced by an older one) replaces it; then the copy is in sync, unless the watch fault
 * holds it stale (testing.h).
 */
static void pr_resync_read(struct scsitgt__rbd_pr *st, const void *buf, size_t len,
			   uint64_t issued_seq)
{
	int r = scsitgt__lun_resync_pr_state(st->lun, buf, len, issued_seq);

	if (r < 0) {
		scsitgt__rbd_pr_log(st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s", "apply", r);
		return;
	}
	if (r > 0)
		scsitgt__log(&st->rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: watched again: the object differs from the copy: applied "
			     "from the object",
			     st->rc->pool, st->oid);
	if (!st->fault_hold)
		scsitgt_lun_set_pr_sync(st->lun, SCSITGT_PR_SYNCED);
}

/* Loop: the LUN the watch callback marks (NULL: none). Once it returns with NULL, no callback
 * uses the LUN it had. */
static void pr_set_mark_lun(struct scsitgt__rbd_pr *st, struct scsitgt_lun *lun)
{
	pthread_mutex_lock(&st->mark_mu);
	st->mark_lun = lun;
	pthread_mutex_unlock(&st->mark_mu);
}

/*
 * The core let go of the store: replaced or removed (scsitgt_lun_set_pr_cluster(), our own
 * stop), or the LUN's state freed (an engine that gave up on an io of the LUN at its shutdown
 * frees the LUN once the backend gives the io back, before the backend's close: review34 D1).
 * Nothing here touches the LUN again: no watch mark, no lease or sync state from the check,
 * no delivery applied. The watch itself and the object stay until the backend's close
 * (scsitgt__rbd_pr_stop).
 */
static void pr_detach(void *arg, struct scsitgt_lun *lun)
{
	struct scsitgt__rbd_pr *st = arg;

	(void)lun;
	/* its requests went with it */
	scsitgt__rbd_pr_commit_flush(st, false);
	st->lun = NULL;
	pr_set_mark_lun(st, NULL);
	uv_timer_stop(&st->check);
	if (!st->stopping)
		scsitgt__log(&st->rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
			     "%s/%s: the LUN let go of its shared reservations before the "
			     "backend's close: they are not used any more",
			     st->rc->pool, st->oid);
}

static void pr_recheck(void *arg, struct scsitgt_lun *lun);

static const struct scsitgt_pr_cluster_ops pr_ops = {
	.size = sizeof(struct scsitgt_pr_cluster_ops),
	.fetch = pr_fetch,
	.commit = pr_commit,
	.detach = pr_detach,
	.recheck = pr_recheck,
};

/* ---- completions on the loop ---- */

static void pr_rewatch(struct scsitgt__rbd_pr *st);
static void pr_unsynced(struct scsitgt__rbd_pr *st, enum scsitgt_pr_sync state);

static void pr_fetch_done(struct pr_op *op)
{
	int r = op->err;
	uint64_t ver = 0;

	if (r == 0)
		r = rados_aio_get_return_value(op->comp);
	if (r >= 0) {
		ver = rados_aio_get_version(op->comp);
		r = op->prval < 0 ? op->prval : 0;
	}
	if (r == -ENOENT) {
		/* Deleted (by an administrator): an empty state, created again by the commit. */
		scsitgt_pr_req_complete_fetch(op->req, 0, NULL, 0, 0);
	} else if (r < 0) {
		scsitgt__rbd_pr_log(op->st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s", "read", r);
		scsitgt_pr_req_complete_fetch(op->req, r, NULL, 0, 0);
	} else if (op->len >= PR_READ_MAX) {
		scsitgt__rbd_pr_log(op->st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s", "read", EFBIG);
		scsitgt_pr_req_complete_fetch(op->req, -EFBIG, NULL, 0, 0);
	} else {
		scsitgt_pr_req_complete_fetch(op->req, 0, op->buf, op->len, ver);
	}
}

static void pr_write_done(struct pr_op *op)
{
	struct scsitgt__rbd_pr *st = op->st;
	struct pr_op *nop;
	int r = op->err;

	if (r == 0)
		r = rados_aio_get_return_value(op->comp);
	if (r == -ERANGE || r == -EOVERFLOW || r == -EEXIST) {
		/* The object changed since our fetch (assert_version), or appeared. */
		scsitgt_pr_req_complete_commit(op->req, -ESTALE);
		return;
	}
	if (r < 0) {
		scsitgt__rbd_pr_log(st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s", "write", r);
		scsitgt_pr_req_complete_commit(op->req, r);
		return;
	}
	/* Stored. Tell the other gateways and wait (bounded) for them to apply it. */
	nop = scsitgt__rbd_pr_op_create(st, PR_OP_NOTIFY, op->req);
	r = -ENOMEM;
	if (nop) {
		nop->issued_ms = scsitgt__rbd_pr_clock_ms();
		scsitgt__rbd_handover_give(&nop->ho);
		pthread_mutex_lock(&st->io_mu);
		r = st->fault_notify ? -ENOTCONN :
		    st->io_ok ? rados_aio_notify(st->io, st->oid, nop->comp, op->data, (int)op->len,
						 st->notify_timeout_ms, &nop->reply,
						 &nop->reply_len) :
				-ENOTCONN;
		pthread_mutex_unlock(&st->io_mu);
	}
	if (r < 0) {
		if (nop)
			scsitgt__rbd_pr_op_free(nop);
		scsitgt__rbd_pr_log(st, SCSITGT_LOG_WARNING, "%s/%s: %s: %s", "notify", r);
		/* The state is stored: the command succeeded, once the others read it or stopped
		 * trusting their copies (rbd_pr_poll.c; reviewh F1). */
		scsitgt__rbd_pr_commit_later(st, op->req, scsitgt__rbd_pr_clock_ms());
		return;
	}
	st->inflight++;
}

static void pr_notify_done(struct pr_op *op)
{
	struct scsitgt__rbd_pr *st = op->st;
	int r = rados_aio_get_return_value(op->comp);

	if (r < 0) {
		struct notify_ack_t *acks = NULL;
		struct notify_timeout_t *tos = NULL;
		size_t nacks = 0, ntos = 0;

		if (op->reply && rados_decode_notify_response(op->reply, op->reply_len, &acks,
							      &nacks, &tos, &ntos) == 0) {
			scsitgt__log(&st->rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
				     "%s/%s: reservation change stored; %zu gateway(s) did not "
				     "acknowledge it within %" PRIu32 " ms (%zu did): a dead "
				     "gateway's watch lingers until Ceph's watch timeout",
				     st->rc->pool, st->oid, ntos, st->notify_timeout_ms, nacks);
			rados_free_notify_response(acks, nacks, tos);
		} else {
			/* Failed as a whole (this client blocklisted between its write and its
			 * notify...): nobody may have heard of it (rbd_pr_poll.c; reviewh F1). */
			scsitgt__rbd_pr_log(st, SCSITGT_LOG_WARNING, "%s/%s: %s: %s", "notify", r);
			scsitgt__rbd_pr_commit_later(st, op->req, op->issued_ms);
			return;
		}
	}
	/* Stored either way: the command succeeded. A gateway that did not acknowledge within
	 * the notify's timeout (longer than PR_POLL_LEASE_MS) read it or stopped trusting its
	 * copy meanwhile. */
	scsitgt_pr_req_complete_commit(op->req, 0);
}

static void pr_ack(struct scsitgt__rbd_pr *st, uint64_t notify_id)
{
	pthread_mutex_lock(&st->io_mu);
	if (st->io_ok)
		rados_notify_ack(st->io, st->oid, notify_id, st->cookie, NULL, 0);
	pthread_mutex_unlock(&st->io_mu);
}

/* Home: the reset's unit attention is on every nexus here (scsitgt_lun_apply_reset_async()):
 * now the gateway that started it may answer its LOGICAL UNIT RESET. */
static void pr_reset_applied(void *arg, int status)
{
	struct pr_reset_ack *a = arg, **pp;
	struct scsitgt__rbd_pr *st = a->st;

	(void)status;
	if (st) {
		for (pp = &st->reset_acks; *pp != a; pp = &(*pp)->next)
			;
		*pp = a->next;
		pr_ack(st, a->notify_id);
	}
	free(a);
}

/* Home: a reset from another gateway. 0 when the acknowledgement is left to
 * pr_reset_applied(); -errno when the caller acknowledges now (the reset applied without a
 * callback: no memory). */
static int pr_reset_from_peer(struct scsitgt__rbd_pr *st, uint64_t notify_id)
{
	struct pr_reset_ack *a = malloc(sizeof(*a));

	if (a) {
		a->st = st;
		a->notify_id = notify_id;
		a->next = st->reset_acks;
		st->reset_acks = a;
		if (scsitgt_lun_apply_reset_async(st->lun, pr_reset_applied, a) == 0)
			return 0;
		st->reset_acks = a->next;
		free(a);
	}
	scsitgt_lun_apply_reset(st->lun);
	return -ENOMEM;
}

static void pr_event_done(struct pr_op *op)
{
	struct scsitgt__rbd_pr *st = op->st;

	/* Apply first, acknowledge after: the notifier's command completes once we enforce
	 * it. The attach probe is no state (-EINVAL): only acknowledged. A LOGICAL UNIT RESET
	 * through another gateway: its unit attention and aborts here too (SAM-5 §6.3.3), before
	 * the acknowledgement that lets the other gateway answer the reset: with worker loops
	 * the unit attentions are set after the aborts came back from every loop, so the
	 * acknowledgement waits for that (pr_reset_applied). */
	if (st->lun && op->len == sizeof(reset_payload) - 1 &&
	    memcmp(op->buf, reset_payload, op->len) == 0) {
		if (!op->own) {
			scsitgt__log(&st->rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
				     "%s/%s: logical unit reset through another gateway",
				     st->rc->pool, st->rc->image_name);
			if (pr_reset_from_peer(st, op->notify_id) == 0)
				return;
		}
	} else if (st->lun && op->len &&
		   (op->len != sizeof(probe_payload) - 1 ||
		    memcmp(op->buf, probe_payload, op->len) != 0)) {
		/* A PREEMPT AND ABORT: acknowledged once the tasks it aborted here left their
		 * backends (SPC-5 §5.13.11.5; pr_reset_applied), reviewh F7. */
		struct pr_reset_ack *a = malloc(sizeof(*a));
		int r = -ENOMEM;

		if (a) {
			a->st = st;
			a->notify_id = op->notify_id;
			a->next = st->reset_acks;
			st->reset_acks = a;
			r = scsitgt_lun_apply_pr_state_async(st->lun, op->buf, op->len,
							     pr_reset_applied, a);
			if (r == 0)
				return;
			st->reset_acks = a->next;
			free(a);
		}
		if (r == -ENOMEM)
			r = scsitgt_lun_apply_pr_state(st->lun, op->buf, op->len);
		if (r < 0)
			scsitgt__rbd_pr_log(st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s", "apply", r);
	}
	pr_ack(st, op->notify_id);
}

/* Loop: what librados handed over so far, and the reconnection's mark in it (*@unsync, its
 * error and the op it follows; NULL @unsync: dropped). */
static struct pr_op *pr_take(struct scsitgt__rbd_pr *st, bool *unsync, int *unsync_err,
			     struct pr_op **unsync_after)
{
	struct pr_op *list;

	pthread_mutex_lock(&st->mu);
	list = st->done_head;
	st->done_head = st->done_tail = NULL;
	if (unsync) {
		*unsync = st->unsync;
		*unsync_err = st->unsync_err;
		*unsync_after = st->unsync_after;
	}
	st->unsync = false;
	st->unsync_after = NULL;
	pthread_mutex_unlock(&st->mu);
	return list;
}

/* Loop: the client is replaced: fenced (its ios refused by the backend), else the cluster is
 * out of reach until the new one is up. */
static void pr_unsync_apply(struct scsitgt__rbd_pr *st, int err)
{
	if (st->lun)
		scsitgt_lun_set_pr_sync(st->lun, err == -ESHUTDOWN ? SCSITGT_PR_FENCED :
								     SCSITGT_PR_UNREACHABLE);
}

static void pr_async_cb(uv_async_t *h)
{
	struct scsitgt__rbd_pr *st = h->data;
	struct pr_op *unsync_after;
	int unsync_err;
	bool unsync;
	struct pr_op *list = pr_take(st, &unsync, &unsync_err, &unsync_after);

	if (unsync && unsync_after == NULL)
		pr_unsync_apply(st, unsync_err);
	while (list) {
		struct pr_op *op = list;

		list = op->next;
		if (op->comp)
			st->inflight--;
		switch (op->kind) {
		case PR_OP_FETCH:
			pr_fetch_done(op);
			break;
		case PR_OP_WRITE:
			pr_write_done(op);
			break;
		case PR_OP_NOTIFY:
			pr_notify_done(op);
			break;
		case PR_OP_POLL:
			scsitgt__rbd_pr_poll_done(op);
			break;
		case PR_OP_EVENT:
			pr_event_done(op);
			/* applied (or no state): the commands held for it go */
			if (op->marked && st->lun)
				scsitgt_lun_complete_pr_delivery(st->lun);
			break;
		case PR_OP_RESET:
			if (op->err == 0 && rados_aio_get_return_value(op->comp) < 0)
				scsitgt__rbd_pr_log(
					st, SCSITGT_LOG_WARNING,
					"%s/%s: %s: %s (a gateway did not acknowledge the reset)",
					"reset notify", rados_aio_get_return_value(op->comp));
			op->reset_cb(op->reset_cb_arg, op->err);
			break;
		case PR_OP_WERROR:
			/* The OSD dropped the watch (or this client is blocklisted): watch again. */
			scsitgt__rbd_pr_log(st, SCSITGT_LOG_WARNING, "%s/%s: %s: %s", "watch lost",
					    op->err);
			pr_unsynced(st, SCSITGT_PR_RESYNCING);
			break;
		case PR_OP_RELOAD:
			/* Watched again on the new client, and read after that: the object as
			 * it is, even under the copy (deleted, replaced by an older one), as the
			 * periodic read does. */
			if (st->lun)
				pr_resync_read(st, op->buf, op->len, op->issued_seq);
			st->rewatch_failed = false;
			break;
		}
		/* the reconnection's mark came after this op */
		if (unsync && op == unsync_after)
			pr_unsync_apply(st, unsync_err);
		scsitgt__rbd_pr_op_free(op);
	}
}

/*
 * Loop: the watch may have missed a notify: the copy is stale (@state) until watched and read
 * again. A blocklisted client (rc->blocklisted, set by the first io that learned it, before its
 * sense went out) is FENCED whatever the cause: the backend refuses each of its ios (NOT
 * READY, 04h/0Ah), which is what its initiators must see (docs/rbd.md).
 */
static void pr_unsynced(struct scsitgt__rbd_pr *st, enum scsitgt_pr_sync state)
{
	if (atomic_load(&st->rc->blocklisted))
		state = SCSITGT_PR_FENCED;
	if (st->lun)
		scsitgt_lun_set_pr_sync(st->lun, state);
	pr_rewatch(st);
}

/*
 * Loop, every PR_CHECK_MS: close the window before librados reports a lost watch. The OSD
 * drops a watch that was not pinged for osd_client_watch_timeout, and librados learns it at
 * its next ping only (every objecter_tick_interval, 5 s by default), so a notify may already
 * be missed while the watch still looks fine. rados_watch_check() says how long ago the
 * watch was last confirmed (the send time of the last ping the OSD answered; the OSD keeps
 * the watch at least the timeout after it received that ping); past stale_ms
 * (scsitgt__rbd_pr_stale_bound(), rbd_pr_bound.c) the copy is called stale and the watch renewed. It also retries a
 * re-watch that failed. rados_watch_check() only reads the client's own state: it never
 * waits for the cluster.
 */
static void pr_check_cb(uv_timer_t *t)
{
	struct scsitgt__rbd_pr *st = t->data;
	bool watching = false;
	uint64_t now = 0;
	int age = 0;

	if (st->stopping || st->attaching || st->rewatching || st->lun == NULL)
		return;
	pthread_mutex_lock(&st->io_mu);
	if (st->io_ok && st->watching) {
		watching = true;
		/* read before the check's own clock: now - age is never after the ping's send */
		now = scsitgt__rbd_pr_clock_ms();
		age = rados_watch_check(st->io, st->cookie);
	}
	pthread_mutex_unlock(&st->io_mu);
	if (!watching) {
		/* A re-watch failed (its state is set) or a reconnection is on its way: try
		 * again; a client found blocklisted meanwhile is FENCED. */
		if (atomic_load(&st->rc->blocklisted))
			scsitgt_lun_set_pr_sync(st->lun, SCSITGT_PR_FENCED);
		pr_rewatch(st);
		return;
	}
	if (age < 0) {
		scsitgt__rbd_pr_log(st, SCSITGT_LOG_WARNING, "%s/%s: %s: %s", "watch check", age);
		pr_unsynced(st, SCSITGT_PR_RESYNCING);
		return;
	}
	if (st->stale_ms && (uint64_t)age > st->stale_ms) {
		/* Its pings go unanswered: the OSD does not answer (or not in time). */
		scsitgt__log(&st->rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: watch last confirmed %d ms ago (bound %" PRIu64
			     " ms): it may have been dropped; watching again",
			     st->rc->pool, st->oid, age, st->stale_ms);
		pr_unsynced(st, SCSITGT_PR_UNREACHABLE);
		return;
	}
	/* Confirmed: the lease runs to the ping's send plus the bound; past it the core holds
	 * the commands a reservation could refuse (never fails them) and asks again
	 * (pr_recheck), so a loop that runs late only delays them (docs/rbd.md). */
	st->watch_lease_ms = st->stale_ms ? now - (uint64_t)age + st->stale_ms : 0;
	scsitgt__rbd_pr_lease(st);
	/* And a read of the object: a change whose notify was lost (rbd_pr_poll.c). */
	scsitgt__rbd_pr_poll(st);
}

/* Home: a command waits on a lapsed lease: check at once (the next loop iteration's timers),
 * not inside the core's call. */
static void pr_recheck(void *arg, struct scsitgt_lun *lun)
{
	struct scsitgt__rbd_pr *st = arg;

	(void)lun;
	if (st->stopping)
		return;
	scsitgt__log(&st->rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
		     "%s/%s: the watch's lease ran out (the loop ran late): commands a "
		     "reservation could refuse wait for the watch check",
		     st->rc->pool, st->oid);
	uv_timer_start(&st->check, pr_check_cb, 0, PR_CHECK_MS);
}

/* ---- blocking parts, on the backend's worker thread ---- */

/* Read the object: *@buf (malloc'd, NULL when empty or missing), its length and version. */
static int pr_read_sync(struct scsitgt__rbd_pr *st, uint8_t **buf, size_t *len, uint64_t *ver)
{
	rados_read_op_t rop = rados_create_read_op();
	char *b = malloc(PR_READ_MAX);
	size_t n = 0;
	int prval = 0, r;

	*buf = NULL;
	*len = 0;
	*ver = 0;
	if (rop == NULL || b == NULL) {
		if (rop)
			rados_release_read_op(rop);
		free(b);
		return -ENOMEM;
	}
	rados_read_op_read(rop, 0, PR_READ_MAX, b, &n, &prval);
	r = rados_read_op_operate(rop, st->io, st->oid, 0);
	rados_release_read_op(rop);
	if (r == 0 && prval < 0)
		r = prval;
	if (r == -ENOENT) {
		free(b);
		return 0;
	}
	if (r == 0 && n >= PR_READ_MAX)
		r = -EFBIG;
	if (r < 0) {
		free(b);
		return r;
	}
	*ver = rados_get_last_version(st->io);
	if (n == 0) {
		free(b);
		return 0;
	}
	*buf = (uint8_t *)b;
	*len = n;
	return 0;
}

/*
 * The state's APTPL bit, whether it holds anything, and its change sequence (pr.h formats:
 * version 1 has no sequence). Returns false when it is not a state this code can read.
 */
bool scsitgt__rbd_pr_peek(const uint8_t *b, size_t len, bool *aptpl, bool *empty, uint64_t *seq)
{
	size_t off = 24;
	uint32_t nregs;

	if (len < 24 || memcmp(b, "SGPR", 4) != 0)
		return false;
	*aptpl = get_be16(&b[6]) & 1;
	nregs = get_be32(&b[20]);
	*empty = nregs == 0 && !(get_be16(&b[6]) & 2);
	*seq = 0;
	if (get_be16(&b[4]) != SCSITGT_PR_STATE_VERSION_SHARED)
		return get_be16(&b[4]) == SCSITGT_PR_STATE_VERSION;
	for (uint32_t i = 0; i < nregs; i++) {
		if (len - off < 14)
			return false;
		off += 14u + get_be16(&b[off + 12]);
		if (off > len)
			return false;
	}
	if (len - off < 8)
		return false;
	*seq = get_be64(&b[off]);
	return true;
}

/* How many other gateways watch the object, or < 0: those that answer a probe notify and those
 * that do not within notify_timeout_ms (a loop running late, a watch being set up again, a
 * gateway just killed whose watch lingers): a watcher that does not answer is no proof that
 * it is gone (reviewh F2). */
static int pr_count_gateways(struct scsitgt__rbd_pr *st)
{
	char *reply = NULL;
	size_t reply_len = 0, nacks = 0, ntos = 0;
	struct notify_ack_t *acks = NULL;
	struct notify_timeout_t *tos = NULL;
	int r;

	r = rados_notify2(st->io, st->oid, probe_payload, (int)sizeof(probe_payload) - 1,
			  st->notify_timeout_ms, &reply, &reply_len);
	if (reply &&
	    rados_decode_notify_response(reply, reply_len, &acks, &nacks, &tos, &ntos) == 0) {
		rados_free_notify_response(acks, nacks, tos);
		r = (int)(nacks + ntos);
		if (ntos)
			scsitgt__log(&st->rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
				     "%s/%s: %zu watcher(s) of the object did not answer within "
				     "%" PRIu32 " ms: counted as gateways",
				     st->rc->pool, st->oid, ntos, st->notify_timeout_ms);
	} else if (r == 0) {
		r = 0;
	}
	if (reply)
		rados_buffer_free(reply);
	return r;
}

/*
 * SPC-5 §5.13.5: without APTPL, registrations do not survive a power loss. The logical unit
 * of several gateways loses power when every gateway is gone: a gateway that starts and
 * finds no other gateway watching the object clears a state stored with APTPL off (change
 * sequence + 1, PRgeneration 0), once, with compare-and-swap.
 */
static int pr_clear_if_alone(struct scsitgt__rbd_pr *st, const uint8_t *b, size_t len, uint64_t ver)
{
	bool aptpl, empty;
	uint64_t seq;
	uint8_t s[40];
	rados_write_op_t wop;
	int n, r;

	if (b == NULL || !scsitgt__rbd_pr_peek(b, len, &aptpl, &empty, &seq) || aptpl || empty)
		return 0;
	n = pr_count_gateways(st);
	if (n != 0)
		return 0; /* someone is there (or we cannot tell): the state stays */
	memset(s, 0, sizeof(s));
	memcpy(s, "SGPR", 4);
	put_be16(&s[4], SCSITGT_PR_STATE_VERSION_SHARED);
	put_be32(&s[16], 0xffffffffu);
	put_be64(&s[24], seq + 1);
	wop = rados_create_write_op();
	if (wop == NULL)
		return -ENOMEM;
	rados_write_op_assert_version(wop, ver);
	rados_write_op_write_full(wop, (const char *)s, sizeof(s));
	r = rados_write_op_operate(wop, st->io, st->oid, NULL, 0);
	rados_release_write_op(wop);
	if (r == -ERANGE || r == -EOVERFLOW)
		return 0; /* another gateway started and wrote first: its state stands */
	if (r == 0)
		st->cleared = true;
	return r;
}

/* Worker: watch the object; the cookie and the flag are published under io_mu for the loop's
 * watch check. */
static int pr_watch(struct scsitgt__rbd_pr *st, rados_ioctx_t io)
{
	int r;

	/* librados sets the cookie before any callback can use it (pr_watch_cb acks with it);
	 * the loop reads it only once watching says so. */
	scsitgt__rbd_handover_give(&st->watch_ho);
	r = rados_watch2(io, st->oid, &st->cookie, pr_watch_cb, pr_watch_err_cb, st);
	pthread_mutex_lock(&st->io_mu);
	st->watching = r == 0;
	pthread_mutex_unlock(&st->io_mu);
	return r;
}

/* Worker: end the watch (if any). */
static void pr_unwatch(struct scsitgt__rbd_pr *st, rados_ioctx_t io)
{
	bool w;

	pthread_mutex_lock(&st->io_mu);
	w = st->watching;
	st->watching = false;
	pthread_mutex_unlock(&st->io_mu);
	if (w)
		rados_unwatch2(io, st->cookie);
}

/* Worker: take the ioctx away from the loop, unwatch, let every callback run, destroy it. */
static void pr_io_close(struct scsitgt__rbd_pr *st)
{
	rados_ioctx_t io;
	bool ok;

	pthread_mutex_lock(&st->io_mu);
	ok = st->io_ok;
	io = st->io;
	st->io_ok = false;
	pthread_mutex_unlock(&st->io_mu);
	if (!ok)
		return;
	pr_unwatch(st, io);
	/* Every callback and completion of ours has run (they only queued to us). */
	rados_watch_flush(st->rc->cluster);
	rados_aio_flush(io);
	scsitgt__rbd_handover_take(&st->watch_ho);
	rados_ioctx_destroy(io);
}

/*
 * Worker: an ioctx on the image's pool and namespace, the object (created empty if missing:
 * a watch needs it; an empty object is an empty state), then, with @probe, the attach's
 * check for a restart of every gateway, then the watch.
 */
static int pr_io_open(struct scsitgt__rbd_pr *st, bool probe)
{
	struct scsitgt__rbd_ctx *rc = st->rc;
	rados_write_op_t wop;
	rados_ioctx_t io;
	uint64_t ver;
	int r;

	r = rados_ioctx_create2(rc->cluster, rc->pool_id, &io);
	if (r < 0)
		return r;
	rados_ioctx_set_namespace(io, rc->pool_namespace ? rc->pool_namespace : "");
	pthread_mutex_lock(&st->io_mu);
	st->io = io;
	st->io_ok = true;
	pthread_mutex_unlock(&st->io_mu);
	wop = rados_create_write_op();
	if (wop == NULL)
		return -ENOMEM;
	rados_write_op_create(wop, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	r = rados_write_op_operate(wop, io, st->oid, NULL, 0);
	rados_release_write_op(wop);
	if (r == 0 && probe) {
		r = pr_read_sync(st, &st->init_state, &st->init_len, &ver);
		if (r == 0)
			r = pr_clear_if_alone(st, st->init_state, st->init_len, ver);
	}
	if (r < 0)
		return r;
	return pr_watch(st, io);
}

static void pr_attach_work(struct scsitgt__rbd_job *job)
{
	struct scsitgt__rbd_pr *st = job->arg;
	uint64_t ver;
	int r;

	st->stale_ms = scsitgt__rbd_pr_stale_bound(st->rc, st->oid, PR_CHECK_MS);
	r = pr_io_open(st, true);
	if (r == 0) {
		/* Read again: a change committed between the first read and the watch. */
		free(st->init_state);
		st->init_issued_ms = scsitgt__rbd_pr_clock_ms();
		r = pr_read_sync(st, &st->init_state, &st->init_len, &ver);
	}
	job->status = r;
}

static void pr_free(struct scsitgt__rbd_pr *st)
{
	pthread_mutex_destroy(&st->mark_mu);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->io_mu);
	free(st->init_state);
	free(st);
}

static void pr_handle_closed(uv_handle_t *h)
{
	struct scsitgt__rbd_pr *st = h->data;

	if (--st->open_handles == 0)
		pr_free(st);
}

static void pr_close_handles(struct scsitgt__rbd_pr *st)
{
	uv_close((uv_handle_t *)&st->later, pr_handle_closed);
	uv_close((uv_handle_t *)&st->check, pr_handle_closed);
	uv_close((uv_handle_t *)&st->async, pr_handle_closed);
}

static void pr_teardown_work(struct scsitgt__rbd_job *job)
{
	pr_io_close(job->arg);
	job->status = 0;
}

static void pr_teardown_done(struct scsitgt__rbd_job *job)
{
	struct scsitgt__rbd_pr *st = job->arg;
	struct pr_op *list = pr_take(st, NULL, NULL, NULL);

	while (list) {
		struct pr_op *op = list;

		list = op->next;
		scsitgt__rbd_pr_op_free(op);
	}
	pr_close_handles(st);
}

/* Unwatch and release on the worker thread (before the backend's close job), then free. */
static void pr_stop(struct scsitgt__rbd_pr *st)
{
	/* A reset still being applied acknowledges nothing (the watch goes; the notifier's
	 * wait ends at its timeout, as for a gateway that went). */
	for (struct pr_reset_ack *a = st->reset_acks; a; a = a->next)
		a->st = NULL;
	st->reset_acks = NULL;
	scsitgt__rbd_pr_commit_flush(st, st->lun != NULL);
	st->lun = NULL;
	pr_set_mark_lun(st, NULL);
	st->stopping = true;
	uv_timer_stop(&st->check);
	st->stop_job.work = pr_teardown_work;
	st->stop_job.done = pr_teardown_done;
	st->stop_job.arg = st;
	if (scsitgt__rbd_queue_work(st->rc, &st->stop_job) < 0) {
		/* No worker: block the loop once, for a context that is going away. */
		pr_teardown_work(&st->stop_job);
		pr_teardown_done(&st->stop_job);
	}
}

/*
 * Whether the attach's re-read is older than the copy: the watch was up before it, so a change
 * committed after it was delivered and applied already (pr_event_done). Loading the re-read
 * over that would leave the copy one change behind, called synced (reviewh F3).
 */
static bool pr_init_overtaken(struct scsitgt__rbd_pr *st)
{
	bool aptpl, empty;
	uint64_t seq;

	if (!scsitgt__rbd_pr_peek(st->init_state, st->init_len, &aptpl, &empty, &seq) ||
	    scsitgt__lun_pr_seq(st->lun) <= seq)
		return false;
	scsitgt__log(&st->rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
		     "%s/%s: a change notified while attaching is newer than the object as read: "
		     "kept",
		     st->rc->pool, st->oid);
	return true;
}

static void pr_attach_done(struct scsitgt__rbd_job *job)
{
	struct scsitgt__rbd_pr *st = job->arg;
	struct scsitgt__rbd_ctx *rc = st->rc;
	scsitgt_done_cb cb = st->attach_cb;
	void *cb_arg = st->attach_cb_arg;
	int r = job->status;

	st->attaching = false;
	if (st->stopping) {
		/* The backend closed meanwhile: the teardown job, queued after us, frees it. */
		if (cb)
			cb(cb_arg, -ECANCELED);
		return;
	}
	if (r == 0 && st->lun && st->init_len && !pr_init_overtaken(st))
		r = scsitgt_lun_load_pr_state(st->lun, st->init_state, st->init_len);
	if (r == 0 && st->lun)
		r = scsitgt_lun_set_pr_cluster(st->lun, &pr_ops, st);
	if (r == 0 && st->lun) {
		scsitgt__log(&rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
			     "%s/%s: persistent reservations shared%s", rc->pool, st->oid,
			     st->cleared ? " (state without APTPL cleared: no other gateway)" : "");
		pr_set_mark_lun(st, st->lun);
		/* the read vouches for the copy as the periodic ones do (rbd_pr_poll.c) */
		st->poll_lease_ms = st->init_issued_ms + PR_POLL_LEASE_MS;
		uv_timer_start(&st->check, pr_check_cb, PR_CHECK_MS, PR_CHECK_MS);
	} else {
		if (r == 0)
			r = -ECANCELED;
		scsitgt__rbd_pr_log(st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s", "attach", r);
		if (rc->pr == st)
			__atomic_store_n(&rc->pr, NULL, __ATOMIC_RELEASE);
		/* Undo on the worker thread (unwatch), then free. */
		pr_stop(st);
	}
	if (cb)
		cb(cb_arg, r);
}

void scsitgt__rbd_pr_stop(struct scsitgt__rbd_ctx *rc)
{
	struct scsitgt__rbd_pr *st = rc->pr;

	if (st == NULL)
		return;
	__atomic_store_n(&rc->pr, NULL, __ATOMIC_RELEASE);
	/* (st->lun is NULL when the core let go of the store first: pr_detach) */
	st->stopping = true;
	/* the store's queue empty before it goes */
	scsitgt__rbd_pr_commit_flush(st, st->lun != NULL);
	if (st->lun && !st->attaching)
		scsitgt_lun_set_pr_cluster(st->lun, NULL, NULL);
	pr_stop(st);
}

/* Watch lost (the OSD restarted, the client was cut off longer than the watch timeout):
 * watch again and apply the state as it is now. */
struct pr_rewatch_job {
	struct scsitgt__rbd_job job;
	struct scsitgt__rbd_pr *st;
	uint8_t *state;
	size_t len;
	/* watched again, and @state read after that: the copy may be called synced */
	bool synced;
	/* the copy's sequence when the read was sent (pr_copy_seq()) */
	uint64_t issued_seq;
};

static void pr_rewatch_work(struct scsitgt__rbd_job *job)
{
	struct pr_rewatch_job *j = (struct pr_rewatch_job *)job;
	struct scsitgt__rbd_pr *st = j->st;
	uint64_t ver;
	int r;

	if (st->reconnecting) {
		/* scsitgt__rbd_pr_connected() watches again on the new client. */
		job->status = 0;
		return;
	}
	if (!st->io_ok) {
		/* The reconnection could not open the ioctx: try again from the start. */
		r = pr_io_open(st, false);
	} else {
		pr_unwatch(st, st->io);
		r = pr_watch(st, st->io);
	}
	/* Read after the watch is up: a change committed later is delivered to it. */
	if (r == 0) {
		j->issued_seq = pr_copy_seq(st);
		r = pr_read_sync(st, &j->state, &j->len, &ver);
	}
	j->synced = r == 0;
	job->status = r;
}

static void pr_rewatch_done(struct scsitgt__rbd_job *job)
{
	struct pr_rewatch_job *j = (struct pr_rewatch_job *)job;
	struct scsitgt__rbd_pr *st = j->st;

	st->rewatching = false;
	if (job->status < 0) {
		/* Still stale; the watch check tries again (pr_check_cb), every PR_CHECK_MS:
		 * logged once. -ESHUTDOWN is librados' "blocklisted": fenced; anything else (a
		 * timeout, no connection): the cluster does not answer. */
		if (!st->rewatch_failed)
			scsitgt__rbd_pr_log(st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s (trying again)",
					    "watch again", job->status);
		st->rewatch_failed = true;
		/* Blocklisted: the backend is told as by an io that learned it (logged, its
		 * fenced hook), before the copy is called fenced: the core then answers the
		 * commands that would have reached the backend (04h/0Ah), so no io may tell it. */
		if (job->status == -ESHUTDOWN && !st->stopping)
			scsitgt__rbd_set_fenced(st->rc, true);
		if (st->lun && !st->stopping)
			scsitgt_lun_set_pr_sync(st->lun,
						job->status == -ESHUTDOWN ||
								atomic_load(&st->rc->blocklisted) ?
							SCSITGT_PR_FENCED :
							SCSITGT_PR_UNREACHABLE);
	} else if (st->lun && j->synced && !st->stopping && !st->fault_hold) {
		st->rewatch_failed = false;
		/* The object as it is, even under the copy (see PR_OP_RELOAD). */
		pr_resync_read(st, j->state, j->len, j->issued_seq);
	}
	free(j->state);
	free(j);
}

static void pr_rewatch(struct scsitgt__rbd_pr *st)
{
	struct pr_rewatch_job *j;

	if (st->rewatching || st->stopping || st->fault_hold)
		return;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return;
	j->st = st;
	j->job.work = pr_rewatch_work;
	j->job.done = pr_rewatch_done;
	j->job.arg = j;
	st->rewatching = true;
	if (scsitgt__rbd_queue_work(st->rc, &j->job) < 0) {
		st->rewatching = false;
		free(j);
	}
}

/* ---- public ---- */

SCSITGT_EXPORT int scsitgt_backend_rbd_use_pr(void *bctx,
					      const struct scsitgt_backend_rbd_pr_opts *opts,
					      scsitgt_done_cb cb, void *cb_arg)
{
	struct scsitgt_backend_rbd_pr_opts o;
	struct scsitgt__rbd_ctx *rc = bctx;
	struct scsitgt__rbd_pr *st;
	int r;

	if (rc == NULL || cb == NULL || rc->lun == NULL || !rc->opened)
		return -EINVAL;
	if (rc->closing)
		return -ECANCELED;
	if (rc->pr)
		return -EALREADY;
	scsitgt_backend_rbd_pr_opts_init(&o, sizeof(o));
	if (opts) {
		if (opts->size < sizeof(size_t) || opts->size > sizeof(o))
			return -EINVAL;
		memcpy(&o, opts, opts->size);
	}
	if (o.notify_timeout_ms == 0)
		o.notify_timeout_ms = 5000;
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return -ENOMEM;
	st->rc = rc;
	st->lun = rc->lun;
	st->notify_timeout_ms = o.notify_timeout_ms;
	/* Keyed by the image id: stable across renames, unique in the pool and namespace. */
	snprintf(st->oid, sizeof(st->oid), "scsitgt_pr.%s", rc->image_id);
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->io_mu, NULL);
	pthread_mutex_init(&st->mark_mu, NULL);
	r = uv_async_init(rc->loop, &st->async, pr_async_cb);
	if (r < 0) {
		pthread_mutex_destroy(&st->mark_mu);
		pthread_mutex_destroy(&st->mu);
		pthread_mutex_destroy(&st->io_mu);
		free(st);
		return r;
	}
	st->async.data = st;
	uv_timer_init(rc->loop, &st->check);
	st->check.data = st;
	uv_timer_init(rc->loop, &st->later);
	st->later.data = st;
	st->open_handles = 3;
	st->attach_cb = cb;
	st->attach_cb_arg = cb_arg;
	st->job.work = pr_attach_work;
	st->job.done = pr_attach_done;
	st->job.arg = st;
	st->attaching = true;
	r = scsitgt__rbd_queue_work(rc, &st->job);
	if (r < 0) {
		pr_close_handles(st);
		return r;
	}
	__atomic_store_n(&rc->pr, st, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Worker thread: the backend replaces its cluster handle (a blocklisted client reconnects):
 * our ioctx belongs to the old one. Until scsitgt__rbd_pr_connected() the store answers
 * -ENOTCONN (HARDWARE ERROR, LOGICAL UNIT COMMUNICATION FAILURE) and the watch is gone.
 */
void scsitgt__rbd_pr_disconnect(struct scsitgt__rbd_ctx *rc)
{
	struct scsitgt__rbd_pr *st = __atomic_load_n(&rc->pr, __ATOMIC_ACQUIRE);

	if (st == NULL || st->attaching)
		return;
	/* No notify reaches us from now until the new client watches and reads again: the
	 * loop calls the copy stale first, at this place in the queue (before the RELOAD).
	 * Without allocating: a copy left SYNCED without its watch would hold commands on a
	 * lapsed lease for as long as the reconnection fails (review34 N4). */
	st->reconnecting = true;
	pthread_mutex_lock(&st->mu);
	st->unsync = true;
	st->unsync_err = atomic_load(&rc->blocklisted) ? -ESHUTDOWN : -ENOTCONN;
	st->unsync_after = st->done_tail;
	pthread_mutex_unlock(&st->mu);
	uv_async_send(&st->async);
	pr_io_close(st);
}

/* Worker thread: the new cluster handle is up: watch again and apply the state as it is now
 * (a change missed meanwhile raises the unit attentions derived from the difference). */
void scsitgt__rbd_pr_connected(struct scsitgt__rbd_ctx *rc)
{
	struct scsitgt__rbd_pr *st = __atomic_load_n(&rc->pr, __ATOMIC_ACQUIRE);
	struct pr_op *op;
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t ver, seq;
	int r;

	if (st == NULL || st->attaching)
		return;
	st->reconnecting = false;
	if (st->io_ok)
		return;
	r = pr_io_open(st, false);
	seq = pr_copy_seq(st);
	if (r == 0)
		r = pr_read_sync(st, &buf, &len, &ver);
	op = r == 0 ? calloc(1, sizeof(*op)) : NULL;
	if (op == NULL) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: reservations after the reconnection: %s", rc->pool, st->oid,
			     strerror(r < 0 ? -r : ENOMEM));
		free(buf);
		return;
	}
	op->st = st;
	op->kind = PR_OP_RELOAD;
	op->buf = (char *)buf;
	op->len = len;
	op->issued_seq = seq;
	pr_post(st, op);
	scsitgt__log(&rc->log, SCSITGT_LOG_INFO, SCSITGT__RBD_SUBSYS,
		     "%s/%s: reservations watched again on the new client", rc->pool, st->oid);
}

/* Worker: the fault's broken watch (what the OSD does when it drops it). */
static void pr_fault_work(struct scsitgt__rbd_job *job)
{
	struct scsitgt__rbd_pr *st = job->arg;

	if (st->io_ok)
		pr_unwatch(st, st->io);
	job->status = 0;
}

static void pr_fault_done(struct scsitgt__rbd_job *job)
{
	struct scsitgt__rbd_pr *st = job->arg;

	st->fault_queued = false;
	if (!st->stopping && st->fault_hold)
		scsitgt__log(&st->rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
			     "%s/%s: fault injection: the reservation object is no longer watched",
			     st->rc->pool, st->oid);
}

/* The shared reservations a fault injection applies to: 0 and *@out, or -errno (testing.h). */
static int pr_fault_state(void *bctx, struct scsitgt__rbd_pr **out)
{
	struct scsitgt__rbd_ctx *rc = bctx;

	if (rc == NULL)
		return -EINVAL;
	*out = rc->pr;
	if (*out == NULL || (*out)->attaching || (*out)->stopping)
		return -ENOENT;
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_set_pr_notify_fault(void *bctx, bool fail)
{
	struct scsitgt__rbd_ctx *rc = bctx;
	struct scsitgt__rbd_pr *st;
	int r = pr_fault_state(bctx, &st);

	if (r < 0)
		return r;
	st->fault_notify = fail;
	scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
		     fail ? "%s/%s: fault injection: reservation changes are not notified" :
			    "%s/%s: fault injection over: reservation changes are notified",
		     rc->pool, st->oid);
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_rbd_set_pr_watch_fault(void *bctx, bool hold)
{
	struct scsitgt__rbd_ctx *rc = bctx;
	struct scsitgt__rbd_pr *st;
	int r = pr_fault_state(bctx, &st);

	if (r < 0)
		return r;
	if (hold == st->fault_hold)
		return 0;
	st->fault_hold = hold;
	scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
		     hold ? "%s/%s: fault injection: the watch of the reservation object breaks, "
			    "no re-watch until the fault ends" :
			    "%s/%s: fault injection over: watching the reservation object again",
		     rc->pool, st->oid);
	if (!hold) {
		pr_rewatch(st);
		return 0;
	}
	/* What librados' error callback starts (PR_OP_WERROR), with the re-watch held; the copy
	 * is called stale before the watch goes. */
	if (st->lun)
		scsitgt_lun_set_pr_sync(st->lun, SCSITGT_PR_RESYNCING);
	if (!st->fault_queued) {
		st->fault_job.work = pr_fault_work;
		st->fault_job.done = pr_fault_done;
		st->fault_job.arg = st;
		if (scsitgt__rbd_queue_work(rc, &st->fault_job) == 0)
			st->fault_queued = true;
	}
	return 0;
}

void scsitgt__rbd_pr_reset(struct scsitgt__rbd_ctx *rc, scsitgt_done_cb cb, void *cb_arg)
{
	struct scsitgt__rbd_pr *st = rc->pr;
	struct pr_op *op;
	int r = -ENOTCONN;

	if (st == NULL || st->stopping || st->lun == NULL) {
		cb(cb_arg, 0); /* no other gateway to tell */
		return;
	}
	op = scsitgt__rbd_pr_op_create(st, PR_OP_RESET, NULL);
	if (op == NULL) {
		cb(cb_arg, -ENOMEM);
		return;
	}
	op->reset_cb = cb;
	op->reset_cb_arg = cb_arg;
	scsitgt__rbd_handover_give(&op->ho);
	pthread_mutex_lock(&st->io_mu);
	if (st->io_ok)
		r = rados_aio_notify(st->io, st->oid, op->comp, reset_payload,
				     (int)sizeof(reset_payload) - 1, st->notify_timeout_ms,
				     &op->reply, &op->reply_len);
	pthread_mutex_unlock(&st->io_mu);
	if (r < 0) {
		scsitgt__rbd_pr_log(st, SCSITGT_LOG_WARNING, "%s/%s: %s: %s", "reset notify", r);
		scsitgt__rbd_pr_op_free(op);
		cb(cb_arg, r);
		return;
	}
	st->inflight++;
}
