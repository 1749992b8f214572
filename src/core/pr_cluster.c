/* SPDX-License-Identifier: MIT */
/*
 * Persistent reservations shared by several engines through a cluster store
 * (include/libscsitgt/pr.h, "pr_cluster"): PERSISTENT RESERVE OUT as fetch, execute,
 * compare-and-swap commit; states committed elsewhere applied with their unit attentions
 * (SPC-5 §5.13.11) on this engine's nexuses.
 *
 * A PERSISTENT RESERVE OUT executes against the freshly fetched state with its unit
 * attentions captured (pr->capture), is serialised with them, and the local state is put back
 * until the commit succeeds: no nexus of this engine ever sees an uncommitted change.
 *
 * The queue and the store's hooks are home's (Loop: home in libscsitgt/pr.h): a command of a
 * worker shard is held while it waits there (core/home_call.h, a step that ends later), and
 * home reads of it only what the hold leaves alone (its CDB and parameter data) and the copy
 * of its nexus in the request; never its state or its session, which its own shard changes when
 * it is aborted or its nexus ends while the store has it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/tmf.h"
#include "core/ua.h"

bool scsitgt__pr_cluster_on(const struct scsitgt_lun *lun)
{
	return lun->pr && lun->pr->cl_on;
}

static void cl_log(struct scsitgt_lun *lun, const char *what, int status)
{
	scsitgt__log(&lun->tgt->engine->log, SCSITGT_LOG_ERROR, "core",
		     "LUN %llu: reservation store: %s: %s", (unsigned long long)lun->id, what,
		     strerror(status < 0 ? -status : status));
}

/* Raise the events of @ch on this engine's nexuses, except the one that made the change: on
 * their own shards (core/tmf_xshard.c); the events move out of @ch. Loop: home. */
void scsitgt__pr_raise_events(struct scsitgt_lun *lun, struct scsitgt__pr_change *ch,
			      const struct scsitgt__cmd *by_cmd)
{
	/* compared only: never aborted */
	scsitgt__tmf_pr_events(lun, ch, by_cmd, NULL, NULL);
}

static bool same_nexus(const struct scsitgt__pr_reg *a, const struct scsitgt__pr_reg *b)
{
	return a->any_isid == b->any_isid && a->all_tg_pt == b->all_tg_pt &&
	       a->rel_port_id == b->rel_port_id && strcasecmp(a->iport, b->iport) == 0;
}

static bool has_nexus(const struct scsitgt__pr *pr, const struct scsitgt__pr_reg *r)
{
	for (const struct scsitgt__list *p = pr->regs.next; p != &pr->regs; p = p->next)
		if (same_nexus(r, scsitgt__container_of(p, struct scsitgt__pr_reg, node)))
			return true;
	return false;
}

/*
 * Changes were missed (the sequence jumped): derive the unit attentions from the difference
 * between the applied state @old and the new one @new (include/libscsitgt/pr.h).
 */
static void derive_events(const struct scsitgt__pr *old, const struct scsitgt__pr *new,
			  struct scsitgt__pr_change *ch)
{
	for (const struct scsitgt__list *p = old->regs.next; p != &old->regs; p = p->next) {
		const struct scsitgt__pr_reg *r =
			scsitgt__container_of(p, struct scsitgt__pr_reg, node);

		if (!has_nexus(new, r))
			scsitgt__pr_change_add(ch, SCSITGT__PR_EV_REGS_PREEMPTED, r);
	}
	/* SPC-5 §5.13.11.2.2: only registrants-only and all-registrants reservations tell. */
	if (old->held && old->type != PR_TYPE_WE && old->type != PR_TYPE_EA &&
	    (!new->held || new->type != old->type)) {
		for (const struct scsitgt__list *p = new->regs.next; p != &new->regs; p = p->next)
			scsitgt__pr_change_add(
				ch, SCSITGT__PR_EV_RESV_RELEASED,
				scsitgt__container_of(p, struct scsitgt__pr_reg, node));
	}
}

/*
 * Apply a state: replace the local one when it is newer. @ch (initialised by the caller)
 * receives the unit attentions to raise once lun->xlock is dropped
 * (scsitgt__pr_raise_events()), none when nothing was applied; but for @own (this engine's
 * committed change) the change's own events also when the state is not newer. Under lun->xlock.
 */
static int cl_apply_locked(struct scsitgt_lun *lun, const void *data, size_t len,
			   struct scsitgt__pr_change *ch, bool own)
{
	struct scsitgt__pr tmp, *pr;
	uint16_t ver = 0;
	int rc;

	memset(&tmp, 0, sizeof(tmp));
	scsitgt__list_init(&tmp.regs);
	rc = scsitgt__pr_decode(data, len, &tmp, ch, &ver);
	pr = rc < 0 ? NULL : scsitgt__pr_get(lun);
	if (rc == 0 && pr == NULL)
		rc = -ENOMEM;
	if (rc == 0 && ver == SCSITGT_PR_STATE_VERSION_SHARED) {
		if (ch->seq <= pr->seq) {
			/* A duplicate, or older than what we have: nothing to apply. Our own
			 * commit's events still are due: a newer state made elsewhere on top of
			 * it may have arrived first, whose events, derived, never abort (PREEMPT
			 * AND ABORT, SPC-5 §5.13.11.5). Its aborts reach only the tasks admitted
			 * before its sequence (cmd->pr_seq < ch->seq, core/tmf_xshard.c): those
			 * the preempted nexus sent after the newer state registered it again only
			 * meet its restrictions. */
			if (!own)
				scsitgt__pr_change_clear(ch);
			goto out;
		}
		if (ch->seq != pr->seq + 1) {
			scsitgt__pr_change_clear(ch);
			ch->by_port[0] = '\0';
			derive_events(pr, &tmp, ch);
		}
		pr->seq = ch->seq;
	} else {
		scsitgt__pr_change_clear(ch);
	}
	if (rc == 0) {
		scsitgt__pr_replace(pr, &tmp);
		scsitgt__pr_sync_xflags(lun);
	}
out:
	scsitgt__pr_regs_free(&tmp.regs);
	return rc;
}

/* The request whose commit the store has, if @data is the state it committed. */
static struct scsitgt_pr_req *cl_own_commit(struct scsitgt_lun *lun, const void *data, size_t len)
{
	struct scsitgt__pr *pr = lun->pr;
	struct scsitgt_pr_req *req;

	if (pr == NULL || scsitgt__list_empty(&pr->cl_queue))
		return NULL;
	req = scsitgt__container_of(pr->cl_queue.next, struct scsitgt_pr_req, node);
	if (!req->commit || req->data == NULL || req->len != len ||
	    memcmp(req->data, data, len) != 0)
		return NULL;
	return req;
}

/* cl_apply_locked() under the lock, then its unit attentions (a state made elsewhere); with
 * @op, its aborts are waited for by it (scsitgt__tmf_pr_events_op()). */
static int cl_apply_op(struct scsitgt_lun *lun, const void *data, size_t len,
		       struct scsitgt__tmf_op *op)
{
	struct scsitgt_pr_req *own = cl_own_commit(lun, data, len);
	struct scsitgt__pr_change ch;
	int rc;

	scsitgt__pr_change_init(&ch);
	uv_mutex_lock(&lun->xlock);
	rc = cl_apply_locked(lun, data, len, &ch, false);
	uv_mutex_unlock(&lun->xlock);
	if (own && rc == 0) {
		/* Our own commit, delivered back to us before the store's answer: stored. Its
		 * events are raised once, by the answer (whatever it says), which waits for its
		 * aborts before the command's status (scsitgt_pr_req_complete_commit()). */
		own->delivered = true;
		scsitgt__pr_change_clear(&ch);
	}
	if (op)
		scsitgt__tmf_pr_events_op(lun, &ch, op);
	else
		scsitgt__pr_raise_events(lun, &ch, NULL);
	scsitgt__pr_change_clear(&ch);
	return rc;
}

static int cl_apply(struct scsitgt_lun *lun, const void *data, size_t len)
{
	return cl_apply_op(lun, data, len, NULL);
}

SCSITGT_EXPORT int scsitgt_lun_apply_pr_state(struct scsitgt_lun *lun, const void *data, size_t len)
{
	if (lun == NULL)
		return -EINVAL;
	if (data == NULL)
		return scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_apply_pr_state",
					   "data is NULL");
	return scsitgt__pr_refused_data(lun, cl_apply(lun, data, len), "scsitgt_lun_apply_pr_state",
					len);
}

struct apply_async {
	struct scsitgt__deferred defer;
	scsitgt_done_cb cb;
	void *cb_arg;
	/* Home is still inside scsitgt_lun_apply_pr_state_async(), and the op answered there
	 * (nothing to abort, or every aborted task already gone): the call defers the callback. */
	bool in_call, ended_in_call;
};

static void apply_async_call_back(struct apply_async *d)
{
	scsitgt_done_cb cb = d->cb;
	void *cb_arg = d->cb_arg;

	free(d);
	/* NULL: the call failed after all (nothing applied) and said so itself */
	if (cb)
		cb(cb_arg, 0);
}

static void apply_async_deferred(struct scsitgt__deferred *defer)
{
	apply_async_call_back(scsitgt__container_of(defer, struct apply_async, defer));
}

/* Home: the op's answer: every task the change aborted here left its backend (or the TMF
 * timeout passed: they stay aborted, and end whenever their backend gives them back). */
static void apply_async_answer(void *arg, enum scsitgt__tmf_response response)
{
	struct apply_async *d = arg;

	(void)response;
	if (d->in_call) {
		d->ended_in_call = true;
		return;
	}
	apply_async_call_back(d);
}

SCSITGT_EXPORT int scsitgt_lun_apply_pr_state_async(struct scsitgt_lun *lun, const void *data,
						    size_t len, scsitgt_done_cb cb, void *cb_arg)
{
	struct scsitgt__tmf_op *op;
	struct apply_async *d;
	int rc;

	if (lun == NULL || cb == NULL)
		return -EINVAL;
	if (data == NULL)
		return scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_apply_pr_state_async",
					   "data is NULL");
	d = calloc(1, sizeof(*d));
	op = d ? scsitgt__tmf_op_new_home(lun->engine, apply_async_answer, d) : NULL;
	if (op == NULL) {
		free(d);
		return -ENOMEM;
	}
	d->cb = cb;
	d->cb_arg = cb_arg;
	d->in_call = true;
	rc = cl_apply_op(lun, data, len, op);
	/* The call's own hold: the op answers once the aborts it waits for are over. */
	scsitgt__tmf_op_put(op, scsitgt__shard_home(lun->engine));
	d->in_call = false;
	if (rc < 0) {
		/* Nothing applied, nothing aborted: the op answered inside the call. */
		if (d->ended_in_call)
			free(d);
		else
			d->cb = NULL;
		return scsitgt__pr_refused_data(lun, rc, "scsitgt_lun_apply_pr_state_async", len);
	}
	/* common.h: a callback never runs inside the call that takes it. */
	if (d->ended_in_call) {
		d->defer.fn = apply_async_deferred;
		scsitgt__engine_defer(lun->engine, &d->defer);
	}
	return 0;
}

/* An empty shared state (nothing stored yet, or the object deleted). Under lun->xlock. The
 * sequence stays: the commit that follows continues from it, so the other engines, whose
 * copies are at it too, apply that commit instead of ignoring it as older (reviewh F5). */
static void cl_apply_empty(struct scsitgt_lun *lun)
{
	struct scsitgt__pr tmp;

	memset(&tmp, 0, sizeof(tmp));
	scsitgt__list_init(&tmp.regs);
	scsitgt__pr_replace(lun->pr, &tmp);
	scsitgt__pr_sync_xflags(lun);
}

uint64_t scsitgt__lun_pr_seq(struct scsitgt_lun *lun)
{
	uint64_t seq = 0;

	uv_mutex_lock(&lun->xlock);
	if (lun->pr)
		seq = lun->pr->seq;
	uv_mutex_unlock(&lun->xlock);
	return seq;
}

int scsitgt__lun_resync_pr_state(struct scsitgt_lun *lun, const void *data, size_t len,
				 uint64_t issued_seq)
{
	struct scsitgt__pr tmp, *pr;
	struct scsitgt__pr_change ch;
	uint16_t ver = SCSITGT_PR_STATE_VERSION_SHARED;
	uint64_t before = 0;
	int rc = 0, changed = 0;

	if (lun == NULL || (len && data == NULL))
		return -EINVAL;
	memset(&tmp, 0, sizeof(tmp));
	scsitgt__list_init(&tmp.regs);
	scsitgt__pr_change_init(&ch);
	if (len)
		rc = scsitgt__pr_decode(data, len, &tmp, &ch, &ver);
	if (rc == 0 && ver != SCSITGT_PR_STATE_VERSION_SHARED)
		rc = -EINVAL;
	uv_mutex_lock(&lun->xlock);
	pr = rc < 0 ? NULL : scsitgt__pr_get(lun);
	if (rc == 0 && pr == NULL)
		rc = -ENOMEM;
	if (rc == 0)
		before = pr->seq;
	uv_mutex_unlock(&lun->xlock);
	if (rc == 0 && ch.seq > before) {
		/* Newer: as a notify's. */
		scsitgt__pr_regs_free(&tmp.regs);
		scsitgt__pr_change_clear(&ch);
		rc = cl_apply(lun, data, len);
		return rc < 0 ? rc : 1;
	}
	uv_mutex_lock(&lun->xlock);
	if (rc == 0 && ch.seq < issued_seq && pr->seq == before) {
		/* The store went back under the copy: the stored state is the truth. */
		scsitgt__pr_change_clear(&ch);
		ch.by_port[0] = '\0';
		derive_events(pr, &tmp, &ch);
		scsitgt__pr_replace(pr, &tmp);
		pr->seq = ch.seq;
		scsitgt__pr_sync_xflags(lun);
		changed = 1;
	} else {
		scsitgt__pr_change_clear(&ch);
	}
	uv_mutex_unlock(&lun->xlock);
	scsitgt__pr_regs_free(&tmp.regs);
	if (changed)
		scsitgt__pr_raise_events(lun, &ch, NULL);
	scsitgt__pr_change_clear(&ch);
	return rc < 0 ? rc : changed;
}

/* Encode the local state as version 2 with @ch; NULL on allocation failure. */
static uint8_t *cl_encode(const struct scsitgt__pr *pr, const struct scsitgt__pr_change *ch,
			  size_t *len)
{
	uint8_t *b;

	*len = scsitgt__pr_encode(pr, NULL, ch);
	b = malloc(*len);
	if (b)
		scsitgt__pr_encode(pr, b, ch);
	return b;
}

/* Put back a state cl_encode() made (it decodes: it cannot fail but for memory). */
static void cl_restore(struct scsitgt_lun *lun, const uint8_t *b, size_t len)
{
	struct scsitgt__pr tmp;
	struct scsitgt__pr_change ch;
	uint16_t ver;

	memset(&tmp, 0, sizeof(tmp));
	scsitgt__list_init(&tmp.regs);
	scsitgt__pr_change_init(&ch);
	if (scsitgt__pr_decode(b, len, &tmp, &ch, &ver) == 0)
		scsitgt__pr_replace(lun->pr, &tmp);
	else
		cl_log(lun, "cannot restore the state", ENOMEM);
	scsitgt__pr_regs_free(&tmp.regs);
	scsitgt__pr_change_clear(&ch);
}

static void cl_start(struct scsitgt_lun *lun);

void scsitgt__pr_cluster_fail(struct scsitgt__cmd *cmd, int status)
{
	switch (status) {
	case -EBUSY:
	case -EAGAIN:
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		break;
	case -ETIMEDOUT:
	case -ENOTCONN:
	case -ESHUTDOWN:
	case -ECONNREFUSED:
	case -EHOSTUNREACH:
		/* HARDWARE ERROR, LOGICAL UNIT COMMUNICATION FAILURE (SPC-5 Table F.1). */
		scsitgt__cmd_complete_raw(cmd, SENSE_HARDWARE_ERROR, 0x08, 0x00);
		break;
	default:
		scsitgt__cmd_complete(cmd, SCSITGT__SR_INTERNAL_FAILURE);
		break;
	}
}

/* End the request at the head of the queue; the next one starts. @status < 0: a store error,
 * else @reason. The command ends on its own shard. Loop: home. */
static void cl_finish(struct scsitgt_pr_req *req, int status, enum scsitgt__sense_reason reason)
{
	struct scsitgt_lun *lun = req->lun;

	scsitgt__list_remove(&req->node);
	free(req->data);
	req->data = NULL;
	req->status = status;
	req->reason = reason;
	/* (a command on home ends here, and the request with it) */
	scsitgt__home_call_back(&req->hc);
	if (lun->pr && lun->pr->cl_on)
		cl_start(lun);
}

static void cl_fetch(struct scsitgt_pr_req *req)
{
	struct scsitgt__pr *pr = req->lun->pr;

	req->busy = true;
	req->commit = false;
	req->delivered = false;
	pr->cl.fetch(pr->cl_arg, req->lun, req);
}

/* Start the request at the head of the queue, if it is not running yet. */
static void cl_start(struct scsitgt_lun *lun)
{
	struct scsitgt__pr *pr = lun->pr;
	struct scsitgt_pr_req *req;

	if (scsitgt__list_empty(&pr->cl_queue))
		return;
	req = scsitgt__container_of(pr->cl_queue.next, struct scsitgt_pr_req, node);
	if (req->busy)
		return;
	if (scsitgt__home_call_aborted(&req->hc)) {
		cl_finish(req, 0, SCSITGT__SR_ABORTED);
		return;
	}
	cl_fetch(req);
}

void scsitgt__pr_cluster_out(struct scsitgt_pr_req *req)
{
	struct scsitgt__pr *pr = req->lun->pr;

	scsitgt__list_add_tail(&pr->cl_queue, &req->node);
	cl_start(req->lun);
}

SCSITGT_EXPORT void scsitgt_pr_req_complete_fetch(struct scsitgt_pr_req *req, int status,
						  const void *data, size_t len, uint64_t version)
{
	struct scsitgt_lun *lun;
	struct scsitgt__cmd *cmd;
	struct scsitgt__pr *pr;
	struct scsitgt__pr_change ch;
	enum scsitgt__sense_reason r;
	uint8_t *before, *after;
	size_t blen, alen;
	int rc;

	if (req == NULL || !req->busy || req->commit)
		return;
	lun = req->lun;
	cmd = req->hc.cmd;
	pr = lun->pr;
	req->busy = false;
	if (status < 0) {
		cl_log(lun, "fetch", status);
		cl_finish(req, status, SCSITGT__SR_OK);
		return;
	}
	if (data && len) {
		rc = cl_apply(lun, data, len);
		if (rc < 0) {
			cl_log(lun, "the stored state is unreadable", rc);
			cl_finish(req, rc == -ENOMEM ? -ENOMEM : -EIO, SCSITGT__SR_OK);
			return;
		}
	} else {
		uv_mutex_lock(&lun->xlock);
		cl_apply_empty(lun);
		uv_mutex_unlock(&lun->xlock);
	}
	if (scsitgt__home_call_aborted(&req->hc)) {
		cl_finish(req, 0, SCSITGT__SR_ABORTED);
		return;
	}
	if (req->in) {
		/* A PERSISTENT RESERVE IN on a copy called stale: the stored state is applied, its
		 * shard answers from it (scsitgt__pr_cluster_in()). */
		cl_finish(req, 0, SCSITGT__SR_OK);
		return;
	}
	/* Execute with the unit attentions captured; compare before and after (same sequence,
	 * no events) to see whether anything changed. The state other loops read stays the
	 * committed one: the lock is held until it is put back. */
	uv_mutex_lock(&lun->xlock);
	scsitgt__pr_change_init(&ch);
	ch.seq = pr->seq;
	before = cl_encode(pr, &ch, &blen);
	ch.seq = 0;
	if (before == NULL) {
		uv_mutex_unlock(&lun->xlock);
		cl_finish(req, -ENOMEM, SCSITGT__SR_OK);
		return;
	}
	pr->capture = &ch;
	r = scsitgt__pr_out_exec(cmd, &req->self);
	pr->capture = NULL;
	{
		struct scsitgt__pr_change same;

		scsitgt__pr_change_init(&same);
		same.seq = pr->seq;
		after = cl_encode(pr, &same, &alen);
	}
	if (r != SCSITGT__SR_OK || ch.failed || after == NULL ||
	    (alen == blen && memcmp(after, before, blen) == 0)) {
		/* Refused (nothing changed), or no change to commit. */
		if (after == NULL || alen != blen || memcmp(after, before, blen) != 0)
			cl_restore(lun, before, blen);
		scsitgt__pr_sync_xflags(lun);
		uv_mutex_unlock(&lun->xlock);
		free(before);
		free(after);
		scsitgt__pr_change_clear(&ch);
		if (ch.failed && r == SCSITGT__SR_OK)
			r = SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
		cl_finish(req, 0, r);
		return;
	}
	free(after);
	/* The change to commit: the next sequence, who made it, its events. */
	ch.seq = pr->seq + 1;
	ch.by_rel_port_id = req->self.rel_port_id;
	memcpy(ch.by_port, req->self.iport, sizeof(ch.by_port));
	req->data = cl_encode(pr, &ch, &req->len);
	scsitgt__pr_change_clear(&ch);
	/* The local state stays the committed one until the store says yes. */
	cl_restore(lun, before, blen);
	scsitgt__pr_sync_xflags(lun);
	uv_mutex_unlock(&lun->xlock);
	free(before);
	if (req->data == NULL) {
		cl_finish(req, -ENOMEM, SCSITGT__SR_OK);
		return;
	}
	req->busy = true;
	req->commit = true;
	pr->cl.commit(pr->cl_arg, lun, req, req->data, req->len, version);
}

/* The command's shard, the hold dropped: the answer from the state just fetched, or the
 * store's failure. */
static void cl_in_done(struct scsitgt__home_call *hc)
{
	struct scsitgt_pr_req *req = scsitgt__container_of(hc, struct scsitgt_pr_req, hc);

	if (req->status < 0)
		scsitgt__pr_cluster_fail(hc->cmd, req->status);
	else if (req->reason != SCSITGT__SR_OK)
		scsitgt__cmd_complete(hc->cmd, req->reason);
	else
		scsitgt__pr_in_answer(hc->cmd);
	scsitgt__home_call_free(hc);
}

/* Home: into the store's queue, behind the PERSISTENT RESERVE OUTs before it (a state they
 * commit is then part of the answer). A store removed meanwhile: the local copy answers. */
static void cl_in_home(struct scsitgt__home_call *hc)
{
	struct scsitgt_pr_req *req = scsitgt__container_of(hc, struct scsitgt_pr_req, hc);
	bool on;

	uv_mutex_lock(&req->lun->xlock);
	on = scsitgt__pr_cluster_on(req->lun);
	uv_mutex_unlock(&req->lun->xlock);
	if (!on) {
		scsitgt__home_call_back(hc);
		return;
	}
	req->in = true;
	scsitgt__pr_cluster_out(req);
}

/*
 * SPC-5 §6.16 answers with the current registrations and reservation; a copy that may have
 * missed a change committed through another engine (a broken watch) could show keys that
 * were preempted, or miss new ones. So the state is read from the store first, at the cost of
 * one round trip, for as long as the store calls the copy stale; a store that cannot be read
 * fails the command as a PERSISTENT RESERVE OUT's fetch does (libscsitgt/pr.h).
 */
void scsitgt__pr_cluster_in(struct scsitgt__cmd *cmd)
{
	scsitgt__pr_req_home(cmd, cl_in_home, cl_in_done);
}

void scsitgt__pr_req_home(struct scsitgt__cmd *cmd, scsitgt__home_call_fn run,
			  scsitgt__home_call_fn done)
{
	/* The reservation state's stores and the target's nexuses are home's: the command goes
	 * there (held), its record allocated before anything changes. */
	struct scsitgt__home_call *hc =
		scsitgt__home_call_new(cmd, NULL, sizeof(struct scsitgt_pr_req));
	struct scsitgt_pr_req *req;

	if (hc == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	req = scsitgt__container_of(hc, struct scsitgt_pr_req, hc);
	req->lun = cmd->lun;
	scsitgt__pr_nexus(&req->self, cmd->sess);
	scsitgt__home_call_later(hc, run, done);
}

/* Home: the committed change has reached this engine's nexuses. */
static void cl_commit_done(void *arg)
{
	cl_finish(arg, 0, SCSITGT__SR_OK);
}

SCSITGT_EXPORT void scsitgt_pr_req_complete_commit(struct scsitgt_pr_req *req, int status)
{
	struct scsitgt_lun *lun;
	struct scsitgt__cmd *cmd;
	int rc;

	if (req == NULL || !req->busy || !req->commit)
		return;
	lun = req->lun;
	cmd = req->hc.cmd;
	req->busy = false;
	req->commit = false;
	if (status < 0 && req->delivered) {
		/* The store delivered our state back to us before it failed to say so: it
		 * stored it (pr.h: a store delivers a state only once stored), and whatever it
		 * answers now the change took effect. Executing it again on a state that already
		 * holds it (-ESTALE) would refuse it (a PREEMPT's key is gone) or change
		 * something else; failing it would make the initiator retry a change that is
		 * made. It ends as committed. */
		cl_log(lun, "commit answered an error after delivering the committed state",
		       status);
		status = 0;
	}
	if (status == 0) {
		struct scsitgt__pr_change ch;

		/* Applied if it is still the newest; its events in any case (cl_apply_locked()):
		 * a PREEMPT AND ABORT's aborts must precede its status. */
		scsitgt__pr_change_init(&ch);
		uv_mutex_lock(&lun->xlock);
		rc = cl_apply_locked(lun, req->data, req->len, &ch, true);
		/* Saved for APTPL as well when the host also installed a save callback (under the
		 * lock, as pr.h says and pr_out.c does, so that saves are ordered). The cluster
		 * store has it: a local save that fails does not fail the command. */
		(void)scsitgt__pr_changed(lun);
		uv_mutex_unlock(&lun->xlock);
		if (rc < 0)
			cl_log(lun, "cannot apply the committed state", rc);
		/* The status follows this engine's unit attentions and aborts, as without a store
		 * (pr_out.c); the request stays at the head of the queue meanwhile (busy). */
		req->busy = true;
		req->commit = true;
		scsitgt__tmf_pr_events(lun, &ch, cmd, cl_commit_done, req);
		scsitgt__pr_change_clear(&ch);
		return;
	}
	free(req->data);
	req->data = NULL;
	if (status == -ESTALE || status == -ECANCELED) {
		/* Another engine committed first: fetch its state and execute again. */
		if (scsitgt__home_call_aborted(&req->hc)) {
			cl_finish(req, 0, SCSITGT__SR_ABORTED);
		} else if (++req->tries > SCSITGT_PR_CLUSTER_RETRIES) {
			cl_log(lun, "too many concurrent changes", status);
			cl_finish(req, -EBUSY, SCSITGT__SR_OK);
		} else {
			cl_fetch(req);
		}
		return;
	}
	cl_log(lun, "commit", status);
	cl_finish(req, status, SCSITGT__SR_OK);
}

SCSITGT_EXPORT int scsitgt_lun_set_pr_cluster(struct scsitgt_lun *lun,
					      const struct scsitgt_pr_cluster_ops *ops, void *arg)
{
	struct scsitgt_pr_cluster_ops cl;
	struct scsitgt__pr *pr;
	int rc;

	if (lun == NULL)
		return -EINVAL;
	memset(&cl, 0, sizeof(cl));
	if (ops) {
		size_t n = ops->size < sizeof(cl) ? ops->size : sizeof(cl);

		if (ops->size <
		    offsetof(struct scsitgt_pr_cluster_ops, commit) + sizeof(ops->commit))
			return scsitgt__pr_refused(
				lun, -EINVAL, "scsitgt_lun_set_pr_cluster",
				"ops size %zu: below %zu, the table must reach commit", ops->size,
				offsetof(struct scsitgt_pr_cluster_ops, commit) +
					sizeof(ops->commit));
		memcpy(&cl, ops, n);
		if (cl.fetch == NULL || cl.commit == NULL)
			return scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_set_pr_cluster",
						   "ops %s is NULL: a store needs fetch and commit",
						   cl.fetch == NULL ? "fetch" : "commit");
	}
	uv_mutex_lock(&lun->xlock);
	pr = scsitgt__pr_get(lun);
	rc = pr == NULL ? -ENOMEM : !scsitgt__list_empty(&pr->cl_queue) ? -EBUSY : 0;
	uv_mutex_unlock(&lun->xlock);
	if (rc < 0)
		return rc;
	/* The host's hook runs outside the LUN's lock. */
	if (pr->cl_on && pr->cl.detach)
		pr->cl.detach(pr->cl_arg, lun);
	uv_mutex_lock(&lun->xlock);
	pr->cl = cl;
	pr->cl_arg = ops ? arg : NULL;
	pr->cl_on = ops != NULL;
	/* A new store starts from the state the host applied; no store, no stale copy. */
	pr->cl_sync = SCSITGT_PR_SYNCED;
	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_PR_UNSYNCED, false);
	/* nor deliveries announced, nor a lease: the held commands are decided again below */
	pr->cl_pending = 0;
	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_PR_PENDING, false);
	atomic_store_explicit(&pr->lease_ms, 0, memory_order_relaxed);
	pr->recheck_asked = false;
	/* Commands are stamped with the sequence they are admitted under (pr.c), after
	 * the sequence is published. */
	scsitgt__pr_sync_xflags(lun);
	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_PR_SHARED, pr->cl_on);
	uv_mutex_unlock(&lun->xlock);
	scsitgt__pr_hold_release(lun, true);
	return 0;
}

static const char *const cl_sync_names[] = {
	[SCSITGT_PR_SYNCED] = "in sync with its store again",
	[SCSITGT_PR_RESYNCING] = "may be stale, being read again: commands a reservation could "
				 "refuse get BUSY",
	[SCSITGT_PR_UNREACHABLE] = "may be stale, its store does not answer: commands a "
				   "reservation could refuse get NOT READY (04h/01h)",
	[SCSITGT_PR_FENCED] = "may be stale, this engine is fenced from its store: commands a "
			      "reservation could refuse get NOT READY (04h/0Ah)",
};

SCSITGT_EXPORT int scsitgt_lun_set_pr_sync(struct scsitgt_lun *lun, enum scsitgt_pr_sync state)
{
	bool changed = false;
	int rc = 0;

	if (lun == NULL)
		return -EINVAL;
	if ((unsigned int)state > SCSITGT_PR_FENCED)
		return scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_set_pr_sync",
					   "state %d: not SCSITGT_PR_SYNCED (0) .. "
					   "SCSITGT_PR_FENCED (%d)",
					   (int)state, (int)SCSITGT_PR_FENCED);
	uv_mutex_lock(&lun->xlock);
	if (!scsitgt__pr_cluster_on(lun)) {
		rc = -ENOENT;
	} else if (lun->pr->cl_sync != state) {
		changed = true;
		lun->pr->cl_sync = state;
		/* A lease that ran out before stays out (a re-watch gives none): the first
		 * command held from now asks the store at once instead of waiting for its next
		 * periodic renewal (review34 N1). */
		lun->pr->recheck_asked = false;
		scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_PR_UNSYNCED,
					state != SCSITGT_PR_SYNCED);
	}
	uv_mutex_unlock(&lun->xlock);
	/* Held commands get what the state says (a stale copy's answer, or the copy's). */
	if (changed)
		scsitgt__pr_hold_release(lun, false);
	if (changed)
		scsitgt__log(&lun->tgt->engine->log,
			     state == SCSITGT_PR_SYNCED ? SCSITGT_LOG_NOTICE : SCSITGT_LOG_WARNING,
			     "core", "LUN %llu: reservation state %s", (unsigned long long)lun->id,
			     cl_sync_names[state]);
	return rc;
}

void scsitgt__pr_cluster_free(struct scsitgt_lun *lun)
{
	struct scsitgt__pr *pr = lun->pr;

	if (pr == NULL || !pr->cl_on)
		return;
	/* Under the lock: a store's thread may be announcing a delivery right now
	 * (scsitgt_lun_start_pr_delivery()); its detach makes it stop before the state goes. */
	uv_mutex_lock(&lun->xlock);
	pr->cl_on = false;
	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_PR_SHARED, false);
	uv_mutex_unlock(&lun->xlock);
	if (pr->cl.detach)
		pr->cl.detach(pr->cl_arg, lun);
}
