/* SPDX-License-Identifier: MIT */
/*
 * Text Requests in full feature phase (RFC 7143 §11.10, §11.11): key negotiation through
 * text/keys.h, multi-PDU requests and responses (C bit, Target Transfer Tag), and SendTargets
 * (RFC 7143 Appendix C) listing every portal of every target the initiator may see.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "transport/iscsi/conn.h"

void scsitgt__iscsi_text_reset(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_text_xchg *x = &conn->text;

	if (!x->active)
		return;
	scsitgt__iscsi_text_acc_destroy(&x->acc);
	scsitgt__iscsi_textbuf_destroy(&x->resp);
	memset(x, 0, sizeof(*x));
}

static int text_add_target(struct scsitgt__iscsi_conn *conn, struct scsitgt_target *tgt,
			   struct scsitgt__iscsi_textbuf *resp)
{
	struct scsitgt__list *pos;
	int rc;

	rc = scsitgt__iscsi_textbuf_add(resp, "TargetName", tgt->name);
	if (rc < 0)
		return rc;
	for (pos = conn->ie->portals.next; pos != &conn->ie->portals; pos = pos->next) {
		struct scsitgt_portal *p = scsitgt__container_of(pos, struct scsitgt_portal, node);
		char addr[96], val[128];

		if (p->closing)
			continue;
		if (scsitgt__iscsi_portal_address(p, conn, addr, sizeof(addr)) < 0)
			continue;
		snprintf(val, sizeof(val), "%s,%u", addr, p->tpgt);
		rc = scsitgt__iscsi_textbuf_add(resp, "TargetAddress", val);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* SendTargets lists only targets this initiator may log in to from where it is. */
static bool text_may_log_in(const struct scsitgt__iscsi_conn *conn, const struct scsitgt_target *t,
			    const char *iname)
{
	return scsitgt__acl_login_allowed(t, iname, (const struct sockaddr *)&conn->peer_sa);
}

int scsitgt__iscsi_send_targets(struct scsitgt__iscsi_conn *conn, const char *value,
				struct scsitgt__iscsi_textbuf *resp)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	struct scsitgt_engine *engine = conn->ie->engine;
	const char *iname = sess->initiator_name;
	struct scsitgt__list *pos;
	int rc;

	if (strcmp(value, "All") == 0 && sess->discovery) {
		for (pos = engine->targets.next; pos != &engine->targets; pos = pos->next) {
			struct scsitgt_target *t =
				scsitgt__container_of(pos, struct scsitgt_target, node);

			if (t->destroying || !text_may_log_in(conn, t, iname))
				continue;
			rc = text_add_target(conn, t, resp);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (value[0] == '\0' || strcmp(value, "All") == 0) {
		/* RFC 7143 Appendix C: in a normal session, the session's own target. */
		return sess->tgt ? text_add_target(conn, sess->tgt, resp) : 0;
	}
	{
		struct scsitgt_target *t = scsitgt__engine_find_target(engine, value);

		if (t && !t->destroying && text_may_log_in(conn, t, iname))
			return text_add_target(conn, t, resp);
	}
	return 0;
}

static int text_respond(struct scsitgt__iscsi_conn *conn, const uint8_t *req)
{
	struct scsitgt__iscsi_text_xchg *x = &conn->text;
	uint8_t bhs[ISCSI_BHS_LEN];
	const uint8_t *chunk = NULL;
	bool more = false;
	size_t n;
	int rc;

	n = scsitgt__iscsi_textbuf_next_chunk(&x->resp, &chunk, conn->max_xmit_dsl, &more);
	scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_RSP,
			  more ? ISCSI_TEXT_FLAG_CONTINUE : ISCSI_FLAG_FINAL);
	memcpy(&bhs[ISCSI_BHS_LUN], &req[ISCSI_BHS_LUN], 8);
	put_be32(&bhs[ISCSI_BHS_ITT], x->itt);
	if (more) {
		x->ttt = conn->next_ttt++;
		if (x->ttt == ISCSI_RESERVED_TAG)
			x->ttt = conn->next_ttt++;
	}
	put_be32(&bhs[ISCSI_BHS_TTT], more ? x->ttt : ISCSI_RESERVED_TAG);
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	rc = scsitgt__iscsi_conn_send_simple(conn, bhs, chunk, (uint32_t)n, false);
	if (!more)
		scsitgt__iscsi_text_reset(conn);
	return rc;
}

/*
 * A Text Request answered with a Text Response (not a Reject) was received: ExpCmdSN passes a
 * non-immediate one's CmdSN. A rejected one's stays a gap for the initiator to plug (RFC 7143
 * §7.3: "The CmdSN of the rejected command PDU (if it is a non-immediate command) MUST NOT be
 * considered received by the target"), so every Reject below comes before this.
 */
static void text_received(struct scsitgt__iscsi_sess *sess, const uint8_t *h)
{
	if (!scsitgt__bhs_immediate(h))
		scsitgt__iscsi_sn_advance(sess);
}

int scsitgt__iscsi_text_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	struct scsitgt__iscsi_text_xchg *x = &conn->text;
	const uint8_t *h = pdu->bhs;
	uint8_t flags = h[ISCSI_BHS_FLAGS];
	bool fin = flags & ISCSI_FLAG_FINAL, cont = flags & ISCSI_TEXT_FLAG_CONTINUE;
	uint32_t itt = scsitgt__bhs_itt(h), ttt = get_be32(&h[ISCSI_BHS_TTT]);
	enum scsitgt__sn_verdict v;
	const uint8_t *text;
	size_t len;
	int rc;

	/* Ignored, or held for its turn ahead of ExpCmdSN (conn.c), which brings it back. */
	v = scsitgt__iscsi_sn_check(sess, get_be32(&h[ISCSI_BHS_CMDSN]), scsitgt__bhs_immediate(h));
	if (v != SCSITGT__SN_NOW)
		return 0;
	if (itt == ISCSI_RESERVED_TAG || (fin && cont)) {
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}

	if (ttt != ISCSI_RESERVED_TAG) {
		/* Continuing an exchange: the TTT we gave must come back (RFC 7143 §11.10.4). */
		if (!x->active || x->itt != itt || x->ttt != ttt) {
			scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_INVALID_PDU_FIELD);
			return 0;
		}
		if (scsitgt__iscsi_textbuf_remaining(&x->resp)) {
			if (pdu->data_len) {
				scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
				return 0;
			}
			text_received(sess, h);
			return text_respond(conn, h);
		}
	} else if (x->active && (x->itt != itt || scsitgt__iscsi_textbuf_remaining(&x->resp))) {
		/* A new exchange resets an unfinished one (RFC 7143 §11.10.4). */
		scsitgt__iscsi_text_reset(conn);
	}
	if (!x->active) {
		x->active = true;
		x->itt = itt;
		scsitgt__iscsi_text_acc_init(&x->acc, 0);
		scsitgt__iscsi_textbuf_init(&x->resp, 0);
	}
	rc = scsitgt__iscsi_text_acc_add(&x->acc, pdu->data, pdu->data_len, cont);
	if (rc < 0) {
		scsitgt__iscsi_text_reset(conn);
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	if (rc == 0) {
		/* More request text follows: answer empty, with a TTT to continue under. */
		uint8_t bhs[ISCSI_BHS_LEN];

		scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_RSP, 0);
		memcpy(&bhs[ISCSI_BHS_LUN], &h[ISCSI_BHS_LUN], 8);
		put_be32(&bhs[ISCSI_BHS_ITT], itt);
		x->ttt = conn->next_ttt++;
		if (x->ttt == ISCSI_RESERVED_TAG)
			x->ttt = conn->next_ttt++;
		put_be32(&bhs[ISCSI_BHS_TTT], x->ttt);
		text_received(sess, h);
		scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
		return scsitgt__iscsi_conn_send_simple(conn, bhs, NULL, 0, false);
	}
	text = scsitgt__iscsi_text_acc_data(&x->acc, &len);
	scsitgt__iscsi_neg_text_start(&conn->neg);
	rc = scsitgt__iscsi_neg_text(&conn->neg, text, len, &x->resp, NULL);
	if (rc == 0 && conn->neg.has_send_targets)
		rc = scsitgt__iscsi_send_targets(conn, conn->neg.send_targets, &x->resp);
	if (rc < 0) {
		scsitgt__iscsi_text_reset(conn);
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	scsitgt__iscsi_text_acc_reset(&x->acc);
	/* A renegotiated MaxRecvDataSegmentLength applies to what we send next. */
	if (conn->neg.params.max_xmit_dsl)
		conn->max_xmit_dsl = conn->neg.params.max_xmit_dsl;
	text_received(sess, h);
	return text_respond(conn, h);
}
