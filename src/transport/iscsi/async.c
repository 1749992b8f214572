/* SPDX-License-Identifier: MIT */
/*
 * Async Messages for unit attentions (RFC 7143 §11.9, AsyncEvent 0 "SCSI asynchronous event":
 * the LUN field names the logical unit, the data segment carries SenseLength and the sense
 * data, as in a SCSI Response, §11.4.7.2). The target-requests-logout event (AsyncEvent 1) is
 * sent by conn.c when a portal shuts down.
 *
 * Policy (docs/iscsi.md, "Async messages"). No iSCSI key lets an initiator say whether it
 * accepts SCSI events, and the SCSI mechanism RFC 7143 refers to (asynchronous event
 * reporting, enabled through the Control mode page) is obsolete since SAM-4/SPC-4. What
 * initiators do with them: the Linux open-iscsi daemon rescans the session on REPORTED LUNS
 * DATA HAS CHANGED and ignores the rest; the Linux kernel only forwards the PDU to it (and
 * bnx2i offload refuses SCSI events); libiscsi logs and drops them. So the message is a hint
 * and the unit attention stays the report: it remains pending and is returned on the next
 * command as usual. The rule of the old asynchronous event reporting ("report a unit
 * attention by an asynchronous event or by CHECK CONDITION, not both", SAM-2 §5.9.6) belongs
 * to that obsolete mechanism; reporting both keeps initiators that ignore the message correct.
 * Which conditions are sent is a per-target parameter (scsitgt_iscsi_params::async_events).
 *
 * The core reports each condition per LUN: one LUN added makes REPORTED LUNS DATA HAS
 * CHANGED on every LUN of the nexus. The connection queues them and sends once per loop turn,
 * with one message for each condition per LUN, and only one REPORTED LUNS DATA HAS CHANGED
 * (it concerns the target, not the LUN it is queued on).
 */
#include <errno.h>
#include <string.h>

#include "core/sense.h"
#include "core/shard.h"
#include "transport/iscsi/conn.h"

_Static_assert(ISCSI_ASYNC_PARAM3 + 2 <= ISCSI_BHS_LEN, "Async Message BHS");

size_t scsitgt__iscsi_async_scsi_event(uint8_t *bhs, uint8_t *data, size_t cap, uint64_t lun_id,
				       uint8_t key, uint8_t asc, uint8_t ascq)
{
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	size_t len;

	/* Fixed format: every initiator decodes it (open-iscsi normalises both formats). */
	len = scsitgt__sense_encode(sense, false, key, asc, ascq, NULL);
	if (cap < len + 2)
		return 0;
	/* RFC 7143 §11.9: F bit set, ITT 0xffffffff, LUN valid for AsyncEvent 0. */
	scsitgt__bhs_init(bhs, ISCSI_OP_ASYNC_MSG, ISCSI_FLAG_FINAL);
	scsitgt__lun_encode(lun_id, &bhs[ISCSI_BHS_LUN]);
	put_be32(&bhs[ISCSI_BHS_ITT], ISCSI_RESERVED_TAG);
	bhs[ISCSI_ASYNC_EVENT] = ISCSI_ASYNC_SCSI_EVENT;
	/* §11.4.7.2: SenseLength, then the sense data. */
	put_be16(data, (uint16_t)len);
	memcpy(&data[2], sense, len);
	return len + 2;
}

static uint32_t async_class(enum scsitgt__sense_reason reason)
{
	switch (reason) {
	case SCSITGT__SR_UA_REPORTED_LUNS_CHANGED:
		return SCSITGT_ISCSI_ASYNC_LUNS_CHANGED;
	case SCSITGT__SR_UA_CAPACITY_CHANGED:
		return SCSITGT_ISCSI_ASYNC_CAPACITY_CHANGED;
	default:
		return SCSITGT_ISCSI_ASYNC_OTHER_UA;
	}
}

static void async_send(struct scsitgt__iscsi_conn *conn, const struct scsitgt__iscsi_async_ev *ev)
{
	const struct scsitgt__sense_info *si = scsitgt__sense_lookup(ev->reason);
	uint8_t bhs[ISCSI_BHS_LEN], data[SCSITGT_SENSE_BUF_SIZE + 2];
	size_t len;

	len = scsitgt__iscsi_async_scsi_event(bhs, data, sizeof(data), ev->lun_id, si->key, si->asc,
					      si->ascq);
	if (len == 0 || len > conn->max_xmit_dsl)
		return;
	/* It carries a StatSN like any status (open-iscsi and libiscsi advance ExpStatSN). */
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_DEBUG,
				"async message: LUN %llu, sense %x/%02x/%02x",
				(unsigned long long)ev->lun_id, si->key, si->asc, si->ascq);
	scsitgt__iscsi_conn_send_simple(conn, bhs, data, (uint32_t)len, false);
}

static void async_flush(struct scsitgt__deferred *d)
{
	struct scsitgt__iscsi_conn *conn =
		scsitgt__container_of(d, struct scsitgt__iscsi_conn, async_flush);

	conn->async_flush_pending = false;
	/* Not while the initiator is asked to log out, nor after the Logout Response. */
	if (conn->state == SCSITGT__CONN_FFP && !conn->async_logout_sent)
		for (unsigned int i = 0; i < conn->async_n; i++)
			async_send(conn, &conn->async_q[i]);
	conn->async_n = 0;
	scsitgt__iscsi_conn_put(conn);
}

/* The core's hook: on the session's loop (xloop.c). */
void scsitgt__iscsi_async_ua(struct scsitgt__session *core, uint64_t lun_id,
			     enum scsitgt__sense_reason reason)
{
	scsitgt__iscsi_xloop_sess(core->fabric_ctx, SCSITGT__XOP_SESS_UA, NULL, lun_id,
				  (uint16_t)reason);
}

void scsitgt__iscsi_async_ua_here(struct scsitgt__iscsi_sess *sess, uint64_t lun_id,
				  enum scsitgt__sense_reason reason)
{
	struct scsitgt__iscsi_conn *conn;
	const struct scsitgt_iscsi_params *p = &sess->tparams;

	if (sess->closing || scsitgt__list_empty(&sess->conns))
		return;
	/* ErrorRecoveryLevel 0, one connection per session: the only one reports it. */
	conn = scsitgt__container_of(sess->conns.next, struct scsitgt__iscsi_conn, sess_node);
	if (conn->state != SCSITGT__CONN_FFP || !(p->async_events & async_class(reason)))
		return;
	for (unsigned int i = 0; i < conn->async_n; i++) {
		const struct scsitgt__iscsi_async_ev *e = &conn->async_q[i];

		if (e->reason == reason &&
		    (e->lun_id == lun_id || reason == SCSITGT__SR_UA_REPORTED_LUNS_CHANGED))
			return;
	}
	if (conn->async_n == SCSITGT__ISCSI_ASYNC_QUEUE)
		return;
	conn->async_q[conn->async_n].lun_id = lun_id;
	conn->async_q[conn->async_n].reason = (uint16_t)reason;
	conn->async_n++;
	if (conn->async_flush_pending)
		return;
	/* Held until the flush: the connection may close meanwhile. */
	conn->async_flush_pending = true;
	scsitgt__iscsi_conn_hold(conn);
	conn->async_flush.fn = async_flush;
	scsitgt__shard_defer(scsitgt__iscsi_loop_shard(conn->ie, conn->worker), &conn->async_flush);
}
