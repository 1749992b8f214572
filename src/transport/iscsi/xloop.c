/* SPDX-License-Identifier: MIT */
/*
 * iSCSI/TCP connections that live on a worker loop end to end (engine->conn_workers, the
 * default with workers, docs/threading.md): what crosses between loops.
 *
 * The home loop accepts, counts the connection in its portal, places it on the least-loaded
 * worker and hands the socket over (a duplicate descriptor in a message): the worker opens it
 * on its own loop (uv_tcp_open), and from then on the connection's receive and parse, login
 * and text negotiation, CmdSN window, R2T/Data-In, commands and responses run there, the same
 * code as on the home loop (conn->loop). A session lives on the loop of its connection
 * (one connection per session: MaxConnections is 1, portal.c refuses more).
 *
 * What one loop asks of another goes by message (core/worker.h), naming its object by
 * what outlives it (a session's id, looked up again under ie->lock on arrival), never by a
 * pointer another loop may free meanwhile:
 *
 *   home -> worker: HANDOFF (a socket), PORTAL_STOP (ask the portal's connections to log
 *                   out), SESS (close, kick or announce a unit attention to a session),
 *                   CORE_DONE (the core nexus a login asked for), SESS_FREE (a finished
 *                   session, freed after what home posted before it)
 *   worker -> home: CORE_CREATE (a login's core nexus: the core's registries of sessions,
 *                   reservations and unit attentions are home's), SESS_FINISH (the nexus is
 *                   over: its event and destruction), CONN_GONE (the portal slot and the
 *                   worker placement of a closed connection), events (core/events.c)
 *   worker -> worker: SESS (reinstatement of a session of another worker, TARGET COLD RESET)
 *
 * Login on a worker reads the engine's configuration under engine->cfg_lock (read), which
 * the management calls take for write (core.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/shard.h"
#include "core/stats.h"
#include "transport/iscsi/conn.h"

bool scsitgt__iscsi_on_loop(const struct scsitgt__iscsi_engine *ie, const struct scsitgt__worker *w)
{
	return scsitgt__worker_is_self(ie->engine, w);
}

struct scsitgt__shard *scsitgt__iscsi_loop_shard(const struct scsitgt__iscsi_engine *ie,
						 const struct scsitgt__worker *w)
{
	return &ie->engine->shards[w ? w->index + 1 : 0];
}

/* ---- accepted sockets ---- */

static void handoff_fn(struct scsitgt__msg *msg)
{
	scsitgt__iscsi_tcp_adopt_here(
		scsitgt__container_of(msg, struct scsitgt__iscsi_handoff, msg));
}

int scsitgt__iscsi_xloop_adopt(struct scsitgt_portal *portal, uv_os_sock_t fd,
			       const struct sockaddr_storage *peer,
			       const struct sockaddr_storage *local)
{
	struct scsitgt__iscsi_engine *ie = portal->ie;
	struct scsitgt__iscsi_handoff *h = calloc(1, sizeof(*h));
	int rc;

	if (h == NULL)
		return -ENOMEM;
	/* The worker's own descriptor; the caller closes the one it accepted. */
	h->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (h->fd < 0) {
		rc = -errno;
		free(h);
		return rc;
	}
	h->portal = portal;
	h->peer = *peer;
	h->local = *local;
	h->w = scsitgt__worker_pick(ie->engine);
	/* Counted now: the portal stays until the worker gives the slot back. */
	uv_mutex_lock(&ie->lock);
	portal->nconns++;
	uv_mutex_unlock(&ie->lock);
	h->msg.fn = handoff_fn;
	scsitgt__worker_post(h->w, &h->msg);
	return 0;
}

static void conn_gone_fn(struct scsitgt__msg *msg)
{
	struct scsitgt__iscsi_handoff *h =
		scsitgt__container_of(msg, struct scsitgt__iscsi_handoff, msg);

	scsitgt__worker_unpick(h->w);
	scsitgt__iscsi_portal_conn_gone(h->portal);
	free(h);
}

void scsitgt__iscsi_xloop_conn_gone(struct scsitgt__iscsi_handoff *h)
{
	h->msg.fn = conn_gone_fn;
	scsitgt__engine_post(h->portal->ie->engine, &h->msg);
}

int scsitgt__iscsi_portal_place(struct scsitgt_portal *portal, struct scsitgt__iscsi_handoff **out,
				struct scsitgt__worker **w)
{
	struct scsitgt__iscsi_engine *ie = portal->ie;
	struct scsitgt__iscsi_handoff *h;

	*out = NULL;
	*w = NULL;
	if (!ie->engine->conn_workers)
		return 0;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->fd = -1; /* the data mover brings its own transport (iSER: an rdma_cm id) */
	h->portal = portal;
	h->w = scsitgt__worker_pick(ie->engine);
	uv_mutex_lock(&ie->lock);
	portal->nconns++;
	uv_mutex_unlock(&ie->lock);
	*out = h;
	*w = h->w;
	return 0;
}

void scsitgt__iscsi_handoff_drop(struct scsitgt__iscsi_handoff *h)
{
	scsitgt__iscsi_xloop_conn_gone(h);
}

/* ---- portal stop ---- */

struct xportal {
	struct scsitgt__msg msg;
	struct scsitgt_portal *portal;
	struct scsitgt__worker *w;
};

/* Ask this loop's connections of @portal to log out (outside ie->lock: that may close them;
 * they close asynchronously, so the pointers stay valid here). */
static void portal_stop_here(struct scsitgt_portal *portal, struct scsitgt__worker *w)
{
	struct scsitgt__iscsi_engine *ie = portal->ie;
	struct scsitgt__iscsi_conn **own = NULL;
	size_t n = 0, cap = 0;
	struct scsitgt__list *pos;

	uv_mutex_lock(&ie->lock);
	for (pos = ie->conns.next; pos != &ie->conns; pos = pos->next) {
		struct scsitgt__iscsi_conn *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_conn, node);

		if (c->portal != portal || c->worker != w)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct scsitgt__iscsi_conn **a = realloc(own, ncap * sizeof(*a));

			if (a == NULL)
				continue; /* its idle timeout or the initiator ends it */
			own = a;
			cap = ncap;
		}
		own[n++] = c;
	}
	uv_mutex_unlock(&ie->lock);
	for (size_t i = 0; i < n; i++)
		scsitgt__iscsi_conn_request_logout(own[i]);
	free(own);
}

/* Home again: the stop message no longer holds the portal. */
static void portal_stop_done_fn(struct scsitgt__msg *msg)
{
	struct xportal *m = scsitgt__container_of(msg, struct xportal, msg);

	scsitgt__iscsi_portal_conn_gone(m->portal);
	free(m);
}

static void portal_stop_fn(struct scsitgt__msg *msg)
{
	struct xportal *m = scsitgt__container_of(msg, struct xportal, msg);

	portal_stop_here(m->portal, m->w);
	m->msg.fn = portal_stop_done_fn;
	scsitgt__engine_post(m->portal->ie->engine, &m->msg);
}

void scsitgt__iscsi_xloop_portal_stop(struct scsitgt_portal *portal)
{
	struct scsitgt_engine *engine = portal->ie->engine;

	portal_stop_here(portal, NULL);
	if (!engine->conn_workers)
		return;
	/*
	 * Each message holds the portal as a connection does (nconns) until it is back home:
	 * a portal without connections would otherwise be freed before a worker reads it.
	 */
	for (unsigned int i = 0; i < engine->nworkers; i++) {
		struct xportal *m = malloc(sizeof(*m));

		if (m == NULL) {
			scsitgt__iscsi_portal_log(portal, SCSITGT_LOG_WARNING,
						  "cannot ask the connections of worker %u to log "
						  "out: out of memory",
						  i);
			continue;
		}
		m->msg.fn = portal_stop_fn;
		m->portal = portal;
		m->w = &engine->workers[i];
		uv_mutex_lock(&portal->ie->lock);
		portal->nconns++;
		uv_mutex_unlock(&portal->ie->lock);
		scsitgt__worker_post(m->w, &m->msg);
	}
}

/* ---- sessions ---- */

struct xsess {
	struct scsitgt__msg msg;
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt__worker *w;
	uint64_t sess_id;
	enum scsitgt__iscsi_xop op;
	const char *why; /* a string literal */
	uint64_t lun_id;
	uint16_t reason;
};

static void sess_op_run(struct scsitgt__iscsi_sess *sess, enum scsitgt__iscsi_xop op,
			const char *why, uint64_t lun_id, uint16_t reason)
{
	switch (op) {
	case SCSITGT__XOP_SESS_CLOSE:
		scsitgt__iscsi_sess_close(sess, why);
		break;
	case SCSITGT__XOP_SESS_KICK:
		scsitgt__iscsi_sess_kick(sess);
		break;
	case SCSITGT__XOP_SESS_UA:
		scsitgt__iscsi_async_ua_here(sess, lun_id, (enum scsitgt__sense_reason)reason);
		break;
	}
}

static void sess_op_fn(struct scsitgt__msg *msg)
{
	struct xsess *m = scsitgt__container_of(msg, struct xsess, msg);
	struct scsitgt__iscsi_sess *sess = NULL;
	struct scsitgt__list *pos;

	/*
	 * Still there? Only this loop removes its sessions, so it stays valid after unlock. By
	 * id, never by TSIH: the session may be gone and its TSIH given to a new session of this
	 * loop since the message was posted (a close or a unit attention meant for the old one).
	 */
	uv_mutex_lock(&m->ie->lock);
	for (pos = m->ie->sessions.next; pos != &m->ie->sessions; pos = pos->next) {
		struct scsitgt__iscsi_sess *s =
			scsitgt__container_of(pos, struct scsitgt__iscsi_sess, node);

		if (s->id == m->sess_id && s->worker == m->w) {
			sess = s;
			break;
		}
	}
	uv_mutex_unlock(&m->ie->lock);
	if (sess)
		sess_op_run(sess, m->op, m->why, m->lun_id, m->reason);
	free(m);
}

void scsitgt__iscsi_xloop_sess(struct scsitgt__iscsi_sess *sess, enum scsitgt__iscsi_xop op,
			       const char *why, uint64_t lun_id, uint16_t reason)
{
	struct xsess *m;

	if (sess == NULL)
		return;
	if (scsitgt__iscsi_on_loop(sess->ie, sess->worker)) {
		sess_op_run(sess, op, why, lun_id, reason);
		return;
	}
	m = malloc(sizeof(*m));
	if (m == NULL) {
		scsitgt__log(&sess->ie->engine->log, SCSITGT_LOG_WARNING, SCSITGT__ISCSI_SUBSYS,
			     "session TSIH %u: out of memory, a %s request to its worker is lost",
			     sess->tsih, op == SCSITGT__XOP_SESS_UA ? "unit attention" : "close");
		return;
	}
	m->msg.fn = sess_op_fn;
	m->ie = sess->ie;
	m->w = sess->worker;
	m->sess_id = sess->id;
	m->op = op;
	m->why = why;
	m->lun_id = lun_id;
	m->reason = reason;
	scsitgt__loop_post(sess->ie->engine, sess->worker, &m->msg);
}

/* ---- a worker login's core nexus, made and ended on the home loop ---- */

struct xcore {
	struct scsitgt__msg msg;
	struct scsitgt__iscsi_conn *conn; /* held until CORE_DONE ran */
	struct scsitgt__iscsi_sess *sess;
	struct scsitgt__iscsi_nexus nx;
	char peer[80];
	int rc;
};

static void core_done_fn(struct scsitgt__msg *msg)
{
	struct xcore *m = scsitgt__container_of(msg, struct xcore, msg);
	struct scsitgt__iscsi_conn *conn = m->conn;
	int rc = m->rc;

	free(m);
	scsitgt__iscsi_login_core_done(conn, rc);
	scsitgt__iscsi_conn_put(conn);
}

static void core_create_fn(struct scsitgt__msg *msg)
{
	struct xcore *m = scsitgt__container_of(msg, struct xcore, msg);

	/* The login found its target under the configuration lock, but home may have
	 * destroyed it since (a login is no nexus yet: the target does not wait for it). */
	if (scsitgt__engine_has_target(m->sess->ie->engine, m->sess->tgt))
		m->rc = scsitgt__iscsi_sess_core_create(m->sess, &m->nx);
	else
		m->rc = -ESHUTDOWN;
	/* The host hears of the nexus on its loop (events.h). */
	if (m->rc == 0)
		scsitgt__event_session(m->sess->core, SCSITGT_EVENT_SESSION_LOGIN, m->peer);
	m->msg.fn = core_done_fn;
	scsitgt__worker_post(m->sess->worker, &m->msg);
}

int scsitgt__iscsi_xloop_core_create(struct scsitgt__iscsi_conn *conn,
				     struct scsitgt__iscsi_sess *sess)
{
	struct xcore *m = malloc(sizeof(*m));

	if (m == NULL)
		return -ENOMEM;
	m->msg.fn = core_create_fn;
	m->conn = conn;
	m->sess = sess;
	scsitgt__iscsi_nexus_from(&m->nx, sess, conn);
	memcpy(m->peer, conn->peer, sizeof(m->peer));
	m->rc = 0;
	scsitgt__iscsi_conn_hold(conn);
	scsitgt__engine_post(conn->ie->engine, &m->msg);
	return 0;
}

static void sess_finish_fn(struct scsitgt__msg *msg)
{
	scsitgt__iscsi_sess_finish(
		scsitgt__container_of(msg, struct scsitgt__iscsi_sess, finish_msg));
}

void scsitgt__iscsi_xloop_sess_finish(struct scsitgt__iscsi_sess *sess)
{
	sess->finish_msg.fn = sess_finish_fn;
	scsitgt__engine_post(sess->ie->engine, &sess->finish_msg);
}

static void sess_free_fn(struct scsitgt__msg *msg)
{
	free(scsitgt__container_of(msg, struct scsitgt__iscsi_sess, finish_msg));
}

void scsitgt__iscsi_xloop_sess_free(struct scsitgt__iscsi_sess *sess)
{
	/* finish_msg came home and ran: free for the way back. */
	sess->finish_msg.fn = sess_free_fn;
	scsitgt__worker_post(sess->worker, &sess->finish_msg);
}

/* ---- the host's redirect hook, on the home loop ---- */

struct xredirect {
	struct scsitgt__msg msg;
	struct scsitgt__iscsi_conn *conn; /* held until the verdict ran */
	struct scsitgt_target *tgt;	  /* compared only, until found among the targets */
	int verdict;
	char iname[SCSITGT__ISCSI_NAME_MAX + 1];
	char addr[256];
};

static void redirect_done_fn(struct scsitgt__msg *msg)
{
	struct xredirect *m = scsitgt__container_of(msg, struct xredirect, msg);
	struct scsitgt__iscsi_conn *conn = m->conn;

	scsitgt__iscsi_login_redirect_done(conn, m->verdict, m->addr);
	free(m);
	scsitgt__iscsi_conn_put(conn);
}

static void redirect_ask_fn(struct scsitgt__msg *msg)
{
	struct xredirect *m = scsitgt__container_of(msg, struct xredirect, msg);
	struct scsitgt_engine *engine = m->conn->ie->engine;
	struct scsitgt__iscsi_target *it = NULL;

	/* The target may have gone since the login found it: then nothing redirects. */
	for (struct scsitgt__list *pos = engine->targets.next; pos != &engine->targets;
	     pos = pos->next)
		if (scsitgt__container_of(pos, struct scsitgt_target, node) == m->tgt &&
		    !m->tgt->destroying)
			it = scsitgt__iscsi_target_get(m->tgt, false);
	m->verdict = SCSITGT_ISCSI_REDIRECT_NONE;
	if (it && it->redirect_cb) {
		m->verdict = it->redirect_cb(it->redirect_arg, m->tgt, m->iname, m->addr,
					     sizeof(m->addr));
		m->addr[sizeof(m->addr) - 1] = '\0';
	}
	m->msg.fn = redirect_done_fn;
	scsitgt__worker_post(m->conn->worker, &m->msg);
}

int scsitgt__iscsi_xloop_redirect(struct scsitgt__iscsi_conn *conn, struct scsitgt_target *tgt,
				  const char *iname)
{
	struct xredirect *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return -ENOMEM;
	m->msg.fn = redirect_ask_fn;
	m->conn = conn;
	m->tgt = tgt;
	snprintf(m->iname, sizeof(m->iname), "%s", iname);
	scsitgt__iscsi_conn_hold(conn);
	scsitgt__engine_post(conn->ie->engine, &m->msg);
	return 0;
}
