/* SPDX-License-Identifier: MIT */
/*
 * A command's life: the only writer of cmd->state. The states and the moves between them are
 * drawn in cmd.h; cmd_next[] below is that drawing as a table, and cmd_move() checks each move
 * against it and against the caller's own from-states.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/cdb.h"
#include "core/fabric.h"
#include "core/order.h"
#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/stats.h"
#include "core/tmf.h"

/* One bit per state, for the from-sets of the transitions. */
#define CMD_S(s) (1u << (s))

/* The live states (scsitgt__cmd_is_live()). */
#define CMD_LIVE                                                                                  \
	(CMD_S(SCSITGT__CMD_NEED_DATA) | CMD_S(SCSITGT__CMD_READY) | CMD_S(SCSITGT__CMD_PARKED) | \
	 CMD_S(SCSITGT__CMD_EXEC))

/*
 * The transitions of the diagram in cmd.h: cmd_next[from] has a bit for each state a command
 * may move to from @from. cmd_move() checks every transition against it.
 */
static const uint16_t cmd_next[SCSITGT__CMD_NSTATES] = {
	[SCSITGT__CMD_NEW] = CMD_S(SCSITGT__CMD_NEED_DATA) | CMD_S(SCSITGT__CMD_READY) |
			     CMD_S(SCSITGT__CMD_EXEC) | CMD_S(SCSITGT__CMD_DONE) |
			     CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_NEED_DATA] = CMD_S(SCSITGT__CMD_PARKED) | CMD_S(SCSITGT__CMD_EXEC) |
				   CMD_S(SCSITGT__CMD_DONE) | CMD_S(SCSITGT__CMD_ABORTED) |
				   CMD_S(SCSITGT__CMD_ORPHANED) | CMD_S(SCSITGT__CMD_ABANDONED) |
				   CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_READY] = CMD_S(SCSITGT__CMD_PARKED) | CMD_S(SCSITGT__CMD_EXEC) |
			       CMD_S(SCSITGT__CMD_DONE) | CMD_S(SCSITGT__CMD_ABORTED) |
			       CMD_S(SCSITGT__CMD_ORPHANED) | CMD_S(SCSITGT__CMD_ABANDONED) |
			       CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_PARKED] = CMD_S(SCSITGT__CMD_EXEC) | CMD_S(SCSITGT__CMD_ABORTED) |
				CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_EXEC] = CMD_S(SCSITGT__CMD_DONE) | CMD_S(SCSITGT__CMD_ABORTED) |
			      CMD_S(SCSITGT__CMD_ORPHANED) | CMD_S(SCSITGT__CMD_ABANDONED) |
			      CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_DONE] = CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_ABORTED] = CMD_S(SCSITGT__CMD_DONE) | CMD_S(SCSITGT__CMD_ORPHANED) |
				 CMD_S(SCSITGT__CMD_ABANDONED) | CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_ORPHANED] = CMD_S(SCSITGT__CMD_ABANDONED) | CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_ABANDONED] = CMD_S(SCSITGT__CMD_FREED),
	[SCSITGT__CMD_FREED] = 0,
};

bool scsitgt__cmd_transition_allowed(enum scsitgt__cmd_state from, enum scsitgt__cmd_state to)
{
	return (unsigned int)from < SCSITGT__CMD_NSTATES &&
	       (unsigned int)to < SCSITGT__CMD_NSTATES && (cmd_next[from] & CMD_S(to)) != 0;
}

#ifndef NDEBUG
void (*scsitgt__cmd_transition_hook)(const struct scsitgt__cmd *cmd, enum scsitgt__cmd_state from,
				     enum scsitgt__cmd_state to);
#endif

/*
 * The only writer of cmd->state after creation. @from is the set of states the caller may
 * move the command from: anything else is a programming error, caught by the assertions in
 * debug and test builds.
 */
static void cmd_move(struct scsitgt__cmd *cmd, unsigned int from, enum scsitgt__cmd_state to)
{
	assert(from & CMD_S(cmd->state));
	assert(scsitgt__cmd_transition_allowed(cmd->state, to));
	(void)from;
#ifndef NDEBUG
	if (scsitgt__cmd_transition_hook)
		scsitgt__cmd_transition_hook(cmd, cmd->state, to);
#endif
	cmd->state = to;
}

/*
 * sess->ncmds changes on the nexus's own loop only and is read by the session walks on home
 * (scsitgt_target_foreach_session(): a snapshot), so it is a relaxed load and store, never a
 * locked add (as the shard parts' counters, core.h).
 */
static void sess_ncmds_add(struct scsitgt__session *sess, int delta)
{
	unsigned int n = __atomic_load_n(&sess->ncmds, __ATOMIC_RELAXED);

	__atomic_store_n(&sess->ncmds, n + (unsigned int)delta, __ATOMIC_RELAXED);
}

int scsitgt__cmd_create(struct scsitgt__cmd **out, struct scsitgt__session *sess,
			size_t fabric_priv_size)
{
	struct scsitgt__shard *shard = sess->shard;
	struct scsitgt__cmd *cmd;
	size_t cap;

	/* From its shard's free list in steady state; the fabric part is zeroed too. */
	cmd = scsitgt__cache_zalloc(&shard->cache, sizeof(*cmd) + fabric_priv_size, &cap);
	if (cmd == NULL)
		return -ENOMEM;
	cmd->shard = shard;
	cmd->alloc_size = (uint32_t)cap;
	cmd->sess = sess;
	cmd->state = SCSITGT__CMD_NEW;
	scsitgt__list_add_tail(&sess->cmds, &cmd->sess_node);
	sess_ncmds_add(sess, 1);
	*out = cmd;
	return 0;
}

static void cmd_set_sense(struct scsitgt__cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq,
			  const struct scsitgt__sense_detail *detail)
{
	bool desc = cmd->lun && cmd->lun->mode.d_sense;

	cmd->status = SAM_STAT_CHECK_CONDITION;
	cmd->sense_len = (uint8_t)scsitgt__sense_encode(cmd->sense, desc, key, asc, ascq, detail);
}

static void cmd_set_reason(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason,
			   const struct scsitgt__sense_detail *detail)
{
	const struct scsitgt__sense_info *si = scsitgt__sense_lookup(reason);

	cmd->sense_len = 0;
	cmd->status = si->status;
	if (si->status == SAM_STAT_CHECK_CONDITION)
		cmd_set_sense(cmd, si->key, si->asc, si->ascq, detail);
	if (reason != SCSITGT__SR_OK)
		cmd->data_len = cmd->partial_len;
}

/* An offline LUN refuses media commands with NOT READY, LOGICAL UNIT NOT READY, OFFLINE
 * (SPC-5 Annex F, 04h/12h) instead of @r; a pending unit attention or a reservation conflict
 * is still reported first (SAM-5 §5.14). */
static enum scsitgt__sense_reason cmd_offline(struct scsitgt__cmd *cmd,
					      enum scsitgt__sense_reason r)
{
	if (cmd->lun && cmd->lun->offline && cmd->def &&
	    (cmd->def->flags & SCSITGT__CDB_F_MEDIUM) && r != SCSITGT__SR_RESERVATION_CONFLICT &&
	    !(r >= SCSITGT__SR_UA_POWER_ON_RESET && r <= SCSITGT__SR_UA_MEDIUM_CHANGED)) {
		memset(&cmd->detail, 0, sizeof(cmd->detail));
		r = SCSITGT__SR_NOT_READY_OFFLINE;
	}
	return r;
}

void scsitgt__cmd_setup(struct scsitgt__cmd *cmd, const uint8_t lun[8], const uint8_t *cdb,
			size_t cdb_len, uint8_t task_attr, uint64_t tag)
{
	struct scsitgt_target *tgt = cmd->sess->tgt;
	enum scsitgt__sense_reason r;

	assert(cmd->state == SCSITGT__CMD_NEW);
	scsitgt__stats_cmd_start(cmd);
	cmd->tag = tag;
	cmd->task_attr = task_attr;
	cmd->lun_id = scsitgt__lun_decode(lun);
	/* a LUN masked from this initiator is treated as absent (core/acl.c). */
	cmd->lun = scsitgt__session_find_lun(cmd->sess, cmd->lun_id);
	if (cmd->lun)
		scsitgt__lun_hold(cmd->lun, cmd->shard);
	/* SAM-5 §5.3: a LUN holding its limit of commands refuses more with TASK SET
	 * FULL, before the CDB is looked at (every shard's, as they last wrote them; the
	 * others' parts are read only when some part is above its share, lun.c). */
	if (cmd->lun && scsitgt__lun_over_limit(cmd->lun, cmd->shard, tgt->max_lun_commands)) {
		memcpy(cmd->cdb, cdb, cdb_len < SCSITGT__CDB_MAX ? cdb_len : SCSITGT__CDB_MAX);
		cmd->cdb_len = (uint8_t)(cdb_len < SCSITGT__CDB_MAX ? cdb_len : SCSITGT__CDB_MAX);
		cmd_move(cmd, CMD_S(SCSITGT__CMD_NEW), SCSITGT__CMD_DONE);
		cmd_set_reason(cmd, SCSITGT__SR_TASK_SET_FULL, NULL);
		return;
	}

	if (cdb_len > SCSITGT__CDB_MAX) {
		/* Longer CDBs (iSCSI extended CDB AHS) name no command we support. */
		cmd->cdb_len = 0;
		cmd_move(cmd, CMD_S(SCSITGT__CMD_NEW), SCSITGT__CMD_DONE);
		cmd_set_reason(cmd, SCSITGT__SR_INVALID_OPCODE, NULL);
		return;
	}
	memcpy(cmd->cdb, cdb, cdb_len);
	cmd->cdb_len = (uint8_t)cdb_len;

	r = cmd_offline(cmd, scsitgt__cdb_parse(cmd));
	/* A deferred write buffer waits for its data (scsitgt__cmd_alloc_buf()). */
	if (r == SCSITGT__SR_OK && cmd->xfer_len &&
	    !(cmd->defer_buf && cmd->dir == SCSITGT__DIR_OUT) && scsitgt__cmd_alloc_buf(cmd) < 0)
		r = SCSITGT__SR_TASK_SET_FULL;
	if (r != SCSITGT__SR_OK) {
		cmd_move(cmd, CMD_S(SCSITGT__CMD_NEW), SCSITGT__CMD_DONE);
		cmd_set_reason(cmd, r, &cmd->detail);
		return;
	}
	cmd_move(cmd, CMD_S(SCSITGT__CMD_NEW),
		 cmd->dir == SCSITGT__DIR_OUT ? SCSITGT__CMD_NEED_DATA : SCSITGT__CMD_READY);
}

int scsitgt__cmd_alloc_buf(struct scsitgt__cmd *cmd)
{
	size_t cap;

	if (cmd->buf || cmd->xfer_len == 0)
		return 0;
	/*
	 * a session's Data-In buffers are bounded (the initiator may stop reading while its
	 * CmdSN window is full of large READs); beyond the limit a command is refused with TASK
	 * SET FULL by the caller (SAM-5 §5.3). One command may always proceed.
	 */
	if (cmd->dir == SCSITGT__DIR_IN && cmd->sess && cmd->sess->read_bytes &&
	    cmd->sess->tgt->max_read_buffer_bytes &&
	    cmd->sess->read_bytes + cmd->xfer_len > cmd->sess->tgt->max_read_buffer_bytes)
		return -EBUSY;
	/* Not zeroed: Data-Out or the backend fills it, and Data-In sends data_len. */
	if (cmd->buf_ops) {
		cmd->buf = cmd->buf_ops->alloc(cmd->buf_ctx, cmd->xfer_len, &cap);
		cmd->buf_ext = cmd->buf != NULL;
	}
	if (cmd->buf == NULL)
		cmd->buf = scsitgt__cache_alloc(&cmd->shard->cache, cmd->xfer_len, &cap);
	if (cmd->buf == NULL)
		return -ENOMEM;
	cmd->buf_cap = (uint32_t)cap;
	if (cmd->dir == SCSITGT__DIR_IN && cmd->sess) {
		cmd->read_charged = cmd->xfer_len;
		cmd->sess->read_bytes += cmd->xfer_len;
	}
	return 0;
}

/* Lent Data-In goes back to its backend: always before the command lets go of its LUN (the
 * LUN's count, or an orphaned LUN's shell), whose last drop may close or free the backend. */
static void cmd_lent_release(struct scsitgt__cmd *cmd)
{
	if (cmd->lent_data) {
		cmd->lent_data = NULL;
		if (cmd->lent_release)
			cmd->lent_release(cmd->lent_arg);
	}
}

void scsitgt__cmd_free_buf(struct scsitgt__cmd *cmd)
{
	/* a detached command (cmd->sess NULL) outlived its session and its count. */
	if (cmd->read_charged && cmd->sess)
		cmd->sess->read_bytes -= cmd->read_charged;
	cmd->read_charged = 0;
	cmd_lent_release(cmd);
	if (cmd->buf_ext)
		cmd->buf_ops->free(cmd->buf_ctx, cmd->buf, cmd->buf_cap);
	else
		scsitgt__cache_free(&cmd->shard->cache, cmd->buf, cmd->buf_cap);
	cmd->buf = NULL;
	cmd->buf_ext = false;
}

void scsitgt__cmd_execute(struct scsitgt__cmd *cmd)
{
	if (cmd->state == SCSITGT__CMD_DONE) {
		scsitgt__stats_cmd_done(cmd);
		cmd->sess->ops->cmd_done(cmd);
		return;
	}
	if (cmd->buf == NULL && cmd->xfer_len) {
		/* A deferred write buffer that never got its data: refuse rather than write
		 * whatever a fresh buffer holds. */
		cmd_move(cmd, CMD_S(SCSITGT__CMD_READY) | CMD_S(SCSITGT__CMD_NEED_DATA),
			 SCSITGT__CMD_DONE);
		cmd_set_reason(cmd, SCSITGT__SR_TASK_SET_FULL, NULL);
		scsitgt__stats_cmd_done(cmd);
		cmd->sess->ops->cmd_done(cmd);
		return;
	}
	/* ORDERED / HEAD OF QUEUE tasks may hold it back (core/order.c starts it later). */
	if (!scsitgt__order_may_start(cmd)) {
		cmd_move(cmd, CMD_S(SCSITGT__CMD_READY) | CMD_S(SCSITGT__CMD_NEED_DATA),
			 SCSITGT__CMD_PARKED);
		return;
	}
	cmd_move(cmd, CMD_S(SCSITGT__CMD_READY) | CMD_S(SCSITGT__CMD_NEED_DATA), SCSITGT__CMD_EXEC);
	cmd->exec(cmd);
}

void scsitgt__cmd_start_internal(struct scsitgt__cmd *cmd, struct scsitgt_lun *lun,
				 const uint8_t *cdb, size_t cdb_len)
{
	cmd->lun = lun;
	cmd->lun_id = lun->id;
	cmd->cdb_len = (uint8_t)(cdb_len < SCSITGT__CDB_MAX ? cdb_len : SCSITGT__CDB_MAX);
	memcpy(cmd->cdb, cdb, cmd->cdb_len);
	/* no initiator's command: never counted (core/stats.c) */
	cmd->stats_done = true;
	/* it holds the LUN like any command; destroy drops it */
	scsitgt__lun_hold(lun, cmd->shard);
	cmd_move(cmd, CMD_S(SCSITGT__CMD_NEW), SCSITGT__CMD_EXEC);
}

void scsitgt__cmd_end_internal(struct scsitgt__cmd *cmd)
{
	cmd_move(cmd, CMD_S(SCSITGT__CMD_EXEC), SCSITGT__CMD_DONE);
	scsitgt__cmd_destroy(cmd);
}

void scsitgt__cmd_unpark(struct scsitgt__cmd *cmd)
{
	struct scsitgt__sense_detail detail = cmd->detail;
	enum scsitgt__sense_reason r;

	cmd_move(cmd, CMD_S(SCSITGT__CMD_PARKED), SCSITGT__CMD_EXEC);
	/* Held back since parse: decided again on the state the tasks ahead of it left (a
	 * reservation preempted, a sanitize started, cdb.c scsitgt__cdb_recheck()). Only a
	 * held task pays for it. */
	memset(&cmd->detail, 0, sizeof(cmd->detail));
	r = cmd_offline(cmd, scsitgt__cdb_recheck(cmd));
	if (r != SCSITGT__SR_OK) {
		scsitgt__cmd_complete(cmd, r);
		return;
	}
	cmd->detail = detail;
	cmd->exec(cmd);
}

void scsitgt__cmd_fail(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason)
{
	cmd_move(cmd,
		 CMD_S(SCSITGT__CMD_NEW) | CMD_S(SCSITGT__CMD_NEED_DATA) |
			 CMD_S(SCSITGT__CMD_READY),
		 SCSITGT__CMD_DONE);
	cmd_set_reason(cmd, reason, NULL);
}

/*
 * An aborted command leaves the core (its ios are back, or it had none). SAM-5 §5.6: one
 * another I_T nexus aborted while TAS was 1 (cmd->tas, core/tmf.c) completes with TASK
 * ABORTED status, no sense, no data; any other gets no response. Counted as aborted when
 * destroyed (stats_done stays false).
 */
static void cmd_end_aborted(struct scsitgt__cmd *cmd)
{
	if (!cmd->tas) {
		cmd->sess->ops->cmd_aborted(cmd);
		return;
	}
	/* SAM-5: an aborted task leaves the task set when it is aborted, not when its TASK
	 * ABORTED has been sent (an ORDERED one would hold newer tasks back that long). */
	scsitgt__order_done(cmd);
	cmd_move(cmd, CMD_S(SCSITGT__CMD_ABORTED), SCSITGT__CMD_DONE);
	cmd->status = SAM_STAT_TASK_ABORTED;
	cmd->sense_len = 0;
	cmd->data_len = 0;
	cmd->sess->ops->cmd_done(cmd);
}

static void cmd_finish(struct scsitgt__cmd *cmd)
{
	/* the task leaves the LUN's task set; tasks it held back may start. */
	scsitgt__order_done(cmd);
	if (cmd->state == SCSITGT__CMD_ABORTED || cmd->state == SCSITGT__CMD_ORPHANED) {
		/* The backend gave the command back: the TMF that aborted it may now answer
		 * (SAM-5 §7: no response before the aborted task has left the backend). */
		if (cmd->tmf_wait)
			scsitgt__tmf_cmd_released(cmd);
		/* Its nexus is gone: nobody else will free it. */
		if (cmd->state == SCSITGT__CMD_ORPHANED) {
			scsitgt__cmd_destroy(cmd);
			return;
		}
		cmd_end_aborted(cmd);
		return;
	}
	cmd_move(cmd, CMD_S(SCSITGT__CMD_EXEC), SCSITGT__CMD_DONE);
	scsitgt__stats_cmd_done(cmd);
	cmd->sess->ops->cmd_done(cmd);
}

void scsitgt__cmd_complete_detail(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason,
				  const struct scsitgt__sense_detail *detail)
{
	if (!scsitgt__cmd_aborted(cmd))
		cmd_set_reason(cmd, reason, detail);
	cmd_finish(cmd);
}

void scsitgt__cmd_complete(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason)
{
	scsitgt__cmd_complete_detail(cmd, reason, &cmd->detail);
}

void scsitgt__cmd_complete_raw(struct scsitgt__cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq)
{
	if (!scsitgt__cmd_aborted(cmd)) {
		cmd->data_len = 0;
		cmd_set_sense(cmd, key, asc, ascq, NULL);
	}
	cmd_finish(cmd);
}

void scsitgt__cmd_complete_sense(struct scsitgt__cmd *cmd, uint8_t status, const uint8_t *sense,
				 size_t sense_len)
{
	/* sense built by the command itself (EXTENDED COPY's COPY ABORTED, xcopy.c). */
	if (!scsitgt__cmd_aborted(cmd)) {
		if (sense_len > sizeof(cmd->sense))
			sense_len = sizeof(cmd->sense);
		cmd->data_len = 0;
		cmd->status = status;
		memcpy(cmd->sense, sense, sense_len);
		cmd->sense_len = (uint8_t)sense_len;
	}
	cmd_finish(cmd);
}

bool scsitgt__cmd_is_live(const struct scsitgt__cmd *cmd)
{
	return (CMD_LIVE & CMD_S(cmd->state)) != 0;
}

/* Whether something will still end @cmd: an io in its backend, or a hold. */
static bool cmd_held(const struct scsitgt__cmd *cmd)
{
	return cmd->ios_inflight != 0 || cmd->holds != 0;
}

void scsitgt__cmd_hold(struct scsitgt__cmd *cmd)
{
	cmd->holds++;
}

void scsitgt__cmd_unhold(struct scsitgt__cmd *cmd)
{
	assert(cmd->holds > 0);
	cmd->holds--;
}

bool scsitgt__cmd_aborted_held(const struct scsitgt__cmd *cmd)
{
	return cmd->state == SCSITGT__CMD_ABORTED && cmd_held(cmd);
}

void scsitgt__cmd_abort(struct scsitgt__cmd *cmd, struct scsitgt__tmf_op *op, bool cancel_ios)
{
	if (cmd->state == SCSITGT__CMD_EXEC && cmd_held(cmd)) {
		/* cmd_finish() hands it to cmd_aborted once its ios return. */
		cmd_move(cmd, CMD_LIVE, SCSITGT__CMD_ABORTED);
		if (op)
			scsitgt__tmf_wait_for(op, cmd);
		/* A backend that can cancel its ios returns them sooner (backend.h abort()). */
		if (cancel_ios)
			scsitgt__io_abort_cmd(cmd);
		/* Held for the cluster store: it ends now, whatever the store does (last: the
		 * fabric may free it). */
		if (cmd->pr_hold)
			scsitgt__pr_hold_cut(cmd);
		return;
	}
	cmd_move(cmd, CMD_LIVE, SCSITGT__CMD_ABORTED);
	cmd_end_aborted(cmd);
}

/* An ORPHANED @cmd leaves its shard's orphans. Loop: its shard. */
static void cmd_orphan_unlist(struct scsitgt__cmd *cmd)
{
	scsitgt__list_remove(&cmd->sess_node);
	atomic_store_explicit(&cmd->shard->norphans,
			      atomic_load_explicit(&cmd->shard->norphans, memory_order_relaxed) - 1,
			      memory_order_relaxed);
}

void scsitgt__cmd_nexus_gone(struct scsitgt__cmd *cmd)
{
	if (!cmd_held(cmd)) {
		scsitgt__cmd_destroy(cmd);
		return;
	}
	/* Detach: the backend still holds the buffers; the last io frees it (cmd_finish). It is
	 * still in its LUN's task set: on its shard's orphans, where a LUN reset finds it. */
	scsitgt__list_remove(&cmd->sess_node);
	cmd->sess = NULL;
	scsitgt__list_add_tail(&cmd->shard->orphans, &cmd->sess_node);
	atomic_store_explicit(&cmd->shard->norphans,
			      atomic_load_explicit(&cmd->shard->norphans, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	cmd_move(cmd, CMD_LIVE | CMD_S(SCSITGT__CMD_ABORTED), SCSITGT__CMD_ORPHANED);
	/* Held for the cluster store (a TMF aborted it already, or not): freed now. */
	if (cmd->pr_hold)
		scsitgt__pr_hold_cut(cmd);
}

/* The family's heap state goes with the command (cmd.h, struct scsitgt__cmd_ctx_ops). */
static void cmd_ctx_free(struct scsitgt__cmd *cmd)
{
	const struct scsitgt__cmd_ctx_ops *ops = cmd->ctx_ops;

	cmd->ctx_ops = NULL;
	if (ops)
		ops->free(cmd);
}

bool scsitgt__cmd_abandon(struct scsitgt__cmd *cmd)
{
	if (cmd->state == SCSITGT__CMD_ABANDONED)
		return false;
	/* its io callbacks never run again: what its family holds of the engine goes now */
	if (cmd->ctx_ops && cmd->ctx_ops->abandon)
		cmd->ctx_ops->abandon(cmd);
	if (cmd->tmf_wait)
		scsitgt__tmf_cmd_released(cmd);
	scsitgt__order_done(cmd);
	if (cmd->sess) {
		scsitgt__list_remove(&cmd->sess_node);
		sess_ncmds_add(cmd->sess, -1);
		cmd->sess = NULL;
	} else if (cmd->state == SCSITGT__CMD_ORPHANED) {
		cmd_orphan_unlist(cmd);
	}
	atomic_store(&cmd->orphan_ios, cmd->ios_inflight);
	cmd_move(cmd, CMD_LIVE | CMD_S(SCSITGT__CMD_ABORTED) | CMD_S(SCSITGT__CMD_ORPHANED),
		 SCSITGT__CMD_ABANDONED);
	return true;
}

void scsitgt__cmd_abandoned_free(struct scsitgt__cmd *cmd)
{
	/* The caller drops the LUN shell's reference after this (core/drain.c). */
	cmd_lent_release(cmd);
	/* A buffer lent by a fabric's pool (cmd->buf_ext, iSER's registered memory) is not cache
	 * memory: its pool may be gone with the engine, so it is left to the pool's owner. */
	if (!cmd->buf_ext)
		scsitgt__cache_free(NULL, cmd->buf, cmd->buf_cap);
	cmd_ctx_free(cmd);
	cmd_move(cmd, CMD_S(SCSITGT__CMD_ABANDONED), SCSITGT__CMD_FREED);
	scsitgt__cache_free(NULL, cmd, cmd->alloc_size);
}

enum scsitgt__sense_reason scsitgt__cmd_bad_cdb_field(struct scsitgt__cmd *cmd, uint16_t byte,
						      int bit)
{
	cmd->detail.sks_valid = true;
	cmd->detail.sks_cdb = true;
	cmd->detail.sks_field = byte;
	cmd->detail.sks_bpv = bit >= 0;
	cmd->detail.sks_bit = bit >= 0 ? (uint8_t)bit : 0;
	return SCSITGT__SR_INVALID_FIELD_IN_CDB;
}

enum scsitgt__sense_reason scsitgt__cmd_bad_param_field(struct scsitgt__cmd *cmd, uint16_t byte,
							int bit)
{
	cmd->detail.sks_valid = true;
	cmd->detail.sks_cdb = false;
	cmd->detail.sks_field = byte;
	cmd->detail.sks_bpv = bit >= 0;
	cmd->detail.sks_bit = bit >= 0 ? (uint8_t)bit : 0;
	return SCSITGT__SR_INVALID_FIELD_IN_PARAM_LIST;
}

void scsitgt__cmd_destroy(struct scsitgt__cmd *cmd)
{
	scsitgt__order_done(cmd);
	if (!cmd->stats_done)
		scsitgt__stats_cmd_aborted(cmd);
	if (cmd->sess) {
		scsitgt__list_remove(&cmd->sess_node);
		sess_ncmds_add(cmd->sess, -1);
	} else if (cmd->state == SCSITGT__CMD_ORPHANED) {
		cmd_orphan_unlist(cmd);
	}
	/* Buffers and lent Data-In go back before the LUN's count drops: the last drop may close
	 * the backend (a removed LUN), and a release after it would touch freed memory. */
	scsitgt__cmd_free_buf(cmd);
	if (cmd->lun)
		scsitgt__lun_inflight_drop(cmd->lun, cmd->shard);
	/* From any state but FREED: destroying twice is caught here. */
	cmd_move(cmd, ~0u, SCSITGT__CMD_FREED);
	scsitgt__cache_free(&cmd->shard->cache, cmd, cmd->alloc_size);
}

/*
 * SAM-5 §5.4.3 and SBC-4 §4.2 (via RFC 7143 §11.4.5.2, SRP's data descriptors likewise):
 * when the initiator moves a different amount than the CDB asks for, a media write is cut to
 * the whole logical blocks that arrive (the residual tells the initiator what was not
 * written) and any other write, whose parameter list cannot be cut, is refused.
 */
/*
 * The writes that may be cut to the whole blocks the initiator sends: each block is written
 * on its own. Not WRITE SAME (one block, whatever its NUMBER OF LOGICAL BLOCKS), COMPARE AND
 * WRITE (the compare and the write halves) or WRITE ATOMIC (16) (all of it or nothing, in
 * whole atomic granules), nor parameter lists.
 */
static bool cmd_write_may_cut(uint8_t opcode)
{
	switch (opcode) {
	case SBC_WRITE_6:
	case SBC_WRITE_10:
	case SBC_WRITE_12:
	case SBC_WRITE_16:
	case SBC_WRITE_AND_VERIFY_10:
	case SBC_WRITE_AND_VERIFY_12:
	case SBC_WRITE_AND_VERIFY_16:
	case SBC_ORWRITE_16:
		return true;
	default:
		return false;
	}
}

uint32_t scsitgt__cmd_fit_data_out(struct scsitgt__cmd *cmd, uint32_t edtl)
{
	uint32_t spdtl = cmd->xfer_len;
	uint32_t bs = cmd->lun ? cmd->lun->geo.block_size : 0;

	if (cmd->state == SCSITGT__CMD_DONE || cmd->dir != SCSITGT__DIR_OUT || edtl == spdtl)
		return spdtl;
	/*
	 * A length that ends inside a logical block: part of a block cannot be written without
	 * mixing old and new data in it, so the command is refused before anything is written,
	 * for the data length of the command IU (docs/scsi.md, "Data lengths").
	 */
	if (bs && cmd->nblocks && cmd->xfer_len % bs == 0 && edtl % bs != 0 && edtl < spdtl) {
		scsitgt__cmd_fail(cmd, SCSITGT__SR_INVALID_FIELD_IN_CMD_IU);
		return spdtl;
	}
	/*
	 * More offered than the CDB asks for: the CDB's length stands and the rest is the
	 * underflow residual. Fewer whole blocks: a media write keeps those (overflow residual
	 * for the rest; none at all: GOOD, nothing written).
	 */
	if (bs && cmd->nblocks && cmd_write_may_cut(cmd->cdb[0]) &&
	    (uint64_t)cmd->nblocks * bs == cmd->xfer_len) {
		if (edtl < spdtl) {
			cmd->nblocks = edtl / bs;
			cmd->xfer_len = edtl;
			if (cmd->nblocks == 0)
				scsitgt__cmd_fail(cmd, SCSITGT__SR_OK);
		}
		return spdtl;
	}
	/* Any other write whose data the CDB's length field contradicts (WRITE SAME's one
	 * block, COMPARE AND WRITE's two halves, a parameter list). */
	scsitgt__cmd_fail(cmd, SCSITGT__SR_INVALID_FIELD_IN_CDB);
	return spdtl;
}
