/* SPDX-License-Identifier: MIT */
/*
 * The per-LUN LBA range lock (see range_lock.h). Everything in lun->rlock and the entries
 * is under lun->xlock; a part's untracked count, rl_ready and rl_running are its owner's.
 */
#include <stdlib.h>

#include "core/cmd.h"
#include "core/range_lock.h"

static struct scsitgt__range_lock *rl_of(struct scsitgt_lun *lun)
{
	struct scsitgt__range_lock *rl = &lun->rlock;

	if (!rl->inited) {
		scsitgt__list_init(&rl->held);
		scsitgt__list_init(&rl->waiting);
		rl->inited = true;
	}
	return rl;
}

static bool rl_conflict(const struct scsitgt__range_entry *a, const struct scsitgt__range_entry *b)
{
	if (!a->excl && !b->excl)
		return false;
	/* Zero-length entries still lock their LBA, so that nothing is granted out of order. */
	uint64_t an = a->nblocks ? a->nblocks : 1, bn = b->nblocks ? b->nblocks : 1;

	return a->lba < b->lba + bn && b->lba < a->lba + an;
}

static bool rl_grantable(struct scsitgt__range_lock *rl, const struct scsitgt__range_entry *e)
{
	struct scsitgt__list *pos;

	/* Plain commands that took no entry may touch any range: every shard's must be gone. */
	if (e->excl && rl->quiesce_pending)
		return false;
	for (pos = rl->held.next; pos != &rl->held; pos = pos->next) {
		if (rl_conflict(e, scsitgt__container_of(pos, struct scsitgt__range_entry, node)))
			return false;
	}
	/* FIFO: an earlier waiter on an overlapping range goes first. */
	for (pos = rl->waiting.next; pos != &rl->waiting; pos = pos->next) {
		const struct scsitgt__range_entry *w =
			scsitgt__container_of(pos, struct scsitgt__range_entry, node);

		if (w == e)
			break;
		if (rl_conflict(e, w))
			return false;
	}
	return true;
}

/* The granted function, on the command's own loop. */
static void rl_run(struct scsitgt__range_entry *e)
{
	struct scsitgt__cmd *cmd = e->cmd;

	/* A waiter its LUN gave up on: aborted while the hold still keeps it. */
	if (e->dropped && !scsitgt__cmd_aborted(cmd))
		scsitgt__cmd_abort(cmd, NULL, false);
	/* Drop the hold that kept the waiting command alive; fn sees an aborted command
	 * and ends it (releasing the entry) instead of starting its ios. */
	scsitgt__cmd_unhold(cmd);
	e->fn(cmd);
}

static void rl_grant_msg(struct scsitgt__msg *msg)
{
	rl_run(scsitgt__container_of(msg, struct scsitgt__range_entry, msg));
}

/*
 * Grant @e (under xlock): it moves to the held list and its function runs on its command's
 * loop: from @self's ready list when that is this loop (once the lock is dropped), else by
 * message. The command's hold keeps it (and its LUN) alive until then.
 */
static void rl_grant_locked(struct scsitgt_lun *lun, struct scsitgt__range_entry *e,
			    struct scsitgt__lun_part *self)
{
	struct scsitgt__shard *shard = e->cmd->shard;

	scsitgt__list_remove(&e->node);
	scsitgt__list_add_tail(&lun->rlock.held, &e->node);
	e->granted = true;
	if (e->slot)
		*e->slot = e;
	if (shard == self->shard) {
		scsitgt__list_add_tail(&self->rl_ready, &e->ready_node);
		return;
	}
	e->msg.fn = rl_grant_msg;
	scsitgt__shard_post(shard, &e->msg);
}

/* Grant every waiter that can go (under xlock). */
static void rl_kick_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *self)
{
	struct scsitgt__range_lock *rl = rl_of(lun);
	struct scsitgt__list *pos = rl->waiting.next;

	while (pos != &rl->waiting) {
		struct scsitgt__list *next = pos->next;
		struct scsitgt__range_entry *e =
			scsitgt__container_of(pos, struct scsitgt__range_entry, node);

		/* A grant only moves @e to the held list, where later waiters meet it. */
		if (rl_grantable(rl, e))
			rl_grant_locked(lun, e, self);
		pos = next;
	}
}

void scsitgt__range_run_ready(struct scsitgt__lun_part *part)
{
	/* A grant may complete and release at once, granting more: the outer pass runs them. */
	if (part->rl_running)
		return;
	part->rl_running = true;
	while (!scsitgt__list_empty(&part->rl_ready)) {
		struct scsitgt__list *n = part->rl_ready.next;

		scsitgt__list_remove(n);
		rl_run(scsitgt__container_of(n, struct scsitgt__range_entry, ready_node));
	}
	part->rl_running = false;
}

bool scsitgt__range_quiesce_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *part)
{
	struct scsitgt__range_lock *rl = &lun->rlock;

	if (rl->quiesce_pending == 0 || part->rl_quiesced)
		return false;
	if (atomic_load_explicit(&part->untracked, memory_order_relaxed))
		return true;
	part->rl_quiesced = true;
	if (--rl->quiesce_pending == 0)
		rl_kick_locked(lun, part);
	return false;
}

/*
 * The first exclusive entry (under xlock): plain commands of every loop register from now
 * on, and the exclusive entries wait until each shard's untracked ones are gone. @self
 * reports at once (this is its loop); the others are asked by message.
 */
static void rl_arm_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *self)
{
	struct scsitgt__range_lock *rl = &lun->rlock;
	unsigned int n = lun->engine->nshards;

	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_EXCL, true);
	rl->quiesce_pending = n;
	for (unsigned int i = 0; i < n; i++)
		lun->shard_part[i].rl_quiesced = false;
	scsitgt__lun_xround(lun, self);
	if (scsitgt__range_quiesce_locked(lun, self))
		self->xwait = true;
}

static struct scsitgt__range_entry *rl_lock(struct scsitgt__cmd *cmd, uint64_t lba,
					    uint64_t nblocks, bool excl,
					    scsitgt__range_granted_fn fn,
					    struct scsitgt__range_entry **slot)
{
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt__lun_part *self = scsitgt__lun_part(lun, cmd->shard);
	struct scsitgt__range_lock *rl;
	struct scsitgt__range_entry *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->cmd = cmd;
	e->lba = lba;
	e->nblocks = nblocks;
	e->excl = excl;
	e->fn = fn;
	e->slot = slot;
	scsitgt__cmd_hold(cmd);
	uv_mutex_lock(&lun->xlock);
	rl = rl_of(lun);
	scsitgt__list_add_tail(&rl->waiting, &e->node);
	if (excl && rl->nexcl++ == 0)
		rl_arm_locked(lun, self);
	rl_kick_locked(lun, self);
	uv_mutex_unlock(&lun->xlock);
	scsitgt__range_run_ready(self);
	return e;
}

bool scsitgt__range_lock(struct scsitgt__cmd *cmd, uint64_t lba, uint64_t nblocks, bool excl,
			 scsitgt__range_granted_fn fn, struct scsitgt__range_entry **slot)
{
	*slot = NULL;
	return rl_lock(cmd, lba, nblocks, excl, fn, slot) != NULL;
}

/* Take @e out of the LUN's entries (under xlock); the last exclusive one ends the round,
 * also one never granted. Returns the LUN's range lock. */
static struct scsitgt__range_lock *rl_remove_locked(struct scsitgt_lun *lun,
						    struct scsitgt__range_entry *e)
{
	struct scsitgt__range_lock *rl = rl_of(lun);

	scsitgt__list_remove(&e->node);
	if (e->excl && --rl->nexcl == 0) {
		rl->quiesce_pending = 0;
		scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_EXCL, false);
	}
	return rl;
}

void scsitgt__range_unlock(struct scsitgt_lun *lun, struct scsitgt__range_entry *e)
{
	struct scsitgt__lun_part *self;
	struct scsitgt__range_lock *rl;

	if (e == NULL)
		return;
	/* The command that held the range releases it on its own loop. */
	self = scsitgt__lun_part(lun, e->cmd->shard);
	uv_mutex_lock(&lun->xlock);
	rl = rl_remove_locked(lun, e);
	if (!scsitgt__list_empty(&rl->waiting))
		rl_kick_locked(lun, self);
	uv_mutex_unlock(&lun->xlock);
	free(e);
	scsitgt__range_run_ready(self);
}

void scsitgt__range_forget(struct scsitgt_lun *lun, struct scsitgt__range_entry *e)
{
	if (e == NULL)
		return;
	uv_mutex_lock(&lun->xlock);
	rl_remove_locked(lun, e);
	uv_mutex_unlock(&lun->xlock);
	free(e);
}

void scsitgt__range_drop_waiters(struct scsitgt_lun *lun)
{
	struct scsitgt__lun_part *home = scsitgt__lun_part(lun, scsitgt__shard_home(lun->engine));
	struct scsitgt__range_lock *rl;

	uv_mutex_lock(&lun->xlock);
	rl = rl_of(lun);
	while (!scsitgt__list_empty(&rl->waiting)) {
		struct scsitgt__range_entry *e =
			scsitgt__container_of(rl->waiting.next, struct scsitgt__range_entry, node);

		e->dropped = true;
		rl_grant_locked(lun, e, home);
	}
	uv_mutex_unlock(&lun->xlock);
	scsitgt__range_run_ready(home);
}

static void rl_free_list(struct scsitgt__list *l)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, l)
	{
		free(scsitgt__container_of(pos, struct scsitgt__range_entry, node));
	}
}

void scsitgt__range_lock_free(struct scsitgt_lun *lun)
{
	struct scsitgt__range_lock *rl = &lun->rlock;

	if (!rl->inited)
		return;
	rl_free_list(&rl->held);
	rl_free_list(&rl->waiting);
	scsitgt__list_init(&rl->held);
	scsitgt__list_init(&rl->waiting);
}

bool scsitgt__range_lock_needed(const struct scsitgt_lun *lun)
{
	/* Loaded now, not at parse: a command that counts itself untracked must do it in the
	 * same loop callback as this load, so that a quiescence message of its loop either
	 * sees its count or runs before it (and then it sees the flag). */
	return (scsitgt__lun_xflags(lun) & SCSITGT__LUN_XF_EXCL) != 0;
}

void scsitgt__range_untracked_get(struct scsitgt_lun *lun, struct scsitgt__shard *shard)
{
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, shard);

	/* Written by its shard only: a store, not a locked add. */
	atomic_store_explicit(&part->untracked,
			      atomic_load_explicit(&part->untracked, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

void scsitgt__range_untracked_put(struct scsitgt_lun *lun, struct scsitgt__shard *shard)
{
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, shard);
	unsigned int n = atomic_load_explicit(&part->untracked, memory_order_relaxed) - 1;

	atomic_store_explicit(&part->untracked, n, memory_order_relaxed);
	/* A quiescence round waits for this shard's count to reach zero. */
	if (n == 0 && part->xwait)
		scsitgt__lun_xcheck(lun, part);
}

bool scsitgt__range_plain_begin(struct scsitgt__cmd *cmd, uint64_t lba, uint64_t nblocks,
				struct scsitgt__range_token *token, scsitgt__range_granted_fn fn)
{
	token->entry = NULL;
	token->shard = cmd->shard;
	if (!scsitgt__range_lock_needed(cmd->lun)) {
		token->untracked = true;
		scsitgt__range_untracked_get(cmd->lun, cmd->shard);
		fn(cmd);
		return true;
	}
	/* The grant stores the entry in the token before it calls fn, which may end the
	 * command. */
	token->untracked = false;
	return rl_lock(cmd, lba, nblocks, false, fn, &token->entry) != NULL;
}

void scsitgt__range_plain_end(struct scsitgt_lun *lun, struct scsitgt__range_token *token)
{
	struct scsitgt__range_entry *e = token->entry;
	bool untracked = token->untracked;

	token->entry = NULL;
	token->untracked = false;
	if (untracked)
		scsitgt__range_untracked_put(lun, token->shard);
	else
		scsitgt__range_unlock(lun, e);
}
