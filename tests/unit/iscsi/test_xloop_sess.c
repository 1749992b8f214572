/* SPDX-License-Identifier: MIT */
/*
 * A message from one loop to a session on another (xloop.c: close, kick, unit attention)
 * names the session by something no later session reuses. The TSIH does not qualify: it is
 * 16 bits and a new session may get the TSIH of one that is gone (RFC 7143 §11.12). Here a
 * close is posted from home for a discovery session of the worker; before the worker runs
 * it, that session ends and a new one of the same worker gets its TSIH. The stale close must
 * be dropped (the new session stays up), and a close posted for the new session must still
 * reach it. Part of the TSan suite's unit tests (two threads: home and one worker).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../support/conn_workers_env.h"
#include "core/core.h"
#include "core/worker.h"
#include "transport/iscsi/conn.h"

#include "listener_portal.h"

#define T_INITIATOR "iqn.2026-12.org.libscsitgt:xloop-initiator"

/* One connection on the worker, with its fake data mover. */
struct fake_conn {
	struct scsitgt__iscsi_handoff *h;
	struct scsitgt__worker *w;
	struct scsitgt__iscsi_conn *conn;
	atomic_bool closed; /* the data mover was told to close */
};

/* A step run on the worker by message; home waits for done. */
struct step {
	struct scsitgt__msg msg;
	struct scsitgt_engine *engine;
	struct scsitgt_portal *portal;
	struct fake_conn *fc;
	uv_sem_t *started; /* block: posted once running */
	uv_sem_t *go;	   /* block: waited for before the step's work */
	/* What the worker saw (read on home once done is set). */
	struct scsitgt__iscsi_sess *sess;
	uint16_t tsih;
	bool in_ffp;
	bool fc_closed;
	atomic_bool done;
	struct scsitgt__msg wake;
};

static void wake_fn(struct scsitgt__msg *msg)
{
	(void)msg;
}

static void step_done(struct step *s)
{
	atomic_store(&s->done, true);
	s->wake.fn = wake_fn;
	scsitgt__engine_post(s->engine, &s->wake);
}

static void fake_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	scsitgt__iscsi_conn_tx_complete(conn, tx, 0);
}

static void fake_close(struct scsitgt__iscsi_conn *conn)
{
	struct fake_conn *fc = scsitgt__iscsi_conn_dm_ctx(conn);

	atomic_store(&fc->closed, true);
	scsitgt__iscsi_conn_dm_closed(conn);
}

static const struct scsitgt__iscsi_dm_ops fake_dm_ops = {
	.name = "xloop-test",
	.xmit = fake_xmit,
	.close = fake_close,
};

/* Feed @conn one login PDU asking for a discovery session straight to full feature phase. */
static void discovery_login(struct scsitgt__iscsi_conn *conn)
{
	static const char keys[] = "InitiatorName=" T_INITIATOR "\0SessionType=Discovery\0"
				   "HeaderDigest=None\0DataDigest=None\0DefaultTime2Wait=2\0"
				   "DefaultTime2Retain=0\0ErrorRecoveryLevel=0\0"
				   "MaxRecvDataSegmentLength=8192";
	static const uint8_t isid[6] = { 0x80, 0x12, 0x34, 0x56, 0x00, 0x02 };
	struct scsitgt__iscsi_tx *tx = scsitgt__iscsi_tx_create(1);
	uint8_t *bhs;

	if (tx == NULL)
		return; /* home sees no session */
	bhs = scsitgt__iscsi_tx_add(tx, keys, sizeof(keys));
	scsitgt__bhs_init(bhs, ISCSI_OP_LOGIN_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3);
	memcpy(&bhs[ISCSI_LOGIN_ISID], isid, 6);
	put_be32(&bhs[ISCSI_BHS_ITT], 1);
	put_be32(&bhs[ISCSI_BHS_CMDSN], 1);
	scsitgt__iscsi_tx_seal(tx, false, false);
	for (int i = 0; i < tx->iovcnt; i++)
		scsitgt__iscsi_conn_recv(conn, tx->iov[i].iov_base, tx->iov[i].iov_len);
	scsitgt__iscsi_tx_destroy(tx);
}

/* On the worker: a connection on its placement, logged in to a discovery session. */
static void login_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);
	struct fake_conn *fc = s->fc;

	/* No cmocka assertion off the test's thread: home checks what is recorded. */
	if (scsitgt__iscsi_conn_create_on(&fc->conn, s->portal, fc->h, &fake_dm_ops, fc, NULL,
					  NULL) == 0) {
		discovery_login(fc->conn);
		s->in_ffp = fc->conn->state == SCSITGT__CONN_FFP;
		s->sess = fc->conn->sess;
		s->tsih = s->sess ? s->sess->tsih : 0;
	}
	step_done(s);
}

/* On the worker: wait until home posted what must queue behind, then close the connection
 * (its session goes once the connection's handles are closed, later in this loop turn). */
static void close_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	uv_sem_post(s->started);
	uv_sem_wait(s->go);
	scsitgt__iscsi_conn_close(s->fc->conn, "test: first session over");
	step_done(s);
}

/* On the worker, after the messages before it: is the connection still up? */
static void probe_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	s->fc_closed = atomic_load(&s->fc->closed);
	s->in_ffp = s->fc->conn->state == SCSITGT__CONN_FFP;
	s->sess = s->fc->conn->sess;
	step_done(s);
}

static void step_post(struct step *s, struct scsitgt_engine *engine, struct scsitgt_portal *portal,
		      struct fake_conn *fc, scsitgt__msg_fn fn)
{
	s->engine = engine;
	s->portal = portal;
	s->fc = fc;
	atomic_init(&s->done, false);
	s->msg.fn = fn;
	scsitgt__worker_post(fc->w, &s->msg);
}

static void wait_done(uv_loop_t *loop, struct step *s)
{
	while (!atomic_load(&s->done))
		uv_run(loop, UV_RUN_ONCE);
}

static void test_stale_close_after_tsih_reuse(void **state)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_engine *engine;
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt_portal *portal;
	struct fake_conn c1, c2;
	struct step login1, close1, login2, probe;
	uv_sem_t started, go;
	uv_loop_t loop;
	int done = 0;

	(void)state;
	memset(&c1, 0, sizeof(c1));
	memset(&c2, 0, sizeof(c2));
	memset(&login1, 0, sizeof(login1));
	memset(&close1, 0, sizeof(close1));
	memset(&login2, 0, sizeof(login2));
	memset(&probe, 0, sizeof(probe));
	atomic_init(&c1.closed, false);
	atomic_init(&c2.closed, false);
	assert_int_equal(uv_sem_init(&started, 0), 0);
	assert_int_equal(uv_sem_init(&go, 0), 0);
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = 1; /* both sessions on the same worker */
	eo.conn_workers = true;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &eo), 0);
	assert_true(engine->conn_workers);
	ie = scsitgt__iscsi_engine_get(engine);
	assert_non_null(ie);
	portal = lp_portal(engine, "xloop-test");
	assert_int_equal(scsitgt__iscsi_portal_place(portal, &c1.h, &c1.w), 0);
	assert_int_equal(scsitgt__iscsi_portal_place(portal, &c2.h, &c2.w), 0);
	assert_ptr_equal(c1.w, c2.w);

	/* The first session, on the worker. */
	step_post(&login1, engine, portal, &c1, login_fn);
	wait_done(&loop, &login1);
	assert_true(login1.in_ffp);
	assert_non_null(login1.sess);
	assert_int_not_equal(login1.tsih, 0);

	/* The worker runs close1 and waits: what home posts meanwhile runs after close1's loop
	 * turn, in which the first session goes (its connection's handles close). */
	close1.started = &started;
	close1.go = &go;
	step_post(&close1, engine, portal, &c1, close_fn);
	uv_sem_wait(&started);
	/* The next session gets the first one's TSIH, as after 65535 logins. */
	uv_mutex_lock(&ie->lock);
	ie->next_tsih = (uint16_t)(login1.tsih - 1);
	uv_mutex_unlock(&ie->lock);
	step_post(&login2, engine, portal, &c2, login_fn);
	/* The stale close: meant for the first session, run after the second logged in. */
	scsitgt__iscsi_xloop_sess(login1.sess, SCSITGT__XOP_SESS_CLOSE, "stale close", 0, 0);
	step_post(&probe, engine, portal, &c2, probe_fn);
	uv_sem_post(&go);
	wait_done(&loop, &close1);
	wait_done(&loop, &login2);
	assert_true(atomic_load(&c1.closed));
	assert_true(login2.in_ffp);
	assert_non_null(login2.sess);
	/* The scenario: a new session of the same worker with the first one's TSIH. */
	assert_int_equal(login2.tsih, login1.tsih);
	wait_done(&loop, &probe);
	/* The stale close was dropped: the second session's connection is up. */
	assert_false(probe.fc_closed);
	assert_true(probe.in_ffp);
	assert_ptr_equal(probe.sess, login2.sess);

	/* A close posted for the second session reaches it. */
	scsitgt__iscsi_xloop_sess(login2.sess, SCSITGT__XOP_SESS_CLOSE, "fresh close", 0, 0);
	while (!atomic_load(&c2.closed) || lp_nconns(portal) != 0)
		uv_run(&loop, UV_RUN_ONCE);

	scsitgt_engine_destroy(engine, lp_destroyed, &done);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
	uv_sem_destroy(&started);
	uv_sem_destroy(&go);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_close_after_tsih_reuse),
	};

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
