/* SPDX-License-Identifier: MIT */
/*
 * A LUN's background operation (SANITIZE, the self-tests of SEND DIAGNOSTIC): backend ios run
 * one at a time on a command of the LUN's own, made by the ordinary constructor on the LUN's
 * internal nexus of the shard whose command starts it (its part's bg_sess, in no target's
 * session list), so that the walk runs on that command's loop and task management and nexus
 * loss do not reach it, while it holds the LUN like any command. Between two pieces it yields
 * to the loop, so other commands meet the operation in progress. A command may wait for the
 * end (SANITIZE with IMMED 0, a foreground self-test), held by scsitgt__cmd_hold().
 *
 * The owner embeds a struct scsitgt__bg_walk and supplies the ops; the walk owns its command
 * and frees it after the owner's finish().
 */
#ifndef SCSITGT_CORE_BG_WALK_H
#define SCSITGT_CORE_BG_WALK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/cmd.h"

struct scsitgt__bg_walk;

struct scsitgt__bg_ops {
	/* Before each piece: true ends the walk (it failed, was aborted, or is complete). */
	bool (*stop)(struct scsitgt__bg_walk *w);
	/* Set up the next piece: w->type, w->lba, w->blocks, and w->iov when w->data. False:
	 * nothing left, the walk ends. */
	bool (*next)(struct scsitgt__bg_walk *w);
	/* The piece came back with @reason (SCSITGT__SR_BUSY when it could not be submitted). */
	void (*done)(struct scsitgt__bg_walk *w, enum scsitgt__sense_reason reason);
	/* The walk ended: deal with the waiter, free the owner (the walk included). */
	void (*finish)(struct scsitgt__bg_walk *w);
};

struct scsitgt__bg_walk {
	const struct scsitgt__bg_ops *ops;
	/* the LUN's own command that owns the ios (cmd->lun is the LUN) */
	struct scsitgt__cmd *cmd;
	/* the command waiting for the end (one hold on it), or NULL */
	struct scsitgt__cmd *waiter;
	/* the piece in flight */
	enum scsitgt_io_type type;
	uint64_t lba;
	uint32_t blocks;
	bool data;
	struct iovec iov;
	bool pumping, io_done;
	struct scsitgt__deferred next_piece;
};

/*
 * Start @w on @origin's LUN (the walk's command carries a copy of @origin's CDB); the first
 * piece runs from the loop. 0, or -ENOMEM (nothing started).
 */
int scsitgt__bg_walk_start(struct scsitgt__bg_walk *w, const struct scsitgt__bg_ops *ops,
			   const struct scsitgt__cmd *origin);

/* Make @cmd wait for the end of @w (it completes when the owner takes it back). */
void scsitgt__bg_walk_wait(struct scsitgt__bg_walk *w, struct scsitgt__cmd *cmd);

/* The waiting command, its hold dropped so that the caller may complete it; NULL when
 * none waits. */
struct scsitgt__cmd *scsitgt__bg_walk_take_waiter(struct scsitgt__bg_walk *w);

#endif /* SCSITGT_CORE_BG_WALK_H */
