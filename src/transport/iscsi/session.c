/* SPDX-License-Identifier: MIT */
/*
 * iSCSI sessions at ErrorRecoveryLevel 0: creation with the core I_T nexus, lookup by
 * initiator/ISID/target/portal group/TSIH, closing (reinstatement, target removal), the end of a
 * session whose commands are still in backends (it waits for them, and so does a login that
 * reinstates it, RFC 7143 §6.3.5; past that wait its I_T nexus stays fenced until they have
 * left), and the command window
 * (RFC 7143 §4.2.2.1): ExpCmdSN and MaxCmdSN with RFC 1982 serial arithmetic, and the CmdSNs
 * of the window already taken, by a command or control PDU held for its turn or used up
 * without one (§3.2.2.1, §11.5.1), which ExpCmdSN passes when the gap before them fills.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/shard.h"
#include "core/stats.h"
#include "transport/iscsi/conn.h"

static void sess_shutdown(struct scsitgt__session *core)
{
	scsitgt__iscsi_xloop_sess(core->fabric_ctx, SCSITGT__XOP_SESS_CLOSE, "target removed", 0,
				  0);
}

/* scsitgt_session_kick(): ask for a logout on every connection (AsyncEvent 1), closing
 * each after its grace period if the initiator does not comply. */
static void sess_kick(struct scsitgt__session *core)
{
	scsitgt__iscsi_xloop_sess(core->fabric_ctx, SCSITGT__XOP_SESS_KICK, NULL, 0, 0);
}

void scsitgt__iscsi_sess_kick(struct scsitgt__iscsi_sess *sess)
{
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
	.cmd_after_tmf = scsitgt__iscsi_cmd_after_tmf,
};

/* A TSIH no session of the engine holds (RFC 7143 §11.12.8: never 0). Under ie->lock. */
static uint16_t sess_alloc_tsih(struct scsitgt__iscsi_engine *ie)
{
	for (;;) {
		struct scsitgt__list *pos;
		bool used = false;
		uint16_t t = ++ie->next_tsih;

		if (t == 0)
			continue;
		for (pos = ie->sessions.next; pos != &ie->sessions; pos = pos->next)
			if (scsitgt__container_of(pos, struct scsitgt__iscsi_sess, node)->tsih == t)
				used = true;
		if (!used)
			return t;
	}
}

int scsitgt__iscsi_sess_create(struct scsitgt__iscsi_sess **out, struct scsitgt__iscsi_engine *ie,
			       struct scsitgt__iscsi_conn *conn, struct scsitgt_target *tgt,
			       const uint8_t isid[6], const struct scsitgt__iscsi_session_params *p)
{
	struct scsitgt__iscsi_sess *sess = calloc(1, sizeof(*sess));

	if (sess == NULL)
		return -ENOMEM;
	sess->ie = ie;
	sess->worker = conn->worker;
	sess->tgt = tgt;
	sess->discovery = tgt == NULL;
	sess->tparams = *scsitgt__iscsi_params_for(ie, tgt);
	memcpy(sess->isid, isid, 6);
	sess->params = *p;
	snprintf(sess->initiator_name, sizeof(sess->initiator_name), "%s", p->initiator_name);
	scsitgt__list_init(&sess->conns);
	scsitgt__list_init(&sess->pending);
	scsitgt__list_init(&sess->held);
	scsitgt__list_init(&sess->budget_wait);
	scsitgt__list_init(&sess->reinstate_waiters);
	/* Before it is listed: the portal group tag is part of its I_T nexus (sess_of_nexus). */
	sess->tpgt = conn->portal->tpgt;
	scsitgt__list_add_tail(&sess->conns, &conn->sess_node);
	sess->nconns = 1;
	conn->sess = sess;
	uv_mutex_lock(&ie->lock);
	sess->tsih = sess_alloc_tsih(ie);
	sess->id = ++ie->next_sess_id;
	scsitgt__list_add_tail(&ie->sessions, &sess->node);
	uv_mutex_unlock(&ie->lock);
	*out = sess;
	return 0;
}

void scsitgt__iscsi_nexus_from(struct scsitgt__iscsi_nexus *nx,
			       const struct scsitgt__iscsi_sess *sess,
			       const struct scsitgt__iscsi_conn *conn)
{
	const uint8_t *isid = sess->isid;

	memset(nx, 0, sizeof(*nx));
	/* RFC 7143 §4.2.7.4 / SPC-5 §7.6.4.6: iSCSI port names. */
	snprintf(nx->iport, sizeof(nx->iport), "%s,i,0x%02x%02x%02x%02x%02x%02x",
		 sess->initiator_name, isid[0], isid[1], isid[2], isid[3], isid[4], isid[5]);
	snprintf(nx->tport, sizeof(nx->tport), "%s,t,0x%04x", sess->tgt->name, conn->portal->tpgt);
	nx->tpgt = conn->portal->tpgt;
	/* TCP sends Data-In from any memory; iSER wants registered memory, which lent backend
	 * memory is not (it would cost a copy into the pool instead). */
	nx->lend_data_in = !conn->dm->rdma;
	nx->peer_sa = conn->peer_sa;
}

int scsitgt__iscsi_sess_core_create(struct scsitgt__iscsi_sess *sess,
				    const struct scsitgt__iscsi_nexus *nx)
{
	struct scsitgt__nexus_info info;
	int rc;

	memset(&info, 0, sizeof(info));
	info.protocol_id = SCSITGT__PROTO_ISCSI;
	info.initiator_name = sess->initiator_name;
	info.initiator_port = nx->iport;
	info.target_port = nx->tport;
	info.rel_port_id = nx->tpgt ? nx->tpgt : 1;
	info.tpg_id = nx->tpgt;
	/* address ACLs (core/acl.c). */
	info.initiator_sa = nx->peer_sa.ss_family ? (const struct sockaddr *)&nx->peer_sa : NULL;
	info.lend_data_in = nx->lend_data_in;
	/* Its commands run where its connection does (core/shard.h). */
	info.shard = sess->worker ? sess->worker->index + 1 : 0;
	rc = scsitgt__session_create(&sess->core, sess->tgt, &info, &scsitgt__iscsi_fabric_ops,
				     sess);
	return rc;
}

/* A login waiting for the session it reinstates to be gone (scsitgt__iscsi_sess_reinstate). */
struct reinstate_wait {
	struct scsitgt__msg msg;	  /* to the login's loop from another */
	struct scsitgt__deferred defer;	  /* on the same loop */
	struct scsitgt__list node;	  /* in sess->reinstate_waiters, under ie->lock */
	struct scsitgt__iscsi_conn *conn; /* held until the login heard */
};

/*
 * The I_T nexus of a session that ended while commands of it may still be inside a backend
 * (RFC 7143 §6.3.5, docs/iscsi.md "Session reinstatement"): no login of that nexus enters full
 * feature phase while it is listed (ie->fences, under ie->lock), or a WRITE of the old session
 * could land after a newer one of the new session. Listed from the session's last connection
 * on, before the session leaves ie->sessions, so a login always finds one or the other; it
 * goes on the session's loop once the last of those commands has left its backend or been
 * given up by the engine (scsitgt__tmf_quiesce_fence()'s gone, which the commands' own wait
 * records call: nothing on the path of a command no TMF touched).
 */
struct sess_fence {
	struct scsitgt__list node;
	struct scsitgt__iscsi_engine *ie;
	uint16_t tpgt;
	uint8_t isid[6];
	char initiator_name[SCSITGT__ISCSI_NAME_MAX + 1];
	/* By name: the target may be destroyed and made again while a backend keeps the
	 * commands (a LUN removal that timed out does not give them up), over the same storage. */
	char target_name[SCSITGT__ISCSI_NAME_MAX + 1];
};

/* Listed at once (the session is still listed too). NULL without memory. */
static struct sess_fence *sess_fence_new(struct scsitgt__iscsi_sess *sess)
{
	struct sess_fence *f = malloc(sizeof(*f));

	if (f == NULL)
		return NULL;
	f->ie = sess->ie;
	snprintf(f->target_name, sizeof(f->target_name), "%s", sess->tgt->name);
	f->tpgt = sess->tpgt;
	memcpy(f->isid, sess->isid, 6);
	memcpy(f->initiator_name, sess->initiator_name, sizeof(f->initiator_name));
	uv_mutex_lock(&sess->ie->lock);
	scsitgt__list_add_tail(&sess->ie->fences, &f->node);
	uv_mutex_unlock(&sess->ie->lock);
	return f;
}

/* The session's loop: no command of the former session is in a backend any more. */
static void sess_fence_lifted(void *arg)
{
	struct sess_fence *f = arg;

	uv_mutex_lock(&f->ie->lock);
	scsitgt__list_remove(&f->node);
	uv_mutex_unlock(&f->ie->lock);
	free(f);
}

/*
 * RFC 7143 §4.4.3: a session is named by the initiator's ISID and the target's portal group
 * tag (SSID); through another portal group, the same ISID is another I_T nexus
 * ("iname,i,0xISID" x "tgt,t,0xTPGT", scsitgt__iscsi_nexus_from). Whether the initiator side
 * and portal group of one (@a_iname, @a_isid, @a_tpgt) are those of another; the target is
 * each caller's to compare (a live session by its pointer, a fence by name).
 */
static bool nexus_names_match(const char *a_iname, const uint8_t a_isid[6], uint16_t a_tpgt,
			      const char *iname, const uint8_t isid[6], uint16_t tpgt)
{
	return a_tpgt == tpgt && memcmp(a_isid, isid, 6) == 0 && strcasecmp(a_iname, iname) == 0;
}

/* Under ie->lock. The same I_T nexus as scsitgt__iscsi_sess_of_nexus(), the target by name. */
static const struct sess_fence *sess_fence_find(struct scsitgt__iscsi_engine *ie, const char *iname,
						const uint8_t isid[6],
						const struct scsitgt_target *tgt, uint16_t tpgt)
{
	for (struct scsitgt__list *pos = ie->fences.next; pos != &ie->fences; pos = pos->next) {
		const struct sess_fence *f = scsitgt__container_of(pos, struct sess_fence, node);

		if (nexus_names_match(f->initiator_name, f->isid, f->tpgt, iname, isid, tpgt) &&
		    strcasecmp(f->target_name, tgt->name) == 0)
			return f;
	}
	return NULL;
}

/* The login's loop: the session it waited for is gone. */
static void reinstate_wait_done(struct reinstate_wait *w)
{
	struct scsitgt__iscsi_conn *conn = w->conn;

	free(w);
	scsitgt__iscsi_login_reinstate_done(conn);
	scsitgt__iscsi_conn_put(conn);
}

static void reinstate_wait_fn(struct scsitgt__msg *msg)
{
	reinstate_wait_done(scsitgt__container_of(msg, struct reinstate_wait, msg));
}

static void reinstate_wait_deferred(struct scsitgt__deferred *d)
{
	reinstate_wait_done(scsitgt__container_of(d, struct reinstate_wait, defer));
}

/*
 * @sess leaves the engine's list: no login finds it any more. The logins that wait for it hear
 * on their own loops, and try again: its fence refuses them while its commands are in backends.
 */
static void sess_unlist(struct scsitgt__iscsi_sess *sess)
{
	struct scsitgt__list waiters, *pos, *tmp;

	scsitgt__list_init(&waiters);
	uv_mutex_lock(&sess->ie->lock);
	scsitgt__list_remove(&sess->node);
	scsitgt__list_foreach_safe(pos, tmp, &sess->reinstate_waiters)
	{
		scsitgt__list_remove(pos);
		scsitgt__list_add_tail(&waiters, pos);
	}
	uv_mutex_unlock(&sess->ie->lock);
	scsitgt__list_foreach_safe(pos, tmp, &waiters)
	{
		struct reinstate_wait *w = scsitgt__container_of(pos, struct reinstate_wait, node);

		struct scsitgt__worker *lw = w->conn->worker; /* immutable */

		scsitgt__list_remove(pos);
		/* Never from inside this call: the caller may be the login's own close. */
		if (scsitgt__iscsi_on_loop(sess->ie, lw)) {
			w->defer.fn = reinstate_wait_deferred;
			scsitgt__shard_defer(scsitgt__iscsi_loop_shard(sess->ie, lw), &w->defer);
		} else {
			w->msg.fn = reinstate_wait_fn;
			scsitgt__loop_post(sess->ie->engine, lw, &w->msg);
		}
	}
}

void scsitgt__iscsi_sess_abandon(struct scsitgt__iscsi_sess *sess, struct scsitgt__iscsi_conn *conn)
{
	sess_unlist(sess);
	scsitgt__list_remove(&conn->sess_node);
	conn->sess = NULL;
	free(sess);
}

bool scsitgt__iscsi_sess_of_nexus(const struct scsitgt__iscsi_sess *s, const char *iname,
				  const uint8_t isid[6], const struct scsitgt_target *tgt,
				  uint16_t tpgt)
{
	return !s->discovery && s->tgt == tgt &&
	       nexus_names_match(s->initiator_name, s->isid, s->tpgt, iname, isid, tpgt);
}

struct scsitgt__iscsi_sess *scsitgt__iscsi_sess_find(struct scsitgt__iscsi_engine *ie,
						     const char *initiator, const uint8_t isid[6],
						     struct scsitgt_target *tgt, uint16_t tpgt,
						     uint16_t tsih)
{
	struct scsitgt__list *pos;

	for (pos = ie->sessions.next; pos != &ie->sessions; pos = pos->next) {
		struct scsitgt__iscsi_sess *s =
			scsitgt__container_of(pos, struct scsitgt__iscsi_sess, node);

		if (s->closing || !scsitgt__iscsi_sess_of_nexus(s, initiator, isid, tgt, tpgt))
			continue;
		if (tsih == 0 || s->tsih == tsih)
			return s;
	}
	return NULL;
}

void scsitgt__iscsi_sess_close(struct scsitgt__iscsi_sess *sess, const char *why)
{
	struct scsitgt__list *pos, *tmp;

	uv_mutex_lock(&sess->ie->lock);
	sess->closing = true;
	uv_mutex_unlock(&sess->ie->lock);
	scsitgt__list_foreach_safe(pos, tmp, &sess->conns)
	{
		struct scsitgt__iscsi_conn *c =
			scsitgt__container_of(pos, struct scsitgt__iscsi_conn, sess_node);

		scsitgt__iscsi_conn_close(c, why);
	}
}

/*
 * Close the sessions @match accepts (under ie->lock): those of the calling loop now, after
 * the lock (their connections close asynchronously, so they stay valid meanwhile); those of
 * other loops by message to their own, which finds them again by id (xloop.c).
 */
static void sess_close_matching(struct scsitgt__iscsi_engine *ie,
				bool (*match)(const struct scsitgt__iscsi_sess *s, const void *arg),
				const void *arg, const char *why)
{
	struct scsitgt__iscsi_sess **own = NULL;
	size_t n = 0, cap = 0;
	struct scsitgt__list *pos;

	uv_mutex_lock(&ie->lock);
	for (pos = ie->sessions.next; pos != &ie->sessions; pos = pos->next) {
		struct scsitgt__iscsi_sess *s =
			scsitgt__container_of(pos, struct scsitgt__iscsi_sess, node);

		if (s->closing || !match(s, arg))
			continue;
		if (!scsitgt__iscsi_on_loop(ie, s->worker)) {
			scsitgt__iscsi_xloop_sess(s, SCSITGT__XOP_SESS_CLOSE, why, 0, 0);
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct scsitgt__iscsi_sess **a = realloc(own, ncap * sizeof(*a));

			if (a == NULL)
				continue; /* it stays up; the initiator's own recovery ends it */
			own = a;
			cap = ncap;
		}
		own[n++] = s;
	}
	uv_mutex_unlock(&ie->lock);
	for (size_t i = 0; i < n; i++)
		scsitgt__iscsi_sess_close(own[i], why);
	free(own);
}

struct sess_match_target {
	struct scsitgt_target *tgt;
	const struct scsitgt__iscsi_sess *except;
};

static bool sess_match_target(const struct scsitgt__iscsi_sess *s, const void *arg)
{
	const struct sess_match_target *m = arg;

	return s != m->except && s->tgt == m->tgt;
}

void scsitgt__iscsi_sess_close_target(struct scsitgt__iscsi_engine *ie, struct scsitgt_target *tgt,
				      struct scsitgt__iscsi_sess *except, const char *why)
{
	struct sess_match_target m = { .tgt = tgt, .except = except };

	sess_close_matching(ie, sess_match_target, &m, why);
}

struct sess_match_nexus {
	const char *iname;
	const uint8_t *isid;
	struct scsitgt_target *tgt;
	struct scsitgt__iscsi_conn *conn;
};

static bool sess_match_nexus(const struct scsitgt__iscsi_sess *s, const void *arg)
{
	const struct sess_match_nexus *m = arg;

	if (!scsitgt__iscsi_sess_of_nexus(s, m->iname, m->isid, m->tgt, m->conn->portal->tpgt))
		return false;
	scsitgt__iscsi_conn_log(m->conn, SCSITGT_LOG_INFO, "session reinstatement: closing TSIH %u",
				s->tsih);
	return true;
}

/*
 * RFC 7143 §6.3.5: the old session's tasks end before the new one goes on (SAM-5 I_T nexus
 * loss), or a WRITE of the old one still in a backend could land after a newer WRITE of the
 * new one. The login waits on the old session (any loop's) until it is gone: closed, and its
 * commands out of the backends or left there after logout_timeout_ms (sess_conn_gone).
 * Then, and for a login that finds no session, the nexus's fence refuses it while they are
 * there.
 */
int scsitgt__iscsi_sess_reinstate(struct scsitgt__iscsi_conn *conn, const char *iname,
				  const uint8_t isid[6], struct scsitgt_target *tgt)
{
	struct sess_match_nexus m = { .iname = iname, .isid = isid, .tgt = tgt, .conn = conn };
	struct scsitgt__iscsi_engine *ie = conn->ie;
	struct reinstate_wait *w = malloc(sizeof(*w));
	struct scsitgt__iscsi_sess *old = NULL;
	struct scsitgt__list *pos;

	if (w == NULL)
		return -ENOMEM;
	w->conn = conn;
	uv_mutex_lock(&ie->lock);
	for (pos = ie->sessions.next; pos != &ie->sessions; pos = pos->next) {
		struct scsitgt__iscsi_sess *s =
			scsitgt__container_of(pos, struct scsitgt__iscsi_sess, node);

		if (scsitgt__iscsi_sess_of_nexus(s, iname, isid, tgt, conn->portal->tpgt)) {
			old = s;
			break;
		}
	}
	/* Its loop unlists it under the lock and then tells every waiter (sess_unlist). */
	if (old) {
		scsitgt__iscsi_conn_hold(conn);
		scsitgt__list_add_tail(&old->reinstate_waiters, &w->node);
		if (old->closing)
			scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_INFO,
						"session reinstatement: waiting for TSIH %u to end",
						old->tsih);
	} else if (sess_fence_find(ie, iname, isid, tgt, conn->portal->tpgt)) {
		uv_mutex_unlock(&ie->lock);
		free(w);
		return -EBUSY;
	}
	uv_mutex_unlock(&ie->lock);
	if (old == NULL) {
		free(w);
		return 0;
	}
	sess_close_matching(ie, sess_match_nexus, &m, "session reinstatement");
	return 1;
}

void scsitgt__iscsi_sess_finish(struct scsitgt__iscsi_sess *sess)
{
	struct scsitgt__session *core = sess->core;

	scsitgt__event_session(core, SCSITGT_EVENT_SESSION_LOGOUT, NULL);
	/* A worker session is freed on its own loop, after the messages home posted there
	 * before this: one of them may be a task management batch (core/tmf_xshard.c) whose
	 * unit attention reaches the core's hook, scsitgt__iscsi_async_ua(), with this session,
	 * having checked that the nexus was not leaving just before the store below. The free
	 * goes ahead of the core's detach of the nexus, which must come back home before the
	 * engine can stop that loop. */
	if (sess->worker)
		scsitgt__iscsi_xloop_sess_free(sess);
	else
		free(sess);
	scsitgt__session_destroy(core);
}

static void sess_end(struct scsitgt__iscsi_sess *sess);

static void sess_end_deferred(struct scsitgt__deferred *d)
{
	struct scsitgt__iscsi_sess *sess =
		scsitgt__container_of(d, struct scsitgt__iscsi_sess, end_defer);

	sess_end(sess);
}

/* The quiescence of a closed session's nexus answered: drained (COMPLETE), or its bound
 * passed (REJECTED; also when it could not wait for one for want of memory). From inside the
 * core (the last command's release, which is still listed in the nexus): the session ends in
 * a later turn of its loop. Whether logins may go on is the fence's (sess_fence_lifted()). */
static void sess_quiesced(void *arg, enum scsitgt__tmf_response r)
{
	struct scsitgt__iscsi_sess *sess = arg;
	struct scsitgt__shard *shard = scsitgt__iscsi_loop_shard(sess->ie, sess->worker);

	/* The time actually waited (reviewc N2): the bound, or less if the quiescence ended
	 * without them (no memory to wait). Those still listed in the nexus are those still
	 * held: a command that left its backend has left the nexus too. */
	if (r != SCSITGT__TMF_COMPLETE)
		scsitgt__log(&sess->ie->engine->log, SCSITGT_LOG_WARNING, SCSITGT__ISCSI_SUBSYS,
			     "session TSIH %u: %u commands still in backends after %llu ms "
			     "(bound %u ms), left to them; logins of its I_T nexus are refused "
			     "until they have left",
			     sess->tsih, sess->core->ncmds,
			     (unsigned long long)(uv_now(shard->loop) - sess->quiesce_start),
			     sess->tparams.logout_timeout_ms);
	sess->end_defer.fn = sess_end_deferred;
	scsitgt__shard_defer(shard, &sess->end_defer);
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
	/* Its commands still in backends end first, as for a Logout (logout.c): they are
	 * aborted, and the session stays listed until they leave, at most logout_timeout_ms. A
	 * login of the same nexus waits for that (scsitgt__iscsi_sess_reinstate), and its fence
	 * refuses the next ones while some are still there. Its loop is the nexus's shard, where
	 * its commands live. */
	if (sess->core && !scsitgt__list_empty(&sess->core->cmds) && !sess->quiesced) {
		uv_mutex_lock(&sess->ie->lock);
		sess->closing = true;
		uv_mutex_unlock(&sess->ie->lock);
		scsitgt__log(&sess->ie->engine->log, SCSITGT_LOG_INFO, SCSITGT__ISCSI_SUBSYS,
			     "session TSIH %u: waiting up to %u ms for %u commands in backends",
			     sess->tsih, sess->tparams.logout_timeout_ms, sess->core->ncmds);
		sess->quiesce_start = uv_now(conn->loop);
		scsitgt__iscsi_sess_quiesce(sess, sess_quiesced, sess);
		return;
	}
	/* Drained, or a Logout's quiescence answered already (Response 3 at its bound): what is
	 * left in backends is behind that quiescence's fence, no second wait (reviewd N1). */
	sess_end(sess);
}

void scsitgt__iscsi_sess_quiesce(struct scsitgt__iscsi_sess *sess, scsitgt__tmf_cb cb, void *cb_arg)
{
	struct sess_fence *f = sess_fence_new(sess);

	scsitgt__tmf_quiesce_fence(sess->core, sess->tparams.logout_timeout_ms, cb, cb_arg,
				   f ? sess_fence_lifted : NULL, f);
}

/* The session's last connection is gone and its commands too, or some are left to their
 * backends (its fence stays): it leaves the list, its nexus ends. */
static void sess_end(struct scsitgt__iscsi_sess *sess)
{
	sess_unlist(sess);
	if (sess->core == NULL)
		free(sess);
	else if (scsitgt__iscsi_on_loop(sess->ie, NULL))
		scsitgt__iscsi_sess_finish(sess);
	else
		scsitgt__iscsi_xloop_sess_finish(sess);
}

/* @cmd_sn's word in sess->sn_taken and its bit there: unique within a window (<= WINDOW_MAX),
 * across the wrap of CmdSN too (2^32 is a multiple of WINDOW_MAX). */
static size_t sn_word(uint32_t cmd_sn, uint64_t *bit)
{
	uint32_t i = cmd_sn % SCSITGT__ISCSI_WINDOW_MAX;

	*bit = UINT64_C(1) << (i % 64);
	return i / 64;
}

bool scsitgt__iscsi_sn_is_taken(const struct scsitgt__iscsi_sess *sess, uint32_t cmd_sn)
{
	uint64_t bit;

	return (sess->sn_taken[sn_word(cmd_sn, &bit)] & bit) != 0;
}

enum scsitgt__sn_verdict scsitgt__iscsi_sn_check(const struct scsitgt__iscsi_sess *sess,
						 uint32_t cmd_sn, bool immediate)
{
	/* RFC 7143 §4.2.2.1: the window [ExpCmdSN, MaxCmdSN] holds MaxCmdSN - ExpCmdSN + 1
	 * commands and is empty when MaxCmdSN = ExpCmdSN - 1; a non-immediate command outside it
	 * is silently ignored, even one whose CmdSN equals ExpCmdSN, and so is a duplicate
	 * within it (§3.2.2.1): a CmdSN held or used up already. */
	uint32_t offset = cmd_sn - sess->exp_cmd_sn;
	uint32_t size = sess->max_cmd_sn - sess->exp_cmd_sn + 1;

	if (immediate)
		return SCSITGT__SN_NOW;
	if (offset >= size || scsitgt__iscsi_sn_is_taken(sess, cmd_sn))
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

void scsitgt__iscsi_sn_take(struct scsitgt__iscsi_sess *sess, uint32_t cmd_sn)
{
	uint32_t offset = cmd_sn - sess->exp_cmd_sn;
	uint32_t size = sess->max_cmd_sn - sess->exp_cmd_sn + 1;
	uint64_t bit;
	size_t w;

	/* The window is at most queue_depth <= WINDOW_MAX wide: MaxCmdSN is set from it. */
	if (offset >= size)
		return;
	w = sn_word(cmd_sn, &bit);
	sess->sn_taken[w] |= bit;
}

void scsitgt__iscsi_sn_step(struct scsitgt__iscsi_sess *sess)
{
	uint64_t bit;
	size_t w = sn_word(sess->exp_cmd_sn, &bit);

	/* Its bit is free for the CmdSN WINDOW_MAX further on. */
	sess->sn_taken[w] &= ~bit;
	sess->exp_cmd_sn++;
	scsitgt__iscsi_sess_update_window(sess);
}

/* @cmd_sn is free again: a held PDU about to run there checks in as the expected one. */
static void sn_untake(struct scsitgt__iscsi_sess *sess, uint32_t cmd_sn)
{
	uint64_t bit;
	size_t w = sn_word(cmd_sn, &bit);

	sess->sn_taken[w] &= ~bit;
}

/* @held leaves the session's list and gives back its window slot and its data's share. */
static void held_unlink(struct scsitgt__iscsi_sess *sess, struct scsitgt__iscsi_held_pdu *held)
{
	scsitgt__list_remove(&held->node);
	sess->held_bytes -= held->data_len;
	sess->active--;
	scsitgt__iscsi_sess_update_window(sess);
}

int scsitgt__iscsi_sn_hold_pdu(struct scsitgt__iscsi_conn *conn,
			       const struct scsitgt__iscsi_pdu *pdu)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	uint64_t max = sess->tparams.max_write_buffer_bytes;
	uint32_t len = pdu->data ? pdu->data_len : 0;
	struct scsitgt__iscsi_held_pdu *held;
	struct scsitgt__list *pos;

	/* At most one per window slot, as held commands; their data at most what the session
	 * may hold of write buffers (one PDU always fits, as one command's buffer does). */
	if (max && sess->held_bytes && sess->held_bytes + len > max)
		return -ENOBUFS;
	held = malloc(sizeof(*held) + len);
	if (held == NULL)
		return -ENOMEM;
	held->conn = conn;
	held->cmd_sn = get_be32(&pdu->bhs[ISCSI_BHS_CMDSN]);
	held->data_len = len;
	memcpy(held->bhs, pdu->bhs, ISCSI_BHS_LEN);
	if (len)
		memcpy(held->data, pdu->data, len);
	pos = sess->held.next;
	while (pos != &sess->held &&
	       !scsitgt__sn_gt(
		       scsitgt__container_of(pos, struct scsitgt__iscsi_held_pdu, node)->cmd_sn,
		       held->cmd_sn))
		pos = pos->next;
	scsitgt__list_add_tail(pos, &held->node); /* before pos: the list is a ring */
	sess->held_bytes += len;
	sess->active++;
	scsitgt__iscsi_sess_update_window(sess);
	/* Its CmdSN is taken: a duplicate is ignored. */
	scsitgt__iscsi_sn_take(sess, held->cmd_sn);
	return 0;
}

void scsitgt__iscsi_sn_held_release(struct scsitgt__iscsi_conn *conn)
{
	struct scsitgt__iscsi_sess *sess = conn->sess;
	struct scsitgt__list *pos, *tmp;

	if (sess == NULL)
		return;
	scsitgt__list_foreach_safe(pos, tmp, &sess->held)
	{
		struct scsitgt__iscsi_held_pdu *h =
			scsitgt__container_of(pos, struct scsitgt__iscsi_held_pdu, node);

		if (h->conn != conn)
			continue;
		held_unlink(sess, h);
		free(h);
	}
}

/*
 * The PDU held at ExpCmdSN, if any: a SCSI command (*@task) or a control PDU (*@held).
 */
static bool sn_next_held(struct scsitgt__iscsi_sess *sess, struct scsitgt__iscsi_task **task,
			 struct scsitgt__iscsi_held_pdu **held)
{
	*task = NULL;
	*held = NULL;
	if (!scsitgt__list_empty(&sess->pending)) {
		struct scsitgt__iscsi_task *t = scsitgt__container_of(
			sess->pending.next, struct scsitgt__iscsi_task, sn_node);

		if (t->cmd_sn == sess->exp_cmd_sn)
			*task = t;
	}
	if (*task == NULL && !scsitgt__list_empty(&sess->held)) {
		struct scsitgt__iscsi_held_pdu *h = scsitgt__container_of(
			sess->held.next, struct scsitgt__iscsi_held_pdu, node);

		if (h->cmd_sn == sess->exp_cmd_sn)
			*held = h;
	}
	return *task || *held;
}

/*
 * One drain at a time: what runs from it (a held PDU's handler, which passes its own CmdSN
 * and drains) leaves the rest to the loop here, which re-reads the session each turn. So a
 * run of held NOP-Outs does not nest one call per PDU on the stack.
 */
void scsitgt__iscsi_sn_drain(struct scsitgt__iscsi_sess *sess)
{
	if (sess->draining)
		return;
	sess->draining = true;
	while (!sess->sn_busy) {
		struct scsitgt__iscsi_task *t;
		struct scsitgt__iscsi_held_pdu *h;

		if (sn_next_held(sess, &t, &h) && t) {
			/* Re-read each turn: running it may abort others held (PREEMPT AND
			 * ABORT), which leave pending and leave their CmdSNs used up. */
			scsitgt__list_remove(&t->sn_node);
			scsitgt__iscsi_sn_step(sess);
			scsitgt__iscsi_task_ordered(t);
		} else if (h) {
			/* Its handler finds it expected and passes it (or rejects it, and its
			 * CmdSN is a gap again, RFC 7143 §7.3). */
			struct scsitgt__iscsi_conn *conn = h->conn;

			held_unlink(sess, h);
			sn_untake(sess, h->cmd_sn);
			scsitgt__iscsi_conn_run_held(conn, h);
			free(h);
			/* A Logout ended it: nothing after it runs (RFC 7143 §11.14). */
			if (conn->state != SCSITGT__CONN_FFP)
				break;
		} else if (scsitgt__iscsi_sn_is_taken(sess, sess->exp_cmd_sn)) {
			/* Used up with no command to run (RFC 7143 §11.5.1 b, aborted ones). */
			scsitgt__iscsi_sn_step(sess);
		} else {
			break;
		}
	}
	sess->draining = false;
}

void scsitgt__iscsi_sn_advance(struct scsitgt__iscsi_sess *sess)
{
	scsitgt__iscsi_sn_step(sess);
	scsitgt__iscsi_sn_drain(sess);
}
