/* SPDX-License-Identifier: MIT */
/*
 * A worker raises a unit attention on a nexus whose iSCSI session home is finishing
 * (review29 F4). A task management batch that home posted to the worker before the session
 * was leaving (core/tmf_xshard.c xt_batch_abort(): COMMANDS CLEARED BY ANOTHER INITIATOR)
 * checks that the nexus is not leaving, then calls the core's hook, scsitgt__iscsi_async_ua(),
 * which reads the iSCSI session; meanwhile home runs scsitgt__iscsi_sess_finish(), posted by
 * the worker when the session's connection went, which marks the nexus leaving and ends the
 * session. The session must outlive that hook: nothing orders the worker's reads before a
 * free on home.
 *
 * Made deterministic: the worker's connection closes (the finish is posted home), the worker
 * then raises the condition as the batch does (the nexus is not leaving yet: home has not run),
 * and sets a relaxed flag, which home polls (it orders nothing); only then does home run its
 * loop and finish the session. A free of the session on home races with the worker's reads,
 * which ThreadSanitizer reports (part of the TSan suite's unit tests); the session freed on
 * its own loop after them does not.
 *
 * Also (review30 F1): the host's walk of the target's sessions and its kick, between home's
 * finish of such a session and the end of its core nexus (see test_kick_of_ending_session()).
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../support/conn_workers_env.h"
#include "iscsi_harness.h"
#include "core/core.h"
#include "core/ua.h"
#include "core/worker.h"
#include "libscsitgt/scsitgt.h"
#include "transport/iscsi/conn.h"

#include "listener_portal.h"

#define T_TARGET "iqn.2026-12.org.libscsitgt:ua-free"
#define T_INITIATOR "iqn.2026-12.org.libscsitgt:ua-free-initiator"

struct world;

/* A step run on the worker by message; home waits for done (a message wakes it). */
struct step {
	struct scsitgt__msg msg;
	struct world *wd;
	bool in_ffp;
	struct scsitgt__iscsi_sess *sess;
	atomic_bool done;
	struct scsitgt__msg wake;
	/* The raise: relaxed, so that it orders nothing between the worker and home. */
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
	scsitgt__iscsi_conn_dm_closed(conn);
}

static const struct scsitgt__iscsi_dm_ops fake_dm_ops = {
	.name = "ua-free-test",
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

/*
 * On the worker, once the session's connection is gone (its finish posted home): raise
 * COMMANDS CLEARED BY ANOTHER INITIATOR on the nexus as a task management batch does
 * (tmf_xshard.c xt_batch_abort()), then tell home by the relaxed flag only.
 */
static void raise_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	if (s->sess->nconns != 0) {
		/* The connection's handles still closing: after them. */
		scsitgt__worker_post(s->wd->w, &s->msg);
		return;
	}
	scsitgt__ua_establish(s->sess->core, 0, SCSITGT__SR_UA_COMMANDS_CLEARED_BY_OTHER);
	atomic_store_explicit(&s->raised, true, memory_order_relaxed);
}

/* On the worker: close the session's connection, then raise_fn(). */
static void close_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	scsitgt__iscsi_conn_close(s->wd->conn, "test: the initiator is gone");
	s->msg.fn = raise_fn;
	scsitgt__worker_post(s->wd->w, &s->msg);
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
	wd->portal = lp_portal(wd->engine, "ua-free-test");
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
static void world_down(struct world *wd)
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

static void test_worker_ua_while_home_finishes_session(void **state)
{
	struct scsitgt__iscsi_sess *sess;
	struct world wd;
	struct step gone;

	(void)state;
	memset(&gone, 0, sizeof(gone));
	world_up(&wd, &sess);

	/* The connection goes and the worker raises the condition; home does not run its loop
	 * until the worker is past the hook, so the nexus is not leaving when it checks. */
	gone.sess = sess;
	step_post(&gone, &wd, close_fn);
	for (unsigned long guard = 0; !atomic_load_explicit(&gone.raised, memory_order_relaxed);
	     guard++) {
		assert_true(guard < 1000000000ul);
		sched_yield();
	}
	/* Now home finishes the session (its core nexus goes after its worker's detach). */
	world_down(&wd);
}

/* On the worker: nothing but telling home, with release order, that the messages posted
 * before this one have run. */
static void fence_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	atomic_store_explicit(&s->raised, true, memory_order_release);
}

static void close_only_fn(struct scsitgt__msg *msg)
{
	struct step *s = scsitgt__container_of(msg, struct step, msg);

	scsitgt__iscsi_conn_close(s->wd->conn, "test: the initiator is gone");
}

static int kick_visit(void *arg, const struct scsitgt_session_stats *st)
{
	unsigned int *seen = arg;

	(*seen)++;
	return scsitgt_session_kick(st->session);
}

/*
 * review30 F1: the host walks the target's sessions and kicks one (scsitgtd's control "kick")
 * while that session is ending. Home has finished the iSCSI session (the worker frees it) but
 * the core nexus stays on the target's list until its detach comes back from the worker. A
 * walk then must not hand the ending nexus out, and a kick of it must not reach the freed
 * iSCSI session (ASan: heap-use-after-free in the kick before the fix).
 */
static void test_kick_of_ending_session(void **state)
{
	struct scsitgt__iscsi_sess *sess;
	struct scsitgt__session *core;
	struct world wd;
	struct step gone, fence;
	unsigned int seen = 0;

	(void)state;
	memset(&gone, 0, sizeof(gone));
	memset(&fence, 0, sizeof(fence));
	world_up(&wd, &sess);
	core = sess->core;

	step_post(&gone, &wd, close_only_fn);
	/* Home runs until the nexus is leaving (the iSCSI session's free posted to the worker). */
	for (int guard = 0; !atomic_load(&core->leaving); guard++) {
		assert_true(guard < 100000);
		uv_run(&wd.loop, UV_RUN_ONCE);
	}
	/* The worker has run everything posted before: the iSCSI session is freed. Home has not
	 * run since, so the core nexus is still listed. */
	step_post(&fence, &wd, fence_fn);
	for (unsigned long guard = 0; !atomic_load_explicit(&fence.raised, memory_order_acquire);
	     guard++) {
		assert_true(guard < 1000000000ul);
		sched_yield();
	}
	assert_false(scsitgt__list_empty(&wd.tgt->sessions));
	assert_int_equal(scsitgt_target_foreach_session(wd.tgt, kick_visit, &seen), 0);
	assert_int_equal(seen, 0);
	assert_int_equal(scsitgt_session_kick((struct scsitgt_session *)core), -EALREADY);
	world_down(&wd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worker_ua_while_home_finishes_session),
		cmocka_unit_test(test_kick_of_ending_session),
	};

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
