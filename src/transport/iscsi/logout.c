/* SPDX-License-Identifier: MIT */
/* Logout (RFC 7143 §11.14, §11.15) at ErrorRecoveryLevel 0. */
#include <errno.h>
#include <string.h>

#include "transport/iscsi/conn.h"

int scsitgt__iscsi_logout_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	const uint8_t *h = pdu->bhs;
	uint8_t reason = h[ISCSI_BHS_FLAGS] & ISCSI_LOGOUT_REASON_MASK;
	uint16_t cid = get_be16(&h[ISCSI_LOGOUT_CID]);
	uint8_t response = ISCSI_LOGOUT_RSP_SUCCESS;
	uint8_t bhs[ISCSI_BHS_LEN];
	enum scsitgt__sn_verdict v;
	bool close_after = true;

	v = scsitgt__iscsi_sn_check(sess, get_be32(&h[ISCSI_BHS_CMDSN]), scsitgt__bhs_immediate(h));
	if (v == SCSITGT__SN_IGNORE)
		return 0;
	if (v == SCSITGT__SN_LATER) {
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	if (!scsitgt__bhs_immediate(h))
		scsitgt__iscsi_sn_advance(sess);

	switch (reason) {
	case ISCSI_LOGOUT_CLOSE_SESSION:
		break;
	case ISCSI_LOGOUT_CLOSE_CONNECTION:
		/* One connection per session: only this connection's CID exists. */
		if (cid != conn->cid) {
			response = ISCSI_LOGOUT_RSP_CID_NOT_FOUND;
			close_after = false;
		}
		break;
	case ISCSI_LOGOUT_REMOVE_FOR_RECOVERY:
		/* Connection recovery needs ErrorRecoveryLevel 2 (RFC 7143 §11.15.1). */
		response = ISCSI_LOGOUT_RSP_RECOVERY_UNSUPPORTED;
		close_after = false;
		break;
	default:
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	scsitgt__bhs_init(bhs, ISCSI_OP_LOGOUT_RSP, ISCSI_FLAG_FINAL);
	bhs[ISCSI_LOGOUT_RSP_RESPONSE] = response;
	put_be32(&bhs[ISCSI_BHS_ITT], scsitgt__bhs_itt(h));
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	if (response == ISCSI_LOGOUT_RSP_RECOVERY_UNSUPPORTED) {
		put_be16(&bhs[ISCSI_LOGOUT_RSP_TIME2WAIT], (uint16_t)sess->params.default_time2wait);
		put_be16(&bhs[ISCSI_LOGOUT_RSP_TIME2RETAIN], 0);
	}
	if (close_after) {
		scsitgt__iscsi_conn_log(conn,
					sess->discovery ? SCSITGT_LOG_DEBUG : SCSITGT_LOG_NOTICE,
					"logout (%s) of %s", reason ? "connection" : "session",
					sess->initiator_name);
		/* Nothing after the Logout Request is processed (RFC 7143 §11.14). */
		conn->state = SCSITGT__CONN_LOGGED_OUT;
		conn->rx.stop = true;
		uv_timer_stop(&conn->timer);
	}
	return scsitgt__iscsi_conn_send_simple(conn, bhs, NULL, 0, close_after);
}
