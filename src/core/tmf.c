/* SPDX-License-Identifier: MIT */
/*
 * Task management (SAM-5 §7). A TMF aborts the commands it names. Commands inside a backend
 * keep their buffers until the backend returns them; they are marked aborted, never report
 * status, and reach the fabric's cmd_aborted() when their last io returns.
 * TODO(#5): make the TMF response wait for those ios, and extend resets to other nexuses
 * with the unit attentions SAM-5 §7.6 requires.
 */
#include "core/fabric.h"

static bool tmf_matches(const struct scsitgt__cmd *cmd, enum scsitgt__tmf_type type,
			uint64_t lun_id, uint64_t ref_tag)
{
	switch (type) {
	case SCSITGT__TMF_ABORT_TASK:
	case SCSITGT__TMF_QUERY_TASK:
		return cmd->tag == ref_tag && cmd->lun_id == lun_id;
	case SCSITGT__TMF_ABORT_TASK_SET:
	case SCSITGT__TMF_CLEAR_TASK_SET:
	case SCSITGT__TMF_LUN_RESET:
	case SCSITGT__TMF_QUERY_TASK_SET:
		return cmd->lun_id == lun_id;
	case SCSITGT__TMF_TARGET_WARM_RESET:
	case SCSITGT__TMF_TARGET_COLD_RESET:
		return true;
	default:
		return false;
	}
}

static bool cmd_is_live(const struct scsitgt__cmd *cmd)
{
	return cmd->state == SCSITGT__CMD_NEED_DATA || cmd->state == SCSITGT__CMD_READY ||
	       cmd->state == SCSITGT__CMD_EXEC;
}

void scsitgt__tmf_execute(struct scsitgt__session *sess, enum scsitgt__tmf_type type,
			  const uint8_t lun[8], uint64_t ref_tag, scsitgt__tmf_cb cb, void *cb_arg)
{
	uint64_t lun_id = scsitgt__lun_decode(lun);
	bool lun_scoped = type != SCSITGT__TMF_TARGET_WARM_RESET &&
			  type != SCSITGT__TMF_TARGET_COLD_RESET;
	struct scsitgt__list *pos, *tmp;
	unsigned int found = 0;

	if (lun_scoped && scsitgt__target_find_lun(sess->tgt, lun_id) == NULL) {
		cb(cb_arg, SCSITGT__TMF_LUN_NOT_FOUND);
		return;
	}
	switch (type) {
	case SCSITGT__TMF_QUERY_TASK:
	case SCSITGT__TMF_QUERY_TASK_SET:
		scsitgt__list_foreach_safe(pos, tmp, &sess->cmds)
		{
			struct scsitgt__cmd *c = scsitgt__container_of(pos, struct scsitgt__cmd, sess_node);

			if (cmd_is_live(c) && tmf_matches(c, type, lun_id, ref_tag))
				found++;
		}
		cb(cb_arg, found ? SCSITGT__TMF_SUCCEEDED : SCSITGT__TMF_COMPLETE);
		return;
	case SCSITGT__TMF_CLEAR_ACA:
	case SCSITGT__TMF_QUERY_ASYNC_EVENT:
		cb(cb_arg, SCSITGT__TMF_NOT_SUPPORTED);
		return;
	default:
		break;
	}

	/* Abort the matching commands of this nexus. Commands of other nexuses are affected by
	 * the resets too; that, with the unit attentions it raises, is the clustering work. */
	scsitgt__list_foreach_safe(pos, tmp, &sess->cmds)
	{
		struct scsitgt__cmd *c = scsitgt__container_of(pos, struct scsitgt__cmd, sess_node);

		if (!cmd_is_live(c) || !tmf_matches(c, type, lun_id, ref_tag))
			continue;
		found++;
		if (c->state == SCSITGT__CMD_EXEC && c->ios_inflight) {
			/* cmd_finish() hands it to cmd_aborted once its ios return. */
			c->state = SCSITGT__CMD_ABORTED;
		} else {
			c->state = SCSITGT__CMD_ABORTED;
			sess->ops->cmd_aborted(c);
		}
	}
	/* RFC 7143 §11.6.1: ABORT TASK of a task that already completed is "function complete";
	 * the fabric answers "task does not exist" for tags it never saw. */
	cb(cb_arg, SCSITGT__TMF_COMPLETE);
}
