/* SPDX-License-Identifier: MIT */
/* Task management internals shared with the reservation code (core/tmf.c). */
#ifndef SCSITGT_CORE_TMF_H
#define SCSITGT_CORE_TMF_H

#include "core/fabric.h"

/* Default of scsitgt_engine_set_tmf_timeout(). */
#define SCSITGT__TMF_TIMEOUT_MS_DEFAULT 30000u

/*
 * An aborted command left its backend (cmd.c calls this from cmd_finish for a command with
 * cmd->tmf_wait set, before handing it to the fabric): the TMFs waiting for it may answer.
 */
void scsitgt__tmf_cmd_released(struct scsitgt__cmd *cmd);

/* The TMF @op waits for @cmd, aborted inside its backend (scsitgt__cmd_abort(), or earlier by
 * another TMF), once at most: the caller never passes the same pair twice. When there is no
 * memory for that, @op answers FUNCTION REJECTED; once @op has answered (its timeout), nothing
 * is kept. In O(1); the record goes when @cmd leaves its backend or when @op answers, whichever
 * comes first (a fence's quiescence keeps it until @cmd leaves: scsitgt__tmf_quiesce_fence()).
 * Loop: @cmd's shard, while the caller holds @op. */
void scsitgt__tmf_wait_for(struct scsitgt__tmf_op *op, struct scsitgt__cmd *cmd);

/* How many such records the commands of @sess carry (tests). Loop: @sess's shard. */
unsigned int scsitgt__tmf_session_waiters(const struct scsitgt__session *sess);

/*
 * Holds on a TMF's answer, taken and dropped on any shard: the TMF answers, on its issuer's
 * loop, once the last one is dropped (or at its timeout). @here is the calling loop's shard.
 */
void scsitgt__tmf_op_get(struct scsitgt__tmf_op *op);
void scsitgt__tmf_op_put(struct scsitgt__tmf_op *op, const struct scsitgt__shard *here);
/* The TMF answers FUNCTION REJECTED (while its caller holds it: the answer comes after). */
void scsitgt__tmf_op_reject(struct scsitgt__tmf_op *op);

/*
 * Abort the live commands of @sess on LUN @lun_id (on @lun only, when not NULL), except
 * @except; with @op the TMF waits for those in a backend, which is asked to cancel them when
 * @cancel_ios. @pr_before (not 0): only those admitted under an older shared reservation
 * state (cmd->pr_seq < @pr_before: a PREEMPT AND ABORT's own). @by_other: another nexus
 * did it (its reset, CLEAR TASK SET, PREEMPT AND ABORT), so that under TAS 1 the executing
 * ones are answered TASK ABORTED (cmd->tas). Returns how many. Loop: @sess's shard.
 */
unsigned int scsitgt__tmf_abort_session(struct scsitgt__session *sess, uint64_t lun_id,
					const struct scsitgt_lun *lun,
					const struct scsitgt__cmd *except,
					struct scsitgt__tmf_op *op, bool cancel_ios,
					uint64_t pr_before, bool by_other);

/* What a logical unit reset does besides aborting tasks (SAM-5 §6.3.3). Loop: home. */
void scsitgt__tmf_lun_reset_rest(struct scsitgt_lun *lun, enum scsitgt__sense_reason ua,
				 struct scsitgt__tmf_op *op);

/*
 * Task management that reaches the commands of other sessions, which run on their own shards
 * (core/tmf_xshard.c): CLEAR TASK SET, LOGICAL UNIT RESET, TARGET WARM/COLD RESET of @tgt,
 * issued on nexus @sess (NULL: scsitgt_lun_apply_reset()) for LUN @lun_id. Home walks the
 * target's sessions and asks each shard to abort its own sessions' tasks; once every shard has
 * answered, the rest of a reset runs on home. @op (may be NULL) is held until then and waits for
 * the aborted tasks; @done(@done_arg) (may be NULL) runs on home after that, once every nexus
 * has the reset's unit attention. Returns 0, or -ENOMEM (nothing was done, @done not called).
 * Loop: @sess's shard (home without @sess).
 */
int scsitgt__tmf_xshard(struct scsitgt_target *tgt, enum scsitgt__tmf_type type,
			const struct scsitgt__session *sess, uint64_t lun_id,
			struct scsitgt__tmf_op *op, void (*done)(void *done_arg), void *done_arg);

struct scsitgt__pr_change;
/*
 * Raise the unit attentions and task aborts (PREEMPT AND ABORT, SPC-5 §5.13.11.5) that a
 * reservation change recorded in @ch, on every nexus of the LUN's target but the one that made
 * it (ch->by_port); @by_cmd, the command that made it (compared only, may be NULL), is never
 * aborted. The events move out of @ch. The unit attentions are established before the call
 * returns; @done(@done_arg) (may be NULL) runs on home once every shard has made its aborts,
 * inside the call when none has any to make. Loop: home.
 */
void scsitgt__tmf_pr_events(struct scsitgt_lun *lun, struct scsitgt__pr_change *ch,
			    const struct scsitgt__cmd *by_cmd, void (*done)(void *done_arg),
			    void *done_arg);

/*
 * The same for a state made elsewhere (no command of ours made it), whose aborts @op (from
 * scsitgt__tmf_op_new_home(), held by the call until they are made) waits for: it answers
 * once every aborted task left its backend (or its timeout). Loop: home.
 */
void scsitgt__tmf_pr_events_op(struct scsitgt_lun *lun, struct scsitgt__pr_change *ch,
			       struct scsitgt__tmf_op *op);

/*
 * An op that no nexus issued (a reservation change applied from another engine): @cb runs on
 * home once the op has no hold left (the caller's own, dropped with scsitgt__tmf_op_put(), and
 * those of the tasks it waits for), or at the engine's TMF timeout. NULL: no memory. Loop:
 * home.
 */
struct scsitgt__tmf_op *scsitgt__tmf_op_new_home(struct scsitgt_engine *engine, scsitgt__tmf_cb cb,
						 void *cb_arg);

/*
 * A LUN's removal timed out (core/drain.c): abort the live commands of @lun in every session
 * of its target, each on its own shard, without asking the backend to cancel. Loop: home.
 */
void scsitgt__tmf_drain_lun(struct scsitgt_lun *lun);

#endif /* SCSITGT_CORE_TMF_H */
