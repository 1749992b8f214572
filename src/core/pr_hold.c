/* SPDX-License-Identifier: MIT */
/*
 * Held admission on a LUN whose reservations live in a cluster store (include/libscsitgt/pr.h,
 * scsitgt_lun_start_pr_delivery(), scsitgt_lun_set_pr_lease()): while a state committed
 * elsewhere has reached the store but is not applied, or the store's lease on the copy has run
 * out, the copy cannot decide a command a reservation could refuse. Such a command is not
 * failed: its exec becomes scsitgt__pr_hold_exec(), which parks it on home in the LUN's queue
 * (held, core/home_call.h, a step that ends later). When nothing holds it any more, home lets
 * the queue go in order; each command is checked again on its own loop against the copy as it
 * is then, and executed or refused. A PREEMPT AND ABORT applied meanwhile aborts it (its
 * admission stamp is older), which it learns there too.
 *
 * A held command is no io in a backend: nothing of it is outside the core, so a task
 * management function, a PREEMPT AND ABORT, a LUN removal that timed out or the loss of its
 * nexus need not wait for the store (SAM-5 §7: the TMF answers once the task is gone). Its own
 * loop, which moved it to ABORTED or ORPHANED, takes it out of the queue under lun->xlock and
 * ends it there and then (scsitgt__pr_hold_cut()). Which of that loop and home has the record
 * is settled under the lock by two marks: queued (in hold_q: whoever takes it out sends it
 * back) and cut (aborted while on its way to home, which then sends it back instead of
 * queueing it). A release that took the queue first sends it back as usual: its loop finds it
 * aborted and never runs it.
 *
 * The mark comes from the store's own thread (a RADOS watch callback), before the delivery can
 * reach the loop: it is a count under lun->xlock mirrored in SCSITGT__LUN_XF_PR_PENDING, the
 * word every command loads at parse, so a LUN without shared reservations pays nothing and one
 * with them one bit of a word it reads anyway (plus the lease, on the line of pr->adm_seq).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/cmd.h"
#include "core/pr.h"

/* A held command's record: the home call and its place in pr->hold_q. The marks are under
 * lun->xlock (see above). */
struct scsitgt__pr_hold {
	struct scsitgt__home_call hc; /* first */
	struct scsitgt__list node;
	bool queued;
	bool cut;
};

/* Whether held commands must go on waiting. Under lun->xlock. A copy called stale answers
 * them itself (BUSY, NOT READY: pr.c), so it holds nothing. */
static bool hold_needed(struct scsitgt_lun *lun)
{
	uint32_t xf = scsitgt__lun_xflags(lun);

	if (lun->pr == NULL || !(xf & SCSITGT__LUN_XF_PR_SHARED) ||
	    (xf & SCSITGT__LUN_XF_PR_UNSYNCED))
		return false;
	return scsitgt__pr_hold_due(xf,
				    atomic_load_explicit(&lun->pr->lease_ms, memory_order_relaxed));
}

/* The store's recheck to call (once per lapse of the lease), or NULL. Under lun->xlock. */
static void (*hold_recheck(struct scsitgt__pr *pr))(void *, struct scsitgt_lun *)
{
	uint64_t lease = atomic_load_explicit(&pr->lease_ms, memory_order_relaxed);

	if (pr->recheck_asked || pr->cl.recheck == NULL || lease == 0 ||
	    scsitgt__pr_clock_ms() < lease)
		return NULL;
	pr->recheck_asked = true;
	return pr->cl.recheck;
}

/* The command's loop, the hold dropped: decide again on the copy as it is now. */
static void hold_done(struct scsitgt__home_call *hc)
{
	struct scsitgt__cmd *cmd = hc->cmd;
	enum scsitgt__sense_reason r;

	cmd->pr_hold = NULL;
	scsitgt__home_call_free(hc);
	if (scsitgt__cmd_aborted(cmd)) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_ABORTED);
		return;
	}
	/* The command's own exec (only REQUEST SENSE's is replaced at parse, and a reservation
	 * never refuses it); the check may hold it again. */
	cmd->exec = cmd->def->exec;
	r = scsitgt__pr_check(cmd);
	if (r != SCSITGT__SR_OK) {
		scsitgt__cmd_complete(cmd, r);
		return;
	}
	cmd->exec(cmd);
}

/* Home: into the LUN's queue, unless what held it has passed meanwhile. */
static void hold_home(struct scsitgt__home_call *hc)
{
	struct scsitgt__pr_hold *h = scsitgt__container_of(hc, struct scsitgt__pr_hold, hc);
	struct scsitgt_lun *lun = hc->cmd->lun;
	void (*recheck)(void *, struct scsitgt_lun *) = NULL;
	void *arg = NULL;
	bool held = false;

	uv_mutex_lock(&lun->xlock);
	/* (aborted on its way here: back at once) */
	if (!h->cut && hold_needed(lun)) {
		held = true;
		h->queued = true;
		scsitgt__list_add_tail(&lun->pr->hold_q, &h->node);
		recheck = hold_recheck(lun->pr);
		arg = lun->pr->cl_arg;
	}
	uv_mutex_unlock(&lun->xlock);
	if (!held) {
		scsitgt__home_call_back(hc);
		return;
	}
	/* The host's hook runs outside the LUN's lock; it answers later (pr.h). */
	if (recheck)
		recheck(arg, lun);
}

void scsitgt__pr_hold_exec(struct scsitgt__cmd *cmd)
{
	struct scsitgt__home_call *hc =
		scsitgt__home_call_new(cmd, NULL, sizeof(struct scsitgt__pr_hold));

	if (hc == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	cmd->pr_hold = scsitgt__container_of(hc, struct scsitgt__pr_hold, hc);
	scsitgt__home_call_later(hc, hold_home, hold_done);
}

void scsitgt__pr_hold_cut(struct scsitgt__cmd *cmd)
{
	struct scsitgt__pr_hold *h = cmd->pr_hold;
	struct scsitgt_lun *lun = cmd->lun;
	bool mine = false;

	/* The record lives until hold_done(), which runs on this loop. */
	uv_mutex_lock(&lun->xlock);
	if (h->queued) {
		scsitgt__list_remove(&h->node);
		h->queued = false;
		mine = true;
	} else {
		/* on its way to home (which sends it back), or sent back already */
		h->cut = true;
	}
	uv_mutex_unlock(&lun->xlock);
	/* hold_done() ends it as aborted (or frees it, its nexus gone). */
	if (mine)
		scsitgt__home_call_back_here(&h->hc);
}

void scsitgt__pr_hold_release(struct scsitgt_lun *lun, bool all)
{
	void (*recheck)(void *, struct scsitgt_lun *) = NULL;
	struct scsitgt__list go;
	void *arg = NULL;

	scsitgt__list_init(&go);
	uv_mutex_lock(&lun->xlock);
	if (lun->pr && !scsitgt__list_empty(&lun->pr->hold_q)) {
		if (all || !hold_needed(lun)) {
			/* the whole queue, in order; from now on this call sends each back */
			for (struct scsitgt__list *p = lun->pr->hold_q.next; p != &lun->pr->hold_q;
			     p = p->next)
				scsitgt__container_of(p, struct scsitgt__pr_hold, node)->queued =
					false;
			go = lun->pr->hold_q;
			go.next->prev = &go;
			go.prev->next = &go;
			scsitgt__list_init(&lun->pr->hold_q);
		} else {
			recheck = hold_recheck(lun->pr);
			arg = lun->pr->cl_arg;
		}
	}
	uv_mutex_unlock(&lun->xlock);
	if (recheck)
		recheck(arg, lun);
	while (!scsitgt__list_empty(&go)) {
		struct scsitgt__pr_hold *h =
			scsitgt__container_of(go.next, struct scsitgt__pr_hold, node);

		scsitgt__list_remove(&h->node);
		/* (a command of home is decided and may execute right here) */
		scsitgt__home_call_back(&h->hc);
	}
}

/* @lun's lock, taken if it has a cluster store: 0; -EINVAL or -ENOENT (not taken). */
static int lock_store(struct scsitgt_lun *lun)
{
	if (lun == NULL)
		return -EINVAL;
	uv_mutex_lock(&lun->xlock);
	if (scsitgt__pr_cluster_on(lun))
		return 0;
	uv_mutex_unlock(&lun->xlock);
	return -ENOENT;
}

SCSITGT_EXPORT int scsitgt_lun_start_pr_delivery(struct scsitgt_lun *lun)
{
	int rc = lock_store(lun);

	if (rc < 0)
		return rc;
	if (lun->pr->cl_pending++ == 0)
		scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_PR_PENDING, true);
	uv_mutex_unlock(&lun->xlock);
	return 0;
}

SCSITGT_EXPORT int scsitgt_lun_complete_pr_delivery(struct scsitgt_lun *lun)
{
	int rc = lock_store(lun);

	if (rc < 0)
		return rc;
	if (lun->pr->cl_pending == 0)
		rc = -EALREADY;
	else if (--lun->pr->cl_pending == 0)
		scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_PR_PENDING, false);
	uv_mutex_unlock(&lun->xlock);
	if (rc == 0)
		scsitgt__pr_hold_release(lun, false);
	return rc;
}

SCSITGT_EXPORT int scsitgt_lun_set_pr_lease(struct scsitgt_lun *lun, uint64_t until_ms)
{
	int rc = lock_store(lun);

	if (rc < 0)
		return rc;
	atomic_store_explicit(&lun->pr->lease_ms, until_ms, memory_order_relaxed);
	/* a new lapse may ask again; a lease already past is none (no asking in a loop) */
	if (until_ms > scsitgt__pr_clock_ms())
		lun->pr->recheck_asked = false;
	uv_mutex_unlock(&lun->xlock);
	scsitgt__pr_hold_release(lun, false);
	return 0;
}
