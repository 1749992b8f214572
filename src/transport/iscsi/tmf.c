/* SPDX-License-Identifier: MIT */
/*
 * Task Management Function requests (RFC 7143 §11.5, §11.6), mapped onto the core's SAM-5
 * task management. TARGET COLD RESET closes, once its response is out, every connection of
 * every session of the target, the issuing one included (§11.5.1, §11.6.1); TARGET WARM
 * RESET resets the logical units the issuing initiator knows and closes nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/shard.h"
#include "core/stats.h"
#include "core/tmf.h"
#include "transport/iscsi/conn.h"

struct tmf_ctx {
	struct scsitgt__iscsi_conn *conn;
	uint32_t itt;
	bool cold;
	/* A multi-task function (tmf_fences()): counted in conn->tmf_fencing until answered. */
	bool fencing;
	/* Waiting for fenced tasks' Data-Out sequences: in conn->tmf_wait, bounded by timer. */
	struct scsitgt__list wait_node;
	bool timer_on;
	uv_timer_t timer;
	/* What scsitgt__tmf_execute() gets once it acts. */
	enum scsitgt__tmf_type type;
	/* An ABORT TASK of no task (abort_task_find()): the core raises its event and checks
	 * its LUN, then it answers @absent_resp (scsitgt__tmf_abort_absent()). */
	bool absent;
	enum scsitgt__tmf_response absent_resp;
	uint8_t lun[8];
	uint32_t rtt;
	/* Non-immediate: its CmdSN, taken, is passed once it has acted (tmf_done()). */
	bool ordered;
	/* Its CmdSN: a non-immediate one (not ABORT TASK) spares the commands after it. */
	uint32_t cmd_sn;
	/* The session's arrivals when it came: an immediate one (not ABORT TASK) spares the
	 * commands that arrived after it, which run while it waits for R2T answers. */
	uint64_t arrivals;
};

/*
 * RFC 7143 §11.5.1: "Task management requests must act on all the commands from the same
 * session having a CmdSN lower than the task management CmdSN." A non-immediate TMF at
 * ExpCmdSN E keeps E taken, and ExpCmdSN there, until it has acted: the commands after it
 * (CmdSN E + 1 ...) stay held meanwhile, also those that arrive while it waits on a backend or
 * on other shards, and it spares them (the core asks through cmd_after_tmf); then they run
 * (review30b F3). An immediate TMF carries the next CmdSN, after every command held; when
 * it waits for the answers to its tasks' R2Ts, the commands the initiator sends meanwhile
 * (CmdSN from the TMF's own on, not held: nothing keeps ExpCmdSN) run, and it spares them by
 * their arrival, which also tells an immediate command sent before it from one sent after
 * (both can carry its CmdSN). ABORT TASK names its task by tag: never spared.
 */
bool scsitgt__iscsi_cmd_after_tmf(struct scsitgt__cmd *cmd, void *tmf_arg)
{
	const struct tmf_ctx *ctx = tmf_arg;
	const struct scsitgt__iscsi_task *task = scsitgt__cmd_fabric_priv(cmd);

	if (task->conn == NULL || ctx->type == SCSITGT__TMF_ABORT_TASK)
		return false;
	if (!ctx->ordered)
		return task->arrival > ctx->arrivals;
	return !task->in_order && scsitgt__sn_gt(task->cmd_sn, ctx->cmd_sn);
}

/* A non-immediate TMF has acted (or answers without acting): ExpCmdSN passes its CmdSN,
 * taken, and the commands held behind it run. */
static void tmf_passed(struct scsitgt__iscsi_conn *conn, const uint8_t *h)
{
	if (!scsitgt__bhs_immediate(h) && conn->state == SCSITGT__CONN_FFP && conn->sess)
		scsitgt__iscsi_sn_drain(conn->sess);
}

static void tmf_respond(struct scsitgt__iscsi_conn *conn, uint32_t itt, uint8_t response,
			bool close_after)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	if (conn->state != SCSITGT__CONN_FFP)
		return;
	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_RSP, ISCSI_FLAG_FINAL);
	bhs[ISCSI_RSP_RESPONSE] = response;
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	scsitgt__iscsi_conn_send_simple(conn, bhs, NULL, 0, close_after);
}

static uint8_t tmf_map(enum scsitgt__tmf_response r)
{
	switch (r) {
	case SCSITGT__TMF_COMPLETE:
	case SCSITGT__TMF_SUCCEEDED:
		return ISCSI_TMF_RSP_COMPLETE;
	case SCSITGT__TMF_TASK_NOT_FOUND:
		return ISCSI_TMF_RSP_NO_TASK;
	case SCSITGT__TMF_LUN_NOT_FOUND:
		return ISCSI_TMF_RSP_NO_LUN;
	case SCSITGT__TMF_NOT_SUPPORTED:
		return ISCSI_TMF_RSP_NOT_SUPPORTED;
	case SCSITGT__TMF_REJECTED:
	default:
		return ISCSI_TMF_RSP_REJECTED;
	}
}

/*
 * RFC 7143 §11.5.1: after a TARGET COLD RESET "the target MUST terminate all of its TCP
 * connections to all initiators (all sessions are terminated)": those of the target the
 * issuing session is logged in to (other target nodes of the engine are other SCSI target
 * devices). The issuing connection closes once its response is written (tmf_respond()).
 */
static void tmf_cold_close_all(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_sess *own = conn->sess;
	struct scsitgt__list *pos, *tmp;

	if (own == NULL || own->tgt == NULL)
		return;
	/* Those on other loops by message to theirs (xloop.c). */
	scsitgt__iscsi_sess_close_target(conn->ie, own->tgt, own, "target cold reset");
	/* Other connections of the issuing session (none while MaxConnections is 1). */
	scsitgt__list_foreach_safe(pos, tmp, &own->conns)
	{
		struct scsitgt__iscsi_conn *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_conn, sess_node);

		if (c != conn)
			scsitgt__iscsi_conn_close(c, "target cold reset");
	}
}

/*
 * The task ABORT TASK names. RFC 7143 §11.5.4: "For an ABORT TASK of a task created by a
 * non-immediate command, RefCmdSN MUST be set to the CmdSN of the task identified by the
 * Referenced Task Tag field." A live task under the tag @rtt whose CmdSN is not @ref, while
 * @ref names a CmdSN not received yet (@ref_unreceived: §11.5.1 b), is not the one named: the
 * initiator reused the tag (unique while its task exists: the Initiator Task Tag of §11.2.1)
 * for a command the target rejected ("Task in progress", §7.3) or has not received, which is
 * not a task yet, and it plugs that gap. The TMF then goes by RefCmdSN (b: Function complete,
 * the CmdSN used up) and the live task is left alone. Otherwise the tag names the task, as before (an immediate command's
 * RefCmdSN is the TMF's own CmdSN; an initiator that leaves RefCmdSN out of the window still
 * aborts by tag).
 */
static struct scsitgt__iscsi_task *abort_task_find(struct scsitgt__iscsi_conn *conn, uint32_t rtt,
						   uint32_t ref, bool ref_unreceived)
{
	struct scsitgt__iscsi_task *task = scsitgt__iscsi_task_find(conn, rtt);

	if (task && ref_unreceived && !task->immediate && task->cmd_sn != ref)
		return NULL;
	return task;
}

static void tmf_ctx_closed(uv_handle_t *h)
{
	free(h->data);
}

/* The TMF of @ctx is over (answered, or dropped with its connection): it lets go of it. */
static void tmf_ctx_free(struct tmf_ctx *ctx)
{
	ctx->conn->tmfs--;
	scsitgt__iscsi_conn_put(ctx->conn);
	if (ctx->timer_on)
		uv_close((uv_handle_t *)&ctx->timer, tmf_ctx_closed);
	else
		free(ctx);
}

/*
 * RFC 7143 §11.5.1: "For ABORT TASK SET and CLEAR TASK SET, the issuing initiator MUST continue
 * to respond to all valid target transfer tags (received via R2T ...) related to the affected
 * task set, even after issuing the task management request. The issuing initiator SHOULD
 * however terminate (i.e., by setting the F-bit to 1) these response sequences as quickly as
 * possible. The target on its part MUST wait for responses on all affected target transfer
 * tags before acting on either of these two task management requests." The standard
 * multi-task abort semantics (§4.2.3.3, TaskReporting=RFC3720, what this target negotiates)
 * ask the same of LOGICAL UNIT RESET and the target resets, for the issuing initiator's tasks.
 * ABORT TASK names one task and acts at once.
 */
static bool tmf_fences(enum scsitgt__tmf_type type)
{
	return type == SCSITGT__TMF_ABORT_TASK_SET || type == SCSITGT__TMF_CLEAR_TASK_SET ||
	       type == SCSITGT__TMF_LUN_RESET || type == SCSITGT__TMF_TARGET_WARM_RESET ||
	       type == SCSITGT__TMF_TARGET_COLD_RESET;
}

/*
 * Fence this connection's tasks that the TMF of @ctx will abort and that still receive
 * Data-Out (the issuing initiator's, on this connection: one per session): they send no new
 * R2T and do not execute until it has acted. Those it spares (a non-immediate TMF spares the
 * commands after it, scsitgt__iscsi_cmd_after_tmf()) and those of other LUNs go on.
 */
static void tasks_fence(struct scsitgt__iscsi_conn *conn, const struct tmf_ctx *ctx)
{
	bool lun_scoped = ctx->type != SCSITGT__TMF_TARGET_WARM_RESET &&
			  ctx->type != SCSITGT__TMF_TARGET_COLD_RESET;
	struct scsitgt__list *pos;

	for (pos = conn->tasks.next; pos != &conn->tasks; pos = pos->next) {
		struct scsitgt__iscsi_task *t =
			scsitgt__container_of(pos, struct scsitgt__iscsi_task, node);

		if (t->state != SCSITGT__TASK_DATA_OUT ||
		    (lun_scoped && memcmp(t->lun, ctx->lun, 8) != 0) ||
		    scsitgt__iscsi_cmd_after_tmf(t->cmd, (void *)ctx))
			continue;
		t->fenced = true;
	}
}

/* A fenced task still has a Data-Out sequence to end: an R2T or its unsolicited data. */
static bool tasks_unanswered(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__list *pos;

	for (pos = conn->tasks.next; pos != &conn->tasks; pos = pos->next) {
		const struct scsitgt__iscsi_task *t =
			scsitgt__container_of(pos, struct scsitgt__iscsi_task, node);

		if (t->fenced && t->state == SCSITGT__TASK_DATA_OUT &&
		    (t->r2t_outstanding || t->unsol_pending))
			return true;
	}
	return false;
}

/* The TMFs have acted: the fenced tasks they spared go on, one at a time (going on may end a
 * task, or close the connection). */
static void tasks_unfence(struct scsitgt__iscsi_conn *conn)
{
	bool again = true;

	while (again && conn->state == SCSITGT__CONN_FFP) {
		struct scsitgt__list *pos;

		again = false;
		for (pos = conn->tasks.next; pos != &conn->tasks; pos = pos->next) {
			struct scsitgt__iscsi_task *t =
				scsitgt__container_of(pos, struct scsitgt__iscsi_task, node);

			if (t->fenced) {
				scsitgt__iscsi_task_unfence(t);
				again = true;
				break;
			}
		}
	}
}

static void tmf_done(void *arg, enum scsitgt__tmf_response r)
{
	struct tmf_ctx *ctx = arg;
	struct scsitgt__iscsi_conn *conn = ctx->conn;
	struct scsitgt__iscsi_sess *sess = conn->sess;

	/* Before the answer, which carries ExpCmdSN: its CmdSN passes and what was held behind
	 * it runs, in order (from a drain it was held in, that drain goes on once this returns).
	 * After a cold reset, which closes every connection once its answer is out, nothing
	 * held runs, not even from such a drain: sn_busy stays. */
	if (ctx->ordered && conn->state == SCSITGT__CONN_FFP && sess) {
		if (sess->exp_cmd_sn == ctx->cmd_sn &&
		    scsitgt__iscsi_sn_is_taken(sess, ctx->cmd_sn))
			scsitgt__iscsi_sn_step(sess);
		sess->sn_busy = ctx->cold && r == SCSITGT__TMF_COMPLETE;
		scsitgt__iscsi_sn_drain(sess);
	}
	tmf_respond(ctx->conn, ctx->itt, tmf_map(r), ctx->cold);
	if (ctx->cold && r == SCSITGT__TMF_COMPLETE) {
		scsitgt__iscsi_conn_log(ctx->conn, SCSITGT_LOG_NOTICE,
					"target cold reset: closing every session of the target");
		tmf_cold_close_all(ctx->conn);
	}
	if (ctx->fencing && --conn->tmf_fencing == 0)
		tasks_unfence(conn);
	tmf_ctx_free(ctx);
}

static void tmf_act(struct tmf_ctx *ctx)
{
	if (ctx->absent)
		scsitgt__tmf_abort_absent(ctx->conn->sess->core, ctx->lun, ctx->absent_resp,
					  tmf_done, ctx);
	else
		scsitgt__tmf_execute(ctx->conn->sess->core, ctx->type, ctx->lun, ctx->rtt, tmf_done,
				     ctx);
}

/* Act on every waiting TMF, in arrival order. */
static void tmf_wait_end(struct scsitgt__iscsi_conn *conn)
{
	while (!scsitgt__list_empty(&conn->tmf_wait)) {
		struct tmf_ctx *ctx =
			scsitgt__container_of(conn->tmf_wait.next, struct tmf_ctx, wait_node);

		scsitgt__list_remove(&ctx->wait_node);
		scsitgt__list_init(&ctx->wait_node);
		if (ctx->timer_on)
			uv_timer_stop(&ctx->timer);
		tmf_act(ctx);
	}
}

static void tmf_kicked(struct scsitgt__deferred *d)
{
	struct scsitgt__iscsi_conn *conn =
		scsitgt__container_of(d, struct scsitgt__iscsi_conn, tmf_kick);

	conn->tmf_kick_pending = false;
	if (conn->state == SCSITGT__CONN_FFP && !tasks_unanswered(conn))
		tmf_wait_end(conn);
	scsitgt__iscsi_conn_put(conn);
}

/* Deferred: a task goes from inside the core's aborts too, where a TMF must not start. */
void scsitgt__iscsi_tmf_kick(struct scsitgt__iscsi_conn *conn)
{
	if (conn->state != SCSITGT__CONN_FFP || scsitgt__list_empty(&conn->tmf_wait) ||
	    conn->tmf_kick_pending || tasks_unanswered(conn))
		return;
	/* Held until then: the connection may close meanwhile. */
	conn->tmf_kick_pending = true;
	scsitgt__iscsi_conn_hold(conn);
	conn->tmf_kick.fn = tmf_kicked;
	scsitgt__shard_defer(scsitgt__iscsi_loop_shard(conn->ie, conn->worker), &conn->tmf_kick);
}

/*
 * The initiator did not end the sequences in time (RFC 7143 §11.5.1 lets the target drop the
 * connection then): the TMFs act all the same, bounded by the engine's TMF timeout.
 */
static void tmf_wait_timeout(uv_timer_t *t)
{
	struct tmf_ctx *ctx = t->data;
	struct scsitgt__iscsi_conn *conn = ctx->conn;

	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_WARNING,
				"task management: R2Ts of the affected tasks still unanswered; "
				"acting without them");
	tmf_wait_end(conn);
}

void scsitgt__iscsi_tmf_drop_waiting(struct scsitgt__iscsi_conn *conn)
{
	while (!scsitgt__list_empty(&conn->tmf_wait)) {
		struct tmf_ctx *ctx =
			scsitgt__container_of(conn->tmf_wait.next, struct tmf_ctx, wait_node);

		scsitgt__list_remove(&ctx->wait_node);
		/* Only a fencing TMF counted (as tmf_done): an ABORT TASK queued behind one did
		 * not (reviewc N1). */
		if (ctx->fencing)
			conn->tmf_fencing--;
		tmf_ctx_free(ctx);
	}
}

int scsitgt__iscsi_tmf_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	const uint8_t *h = pdu->bhs;
	uint8_t func = h[ISCSI_BHS_FLAGS] & ISCSI_TMF_FUNC_MASK;
	uint32_t itt = scsitgt__bhs_itt(h), rtt = get_be32(&h[ISCSI_TMF_RTT]);
	uint32_t cmd_sn = get_be32(&h[ISCSI_BHS_CMDSN]);
	uint32_t ref_cmd_sn = get_be32(&h[ISCSI_TMF_REFCMDSN]);
	bool ref_unreceived, absent = false;
	enum scsitgt__tmf_response absent_resp = SCSITGT__TMF_TASK_NOT_FOUND;
	enum scsitgt__tmf_type type;
	enum scsitgt__sn_verdict v;
	struct scsitgt__iscsi_task *task;
	struct tmf_ctx *ctx;

	if (sess == NULL || sess->discovery || !(h[ISCSI_BHS_FLAGS] & ISCSI_FLAG_FINAL)) {
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	/* Ignored, or held for its turn ahead of ExpCmdSN (conn.c), which brings it back. */
	v = scsitgt__iscsi_sn_check(sess, cmd_sn, scsitgt__bhs_immediate(h));
	if (v != SCSITGT__SN_NOW)
		return 0;
	/*
	 * RFC 7143 §3.2.2.1: a target must handle at least one immediate task management
	 * request per connection at any time, and may reject immediate commands for lack of
	 * resources (§11.17.1 reason 0x06). Each TMF in flight may wait on every command a
	 * backend holds (bounded in time by the TMF timeout, not in number): past
	 * SCSITGT__ISCSI_TMFS_MAX an immediate one is refused before it does anything. A
	 * non-immediate one is bounded by the CmdSN window (it holds ExpCmdSN until answered).
	 */
	if (scsitgt__bhs_immediate(h) && conn->tmfs >= SCSITGT__ISCSI_TMFS_MAX) {
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_IMM_CMD_REJECT);
		return 0;
	}
	/*
	 * RFC 7143 §11.5.1 b): RefCmdSN in the valid window [ExpCmdSN, MaxCmdSN] (as the TMF
	 * found it) and less than the TMF's own CmdSN names a command issued before the TMF
	 * and not received yet. (A non-immediate TMF has CmdSN = ExpCmdSN: never.) A CmdSN
	 * taken already was received, under another tag (a command held for its turn) or
	 * used up: the TMF names no task of it (review30b F4).
	 */
	ref_unreceived = scsitgt__sn_ge(ref_cmd_sn, sess->exp_cmd_sn) &&
			 scsitgt__sn_le(ref_cmd_sn, sess->max_cmd_sn) &&
			 scsitgt__sn_lt(ref_cmd_sn, cmd_sn) &&
			 !scsitgt__iscsi_sn_is_taken(sess, ref_cmd_sn);
	if (!scsitgt__bhs_immediate(h))
		scsitgt__iscsi_sn_take(sess, cmd_sn);

	switch (func) {
	case ISCSI_TMF_ABORT_TASK:
		type = SCSITGT__TMF_ABORT_TASK;
		task = abort_task_find(conn, rtt, ref_cmd_sn, ref_unreceived);
		if (task != NULL && task->state != SCSITGT__TASK_SENDING)
			break;
		/*
		 * No task to abort: its response is out (it completed before the TMF, §11.6.1)
		 * or the tag names none. RFC 7143 §11.5.1 b): "consider the CmdSN as received":
		 * it is used up, ExpCmdSN passes it (now, or when the gap before it fills) and the
		 * command, should it come after all, is ignored as a duplicate: "function
		 * complete". Else (c), or RefCmdSN not below the TMF's CmdSN: "task does not
		 * exist". Through the core all the same, as SRP's (the host's TMF event and the
		 * LUN's statistics count it; a LUN that does not exist answers "LUN does not
		 * exist", §11.6.1 response 2), and in turn behind a TMF still waiting.
		 */
		absent = true;
		if (task == NULL && ref_unreceived) {
			scsitgt__iscsi_sn_take(sess, ref_cmd_sn);
			scsitgt__iscsi_sn_drain(sess);
			absent_resp = SCSITGT__TMF_COMPLETE;
		}
		break;
	case ISCSI_TMF_ABORT_TASK_SET:
		type = SCSITGT__TMF_ABORT_TASK_SET;
		break;
	case ISCSI_TMF_CLEAR_ACA:
		type = SCSITGT__TMF_CLEAR_ACA;
		break;
	case ISCSI_TMF_CLEAR_TASK_SET:
		type = SCSITGT__TMF_CLEAR_TASK_SET;
		break;
	case ISCSI_TMF_LUN_RESET:
		type = SCSITGT__TMF_LUN_RESET;
		break;
	case ISCSI_TMF_TARGET_WARM_RESET:
		type = SCSITGT__TMF_TARGET_WARM_RESET;
		break;
	case ISCSI_TMF_TARGET_COLD_RESET:
		type = SCSITGT__TMF_TARGET_COLD_RESET;
		break;
	case ISCSI_TMF_TASK_REASSIGN:
		/* Needs ErrorRecoveryLevel 2 (RFC 7143 §11.5.1). */
		tmf_passed(conn, h);
		tmf_respond(conn, itt, ISCSI_TMF_RSP_NO_REASSIGN, false);
		return 0;
	default:
		tmf_passed(conn, h);
		tmf_respond(conn, itt, ISCSI_TMF_RSP_NOT_SUPPORTED, false);
		return 0;
	}
	ctx = malloc(sizeof(*ctx));
	if (ctx == NULL) {
		tmf_passed(conn, h);
		tmf_respond(conn, itt, absent ? tmf_map(absent_resp) : ISCSI_TMF_RSP_REJECTED,
			    false);
		return 0;
	}
	ctx->conn = conn;
	ctx->itt = itt;
	ctx->cold = type == SCSITGT__TMF_TARGET_COLD_RESET;
	ctx->type = type;
	ctx->absent = absent;
	ctx->absent_resp = absent_resp;
	memcpy(ctx->lun, &h[ISCSI_BHS_LUN], 8);
	ctx->rtt = rtt;
	ctx->timer_on = false;
	scsitgt__list_init(&ctx->wait_node);
	ctx->ordered = !scsitgt__bhs_immediate(h);
	ctx->cmd_sn = cmd_sn;
	ctx->arrivals = sess->arrivals;
	scsitgt__iscsi_conn_hold(conn);
	conn->tmfs++;
	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_INFO, "task management function %u (RTT 0x%08x)",
				func, rtt);
	scsitgt__stats_tmf(sess->core, &h[ISCSI_BHS_LUN]);
	/* Until it has acted nothing after it is delivered, not even from a drain that another
	 * path starts (an immediate ABORT TASK using up a later CmdSN): tmf_done(). */
	if (ctx->ordered)
		sess->sn_busy = true;
	ctx->fencing = tmf_fences(type);
	if (ctx->fencing) {
		conn->tmf_fencing++;
		tasks_fence(conn, ctx);
		if (tasks_unanswered(conn) && uv_timer_init(conn->loop, &ctx->timer) == 0) {
			uint32_t ms = atomic_load_explicit(&conn->ie->engine->tmf_timeout_ms,
							   memory_order_relaxed);

			if (ms == 0)
				ms = SCSITGT__TMF_TIMEOUT_MS_DEFAULT;
			ctx->timer_on = true;
			ctx->timer.data = ctx;
			uv_timer_start(&ctx->timer, tmf_wait_timeout, ms, 0);
			scsitgt__list_add_tail(&conn->tmf_wait, &ctx->wait_node);
			scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_DEBUG,
						"task management function %u waits for the "
						"Data-Out of the affected tasks",
						func);
			return 0;
		}
	}
	/* Behind another one still waiting: after it, in order. */
	if (!scsitgt__list_empty(&conn->tmf_wait)) {
		scsitgt__list_add_tail(&conn->tmf_wait, &ctx->wait_node);
		return 0;
	}
	tmf_act(ctx);
	return 0;
}
