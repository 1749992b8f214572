/* SPDX-License-Identifier: MIT */
/*
 * Shared reservations of an RBD LUN (rbd_pr.c): the periodic read of the object that bounds
 * how stale a copy can be, and the commits whose notify reached nobody (reviewh F1, F5).
 *
 * The watch carries every change to the other gateways as it is committed, but a notify can be
 * lost with every watch intact: rados_aio_notify() not sent (the ioctx being replaced), the
 * notify failing as a whole (the committer blocklisted between its write and its notify), a
 * clear made without one. Nothing then tells a peer its copy is stale, and it went on enforcing
 * the old registrations until the next change. So every gateway also reads the object every
 * PR_CHECK_MS (one small read) and applies what it finds when it is newer than the copy, or
 * when the object went back under the copy (deleted, or replaced by an older one:
 * scsitgt__lun_resync_pr_state()). Each read vouches for the copy for PR_POLL_LEASE_MS from
 * the moment it was sent, and extends the lease (the core holds, never fails, the commands a
 * reservation could refuse once it ran out, libscsitgt/pr.h) when the watch's is shorter. A
 * commit whose notify reached nobody is answered GOOD only PR_POLL_LEASE_MS after its write
 * came back: by then every other gateway whose reads work has read it. The stored change
 * stands whatever happens to its notify, so GOOD stays the answer; only its time moves.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "backend/rbd_int.h"
#include "backend/rbd_pr_int.h"
#include "core/pr.h"
#include "libscsitgt/lun.h"

/* A commit answered later (scsitgt__rbd_pr_commit_later()). */
struct pr_later {
	struct pr_later *next;
	struct scsitgt_pr_req *req;
	uint64_t due_ms;
};

void scsitgt__rbd_pr_lease(struct scsitgt__rbd_pr *st)
{
	uint64_t lease = st->watch_lease_ms;

	if (st->lun == NULL)
		return;
	/* Each is evidence the copy is current: the later one counts. The reads only extend:
	 * made to shorten a confirmed watch's lease, one slow or failed read (PG peering, an
	 * OSD stopped, a loaded cluster) held every command of the LUN, and an OSD outage
	 * held commands for the watch's whole bound instead of failing them (reviewk K10). */
	if (st->poll_lease_ms > lease)
		lease = st->poll_lease_ms;
	if (lease)
		scsitgt_lun_set_pr_lease(st->lun, lease);
}

void scsitgt__rbd_pr_resynced(struct scsitgt__rbd_pr *st, const void *buf, size_t len,
			      uint64_t issued_ms, uint64_t issued_seq)
{
	int r;

	if (st->lun == NULL)
		return;
	r = scsitgt__lun_resync_pr_state(st->lun, buf, len, issued_seq);
	if (r < 0) {
		/* Unreadable: every commit fails on it too, so no copy moves; this one stands. */
		if (!st->poll_failed)
			scsitgt__rbd_pr_log(st, SCSITGT_LOG_ERROR, "%s/%s: %s: %s", "apply", r);
		st->poll_failed = true;
	} else if (r > 0) {
		scsitgt__log(&st->rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: the object differs from the copy (a change whose notify did "
			     "not arrive, or the object went back): applied from the object",
			     st->rc->pool, st->oid);
	}
	if (issued_ms + PR_POLL_LEASE_MS > st->poll_lease_ms)
		st->poll_lease_ms = issued_ms + PR_POLL_LEASE_MS;
	scsitgt__rbd_pr_lease(st);
}

void scsitgt__rbd_pr_poll(struct scsitgt__rbd_pr *st)
{
	struct pr_op *op;
	int r = -ENOMEM;

	if (st->polling || st->lun == NULL)
		return;
	op = scsitgt__rbd_pr_op_create(st, PR_OP_POLL, NULL);
	if (op)
		op->buf = malloc(PR_READ_MAX);
	if (op && op->buf)
		op->rop = rados_create_read_op();
	if (op && op->rop) {
		op->issued_ms = scsitgt__rbd_pr_clock_ms();
		op->issued_seq = scsitgt__lun_pr_seq(st->lun);
		rados_read_op_read(op->rop, 0, PR_READ_MAX, op->buf, &op->len, &op->prval);
		scsitgt__rbd_handover_give(&op->ho);
		pthread_mutex_lock(&st->io_mu);
		r = st->io_ok ? rados_aio_read_op_operate(op->rop, st->io, op->comp, st->oid, 0) :
				-ENOTCONN;
		pthread_mutex_unlock(&st->io_mu);
	}
	if (r < 0) {
		if (op)
			scsitgt__rbd_pr_op_free(op);
		return; /* the next check tries again; the lease runs out meanwhile */
	}
	st->polling = true;
	st->inflight++;
}

void scsitgt__rbd_pr_poll_done(struct pr_op *op)
{
	struct scsitgt__rbd_pr *st = op->st;
	int r = rados_aio_get_return_value(op->comp);

	st->polling = false;
	if (r >= 0 && op->prval < 0)
		r = op->prval;
	if (r == -ENOENT) {
		r = 0;
		op->len = 0;
	}
	if (r == 0 && op->len >= PR_READ_MAX)
		r = -EFBIG;
	if (r < 0) {
		/* No lease from it: the commands a reservation could refuse wait for a read that
		 * works (or for the watch check to call the copy stale). */
		if (!st->poll_failed)
			scsitgt__rbd_pr_log(st, SCSITGT_LOG_WARNING, "%s/%s: %s: %s",
					    "periodic read", r);
		st->poll_failed = true;
		return;
	}
	if (st->stopping || st->attaching || st->rewatching)
		return;
	st->poll_failed = false;
	scsitgt__rbd_pr_resynced(st, op->buf, op->len, op->issued_ms, op->issued_seq);
}

static void pr_later_cb(uv_timer_t *t)
{
	struct scsitgt__rbd_pr *st = t->data;
	uint64_t now = scsitgt__rbd_pr_clock_ms();

	while (st->later_head && st->later_head->due_ms <= now) {
		struct pr_later *l = st->later_head;

		st->later_head = l->next;
		if (st->later_head == NULL)
			st->later_tail = NULL;
		scsitgt_pr_req_complete_commit(l->req, 0);
		free(l);
	}
	if (st->later_head)
		uv_timer_start(&st->later, pr_later_cb, st->later_head->due_ms - now, 0);
}

void scsitgt__rbd_pr_commit_later(struct scsitgt__rbd_pr *st, struct scsitgt_pr_req *req,
				  uint64_t written_ms)
{
	/* The coarse clock's granularity on both sides, and a margin. */
	uint64_t due = written_ms + PR_POLL_LEASE_MS + 50, now = scsitgt__rbd_pr_clock_ms();
	struct pr_later *l = malloc(sizeof(*l));

	if (l == NULL || st->stopping) {
		free(l);
		scsitgt_pr_req_complete_commit(req, 0);
		return;
	}
	scsitgt__log(&st->rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
		     "%s/%s: reservation change stored, its notify reached no gateway: answered "
		     "once the others read it or their lease ran out (%" PRIu64 " ms)",
		     st->rc->pool, st->oid, due > now ? due - now : 0);
	l->req = req;
	l->due_ms = due;
	l->next = NULL;
	if (st->later_tail)
		st->later_tail->next = l;
	else
		st->later_head = l;
	st->later_tail = l;
	if (st->later_head == l)
		uv_timer_start(&st->later, pr_later_cb, due > now ? due - now : 0, 0);
}

void scsitgt__rbd_pr_commit_flush(struct scsitgt__rbd_pr *st, bool answer)
{
	uv_timer_stop(&st->later);
	while (st->later_head) {
		struct pr_later *l = st->later_head;

		st->later_head = l->next;
		if (answer)
			scsitgt_pr_req_complete_commit(l->req, 0);
		free(l);
	}
	st->later_tail = NULL;
}
