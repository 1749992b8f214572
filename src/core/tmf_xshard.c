/* SPDX-License-Identifier: MIT */
/*
 * Task management across shards (issue 18). A command runs on its session's shard, and only
 * that shard's loop may move it (core/cmd.c), so a task management function that reaches
 * other nexuses (CLEAR TASK SET, LOGICAL UNIT RESET, TARGET RESET, SAM-5 §7; PREEMPT AND
 * ABORT, SPC-5 §5.13.11.5; a LUN removal that timed out) cannot abort their commands itself:
 *
 *   1. the issuing shard hands the request to home (the target's session list is home's);
 *   2. home walks the sessions and gives each shard the list of its own sessions (and LUNs)
 *      to abort, in one message per shard; home's own sessions are done at once;
 *   3. each shard aborts those tasks (a TMF's op waits for those still in a backend: the op's
 *      holds are atomic and its answer runs on its issuer's loop, core/tmf.c), raises the unit
 *      attentions that belong to the nexuses that lost tasks, and answers home;
 *   4. once every shard has answered, home does the rest (the reset of each logical unit and
 *      its unit attentions for every nexus, SAM-5 §6.3.3) and drops its hold on the op; a
 *      PERSISTENT RESERVE OUT that preempted and aborted is told (its done callback), and
 *      gets its status on its own shard afterwards (core/home_call.h).
 *
 * Sessions named in a message stay valid until it has run: a session ending is marked
 * leaving on home before its shard detaches its commands (core/session.c), walks here skip
 * it, and a shard runs the messages home posted to it in order. The target is held until the
 * request is over (scsitgt__target_hold()).
 *
 * Without workers, or when every session is on home, every step runs inside the call, as it
 * did before shards: the same order, the same synchronous answer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/fabric.h"
#include "core/pr.h"
#include "core/tmf.h"
#include "core/ua.h"

enum xt_kind {
	XT_CLEAR_TASK_SET,
	XT_LUN_RESET,
	XT_TARGET_WARM_RESET,
	XT_TARGET_COLD_RESET,
	XT_PR,
	XT_DRAIN,
};

/* One session's tasks to abort on one LUN. */
struct xt_entry {
	struct scsitgt__session *sess;
	uint64_t lun_id;
	/* CLEAR TASK SET from another nexus: COMMANDS CLEARED BY ANOTHER INITIATOR when it
	 * lost tasks (SAM-5 §7.4). */
	bool ua_cleared;
};

struct xtmf;

/* What one shard has to do, posted there and back. */
struct xt_batch {
	struct scsitgt__msg msg;
	struct xtmf *x;
	size_t n, cap;
	struct xt_entry *e;
	/* A nexus of this shard is ending: its commands may become orphans before this runs. */
	bool ending;
};

struct xtmf {
	struct scsitgt__msg msg; /* issuer -> home */
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	enum xt_kind kind;
	const struct scsitgt__session *sess; /* the issuing nexus (compared only), or NULL */
	uint64_t lun_id;
	struct scsitgt_lun *lun; /* XT_DRAIN: its commands only */
	struct scsitgt__tmf_op *op;
	/* XT_PR: the change's events, the command that made it (compared only) and who waits
	 * for its aborts. */
	struct scsitgt__pr_change ch;
	const struct scsitgt__cmd *by_cmd;
	void (*done)(void *done_arg);
	void *done_arg;
	/* The LUNs a reset reaches (a target reset: those the issuer sees). */
	uint64_t *luns;
	size_t nluns;
	/* Shards still to answer, plus home's own pass. */
	unsigned int pending;
	struct xt_batch b[]; /* one per shard; b[0] (home) is never posted */
};

static struct xtmf *xt_create(struct scsitgt_target *tgt, enum xt_kind kind)
{
	struct scsitgt_engine *engine = tgt->engine;
	struct xtmf *x = calloc(1, sizeof(*x) + engine->nshards * sizeof(x->b[0]));

	if (x == NULL)
		return NULL;
	x->engine = engine;
	x->tgt = tgt;
	x->kind = kind;
	scsitgt__pr_change_init(&x->ch);
	for (unsigned int i = 0; i < engine->nshards; i++)
		x->b[i].x = x;
	return x;
}

static void xt_free(struct xtmf *x)
{
	for (unsigned int i = 0; i < x->engine->nshards; i++)
		free(x->b[i].e);
	free(x->luns);
	scsitgt__pr_change_clear(&x->ch);
	free(x);
}

static void xt_add(struct xtmf *x, struct scsitgt__session *s, uint64_t lun_id, bool ua_cleared)
{
	struct xt_batch *b = &x->b[s->shard->index];

	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 4;
		struct xt_entry *e = realloc(b->e, ncap * sizeof(*e));

		if (e == NULL) {
			scsitgt__log(&x->engine->log, SCSITGT_LOG_ERROR, "core",
				     "task management: out of memory, the tasks of a nexus on LUN "
				     "%llu are not aborted",
				     (unsigned long long)lun_id);
			return;
		}
		b->e = e;
		b->cap = ncap;
	}
	b->e[b->n++] = (struct xt_entry){ .sess = s, .lun_id = lun_id, .ua_cleared = ua_cleared };
}

/* A shard's own sessions: abort their tasks. Loop: that shard's. */
static void xt_batch_abort(struct xt_batch *b)
{
	struct xtmf *x = b->x;

	for (size_t i = 0; i < b->n; i++) {
		struct xt_entry *e = &b->e[i];
		unsigned int n;

		/* A LUN removal gives up on its backend: it is not asked to cancel. */
		/* A LUN removal is no nexus's doing; a PREEMPT AND ABORT lists only the
		 * nexuses it preempted, never its own (xt_pr_walk()). */
		n = scsitgt__tmf_abort_session(e->sess, e->lun_id, x->lun, x->by_cmd, x->op,
					       x->kind != XT_DRAIN,
					       x->kind == XT_PR ? x->ch.seq : 0,
					       x->kind != XT_DRAIN && e->sess != x->sess);
		if (n && e->ua_cleared)
			scsitgt__ua_establish(e->sess, e->lun_id,
					      SCSITGT__SR_UA_COMMANDS_CLEARED_BY_OTHER);
	}
}

/* Whether @x is a TMF that reaches the whole task set of its LUNs: it also waits for the
 * commands whose nexus ended while a backend held them (SAM-5 §7.4, §7.7: the function
 * completes once the LU's tasks are all aborted, whichever nexus they came from). */
static bool xt_waits_orphans(const struct xtmf *x)
{
	return x->op && (x->kind == XT_CLEAR_TASK_SET || x->kind == XT_LUN_RESET ||
			 x->kind == XT_TARGET_WARM_RESET || x->kind == XT_TARGET_COLD_RESET);
}

/* Whether orphan @c is one of @x's LUNs' tasks. By the target's gen, not its address: the
 * orphan's LUN may have outlived its target (a removal that timed out), and a target made
 * since may have the freed one's address (the LUN's tgt is then dangling, never read). */
static bool xt_orphan_matches(const struct xtmf *x, const struct scsitgt__cmd *c)
{
	if (c->lun == NULL || c->lun->tgt_gen != x->tgt->gen)
		return false;
	if (x->kind == XT_CLEAR_TASK_SET || x->kind == XT_LUN_RESET)
		return c->lun_id == x->lun_id;
	for (size_t i = 0; i < x->nluns; i++)
		if (c->lun_id == x->luns[i])
			return true;
	return false;
}

/* @x waits for the orphans of its LUNs on shard @s (reviewd F2). Loop: @s's. */
static void xt_wait_orphans(struct xtmf *x, struct scsitgt__shard *s)
{
	for (struct scsitgt__list *p = s->orphans.next; p != &s->orphans; p = p->next) {
		struct scsitgt__cmd *c = scsitgt__container_of(p, struct scsitgt__cmd, sess_node);

		if (xt_orphan_matches(x, c))
			scsitgt__tmf_wait_for(x->op, c);
	}
}

static void xt_finish(struct xtmf *x);

/* Home: one shard has made its aborts. */
static void xt_batch_back(struct scsitgt__msg *msg)
{
	struct xtmf *x = scsitgt__container_of(msg, struct xt_batch, msg)->x;

	if (--x->pending == 0)
		xt_finish(x);
}

static void xt_batch_run(struct scsitgt__msg *msg)
{
	struct xt_batch *b = scsitgt__container_of(msg, struct xt_batch, msg);

	xt_batch_abort(b);
	if (xt_waits_orphans(b->x))
		xt_wait_orphans(b->x, &b->x->engine->shards[b - b->x->b]);
	b->msg.fn = xt_batch_back;
	scsitgt__engine_post(b->x->engine, &b->msg);
}

/* Whether session @s made the change @ch (by initiator port and relative target port). */
static bool xt_is_by(const struct scsitgt__pr_change *ch, const struct scsitgt__session *s)
{
	return ch->by_port[0] && s->rel_port_id == ch->by_rel_port_id &&
	       strcasecmp(s->initiator_port, ch->by_port) == 0;
}

/* XT_PR on home: the unit attentions now (their queues are locked per nexus), the aborts of
 * PREEMPT AND ABORT as entries. */
static void xt_pr_walk(struct xtmf *x)
{
	struct scsitgt_target *tgt = x->tgt;

	for (const struct scsitgt__list *e = x->ch.events.next; e != &x->ch.events; e = e->next) {
		const struct scsitgt__pr_event *ev =
			scsitgt__container_of(e, struct scsitgt__pr_event, node);

		for (struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions;
		     p = p->next) {
			struct scsitgt__session *s =
				scsitgt__container_of(p, struct scsitgt__session, node);

			if (atomic_load(&s->leaving) || xt_is_by(&x->ch, s) ||
			    !scsitgt__pr_reg_matches(&ev->who, s))
				continue;
			switch (ev->code) {
			case SCSITGT__PR_EV_REGS_PREEMPTED:
				scsitgt__ua_establish(s, x->lun_id,
						      SCSITGT__SR_UA_REGISTRATIONS_PREEMPTED);
				break;
			case SCSITGT__PR_EV_RESV_PREEMPTED:
				scsitgt__ua_establish(s, x->lun_id,
						      SCSITGT__SR_UA_RESERVATIONS_PREEMPTED);
				break;
			case SCSITGT__PR_EV_RESV_RELEASED:
				scsitgt__ua_establish(s, x->lun_id,
						      SCSITGT__SR_UA_RESERVATIONS_RELEASED);
				break;
			default: /* SCSITGT__PR_EV_ABORT */
				xt_add(x, s, x->lun_id, false);
				break;
			}
		}
	}
}

/* Home: the LUNs a target reset reaches: those the issuing nexus may see (a masked LUN does
 * not exist for it, SAM-5 §7.12). */
static int xt_target_luns(struct xtmf *x)
{
	struct scsitgt_target *tgt = x->tgt;

	x->luns = calloc(tgt->nluns ? tgt->nluns : 1, sizeof(*x->luns));
	if (x->luns == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < tgt->nluns; i++)
		if (x->sess == NULL || scsitgt__session_lun_visible(x->sess, tgt->luns[i]->id))
			x->luns[x->nluns++] = tgt->luns[i]->id;
	return 0;
}

/* Home: walk the target's sessions, abort home's tasks, ask the other shards for theirs. */
static void xt_run(struct xtmf *x)
{
	struct scsitgt_target *tgt = x->tgt;
	struct scsitgt__list *p;

	scsitgt__target_hold(tgt);
	if ((x->kind == XT_TARGET_WARM_RESET || x->kind == XT_TARGET_COLD_RESET) &&
	    xt_target_luns(x) < 0) {
		scsitgt__log(&x->engine->log, SCSITGT_LOG_ERROR, "core",
			     "target reset of %s: out of memory", tgt->name);
		if (x->op)
			scsitgt__tmf_op_reject(x->op);
	}
	if (x->kind == XT_PR) {
		xt_pr_walk(x);
	} else {
		for (p = tgt->sessions.next; p != &tgt->sessions; p = p->next) {
			struct scsitgt__session *s =
				scsitgt__container_of(p, struct scsitgt__session, node);

			if (atomic_load(&s->leaving)) {
				/* Its shard may orphan its commands before our message
				 * runs there (core/session.c posts first). */
				x->b[s->shard->index].ending = true;
				continue;
			}
			if (x->kind == XT_CLEAR_TASK_SET)
				xt_add(x, s, x->lun_id, s != x->sess);
			else if (x->kind == XT_LUN_RESET || x->kind == XT_DRAIN)
				xt_add(x, s, x->lun_id, false);
			else
				for (size_t i = 0; i < x->nluns; i++)
					xt_add(x, s, x->luns[i], false);
		}
	}
	/* Home's pass holds the request until the shards' messages are all posted. */
	x->pending = 1;
	for (unsigned int i = 1; i < x->engine->nshards; i++) {
		/* A shard with orphans (the count is current for every nexus home saw freed)
		 * or with a nexus ending is asked too, for them. */
		if (x->b[i].n == 0 &&
		    !(xt_waits_orphans(x) &&
		      (x->b[i].ending ||
		       atomic_load_explicit(&x->engine->shards[i].norphans, memory_order_relaxed))))
			continue;
		x->pending++;
		x->b[i].msg.fn = xt_batch_run;
		scsitgt__shard_post(&x->engine->shards[i], &x->b[i].msg);
	}
	xt_batch_abort(&x->b[0]);
	if (xt_waits_orphans(x))
		xt_wait_orphans(x, scsitgt__shard_home(x->engine));
	if (--x->pending == 0)
		xt_finish(x);
}

static void xt_run_msg(struct scsitgt__msg *msg)
{
	xt_run(scsitgt__container_of(msg, struct xtmf, msg));
}

/* Start @x from its issuer's shard @from: at once on home, else by message. */
static void xt_start(struct xtmf *x, const struct scsitgt__shard *from)
{
	if (from->index == 0) {
		xt_run(x);
		return;
	}
	x->msg.fn = xt_run_msg;
	scsitgt__engine_post(x->engine, &x->msg);
}

/* Home: the rest of the reset of LUN @id, if it still exists. */
static void xt_lun_reset(struct xtmf *x, uint64_t id, enum scsitgt__sense_reason ua)
{
	struct scsitgt_lun *l = scsitgt__target_find_lun(x->tgt, id);

	if (l && !l->drain.destroying)
		scsitgt__tmf_lun_reset_rest(l, ua, x->op);
}

/* Home: every shard has made its aborts. */
static void xt_finish(struct xtmf *x)
{
	struct scsitgt__shard *home = scsitgt__shard_home(x->engine);
	struct scsitgt__tmf_op *op = x->op;
	struct scsitgt_target *tgt = x->tgt;
	/* who waits for the aborts (and, for a reset, its unit attentions) */
	void (*done)(void *done_arg) = x->done;
	void *done_arg = x->done_arg;

	switch (x->kind) {
	case XT_LUN_RESET:
		xt_lun_reset(x, x->lun_id, SCSITGT__SR_UA_LUN_RESET);
		break;
	case XT_TARGET_WARM_RESET:
	case XT_TARGET_COLD_RESET:
		/* SAM-5 §7.12, §7.13: a logical unit reset of every LUN; a cold reset looks like
		 * a power cycle. */
		for (size_t i = 0; i < x->nluns; i++)
			xt_lun_reset(x, x->luns[i],
				     x->kind == XT_TARGET_COLD_RESET ?
					     SCSITGT__SR_UA_POWER_ON_RESET :
					     SCSITGT__SR_UA_LUN_RESET);
		break;
	default:
		break;
	}
	xt_free(x);
	if (op)
		scsitgt__tmf_op_put(op, home);
	scsitgt__target_unhold(tgt);
	if (done)
		done(done_arg);
}

int scsitgt__tmf_xshard(struct scsitgt_target *tgt, enum scsitgt__tmf_type type,
			const struct scsitgt__session *sess, uint64_t lun_id,
			struct scsitgt__tmf_op *op, void (*done)(void *done_arg), void *done_arg)
{
	enum xt_kind kind = type == SCSITGT__TMF_CLEAR_TASK_SET	   ? XT_CLEAR_TASK_SET :
			    type == SCSITGT__TMF_TARGET_WARM_RESET ? XT_TARGET_WARM_RESET :
			    type == SCSITGT__TMF_TARGET_COLD_RESET ? XT_TARGET_COLD_RESET :
								     XT_LUN_RESET;
	struct xtmf *x = xt_create(tgt, kind);

	if (x == NULL)
		return -ENOMEM;
	x->sess = sess;
	x->lun_id = lun_id;
	x->op = op;
	x->done = done;
	x->done_arg = done_arg;
	/* Held until home has done every step (xt_finish()). */
	if (op)
		scsitgt__tmf_op_get(op);
	xt_start(x, sess ? sess->shard : scsitgt__shard_home(tgt->engine));
	return 0;
}

static void pr_events(struct scsitgt_lun *lun, struct scsitgt__pr_change *ch,
		      const struct scsitgt__cmd *by_cmd, struct scsitgt__tmf_op *op,
		      void (*done)(void *done_arg), void *done_arg)
{
	struct xtmf *x;

	/* The common change (a registration) tells nobody: nothing to wait for. */
	if (scsitgt__list_empty(&ch->events)) {
		if (done)
			done(done_arg);
		return;
	}
	x = xt_create(lun->tgt, XT_PR);
	if (x == NULL) {
		scsitgt__log(&lun->engine->log, SCSITGT_LOG_ERROR, "core",
			     "LUN %llu: out of memory, the unit attentions of a reservation change "
			     "are lost",
			     (unsigned long long)lun->id);
		if (done)
			done(done_arg);
		return;
	}
	x->lun_id = lun->id;
	x->by_cmd = by_cmd;
	x->done = done;
	x->done_arg = done_arg;
	/* Held until home has done every step (xt_finish()); it waits for the aborted tasks. */
	x->op = op;
	if (op)
		scsitgt__tmf_op_get(op);
	x->ch.seq = ch->seq;
	x->ch.by_rel_port_id = ch->by_rel_port_id;
	memcpy(x->ch.by_port, ch->by_port, sizeof(x->ch.by_port));
	/* The events move: the caller's list is left empty. */
	x->ch.events.next = ch->events.next;
	x->ch.events.prev = ch->events.prev;
	x->ch.events.next->prev = &x->ch.events;
	x->ch.events.prev->next = &x->ch.events;
	x->ch.nevents = ch->nevents;
	scsitgt__list_init(&ch->events);
	ch->nevents = 0;
	xt_run(x);
}

void scsitgt__tmf_pr_events(struct scsitgt_lun *lun, struct scsitgt__pr_change *ch,
			    const struct scsitgt__cmd *by_cmd, void (*done)(void *done_arg),
			    void *done_arg)
{
	pr_events(lun, ch, by_cmd, NULL, done, done_arg);
}

void scsitgt__tmf_pr_events_op(struct scsitgt_lun *lun, struct scsitgt__pr_change *ch,
			       struct scsitgt__tmf_op *op)
{
	pr_events(lun, ch, NULL, op, NULL, NULL);
}

void scsitgt__tmf_drain_lun(struct scsitgt_lun *lun)
{
	struct xtmf *x = xt_create(lun->tgt, XT_DRAIN);

	if (x == NULL) {
		scsitgt__log(&lun->engine->log, SCSITGT_LOG_ERROR, "core",
			     "LUN %llu: out of memory, its commands are left to finish",
			     (unsigned long long)lun->id);
		return;
	}
	x->lun_id = lun->id;
	x->lun = lun;
	xt_run(x);
}
