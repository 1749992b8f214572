/* SPDX-License-Identifier: MIT */
/*
 * Logout (RFC 7143 §11.14, §11.15) at ErrorRecoveryLevel 0. A logout that ends the session
 * first ends its tasks: the Logout Response says that the cleanup is complete (RFC 7143
 * §3.5.3.3), so it waits for the commands still inside backends, at most the target's
 * logout_timeout_ms, so that a backend that never completes cannot hold it (issue 5). When that
 * bound passes first, the answer is Response 3, "cleanup failed" (§11.15.1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/conn.h"

struct logout_wait {
	struct scsitgt__iscsi_conn *conn;
	uint8_t bhs[ISCSI_BHS_LEN];
};

static int logout_respond(struct scsitgt__iscsi_conn *conn, uint8_t *bhs, bool close_after)
{
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	return scsitgt__iscsi_conn_send_simple(conn, bhs, NULL, 0, close_after);
}

static void logout_quiesced(void *arg, enum scsitgt__tmf_response r)
{
	struct logout_wait *w = arg;
	struct scsitgt__iscsi_conn *conn = w->conn;

	/*
	 * Commands still inside a backend after logout_timeout_ms may still act (a WRITE may
	 * still land): the cleanup failed, RFC 7143 §11.15.1 Response 3, not "closed
	 * successfully". The connection closes all the same. The quiescence waits for every
	 * command of the nexus in a backend, those an earlier TMF aborted too (cmd->tmf_wait),
	 * and answers COMPLETE only when none is left: not when it could not wait for one.
	 */
	/* The session's end waits for nothing more: its fence covers what is left. */
	if (conn->sess)
		conn->sess->quiesced = true;
	if (r != SCSITGT__TMF_COMPLETE) {
		w->bhs[ISCSI_LOGOUT_RSP_RESPONSE] = ISCSI_LOGOUT_RSP_CLEANUP_FAILED;
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_WARNING,
					"logout: commands still in a backend after %u ms: "
					"answered \"cleanup failed\"",
					conn->sess ? conn->sess->tparams.logout_timeout_ms : 0);
	}
	/* Unless the initiator dropped the connection meanwhile. */
	if (conn->state == SCSITGT__CONN_LOGGED_OUT)
		logout_respond(conn, w->bhs, true);
	free(w);
	scsitgt__iscsi_conn_put(conn);
}

/* A Logout answered without ending the session (recovery refused, or an unknown CID): the
 * commands held behind its CmdSN run now, after its answer, or nothing could fill their gap
 * (review30b F1). */
static void logout_refused(struct scsitgt__iscsi_sess *sess, const uint8_t *h)
{
	if (!scsitgt__bhs_immediate(h))
		scsitgt__iscsi_sn_drain(sess);
}

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
	int rc;

	/* Ignored, or held for its turn ahead of ExpCmdSN (conn.c), which brings it back. */
	v = scsitgt__iscsi_sn_check(sess, get_be32(&h[ISCSI_BHS_CMDSN]), scsitgt__bhs_immediate(h));
	if (v != SCSITGT__SN_NOW)
		return 0;
	/*
	 * A reason RFC 7143 §11.14.1 does not define: rejected, and its CmdSN is not received
	 * (§7.3: "The CmdSN of the rejected command PDU (if it is a non-immediate command) MUST
	 * NOT be considered received by the target"): ExpCmdSN stays, the initiator plugs the gap.
	 */
	if (reason > ISCSI_LOGOUT_REMOVE_FOR_RECOVERY) {
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	/* Commands held behind it come after it: not delivered (nothing after a Logout that ends
	 * the session runs; logout_refused() when it does not). */
	if (!scsitgt__bhs_immediate(h))
		scsitgt__iscsi_sn_step(sess);

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
	}
	scsitgt__bhs_init(bhs, ISCSI_OP_LOGOUT_RSP, ISCSI_FLAG_FINAL);
	bhs[ISCSI_LOGOUT_RSP_RESPONSE] = response;
	put_be32(&bhs[ISCSI_BHS_ITT], scsitgt__bhs_itt(h));
	if (response == ISCSI_LOGOUT_RSP_RECOVERY_UNSUPPORTED) {
		put_be16(&bhs[ISCSI_LOGOUT_RSP_TIME2WAIT],
			 (uint16_t)sess->params.default_time2wait);
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
		if (sess->core) {
			struct logout_wait *w = malloc(sizeof(*w));

			/* Without memory, answer now: the tasks end with the connection. */
			if (w) {
				w->conn = conn;
				memcpy(w->bhs, bhs, ISCSI_BHS_LEN);
				scsitgt__iscsi_conn_hold(conn);
				scsitgt__iscsi_sess_quiesce(sess, logout_quiesced, w);
				return 0;
			}
		}
	}
	rc = logout_respond(conn, bhs, close_after);
	if (!close_after && rc == 0)
		logout_refused(sess, h);
	return rc;
}
