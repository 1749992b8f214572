/* SPDX-License-Identifier: MIT */
/* A LUN's background operation, one backend io at a time (bg_walk.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/bg_walk.h"
#include "core/fabric.h"

static void bg_end(struct scsitgt__bg_walk *w)
{
	struct scsitgt__cmd *cmd = w->cmd;
	/* finish() frees the owner, and @w with it */
	w->ops->finish(w);
	scsitgt__cmd_end_internal(cmd);
}

static void bg_io_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
		       enum scsitgt__sense_reason reason)
{
	struct scsitgt__bg_walk *w = cmd->ctx.bg_walk;

	(void)io;
	w->ops->done(w, reason);
	w->io_done = true;
	/* Yield to the loop between two pieces: other commands see the progress. */
	if (!w->pumping)
		scsitgt__shard_defer(cmd->shard, &w->next_piece);
}

/* One io at a time; a backend completing inside submit() loops here instead of recursing. */
static void bg_pump(struct scsitgt__bg_walk *w)
{
	w->pumping = true;
	for (;;) {
		if (w->ops->stop(w) || !w->ops->next(w)) {
			w->pumping = false;
			bg_end(w);
			return;
		}
		w->io_done = false;
		if (scsitgt__io_submit(w->cmd, w->type, w->lba, w->blocks, w->data ? &w->iov : NULL,
				       w->data ? 1 : 0, 0, bg_io_done) < 0) {
			w->ops->done(w, SCSITGT__SR_BUSY);
			continue;
		}
		/* A piece completed inside submit(): the loop runs the next one. */
		w->pumping = false;
		if (w->io_done)
			scsitgt__shard_defer(w->cmd->shard, &w->next_piece);
		return;
	}
}

static void bg_next_piece(struct scsitgt__deferred *d)
{
	bg_pump(scsitgt__container_of(d, struct scsitgt__bg_walk, next_piece));
}

int scsitgt__bg_walk_start(struct scsitgt__bg_walk *w, const struct scsitgt__bg_ops *ops,
			   const struct scsitgt__cmd *origin)
{
	struct scsitgt_lun *lun = origin->lun;
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, origin->shard);
	struct scsitgt__cmd *bg;

	/* The LUN's own nexus on the origin's shard (core.h bg_sess), made by its first walk:
	 * the walk runs on the loop of the command that started it, where a waiter waits. */
	if (part->bg_sess == NULL) {
		part->bg_sess = scsitgt__session_create_internal(lun->tgt);
		if (part->bg_sess)
			part->bg_sess->shard = origin->shard;
	}
	if (part->bg_sess == NULL || scsitgt__cmd_create(&bg, part->bg_sess, 0) < 0)
		return -ENOMEM;
	scsitgt__cmd_start_internal(bg, lun, origin->cdb, origin->cdb_len);
	bg->ctx.bg_walk = w;
	w->ops = ops;
	w->cmd = bg;
	w->next_piece.fn = bg_next_piece;
	scsitgt__shard_defer(bg->shard, &w->next_piece);
	return 0;
}

void scsitgt__bg_walk_wait(struct scsitgt__bg_walk *w, struct scsitgt__cmd *cmd)
{
	w->waiter = cmd;
	scsitgt__cmd_hold(cmd);
}

struct scsitgt__cmd *scsitgt__bg_walk_take_waiter(struct scsitgt__bg_walk *w)
{
	struct scsitgt__cmd *fg = w->waiter;

	if (fg == NULL)
		return NULL;
	w->waiter = NULL;
	scsitgt__cmd_unhold(fg);
	return fg;
}
