/* SPDX-License-Identifier: MIT */
/* The per-LUN LBA range lock (see range_lock.h). */
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

/* Plain commands without an entry, every shard's (relaxed: each part's last count). */
static unsigned int rl_untracked(const struct scsitgt_lun *lun)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < lun->engine->nshards; i++)
		n += atomic_load_explicit(&lun->shard_part[i].untracked, memory_order_relaxed);
	return n;
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

	/* Plain commands that took no entry may touch any range. */
	if (e->excl && rl_untracked(e->cmd->lun))
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

static void rl_grant(struct scsitgt_lun *lun, struct scsitgt__range_entry *e)
{
	struct scsitgt__cmd *cmd = e->cmd;

	scsitgt__list_remove(&e->node);
	scsitgt__list_add_tail(&lun->rlock.held, &e->node);
	e->granted = true;
	if (e->slot)
		*e->slot = e;
	/* Drop the hold that kept the waiting command alive; fn sees an aborted command
	 * and ends it (releasing the entry) instead of starting its ios. */
	scsitgt__cmd_unhold(cmd);
	e->fn(cmd);
}

/* Grant every waiter that can go; grants may release entries and re-enter. */
static void rl_kick(struct scsitgt_lun *lun)
{
	struct scsitgt__range_lock *rl = rl_of(lun);

	if (rl->kicking) {
		rl->rekick = true;
		return;
	}
	rl->kicking = true;
	do {
		struct scsitgt__list *pos;

		rl->rekick = false;
		for (pos = rl->waiting.next; pos != &rl->waiting; pos = pos->next) {
			struct scsitgt__range_entry *e =
				scsitgt__container_of(pos, struct scsitgt__range_entry, node);

			if (rl_grantable(rl, e)) {
				/* The lists may change under the grant: rescan from the start. */
				rl_grant(lun, e);
				rl->rekick = true;
				break;
			}
		}
	} while (rl->rekick);
	rl->kicking = false;
}

static struct scsitgt__range_entry *rl_lock(struct scsitgt__cmd *cmd, uint64_t lba,
					    uint64_t nblocks, bool excl,
					    scsitgt__range_granted_fn fn,
					    struct scsitgt__range_entry **slot)
{
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt__range_lock *rl = rl_of(lun);
	struct scsitgt__range_entry *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->cmd = cmd;
	e->lba = lba;
	e->nblocks = nblocks;
	e->excl = excl;
	e->fn = fn;
	e->slot = slot;
	if (excl)
		rl->nexcl++;
	scsitgt__cmd_hold(cmd);
	scsitgt__list_add_tail(&rl->waiting, &e->node);
	rl_kick(lun);
	return e;
}

bool scsitgt__range_lock(struct scsitgt__cmd *cmd, uint64_t lba, uint64_t nblocks, bool excl,
			 scsitgt__range_granted_fn fn, struct scsitgt__range_entry **slot)
{
	*slot = NULL;
	return rl_lock(cmd, lba, nblocks, excl, fn, slot) != NULL;
}

void scsitgt__range_unlock(struct scsitgt_lun *lun, struct scsitgt__range_entry *e)
{
	struct scsitgt__range_lock *rl = rl_of(lun);

	if (e == NULL)
		return;
	scsitgt__list_remove(&e->node);
	if (e->excl)
		rl->nexcl--;
	free(e);
	if (!scsitgt__list_empty(&rl->waiting))
		rl_kick(lun);
}

bool scsitgt__range_lock_needed(const struct scsitgt_lun *lun)
{
	return lun->rlock.nexcl != 0;
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
	/* The waiters are home's (exclusive entries are taken on home; cross-shard grants
	 * are the range lock's quiescence, issue 18). */
	if (n == 0 && shard->index == 0 && lun->rlock.nexcl && rl_untracked(lun) == 0)
		rl_kick(lun);
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
