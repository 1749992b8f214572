/* SPDX-License-Identifier: MIT */
/*
 * Placing a data mover's connections on worker loops (transport/iscsi/datamover.h,
 * scsitgt__iscsi_portal_place()), as iSER does with connections on workers: without the
 * switch nothing is placed (the connection stays home); with it, connections are spread over
 * the workers like TCP ones (the least-loaded first), counted in their portal, created on
 * their worker's loop by scsitgt__iscsi_conn_create_on() (which runs them there), and the
 * placement comes back home when the connection is gone, or when a placement that never
 * became a connection is dropped from the worker. A portal with a listener of its own (no
 * TCP socket: iSER's kind) stops once the last of them is back. Part of the TSan suite's
 * unit tests.
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

/* One placed connection, driven on its worker by messages. */
struct placed {
	struct scsitgt__msg msg;
	struct scsitgt_portal *portal;
	struct scsitgt__iscsi_handoff *h;
	struct scsitgt__worker *w;
	struct scsitgt__iscsi_conn *conn;
	bool create; /* false: drop the placement instead */
	/* What the worker saw (read on home once done is set). */
	int rc;
	bool on_worker;	    /* the message ran on the worker's thread */
	bool conn_on_loop;  /* the connection runs on the worker's loop */
	atomic_bool closed; /* the data mover was told to close, and said it is done */
	atomic_bool done;
	/* Posted to home after done is set: home's wait wakes for it (the placement's own
	 * message home may have come before done was set, and nothing else would wake it). */
	struct scsitgt__msg wake;
};

static void wake_fn(struct scsitgt__msg *msg)
{
	(void)msg;
}

/* On the worker: @p is over; home's loop wakes to see it. */
static void placed_done(struct placed *p, struct scsitgt_engine *engine)
{
	atomic_store(&p->done, true);
	p->wake.fn = wake_fn;
	scsitgt__engine_post(engine, &p->wake);
}

static void fake_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	scsitgt__iscsi_conn_tx_complete(conn, tx, 0);
}

static void fake_close(struct scsitgt__iscsi_conn *conn)
{
	struct placed *p = scsitgt__iscsi_conn_dm_ctx(conn);

	atomic_store(&p->closed, true);
	scsitgt__iscsi_conn_dm_closed(conn);
}

static const struct scsitgt__iscsi_dm_ops fake_dm_ops = {
	.name = "placed",
	.xmit = fake_xmit,
	.close = fake_close,
};

/* On the worker: create the connection there and close it, or drop the placement. */
static void placed_fn(struct scsitgt__msg *msg)
{
	struct placed *p = scsitgt__container_of(msg, struct placed, msg);
	struct scsitgt_engine *engine = p->portal->ie->engine;

	p->on_worker = scsitgt__worker_is_self(engine, p->w);
	if (!p->create) {
		scsitgt__iscsi_handoff_drop(p->h);
		placed_done(p, engine);
		return;
	}
	p->rc = scsitgt__iscsi_conn_create_on(&p->conn, p->portal, p->h, &fake_dm_ops, p, NULL,
					      NULL);
	if (p->rc == 0) {
		p->conn_on_loop = p->conn->loop == &p->w->loop && p->conn->worker == p->w;
		scsitgt__iscsi_conn_close(p->conn, "test over");
	}
	placed_done(p, engine);
}

static struct scsitgt_engine *engine_with_workers(uv_loop_t *loop, bool conn_workers)
{
	struct scsitgt_engine_opts o;
	struct scsitgt_engine *engine;

	assert_int_equal(uv_loop_init(loop), 0);
	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = 2;
	o.conn_workers = conn_workers;
	assert_int_equal(scsitgt_engine_create(&engine, loop, &o), 0);
	assert_int_equal(engine->conn_workers, conn_workers);
	return engine;
}

static void engine_end(struct scsitgt_engine *engine, uv_loop_t *loop)
{
	int done = 0;

	scsitgt_engine_destroy(engine, lp_destroyed, &done);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(done, 1);
	assert_int_equal(uv_loop_close(loop), 0);
}

/* Connections on workers opted out (socket workers only): the connection is not placed. */
static void test_no_switch_stays_home(void **state)
{
	struct scsitgt__iscsi_handoff *h = (void *)1;
	struct scsitgt__worker *w = (void *)1;
	struct scsitgt_engine *engine;
	struct scsitgt_portal *portal;
	uv_loop_t loop;

	(void)state;
	engine = engine_with_workers(&loop, false);
	portal = lp_portal(engine, "placed");
	assert_int_equal(scsitgt__iscsi_portal_place(portal, &h, &w), 0);
	assert_null(h);
	assert_null(w);
	assert_int_equal(lp_nconns(portal), 0);
	engine_end(engine, &loop);
}

/*
 * With the switch: three placements go to both workers, least-loaded first; two become
 * connections on their worker's loop and close there, the third is dropped from its worker;
 * every one is back home afterwards (portal and worker counts at zero).
 */
static void test_placed_on_workers(void **state)
{
	struct placed p[3];
	struct scsitgt_engine *engine;
	struct scsitgt_portal *portal;
	uv_loop_t loop;

	(void)state;
	memset(p, 0, sizeof(p));
	engine = engine_with_workers(&loop, true);
	portal = lp_portal(engine, "placed");
	for (unsigned int i = 0; i < 3; i++) {
		p[i].portal = portal;
		p[i].create = i < 2;
		atomic_init(&p[i].closed, false);
		atomic_init(&p[i].done, false);
		assert_int_equal(scsitgt__iscsi_portal_place(portal, &p[i].h, &p[i].w), 0);
		assert_non_null(p[i].h);
		assert_non_null(p[i].w);
	}
	/* Spread like TCP connections: the second goes to the other worker. */
	assert_ptr_not_equal(p[0].w, p[1].w);
	assert_int_equal(lp_nconns(portal), 3);
	assert_int_equal(engine->workers[0].nconns + engine->workers[1].nconns, 3);
	for (unsigned int i = 0; i < 3; i++) {
		p[i].msg.fn = placed_fn;
		scsitgt__worker_post(p[i].w, &p[i].msg);
	}
	/* Until each ran and every placement came back home (the messages wake this loop). */
	for (;;) {
		bool all = true;

		for (unsigned int i = 0; i < 3; i++)
			all = all && atomic_load(&p[i].done);
		if (all && lp_nconns(portal) == 0 &&
		    engine->workers[0].nconns + engine->workers[1].nconns == 0)
			break;
		uv_run(&loop, UV_RUN_ONCE);
	}
	for (unsigned int i = 0; i < 3; i++)
		assert_true(p[i].on_worker);
	for (unsigned int i = 0; i < 2; i++) {
		assert_int_equal(p[i].rc, 0);
		assert_true(p[i].conn_on_loop);
		assert_true(atomic_load(&p[i].closed));
	}
	engine_end(engine, &loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_switch_stays_home),
		cmocka_unit_test(test_placed_on_workers),
	};

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
