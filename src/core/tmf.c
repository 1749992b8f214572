/* SPDX-License-Identifier: MIT */
/*
 * Task management (SAM-5 §7). The task set is shared by every I_T nexus of a LUN (control
 * mode page TST 000b). With TAS 1 (the default, spc_mode.c) the tasks that another nexus's
 * CLEAR TASK SET, reset or PREEMPT AND ABORT aborts are answered TASK ABORTED once they have
 * left their backend (cmd->tas, SAM-5 §5.6); with TAS 0 they end silently. Either way those
 * nexuses also learn of it by a unit attention, and the issuing nexus's own aborted tasks get
 * no response (SAM-5 §7.1).
 *
 * A command inside a backend cannot be taken back: it is marked aborted, and its response is
 * never sent. The TMF answers once every such command has left its backend (cmd.c reports it
 * through scsitgt__tmf_cmd_released), those an earlier TMF aborted that are still there too
 * (an ABORT TASK, then a LUN RESET), or when the engine's TMF timeout expires, so that a
 * backend that never completes cannot hang the initiator's error recovery. Nothing else waits:
 * other commands and nexuses go on meanwhile.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/pr.h"
#include "core/stats.h"
#include "core/tmf.h"
#include "core/ua.h"
#include "core/sbc.h"
#include "core/spc_selftest.h"

/*
 * One shard's part of a TMF (op->part[shard index]): its waiters on the commands of that shard.
 * The list is touched by that shard's loop only; `used` and the answer's message cross.
 */
struct op_part {
	/* struct scsitgt__tmf_wait.op_node of this op's waiters on this shard's commands */
	struct scsitgt__list waiters;
	/* This shard made a waiter of the op (seq_cst, against op->closed): when the op answers
	 * before they are all released, it posts `msg` here to drop them (op_unwait()). */
	_Atomic bool used;
	struct scsitgt__msg msg;
	struct scsitgt__tmf_op *op;
};

struct scsitgt__tmf_op {
	scsitgt__tmf_cb cb;
	void *cb_arg;
	/* A function of scsitgt__tmf_execute(): the nexus that issued it, whose commands that
	 * come after it are spared until it is answered (fabric ops cmd_after_tmf). Set before
	 * the op is shared, then only read. */
	const struct scsitgt__session *issuer;
	/* An enum scsitgt__tmf_response. Atomic: home may reject the op (tmf_xshard.c, a reset
	 * it could not dispatch) while its timer answers it on the issuer's loop. Relaxed: the
	 * answer is whichever value is there; the drained path is ordered by op_put. */
	_Atomic int response;
	/* The issuer's shard (its session's): the timer, the callback and the free run on its
	 * loop (issue 18: the TMF of a nexus on a worker answers there). */
	struct scsitgt__shard *shard;
	/* Holds, taken and dropped on any shard: aborted commands still in a backend that point
	 * at this op, a backend's reset_async(), the dispatch to other shards (tmf_xshard.c). */
	_Atomic unsigned int waiting;
	/* Answered (set on the issuer's loop, read on any shard, seq_cst against part[].used):
	 * a command met after this gets no waiter of the op. */
	_Atomic bool closed;
	/* The issuer's loop only: the last hold is gone, the answer is out, the timer runs. */
	bool drained;
	bool answered;
	bool timer_on;
	/* scsitgt__tmf_quiesce()'s: its timeout answers SCSITGT__TMF_REJECTED. */
	bool quiesce;
	/* scsitgt__tmf_quiesce_fence()'s: called once nothing holds the op, after the answer. */
	void (*gone)(void *arg);
	void *gone_arg;
	/* The last hold went on another shard: it tells the issuer's loop through this. */
	struct scsitgt__msg drained_msg;
	uv_timer_t timer;
	/* one per shard of the engine */
	unsigned int nparts;
	struct op_part part[];
};

static void op_maybe_free(struct scsitgt__tmf_op *op);

static void op_closed(uv_handle_t *h)
{
	struct scsitgt__tmf_op *op = h->data;

	op->timer_on = false;
	op_maybe_free(op);
}

/* Free the op once it has answered, its timer is closed and no command points at it. */
static void op_maybe_free(struct scsitgt__tmf_op *op)
{
	if (op->answered && op->drained && !op->timer_on)
		free(op);
}

static void op_unwait(struct scsitgt__tmf_op *op);

static void op_answer(struct scsitgt__tmf_op *op)
{
	if (op->answered)
		return;
	op->answered = true;
	/* The timer goes now: an engine can be destroyed while a backend still holds an
	 * aborted command. */
	if (op->timer_on) {
		uv_timer_stop(&op->timer);
		uv_close((uv_handle_t *)&op->timer, op_closed);
	}
	atomic_store(&op->closed, true);
	/* Answered before the commands it waited for left (its timeout): its waiters go now,
	 * each from its command's list, not when the backend returns the command (reviewd F1).
	 * Drained, it has none. The op stays until its timer is closed, a later turn. A fence's
	 * quiescence keeps them: their release is what its gone waits for (one per ended
	 * nexus, not a flood). */
	if (!op->drained && !op->gone)
		op_unwait(op);
	op->cb(op->cb_arg, (enum scsitgt__tmf_response)atomic_load_explicit(&op->response,
									    memory_order_relaxed));
}

static void op_timeout(uv_timer_t *t)
{
	struct scsitgt__tmf_op *op = t->data;

	/* The backend still holds some commands; answer anyway. They stay aborted and are freed
	 * whenever the backend returns them. A nexus that ends says that its cleanup failed. */
	if (op->quiesce)
		atomic_store_explicit(&op->response, SCSITGT__TMF_REJECTED, memory_order_relaxed);
	op_answer(op);
	op_maybe_free(op);
}

/* The issuer's loop: nothing holds the op any more. */
static void op_drained(struct scsitgt__tmf_op *op)
{
	op->drained = true;
	op_answer(op);
	/* The last command it covered has left its backend, or its engine gave it up. */
	if (op->gone)
		op->gone(op->gone_arg);
	op_maybe_free(op);
}

static void op_drained_msg(struct scsitgt__msg *msg)
{
	op_drained(scsitgt__container_of(msg, struct scsitgt__tmf_op, drained_msg));
}

void scsitgt__tmf_op_get(struct scsitgt__tmf_op *op)
{
	atomic_fetch_add_explicit(&op->waiting, 1, memory_order_relaxed);
}

void scsitgt__tmf_op_put(struct scsitgt__tmf_op *op, const struct scsitgt__shard *here)
{
	/* acq_rel: what the other holders did happens before the answer. */
	if (atomic_fetch_sub_explicit(&op->waiting, 1, memory_order_acq_rel) != 1)
		return;
	if (here == op->shard) {
		op_drained(op);
		return;
	}
	/* The last touch of the op on this thread. */
	op->drained_msg.fn = op_drained_msg;
	scsitgt__shard_post(op->shard, &op->drained_msg);
}

void scsitgt__tmf_op_reject(struct scsitgt__tmf_op *op)
{
	atomic_store_explicit(&op->response, SCSITGT__TMF_REJECTED, memory_order_relaxed);
}

/*
 * One TMF waiting for one aborted command still in its backend. A command has one for each
 * TMF that covers it while it is there (the ABORT TASK that aborted it, then a LUN RESET, a
 * Logout's quiesce...): SAM-5 §7.7, a later function answers only once the task is gone too.
 * Made on the abort path only (a command no TMF touched has none) and only on the command's
 * loop, which alone reads and changes both lists it is on: the command's (a ring, cmd->tmf_wait
 * its first, in the order they came) and the op's part for that shard. It goes when the command
 * leaves its backend, or when its op answers first (its timeout): O(1) either way, so a flood
 * of TMFs answered at their timeout leaves nothing behind on a command a backend keeps.
 */
struct scsitgt__tmf_wait {
	struct scsitgt__tmf_op *op;
	struct scsitgt__cmd *cmd;
	struct scsitgt__list cmd_node;
	struct scsitgt__list op_node;
};

/* Unlink @w from both its lists and free it; the caller drops its hold on the op. Loop: the
 * command's. */
static void wait_drop(struct scsitgt__tmf_wait *w)
{
	struct scsitgt__cmd *cmd = w->cmd;

	if (cmd->tmf_wait == w)
		cmd->tmf_wait = w->cmd_node.next == &w->cmd_node ?
					NULL :
					scsitgt__container_of(w->cmd_node.next,
							      struct scsitgt__tmf_wait, cmd_node);
	scsitgt__list_remove(&w->cmd_node);
	scsitgt__list_remove(&w->op_node);
	free(w);
}

void scsitgt__tmf_cmd_released(struct scsitgt__cmd *cmd)
{
	struct scsitgt__tmf_wait *w;

	/* First come, first answered. Each one read anew: a put may answer an op, whose answer
	 * drops only that op's own waiters, none of them on this command any more. */
	while ((w = cmd->tmf_wait) != NULL) {
		struct scsitgt__tmf_op *op = w->op;

		wait_drop(w);
		scsitgt__tmf_op_put(op, cmd->shard);
	}
}

void scsitgt__tmf_wait_for(struct scsitgt__tmf_op *op, struct scsitgt__cmd *cmd)
{
	struct op_part *p = &op->part[cmd->shard->index];
	struct scsitgt__tmf_wait *w;

	/* An op reaches a command at most once (abort_matching() visits each command of a
	 * nexus once, and a nexus is listed once per LUN): no search. `used` before `closed`:
	 * either this sees the answer and makes no waiter, or the answer sees `used` and sends
	 * this shard its message, which runs here after this (op_unwait()). */
	if (!atomic_load_explicit(&p->used, memory_order_relaxed))
		atomic_store(&p->used, true);
	if (atomic_load(&op->closed))
		return;
	w = malloc(sizeof(*w));
	/* It cannot wait for the command: it does not claim it is gone. */
	if (w == NULL) {
		scsitgt__tmf_op_reject(op);
		return;
	}
	w->op = op;
	w->cmd = cmd;
	if (cmd->tmf_wait) {
		/* Last in the ring (before its first): released in the order they came. */
		scsitgt__list_add_tail(&cmd->tmf_wait->cmd_node, &w->cmd_node);
	} else {
		scsitgt__list_init(&w->cmd_node);
		cmd->tmf_wait = w;
	}
	scsitgt__list_add_tail(&p->waiters, &w->op_node);
	scsitgt__tmf_op_get(op);
}

/* Drop the waiters of @p's op on @p's shard @here, each with its hold. Loop: @here. */
static void part_drop(struct op_part *p, const struct scsitgt__shard *here)
{
	while (!scsitgt__list_empty(&p->waiters)) {
		struct scsitgt__tmf_wait *w =
			scsitgt__container_of(p->waiters.next, struct scsitgt__tmf_wait, op_node);

		wait_drop(w);
		scsitgt__tmf_op_put(p->op, here);
	}
}

static void part_unwait_msg(struct scsitgt__msg *msg)
{
	struct op_part *p = scsitgt__container_of(msg, struct op_part, msg);
	struct scsitgt__tmf_op *op = p->op;
	const struct scsitgt__shard *here = &op->shard->engine->shards[p - op->part];

	part_drop(p, here);
	/* the message's own hold (op_unwait()) */
	scsitgt__tmf_op_put(op, here);
}

/* A hold taken only while another still exists: false once the last is gone (the drained
 * answer is then on its way, and no waiter is left anywhere: each one holds the op). */
static bool op_tryget(struct scsitgt__tmf_op *op)
{
	unsigned int n = atomic_load_explicit(&op->waiting, memory_order_relaxed);

	while (n != 0)
		if (atomic_compare_exchange_weak_explicit(
			    &op->waiting, &n, n + 1, memory_order_relaxed, memory_order_relaxed))
			return true;
	return false;
}

/*
 * @op answered before its waiters were released (closed is set): each shard that made some
 * drops them, this loop at once, another by a message (held until it has run there). Loop: the
 * issuer's.
 */
static void op_unwait(struct scsitgt__tmf_op *op)
{
	if (!op_tryget(op))
		return;
	for (unsigned int i = 0; i < op->nparts; i++) {
		struct op_part *p = &op->part[i];
		struct scsitgt__shard *s = &op->shard->engine->shards[i];

		if (!atomic_load(&p->used))
			continue;
		if (s == op->shard) {
			part_drop(p, s);
			continue;
		}
		scsitgt__tmf_op_get(op);
		p->msg.fn = part_unwait_msg;
		scsitgt__shard_post(s, &p->msg);
	}
	scsitgt__tmf_op_put(op, op->shard);
}

unsigned int scsitgt__tmf_session_waiters(const struct scsitgt__session *sess)
{
	unsigned int n = 0;

	for (const struct scsitgt__list *p = sess->cmds.next; p != &sess->cmds; p = p->next) {
		const struct scsitgt__cmd *c =
			scsitgt__container_of(p, struct scsitgt__cmd, sess_node);
		const struct scsitgt__tmf_wait *w = c->tmf_wait;

		if (w == NULL)
			continue;
		n++;
		for (const struct scsitgt__list *q = w->cmd_node.next; q != &w->cmd_node;
		     q = q->next)
			n++;
	}
	return n;
}

/* Abort the live commands of @sess matching @lun_id (all LUNs when @all_luns; only those of
 * @lun when not NULL), for ABORT TASK @tag, and with @pr_before admitted before that shared
 * reservation state (scsitgt__tmf_abort_session()). With @op, it also waits for the matching
 * ones an earlier TMF aborted that are still in their backend. Returns how many it aborted.
 * Loop: @sess's shard. */
static unsigned int abort_matching(struct scsitgt__session *sess, uint64_t lun_id, bool all_luns,
				   const struct scsitgt_lun *lun, bool by_tag, uint64_t tag,
				   const struct scsitgt__cmd *except, struct scsitgt__tmf_op *op,
				   bool cancel_ios, uint64_t pr_before, bool by_other)
{
	struct scsitgt__list *pos, *tmp;
	unsigned int n = 0;

	scsitgt__list_foreach_safe(pos, tmp, &sess->cmds)
	{
		struct scsitgt__cmd *c = scsitgt__container_of(pos, struct scsitgt__cmd, sess_node);
		bool live = scsitgt__cmd_is_live(c);

		if (c == except || !(live || (op && scsitgt__cmd_aborted_held(c))))
			continue;
		if (lun ? c->lun != lun : !all_luns && c->lun_id != lun_id)
			continue;
		if (by_tag && c->tag != tag)
			continue;
		/* SPC-5 §5.13.11.5 (PREEMPT AND ABORT): the tasks the preemption found; those
		 * admitted under its state or a later one only meet its restrictions. */
		if (pr_before && c->pr_seq >= pr_before)
			continue;
		/* Issued after the function by its own nexus: not its to abort. Only the issuer's
		 * shard (this loop, then) reads `answered`; once answered (a timeout before a
		 * late pass here), cb_arg may be gone and nothing is spared. */
		if (op && op->issuer == sess && !op->answered && sess->ops->cmd_after_tmf &&
		    sess->ops->cmd_after_tmf(c, op->cb_arg))
			continue;
		/* Aborted earlier, still in its backend: this TMF answers after it too. */
		if (!live) {
			/* its own nexus aborts it too: no TASK ABORTED for it (SAM-5 §7.2) */
			if (!by_other)
				c->tas = false;
			scsitgt__tmf_wait_for(op, c);
			continue;
		}
		n++;
		/* Another nexus aborts it under TAS 1: TASK ABORTED, for a command its fabric
		 * has handed over whole (not one still taking Data-Out: cmd.h). */
		c->tas = by_other && c->lun && c->lun->mode.tas &&
			 (c->state == SCSITGT__CMD_EXEC || c->state == SCSITGT__CMD_PARKED);
		/* with @op, the TMF waits for it to leave its backend. */
		scsitgt__cmd_abort(c, op, cancel_ios);
	}
	return n;
}

unsigned int scsitgt__tmf_abort_session(struct scsitgt__session *sess, uint64_t lun_id,
					const struct scsitgt_lun *lun,
					const struct scsitgt__cmd *except,
					struct scsitgt__tmf_op *op, bool cancel_ios,
					uint64_t pr_before, bool by_other)
{
	return abort_matching(sess, lun_id, false, lun, false, 0, except, op, cancel_ios, pr_before,
			      by_other);
}

static unsigned int count_matching(struct scsitgt__session *sess, uint64_t lun_id, bool by_tag,
				   uint64_t tag)
{
	unsigned int n = 0;

	for (struct scsitgt__list *p = sess->cmds.next; p != &sess->cmds; p = p->next) {
		const struct scsitgt__cmd *c =
			scsitgt__container_of(p, struct scsitgt__cmd, sess_node);

		/* An aborted command still in a backend is still in the task set: later TMFs
		 * wait for it (scsitgt__cmd_aborted_held()), so QUERY TASK says so too. */
		if ((scsitgt__cmd_is_live(c) || scsitgt__cmd_aborted_held(c)) &&
		    c->lun_id == lun_id && (!by_tag || c->tag == tag))
			n++;
	}
	return n;
}

/* The backend's reset_async() is done (home): one hold fewer on the TMF's answer. */
static void reset_async_done(void *arg, int status)
{
	struct scsitgt__tmf_op *op = arg;

	(void)status;
	scsitgt__tmf_op_put(op, op->shard->engine->shards);
}

/*
 * SAM-5 §6.3.3 logical unit reset of @lun, after its tasks were aborted on every shard
 * (tmf_xshard.c): the SPC-2 reservation ends, a self-test stops, and every nexus, the
 * resetting one included, finds @ua. With @op (NULL: a reset applied from another engine,
 * scsitgt_lun_apply_reset()), the backend is told and the TMF waits for its reset_async().
 * Loop: home.
 */
void scsitgt__tmf_lun_reset_rest(struct scsitgt_lun *lun, enum scsitgt__sense_reason ua,
				 struct scsitgt__tmf_op *op)
{
	scsitgt__pr_reset(lun);
	/* SPC-5 §6.42: a reset aborts a self-test in progress. */
	scsitgt__selftest_reset(lun);
	/* SBC-4 §5.16: a reset releases PREVENT ALLOW MEDIUM REMOVAL (every nexus's). */
	scsitgt__sbc_prevent_release(lun, NULL);
	/* The backend's own state (backend.h reset()), after its ios were aborted. */
	if (op && lun->ops.reset_async) {
		scsitgt__tmf_op_get(op);
		lun->ops.reset_async(lun->bctx, reset_async_done, op);
	} else if (op && lun->ops.reset) {
		lun->ops.reset(lun->bctx);
	}
	scsitgt__ua_establish_all(lun->tgt, lun->id, NULL, ua);
}

SCSITGT_EXPORT int scsitgt_lun_apply_reset(struct scsitgt_lun *lun)
{
	if (lun == NULL)
		return -EINVAL;
	/* The tasks of every shard, then the rest (tmf_xshard.c). */
	scsitgt__tmf_xshard(lun->tgt, SCSITGT__TMF_LUN_RESET, NULL, lun->id, NULL, NULL, NULL);
	return 0;
}

struct apply_reset_done {
	struct scsitgt__deferred defer;
	scsitgt_done_cb cb;
	void *cb_arg;
	/* Home is still inside scsitgt_lun_apply_reset_async(), and the reset already ended
	 * there (no worker shard held a nexus of the target): the call defers the callback. */
	bool in_call, ended_in_call;
};

static void apply_reset_call_back(struct apply_reset_done *d)
{
	scsitgt_done_cb cb = d->cb;
	void *cb_arg = d->cb_arg;

	free(d);
	cb(cb_arg, 0);
}

static void apply_reset_deferred(struct scsitgt__deferred *defer)
{
	apply_reset_call_back(scsitgt__container_of(defer, struct apply_reset_done, defer));
}

/* On home (tmf_xshard.c answers there), inside the call or later. */
static void apply_reset_done(void *arg)
{
	struct apply_reset_done *d = arg;

	if (d->in_call) {
		d->ended_in_call = true;
		return;
	}
	apply_reset_call_back(d);
}

SCSITGT_EXPORT int scsitgt_lun_apply_reset_async(struct scsitgt_lun *lun, scsitgt_done_cb cb,
						 void *cb_arg)
{
	struct apply_reset_done *d;
	int rc;

	if (lun == NULL || cb == NULL)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	d->cb = cb;
	d->cb_arg = cb_arg;
	d->in_call = true;
	rc = scsitgt__tmf_xshard(lun->tgt, SCSITGT__TMF_LUN_RESET, NULL, lun->id, NULL,
				 apply_reset_done, d);
	d->in_call = false;
	if (rc < 0) {
		free(d);
		return rc;
	}
	/* common.h: a callback never runs inside the call that takes it. */
	if (d->ended_in_call) {
		d->defer.fn = apply_reset_deferred;
		scsitgt__engine_defer(lun->engine, &d->defer);
	}
	return 0;
}

static struct scsitgt__tmf_op *op_new_on(struct scsitgt__shard *shard, scsitgt__tmf_cb cb,
					 void *cb_arg, uint32_t ms)
{
	unsigned int nparts = shard->engine->nshards;
	struct scsitgt__tmf_op *op = calloc(1, sizeof(*op) + nparts * sizeof(op->part[0]));

	if (op == NULL)
		return NULL;
	op->nparts = nparts;
	for (unsigned int i = 0; i < nparts; i++) {
		scsitgt__list_init(&op->part[i].waiters);
		atomic_init(&op->part[i].used, false);
		op->part[i].op = op;
	}
	atomic_init(&op->closed, false);
	op->cb = cb;
	op->cb_arg = cb_arg;
	atomic_init(&op->response, SCSITGT__TMF_COMPLETE);
	op->shard = shard;
	/* The TMF's own hold until it has made its aborts (dropped by the caller). */
	atomic_init(&op->waiting, 1);
	/* On the issuer's loop: its callback runs there. */
	if (uv_timer_init(shard->loop, &op->timer) == 0) {
		op->timer_on = true;
		op->timer.data = op;
		uv_timer_start(&op->timer, op_timeout, ms, 0);
	}
	return op;
}

static struct scsitgt__tmf_op *op_new(struct scsitgt__session *sess, scsitgt__tmf_cb cb,
				      void *cb_arg, uint32_t ms)
{
	return op_new_on(sess->shard, cb, cb_arg, ms);
}

struct scsitgt__tmf_op *scsitgt__tmf_op_new_home(struct scsitgt_engine *engine, scsitgt__tmf_cb cb,
						 void *cb_arg)
{
	uint32_t ms = atomic_load_explicit(&engine->tmf_timeout_ms, memory_order_relaxed);

	return op_new_on(scsitgt__shard_home(engine), cb, cb_arg,
			 ms ? ms : SCSITGT__TMF_TIMEOUT_MS_DEFAULT);
}

/* The host's TMF event for function @type of nexus @sess on LUN @lun_id; the LUN when it
 * exists for the nexus (a LUN masked from this initiator does not: core/acl.c), else NULL. */
static struct scsitgt_lun *tmf_announce(struct scsitgt__session *sess, enum scsitgt__tmf_type type,
					uint64_t lun_id)
{
	struct scsitgt_lun *l = scsitgt__session_find_lun(sess, lun_id);

	static const uint8_t function[] = {
		[SCSITGT__TMF_ABORT_TASK] = SCSITGT_TMF_ABORT_TASK,
		[SCSITGT__TMF_ABORT_TASK_SET] = SCSITGT_TMF_ABORT_TASK_SET,
		[SCSITGT__TMF_CLEAR_TASK_SET] = SCSITGT_TMF_CLEAR_TASK_SET,
		[SCSITGT__TMF_LUN_RESET] = SCSITGT_TMF_LOGICAL_UNIT_RESET,
		[SCSITGT__TMF_TARGET_WARM_RESET] = SCSITGT_TMF_TARGET_WARM_RESET,
		[SCSITGT__TMF_TARGET_COLD_RESET] = SCSITGT_TMF_TARGET_COLD_RESET,
		[SCSITGT__TMF_CLEAR_ACA] = SCSITGT_TMF_CLEAR_ACA,
		[SCSITGT__TMF_QUERY_TASK] = SCSITGT_TMF_QUERY_TASK,
		[SCSITGT__TMF_QUERY_TASK_SET] = SCSITGT_TMF_QUERY_TASK_SET,
		[SCSITGT__TMF_QUERY_ASYNC_EVENT] = SCSITGT_TMF_QUERY_ASYNC_EVENT,
	};

	if ((size_t)type < sizeof(function))
		scsitgt__event_tmf(sess, l, lun_id, function[type]);
	return l;
}

void scsitgt__tmf_abort_absent(struct scsitgt__session *sess, const uint8_t lun[8],
			       enum scsitgt__tmf_response absent, scsitgt__tmf_cb cb, void *cb_arg)
{
	/* SAM-5 §7.2: nothing to abort; the LUN is checked as for a task that exists. */
	cb(cb_arg, tmf_announce(sess, SCSITGT__TMF_ABORT_TASK, scsitgt__lun_decode(lun)) ?
			   absent :
			   SCSITGT__TMF_LUN_NOT_FOUND);
}

void scsitgt__tmf_execute(struct scsitgt__session *sess, enum scsitgt__tmf_type type,
			  const uint8_t lun[8], uint64_t ref_tag, scsitgt__tmf_cb cb, void *cb_arg)
{
	uint64_t lun_id = scsitgt__lun_decode(lun);
	bool lun_scoped = type != SCSITGT__TMF_TARGET_WARM_RESET &&
			  type != SCSITGT__TMF_TARGET_COLD_RESET;
	struct scsitgt_lun *l = tmf_announce(sess, type, lun_id);
	struct scsitgt__tmf_op *op;
	uint32_t timeout_ms;

	if (lun_scoped && l == NULL) {
		cb(cb_arg, SCSITGT__TMF_LUN_NOT_FOUND);
		return;
	}
	switch (type) {
	case SCSITGT__TMF_QUERY_TASK:
	case SCSITGT__TMF_QUERY_TASK_SET:
		/* SAM-5 §7.8, §7.9: FUNCTION SUCCEEDED when the task (any task) is in the set. */
		cb(cb_arg, count_matching(sess, lun_id, type == SCSITGT__TMF_QUERY_TASK, ref_tag) ?
				   SCSITGT__TMF_SUCCEEDED :
				   SCSITGT__TMF_COMPLETE);
		return;
	case SCSITGT__TMF_QUERY_ASYNC_EVENT:
		/* SAM-5 §7.10: FUNCTION SUCCEEDED while a unit attention is pending. */
		cb(cb_arg, scsitgt__ua_pending(sess, lun_id, NULL) ? SCSITGT__TMF_SUCCEEDED :
								     SCSITGT__TMF_COMPLETE);
		return;
	case SCSITGT__TMF_CLEAR_ACA:
		/* NACA is refused in every CDB, so ACA never exists (SAM-5 §5.9.1). */
		cb(cb_arg, SCSITGT__TMF_NOT_SUPPORTED);
		return;
	default:
		break;
	}

	/* Held (op_new()) across the switch: a backend's reset_async() may finish inside it.
	 * The timeout is home's to change (a relaxed atomic: this may be a worker's loop). */
	timeout_ms = atomic_load_explicit(&sess->tgt->engine->tmf_timeout_ms, memory_order_relaxed);
	op = op_new(sess, cb, cb_arg, timeout_ms ? timeout_ms : SCSITGT__TMF_TIMEOUT_MS_DEFAULT);
	if (op == NULL) {
		cb(cb_arg, SCSITGT__TMF_REJECTED);
		return;
	}
	op->issuer = sess;
	switch (type) {
	case SCSITGT__TMF_ABORT_TASK:
		/* RFC 7143 §11.6.1: a task that already completed is "function complete"; the
		 * fabric answers "task does not exist" for tags it never saw
		 * (scsitgt__tmf_abort_absent()). Only this nexus's tasks: they run on this
		 * loop. */
		abort_matching(sess, lun_id, false, NULL, true, ref_tag, NULL, op, true, 0, false);
		break;
	case SCSITGT__TMF_ABORT_TASK_SET:
		/* SAM-5 §7.3: only the tasks of this nexus. */
		abort_matching(sess, lun_id, false, NULL, false, 0, NULL, op, true, 0, false);
		break;
	case SCSITGT__TMF_CLEAR_TASK_SET:
		/* SAM-5 §7.4: the whole (shared) task set; nexuses that lost tasks are told. */
	case SCSITGT__TMF_LUN_RESET:
	case SCSITGT__TMF_TARGET_WARM_RESET:
	case SCSITGT__TMF_TARGET_COLD_RESET:
		/* Other nexuses' tasks run on their own shards: the target's sessions are walked
		 * on home, which asks each shard to abort its own (tmf_xshard.c). */
		if (scsitgt__tmf_xshard(sess->tgt, type, sess, lun_id, op, NULL, NULL) < 0)
			atomic_store_explicit(&op->response, SCSITGT__TMF_REJECTED,
					      memory_order_relaxed);
		break;
	default:
		atomic_store_explicit(&op->response, SCSITGT__TMF_NOT_SUPPORTED,
				      memory_order_relaxed);
		break;
	}
	scsitgt__tmf_op_put(op, sess->shard);
}

/* Whether a backend still holds a command of @sess, once its live ones were aborted. Loop:
 * @sess's shard. */
static bool nexus_held(const struct scsitgt__session *sess)
{
	for (const struct scsitgt__list *p = sess->cmds.next; p != &sess->cmds; p = p->next)
		if (scsitgt__cmd_aborted_held(
			    scsitgt__container_of(p, struct scsitgt__cmd, sess_node)))
			return true;
	return false;
}

void scsitgt__tmf_quiesce_fence(struct scsitgt__session *sess, uint32_t timeout_ms,
				scsitgt__tmf_cb cb, void *cb_arg, void (*gone)(void *arg),
				void *gone_arg)
{
	struct scsitgt__tmf_op *op = op_new(sess, cb, cb_arg, timeout_ms);

	/* Without memory to wait, its tasks are still aborted, and the answer says whether some
	 * are left in a backend (reviewd item 4: never "complete" with one there). The nexus
	 * ends at once, as it would on a dropped connection; a fence cannot wait for them. */
	if (op == NULL) {
		abort_matching(sess, 0, true, NULL, false, 0, NULL, NULL, true, 0, false);
		cb(cb_arg, nexus_held(sess) ? SCSITGT__TMF_REJECTED : SCSITGT__TMF_COMPLETE);
		if (gone)
			gone(gone_arg);
		return;
	}
	op->quiesce = true;
	op->gone = gone;
	op->gone_arg = gone_arg;
	/* Every task of the nexus, on every LUN (the effect of an I_T nexus loss, SAM-5
	 * §6.3.4, without its unit attention: the nexus is ending anyway). The nexus's tasks
	 * run on this loop, its shard's, where the answer comes too. */
	abort_matching(sess, 0, true, NULL, false, 0, NULL, op, true, 0, false);
	scsitgt__tmf_op_put(op, sess->shard);
}

void scsitgt__tmf_quiesce(struct scsitgt__session *sess, uint32_t timeout_ms, scsitgt__tmf_cb cb,
			  void *cb_arg)
{
	scsitgt__tmf_quiesce_fence(sess, timeout_ms, cb, cb_arg, NULL, NULL);
}

SCSITGT_EXPORT int scsitgt_engine_set_tmf_timeout(struct scsitgt_engine *engine,
						  uint32_t timeout_ms)
{
	if (engine == NULL)
		return -EINVAL;
	if (timeout_ms == 0)
		return scsitgt__log_refused(&engine->log, "core", -EINVAL,
					    "scsitgt_engine_set_tmf_timeout: timeout_ms 0: must "
					    "be at least 1");
	atomic_store_explicit(&engine->tmf_timeout_ms, timeout_ms, memory_order_relaxed);
	return 0;
}
