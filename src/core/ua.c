/* SPDX-License-Identifier: MIT */
/*
 * Unit attention conditions (SAM-5 §5.14, SPC-5 §5.14).
 *
 * Each I_T nexus keeps, per LUN, a short FIFO of pending conditions. The first command of a
 * nexus to a LUN finds POWER ON, RESET, OR BUS DEVICE RESET OCCURRED (29h/00h): for that nexus
 * the logical unit has just come into being. Precedence when queueing:
 *   - a reset-class condition (29h/xx) supersedes everything pending: the reset it reports
 *     makes the older conditions moot (SAM-5 §6.3: resets clear unit attentions);
 *   - the same condition is never queued twice;
 *   - a full queue keeps its oldest conditions and drops the new one (SAM-5 §5.14 lets the
 *     device server discard conditions it cannot queue, as long as one is reported).
 * A nexus that ends is remembered by every LUN it had seen (initiator port and target port);
 * when the same nexus comes back (a reconnect with the same ISID through the same portal
 * group), its first command to such a LUN finds I_T NEXUS LOSS OCCURRED (29h/07h) instead of
 * POWER ON (SAM-5 §6.3.4): the initiator learns that its tasks are gone while its
 * registrations are not.
 * Reporting (SPC-5 §5.14, SAM-5 §5.14): INQUIRY and REPORT LUNS run normally and leave the
 * condition pending (REPORT LUNS clears REPORTED LUNS DATA HAS CHANGED, SPC-5 §6.33);
 * REQUEST SENSE returns the condition as its sense data and clears it; any other command ends
 * with CHECK CONDITION, UNIT ATTENTION and clears it. REQUEST SENSE and REPORT LUNS touch the
 * queue only when they run, once every check of their CDB passed: one refused (INVALID FIELD
 * IN CDB, a reservation, an ACA attribute...) reported nothing and clears nothing.
 * REPORTED LUNS DATA HAS CHANGED reported for one LUN is cleared on every LUN of the nexus
 * (LUICLR, SPC-5 §7.7.7, VPD 86h): one change costs the initiator one unit attention, not one
 * per LUN. A LUN change queues it on all of the nexus's LUNs under one hold of the lock, so a
 * report on the nexus's own loop never falls between two of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cdb.h"
#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/ua.h"
#include "core/spc.h"

/* LUN ids are below 16384 (scsitgt_lun_create), so "seen" is a bitmap. */
#define UA_LUN_IDS 16384u

struct ua_lun {
	struct scsitgt__list node;
	uint64_t lun_id;
	uint8_t n;
	uint8_t q[SCSITGT__UA_QUEUE_MAX]; /* enum scsitgt__sense_reason, oldest first */
};

/*
 * A nexus's conditions (issue 18: other loops raise them). The queues are under
 * sess->ua_lock, and sess->ua_pending is the sum of their lengths. seen is set by the
 * nexus's own loop (its first command to a LUN) and cleared by a LUN's removal (home): its
 * words are read without the lock, as sess->ua is, and written under it.
 */
struct scsitgt__ua_sess {
	_Atomic uint64_t seen[UA_LUN_IDS / 64];
	struct scsitgt__list luns; /* struct ua_lun with n > 0 */
};

static bool ua_reset_class(enum scsitgt__sense_reason r)
{
	return r == SCSITGT__SR_UA_POWER_ON_RESET || r == SCSITGT__SR_UA_BUS_RESET ||
	       r == SCSITGT__SR_UA_LUN_RESET || r == SCSITGT__SR_UA_NEXUS_LOSS;
}

static struct scsitgt__ua_sess *ua_get(const struct scsitgt__session *sess)
{
	return atomic_load_explicit(&sess->ua, memory_order_acquire);
}

/* The nexus's state, allocated on first use. Under sess->ua_lock. */
static struct scsitgt__ua_sess *ua_state(struct scsitgt__session *sess)
{
	struct scsitgt__ua_sess *ua = ua_get(sess);

	if (ua == NULL) {
		ua = calloc(1, sizeof(*ua));
		if (ua == NULL)
			return NULL;
		scsitgt__list_init(&ua->luns);
		atomic_store_explicit(&sess->ua, ua, memory_order_release);
	}
	return ua;
}

static void ua_pending_add(struct scsitgt__session *sess, int n)
{
	atomic_fetch_add_explicit(&sess->ua_pending, (unsigned int)n, memory_order_relaxed);
}

static struct ua_lun *ua_find(const struct scsitgt__ua_sess *ua, uint64_t lun_id)
{
	for (struct scsitgt__list *p = ua->luns.next; p != &ua->luns; p = p->next) {
		struct ua_lun *l = scsitgt__container_of(p, struct ua_lun, node);

		if (l->lun_id == lun_id)
			return l;
	}
	return NULL;
}

static bool ua_seen(const struct scsitgt__session *sess, uint64_t lun_id)
{
	const struct scsitgt__ua_sess *ua;

	if (sess->ua_no_power_on || lun_id >= UA_LUN_IDS)
		return true;
	ua = ua_get(sess);
	return ua && (atomic_load_explicit(&ua->seen[lun_id / 64], memory_order_relaxed) >>
			      (lun_id % 64) &
		      1);
}

static void ua_drop_lun(struct scsitgt__session *sess, struct ua_lun *l)
{
	ua_pending_add(sess, -(int)l->n);
	scsitgt__list_remove(&l->node);
	free(l);
}

/* Queue without the first-access logic. Returns whether @r was queued. Under ua_lock. */
static bool ua_queue(struct scsitgt__session *sess, struct scsitgt__ua_sess *ua, uint64_t lun_id,
		     enum scsitgt__sense_reason r)
{
	struct ua_lun *l = ua_find(ua, lun_id);

	if (l == NULL) {
		/* Out of memory loses the condition; nothing else breaks. */
		l = calloc(1, sizeof(*l));
		if (l == NULL)
			return false;
		l->lun_id = lun_id;
		scsitgt__list_add_tail(&ua->luns, &l->node);
	}
	if (ua_reset_class(r)) {
		ua_pending_add(sess, -(int)l->n);
		l->n = 0;
	}
	for (unsigned int i = 0; i < l->n; i++)
		if (l->q[i] == r)
			return false;
	if (l->n == SCSITGT__UA_QUEUE_MAX)
		return false;
	l->q[l->n++] = (uint8_t)r;
	ua_pending_add(sess, 1);
	return true;
}

static enum scsitgt__sense_reason ua_pop(struct scsitgt__session *sess, struct ua_lun *l)
{
	enum scsitgt__sense_reason r = l->q[0];

	memmove(&l->q[0], &l->q[1], (size_t)(l->n - 1));
	l->n--;
	ua_pending_add(sess, -1);
	if (l->n == 0)
		ua_drop_lun(sess, l);
	return r;
}

static void ua_remove(struct scsitgt__session *sess, struct ua_lun *l, enum scsitgt__sense_reason r)
{
	for (unsigned int i = 0; i < l->n; i++) {
		if (l->q[i] != r)
			continue;
		memmove(&l->q[i], &l->q[i + 1], (size_t)(l->n - i - 1));
		l->n--;
		ua_pending_add(sess, -1);
		break;
	}
	if (l->n == 0)
		ua_drop_lun(sess, l);
}

/*
 * Report (and clear) the first condition of @l. REPORTED LUNS DATA HAS CHANGED leaves every
 * other LUN of the nexus too (LUICLR). Under ua_lock; @l may be freed.
 */
static enum scsitgt__sense_reason ua_report(struct scsitgt__session *sess,
					    struct scsitgt__ua_sess *ua, struct ua_lun *l)
{
	enum scsitgt__sense_reason r = ua_pop(sess, l);
	struct scsitgt__list *pos, *tmp;

	if (r != SCSITGT__SR_UA_REPORTED_LUNS_CHANGED)
		return r;
	scsitgt__list_foreach_safe(pos, tmp, &ua->luns)
	{
		ua_remove(sess, scsitgt__container_of(pos, struct ua_lun, node),
			  SCSITGT__SR_UA_REPORTED_LUNS_CHANGED);
	}
	return r;
}

/* Whether @e names the nexus of @sess. */
static bool lost_matches(const struct scsitgt__pr_lost *e, const struct scsitgt__session *sess)
{
	size_t n = strlen(sess->initiator_port);

	return strncmp(e->nexus, sess->initiator_port, n) == 0 && e->nexus[n] == '\n' &&
	       strcmp(&e->nexus[n + 1], sess->target_port) == 0;
}

static struct scsitgt__pr_lost *lost_find(const struct scsitgt_lun *lun,
					  const struct scsitgt__session *sess)
{
	const struct scsitgt__pr *pr = lun->pr;

	if (pr == NULL)
		return NULL;
	for (struct scsitgt__list *p = pr->lost.next; p != &pr->lost; p = p->next) {
		struct scsitgt__pr_lost *e =
			scsitgt__container_of(p, struct scsitgt__pr_lost, node);

		if (lost_matches(e, sess))
			return e;
	}
	return NULL;
}

static void lost_drop(struct scsitgt_lun *lun, struct scsitgt__pr_lost *e)
{
	scsitgt__list_remove(&e->node);
	lun->pr->nlost--;
	free(e);
}

/* Remember that the nexus of @sess, which had seen @lun, is gone. */
static void lost_record(struct scsitgt_lun *lun, const struct scsitgt__session *sess)
{
	struct scsitgt__pr *pr = scsitgt__pr_get(lun);
	struct scsitgt__pr_lost *e;
	size_t a, b;

	/* Out of memory only costs the distinction: the nexus gets POWER ON. */
	if (pr == NULL || lost_find(lun, sess))
		return;
	a = strlen(sess->initiator_port);
	b = strlen(sess->target_port);
	e = malloc(sizeof(*e) + a + b + 2);
	if (e == NULL)
		return;
	memcpy(e->nexus, sess->initiator_port, a);
	e->nexus[a] = '\n';
	memcpy(&e->nexus[a + 1], sess->target_port, b + 1);
	if (pr->nlost == SCSITGT__PR_MAX_LOST)
		lost_drop(lun, scsitgt__container_of(pr->lost.next, struct scsitgt__pr_lost, node));
	scsitgt__list_add_tail(&pr->lost, &e->node);
	pr->nlost++;
}

/* The condition of a nexus's first access to @lun: NEXUS LOSS if it is a lost one back. The
 * lost nexuses are reservation state (lun->pr), under the LUN's lock. */
static enum scsitgt__sense_reason ua_first_reason(struct scsitgt_lun *lun,
						  const struct scsitgt__session *sess, bool consume)
{
	struct scsitgt__pr_lost *e;
	bool lost;

	uv_mutex_lock(&lun->xlock);
	e = lost_find(lun, sess);
	lost = e != NULL;
	if (e && consume)
		lost_drop(lun, e);
	uv_mutex_unlock(&lun->xlock);
	return lost ? SCSITGT__SR_UA_NEXUS_LOSS : SCSITGT__SR_UA_POWER_ON_RESET;
}

/*
 * A condition was just queued: the fabric may also announce it (iSCSI Async Message,
 * transport/iscsi/async.c); not a nexus on its way out, whose fabric may have let go of it
 * (core/session.c). On the nexus's own shard home may mark it leaving right after this check:
 * the fabric keeps its side until that shard has run what home posted before (fabric.h).
 * Outside ua_lock (a leaf lock).
 */
static void ua_announce(struct scsitgt__session *sess, uint64_t lun_id,
			enum scsitgt__sense_reason reason)
{
	if (sess->ops->unit_attention &&
	    !atomic_load_explicit(&sess->leaving, memory_order_relaxed))
		sess->ops->unit_attention(sess, lun_id, reason);
}

void scsitgt__ua_establish(struct scsitgt__session *sess, uint64_t lun_id,
			   enum scsitgt__sense_reason reason)
{
	struct scsitgt__ua_sess *ua;
	bool queued = false;

	uv_mutex_lock(&sess->ua_lock);
	/* A nexus that has not seen the LUN yet will get POWER ON, which covers this. */
	if (ua_seen(sess, lun_id)) {
		ua = ua_state(sess);
		queued = ua && ua_queue(sess, ua, lun_id, reason);
	}
	uv_mutex_unlock(&sess->ua_lock);
	if (queued)
		ua_announce(sess, lun_id, reason);
}

void scsitgt__ua_establish_all(struct scsitgt_target *tgt, uint64_t lun_id,
			       const struct scsitgt__session *except,
			       enum scsitgt__sense_reason reason)
{
	for (struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions; p = p->next) {
		struct scsitgt__session *s =
			scsitgt__container_of(p, struct scsitgt__session, node);

		/* a nexus on its way out is told nothing (its fabric may be gone). */
		if (s != except && !atomic_load_explicit(&s->leaving, memory_order_relaxed))
			scsitgt__ua_establish(s, lun_id, reason);
	}
}

bool scsitgt__ua_pending(const struct scsitgt__session *sess, uint64_t lun_id,
			 enum scsitgt__sense_reason *first)
{
	const struct ua_lun *l = NULL;
	struct scsitgt__ua_sess *ua;

	if (!ua_seen(sess, lun_id)) {
		struct scsitgt_lun *lun = scsitgt__target_find_lun(sess->tgt, lun_id);

		if (first)
			*first = lun ? ua_first_reason(lun, sess, false) :
				       SCSITGT__SR_UA_POWER_ON_RESET;
		return true;
	}
	if (atomic_load_explicit(&sess->ua_pending, memory_order_relaxed) == 0)
		return false;
	uv_mutex_lock((uv_mutex_t *)&sess->ua_lock);
	ua = ua_get(sess);
	if (ua)
		l = ua_find(ua, lun_id);
	if (l && first)
		*first = l->q[0];
	uv_mutex_unlock((uv_mutex_t *)&sess->ua_lock);
	return l != NULL;
}

/*
 * SPC-5 §6.39: REQUEST SENSE reports the condition as sense data, with GOOD status. The exec of
 * a REQUEST SENSE that found one pending at parse: the condition is taken off the queue only
 * now, once the command passed every check (SAM-5 §5.14: a condition is cleared when it is
 * reported). Another command of the nexus may have reported it meanwhile: then the next one,
 * or none and the usual sense data.
 */
static void ua_request_sense(struct scsitgt__cmd *cmd)
{
	struct scsitgt__session *sess = cmd->sess;
	enum scsitgt__sense_reason r = SCSITGT__SR_OK;
	const struct scsitgt__sense_info *si;
	uint8_t buf[SCSITGT_SENSE_BUF_SIZE];
	struct scsitgt__ua_sess *ua;
	struct ua_lun *l;
	size_t len;

	uv_mutex_lock(&sess->ua_lock);
	ua = ua_get(sess);
	l = ua ? ua_find(ua, cmd->lun_id) : NULL;
	if (l)
		r = ua_report(sess, ua, l);
	uv_mutex_unlock(&sess->ua_lock);
	if (r == SCSITGT__SR_OK) {
		scsitgt__spc_request_sense(cmd);
		return;
	}
	si = scsitgt__sense_lookup(r);
	len = scsitgt__sense_encode(buf, cmd->cdb[1] & 0x01, si->key, si->asc, si->ascq, NULL);
	scsitgt__cmd_respond(cmd, buf, len);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* SPC-5 §6.33: the exec of a REPORT LUNS that found a condition pending at parse. It clears
 * REPORTED LUNS DATA HAS CHANGED on the LUN it was sent to, before the inventory it returns
 * is read (a change after that read queues the condition again). */
static void ua_report_luns(struct scsitgt__cmd *cmd)
{
	struct scsitgt__session *sess = cmd->sess;
	struct scsitgt__ua_sess *ua;
	struct ua_lun *l;

	uv_mutex_lock(&sess->ua_lock);
	ua = ua_get(sess);
	l = ua ? ua_find(ua, cmd->lun_id) : NULL;
	if (l)
		ua_remove(sess, l, SCSITGT__SR_UA_REPORTED_LUNS_CHANGED);
	uv_mutex_unlock(&sess->ua_lock);
	scsitgt__spc_report_luns(cmd);
}

/* ua_check() past its fast path: a first access, or conditions pending on the nexus. */
static enum scsitgt__sense_reason ua_check_slow(struct scsitgt__cmd *cmd)
{
	struct scsitgt__session *sess = cmd->sess;
	const struct scsitgt__cdb_def *row = cmd->def;
	uint64_t id = cmd->lun_id;
	enum scsitgt__sense_reason r = SCSITGT__SR_OK;
	struct scsitgt__ua_sess *ua;
	struct ua_lun *l;

	if (!ua_seen(sess, id)) {
		/* Only this nexus's loop sets its seen bits: the first reason is settled before
		 * the queue's lock is taken (the LUN's lock is never taken inside it). */
		enum scsitgt__sense_reason first = ua_first_reason(cmd->lun, sess, true);

		uv_mutex_lock(&sess->ua_lock);
		ua = ua_state(sess);
		if (ua) {
			atomic_fetch_or_explicit(&ua->seen[id / 64], 1ull << (id % 64),
						 memory_order_relaxed);
			ua_queue(sess, ua, id, first);
		}
	} else {
		uv_mutex_lock(&sess->ua_lock);
		ua = ua_get(sess);
	}
	l = ua ? ua_find(ua, id) : NULL;
	if (l == NULL) {
		/* nothing for this LUN */
	} else if (row && row->exec == scsitgt__spc_report_luns) {
		cmd->exec = ua_report_luns;
	} else if (row && row->exec == scsitgt__spc_request_sense) {
		cmd->exec = ua_request_sense;
	} else if (!(row && (row->flags & SCSITGT__CDB_F_ALLOW_UA))) {
		r = ua_report(sess, ua, l);
	}
	uv_mutex_unlock(&sess->ua_lock);
	return r;
}

enum scsitgt__sense_reason scsitgt__ua_check(struct scsitgt__cmd *cmd)
{
	if (cmd->lun == NULL)
		return SCSITGT__SR_OK;
	/* The common case: a LUN this nexus has seen, and no condition on any LUN. */
	if (atomic_load_explicit(&cmd->sess->ua_pending, memory_order_relaxed) == 0 &&
	    ua_seen(cmd->sess, cmd->lun_id))
		return SCSITGT__SR_OK;
	return ua_check_slow(cmd);
}

void scsitgt__ua_nexus_luns_changed(struct scsitgt__session *s)
{
	const struct scsitgt_target *tgt = s->tgt;
	/* which LUNs the condition was queued on, for the fabric's announcement */
	bool *queued = calloc(tgt->nluns ? tgt->nluns : 1, sizeof(*queued));
	struct scsitgt__ua_sess *ua = NULL;

	/*
	 * SPC-5 §5.14: the condition goes to every LUN the nexus still sees, all at once: with
	 * LUICLR a report on one LUN clears it on the others, and a report (on the nexus's own
	 * loop) that came between two of them would leave the later ones to report it again. A
	 * LUN the nexus has not seen yet will find POWER ON, which covers this.
	 */
	uv_mutex_lock(&s->ua_lock);
	for (size_t i = 0; queued && i < tgt->nluns; i++) {
		uint64_t id = tgt->luns[i]->id;

		if (tgt->luns[i]->drain.destroying || !scsitgt__session_lun_visible(s, id) ||
		    !ua_seen(s, id))
			continue;
		if (ua == NULL)
			ua = ua_state(s);
		queued[i] = ua && ua_queue(s, ua, id, SCSITGT__SR_UA_REPORTED_LUNS_CHANGED);
	}
	uv_mutex_unlock(&s->ua_lock);
	for (size_t i = 0; i < tgt->nluns; i++) {
		uint64_t id = tgt->luns[i]->id;

		if (queued == NULL) {
			/* out of memory: one LUN at a time, as good but for that race */
			if (!tgt->luns[i]->drain.destroying && scsitgt__session_lun_visible(s, id))
				scsitgt__ua_establish(s, id, SCSITGT__SR_UA_REPORTED_LUNS_CHANGED);
		} else if (queued[i]) {
			ua_announce(s, id, SCSITGT__SR_UA_REPORTED_LUNS_CHANGED);
		}
	}
	free(queued);
}

void scsitgt__ua_luns_changed(struct scsitgt_target *tgt, uint64_t lun_id, bool removed)
{
	for (struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions; p = p->next) {
		struct scsitgt__session *s =
			scsitgt__container_of(p, struct scsitgt__session, node);
		struct scsitgt__ua_sess *ua;

		if (s->ua_no_power_on)
			continue;
		uv_mutex_lock(&s->ua_lock);
		ua = ua_get(s);
		if (removed && ua && lun_id < UA_LUN_IDS) {
			struct ua_lun *l = ua_find(ua, lun_id);

			/* A LUN created later under this id starts afresh: POWER ON again. */
			if (l)
				ua_drop_lun(s, l);
			atomic_fetch_and_explicit(&ua->seen[lun_id / 64], ~(1ull << (lun_id % 64)),
						  memory_order_relaxed);
		}
		uv_mutex_unlock(&s->ua_lock);
		scsitgt__ua_nexus_luns_changed(s);
	}
}

void scsitgt__ua_mode_params_changed(struct scsitgt__session *by, uint64_t lun_id)
{
	/* SPC-5 §7.5.1: the other I_T nexuses learn of the change by MODE PARAMETERS CHANGED. */
	scsitgt__ua_establish_all(by->tgt, lun_id, by, SCSITGT__SR_UA_MODE_PARAMS_CHANGED);
}

void scsitgt__ua_session_lost(struct scsitgt__session *sess)
{
	struct scsitgt__ua_sess *ua = ua_get(sess);
	struct scsitgt_target *tgt = sess->tgt;

	/* SAM-5 §6.3.4: the LUNs this nexus saw remember it, for I_T NEXUS LOSS OCCURRED. Its
	 * seen bits are final: the fabric admits no command of a nexus it destroys, and those
	 * of a worker's nexus were set before that loop's news of its end reached home. */
	if (ua == NULL || sess->ua_no_power_on)
		return;
	for (size_t i = 0; i < tgt->nluns; i++) {
		uint64_t id = tgt->luns[i]->id;

		if (id < UA_LUN_IDS &&
		    (atomic_load_explicit(&ua->seen[id / 64], memory_order_relaxed) >> (id % 64) &
		     1)) {
			uv_mutex_lock(&tgt->luns[i]->xlock);
			lost_record(tgt->luns[i], sess);
			uv_mutex_unlock(&tgt->luns[i]->xlock);
		}
	}
}

void scsitgt__ua_session_free(struct scsitgt__session *sess)
{
	struct scsitgt__ua_sess *ua = ua_get(sess);
	struct scsitgt__list *pos, *tmp;

	if (ua == NULL)
		return;
	uv_mutex_lock(&sess->ua_lock);
	atomic_store_explicit(&sess->ua, NULL, memory_order_release);
	scsitgt__list_foreach_safe(pos, tmp, &ua->luns)
	{
		free(scsitgt__container_of(pos, struct ua_lun, node));
	}
	atomic_store_explicit(&sess->ua_pending, 0, memory_order_relaxed);
	uv_mutex_unlock(&sess->ua_lock);
	free(ua);
}
