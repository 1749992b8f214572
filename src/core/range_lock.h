/* SPDX-License-Identifier: MIT */
/*
 * Per-LUN LBA range lock, for the commands whose effect must look atomic to every other
 * command on the range: COMPARE AND WRITE (SBC-4 §5.3), ORWRITE (§5.9) and WRITE ATOMIC
 * (§5.48, §4.29). They take the range exclusively; while any exclusive entry is held or
 * waiting, plain READ/WRITE (and the other media commands) take their range shared. Shared
 * entries never conflict with each other, and waiters are granted in FIFO order among the
 * ones that overlap.
 *
 * The plain path stays cheap: with no exclusive entry on the LUN, a plain command takes no
 * entry at all and only counts itself in its shard's part of the LUN (untracked, written by
 * that shard's loop alone); an exclusive request then waits until those untracked commands
 * are gone (they may touch any range), and new plain commands meet the exclusive entry and
 * register, so the counts only go down.
 *
 * Across shards (issue 18, docs/threading.md): the entries and the lists are under lun->xlock
 * and SCSITGT__LUN_XF_EXCL says that an exclusive entry exists, so that a plain command of any
 * loop reads one flag and takes no lock while none does. The first exclusive entry arms the
 * flag and starts a quiescence round: every shard's loop, by its part's message, reports once
 * its untracked count is zero (after the message no command of that loop counts itself, as it
 * sees the flag); the exclusive entries wait for the round. A grant runs the granted function
 * on the command's own loop (by message when another loop released the range).
 *
 * A waiting command is held (scsitgt__cmd_hold()), so that a TMF or a session
 * teardown marks it aborted instead of freeing it under the lock.
 */
#ifndef SCSITGT_CORE_RANGE_LOCK_H
#define SCSITGT_CORE_RANGE_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/worker.h"
#include "util/list.h"

struct scsitgt__cmd;
struct scsitgt_lun;
struct scsitgt__lun_part;
struct scsitgt__shard;

struct scsitgt__range_lock {
	bool inited;
	/* Entries granted, and entries waiting (FIFO). */
	struct scsitgt__list held;
	struct scsitgt__list waiting;
	/* Exclusive entries held or waiting: plain commands register only while non-zero. */
	unsigned int nexcl;
	/* Shards that have not reported their untracked commands gone since the first
	 * exclusive entry armed SCSITGT__LUN_XF_EXCL (each shard counts its own, in struct
	 * scsitgt__lun_part.untracked). */
	unsigned int quiesce_pending;
};

typedef void (*scsitgt__range_granted_fn)(struct scsitgt__cmd *cmd);

/*
 * What a command of the plain path holds (scsitgt__range_plain_begin()), released by
 * scsitgt__range_plain_end(): nothing, its count among the untracked commands, or a shared
 * entry (@entry is set by the grant, before the granted function runs).
 */
struct scsitgt__range_token {
	struct scsitgt__range_entry *entry;
	/* the shard whose part counts the untracked command. */
	struct scsitgt__shard *shard;
	bool untracked;
};

struct scsitgt__range_entry {
	struct scsitgt__list node;
	/* a grant: in the part's rl_ready of its command's shard, or a message there. */
	struct scsitgt__list ready_node;
	struct scsitgt__msg msg;
	struct scsitgt__cmd *cmd;
	uint64_t lba;
	uint64_t nblocks;
	bool excl;
	bool granted;
	/* granted by scsitgt__range_drop_waiters(): its command ends aborted, without io. */
	bool dropped;
	scsitgt__range_granted_fn fn;
	/* Where the grant records the entry before calling fn. */
	struct scsitgt__range_entry **slot;
};

/*
 * Take [lba, lba + nblocks) for @cmd (exclusive or shared) and call @fn(cmd) once granted,
 * possibly from inside this call. Before @fn runs, the entry is stored in *@slot (release it
 * with scsitgt__range_unlock). @fn must check for scsitgt__cmd_aborted(cmd) (a TMF
 * while it waited): then it releases the entry and completes the command without io.
 * Returns false on -ENOMEM (nothing done).
 */
bool scsitgt__range_lock(struct scsitgt__cmd *cmd, uint64_t lba, uint64_t nblocks, bool excl,
			 scsitgt__range_granted_fn fn, struct scsitgt__range_entry **slot);
/* Release a granted entry and wake the waiters it blocked. NULL is a no-op. */
void scsitgt__range_unlock(struct scsitgt_lun *lun, struct scsitgt__range_entry *e);
/* The entry of a command an engine shutdown gave up (core/drain.c) goes, granting nothing:
 * the shutdown is walking the LUN's ios, no command may start under it. Loop: the command's. */
void scsitgt__range_forget(struct scsitgt_lun *lun, struct scsitgt__range_entry *e);

/*
 * The LUN's removal timed out, or its engine goes (core/drain.c): what the waiters wait for
 * may be in the backend for good (a holder, or a plain command that took no entry), or given
 * up, so nothing may ever grant them. Each waiter is granted now as dropped: on its own loop
 * it is aborted unless it was already (the LUN's aborts; a lost nexus made it ORPHANED), and
 * its granted function ends it without io, as after a TMF (SAM-5 §5.6: no response; freed
 * silently without its nexus). A command of another LUN waiting here (an EXTENDED COPY's
 * piece) is aborted too: the LUN it copies to or from is going. Loop: home.
 */
void scsitgt__range_drop_waiters(struct scsitgt_lun *lun);
/*
 * The entries still in the LUN's lists when its memory goes (core/lun.c, or core/drain.c for
 * an orphaned LUN's shell): those of commands an engine shutdown gave up inside the backend.
 * The range lock owns its entries: a plain READ or WRITE keeps only a pointer, so that its path
 * owns nothing more. Any thread, no engine: free() only.
 */
void scsitgt__range_lock_free(struct scsitgt_lun *lun);

/*
 * The plain path (READ, WRITE, WRITE AND VERIFY, WRITE SAME, UNMAP): whether the command
 * must take a shared entry (some exclusive entry exists on the LUN). If not, the caller
 * counts itself with scsitgt__range_untracked_get() and drops it when its ios are done.
 */
bool scsitgt__range_lock_needed(const struct scsitgt_lun *lun);
void scsitgt__range_untracked_get(struct scsitgt_lun *lun, struct scsitgt__shard *shard);
void scsitgt__range_untracked_put(struct scsitgt_lun *lun, struct scsitgt__shard *shard);

/*
 * The usual wrapper of the plain path: run @fn(cmd) under a shared lock of the range, or
 * untracked. The token stored in *@token tells scsitgt__range_plain_end() what to release.
 * Returns false on -ENOMEM (nothing done, the caller completes with BUSY).
 */
bool scsitgt__range_plain_begin(struct scsitgt__cmd *cmd, uint64_t lba, uint64_t nblocks,
				struct scsitgt__range_token *token, scsitgt__range_granted_fn fn);
void scsitgt__range_plain_end(struct scsitgt_lun *lun, struct scsitgt__range_token *token);

/*
 * The quiescence round as @part's owner sees it (core/lun.c, under lun->xlock): report the
 * part once its untracked count is zero (the last report grants the exclusive waiters).
 * Returns whether the part must report later (its count is not zero yet).
 */
bool scsitgt__range_quiesce_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *part);
/* @part's owner, xlock dropped: run the grants of its commands collected under the lock. */
void scsitgt__range_run_ready(struct scsitgt__lun_part *part);

#endif /* SCSITGT_CORE_RANGE_LOCK_H */
