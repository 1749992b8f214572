/* SPDX-License-Identifier: MIT */
/*
 * iSCSI login (RFC 7143 §6, §11.12, §11.13): stage sequencing (security, operational, full
 * feature phase), ISID/TSIH handling and session reinstatement (§6.3.5: the login waits until
 * the old session's commands have left the backends), CHAP sequencing with
 * chap.h (§12.1.3), key negotiation through text/keys.h, the redirection hook, initiator ACLs,
 * and the Status-Class/Status-Detail of every failure (§11.13.5).
 *
 * Bounds: a login connection holds one login PDU (at most 8192 data bytes, enforced by the
 * receiver) and a text accumulator limited to SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/stats.h"
#include "transport/iscsi/conn.h"

/* login_setup() and what it calls: the login waits for the home loop (redirect hook). */
#define LOGIN_PENDING (-1)

enum login_chap_state {
	LOGIN_CHAP_IDLE,
	LOGIN_CHAP_WAIT_A, /* AuthMethod=CHAP agreed; CHAP_A expected */
	LOGIN_CHAP_WAIT_R, /* challenge sent; CHAP_N and CHAP_R expected */
	LOGIN_CHAP_DONE,
};

struct scsitgt__iscsi_login {
	bool started;
	bool have_neg;
	uint8_t isid[6];
	uint16_t tsih;
	uint16_t cid;
	uint32_t itt;
	uint32_t cmd_sn;
	uint8_t stage; /* the CSG the next request must carry */
	struct scsitgt_target *tgt;
	bool discovery;
	bool auth_required;
	bool authenticated;
	enum login_chap_state chap_state;
	struct scsitgt__chap_server chap;
	struct scsitgt__iscsi_text_acc acc;
	struct scsitgt__iscsi_textbuf resp;
	/* A response text larger than one PDU is handed out over several (C bit). */
	bool resp_pending;
	bool resp_transit;
	/* The CmdSN window the data mover cut the session's to (login_complete), 0 for none. */
	uint32_t dm_window;
	/* The final stage's checks and negotiation are done (login_finish runs again after
	 * a reinstatement's wait). */
	bool finishing;
	/* A login that reinstates a session waits until it is gone (session.c). */
	bool reinstate_wait;
	/* A worker login waits for its session's core nexus (xloop.c). Both waits keep the
	 * final response's flags and text (the last chunk of resp). */
	bool core_wait;
	uint8_t final_flags;
	const uint8_t *final_chunk;
	size_t final_len;
	/* A worker login waits for the host's redirect hook, called on home (xloop.c), with
	 * the stage of the request it answers; then its verdict and address. */
	bool redirect_wait;
	bool redirect_asked;
	int redirect_r;
	char redirect_addr[256];
	uint8_t pend_csg;
	uint8_t pend_nsg;
	bool pend_transit;
	/* "TargetAddress=..." with its NUL, for a redirection status from login_setup(). */
	char redirect[300];
	size_t redirect_len;
	uint8_t resp_csg;
	uint8_t resp_nsg;
	char initiator_name[SCSITGT__ISCSI_NAME_MAX + 1];
	/* The names as sent, escaped, for a login-failed event (events.h); "" until seen. */
	char sent_iname[SCSITGT__ISCSI_NAME_MAX + 32];
	char sent_tname[SCSITGT__ISCSI_NAME_MAX + 32];
	/*
	 * Why authentication failed, for the target's log and the login-failed event's reason
	 * only: the initiator sees the status alone (0x0201, RFC 7143 §11.13.5). "" otherwise.
	 */
	char auth_why[200];
};

const struct scsitgt_iscsi_params *scsitgt__iscsi_params_for(struct scsitgt__iscsi_engine *ie,
							     struct scsitgt_target *tgt)
{
	struct scsitgt__iscsi_target *it = tgt ? scsitgt__iscsi_target_get(tgt, false) : NULL;

	return it ? &it->params : &ie->defaults;
}

static unsigned int digest_mask(enum scsitgt_iscsi_digest d)
{
	switch (d) {
	case SCSITGT_ISCSI_DIGEST_NONE:
		return SCSITGT__ISCSI_DIGEST_MASK_NONE;
	case SCSITGT_ISCSI_DIGEST_CRC32C:
		return SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	default:
		return SCSITGT__ISCSI_DIGEST_MASK_NONE | SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	}
}

void scsitgt__iscsi_neg_cfg_from(struct scsitgt__iscsi_neg_params *cfg,
				 const struct scsitgt_iscsi_params *p)
{
	scsitgt__iscsi_neg_params_init(cfg);
	cfg->header_digests = digest_mask(p->header_digest);
	cfg->data_digests = digest_mask(p->data_digest);
	cfg->max_connections = p->max_connections;
	cfg->initial_r2t = p->initial_r2t;
	cfg->immediate_data = p->immediate_data;
	cfg->max_recv_dsl = p->max_recv_data_segment_length;
	cfg->max_burst = p->max_burst_length;
	cfg->first_burst = p->first_burst_length;
	cfg->default_time2wait = p->default_time2wait;
	cfg->default_time2retain = p->default_time2retain;
	/* answer only what a task can track (scsi.c): the answer is the value in force. */
	cfg->max_outstanding_r2t = p->max_outstanding_r2t < SCSITGT__ISCSI_R2T_MAX ?
					   p->max_outstanding_r2t :
					   SCSITGT__ISCSI_R2T_MAX;
	cfg->error_recovery_level = p->error_recovery_level;
}

int scsitgt__iscsi_login_start(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_login *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return -ENOMEM;
	scsitgt__iscsi_text_acc_init(&l->acc, 0);
	scsitgt__iscsi_textbuf_init(&l->resp, 0);
	conn->login = l;
	return 0;
}

void scsitgt__iscsi_login_destroy(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_login *l = conn->login;

	if (l == NULL)
		return;
	scsitgt__chap_server_clear(&l->chap);
	scsitgt__iscsi_text_acc_destroy(&l->acc);
	scsitgt__iscsi_textbuf_destroy(&l->resp);
	free(l);
	conn->login = NULL;
}

/* A discovery session's command window: its Text and Logout requests complete at once. */
#define LOGIN_DISCOVERY_QUEUE_DEPTH 4

/* The session's command window, as every Login Response announces it (RFC 7143 §4.2.2.1) and
 * login_finish() keeps it. */
static uint32_t login_queue_depth(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_login *l = conn->login;

	if (l->discovery)
		return LOGIN_DISCOVERY_QUEUE_DEPTH;
	return scsitgt__iscsi_params_for(conn->ie, l->tgt)->queue_depth;
}

/* Fill the fields every Login Response carries. */
static void login_rsp_init(struct scsitgt__iscsi_conn *conn, uint8_t *bhs, uint8_t flags,
			   uint16_t status, uint16_t tsih)
{
	struct scsitgt__iscsi_login *l = conn->login;

	scsitgt__bhs_init(bhs, ISCSI_OP_LOGIN_RSP, flags);
	bhs[ISCSI_LOGIN_VERSION_MAX] = ISCSI_VERSION;
	bhs[ISCSI_LOGIN_VERSION_MIN] = ISCSI_VERSION; /* VersionActive */
	memcpy(&bhs[ISCSI_LOGIN_ISID], l->isid, 6);
	put_be16(&bhs[ISCSI_LOGIN_TSIH], tsih);
	put_be32(&bhs[ISCSI_BHS_ITT], l->itt);
	put_be32(&bhs[ISCSI_BHS_STATSN], conn->stat_sn++);
	/* Login Requests are immediate: CmdSN is not advanced (RFC 7143 §11.12.6). */
	put_be32(&bhs[ISCSI_BHS_EXPCMDSN], l->cmd_sn);
	put_be32(&bhs[ISCSI_BHS_MAXCMDSN], status	? l->cmd_sn :
					   l->dm_window ? l->cmd_sn + l->dm_window - 1 :
							  l->cmd_sn + login_queue_depth(conn) - 1);
	bhs[ISCSI_LOGIN_STATUS_CLASS] = (uint8_t)(status >> 8);
	bhs[ISCSI_LOGIN_STATUS_DETAIL] = (uint8_t)status;
}

static const char *login_status_text(uint16_t status)
{
	switch (status) {
	case ISCSI_LOGIN_STATUS_TGT_MOVED_TEMP:
		return "target moved temporarily";
	case ISCSI_LOGIN_STATUS_TGT_MOVED_PERM:
		return "target moved permanently";
	case ISCSI_LOGIN_STATUS_INIT_ERR:
		return "initiator error";
	case ISCSI_LOGIN_STATUS_AUTH_FAILED:
		return "authentication failure";
	case ISCSI_LOGIN_STATUS_TGT_FORBIDDEN:
		return "authorization failure";
	case ISCSI_LOGIN_STATUS_TGT_NOT_FOUND:
		return "target not found";
	case ISCSI_LOGIN_STATUS_TGT_REMOVED:
		return "target removed";
	case ISCSI_LOGIN_STATUS_NO_VERSION:
		return "unsupported version";
	case ISCSI_LOGIN_STATUS_TOO_MANY_CONN:
		return "too many connections";
	case ISCSI_LOGIN_STATUS_MISSING_FIELDS:
		return "missing parameter";
	case ISCSI_LOGIN_STATUS_CONN_ADD_FAILED:
		return "cannot include in session";
	case ISCSI_LOGIN_STATUS_NO_SESSION_TYPE:
		return "session type not supported";
	case ISCSI_LOGIN_STATUS_NO_SESSION:
		return "session does not exist";
	case ISCSI_LOGIN_STATUS_INVALID_REQUEST:
		return "invalid during login";
	case ISCSI_LOGIN_STATUS_TARGET_ERROR:
		return "target error";
	case ISCSI_LOGIN_STATUS_SVC_UNAVAILABLE:
		return "service unavailable";
	case ISCSI_LOGIN_STATUS_NO_RESOURCES:
		return "out of resources";
	default:
		return "login failure";
	}
}

/* Answer with a failure (or redirection) status and close once it is written. */
static int login_fail(struct scsitgt__iscsi_conn *conn, uint16_t status, const char *text,
		      size_t text_len)
{
	struct scsitgt__iscsi_login *l = conn->login;
	uint8_t bhs[ISCSI_BHS_LEN];
	/* The target the login named may be gone since the login found it: a step of a
	 * worker's login waits for home in between (the nexus, the redirect hook). The event
	 * names it only while the engine has it (core/events.c keeps it until delivered). */
	struct scsitgt_target *tgt =
		l->tgt && scsitgt__engine_has_target(conn->ie->engine, l->tgt) ? l->tgt : NULL;
	char reason[sizeof(l->auth_why) + 48];

	/* The status's text, and for an authentication failure what went wrong. */
	snprintf(reason, sizeof(reason), "%s%s%s", login_status_text(status),
		 l->auth_why[0] ? ": " : "", l->auth_why);
	scsitgt__iscsi_conn_log(conn, status >> 8 == 1 ? SCSITGT_LOG_INFO : SCSITGT_LOG_NOTICE,
				"login of %s refused: %s (0x%04x)",
				l->initiator_name[0] ? l->initiator_name : "?", reason, status);
	/* A redirection (class 1) is no failure; anything else is reported to the host. */
	if (status >> 8 != 1)
		scsitgt__event_login_failed(
			conn->ie->engine, tgt, l->sent_iname[0] ? l->sent_iname : NULL,
			l->sent_tname[0] ? l->sent_tname : NULL, conn->peer, status, reason);
	login_rsp_init(conn, bhs, 0, status, l->tsih);
	/* The connection stops reading: nothing after a failed login is processed. */
	conn->rx.stop = true;
	scsitgt__iscsi_conn_send_simple(conn, bhs, text, (uint32_t)text_len, true);
	return 0;
}

static const char *digest_mask_text(unsigned int m)
{
	if (m == SCSITGT__ISCSI_DIGEST_MASK_CRC32C)
		return "CRC32C";
	return m == SCSITGT__ISCSI_DIGEST_MASK_NONE ? "None" : "CRC32C,None";
}

/* Why a login about to fail with 0x0200 for want of a digest the target requires. */
static void login_log_digest_refused(struct scsitgt__iscsi_conn *conn)
{
	const struct scsitgt__iscsi_neg_params *c = &conn->neg.cfg;

	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_NOTICE,
				"initiator did not agree to the digests required (HeaderDigest=%s, "
				"DataDigest=%s)",
				digest_mask_text(c->header_digests),
				digest_mask_text(c->data_digests));
}

/* Find the values of a few declarative keys before negotiation starts. */
static void login_scan(const uint8_t *text, size_t len, const char **iname, const char **tname,
		       const char **stype)
{
	struct scsitgt__iscsi_kv kv;
	size_t pos = 0;

	while (scsitgt__iscsi_text_next(text, len, &pos, &kv) == 1) {
		if (kv.key_len == 13 && memcmp(kv.key, "InitiatorName", 13) == 0)
			*iname = kv.value;
		else if (kv.key_len == 10 && memcmp(kv.key, "TargetName", 10) == 0)
			*tname = kv.value;
		else if (kv.key_len == 11 && memcmp(kv.key, "SessionType", 11) == 0)
			*stype = kv.value;
	}
}

static const struct scsitgt__iscsi_cred *login_cred(struct scsitgt__iscsi_target *it,
						    const char *initiator)
{
	struct scsitgt__list *pos;

	if (it == NULL)
		return NULL;
	for (pos = it->creds.next; pos != &it->creds; pos = pos->next) {
		struct scsitgt__iscsi_cred *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_cred, node);

		if (strcasecmp(c->initiator, initiator) == 0)
			return c;
	}
	return it->chap.user ? &it->chap : NULL;
}

/* connections of initiator @iname on @conn's portal other than @conn, not closing. */
static unsigned int login_initiator_conns(const struct scsitgt__iscsi_conn *conn, const char *iname)
{
	const struct scsitgt__list *pos;
	unsigned int n = 0;

	/* Connections of every loop: what they share is under ie->lock (conn.h). */
	uv_mutex_lock(&conn->ie->lock);
	for (pos = conn->ie->conns.next; pos != &conn->ie->conns; pos = pos->next) {
		const struct scsitgt__iscsi_conn *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_conn, node);

		if (c != conn && c->portal == conn->portal && !c->listed_closing &&
		    strcasecmp(c->iname, iname) == 0)
			n++;
	}
	uv_mutex_unlock(&conn->ie->lock);
	return n;
}

/*
 * whether @tgt has room for one more session of @iname/@isid through @conn's portal group:
 * sessions that are not closing count, except the one this login would reinstate (RFC 7143
 * §6.3.5: the same I_T nexus, portal group tag included).
 */
static bool login_target_has_room(const struct scsitgt__iscsi_conn *conn,
				  const struct scsitgt_target *tgt, const char *iname,
				  const uint8_t isid[6])
{
	const struct scsitgt__list *pos;
	unsigned int n = 0;

	if (tgt->max_sessions == 0)
		return true;
	uv_mutex_lock(&conn->ie->lock);
	for (pos = conn->ie->sessions.next; pos != &conn->ie->sessions; pos = pos->next) {
		const struct scsitgt__iscsi_sess *s =
			scsitgt__container_of(pos, struct scsitgt__iscsi_sess, node);

		if (s->tgt != tgt || s->closing)
			continue;
		if (scsitgt__iscsi_sess_of_nexus(s, iname, isid, tgt, conn->portal->tpgt))
			continue;
		n++;
	}
	uv_mutex_unlock(&conn->ie->lock);
	return n < tgt->max_sessions;
}

/*
 * The initiator of the first complete text (@iname, NULL when absent) and its session type:
 * RFC 7143 §13.11: InitiatorName is required on the first login request (missing: 0x0207); a
 * name that breaks RFC 7143 §4.2.7 / RFC 3722 is an initiator error (0x0200), refused before
 * it is logged, matched or handed to a callback. Returns 0 or a login status.
 */
static int login_setup_initiator(struct scsitgt__iscsi_conn *conn, const char *iname,
				 const char *stype)
{
	struct scsitgt__iscsi_login *l = conn->login;

	if (iname == NULL || iname[0] == '\0')
		return ISCSI_LOGIN_STATUS_MISSING_FIELDS;
	if (scsitgt__iscsi_name_check(iname, strlen(iname)) < 0)
		return ISCSI_LOGIN_STATUS_INIT_ERR;
	snprintf(l->initiator_name, sizeof(l->initiator_name), "%s", iname);
	uv_mutex_lock(&conn->ie->lock);
	memcpy(conn->iname, l->initiator_name, sizeof(conn->iname));
	uv_mutex_unlock(&conn->ie->lock);
	/* one initiator may not take every connection of the portal. */
	if (conn->portal->max_conns_per_initiator &&
	    login_initiator_conns(conn, iname) >= conn->portal->max_conns_per_initiator) {
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_WARNING,
					"initiator %s holds %u connections on this portal already",
					iname, conn->portal->max_conns_per_initiator);
		return ISCSI_LOGIN_STATUS_NO_RESOURCES;
	}
	if (stype && strcmp(stype, "Discovery") == 0)
		l->discovery = true;
	else if (stype && strcmp(stype, "Normal") != 0)
		return ISCSI_LOGIN_STATUS_NO_SESSION_TYPE;
	return 0;
}

/*
 * The host's redirection callback for @tgt: a status of class 1 with l->redirect set when it
 * moves the target elsewhere, else 0.
 */
static int login_redirect(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_target *it,
			  struct scsitgt_target *tgt, const char *iname)
{
	struct scsitgt__iscsi_login *l = conn->login;
	enum scsitgt_iscsi_redirect r;
	const char *addr = l->redirect_addr;
	int n;

	if (it == NULL || it->redirect_cb == NULL)
		return 0;
	if (conn->worker && !l->redirect_asked) {
		/* The host's hook runs on its loop; the login resumes with the verdict. */
		if (scsitgt__iscsi_xloop_redirect(conn, tgt, iname) < 0)
			return ISCSI_LOGIN_STATUS_NO_RESOURCES;
		l->redirect_wait = true;
		return LOGIN_PENDING;
	}
	if (conn->worker) {
		r = (enum scsitgt_iscsi_redirect)l->redirect_r;
	} else {
		l->redirect_addr[0] = '\0';
		r = it->redirect_cb(it->redirect_arg, tgt, iname, l->redirect_addr,
				    sizeof(l->redirect_addr));
		l->redirect_addr[sizeof(l->redirect_addr) - 1] = '\0';
	}
	if (r == SCSITGT_ISCSI_REDIRECT_NONE || addr[0] == '\0')
		return 0;
	n = snprintf(l->redirect, sizeof(l->redirect), "TargetAddress=%s", addr);
	l->redirect_len = (size_t)n + 1;
	return r == SCSITGT_ISCSI_REDIRECT_PERMANENT ? ISCSI_LOGIN_STATUS_TGT_MOVED_PERM :
						       ISCSI_LOGIN_STATUS_TGT_MOVED_TEMP;
}

/*
 * The target a normal session's login names (@tname, NULL when absent): it exists, the host
 * does not redirect the login, the ACLs let @iname in, and it has room for the session.
 * Sets l->tgt and whether CHAP is required. Returns 0 or a login status.
 */
static int login_setup_target(struct scsitgt__iscsi_conn *conn, const char *iname,
			      const char *tname)
{
	struct scsitgt__iscsi_login *l = conn->login;
	struct scsitgt__iscsi_target *it;
	struct scsitgt_target *tgt;
	int st;

	if (tname == NULL || tname[0] == '\0')
		return ISCSI_LOGIN_STATUS_MISSING_FIELDS;
	if (scsitgt__iscsi_name_check(tname, strlen(tname)) < 0)
		return ISCSI_LOGIN_STATUS_INIT_ERR;
	tgt = scsitgt__engine_find_target(conn->ie->engine, tname);
	if (tgt == NULL)
		return ISCSI_LOGIN_STATUS_TGT_NOT_FOUND;
	if (tgt->destroying)
		return ISCSI_LOGIN_STATUS_TGT_REMOVED;
	l->tgt = tgt;
	it = scsitgt__iscsi_target_get(tgt, false);
	/* Redirection comes first: the host may move a target it does not serve here. */
	st = login_redirect(conn, it, tgt, iname);
	if (st)
		return st;
	/* the name and the source address (core/acl.c). */
	if (!scsitgt__acl_login_allowed(tgt, iname, (const struct sockaddr *)&conn->peer_sa)) {
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_NOTICE,
					"initiator %s may not log in to %s from here", iname,
					tgt->name);
		return ISCSI_LOGIN_STATUS_TGT_FORBIDDEN;
	}
	if (l->tsih == 0 && !login_target_has_room(conn, tgt, iname, l->isid)) {
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_WARNING,
					"target %s has %u sessions already", tgt->name,
					tgt->max_sessions);
		return ISCSI_LOGIN_STATUS_NO_RESOURCES;
	}
	if (l->tsih != 0) {
		bool found;

		/* Adding a connection to a session: only one per session is supported. */
		uv_mutex_lock(&conn->ie->lock);
		found = scsitgt__iscsi_sess_find(conn->ie, iname, l->isid, tgt, conn->portal->tpgt,
						 l->tsih) != NULL;
		uv_mutex_unlock(&conn->ie->lock);
		return found ? ISCSI_LOGIN_STATUS_TOO_MANY_CONN : ISCSI_LOGIN_STATUS_NO_SESSION;
	}
	l->auth_required = login_cred(it, iname) != NULL;
	return 0;
}

/* Start the key negotiation with what the target, the portal and the data mover offer. */
static void login_neg_start(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_login *l = conn->login;
	struct scsitgt__iscsi_neg_params cfg;

	scsitgt__iscsi_neg_cfg_from(&cfg, scsitgt__iscsi_params_for(conn->ie, l->tgt));
	cfg.auth_methods = l->auth_required ? SCSITGT__ISCSI_AUTH_MASK_CHAP :
					      SCSITGT__ISCSI_AUTH_MASK_NONE;
	cfg.max_connections = 1;
	cfg.error_recovery_level = 0;
	cfg.tpgt = conn->portal->tpgt;
	cfg.target_alias = l->tgt ? l->tgt->alias : NULL;
	if (conn->dm->rdma) {
		/* RFC 7145 §6.3, §13.1: iSER offers RDMAExtensions; no digests over RDMA. */
		cfg.rdma_extensions = true;
		cfg.header_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE;
		cfg.data_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE;
		cfg.max_recv_dsl = conn->dm->max_recv_dsl;
		/* RFC 7145 §6.3: InitiatorRecvDataSegmentLength, within the send buffers. */
		cfg.max_xmit_cap = conn->dm->max_send_dsl;
		/*
		 * RFC 7145 §8: each unsolicited Data-Out costs the target a posted receive
		 * buffer; keep the first burst to one of them (the immediate data), and let
		 * RDMA READ fetch the rest (transport/iser/iser_flow.h).
		 */
		if (cfg.first_burst > cfg.max_recv_dsl)
			cfg.first_burst = cfg.max_recv_dsl;
		/*
		 * No proposals of our own: Linux ib_iser posts its full-feature receive
		 * buffers when it sends the login request that transits to FFP, so it needs
		 * the login to end with our answer to that request, without another round.
		 */
		cfg.propose = false;
	}
	scsitgt__iscsi_neg_init(&conn->neg, &cfg, l->tsih == 0);
	l->have_neg = true;
}

/*
 * The first complete text names the initiator, the target and the session type: decide
 * which target settings apply, refuse early what cannot succeed, and start the negotiation.
 * Returns 0 or a login status (a redirection comes with l->redirect).
 */
static int login_setup(struct scsitgt__iscsi_conn *conn, const uint8_t *text, size_t len)
{
	struct scsitgt__iscsi_login *l = conn->login;
	const char *iname = NULL, *tname = NULL, *stype = NULL;
	int st;

	login_scan(text, len, &iname, &tname, &stype);
	if (iname)
		scsitgt__log_escape(l->sent_iname, sizeof(l->sent_iname), iname, strlen(iname));
	if (tname)
		scsitgt__log_escape(l->sent_tname, sizeof(l->sent_tname), tname, strlen(tname));
	st = login_setup_initiator(conn, iname, stype);
	if (st)
		return st;
	if (l->discovery) {
		if (l->tsih != 0)
			return ISCSI_LOGIN_STATUS_NO_SESSION;
		/* discovery sessions authenticate when the engine says so. */
		l->auth_required = conn->ie->disc_chap.user != NULL;
	} else {
		st = login_setup_target(conn, iname, tname);
		if (st)
			return st;
	}
	login_neg_start(conn);
	return 0;
}

/* The CHAP algorithms a target allows (scsitgt_iscsi_params::chap_algorithms), as a set. */
static size_t chap_allowed(uint32_t mask, enum scsitgt__chap_alg *allowed)
{
	size_t n = 0;

	for (size_t i = 0; i < 4; i++) {
		enum scsitgt__chap_alg a = scsitgt__chap_default_prefs[i];
		uint32_t bit = a == SCSITGT__CHAP_MD5	 ? SCSITGT_ISCSI_CHAP_MD5 :
			       a == SCSITGT__CHAP_SHA1	 ? SCSITGT_ISCSI_CHAP_SHA1 :
			       a == SCSITGT__CHAP_SHA256 ? SCSITGT_ISCSI_CHAP_SHA256 :
							   SCSITGT_ISCSI_CHAP_SHA3_256;

		if (mask & bit)
			allowed[n++] = a;
	}
	return n;
}

/*
 * Refuse the login with @status (0x0201, or 0x0200 for CHAP keys out of sequence) and keep
 * why in l->auth_why (printf-style), for the target's log and event only. Strings from the
 * wire in it are escaped by the caller (login_wire()).
 */
static int login_auth_refuse(struct scsitgt__iscsi_login *l, int status, const char *fmt, ...)
	SCSITGT_PRINTF(3, 4);

static int login_auth_refuse(struct scsitgt__iscsi_login *l, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->auth_why, sizeof(l->auth_why), fmt, ap);
	va_end(ap);
	return status;
}

/* @v from the wire, escaped (scsitgt__log_escape()) and cut to fit @buf, for auth_why. */
static const char *login_wire(char *buf, size_t size, const char *v)
{
	scsitgt__log_escape(buf, size, v ? v : "", v ? strlen(v) : 0);
	return buf;
}

/* The value of key @key in the login text @text, escaped into @buf; "" when absent. */
static const char *login_key_text(char *buf, size_t size, const uint8_t *text, size_t len,
				  const char *key)
{
	struct scsitgt__iscsi_kv kv;
	size_t pos = 0;

	while (scsitgt__iscsi_text_next(text, len, &pos, &kv) == 1) {
		if (kv.key_len == strlen(key) && memcmp(kv.key, key, kv.key_len) == 0) {
			scsitgt__log_escape(buf, size, kv.value, kv.value_len);
			return buf;
		}
	}
	buf[0] = '\0';
	return buf;
}

/* The CHAP algorithms a target allows, by name, for a refusal's reason. */
static const char *chap_allowed_text(char *buf, size_t size, const enum scsitgt__chap_alg *allowed,
				     size_t n)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && o < size; i++) {
		int w = snprintf(buf + o, size - o, "%s%d (%s)", i ? ", " : "", (int)allowed[i],
				 scsitgt__chap_alg_name(allowed[i]));

		if (w < 0)
			break;
		o += (size_t)w;
	}
	return n ? buf : "none";
}

/*
 * CHAP sequencing in the security stage (RFC 7143 §12.1.3). Returns 0 or a login status. A
 * refusal says why in l->auth_why (login_auth_refuse()): no CHAP offered, no algorithm in
 * common, malformed CHAP keys, an unknown user name, a wrong response (secret mismatch) or a
 * mutual CHAP failure. The initiator learns only the status (RFC 7143 §11.13.5: 0x0201
 * "authentication failure" says nothing more, so as not to help a guesser).
 * @text and @len: the request's text, for the AuthMethod it offered.
 */
static int login_auth(struct scsitgt__iscsi_conn *conn, const struct scsitgt__iscsi_chap_keys *ck,
		      const uint8_t *text, size_t len)
{
	struct scsitgt__iscsi_login *l = conn->login;
	struct scsitgt__iscsi_target *it = l->tgt ? scsitgt__iscsi_target_get(l->tgt, false) : NULL;
	enum scsitgt__iscsi_auth method = conn->neg.params.auth_method;
	bool any = ck->a || ck->i || ck->c || ck->n || ck->r;
	char w1[96], w2[96];

	if (method == SCSITGT__ISCSI_AUTH_REJECTED) {
		login_key_text(w1, sizeof(w1), text, len, "AuthMethod");
		if (l->auth_required)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "no CHAP offered (AuthMethod=%s) and the target "
						 "requires CHAP",
						 w1);
		return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
					 "the initiator requires authentication (AuthMethod=%s) "
					 "and the target has no CHAP credentials for it",
					 w1);
	}
	if (method != SCSITGT__ISCSI_AUTH_CHAP) {
		if (any)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_INIT_ERR,
						 "malformed CHAP keys: CHAP_%s without "
						 "AuthMethod=CHAP agreed",
						 ck->a ? "A" :
						 ck->n ? "N" :
						 ck->r ? "R" :
						 ck->i ? "I" :
							 "C");
		return 0;
	}
	if (l->chap_state == LOGIN_CHAP_IDLE)
		l->chap_state = LOGIN_CHAP_WAIT_A;
	if (l->chap_state == LOGIN_CHAP_WAIT_A && ck->a) {
		enum scsitgt__chap_alg allowed[4];
		size_t na = chap_allowed(
			scsitgt__iscsi_params_for(conn->ie, l->tgt)->chap_algorithms, allowed);
		char a[4], i[4], c[SCSITGT__CHAP_CHALLENGE_TEXT_SIZE];
		int alg;

		if (ck->n || ck->r || ck->i || ck->c)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_INIT_ERR,
						 "malformed CHAP keys: CHAP_%s with CHAP_A, before "
						 "the challenge",
						 ck->n ? "N" :
						 ck->r ? "R" :
						 ck->i ? "I" :
							 "C");
		alg = na ? scsitgt__chap_alg_select(ck->a, allowed, na) : -ENOENT;
		if (alg < 0)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "no CHAP algorithm in common: CHAP_A=%s, the "
						 "target allows %s",
						 login_wire(w1, sizeof(w1), ck->a),
						 chap_allowed_text(w2, sizeof(w2), allowed, na));
		if (scsitgt__chap_server_start(&l->chap, alg, 0, conn->ie->rnd, conn->ie->rnd_arg) <
			    0 ||
		    scsitgt__chap_server_format(&l->chap, a, i, c, sizeof(c)) < 0)
			return ISCSI_LOGIN_STATUS_TARGET_ERROR;
		if (scsitgt__iscsi_textbuf_add(&l->resp, "CHAP_A", a) < 0 ||
		    scsitgt__iscsi_textbuf_add(&l->resp, "CHAP_I", i) < 0 ||
		    scsitgt__iscsi_textbuf_add(&l->resp, "CHAP_C", c) < 0)
			return ISCSI_LOGIN_STATUS_TARGET_ERROR;
		l->chap_state = LOGIN_CHAP_WAIT_R;
		return 0;
	}
	if (l->chap_state == LOGIN_CHAP_WAIT_R && (ck->n || ck->r)) {
		/* a discovery session uses the engine's credentials. */
		const struct scsitgt__iscsi_cred *cred =
			l->discovery ? (conn->ie->disc_chap.user ? &conn->ie->disc_chap : NULL) :
				       login_cred(it, l->initiator_name);
		const struct scsitgt__iscsi_cred *mutual = l->discovery ? &conn->ie->disc_mutual :
							   it		? &it->mutual :
									  NULL;
		char r[SCSITGT__CHAP_RESPONSE_TEXT_SIZE];

		int vr;

		if (ck->a || ck->n == NULL || ck->r == NULL)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "malformed CHAP keys: %s",
						 ck->a	       ? "CHAP_A again with the response" :
						 ck->n == NULL ? "CHAP_R without CHAP_N" :
								 "CHAP_N without CHAP_R");
		if ((ck->i == NULL) != (ck->c == NULL))
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "mutual CHAP failure: CHAP_%s without CHAP_%s",
						 ck->i ? "I" : "C", ck->i ? "C" : "I");
		if (cred == NULL)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "the target has no CHAP credentials for this "
						 "initiator any more");
		if (strcmp(ck->n, cred->user) != 0)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "unknown user name: CHAP_N=\"%s\"",
						 login_wire(w1, sizeof(w1), ck->n));
		vr = scsitgt__chap_server_verify(&l->chap, ck->r, cred->secret,
						 strlen(cred->secret));
		if (vr == SCSITGT_EAUTH)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "wrong response (secret mismatch) for user "
						 "\"%s\" (CHAP_A=%d, %s)",
						 login_wire(w1, sizeof(w1), ck->n),
						 (int)l->chap.alg,
						 scsitgt__chap_alg_name(l->chap.alg));
		if (vr != 0)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "malformed CHAP keys: CHAP_R is not a hex (0x) or "
						 "base64 (0b) value");
		if (ck->i || ck->c) {
			/* Mutual CHAP: the initiator authenticates the target too. */
			if (mutual == NULL || mutual->user == NULL)
				return login_auth_refuse(
					l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
					"mutual CHAP failure: the initiator asks "
					"the target to authenticate (CHAP_I, "
					"CHAP_C) and it has no mutual credentials");
			vr = scsitgt__chap_mutual_respond(r, sizeof(r), &l->chap, ck->i, ck->c,
							  mutual->secret, strlen(mutual->secret));
			if (vr != 0)
				return login_auth_refuse(
					l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
					"mutual CHAP failure: %s",
					vr == SCSITGT_EAUTH ?
						"CHAP_C is too short or the target's own "
						"challenge sent back (RFC 7143 §12.1.3)" :
						"CHAP_I or CHAP_C malformed");
			if (scsitgt__iscsi_textbuf_add(&l->resp, "CHAP_N", mutual->user) < 0 ||
			    scsitgt__iscsi_textbuf_add(&l->resp, "CHAP_R", r) < 0)
				return ISCSI_LOGIN_STATUS_TARGET_ERROR;
		}
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_DEBUG, "CHAP (%s%s) succeeded for %s",
					scsitgt__chap_alg_name(l->chap.alg),
					ck->i ? ", mutual" : "", l->initiator_name);
		scsitgt__chap_server_clear(&l->chap);
		l->chap_state = LOGIN_CHAP_DONE;
		l->authenticated = true;
		return 0;
	}
	if (any)
		return login_auth_refuse(l, ISCSI_LOGIN_STATUS_INIT_ERR,
					 "malformed CHAP keys: CHAP_%s out of sequence",
					 ck->a ? "A" :
					 ck->n ? "N" :
					 ck->r ? "R" :
					 ck->i ? "I" :
						 "C");
	return 0;
}

/* The login status for a core nexus that could not be made (scsitgt__session_create()). */
static uint16_t login_core_status(int rc)
{
	return rc == -EACCES	? ISCSI_LOGIN_STATUS_TGT_FORBIDDEN :
	       rc == -ESHUTDOWN ? ISCSI_LOGIN_STATUS_TGT_REMOVED :
				  ISCSI_LOGIN_STATUS_NO_RESOURCES;
}

/*
 * Transit to full feature phase: create the session; its core nexus too on the home loop (a
 * worker's login asks home for it, login_respond()). Returns 0, a login status, or
 * LOGIN_PENDING while the session it reinstates ends (scsitgt__iscsi_login_reinstate_done()
 * calls it again).
 */
static int login_finish(struct scsitgt__iscsi_conn *conn, uint16_t *tsih)
{
	struct scsitgt__iscsi_login *l = conn->login;
	struct scsitgt__iscsi_sess *sess;
	int rc;

	if (!l->finishing) {
		if (l->auth_required && !l->authenticated)
			return login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
						 "no CHAP offered: the initiator left the security "
						 "stage unauthenticated and the target requires "
						 "CHAP");
		rc = scsitgt__iscsi_neg_finish(&conn->neg);
		if (rc == -ENOTSUP) {
			login_log_digest_refused(conn);
			return ISCSI_LOGIN_STATUS_INIT_ERR;
		}
		if (rc < 0)
			return ISCSI_LOGIN_STATUS_MISSING_FIELDS;
		l->finishing = true;
	}
	/* other logins may have filled the target since this one started. */
	if (!l->discovery && !login_target_has_room(conn, l->tgt, l->initiator_name, l->isid))
		return ISCSI_LOGIN_STATUS_NO_RESOURCES;
	/* RFC 7143 §6.3.5: same initiator, ISID, target and portal group with TSIH 0
	 * reinstates; the new session starts once the old one and its commands are gone. */
	if (!l->discovery) {
		rc = scsitgt__iscsi_sess_reinstate(conn, l->initiator_name, l->isid, l->tgt);
		if (rc == -EBUSY) {
			/* Commands of the nexus's former session may still land: the new one may
			 * not start (RFC 7143 §11.13.5 0x0301, a target error the initiator may
			 * retry) until they have left (session.c, the nexus's fence). */
			scsitgt__iscsi_conn_log(
				conn, SCSITGT_LOG_WARNING,
				"session reinstatement: the old session's commands are "
				"still in backends");
			return ISCSI_LOGIN_STATUS_SVC_UNAVAILABLE;
		}
		if (rc < 0)
			return ISCSI_LOGIN_STATUS_NO_RESOURCES;
		if (rc > 0)
			return LOGIN_PENDING;
	}
	rc = scsitgt__iscsi_sess_create(&sess, conn->ie, conn, l->discovery ? NULL : l->tgt,
					l->isid, &conn->neg.params);
	if (rc < 0)
		return ISCSI_LOGIN_STATUS_NO_RESOURCES;
	if (!l->discovery && conn->worker == NULL) {
		struct scsitgt__iscsi_nexus nx;

		scsitgt__iscsi_nexus_from(&nx, sess, conn);
		rc = scsitgt__iscsi_sess_core_create(sess, &nx);
		if (rc < 0) {
			scsitgt__iscsi_sess_abandon(sess, conn);
			return login_core_status(rc);
		}
	}
	sess->queue_depth = login_queue_depth(conn);
	sess->exp_cmd_sn = l->cmd_sn;
	sess->max_cmd_sn = l->cmd_sn - 1 + sess->queue_depth;
	conn->cid = l->cid;
	*tsih = sess->tsih;
	return 0;
}

/*
 * The data mover's turn before the final Login Response (datamover.h login_complete): it gets
 * ready for full feature phase and may cut the CmdSN window. Returns 0 or a negative errno.
 */
static int login_dm_complete(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_login *l = conn->login;
	struct scsitgt__iscsi_sess *sess = conn->sess;
	struct scsitgt__iscsi_dm_login dl;
	uint32_t window;
	int rc;

	if (conn->dm->login_complete == NULL)
		return 0;
	dl.params = &sess->params;
	dl.queue_depth = sess->queue_depth;
	dl.discovery = l->discovery;
	window = sess->queue_depth;
	rc = conn->dm->login_complete(conn, &dl, &window);
	if (rc < 0)
		return rc;
	if (window < sess->queue_depth) {
		/* The response carries ExpCmdSN; MaxCmdSN = ExpCmdSN + window - 1. */
		sess->queue_depth = window;
		sess->max_cmd_sn = l->cmd_sn + window - 1;
		l->dm_window = window;
	}
	return 0;
}

/*
 * The final Login Response (flags with T and NSG 3, the last chunk of text): the data mover
 * gets ready, the response goes out, and the connection enters full feature phase.
 */
static int login_enter_ffp(struct scsitgt__iscsi_conn *conn, uint8_t flags, const uint8_t *chunk,
			   size_t n, uint16_t tsih)
{
	struct scsitgt__iscsi_login *l = conn->login;
	const struct scsitgt__iscsi_session_params *np = &conn->neg.params;
	uint8_t bhs[ISCSI_BHS_LEN];

	if (login_dm_complete(conn) < 0) {
		scsitgt__iscsi_conn_close(conn, "data mover cannot enter full feature phase");
		return 0;
	}
	login_rsp_init(conn, bhs, flags, ISCSI_LOGIN_STATUS_SUCCESS, tsih);
	scsitgt__iscsi_conn_send_simple(conn, bhs, chunk, (uint32_t)n, false);
	l->stage = l->resp_nsg;

	/* RFC 7143 §13.1: digests start with the first PDU after the final Login Response. */
	conn->header_digest = np->header_digest == SCSITGT__ISCSI_DIGEST_CRC32C;
	conn->data_digest = np->data_digest == SCSITGT__ISCSI_DIGEST_CRC32C;
	conn->rx.header_digest = conn->header_digest;
	conn->rx.data_digest = conn->data_digest;
	conn->rx.max_dsl = np->max_recv_dsl;
	conn->max_xmit_dsl = np->max_xmit_dsl;
	scsitgt__iscsi_conn_log(conn, l->discovery ? SCSITGT_LOG_DEBUG : SCSITGT_LOG_NOTICE,
				"%s session login: initiator %s, %s%s TSIH %u%s%s",
				l->discovery ? "discovery" : "normal", l->initiator_name,
				l->discovery ? "" : "target ", l->discovery ? "" : l->tgt->name,
				tsih, conn->header_digest ? ", header digest" : "",
				conn->data_digest ? ", data digest" : "");
	/* tell the host (events.h) about the new I_T nexus and where it comes from (a worker
	 * login's nexus was announced on the home loop, xloop.c). */
	if (!l->discovery && conn->worker == NULL && conn->sess && conn->sess->core)
		scsitgt__event_session(conn->sess->core, SCSITGT_EVENT_SESSION_LOGIN, conn->peer);
	scsitgt__iscsi_login_destroy(conn);
	scsitgt__iscsi_conn_enter_ffp(conn);
	return 0;
}

bool scsitgt__iscsi_login_core_pending(const struct scsitgt__iscsi_conn *conn)
{
	return conn->login != NULL && conn->login->core_wait;
}

void scsitgt__iscsi_login_core_done(struct scsitgt__iscsi_conn *conn, int rc)
{
	struct scsitgt__iscsi_login *l = conn->login;
	bool locked;

	if (l == NULL || !l->core_wait)
		return;
	l->core_wait = false;
	/* Closed meanwhile: the session (with its nexus, if made) ends with the connection. */
	if (conn->state == SCSITGT__CONN_CLOSING)
		return;
	locked = scsitgt__cfg_rdlock(conn->ie->engine);
	if (rc < 0) {
		scsitgt__iscsi_sess_abandon(conn->sess, conn);
		login_fail(conn, login_core_status(rc), NULL, 0);
	} else {
		login_enter_ffp(conn, l->final_flags, l->final_chunk, l->final_len,
				conn->sess->tsih);
	}
	scsitgt__cfg_rdunlock(conn->ie->engine, locked);
}

/* The final Login Response's turn (@flags with T and NSG 3, the last chunk of text): the
 * session, then full feature phase, at once or after a wait (reinstatement, a worker's core
 * nexus). */
static int login_transit_ffp(struct scsitgt__iscsi_conn *conn, uint8_t flags, const uint8_t *chunk,
			     size_t n)
{
	struct scsitgt__iscsi_login *l = conn->login;
	uint16_t tsih = l->tsih;
	int st;

	l->final_flags = flags;
	l->final_chunk = chunk;
	l->final_len = n;
	st = login_finish(conn, &tsih);
	if (st == LOGIN_PENDING) {
		l->reinstate_wait = true;
		return 0;
	}
	if (st)
		return login_fail(conn, (uint16_t)st, NULL, 0);
	if (l->discovery || conn->sess->core)
		return login_enter_ffp(conn, flags, chunk, n, tsih);
	/* A worker's login: the nexus is made on home (xloop.c). */
	l->core_wait = true;
	if (scsitgt__iscsi_xloop_core_create(conn, conn->sess) < 0) {
		l->core_wait = false;
		scsitgt__iscsi_sess_abandon(conn->sess, conn);
		return login_fail(conn, ISCSI_LOGIN_STATUS_NO_RESOURCES, NULL, 0);
	}
	return 0;
}

/* Send the next chunk of the response text; on the last one, perform the stage transition. */
static int login_respond(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_login *l = conn->login;
	const uint8_t *chunk = NULL;
	bool more = false;
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t flags;
	size_t n;

	n = scsitgt__iscsi_textbuf_next_chunk(&l->resp, &chunk, ISCSI_LOGIN_DSL_MAX, &more);
	flags = (uint8_t)(l->resp_csg << ISCSI_LOGIN_CSG_SHIFT);
	if (more) {
		flags |= ISCSI_LOGIN_FLAG_CONTINUE;
		l->resp_pending = true;
	} else {
		l->resp_pending = false;
		if (l->resp_transit) {
			flags |= ISCSI_LOGIN_FLAG_TRANSIT | l->resp_nsg;
			if (l->resp_nsg == ISCSI_STAGE_FFP)
				return login_transit_ffp(conn, flags, chunk, n);
		}
	}
	login_rsp_init(conn, bhs, flags, ISCSI_LOGIN_STATUS_SUCCESS, l->tsih);
	scsitgt__iscsi_conn_send_simple(conn, bhs, chunk, (uint32_t)n, false);
	if (more || !l->resp_transit)
		return 0;
	l->stage = l->resp_nsg;
	return 0;
}

/* The target a login names is still there (it may go between two login PDUs). */
static bool login_tgt_alive(struct scsitgt__iscsi_conn *conn, const struct scsitgt_target *tgt)
{
	return scsitgt__engine_has_target(conn->ie->engine, tgt) && !tgt->destroying;
}

static int login_text(struct scsitgt__iscsi_conn *conn, uint8_t csg, uint8_t nsg, bool transit);

void scsitgt__iscsi_login_reinstate_done(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_login *l = conn->login;
	bool locked;

	if (l == NULL || !l->reinstate_wait)
		return;
	l->reinstate_wait = false;
	if (conn->state == SCSITGT__CONN_CLOSING)
		return;
	locked = scsitgt__cfg_rdlock(conn->ie->engine);
	if (!login_tgt_alive(conn, l->tgt)) {
		login_fail(conn, ISCSI_LOGIN_STATUS_TGT_REMOVED, NULL, 0);
	} else {
		/* Again: another session of the nexus may have come meanwhile, or the old one
		 * left commands in backends (its fence refuses the login, login_finish()). */
		login_transit_ffp(conn, l->final_flags, l->final_chunk, l->final_len);
	}
	scsitgt__cfg_rdunlock(conn->ie->engine, locked);
}

int scsitgt__iscsi_login_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_login *l = conn->login;
	const uint8_t *h = pdu->bhs;
	uint8_t flags = h[ISCSI_BHS_FLAGS];
	bool transit = (flags & ISCSI_LOGIN_FLAG_TRANSIT) != 0;
	bool cont = (flags & ISCSI_LOGIN_FLAG_CONTINUE) != 0;
	uint8_t csg = (flags >> ISCSI_LOGIN_CSG_SHIFT) & ISCSI_LOGIN_STAGE_MASK;
	uint8_t nsg = flags & ISCSI_LOGIN_STAGE_MASK;
	int rc;

	if (l->core_wait || l->redirect_wait || l->reinstate_wait) {
		/* RFC 7143 §6.3: a request before the response to the previous one. */
		scsitgt__iscsi_conn_close(conn, "login request before the login response");
		return -EPROTO;
	}
	if (l->tgt && !login_tgt_alive(conn, l->tgt)) {
		l->tgt = NULL;
		return login_fail(conn, ISCSI_LOGIN_STATUS_TGT_REMOVED, NULL, 0);
	}
	if (!l->started) {
		l->started = true;
		memcpy(l->isid, &h[ISCSI_LOGIN_ISID], 6);
		l->tsih = get_be16(&h[ISCSI_LOGIN_TSIH]);
		l->cid = get_be16(&h[ISCSI_LOGIN_CID]);
		l->cmd_sn = get_be32(&h[ISCSI_BHS_CMDSN]);
		l->stage = csg;
		/* RFC 7143 §11.13.4: the first response starts StatSN; take the initiator's. */
		conn->stat_sn = get_be32(&h[ISCSI_BHS_EXPSTATSN]);
		l->itt = scsitgt__bhs_itt(h);
		/* RFC 7143 §11.12.4: we speak version 0; VersionMin above it cannot work. */
		if (h[ISCSI_LOGIN_VERSION_MIN] > ISCSI_VERSION)
			return login_fail(conn, ISCSI_LOGIN_STATUS_NO_VERSION, NULL, 0);
	} else if (memcmp(l->isid, &h[ISCSI_LOGIN_ISID], 6) != 0 ||
		   l->tsih != get_be16(&h[ISCSI_LOGIN_TSIH]) ||
		   l->cid != get_be16(&h[ISCSI_LOGIN_CID])) {
		l->itt = scsitgt__bhs_itt(h);
		return login_fail(conn, ISCSI_LOGIN_STATUS_INIT_ERR, NULL, 0);
	}
	l->itt = scsitgt__bhs_itt(h);
	l->cmd_sn = get_be32(&h[ISCSI_BHS_CMDSN]);

	/* RFC 7143 §11.12.1-§11.12.3: stage checks. CSG 3 names the Full Feature Phase, never a
	 * login stage (§6.3): such a login could not transit (NSG must exceed CSG). */
	if ((transit && cont) || csg >= 2 || csg != l->stage ||
	    (transit && (nsg == 2 || nsg <= csg)))
		return login_fail(conn, ISCSI_LOGIN_STATUS_INIT_ERR, NULL, 0);

	if (l->resp_pending) {
		/* The initiator asks for the rest of our text with an empty request. */
		if (pdu->data_len)
			return login_fail(conn, ISCSI_LOGIN_STATUS_INIT_ERR, NULL, 0);
		return login_respond(conn);
	}

	rc = scsitgt__iscsi_text_acc_add(&l->acc, pdu->data, pdu->data_len, cont);
	if (rc < 0)
		return login_fail(conn,
				  rc == -ENOMEM ? ISCSI_LOGIN_STATUS_NO_RESOURCES :
						  ISCSI_LOGIN_STATUS_INIT_ERR,
				  NULL, 0);
	if (rc == 0) {
		/* More text follows (C bit): acknowledge with an empty response. */
		uint8_t bhs[ISCSI_BHS_LEN];

		login_rsp_init(conn, bhs, (uint8_t)(csg << ISCSI_LOGIN_CSG_SHIFT),
			       ISCSI_LOGIN_STATUS_SUCCESS, l->tsih);
		return scsitgt__iscsi_conn_send_simple(conn, bhs, NULL, 0, false);
	}
	return login_text(conn, csg, nsg, transit);
}

void scsitgt__iscsi_login_redirect_done(struct scsitgt__iscsi_conn *conn, int verdict,
					const char *addr)
{
	struct scsitgt__iscsi_login *l = conn->login;
	bool locked;

	if (l == NULL || !l->redirect_wait)
		return;
	l->redirect_wait = false;
	if (conn->state == SCSITGT__CONN_CLOSING)
		return;
	l->redirect_asked = true;
	l->redirect_r = verdict;
	snprintf(l->redirect_addr, sizeof(l->redirect_addr), "%s", addr);
	/* The same text again, from where the hook interrupted it. */
	locked = scsitgt__cfg_rdlock(conn->ie->engine);
	login_text(conn, l->pend_csg, l->pend_nsg, l->pend_transit);
	scsitgt__cfg_rdunlock(conn->ie->engine, locked);
}

/* A complete login text (in l->acc) of stage @csg: negotiate, authenticate, answer. */
static int login_text(struct scsitgt__iscsi_conn *conn, uint8_t csg, uint8_t nsg, bool transit)
{
	struct scsitgt__iscsi_login *l = conn->login;
	struct scsitgt__iscsi_chap_keys ck;
	const uint8_t *text;
	size_t len;
	int rc, st;

	text = scsitgt__iscsi_text_acc_data(&l->acc, &len);
	if (!l->have_neg) {
		st = login_setup(conn, text, len);
		if (st == LOGIN_PENDING) {
			l->pend_csg = csg;
			l->pend_nsg = nsg;
			l->pend_transit = transit;
			return 0;
		}
		if (st)
			return login_fail(conn, (uint16_t)st, l->redirect_len ? l->redirect : NULL,
					  l->redirect_len);
	}
	scsitgt__iscsi_neg_set_stage(&conn->neg, csg == ISCSI_STAGE_SECURITY ?
							 SCSITGT__ISCSI_STAGE_SECURITY :
							 SCSITGT__ISCSI_STAGE_OPERATIONAL);
	scsitgt__iscsi_textbuf_reset(&l->resp);
	memset(&ck, 0, sizeof(ck));
	rc = scsitgt__iscsi_neg_text(&conn->neg, text, len, &l->resp,
				     csg == ISCSI_STAGE_SECURITY ? &ck : NULL);
	if (rc == -ENOSPC || rc == -ENOMEM)
		return login_fail(conn, ISCSI_LOGIN_STATUS_TARGET_ERROR, NULL, 0);
	if (rc == -ENOTSUP)
		login_log_digest_refused(conn);
	if (rc < 0)
		return login_fail(conn, ISCSI_LOGIN_STATUS_INIT_ERR, NULL, 0);
	if (csg == ISCSI_STAGE_SECURITY) {
		st = login_auth(conn, &ck, text, len);
		if (st)
			return login_fail(conn, (uint16_t)st, NULL, 0);
	} else if (l->auth_required && !l->authenticated) {
		/* The initiator skipped the security stage of a target that requires CHAP. */
		return login_fail(conn,
				  (uint16_t)login_auth_refuse(l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
							      "no CHAP offered: the initiator "
							      "skipped the security stage and the "
							      "target requires CHAP"),
				  NULL, 0);
	}
	scsitgt__iscsi_text_acc_reset(&l->acc);
	if (scsitgt__iscsi_neg_declare(&conn->neg, &l->resp) < 0)
		return login_fail(conn, ISCSI_LOGIN_STATUS_TARGET_ERROR, NULL, 0);

	l->resp_csg = csg;
	l->resp_nsg = nsg;
	l->resp_transit = transit && !scsitgt__iscsi_neg_pending(&conn->neg);
	if (csg == ISCSI_STAGE_SECURITY && l->resp_transit) {
		/* Leave the security stage only authenticated (or when none is needed). */
		if (l->chap_state == LOGIN_CHAP_WAIT_A || l->chap_state == LOGIN_CHAP_WAIT_R)
			l->resp_transit = false;
		else if (l->auth_required && !l->authenticated)
			return login_fail(
				conn,
				(uint16_t)login_auth_refuse(
					l, ISCSI_LOGIN_STATUS_AUTH_FAILED,
					"no CHAP offered: the initiator left the security "
					"stage unauthenticated and the target requires "
					"CHAP"),
				NULL, 0);
	}
	return login_respond(conn);
}
