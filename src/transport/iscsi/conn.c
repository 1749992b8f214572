/* SPDX-License-Identifier: MIT */
/*
 * iSCSI connections: the receive dispatch by opcode, the connection state machine (login,
 * full feature phase, logged out, closing), NOP-In/NOP-Out both ways, timers (login timeout,
 * idle ping, ping timeout, logout grace) and Reject.
 *
 *   LOGIN --login ok--> FFP --Logout Response sent--> LOGGED_OUT --written--> CLOSING
 *     \-----------------\--(error, timeout, EOF, shutdown)-------------------> CLOSING
 *
 * A closing connection stops reading, aborts the tasks that wait for data or CmdSN order,
 * lets its data mover close (which finishes every queued batch), and is freed when both the
 * data mover and the timer handle are closed; the session ends with its last connection
 * (ERL0, RFC 7143 §7.1.5).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "transport/iscsi/conn.h"

/* "<prefix>: <message>" to @lg. */
static void iscsi_vlog(const struct scsitgt__logger *lg, enum scsitgt_log_level level,
		       const char *prefix, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	scsitgt__log(lg, level, SCSITGT__ISCSI_SUBSYS, "%s: %s", prefix, msg);
}

void scsitgt__iscsi_conn_log(struct scsitgt__iscsi_conn *conn, enum scsitgt_log_level level,
			     const char *fmt, ...)
{
	const struct scsitgt__logger *lg = &conn->ie->engine->log;
	char prefix[128];
	va_list ap;

	if (!scsitgt__log_enabled(lg, level))
		return;
	snprintf(prefix, sizeof(prefix), "conn %llu %s", (unsigned long long)conn->id, conn->peer);
	va_start(ap, fmt);
	iscsi_vlog(lg, level, prefix, fmt, ap);
	va_end(ap);
}

void scsitgt__iscsi_portal_log(const struct scsitgt_portal *portal, enum scsitgt_log_level level,
			       const char *fmt, ...)
{
	const struct scsitgt__logger *lg = &portal->ie->engine->log;
	char prefix[128];
	va_list ap;

	if (!scsitgt__log_enabled(lg, level))
		return;
	snprintf(prefix, sizeof(prefix), "%s%sportal %s:%u", portal->kind ? portal->kind : "",
		 portal->kind ? " " : "", portal->address, portal->port);
	va_start(ap, fmt);
	iscsi_vlog(lg, level, prefix, fmt, ap);
	va_end(ap);
}

static void sockaddr_text(const struct sockaddr *sa, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(buf, size, "%s:%u", host, port);
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(buf, size, "[%s]:%u", host, port);
	} else {
		snprintf(buf, size, "?");
	}
}

static int conn_rx_header(void *arg, struct scsitgt__iscsi_pdu *pdu);
static int conn_rx_pdu(void *arg, struct scsitgt__iscsi_pdu *pdu);

static const struct scsitgt__iscsi_rx_ops conn_rx_ops = {
	.header = conn_rx_header,
	.pdu = conn_rx_pdu,
};

static void conn_timer_cb(uv_timer_t *t);
static void conn_tx_cache_drop(struct scsitgt__iscsi_conn *conn);
static void conn_reject_log_summary(struct scsitgt__iscsi_conn *conn);

static void conn_free_raw(uv_handle_t *h)
{
	free(h->data);
}

int scsitgt__iscsi_conn_create(struct scsitgt__iscsi_conn **out, struct scsitgt_portal *portal,
			       const struct scsitgt__iscsi_dm_ops *dm, void *dm_ctx,
			       const struct sockaddr *peer, const struct sockaddr *local)
{
	return scsitgt__iscsi_conn_create_on(out, portal, NULL, dm, dm_ctx, peer, local);
}

int scsitgt__iscsi_conn_create_on(struct scsitgt__iscsi_conn **out, struct scsitgt_portal *portal,
				  struct scsitgt__iscsi_handoff *h,
				  const struct scsitgt__iscsi_dm_ops *dm, void *dm_ctx,
				  const struct sockaddr *peer, const struct sockaddr *local)
{
	struct scsitgt__iscsi_engine *ie = portal->ie;
	struct scsitgt__iscsi_conn *conn;
	uint32_t login_timeout_ms;
	bool locked;
	int rc;

	conn = calloc(1, sizeof(*conn));
	if (conn == NULL)
		return -ENOMEM;
	conn->ie = ie;
	conn->portal = portal;
	conn->worker = h ? h->w : NULL;
	conn->loop = h ? &h->w->loop : ie->engine->loop;
	conn->dm = dm;
	conn->dm_ctx = dm_ctx;
	conn->state = SCSITGT__CONN_LOGIN;
	sockaddr_text(peer, conn->peer, sizeof(conn->peer));
	if (peer && (peer->sa_family == AF_INET || peer->sa_family == AF_INET6))
		memcpy(&conn->peer_sa, peer,
		       peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						     sizeof(struct sockaddr_in));
	if (local) {
		size_t l = local->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
							  sizeof(struct sockaddr_in);
		memcpy(&conn->local_sa, local, l);
	}
	scsitgt__list_init(&conn->tasks);
	scsitgt__list_init(&conn->sess_node);
	scsitgt__list_init(&conn->tmf_wait);
	/* RFC 7143 §6.2: login PDUs carry at most 8192 bytes of data each. */
	scsitgt__iscsi_rx_init(&conn->rx, &conn_rx_ops, conn, ISCSI_LOGIN_DSL_MAX);
	conn->max_xmit_dsl = ISCSI_LOGIN_DSL_MAX;
	conn->next_ttt = 1;
	rc = uv_timer_init(conn->loop, &conn->timer);
	if (rc < 0) {
		free(conn);
		return rc;
	}
	conn->timer.data = conn;
	conn->refs = 2; /* timer handle + data mover */
	rc = scsitgt__iscsi_login_start(conn);
	if (rc < 0) {
		/* The timer handle must still be closed; the data mover never started. */
		conn->refs = 1;
		conn->state = SCSITGT__CONN_CLOSING;
		conn->freed = true;
		uv_close((uv_handle_t *)&conn->timer, conn_free_raw);
		return rc;
	}
	conn->last_rx = uv_now(conn->loop);
	locked = scsitgt__cfg_rdlock(ie->engine);
	login_timeout_ms = ie->defaults.login_timeout_ms;
	scsitgt__cfg_rdunlock(ie->engine, locked);
	if (login_timeout_ms)
		uv_timer_start(&conn->timer, conn_timer_cb, login_timeout_ms, 0);
	uv_mutex_lock(&ie->lock);
	conn->id = ++ie->next_conn_id;
	scsitgt__list_add_tail(&ie->conns, &conn->node);
	/* A hand-off was counted by the home loop when it accepted (xloop.c). */
	if (h == NULL)
		portal->nconns++;
	portal->nlogin++;
	uv_mutex_unlock(&ie->lock);
	conn->handoff = h;
	conn->login_counted = true;
	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_DEBUG, "connection accepted on portal %s:%u",
				portal->address, portal->port);
	*out = conn;
	return 0;
}

/* The connection no longer counts against the portal's limit of connections in login. */
static void conn_login_uncount(struct scsitgt__iscsi_conn *conn)
{
	if (conn->login_counted) {
		conn->login_counted = false;
		uv_mutex_lock(&conn->ie->lock);
		conn->portal->nlogin--;
		uv_mutex_unlock(&conn->ie->lock);
	}
}

static void conn_free(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt_portal *portal = conn->portal;
	struct scsitgt__iscsi_handoff *h = conn->handoff;

	conn_login_uncount(conn);
	conn_reject_log_summary(conn);
	scsitgt__iscsi_tasks_release(conn);
	scsitgt__iscsi_sn_held_release(conn);
	scsitgt__iscsi_text_reset(conn);
	scsitgt__iscsi_login_destroy(conn);
	if (conn->sess)
		scsitgt__iscsi_sess_conn_gone(conn->sess, conn);
	scsitgt__iscsi_rx_destroy(&conn->rx);
	conn_tx_cache_drop(conn);
	uv_mutex_lock(&conn->ie->lock);
	scsitgt__list_remove(&conn->node);
	uv_mutex_unlock(&conn->ie->lock);
	free(conn);
	if (h)
		scsitgt__iscsi_xloop_conn_gone(h);
	else
		scsitgt__iscsi_portal_conn_gone(portal);
}

static void conn_unref(struct scsitgt__iscsi_conn *conn)
{
	if (--conn->refs == 0)
		conn_free(conn);
}

void scsitgt__iscsi_conn_hold(struct scsitgt__iscsi_conn *conn)
{
	conn->refs++;
}

void scsitgt__iscsi_conn_put(struct scsitgt__iscsi_conn *conn)
{
	conn_unref(conn);
}

static void conn_timer_closed(uv_handle_t *h)
{
	conn_unref(h->data);
}

void scsitgt__iscsi_conn_dm_closed(struct scsitgt__iscsi_conn *conn)
{
	conn_unref(conn);
}

void scsitgt__iscsi_conn_close(struct scsitgt__iscsi_conn *conn, const char *why)
{
	if (conn->state == SCSITGT__CONN_CLOSING)
		return;
	conn->state = SCSITGT__CONN_CLOSING;
	conn->close_reason = why;
	conn->rx.stop = true;
	uv_mutex_lock(&conn->ie->lock);
	conn->listed_closing = true;
	uv_mutex_unlock(&conn->ie->lock);
	scsitgt__iscsi_conn_log(
		conn, conn->sess && !conn->sess->discovery ? SCSITGT_LOG_INFO : SCSITGT_LOG_DEBUG,
		"closing connection: %s", why);
	uv_timer_stop(&conn->timer);
	uv_close((uv_handle_t *)&conn->timer, conn_timer_closed);
	/* Tasks that never reached a backend go now; the rest when their ios return. */
	scsitgt__iscsi_tmf_drop_waiting(conn);
	scsitgt__iscsi_tasks_release(conn);
	scsitgt__iscsi_sn_held_release(conn);
	conn->dm_closing = true;
	conn->dm->close(conn);
}

/* Close @conn on an error of @kind (enum scsitgt_conn_error), telling the host first
 * (::SCSITGT_EVENT_CONNECTION_ERROR) while the nexus is still there to name. */
static void conn_fail(struct scsitgt__iscsi_conn *conn, uint8_t kind, const char *why)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	/* No nexus to name while home is making it for this worker's login (review30 F2). */
	struct scsitgt__session *core =
		sess && !scsitgt__iscsi_login_core_pending(conn) ? sess->core : NULL;

	if (conn->state == SCSITGT__CONN_CLOSING)
		return;
	scsitgt__event_conn_error(conn->ie->engine, core, NULL, conn->peer, kind, why);
	scsitgt__iscsi_conn_close(conn, why);
}

void scsitgt__iscsi_conn_dm_error(struct scsitgt__iscsi_conn *conn, int err)
{
	if (conn->state == SCSITGT__CONN_CLOSING)
		return;
	/* An orderly close (EOF) is no error; a reset or another socket error is. */
	if (err == UV_EOF)
		scsitgt__iscsi_conn_close(conn, "connection closed by the initiator");
	else
		conn_fail(conn, SCSITGT_CONN_ERROR_RESET,
			  err == UV_ECONNRESET ? "connection reset by the initiator" :
						 "connection error");
}

static int conn_rx_result(struct scsitgt__iscsi_conn *conn, ssize_t n)
{
	if (n < 0 && conn->state != SCSITGT__CONN_CLOSING) {
		switch ((int)n) {
		case SCSITGT__RX_EHDIGEST:
			/* RFC 7143 §7.8: a header digest error leaves the PDU boundaries unknown;
			 * the connection must go. */
			conn_fail(conn, SCSITGT_CONN_ERROR_DIGEST, "header digest error");
			break;
		case SCSITGT__RX_EDDIGEST:
			/*
			 * RFC 7143 §7.8 asks for a Reject (Data-Digest-Error) and the PDU to be
			 * discarded. At ErrorRecoveryLevel 0 nothing can resend the lost data (no
			 * SNACK, no recovery R2T), so the command could never finish and its CmdSN
			 * slot would stay taken: we send the Reject for the initiator's diagnosis
			 * and then drop the connection, which is the ERL0 recovery (§7.1.5).
			 */
			scsitgt__iscsi_conn_reject(conn, conn->rx.pdu.bhs,
						   ISCSI_REJECT_DATA_DIGEST);
			conn_fail(conn, SCSITGT_CONN_ERROR_DIGEST, "data digest error");
			break;
		case SCSITGT__RX_ETOOBIG:
			conn_fail(conn, SCSITGT_CONN_ERROR_PROTOCOL,
				  "DataSegmentLength above MaxRecvDataSegmentLength");
			break;
		default:
			conn_fail(conn, SCSITGT_CONN_ERROR_PROTOCOL, "protocol error");
			break;
		}
	}
	return conn->state == SCSITGT__CONN_CLOSING ? -ECONNABORTED : 0;
}

int scsitgt__iscsi_conn_recv(struct scsitgt__iscsi_conn *conn, const uint8_t *data, size_t len)
{
	if (conn->state == SCSITGT__CONN_CLOSING)
		return -ECONNABORTED;
	scsitgt__iscsi_stat_add(&conn->stat_rx_bytes, len);
	return conn_rx_result(conn, scsitgt__iscsi_rx_feed(&conn->rx, data, len));
}

int scsitgt__iscsi_conn_recv_direct(struct scsitgt__iscsi_conn *conn, size_t n)
{
	if (conn->state == SCSITGT__CONN_CLOSING)
		return -ECONNABORTED;
	scsitgt__iscsi_stat_add(&conn->stat_rx_bytes, n);
	return conn_rx_result(conn, scsitgt__iscsi_rx_direct_done(&conn->rx, n));
}

void *scsitgt__iscsi_conn_dm_ctx(const struct scsitgt__iscsi_conn *conn)
{
	return conn->dm_ctx;
}

size_t scsitgt__iscsi_conn_rx_direct(struct scsitgt__iscsi_conn *conn, uint8_t **dst)
{
	return scsitgt__iscsi_rx_direct(&conn->rx, dst);
}

uint32_t scsitgt__iscsi_conn_max_recv_dsl(const struct scsitgt__iscsi_conn *conn)
{
	return conn->rx.max_dsl;
}

uint32_t scsitgt__iscsi_conn_stat_sn(const struct scsitgt__iscsi_conn *conn)
{
	return conn->stat_sn;
}

uint8_t *scsitgt__iscsi_conn_cmd_buf(struct scsitgt__iscsi_conn *conn, uint32_t itt, uint32_t *len)
{
	struct scsitgt__iscsi_task *task = scsitgt__iscsi_task_find(conn, itt);

	if (task == NULL || task->cmd == NULL)
		return NULL;
	*len = task->cmd->xfer_len;
	return task->cmd->buf;
}

void scsitgt__iscsi_conn_fill_sn(struct scsitgt__iscsi_conn *conn, uint8_t *bhs, bool advance)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;

	put_be32(&bhs[ISCSI_BHS_STATSN], conn->stat_sn);
	if (advance)
		conn->stat_sn++;
	if (sess) {
		put_be32(&bhs[ISCSI_BHS_EXPCMDSN], sess->exp_cmd_sn);
		put_be32(&bhs[ISCSI_BHS_MAXCMDSN], sess->max_cmd_sn);
	}
}

/* Capacity of the batches a connection recycles: a read's Data-In + SCSI Response fit. */
#define CONN_TX_CACHE_CAP 4u
/* How many it keeps at most. */
#define CONN_TX_CACHE_MAX 64u

struct scsitgt__iscsi_tx *scsitgt__iscsi_conn_tx_get(struct scsitgt__iscsi_conn *conn,
						     unsigned int cap)
{
	struct scsitgt__iscsi_tx *tx = conn->tx_cache;
	struct iovec *iov;

	if (cap > CONN_TX_CACHE_CAP)
		return scsitgt__iscsi_tx_create(cap);
	if (tx == NULL)
		return scsitgt__iscsi_tx_create(CONN_TX_CACHE_CAP);
	conn->tx_cache = tx->next;
	conn->tx_cache_n--;
	iov = tx->iov;
	memset(tx, 0, sizeof(*tx));
	tx->cap = CONN_TX_CACHE_CAP;
	tx->iov = iov;
	return tx;
}

static void conn_tx_put(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	if (tx->cap != CONN_TX_CACHE_CAP || conn->tx_cache_n >= CONN_TX_CACHE_MAX ||
	    conn->state == SCSITGT__CONN_CLOSING) {
		scsitgt__iscsi_tx_destroy(tx);
		return;
	}
	free(tx->owned);
	tx->owned = NULL;
	tx->next = conn->tx_cache;
	conn->tx_cache = tx;
	conn->tx_cache_n++;
}

static void conn_tx_cache_drop(struct scsitgt__iscsi_conn *conn)
{
	while (conn->tx_cache) {
		struct scsitgt__iscsi_tx *tx = conn->tx_cache;

		conn->tx_cache = tx->next;
		scsitgt__iscsi_tx_destroy(tx);
	}
	conn->tx_cache_n = 0;
}

void scsitgt__iscsi_conn_tx_complete(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx,
				     int status)
{
	bool close_after = tx->close_after;

	conn->tx_pending--;
	if (tx->done)
		tx->done(tx, status);
	conn_tx_put(conn, tx);
	if (close_after && status == 0)
		scsitgt__iscsi_conn_close(conn, conn->state == SCSITGT__CONN_LOGGED_OUT ?
							"logged out" :
							"closed after the last response");
}

void scsitgt__iscsi_conn_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	if (conn->state == SCSITGT__CONN_CLOSING || conn->dm_closing) {
		if (tx->done)
			tx->done(tx, -ECANCELED);
		scsitgt__iscsi_tx_destroy(tx);
		return;
	}
	scsitgt__iscsi_tx_seal(tx, conn->header_digest, conn->data_digest);
	scsitgt__iscsi_stat_add(&conn->stat_tx_pdus, tx->npdus);
	scsitgt__iscsi_stat_add(&conn->stat_tx_bytes, tx->bytes);
	conn->tx_pending++;
	conn->dm->xmit(conn, tx);
}

int scsitgt__iscsi_conn_send_simple(struct scsitgt__iscsi_conn *conn, const uint8_t *bhs,
				    const void *data, uint32_t len, bool close_after)
{
	struct scsitgt__iscsi_tx *tx = scsitgt__iscsi_conn_tx_get(conn, 1);
	uint8_t *copy = NULL;
	uint8_t *h;

	if (tx == NULL)
		return -ENOMEM;
	if (len) {
		copy = malloc(len);
		if (copy == NULL) {
			scsitgt__iscsi_tx_destroy(tx);
			return -ENOMEM;
		}
		memcpy(copy, data, len);
		tx->owned = copy;
	}
	h = scsitgt__iscsi_tx_add(tx, copy, len);
	memcpy(h, bhs, ISCSI_BHS_LEN);
	tx->close_after = close_after;
	scsitgt__iscsi_conn_xmit(conn, tx);
	return 0;
}

/* The Rejects not logged since the last line, as one line. */
static void conn_reject_log_summary(struct scsitgt__iscsi_conn *conn)
{
	if (conn->reject_unlogged == 0)
		return;
	scsitgt__iscsi_conn_log(
		conn, SCSITGT_LOG_NOTICE, "%llu more rejects not logged (at most %u a second are)",
		(unsigned long long)conn->reject_unlogged, SCSITGT__ISCSI_REJECT_LOG_BURST);
	conn->reject_unlogged = 0;
}

/* One NOTICE line per Reject would let an initiator that repeats a rejected PDU (immediate
 * commands over the window, a TMF flood) write the host's log at its own pace. */
static void conn_reject_log(struct scsitgt__iscsi_conn *conn, const uint8_t *bhs, uint8_t reason)
{
	uint64_t now = uv_now(conn->loop);

	if (now - conn->reject_log_start >= SCSITGT__ISCSI_REJECT_LOG_MS) {
		conn_reject_log_summary(conn);
		conn->reject_log_start = now;
		conn->reject_logged = 0;
	}
	if (conn->reject_logged == SCSITGT__ISCSI_REJECT_LOG_BURST) {
		conn->reject_unlogged++;
		return;
	}
	conn->reject_logged++;
	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_NOTICE, "reject %s (reason 0x%02x)",
				scsitgt__iscsi_opcode_name(scsitgt__bhs_opcode(bhs)), reason);
}

void scsitgt__iscsi_conn_reject(struct scsitgt__iscsi_conn *conn, const uint8_t *bhs,
				uint8_t reason)
{
	uint8_t rej[ISCSI_BHS_LEN];

	conn_reject_log(conn, bhs, reason);
	/* RFC 7143 §11.17: the data segment carries the complete header of the bad PDU. */
	scsitgt__bhs_init(rej, ISCSI_OP_REJECT, ISCSI_FLAG_FINAL);
	rej[ISCSI_REJECT_REASON] = reason;
	put_be32(&rej[ISCSI_BHS_ITT], ISCSI_RESERVED_TAG);
	scsitgt__iscsi_conn_fill_sn(conn, rej, true);
	scsitgt__iscsi_conn_send_simple(conn, rej, bhs, ISCSI_BHS_LEN, false);
}

/* RFC 7143 §11.19: an unsolicited NOP-In asks for a NOP-Out echo (TTT != 0xffffffff). */
static void conn_send_ping(struct scsitgt__iscsi_conn *conn)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	conn->nop_ttt = conn->next_ttt++;
	if (conn->nop_ttt == ISCSI_RESERVED_TAG)
		conn->nop_ttt = conn->next_ttt++;
	scsitgt__bhs_init(bhs, ISCSI_OP_NOP_IN, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_TTT], conn->nop_ttt);
	/* StatSN is not advanced by an unsolicited NOP-In (RFC 7143 §11.19.4). */
	scsitgt__iscsi_conn_fill_sn(conn, bhs, false);
	conn->nop_outstanding = true;
	scsitgt__iscsi_conn_send_simple(conn, bhs, NULL, 0, false);
}

/* In full feature phase: the parameters of its session (a connection there has one). */
static const struct scsitgt_iscsi_params *conn_params(struct scsitgt__iscsi_conn *conn)
{
	return conn->sess ? &conn->sess->tparams : &conn->ie->defaults;
}

static void conn_arm_idle(struct scsitgt__iscsi_conn *conn)
{
	const struct scsitgt_iscsi_params *p = conn_params(conn);

	if (p->nop_interval_ms)
		uv_timer_start(&conn->timer, conn_timer_cb, p->nop_interval_ms, 0);
}

static void conn_timer_cb(uv_timer_t *t)
{
	struct scsitgt__iscsi_conn *conn = t->data;
	const struct scsitgt_iscsi_params *p;
	uint64_t now = uv_now(conn->loop);
	uint64_t idle = now - conn->last_rx;

	switch (conn->state) {
	case SCSITGT__CONN_LOGIN:
		conn_fail(conn, SCSITGT_CONN_ERROR_TIMEOUT, "login timeout");
		return;
	case SCSITGT__CONN_LOGGED_OUT:
		conn_fail(conn, SCSITGT_CONN_ERROR_TIMEOUT, "logout response not delivered");
		return;
	case SCSITGT__CONN_CLOSING:
		return;
	case SCSITGT__CONN_FFP:
		break;
	}
	p = conn_params(conn);
	if (conn->async_logout_sent) {
		conn_fail(conn, SCSITGT_CONN_ERROR_TIMEOUT, "initiator did not log out in time");
		return;
	}
	if (conn->nop_outstanding) {
		if (idle >= p->nop_timeout_ms) {
			conn_fail(conn, SCSITGT_CONN_ERROR_TIMEOUT, "NOP-In ping timeout");
			return;
		}
		uv_timer_start(&conn->timer, conn_timer_cb, p->nop_timeout_ms - idle, 0);
		return;
	}
	if (p->nop_interval_ms == 0)
		return;
	if (idle >= p->nop_interval_ms && conn->dm->may_ping && !conn->dm->may_ping(conn)) {
		/* The data mover would hold it (iSER's unexpected-PDU limit): skip this one. */
		uv_timer_start(&conn->timer, conn_timer_cb, p->nop_interval_ms, 0);
		return;
	}
	if (idle >= p->nop_interval_ms) {
		conn_send_ping(conn);
		uv_timer_start(&conn->timer, conn_timer_cb,
			       p->nop_timeout_ms ? p->nop_timeout_ms : 1, 0);
		return;
	}
	uv_timer_start(&conn->timer, conn_timer_cb, p->nop_interval_ms - idle, 0);
}

void scsitgt__iscsi_conn_enter_ffp(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;

	conn->state = SCSITGT__CONN_FFP;
	/* What scsitgt_iscsi_engine_foreach_conn() shows of it from home (stats.c). */
	uv_mutex_lock(&conn->ie->lock);
	conn->listed_ffp = true;
	conn->listed_cid = conn->cid;
	conn->listed_tsih = sess ? sess->tsih : 0;
	conn->listed_discovery = sess ? sess->discovery : false;
	snprintf(conn->listed_target, sizeof(conn->listed_target), "%s",
		 sess && sess->tgt && !sess->discovery ? sess->tgt->name : "");
	uv_mutex_unlock(&conn->ie->lock);
	conn_login_uncount(conn);
	uv_timer_stop(&conn->timer);
	conn->last_rx = uv_now(conn->loop);
	conn_arm_idle(conn);
}

void scsitgt__iscsi_conn_request_logout(struct scsitgt__iscsi_conn *conn)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	uint32_t wait_s;

	if (conn->state != SCSITGT__CONN_FFP || conn->sess == NULL || conn->sess->discovery) {
		scsitgt__iscsi_conn_close(conn, "shutting down");
		return;
	}
	if (conn->async_logout_sent)
		return;
	wait_s = conn->sess->params.default_time2wait;
	if (wait_s < 1)
		wait_s = 1;
	if (wait_s > 5)
		wait_s = 5;
	/* RFC 7143 §11.9.1 AsyncEvent 1: Parameter3 is the time (s) to log out in. */
	scsitgt__bhs_init(bhs, ISCSI_OP_ASYNC_MSG, ISCSI_FLAG_FINAL);
	memset(&bhs[ISCSI_BHS_LUN], 0, 8);
	put_be32(&bhs[ISCSI_BHS_ITT], ISCSI_RESERVED_TAG);
	bhs[ISCSI_ASYNC_EVENT] = ISCSI_ASYNC_REQUEST_LOGOUT;
	put_be16(&bhs[ISCSI_ASYNC_PARAM3], (uint16_t)wait_s);
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	conn->async_logout_sent = true;
	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_INFO, "asking the initiator to log out");
	scsitgt__iscsi_conn_send_simple(conn, bhs, NULL, 0, false);
	/* Grace period: the initiator's time to log out, plus a second for the round trip. */
	uv_timer_start(&conn->timer, conn_timer_cb, (uint64_t)wait_s * 1000 + 1000, 0);
}

/* RFC 7143 §11.18: NOP-Out. */
static int conn_nop_out(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	const uint8_t *h = pdu->bhs;
	uint32_t itt = get_be32(&h[ISCSI_BHS_ITT]);
	uint32_t ttt = get_be32(&h[ISCSI_BHS_TTT]);
	uint8_t bhs[ISCSI_BHS_LEN];

	if (itt == ISCSI_RESERVED_TAG) {
		/* An answer to our ping, or a NOP that wants no answer; must be immediate. */
		if (!scsitgt__bhs_immediate(h)) {
			scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
			return 0;
		}
		if (ttt != ISCSI_RESERVED_TAG && conn->nop_outstanding && ttt == conn->nop_ttt) {
			conn->nop_outstanding = false;
			/* The timer still waits for the ping's timeout: from now on it counts
			 * idleness again, nop_interval_ms (not the grace of an asked logout,
			 * which keeps its own timer). */
			if (!conn->async_logout_sent)
				conn_arm_idle(conn);
		}
		return 0;
	}
	if (ttt != ISCSI_RESERVED_TAG) {
		/* A ping request from the initiator must carry TTT 0xffffffff. */
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	if (conn->sess) {
		enum scsitgt__sn_verdict v = scsitgt__iscsi_sn_check(
			conn->sess, get_be32(&h[ISCSI_BHS_CMDSN]), scsitgt__bhs_immediate(h));

		/* Ahead of ExpCmdSN it was held (conn_ctl_hold()) and comes back in its turn. */
		if (v != SCSITGT__SN_NOW)
			return 0;
		if (!scsitgt__bhs_immediate(h))
			scsitgt__iscsi_sn_advance(conn->sess);
	}
	scsitgt__bhs_init(bhs, ISCSI_OP_NOP_IN, ISCSI_FLAG_FINAL);
	memcpy(&bhs[ISCSI_BHS_LUN], &h[ISCSI_BHS_LUN], 8);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	scsitgt__iscsi_conn_fill_sn(conn, bhs, true);
	/* The ping data is echoed back (RFC 7143 §11.19.2), capped by what the peer accepts. */
	return scsitgt__iscsi_conn_send_simple(
		conn, bhs, pdu->data,
		pdu->data_len < conn->max_xmit_dsl ? pdu->data_len : conn->max_xmit_dsl, false);
}

static int conn_rx_header(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_conn *conn = arg;
	uint8_t op = scsitgt__bhs_opcode(pdu->bhs);

	if (conn->state == SCSITGT__CONN_CLOSING)
		return -ECONNABORTED;
	if (conn->state == SCSITGT__CONN_LOGIN) {
		if (op != ISCSI_OP_LOGIN_REQ)
			pdu->discard = true;
		return 0;
	}
	switch (op) {
	case ISCSI_OP_SCSI_CMD:
		return scsitgt__iscsi_scsi_cmd_header(conn, pdu);
	case ISCSI_OP_DATA_OUT:
		return scsitgt__iscsi_data_out_header(conn, pdu);
	case ISCSI_OP_NOP_OUT:
	case ISCSI_OP_TEXT_REQ:
		return 0;
	default:
		/* Nothing else carries data we use; keep only the header. */
		pdu->discard = true;
		return 0;
	}
}

/* Login and Text Requests read the engine's configuration (under its lock on a worker). A
 * Text Request held for its turn may run from inside another one's (its CmdSN passed, the
 * drain runs what waited): the lock is taken once. */
static int conn_cfg_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu,
			int (*fn)(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu))
{
	bool locked;
	int rc;

	if (conn->cfg_locked)
		return fn(conn, pdu);
	locked = scsitgt__cfg_rdlock(conn->ie->engine);
	conn->cfg_locked = true;
	rc = fn(conn, pdu);
	conn->cfg_locked = false;
	scsitgt__cfg_rdunlock(conn->ie->engine, locked);
	return rc;
}

/* The control PDUs that carry a CmdSN of their own: NOP-Out, TMF, Text and Logout. */
static int conn_ctl_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	switch (scsitgt__bhs_opcode(pdu->bhs)) {
	case ISCSI_OP_NOP_OUT:
		return conn_nop_out(conn, pdu);
	case ISCSI_OP_TMF_REQ:
		return scsitgt__iscsi_tmf_pdu(conn, pdu);
	case ISCSI_OP_TEXT_REQ:
		return conn_cfg_pdu(conn, pdu, scsitgt__iscsi_text_pdu);
	case ISCSI_OP_LOGOUT_REQ:
	default:
		return scsitgt__iscsi_logout_pdu(conn, pdu);
	}
}

/*
 * RFC 7143 §3.2.2.1: "the target MUST deliver [non-immediate commands] in the order specified
 * by CmdSN", every PDU with a CmdSN of its own, not SCSI Commands alone (§4.2.2.1). A
 * non-immediate NOP-Out ping, TMF, Text or Logout ahead of ExpCmdSN in the window is held, as
 * a command there is, and runs when the gap before it fills (scsitgt__iscsi_sn_drain()); it
 * used to be rejected. It holds a window slot meanwhile, as a held command does. Whether it is
 * valid is decided in its turn, by its handler. A NOP-Out with ITT 0xffffffff carries no
 * CmdSN to wait for (its handler rejects it unless immediate). Returns true if held or
 * refused here.
 */
static bool conn_ctl_hold(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu)
{
	const uint8_t *h = pdu->bhs;
	uint8_t op = scsitgt__bhs_opcode(h);
	int rc;

	if (conn->sess == NULL || scsitgt__bhs_immediate(h) ||
	    (op == ISCSI_OP_NOP_OUT && scsitgt__bhs_itt(h) == ISCSI_RESERVED_TAG) ||
	    scsitgt__iscsi_sn_check(conn->sess, get_be32(&h[ISCSI_BHS_CMDSN]), false) !=
		    SCSITGT__SN_LATER)
		return false;
	rc = scsitgt__iscsi_sn_hold_pdu(conn, pdu);
	if (rc < 0) {
		/* Not received (RFC 7143 §7.3): a gap the initiator plugs by sending it again. */
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_NOTICE,
					"PDU 0x%02x with CmdSN %u not held: %s", op,
					get_be32(&h[ISCSI_BHS_CMDSN]),
					rc == -ENOBUFS ? "held data over the limit" : "no memory");
		scsitgt__iscsi_conn_reject(conn, h, ISCSI_REJECT_OUT_OF_RESOURCES);
	}
	return true;
}

void scsitgt__iscsi_conn_run_held(struct scsitgt__iscsi_conn *conn,
				  const struct scsitgt__iscsi_held_pdu *held)
{
	struct scsitgt__iscsi_pdu pdu;
	int rc;

	if (conn->state != SCSITGT__CONN_FFP)
		return;
	memset(&pdu, 0, sizeof(pdu));
	memcpy(pdu.bhs, held->bhs, ISCSI_BHS_LEN);
	pdu.data_len = held->data_len;
	pdu.data = held->data_len ? held->data : NULL;
	rc = conn_ctl_pdu(conn, &pdu);
	/* What a PDU's failure from the wire does (the receiver stops, the connection goes). */
	if (rc < 0)
		scsitgt__iscsi_conn_close(conn, "a held PDU failed in its turn");
}

static int conn_rx_pdu(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_conn *conn = arg;
	uint8_t op = scsitgt__bhs_opcode(pdu->bhs);

	conn->last_rx = uv_now(conn->loop);
	scsitgt__iscsi_stat_add(&conn->stat_rx_pdus, 1);
	if (conn->state == SCSITGT__CONN_CLOSING)
		return -ECONNABORTED;
	if (conn->state == SCSITGT__CONN_LOGIN) {
		if (op != ISCSI_OP_LOGIN_REQ) {
			/* RFC 7143 §6.3: nothing but Login Requests before full feature phase. */
			conn_fail(conn, SCSITGT_CONN_ERROR_PROTOCOL, "non-login PDU during login");
			return -EPROTO;
		}
		return conn_cfg_pdu(conn, pdu, scsitgt__iscsi_login_pdu);
	}
	if (conn->state == SCSITGT__CONN_LOGGED_OUT)
		return 0;
	/* RFC 7143 §11.2.1.2 / §11.17.1: PDUs we do not know or that only targets send. */
	if (!scsitgt__iscsi_opcode_is_initiator(op)) {
		scsitgt__iscsi_conn_reject(conn, pdu->bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	}
	if (conn->async_logout_sent && op != ISCSI_OP_LOGOUT_REQ && op != ISCSI_OP_DATA_OUT &&
	    op != ISCSI_OP_NOP_OUT) {
		scsitgt__iscsi_conn_reject(conn, pdu->bhs, ISCSI_REJECT_WAITING_FOR_LOGOUT);
		return 0;
	}
	switch (op) {
	case ISCSI_OP_NOP_OUT:
	case ISCSI_OP_TMF_REQ:
	case ISCSI_OP_TEXT_REQ:
	case ISCSI_OP_LOGOUT_REQ:
		if (conn_ctl_hold(conn, pdu))
			return 0;
		return conn_ctl_pdu(conn, pdu);
	case ISCSI_OP_SCSI_CMD:
		return scsitgt__iscsi_scsi_cmd_pdu(conn, pdu);
	case ISCSI_OP_DATA_OUT:
		return scsitgt__iscsi_data_out_pdu(conn, pdu);
	case ISCSI_OP_LOGIN_REQ:
		/* RFC 7143 §11.17.1: a Login Request in full feature phase is a protocol error. */
		scsitgt__iscsi_conn_reject(conn, pdu->bhs, ISCSI_REJECT_PROTOCOL_ERROR);
		return 0;
	case ISCSI_OP_SNACK_REQ:
	default:
		/* ERL0: no SNACK support (RFC 7143 §11.16; reason per §11.17.1). */
		scsitgt__iscsi_conn_reject(conn, pdu->bhs, ISCSI_REJECT_CMD_NOT_SUPPORTED);
		return 0;
	}
}
