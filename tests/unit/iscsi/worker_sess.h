/* SPDX-License-Identifier: MIT */
/*
 * A normal iSCSI session on a worker loop, driven step by step from the test's thread (home):
 * steps run on the worker by message and end by their wake message on home; a fake data mover
 * whose close can be held. For the tests that order a worker session's end against home
 * (test_sess_ua_free.c, test_sess_stop_free.c). Header-only: define T_TARGET and T_INITIATOR,
 * then include after cmocka.h, iscsi_harness.h and listener_portal.h.
 */
#ifndef SCSITGT_TEST_WORKER_SESS_H
#define SCSITGT_TEST_WORKER_SESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "core/core.h"
#include "core/worker.h"
#include "transport/iscsi/conn.h"

struct world;

/* A step run on the worker by message; home waits for done (a message wakes it). */
struct step {
	struct scsitgt__msg msg;
	struct world *wd;
	bool in_ffp;
	struct scsitgt__iscsi_sess *sess;
	atomic_bool done;
	struct scsitgt__msg wake;
	/* A flag of the worker's for home, which polls it without running its loop (each
	 * test says with which memory order). */
	atomic_bool raised;
};

struct world {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_portal *portal;
	struct scsitgt__iscsi_handoff *h;
	struct scsitgt__worker *w;
	struct scsitgt__iscsi_conn *conn; /* the worker's */
	atomic_bool closed;		  /* the data mover was told to close */
	/* world_up()'s steps: their wake messages may still be queued on home after it. */
	struct step login, probe, tur;
	/* The data mover's close ends only when the test says so (hold_close): the
	 * connection it was asked to close, on the worker. */
	bool hold_close;
	struct scsitgt__iscsi_conn *held;
};

/* On home: the step is over, and its wake message has left home's queue, so that the step
 * may be posted again (the worker touches nothing of it after the post below). */
static void wake_fn(struct scsitgt__msg *msg)
{
	atomic_store(&scsitgt__container_of(msg, struct step, wake)->done, true);
}

static void step_done(struct step *s)
{
	s->wake.fn = wake_fn;
	scsitgt__engine_post(s->wd->engine, &s->wake);
}

static void step_post(struct step *s, struct world *wd, scsitgt__msg_fn fn)
{
	s->wd = wd;
	atomic_init(&s->done, false);
	atomic_init(&s->raised, false);
	s->msg.fn = fn;
	scsitgt__worker_post(wd->w, &s->msg);
}

static void wait_done(struct world *wd, struct step *s)
{
	while (!atomic_load(&s->done))
		uv_run(&wd->loop, UV_RUN_ONCE);
}

static void fake_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	scsitgt__iscsi_conn_tx_complete(conn, tx, 0);
}

static void fake_close(struct scsitgt__iscsi_conn *conn)
{
	struct world *wd = scsitgt__iscsi_conn_dm_ctx(conn);

	atomic_store(&wd->closed, true);
	if (wd->hold_close)
		wd->held = conn;
	else
		scsitgt__iscsi_conn_dm_closed(conn);
}

static const struct scsitgt__iscsi_dm_ops fake_dm_ops = {
	.name = "worker-sess-test",
	.xmit = fake_xmit,
	.close = fake_close,
};

/* Feed @conn one PDU: @bhs and @len bytes of data. */
static void feed(struct scsitgt__iscsi_conn *conn, uint8_t *bhs, const void *data, size_t len)
{
	struct scsitgt__iscsi_tx *tx = scsitgt__iscsi_tx_create(1);
	uint8_t *b;

	if (tx == NULL)
		return; /* home sees the step fail */
	b = scsitgt__iscsi_tx_add(tx, data, (uint32_t)len);
	memcpy(b, bhs, ISCSI_BHS_LEN);
	scsitgt__iscsi_tx_seal(tx, false, false);
	for (int i = 0; i < tx->iovcnt; i++)
		scsitgt__iscsi_conn_recv(conn, tx->iov[i].iov_base, tx->iov[i].iov_len);
	scsitgt__iscsi_tx_destroy(tx);
}

/* On the worker: a connection logging in to a normal session of T_TARGET (its core nexus is
 * made on home, then the login goes on here). */
static void login_fn(struct scsitgt__msg *msg)
{
	static const char keys[] = "InitiatorName=" T_INITIATOR "\0SessionType=Normal\0"
				   "TargetName=" T_TARGET "\0HeaderDigest=None\0DataDigest=None\0"
				   "DefaultTime2Wait=2\0DefaultTime2Retain=0\0"
				   "ErrorRecoveryLevel=0\0MaxRecvDataSegmentLength=8192";
	static const uint8_t isid[6] = { 0x80, 0x12, 0x34, 0x56, 0x00, 0x03 };
	struct step *s = scsitgt__container_of(msg, struct step, msg);
	struct world *wd = s->wd;
	uint8_t bhs[ISCSI_BHS_LEN];

	/* No cmocka assertion off the test's thread: home checks what is recorded. */
	if (scsitgt__iscsi_conn_create_on(&wd->conn, wd->portal, wd->h, &fake_dm_ops, wd, NULL,
					  NULL) == 0) {
		scsitgt__bhs_init(bhs, ISCSI_OP_LOGIN_REQ | ISCSI_FLAG_IMMEDIATE,
				  ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3);
		memcpy(&bhs[ISCSI_LOGIN_ISID], isid, 6);
		put_be32(&bhs[ISCSI_BHS_ITT], 1);
		put_be32(&bhs[ISCSI_BHS_CMDSN], 1);
		feed(wd->conn, bhs, keys, sizeof(keys));
	}
	step_done(s);
}

/* On the worker: is the connection in full feature phase, with its session? */
static void probe_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	s->in_ffp = s->wd->conn && s->wd->conn->state == SCSITGT__CONN_FFP;
	s->sess = s->wd->conn ? s->wd->conn->sess : NULL;
	step_done(s);
}

/* On the worker: TEST UNIT READY to LUN 0, so that the nexus has seen it (its POWER ON). */
static void tur_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);
	struct scsitgt__iscsi_sess *sess = s->wd->conn->sess;
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | 1 /* simple */);
	put_be32(&bhs[ISCSI_BHS_ITT], 2);
	put_be32(&bhs[ISCSI_CMD_EDTL], 0);
	put_be32(&bhs[ISCSI_BHS_CMDSN], sess->exp_cmd_sn);
	feed(s->wd->conn, bhs, NULL, 0);
	s->in_ffp = s->wd->conn->state == SCSITGT__CONN_FFP;
	step_done(s);
}

/* An engine with one worker that runs its connections, target T_TARGET with a RAM LUN, and a
 * normal session on the worker in full feature phase that has seen LUN 0; its iSCSI session
 * in *@sess. */
static void world_up(struct world *wd, struct scsitgt__iscsi_sess **sess)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct step *login = &wd->login, *probe = &wd->probe, *tur = &wd->tur;

	memset(wd, 0, sizeof(*wd));
	atomic_init(&wd->closed, false);
	assert_int_equal(uv_loop_init(&wd->loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = 1;
	eo.conn_workers = true;
	assert_int_equal(scsitgt_engine_create(&wd->engine, &wd->loop, &eo), 0);
	assert_true(wd->engine->conn_workers);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = T_TARGET;
	assert_int_equal(scsitgt_target_create(&wd->tgt, wd->engine, &to), 0);
	assert_int_equal(h_ram_lun(wd->tgt, 0, 64), 0);
	wd->portal = lp_portal(wd->engine, "worker-sess-test");
	assert_int_equal(scsitgt__iscsi_portal_place(wd->portal, &wd->h, &wd->w), 0);
	assert_non_null(wd->w);

	step_post(login, wd, login_fn);
	wait_done(wd, login);
	for (int guard = 0; !probe->in_ffp; guard++) {
		assert_true(guard < 100000);
		step_post(probe, wd, probe_fn);
		wait_done(wd, probe);
	}
	assert_non_null(probe->sess);
	assert_non_null(probe->sess->core);
	step_post(tur, wd, tur_fn);
	wait_done(wd, tur);
	assert_true(tur->in_ffp);
	assert_false(scsitgt__list_empty(&wd->tgt->sessions));
	*sess = probe->sess;
}

/* Home runs its loop until the target has no session left, then the engine goes. */
static inline void world_down(struct world *wd)
{
	int done = 0;

	for (int guard = 0; !scsitgt__list_empty(&wd->tgt->sessions); guard++) {
		assert_true(guard < 100000);
		uv_run(&wd->loop, UV_RUN_ONCE);
	}
	assert_true(atomic_load(&wd->closed));
	scsitgt_engine_destroy(wd->engine, lp_destroyed, &done);
	uv_run(&wd->loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	assert_int_equal(uv_loop_close(&wd->loop), 0);
}

#endif /* SCSITGT_TEST_WORKER_SESS_H */
