/* SPDX-License-Identifier: MIT */
/*
 * The RBD gateway's hold on its target (src/backend/rbd_gateway.c) without a cluster: a
 * gateway that could not be created, or was destroyed, leaves no SET TARGET PORT GROUPS hook
 * behind (the hook's argument is the freed gateway: an STPG from the wire ran on freed
 * memory, review33 B3), and a failed creation leaves no group of its own.
 *
 * The RBD context is a stand-in opened on the loop fabric's loop with nothing connected: the
 * gateway's first watch then fails (no ioctx), it is fenced and its reconnections fail at once
 * (scsitgt_backend_rbd_set_reconnect_fault()), so it never needs a cluster.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/rbd_int.h"
#include "cdb_build.h"
#include "core/scsi_spec.h"
#include "fake_backend.h"
#include "libscsitgt/alua.h"
#include "libscsitgt/backend_rbd_gateway.h"
#include "libscsitgt/testing.h"
#include "loop_fabric.h"
#include "test_util.h"
#include "util/be.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

struct world {
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	struct fake_backend *fb;
	struct scsitgt__rbd_ctx *rc;
	struct lf_result r;
	int done_calls;
};

static void done_cb(void *arg, int status)
{
	struct world *w = arg;

	assert_int_equal(status, 0);
	w->done_calls++;
}

/* An opened RBD context with nothing connected, as the backend leaves it between a failed
 * reconnection and the next one. */
static struct scsitgt__rbd_ctx *rc_standin(uv_loop_t *loop)
{
	struct scsitgt__rbd_ctx *rc = calloc(1, sizeof(*rc));

	assert_non_null(rc);
	pthread_mutex_init(&rc->mu, NULL);
	pthread_cond_init(&rc->cv, NULL);
	rc->loop = loop;
	rc->pool = strdup("rbd");
	rc->image_name = strdup("img");
	rc->pool_namespace = strdup("");
	rc->client_id = strdup("admin");
	assert_non_null(rc->pool);
	assert_non_null(rc->image_name);
	assert_non_null(rc->pool_namespace);
	assert_non_null(rc->client_id);
	snprintf(rc->image_id, sizeof(rc->image_id), "%s", "1234");
	rc->block_size = 512;
	rc->num_blocks = 2048;
	rc->opened = true;
	/* librbd's defaults: a lock break blocklists for the monitors' time */
	rc->break_blocklists = true;
	assert_int_equal(scsitgt_backend_rbd_set_reconnect_fault(rc, true), 0);
	return rc;
}

static struct world *world_create(void)
{
	struct world *w = calloc(1, sizeof(*w));
	struct fake_backend_opts o;
	uint8_t cdb[CDB_BUF];

	assert_non_null(w);
	assert_int_equal(loop_fabric_create(&w->lf, NULL), 0);
	fake_backend_opts_init(&o);
	assert_int_equal(fake_backend_lun_create(&w->lun, &w->fb, w->lf->tgt, 0, 0, &o), 0);
	/* The nexus's POWER ON unit attention. */
	do {
		lf_result_clear(&w->r);
		loop_fabric_run(w->lf, 0, cdb, cdb_tur(cdb), NULL, 0, &w->r);
	} while (w->r.status == SAM_STAT_CHECK_CONDITION &&
		 (w->r.sense[2] & 0x0f) == SENSE_UNIT_ATTENTION);
	assert_int_equal(w->r.status, SAM_STAT_GOOD);
	w->rc = rc_standin(&w->lf->loop);
	return w;
}

/* Run the loop until @n done callbacks came (bounded). */
static void run_until(struct world *w, int n)
{
	for (int i = 0; i < 100000 && w->done_calls < n; i++)
		uv_run(&w->lf->loop, UV_RUN_ONCE);
	assert_int_equal(w->done_calls, n);
}

static void world_destroy(struct world *w)
{
	int n = w->done_calls + 1;

	/* The backend's close: the worker (if any) exits, the context is freed. */
	scsitgt__rbd_op_close(w->rc, done_cb, w);
	run_until(w, n);
	lf_result_clear(&w->r);
	loop_fabric_destroy(w->lf);
	free(w);
}

/* SET TARGET PORT GROUPS: @group to @state. */
static struct lf_result *stpg(struct world *w, uint8_t state, uint16_t group)
{
	uint8_t cdb[12] = { 0 }, p[8] = { 0 };

	cdb[0] = SPC_MAINTENANCE_OUT;
	cdb[1] = SPC_MO_SET_TARGET_PORT_GROUPS;
	put_be32(&cdb[6], sizeof(p));
	p[4] = state;
	put_be16(&p[6], group);
	lf_result_clear(&w->r);
	loop_fabric_run(w->lf, 0, cdb, sizeof(cdb), p, sizeof(p), &w->r);
	return &w->r;
}

static void gw_opts(struct scsitgt_rbd_gateway_opts *o, uint16_t group, uint16_t *port,
		    struct scsitgt_rbd_gateway_peer *peer)
{
	scsitgt_rbd_gateway_opts_init(o, sizeof(*o));
	o->group_id = group;
	o->rel_port_ids = port;
	o->nrel_port_ids = 1;
	peer->group_id = 2;
	peer->rel_port_id = 2;
	o->peers = peer;
	o->npeers = 1;
}

/* The host's own ALUA: implicit and explicit, no hook (every request accepted). */
static void host_alua(struct world *w)
{
	struct scsitgt_alua_opts ao;

	scsitgt_alua_opts_init(&ao, sizeof(ao));
	ao.modes = SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT;
	assert_int_equal(scsitgt_alua_configure(w->lf->tgt, &ao), 0);
}

/* The gateway's group exists already (-EEXIST, documented): the target keeps the host's ALUA
 * (an STPG changes the group without asking a hook) and no group of the gateway's. */
static void test_create_fails_group_exists(void **state)
{
	struct world *w = world_create();
	struct scsitgt_rbd_gateway_opts o;
	struct scsitgt_rbd_gateway_peer peer;
	struct scsitgt_rbd_gateway *gw = NULL;
	enum scsitgt_alua_state st;
	uint16_t port = 1;

	(void)state;
	host_alua(w);
	assert_int_equal(scsitgt_alua_group_create(w->lf->tgt, 1, SCSITGT_ALUA_STANDBY), 0);
	assert_int_equal(scsitgt_alua_group_add_port(w->lf->tgt, 1, 1), 0);
	gw_opts(&o, 1, &port, &peer);
	assert_int_equal(scsitgt_rbd_gateway_create(&gw, w->lf->tgt, w->rc, &o), -EEXIST);
	assert_null(gw);
	/* The failed gateway's handles close and it is freed. */
	for (int i = 0; i < 10; i++)
		uv_run(&w->lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(stpg(w, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 1)->status, SAM_STAT_GOOD);
	assert_int_equal(scsitgt_alua_get_state(w->lf->tgt, 1, &st), 0);
	assert_int_equal(st, SCSITGT_ALUA_ACTIVE_OPTIMIZED);
	/* The peer's group was never made. */
	assert_int_equal(scsitgt_alua_get_state(w->lf->tgt, 2, &st), -ENOENT);
	world_destroy(w);
}

/* A port in another group already: the gateway's own group, made by the call, goes again. */
static void test_create_fails_port_taken(void **state)
{
	struct world *w = world_create();
	struct scsitgt_rbd_gateway_opts o;
	struct scsitgt_rbd_gateway_peer peer;
	struct scsitgt_rbd_gateway *gw = NULL;
	enum scsitgt_alua_state st;
	uint16_t port = 1;

	(void)state;
	host_alua(w);
	assert_int_equal(scsitgt_alua_group_create(w->lf->tgt, 5, SCSITGT_ALUA_STANDBY), 0);
	assert_int_equal(scsitgt_alua_group_add_port(w->lf->tgt, 5, 1), 0);
	gw_opts(&o, 1, &port, &peer);
	assert_int_equal(scsitgt_rbd_gateway_create(&gw, w->lf->tgt, w->rc, &o), -EEXIST);
	for (int i = 0; i < 10; i++)
		uv_run(&w->lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_alua_get_state(w->lf->tgt, 1, &st), -ENOENT);
	assert_int_equal(scsitgt_alua_get_state(w->lf->tgt, 2, &st), -ENOENT);
	assert_int_equal(stpg(w, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 5)->status, SAM_STAT_GOOD);
	assert_int_equal(scsitgt_alua_get_state(w->lf->tgt, 5, &st), 0);
	assert_int_equal(st, SCSITGT_ALUA_ACTIVE_OPTIMIZED);
	world_destroy(w);
}

/* A lock break that would not fence the old owner (rbd_blocklist_on_break_lock false), or
 * only for a minute (rbd_blocklist_expire_seconds 60): refused, nothing of the gateway made
 * (reviewh F4). */
static void test_create_refuses_unfenced_break(void **state)
{
	struct world *w = world_create();
	struct scsitgt_rbd_gateway_opts o;
	struct scsitgt_rbd_gateway_peer peer;
	struct scsitgt_rbd_gateway *gw = NULL;
	enum scsitgt_alua_state st;
	uint16_t port = 1;

	(void)state;
	gw_opts(&o, 1, &port, &peer);
	w->rc->break_blocklists = false;
	assert_int_equal(scsitgt_rbd_gateway_create(&gw, w->lf->tgt, w->rc, &o), -EINVAL);
	assert_null(gw);
	w->rc->break_blocklists = true;
	w->rc->blocklist_expire_s = 60;
	assert_int_equal(scsitgt_rbd_gateway_create(&gw, w->lf->tgt, w->rc, &o), -EINVAL);
	assert_null(gw);
	assert_int_equal(scsitgt_alua_get_state(w->lf->tgt, 1, &st), -ENOENT);
	world_destroy(w);
}

/* A gateway destroyed while its target stays: the target's SET TARGET PORT GROUPS no longer
 * reaches it (explicit ALUA off: ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE), the
 * groups stay as they were. */
static void test_destroy_unhooks(void **state)
{
	struct world *w = world_create();
	struct scsitgt_rbd_gateway_opts o;
	struct scsitgt_rbd_gateway_peer peer;
	struct scsitgt_rbd_gateway *gw = NULL;
	enum scsitgt_alua_state st;
	uint16_t port = 1;

	(void)state;
	gw_opts(&o, 1, &port, &peer);
	assert_int_equal(scsitgt_rbd_gateway_create(&gw, w->lf->tgt, w->rc, &o), 0);
	assert_non_null(gw);
	/* Its first watch fails (nothing connected): fenced, reconnecting (and failing). */
	for (int i = 0; i < 100000 && !w->rc->fenced; i++)
		uv_run(&w->lf->loop, UV_RUN_ONCE);
	assert_true(w->rc->fenced);
	scsitgt_rbd_gateway_destroy(gw, done_cb, w);
	run_until(w, 1);
	assert_int_equal(stpg(w, SCSITGT_ALUA_ACTIVE_OPTIMIZED, 1)->status,
			 SAM_STAT_CHECK_CONDITION);
	assert_int_equal(w->r.sense[2] & 0x0f, SENSE_ILLEGAL_REQUEST);
	assert_int_equal(w->r.sense[12], 0x20);
	assert_int_equal(scsitgt_alua_get_state(w->lf->tgt, 2, &st), 0);
	world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_fails_group_exists),
		cmocka_unit_test(test_create_fails_port_taken),
		cmocka_unit_test(test_destroy_unhooks),
		cmocka_unit_test(test_create_refuses_unfenced_break),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
