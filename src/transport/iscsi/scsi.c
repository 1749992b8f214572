/* SPDX-License-Identifier: MIT */
/*
 * SCSI commands over iSCSI (RFC 7143 §11.3-§11.8): the SCSI Command PDU with immediate data,
 * unsolicited Data-Out up to FirstBurstLength, R2T-solicited Data-Out with several R2Ts
 * outstanding (MaxOutstandingR2T) and bursts of at most MaxBurstLength, DataSN and buffer
 * offset checks, CmdSN ordering, Data-In split by the initiator's MaxRecvDataSegmentLength
 * with the status collapsed into the last Data-In when no sense data is due, and residual
 * overflow/underflow reporting (§11.4.5.1).
 *
 * Data-Out lands straight in the command's buffer: the header callback points the receiver
 * at cmd->buf + BufferOffset, so the TCP data mover reads payload there without a copy.
 *
 * Write buffers and the session's write budget. A WRITE's buffer (up to 8 MiB) is not
 * allocated with its CDB (cmd->defer_buf) but when its data can first arrive: with immediate
 * data, with its first unsolicited Data-Out, or before its first R2T. Unsolicited data is at
 * most FirstBurstLength per command and is on the wire already: it is always taken. Solicited
 * data is what an initiator could make us reserve without ever sending it, so the first R2T of
 * a task waits while the session holds max_write_buffer_bytes of write buffers (unless it holds
 * none: a lone WRITE always proceeds). Waiting tasks get budget in arrival order and never
 * overtake each other, so a holder never waits for a waiter (task attributes only make a task
 * wait for earlier ones): no deadlock. A buffer returns to the budget when its task ends. Once
 * a task has its buffer, its R2Ts are pipelined (MaxOutstandingR2T) and Data-Out is still
 * received in place. The per-engine bound is this budget times the sessions the portals'
 * connection limits allow.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/conn.h"

static struct scsitgt__iscsi_task *task_of(struct scsitgt__cmd *cmd)
{
	return scsitgt__cmd_fabric_priv(cmd);
}

static uint32_t itt_bucket(uint32_t itt)
{
	/* Fibonacci hashing: initiators hand out ITTs in sequence; spread them anyway. */
	return (itt * 0x9e3779b1u) >> 24;
}

_Static_assert(SCSITGT__ISCSI_ITT_BUCKETS == 256, "itt_bucket() keeps the top 8 bits");

static void task_index_add(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_task *task)
{
	struct scsitgt__iscsi_task **head = &conn->itt_hash[itt_bucket(task->itt)];

	task->itt_next = *head;
	*head = task;
}

static void task_index_del(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_task *task)
{
	struct scsitgt__iscsi_task **link = &conn->itt_hash[itt_bucket(task->itt)];

	while (*link && *link != task)
		link = &(*link)->itt_next;
	if (*link)
		*link = task->itt_next;
	task->itt_next = NULL;
}

struct scsitgt__iscsi_task *scsitgt__iscsi_task_find(struct scsitgt__iscsi_conn *conn, uint32_t itt)
{
	struct scsitgt__iscsi_task *t;

	for (t = conn->itt_hash[itt_bucket(itt)]; t; t = t->itt_next) {
		if (t->itt == itt)
			return t;
	}
	return NULL;
}

/* Give back the task's CmdSN window slot; the next PDU carries the larger MaxCmdSN. */
static void task_release_slot(struct scsitgt__iscsi_task *task)
{
	struct scsitgt__iscsi_sess *sess = task->conn ? task->conn->sess : NULL;

	if (!task->counted)
		return;
	task->counted = false;
	if (sess) {
		sess->active--;
		scsitgt__iscsi_sess_update_window(sess);
	}
}

static void sess_budget_kick(struct scsitgt__iscsi_sess *sess);

/* Give the task's buffer bytes back to @sess's write budget; leave the budget queue. */
static void task_budget_put(struct scsitgt__iscsi_task *task, struct scsitgt__iscsi_sess *sess)
{
	if (!scsitgt__list_empty(&task->budget_node)) {
		scsitgt__list_remove(&task->budget_node);
		scsitgt__list_init(&task->budget_node);
	}
	if (task->charged && sess) {
		sess->write_bytes -= task->charged;
		task->charged = 0;
		sess_budget_kick(sess);
	}
	task->charged = 0;
}

/*
 * @task leaves its connection while the PDU carrying its data may still be arriving: an abort
 * from another nexus (LUN or target reset, CLEAR TASK SET, PREEMPT AND ABORT), a LUN removal
 * whose drain timed out, all between two socket reads. The receiver points into the task's
 * buffer and the PDU's end would update the task; both go away with it. The rest of the data
 * segment is read and dropped instead (its digest still checked), and the PDU ends without a
 * task (scsitgt__iscsi_scsi_cmd_pdu(), scsitgt__iscsi_data_out_pdu()).
 */
static void task_rx_forget(struct scsitgt__iscsi_task *task)
{
	struct scsitgt__iscsi_conn *conn = task->conn;

	if (conn == NULL || conn->rx_task != task)
		return;
	conn->rx_task = NULL;
	conn->rx_r2t = -1;
	conn->rx_data_err = 0;
	scsitgt__iscsi_rx_drop_data(&conn->rx);
}

static void task_destroy(struct scsitgt__iscsi_task *task)
{
	struct scsitgt__iscsi_conn *conn = task->conn;
	bool fenced = task->fenced;

	task_rx_forget(task);
	task_budget_put(task, task->conn ? task->conn->sess : NULL);
	task_release_slot(task);
	if (task->conn) {
		scsitgt__list_remove(&task->node);
		task_index_del(task->conn, task);
		task->conn->ntasks--;
		task->conn = NULL;
	}
	scsitgt__list_remove(&task->sn_node);
	scsitgt__cmd_destroy(task->cmd);
	/* A TMF may have waited for it (tmf.c). */
	if (fenced && conn)
		scsitgt__iscsi_tmf_kick(conn);
}

static uint32_t next_ttt(struct scsitgt__iscsi_conn *conn)
{
	uint32_t t = conn->next_ttt++;

	if (t == ISCSI_RESERVED_TAG)
		t = conn->next_ttt++;
	return t;
}

/* Solicit more Data-Out (RFC 7143 §11.8), keeping MaxOutstandingR2T requests in flight. */
static void task_send_r2ts(struct scsitgt__iscsi_task *task)
{
	struct scsitgt__iscsi_conn *conn = task->conn;
	uint32_t max_burst = conn->sess->params.max_burst;
	struct scsitgt__iscsi_tx *tx = NULL;

	while (task->r2t_outstanding < task->r2t_max && task->r2t_offset < task->solicit_end) {
		struct scsitgt__iscsi_r2t *r = NULL;
		uint8_t *bhs;

		for (unsigned int i = 0; i < task->r2t_max; i++) {
			if (!task->r2t[i].used) {
				r = &task->r2t[i];
				break;
			}
		}
		if (r == NULL)
			break;
		if (tx == NULL) {
			tx = scsitgt__iscsi_tx_create(task->r2t_max);
			if (tx == NULL)
				return; /* Retried when the next Data-Out arrives. */
		}
		r->used = true;
		r->ttt = next_ttt(conn);
		r->r2tsn = task->r2t_sn++;
		r->offset = task->r2t_offset;
		r->len = task->solicit_end - task->r2t_offset;
		if (r->len > max_burst)
			r->len = max_burst;
		r->received = 0;
		r->next_datasn = 0;
		task->r2t_offset += r->len;
		task->r2t_outstanding++;

		bhs = scsitgt__iscsi_tx_add(tx, NULL, 0);
		bhs[ISCSI_BHS_OPCODE] = ISCSI_OP_R2T;
		bhs[ISCSI_BHS_FLAGS] = ISCSI_FLAG_FINAL;
		memcpy(&bhs[ISCSI_BHS_LUN], task->lun, 8);
		put_be32(&bhs[ISCSI_BHS_ITT], task->itt);
		put_be32(&bhs[ISCSI_BHS_TTT], r->ttt);
		/* R2T carries the next StatSN without consuming it (RFC 7143 §11.8.3). */
		scsitgt__iscsi_conn_fill_sn(conn, bhs, false);
		put_be32(&bhs[ISCSI_R2T_R2TSN], r->r2tsn);
		put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], r->offset);
		put_be32(&bhs[ISCSI_R2T_DESIRED_LEN], r->len);
	}
	if (tx)
		scsitgt__iscsi_conn_xmit(conn, tx);
}

/* Allocate the task's write buffer, charged to its session's budget. */
static int task_buf_get(struct scsitgt__iscsi_task *task)
{
	struct scsitgt__cmd *cmd = task->cmd;

	if (cmd->buf)
		return 0;
	if (scsitgt__cmd_alloc_buf(cmd) < 0)
		return -ENOMEM;
	task->charged = cmd->xfer_len;
	task->conn->sess->write_bytes += task->charged;
	return 0;
}

static bool sess_budget_fits(const struct scsitgt__iscsi_sess *sess,
			     const struct scsitgt__iscsi_task *task)
{
	uint64_t max = sess->tparams.max_write_buffer_bytes;

	return max == 0 || sess->write_bytes == 0 || sess->write_bytes + task->cmd->xfer_len <= max;
}

/*
 * Before soliciting data: the task's buffer. Returns 0 when it has one, 1 when it waits in
 * the session's budget queue (sess_budget_kick() resumes it), -ENOMEM.
 */
static int task_want_buf(struct scsitgt__iscsi_task *task)
{
	struct scsitgt__iscsi_sess *sess = task->conn->sess;

	if (task->cmd->buf)
		return 0;
	if (!scsitgt__list_empty(&task->budget_node))
		return 1;
	if (!scsitgt__list_empty(&sess->budget_wait) || !sess_budget_fits(sess, task)) {
		scsitgt__list_add_tail(&sess->budget_wait, &task->budget_node);
		return 1;
	}
	return task_buf_get(task);
}

/*
 * Stop taking data for a task (broken sequence, no buffer); it fails in its turn with
 * @reason (the first one given, if several).
 */
static void task_stop_data(struct scsitgt__iscsi_task *task, enum scsitgt__sense_reason reason)
{
	if (!task->data_failed)
		task->data_fail_reason = (uint8_t)reason;
	task->data_failed = true;
	task->unsol_pending = false;
	task->solicit_end = task->received;
	task->r2t_offset = task->received;
	for (unsigned int i = 0; i < task->r2t_max; i++)
		task->r2t[i].used = false;
	task->r2t_outstanding = 0;
	/* Its sequences have ended: a TMF waiting for them may act (tmf.c). */
	if (task->fenced && task->conn)
		scsitgt__iscsi_tmf_kick(task->conn);
}

/* Decide, once all Data-Out is in and the CmdSN turn came, how the command runs. */
static void task_execute(struct scsitgt__iscsi_task *task)
{
	struct scsitgt__cmd *cmd = task->cmd;
	bool w = task->flags & ISCSI_CMD_FLAG_WRITE, r = task->flags & ISCSI_CMD_FLAG_READ;

	task->state = SCSITGT__TASK_EXEC;
	if (cmd->state != SCSITGT__CMD_DONE) {
		if (task->data_failed) {
			scsitgt__cmd_fail(cmd, (enum scsitgt__sense_reason)task->data_fail_reason);
		} else if (w && r) {
			/* Bidirectional commands: none of the CDBs we implement has two buffers. */
			scsitgt__cmd_fail(cmd, SCSITGT__SR_INVALID_FIELD_IN_CDB);
		} else if (cmd->dir == SCSITGT__DIR_OUT && !task->spdtl_set &&
			   (w ? task->edtl : 0) != cmd->xfer_len) {
			/* Fitted when the command arrived (scsitgt__iscsi_scsi_cmd_header()). */
			task->spdtl = scsitgt__cmd_fit_data_out(cmd, w ? task->edtl : 0);
			task->spdtl_set = true;
		}
	}
	scsitgt__cmd_execute(cmd);
}

/* Move a task on after a data or ordering event. */
static void task_progress(struct scsitgt__iscsi_task *task)
{
	if (task->state == SCSITGT__TASK_DATA_OUT) {
		/* A fenced task waits for its TMF (tmf.c); a failed one for the sequences that
		 * answer its R2Ts still in flight, which the initiator sends all the same. */
		if (task->unsol_pending || task->fenced ||
		    (task->data_failed && task->r2t_outstanding))
			return;
		if (!task->data_failed && task->received < task->solicit_end) {
			int rc = task_want_buf(task);

			if (rc > 0)
				return;
			if (rc == 0) {
				if (task->r2t_offset < task->received)
					task->r2t_offset = task->received;
				task_send_r2ts(task);
				return;
			}
			/* No memory for the data: BUSY, the initiator may retry (SAM-5 §5.3.1). */
			task_stop_data(task, SCSITGT__SR_BUSY);
		}
		task->state = SCSITGT__TASK_WAIT_SN;
	}
	if (task->state == SCSITGT__TASK_WAIT_SN && task->in_order)
		task_execute(task);
}

/* Buffer bytes came back: let waiting tasks solicit their data, oldest first. */
static void sess_budget_kick(struct scsitgt__iscsi_sess *sess)
{
	if (sess->budget_kicking)
		return;
	sess->budget_kicking = true;
	while (!scsitgt__list_empty(&sess->budget_wait) && !sess->closing) {
		struct scsitgt__iscsi_task *t = scsitgt__container_of(
			sess->budget_wait.next, struct scsitgt__iscsi_task, budget_node);

		if (t->conn == NULL || t->conn->state == SCSITGT__CONN_CLOSING ||
		    !sess_budget_fits(sess, t))
			break;
		scsitgt__list_remove(&t->budget_node);
		scsitgt__list_init(&t->budget_node);
		if (task_buf_get(t) < 0)
			task_stop_data(t, SCSITGT__SR_BUSY);
		task_progress(t);
	}
	sess->budget_kicking = false;
}

void scsitgt__iscsi_task_ordered(struct scsitgt__iscsi_task *task)
{
	task->in_order = true;
	task_progress(task);
}

void scsitgt__iscsi_task_unfence(struct scsitgt__iscsi_task *task)
{
	task->fenced = false;
	task_progress(task);
}

static void sess_hold(struct scsitgt__iscsi_sess *sess, struct scsitgt__iscsi_task *task)
{
	struct scsitgt__list *pos;

	for (pos = sess->pending.next; pos != &sess->pending; pos = pos->next) {
		struct scsitgt__iscsi_task *t =
			scsitgt__container_of(pos, struct scsitgt__iscsi_task, sn_node);

		if (scsitgt__sn_gt(t->cmd_sn, task->cmd_sn))
			break;
	}
	/* Insert before pos. */
	task->sn_node.next = pos;
	task->sn_node.prev = pos->prev;
	pos->prev->next = &task->sn_node;
	pos->prev = &task->sn_node;
	/* Its CmdSN is taken: a duplicate is ignored, and an abort leaves it used up. */
	scsitgt__iscsi_sn_take(sess, task->cmd_sn);
}

static void rx_verdict_reset(struct scsitgt__iscsi_conn *conn)
{
	conn->rx_task = NULL;
	conn->rx_r2t = -1;
	conn->rx_reject = 0;
	conn->rx_ignore = false;
	conn->rx_data_err = 0;
}

/*
 * Reject the PDU once it is read. A rejected SCSI Command leaves no task and takes no CmdSN:
 * RFC 7143 §7.3, "The CmdSN of the rejected command PDU (if it is a non-immediate command) MUST
 * NOT be considered received by the target (i.e., a command sequence gap must be assumed for
 * the CmdSN) ... the initiator MUST plug the CmdSN gap", by sending a command with that CmdSN
 * or by aborting the task (tmf.c, §11.5.1 b). The commands behind it wait for the plug.
 */
static int cmd_reject_at_header(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu,
				uint8_t reason)
{
	conn->rx_reject = reason;
	pdu->discard = true;
	return 0;
}

/* Extended CDB AHS (RFC 7143 §11.2.2.3): the CDB bytes beyond the first 16. */
static size_t cmd_cdb(const struct scsitgt__iscsi_pdu *pdu, uint8_t *cdb, size_t cap, bool *bad)
{
	size_t len = ISCSI_CMD_CDB_LEN, off = 0;

	memcpy(cdb, &pdu->bhs[ISCSI_CMD_CDB], ISCSI_CMD_CDB_LEN);
	*bad = false;
	while (off + 4 <= pdu->ahs_len) {
		uint16_t alen = get_be16(&pdu->ahs[off]);
		uint8_t type = pdu->ahs[off + 2];
		size_t total = (4 + (size_t)alen - 1 + 3) & ~(size_t)3; /* type-specific */

		if (alen == 0 || off + 3 + alen > pdu->ahs_len) {
			*bad = true;
			return 0;
		}
		if (type == ISCSI_AHS_EXTENDED_CDB) {
			size_t extra = (size_t)alen - 1;

			if (len + extra > cap) {
				/* Longer than anything the core could parse; keep it too long. */
				return cap + 1;
			}
			memcpy(cdb + len, &pdu->ahs[off + 4], extra);
			len += extra;
		}
		off += total < 4 ? 4 : total;
	}
	return len;
}

int scsitgt__iscsi_scsi_cmd_header(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	const uint8_t *h = pdu->bhs;
	uint8_t flags = h[ISCSI_BHS_FLAGS];
	bool w = flags & ISCSI_CMD_FLAG_WRITE, fin = flags & ISCSI_FLAG_FINAL;
	uint32_t itt = scsitgt__bhs_itt(h), edtl = get_be32(&h[ISCSI_CMD_EDTL]);
	uint32_t first_burst, unsol_max;
	struct scsitgt__iscsi_task *task;
	struct scsitgt__cmd *cmd;
	uint8_t cdb[SCSITGT__CDB_MAX + 1];
	size_t cdb_len;
	bool bad;
	unsigned int r2t_max;

	rx_verdict_reset(conn);
	if (sess == NULL || sess->discovery)
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_PROTOCOL_ERROR);
	if (itt == ISCSI_RESERVED_TAG)
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_PROTOCOL_ERROR);
	if (scsitgt__iscsi_sn_check(sess, get_be32(&h[ISCSI_BHS_CMDSN]),
				    scsitgt__bhs_immediate(h)) == SCSITGT__SN_IGNORE) {
		conn->rx_ignore = true;
		pdu->discard = true;
		if (!fin) {
			conn->ignored_unsol = true;
			conn->ignored_itt = itt;
		}
		return 0;
	}
	if (scsitgt__iscsi_task_find(conn, itt))
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_TASK_IN_PROGRESS);
	/* immediate commands take window slots too (scsitgt__iscsi_scsi_cmd_pdu), and one
	 * that finds the window full is refused (RFC 7143 §3.2.2.1, §11.17.1 reason 0x06):
	 * otherwise an initiator could run any number of commands at once. */
	if (scsitgt__bhs_immediate(h) && sess->active >= sess->queue_depth)
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_IMM_CMD_REJECT);
	/* RFC 7143 §4.2.5.2, §13.10, §13.11, §13.14: unsolicited data limits. */
	first_burst = sess->params.first_burst;
	unsol_max = edtl < first_burst ? edtl : first_burst;
	if (pdu->data_len && (!w || !sess->params.immediate_data || pdu->data_len > unsol_max))
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_PROTOCOL_ERROR);
	if (!fin && (!w || sess->params.initial_r2t || pdu->data_len >= unsol_max))
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_PROTOCOL_ERROR);
	cdb_len = cmd_cdb(pdu, cdb, SCSITGT__CDB_MAX, &bad);
	if (bad)
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_PROTOCOL_ERROR);

	r2t_max = sess->params.max_outstanding_r2t ? sess->params.max_outstanding_r2t : 1;
	if (r2t_max > SCSITGT__ISCSI_R2T_MAX)
		r2t_max = SCSITGT__ISCSI_R2T_MAX;
	if (scsitgt__cmd_create(&cmd, sess->core,
				sizeof(*task) + r2t_max * sizeof(struct scsitgt__iscsi_r2t)) < 0)
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_OUT_OF_RESOURCES);
	task = task_of(cmd); /* zeroed by scsitgt__cmd_create() */
	if (conn->rx_stamp)
		scsitgt__cmd_set_arrival(cmd, conn->rx_stamp);
	task->cmd = cmd;
	scsitgt__list_init(&task->budget_node);
	cmd->defer_buf = true; /* see the top of this file */
	if (conn->dm->cmd_init)
		conn->dm->cmd_init(conn, cmd); /* e.g. iSER's registered buffers */
	task->conn = conn;
	task->itt = itt;
	task->cmd_sn = get_be32(&h[ISCSI_BHS_CMDSN]);
	task->arrival = ++conn->sess->arrivals;
	task->edtl = edtl;
	task->flags = flags;
	task->immediate = scsitgt__bhs_immediate(h);
	task->r2t_max = r2t_max;
	task->state = SCSITGT__TASK_DATA_OUT;
	memcpy(task->lun, &h[ISCSI_BHS_LUN], 8);
	scsitgt__list_init(&task->sn_node);
	scsitgt__list_add_tail(&conn->tasks, &task->node);
	task_index_add(conn, task);
	conn->ntasks++;

	/* An over-long CDB (cdb_len > SCSITGT__CDB_MAX) is refused by setup. */
	scsitgt__cmd_setup(cmd, task->lun, cdb, cdb_len, flags & ISCSI_CMD_ATTR_MASK, itt);
	/*
	 * The initiator sends a different amount than the CDB describes (RFC 7143 §11.4.5.2):
	 * the core fits the command to it (whole blocks of a media write, or a refusal) before
	 * any data is solicited, and the residual is reported against the CDB's length. W=0
	 * with EDTL 0 matches a CDB that moves nothing (a 0-block COMPARE AND WRITE).
	 * Bidirectional commands are refused in task_execute().
	 */
	if (cmd->state != SCSITGT__CMD_DONE && cmd->dir == SCSITGT__DIR_OUT &&
	    !(flags & ISCSI_CMD_FLAG_READ) && (w ? edtl : 0) != cmd->xfer_len) {
		task->spdtl = scsitgt__cmd_fit_data_out(cmd, w ? edtl : 0);
		task->spdtl_set = true;
	}

	task->want = w ? edtl : 0;
	task->unsol_pending = !fin;
	task->unsol_end = fin ? pdu->data_len : unsol_max;
	/* Solicit the rest only for a command that will use it. */
	if (cmd->state == SCSITGT__CMD_DONE || cmd->dir != SCSITGT__DIR_OUT)
		task->solicit_end = task->unsol_end;
	else
		task->solicit_end = task->want < cmd->xfer_len ? task->want : cmd->xfer_len;
	if (task->solicit_end < task->unsol_end)
		task->solicit_end = task->unsol_end;
	task->r2t_offset = task->unsol_end;
	if (pdu->data_len && cmd->state != SCSITGT__CMD_DONE && cmd->dir == SCSITGT__DIR_OUT &&
	    task_buf_get(task) < 0) {
		/* No memory for the data: drain it, fail the command in its turn (BUSY). */
		task->data_failed = true;
		task->data_fail_reason = SCSITGT__SR_BUSY;
		task->solicit_end = task->unsol_end;
	}
	if (pdu->data_len && cmd->buf && cmd->dir == SCSITGT__DIR_OUT) {
		pdu->dest = cmd->buf;
		pdu->dest_len = pdu->data_len < cmd->xfer_len ? pdu->data_len : cmd->xfer_len;
	} else {
		pdu->discard = true;
	}
	conn->rx_task = task;
	return 0;
}

int scsitgt__iscsi_scsi_cmd_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	struct scsitgt__iscsi_task *task = conn->rx_task;
	enum scsitgt__sn_verdict v;

	if (conn->rx_ignore) {
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_DEBUG,
					"command CmdSN %u outside [%u, %u] or taken: ignored",
					get_be32(&pdu->bhs[ISCSI_BHS_CMDSN]), sess->exp_cmd_sn,
					sess->max_cmd_sn);
		rx_verdict_reset(conn);
		return 0;
	}
	if (conn->rx_reject) {
		scsitgt__iscsi_conn_reject(conn, pdu->bhs, conn->rx_reject);
		rx_verdict_reset(conn);
		return 0;
	}
	rx_verdict_reset(conn);
	if (task == NULL) {
		/*
		 * Its task was aborted while the immediate data arrived (task_rx_forget()). The
		 * command was received all the same, so its CmdSN is used up (RFC 7143
		 * §4.2.2.1): ExpCmdSN moves past it now or, ahead of ExpCmdSN, once the gap
		 * before it fills; or the commands after it would wait for it for ever.
		 */
		if (!scsitgt__bhs_immediate(pdu->bhs)) {
			scsitgt__iscsi_sn_take(sess, get_be32(&pdu->bhs[ISCSI_BHS_CMDSN]));
			scsitgt__iscsi_sn_drain(sess);
		}
		return 0;
	}
	task->received = pdu->data_len;
	v = scsitgt__iscsi_sn_check(sess, task->cmd_sn, task->immediate);
	/* immediate commands hold a slot as well, so MaxCmdSN shrinks while they run. */
	task->counted = true;
	sess->active++;
	if (v == SCSITGT__SN_NOW) {
		/* It runs before the commands held behind it (scsitgt__iscsi_sn_drain()). */
		if (!task->immediate)
			scsitgt__iscsi_sn_step(sess);
		else
			scsitgt__iscsi_sess_update_window(sess);
		task->in_order = true;
		task_progress(task);
		scsitgt__iscsi_sn_drain(sess);
	} else {
		sess_hold(sess, task);
		task_progress(task);
	}
	return 0;
}

/* A Data-Out broke its sequence: stop taking data; the command fails in its turn. */
static void task_data_error(struct scsitgt__iscsi_task *task, enum scsitgt__sense_reason reason)
{
	task_stop_data(task, reason);
	task_progress(task);
}

/*
 * How a Data-Out that breaks its sequence fails its command at ErrorRecoveryLevel 0 (RFC 7143
 * §11.4.7.2): a DataSN or BufferOffset out of order means a PDU went missing, which RFC 7143
 * §7.9 treats as an implied digest error, "protocol service CRC error" (47h/05h, §7.8.1);
 * unsolicited data the command may not have is "unexpected unsolicited data" (0Ch/0Ch);
 * more data than the R2T or the first burst allows is "incorrect amount of data" (0Ch/0Dh).
 */
static int data_out_broken(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu,
			   enum scsitgt__sense_reason reason)
{
	conn->rx_data_err = (uint8_t)reason;
	return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_PROTOCOL_ERROR);
}

int scsitgt__iscsi_data_out_header(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	const uint8_t *h = pdu->bhs;
	uint32_t ttt = get_be32(&h[ISCSI_BHS_TTT]);
	uint32_t datasn = get_be32(&h[ISCSI_BHS_DATASN]);
	uint32_t offset = get_be32(&h[ISCSI_BHS_BUFFER_OFFSET]);
	uint32_t len = pdu->data_len;
	struct scsitgt__iscsi_task *task;
	struct scsitgt__cmd *cmd;

	rx_verdict_reset(conn);
	pdu->discard = true;
	if (conn->sess == NULL || conn->sess->discovery)
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_PROTOCOL_ERROR);
	task = scsitgt__iscsi_task_find(conn, scsitgt__bhs_itt(h));
	if (task == NULL && conn->ignored_unsol && ttt == ISCSI_RESERVED_TAG &&
	    scsitgt__bhs_itt(h) == conn->ignored_itt) {
		/* The unsolicited data of a command ignored for its CmdSN (a duplicate, or one
		 * an ABORT TASK used up, RFC 7143 §11.5.1 b): ignored with it, up to F=1. */
		if (h[ISCSI_BHS_FLAGS] & ISCSI_FLAG_FINAL)
			conn->ignored_unsol = false;
		conn->rx_ignore = true;
		return 0;
	}
	/* RFC 7143 §11.17.1: Data-Out for a task we do not know is an invalid PDU field. */
	if (task == NULL || task->state != SCSITGT__TASK_DATA_OUT)
		return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_INVALID_PDU_FIELD);
	conn->rx_task = task;
	if (ttt == ISCSI_RESERVED_TAG) {
		/* Unsolicited data (RFC 7143 §11.7.5): in order, within the first burst. */
		if (!task->unsol_pending)
			return data_out_broken(conn, pdu, SCSITGT__SR_UNEXPECTED_UNSOLICITED_DATA);
		if (datasn != task->unsol_datasn || offset != task->received)
			return data_out_broken(conn, pdu, SCSITGT__SR_PROTOCOL_CRC_ERROR);
		if (len > task->unsol_end - offset)
			return data_out_broken(conn, pdu, SCSITGT__SR_INCORRECT_DATA_AMOUNT);
		conn->rx_r2t = -1;
	} else {
		struct scsitgt__iscsi_r2t *r = NULL;

		for (unsigned int i = 0; i < task->r2t_max; i++) {
			if (task->r2t[i].used && task->r2t[i].ttt == ttt) {
				r = &task->r2t[i];
				conn->rx_r2t = (int)i;
				break;
			}
		}
		if (r == NULL)
			return cmd_reject_at_header(conn, pdu, ISCSI_REJECT_INVALID_PDU_FIELD);
		/* DataPDUInOrder=Yes: DataSN counts from 0 per R2T, offsets contiguous. */
		if (datasn != r->next_datasn || offset != r->offset + r->received)
			return data_out_broken(conn, pdu, SCSITGT__SR_PROTOCOL_CRC_ERROR);
		if (len > r->len - r->received)
			return data_out_broken(conn, pdu, SCSITGT__SR_INCORRECT_DATA_AMOUNT);
	}
	cmd = task->cmd;
	if (len && cmd->state != SCSITGT__CMD_DONE && cmd->dir == SCSITGT__DIR_OUT &&
	    !task->data_failed && task_buf_get(task) < 0) {
		/* Unsolicited data and no memory for it: drain it, fail the command (BUSY). */
		task->data_failed = true;
		task->data_fail_reason = SCSITGT__SR_BUSY;
		task->solicit_end = task->unsol_end;
	}
	if (len && cmd->buf && cmd->dir == SCSITGT__DIR_OUT && offset < cmd->xfer_len &&
	    !task->data_failed) {
		pdu->discard = false;
		pdu->dest = cmd->buf + offset;
		pdu->dest_len = cmd->xfer_len - offset < len ? cmd->xfer_len - offset : len;
	}
	return 0;
}

int scsitgt__iscsi_data_out_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_task *task = conn->rx_task;
	bool fin = pdu->bhs[ISCSI_BHS_FLAGS] & ISCSI_FLAG_FINAL;
	int ri = conn->rx_r2t;

	if (conn->rx_ignore) {
		rx_verdict_reset(conn);
		return 0;
	}
	if (conn->rx_reject) {
		uint8_t data_err = conn->rx_data_err;

		scsitgt__iscsi_conn_reject(conn, pdu->bhs, conn->rx_reject);
		rx_verdict_reset(conn);
		if (data_err && task)
			task_data_error(task, (enum scsitgt__sense_reason)data_err);
		return 0;
	}
	rx_verdict_reset(conn);
	if (task == NULL)
		return 0;
	task->received += pdu->data_len;
	if (ri < 0) {
		task->unsol_datasn++;
		if (task->received >= task->unsol_end) {
			task->unsol_pending = false;
		} else if (fin) {
			/*
			 * F=1 ends the unsolicited sequence (RFC 7143 §11.7.1), which answers an
			 * implied R2T for min(FirstBurstLength, EDTL) less the immediate data
			 * (§13.10, §4.2.5.2). Ending it short breaks the burst as sending too much
			 * does, and nothing recovers it at ErrorRecoveryLevel 0: the command fails,
			 * INCORRECT AMOUNT OF DATA (0Ch/0Dh), instead of waiting for ever.
			 */
			task_stop_data(task, SCSITGT__SR_INCORRECT_DATA_AMOUNT);
		}
	} else {
		struct scsitgt__iscsi_r2t *r = &task->r2t[ri];

		r->received += pdu->data_len;
		r->next_datasn++;
		if (r->received == r->len || fin) {
			r->used = false;
			task->r2t_outstanding--;
		}
		if (r->received < r->len && fin) {
			/*
			 * F=1 ends the sequence that answers this R2T (RFC 7143 §11.7.1) short of
			 * its Desired Data Transfer Length (§11.8.4): the rest never comes, and
			 * ErrorRecoveryLevel 0 has no recovery R2T. As for a short unsolicited
			 * burst: the command fails, INCORRECT AMOUNT OF DATA, instead of waiting
			 * for ever; no further R2T, and the sequences of its other R2Ts in flight
			 * are still taken (then dropped), not rejected. An initiator ends them so
			 * after a task set abort (§11.5.1): a fenced task (tmf.c) is aborted.
			 */
			if (!task->data_failed)
				task->data_fail_reason = SCSITGT__SR_INCORRECT_DATA_AMOUNT;
			task->data_failed = true;
			task->solicit_end = task->r2t_offset;
		}
	}
	if (task->fenced) {
		/* It waits for its TMF (tmf.c), which may act once its every sequence ended. */
		if (!task->unsol_pending && task->r2t_outstanding == 0)
			scsitgt__iscsi_tmf_kick(conn);
		return 0;
	}
	task_progress(task); /* may end the task */
	return 0;
}

/* Residual of a finished command (RFC 7143 §11.4.5.1). */
static void task_residual(const struct scsitgt__iscsi_task *task, uint8_t *flags, uint32_t *count)
{
	const struct scsitgt__cmd *cmd = task->cmd;
	uint32_t spdtl;

	if (task->spdtl_set)
		spdtl = task->spdtl;
	else if (cmd->dir == SCSITGT__DIR_OUT)
		spdtl = cmd->xfer_len;
	else if (cmd->dir == SCSITGT__DIR_IN)
		spdtl = cmd->data_len;
	else
		spdtl = 0;
	*flags = 0;
	*count = 0;
	if (spdtl > task->edtl) {
		*flags = ISCSI_RSP_FLAG_OVERFLOW;
		*count = spdtl - task->edtl;
	} else if (spdtl < task->edtl) {
		*flags = ISCSI_RSP_FLAG_UNDERFLOW;
		*count = task->edtl - spdtl;
	}
}

struct scsitgt__iscsi_tx *scsitgt__iscsi_build_response(struct scsitgt__iscsi_conn *conn,
							struct scsitgt__iscsi_task *task)
{
	struct scsitgt__cmd *cmd = task->cmd;
	struct scsitgt__iscsi_sess *sess = conn->sess;
	uint32_t seg = conn->max_xmit_dsl ? conn->max_xmit_dsl : 8192;
	uint32_t burst = sess->params.max_burst ? sess->params.max_burst : seg;
	uint32_t send = 0, off = 0, datasn = 0, resid;
	const uint8_t *data = scsitgt__cmd_data_in(cmd);
	uint8_t rflags;
	bool collapse;
	unsigned int npdus;
	struct scsitgt__iscsi_tx *tx;
	uint8_t *bhs;

	task_residual(task, &rflags, &resid);
	if (cmd->dir == SCSITGT__DIR_IN && (task->flags & ISCSI_CMD_FLAG_READ)) {
		send = cmd->data_len < task->edtl ? cmd->data_len : task->edtl;
	}
	/* RFC 7143 §11.7.2: status may ride on the last Data-In only without sense data. */
	collapse = send > 0 && cmd->sense_len == 0;
	npdus = send ? (send + seg - 1) / seg + send / burst + 1 : 0;
	tx = scsitgt__iscsi_conn_tx_get(conn, npdus + 1);
	if (tx == NULL)
		return NULL;
	while (off < send) {
		uint32_t burst_end = (off / burst + 1) * burst;
		uint32_t n = send - off < seg ? send - off : seg;
		bool last, burst_last;

		if (off + n > burst_end)
			n = burst_end - off;
		last = off + n == send;
		burst_last = last || off + n == burst_end;
		bhs = scsitgt__iscsi_tx_add(tx, data + off, n);
		bhs[ISCSI_BHS_OPCODE] = ISCSI_OP_DATA_IN;
		/* F ends each Data-In sequence of at most MaxBurstLength (RFC 7143 §13.13). */
		bhs[ISCSI_BHS_FLAGS] = burst_last ? ISCSI_FLAG_FINAL : 0;
		put_be32(&bhs[ISCSI_BHS_ITT], task->itt);
		put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
		put_be32(&bhs[ISCSI_BHS_DATASN], datasn++);
		put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], off);
		if (last && collapse) {
			bhs[ISCSI_BHS_FLAGS] |= ISCSI_DATAIN_FLAG_STATUS | rflags;
			bhs[ISCSI_DATAIN_STATUS] = cmd->status;
			put_be32(&bhs[ISCSI_BHS_RESIDUAL], resid);
			scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
		} else {
			put_be32(&bhs[ISCSI_BHS_EXPCMDSN], sess->exp_cmd_sn);
			put_be32(&bhs[ISCSI_BHS_MAXCMDSN], sess->max_cmd_sn);
		}
		off += n;
	}
	if (collapse)
		return tx;

	/* RFC 7143 §11.4: SCSI Response, with SenseLength + sense data when present. */
	if (cmd->sense_len) {
		uint8_t *d = malloc(2u + cmd->sense_len);

		if (d == NULL) {
			scsitgt__iscsi_tx_destroy(tx);
			return NULL;
		}
		put_be16(d, cmd->sense_len);
		memcpy(d + 2, cmd->sense, cmd->sense_len);
		tx->owned = d;
		bhs = scsitgt__iscsi_tx_add(tx, d, 2u + cmd->sense_len);
	} else {
		bhs = scsitgt__iscsi_tx_add(tx, NULL, 0);
	}
	bhs[ISCSI_BHS_OPCODE] = ISCSI_OP_SCSI_RSP;
	bhs[ISCSI_BHS_FLAGS] = ISCSI_FLAG_FINAL | rflags;
	bhs[ISCSI_RSP_RESPONSE] = ISCSI_RSP_COMPLETED;
	bhs[ISCSI_RSP_STATUS] = cmd->status;
	put_be32(&bhs[ISCSI_BHS_ITT], task->itt);
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	/* ExpDataSN: Data-In PDUs (reads) or R2Ts (writes) sent for this command. */
	put_be32(&bhs[ISCSI_BHS_DATASN], send ? datasn : task->r2t_sn);
	put_be32(&bhs[ISCSI_BHS_RESIDUAL], resid);
	return tx;
}

static void task_tx_done(struct scsitgt__iscsi_tx *tx, int status)
{
	struct scsitgt__iscsi_task *task = tx->arg;

	(void)status;
	task_destroy(task);
}

void scsitgt__iscsi_cmd_done(struct scsitgt__cmd *cmd)
{
	struct scsitgt__iscsi_task *task = task_of(cmd);
	struct scsitgt__iscsi_conn *conn = task->conn;
	struct scsitgt__iscsi_tx *tx;

	if (conn == NULL || conn->state == SCSITGT__CONN_CLOSING ||
	    task->state == SCSITGT__TASK_ABORTED) {
		task_destroy(task);
		return;
	}
	task->state = SCSITGT__TASK_SENDING;
	task_release_slot(task);
	tx = scsitgt__iscsi_build_response(conn, task);
	if (tx == NULL) {
		task_destroy(task);
		scsitgt__iscsi_conn_close(conn, "out of memory for a response");
		return;
	}
	tx->done = task_tx_done;
	tx->arg = task;
	scsitgt__iscsi_conn_xmit(conn, tx);
}

void scsitgt__iscsi_cmd_aborted(struct scsitgt__cmd *cmd)
{
	struct scsitgt__iscsi_task *task = task_of(cmd);

	task->state = SCSITGT__TASK_ABORTED;
	if (task->conn && task->conn->dm->task_gone)
		task->conn->dm->task_gone(task->conn, task->itt); /* datamover.h */
	task_destroy(task);
}

void scsitgt__iscsi_tasks_release(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &conn->tasks)
	{
		struct scsitgt__iscsi_task *t =
			scsitgt__container_of(pos, struct scsitgt__iscsi_task, node);

		switch (t->state) {
		case SCSITGT__TASK_SENDING:
			/* Its batch is with the data mover, which finishes it while closing. */
			break;
		case SCSITGT__TASK_EXEC:
			/* In a backend: cmd_done() frees it, or the core detaches it when the
			 * session goes. Either way it no longer belongs to this connection. */
			task_rx_forget(t);
			task_budget_put(t, conn->sess);
			task_release_slot(t);
			t->state = SCSITGT__TASK_ABORTED;
			scsitgt__list_remove(&t->node);
			task_index_del(conn, t);
			scsitgt__list_remove(&t->sn_node);
			conn->ntasks--;
			t->conn = NULL;
			break;
		default:
			task_destroy(t);
			break;
		}
	}
}
