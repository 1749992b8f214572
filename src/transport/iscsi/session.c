/* SPDX-License-Identifier: MIT */
/*
 * iSCSI sessions at ErrorRecoveryLevel 0: creation with the core I_T nexus, lookup by
 * initiator/ISID/target/TSIH, closing (reinstatement, target removal), and the command window
 * (RFC 7143 §4.2.2.1): ExpCmdSN and MaxCmdSN with RFC 1982 serial arithmetic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/stats.h"
#include "transport/iscsi/conn.h"

static void sess_shutdown(struct scsitgt__session *core)
{
	struct scsitgt__iscsi_sess *sess = core->fabric_ctx;

	scsitgt__iscsi_sess_close(sess, "target removed");
}

/* scsitgt_session_kick(): ask for a logout on every connection (AsyncEvent 1), closing
 * each after its grace period if the initiator does not comply. */
static void sess_kick(struct scsitgt__session *core)
{
	struct scsitgt__iscsi_sess *sess = core->fabric_ctx;
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &sess->conns)
	{
		struct scsitgt__iscsi_conn *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_conn, sess_node);

		scsitgt__iscsi_conn_request_logout(c);
	}
}

const struct scsitgt__fabric_ops scsitgt__iscsi_fabric_ops = {
	.name = "iscsi",
	.cmd_done = scsitgt__iscsi_cmd_done,
	.cmd_aborted = scsitgt__iscsi_cmd_aborted,
	.session_shutdown = sess_shutdown,
	.session_kick = sess_kick,
	.unit_attention = scsitgt__iscsi_async_ua,
};

int scsitgt__iscsi_sess_create(struct scsitgt__iscsi_sess **out, struct scsitgt__iscsi_engine *ie,
			       struct scsitgt__iscsi_conn *conn, struct scsitgt_target *tgt,
			       const uint8_t isid[6], const struct scsitgt__iscsi_session_params *p)
{
	struct scsitgt__iscsi_sess *sess = calloc(1, sizeof(*sess));
	int rc;

	if (sess == NULL)
		return -ENOMEM;
	sess->ie = ie;
	sess->tgt = tgt;
	sess->discovery = tgt == NULL;
	memcpy(sess->isid, isid, 6);
	sess->params = *p;
	snprintf(sess->initiator_name, sizeof(sess->initiator_name), "%s", p->initiator_name);
	scsitgt__list_init(&sess->conns);
	scsitgt__list_init(&sess->pending);
	scsitgt__list_init(&sess->budget_wait);
	if (tgt) {
		struct scsitgt__nexus_info info;
		char iport[SCSITGT__ISCSI_NAME_MAX + 32];
		char tport[SCSITGT__ISCSI_NAME_MAX + 32];

		/* RFC 7143 §4.2.7.4 / SPC-5 §7.6.4.6: iSCSI port names. */
		snprintf(iport, sizeof(iport), "%s,i,0x%02x%02x%02x%02x%02x%02x", p->initiator_name,
			 isid[0], isid[1], isid[2], isid[3], isid[4], isid[5]);
		snprintf(tport, sizeof(tport), "%s,t,0x%04x", tgt->name, conn->portal->tpgt);
		memset(&info, 0, sizeof(info));
		info.protocol_id = SCSITGT__PROTO_ISCSI;
		info.initiator_name = p->initiator_name;
		info.initiator_port = iport;
		info.target_port = tport;
		info.rel_port_id = conn->portal->tpgt ? conn->portal->tpgt : 1;
		info.tpg_id = conn->portal->tpgt;
		/* address ACLs (core/acl.c). */
		info.initiator_sa =
			conn->peer_sa.ss_family ? (const struct sockaddr *)&conn->peer_sa : NULL;
		/* TCP sends Data-In from any memory; iSER wants registered memory, which lent
		 * backend memory is not (it would cost a copy into the pool instead). */
		info.lend_data_in = !conn->dm->rdma;
		rc = scsitgt__session_create(&sess->core, tgt, &info, &scsitgt__iscsi_fabric_ops,
					     sess);
		if (rc < 0) {
			free(sess);
			return rc;
		}
	}
	scsitgt__list_add_tail(&sess->conns, &conn->sess_node);
	sess->nconns = 1;
	conn->sess = sess;
	scsitgt__list_add_tail(&ie->sessions, &sess->node);
	*out = sess;
	return 0;
}

struct scsitgt__iscsi_sess *scsitgt__iscsi_sess_find(struct scsitgt__iscsi_engine *ie,
						     const char *initiator, const uint8_t isid[6],
						     struct scsitgt_target *tgt, uint16_t tsih)
{
	struct scsitgt__list *pos;

	for (pos = ie->sessions.next; pos != &ie->sessions; pos = pos->next) {
		struct scsitgt__iscsi_sess *s =
			scsitgt__container_of(pos, struct scsitgt__iscsi_sess, node);

		if (s->closing || s->tgt != tgt || memcmp(s->isid, isid, 6) != 0 ||
		    strcasecmp(s->initiator_name, initiator) != 0)
			continue;
		if (tsih == 0 || s->tsih == tsih)
			return s;
	}
	return NULL;
}

void scsitgt__iscsi_sess_close(struct scsitgt__iscsi_sess *sess, const char *why)
{
	struct scsitgt__list *pos, *tmp;

	sess->closing = true;
	scsitgt__list_foreach_safe(pos, tmp, &sess->conns)
	{
		struct scsitgt__iscsi_conn *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_conn, sess_node);

		scsitgt__iscsi_conn_close(c, why);
	}
}

void scsitgt__iscsi_sess_conn_gone(struct scsitgt__iscsi_sess *sess,
				   struct scsitgt__iscsi_conn *conn)
{
	scsitgt__list_remove(&conn->sess_node);
	conn->sess = NULL;
	if (--sess->nconns > 0)
		return;
	/* ERL0: the session ends with its last connection (RFC 7143 §6.3.6). */
	scsitgt__log(&sess->ie->engine->log,
		     sess->discovery ? SCSITGT_LOG_DEBUG : SCSITGT_LOG_NOTICE,
		     SCSITGT__ISCSI_SUBSYS, "%s session closed: initiator %s, TSIH %u",
		     sess->discovery ? "discovery" : "normal", sess->initiator_name, sess->tsih);
	scsitgt__list_remove(&sess->node);
	if (sess->core) {
		scsitgt__event_session(sess->core, SCSITGT_EVENT_SESSION_LOGOUT, NULL);
		scsitgt__session_destroy(sess->core);
	}
	free(sess);
}

enum scsitgt__sn_verdict scsitgt__iscsi_sn_check(const struct scsitgt__iscsi_sess *sess,
						 uint32_t cmd_sn, bool immediate)
{
	/* RFC 7143 §4.2.2.1: the window [ExpCmdSN, MaxCmdSN] holds MaxCmdSN - ExpCmdSN + 1
	 * commands and is empty when MaxCmdSN = ExpCmdSN - 1; a non-immediate command outside it
	 * is silently ignored, even one whose CmdSN equals ExpCmdSN. */
	uint32_t offset = cmd_sn - sess->exp_cmd_sn;
	uint32_t size = sess->max_cmd_sn - sess->exp_cmd_sn + 1;

	if (immediate)
		return SCSITGT__SN_NOW;
	if (offset >= size)
		return SCSITGT__SN_IGNORE;
	return offset == 0 ? SCSITGT__SN_NOW : SCSITGT__SN_LATER;
}

void scsitgt__iscsi_sess_update_window(struct scsitgt__iscsi_sess *sess)
{
	uint32_t free_slots = sess->active < sess->queue_depth ? sess->queue_depth - sess->active :
								 0;
	uint32_t max = sess->exp_cmd_sn - 1 + free_slots;

	/* MaxCmdSN never moves back (RFC 7143 §4.2.2.1 lets the initiator ignore that). */
	if (scsitgt__sn_gt(max, sess->max_cmd_sn))
		sess->max_cmd_sn = max;
}

void scsitgt__iscsi_sn_advance(struct scsitgt__iscsi_sess *sess)
{
	sess->exp_cmd_sn++;
	scsitgt__iscsi_sess_update_window(sess);
}
