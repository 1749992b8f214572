/* SPDX-License-Identifier: MIT */
/*
 * SPC-2 reservations (RESERVE (6)) across shards (issue 18): an ended nexus's reservation goes
 * when it ends, and only the nexus that took it releases it. With workers an ended nexus of a
 * worker is freed on home after its shard detached its commands, a round trip that a busy
 * worker delays, while the same I_T nexus may log in again meanwhile (iSCSI session
 * reinstatement) and reserve: the old nexus's late free released the new one's reservation
 * by its port name (reviewi D3). A PERSISTENT RESERVE OUT checked on the worker and run on
 * home conflicts with a RESERVE (6) granted in between.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/cmd.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "xshard_world.h"

/* the nexus that ends and logs in again, first on the worker */
#define PORT_C "iqn.2024-01.org.example:c,i,0x23d000000003"

/* A message that keeps its loop busy until told to go on. */
struct blocker {
	struct scsitgt__msg msg;
	_Atomic int go;
};

static void block_fn(struct scsitgt__msg *m)
{
	struct blocker *b = (struct blocker *)m;

	while (!atomic_load(&b->go))
		;
}

/* A message that, run on the worker, wakes home behind what the worker posted before. */
struct waker {
	struct scsitgt__msg msg;
	struct xw_world *w;
	struct xw_wake k;
	_Atomic int flag;
};

static void waker_fn(struct scsitgt__msg *m)
{
	struct waker *k = (struct waker *)m;

	xw_wake_home(k->w, &k->k, &k->flag, 1);
}

static uint8_t run_cdb6(struct xw_world *w, struct scsitgt__session *s, uint8_t op,
			struct xw_cmd *x)
{
	xw_cmd_init(x, s, op, 6);
	return xw_run(w, x);
}

/* S1 (port C, worker) reserves and ends while its worker is busy; S2 (port C again, home)
 * reserves; S1's free on home must leave S2's reservation: nexus A still conflicts. */
static void test_old_nexus_free_keeps_new_reservation(void **state)
{
	struct xw_world *w;
	struct xw_cmd x;
	struct scsitgt__session *s1, *s2;
	struct blocker blk = { 0 };
	struct waker wk = { 0 };
	struct scsitgt__shard *ws;

	(void)state;
	xw_world_create(&w, "iqn.2024-01.org.example:r2");
	xw_world_start(w, NULL);
	ws = &w->engine->shards[1];
	s1 = xw_nexus(w, PORT_C, 1);
	assert_int_equal(run_cdb6(w, s1, SPC_RESERVE_6, &x), SAM_STAT_GOOD);
	xw_rw10(&x, w->a, SBC_WRITE_10, 0, 1);
	assert_int_equal(xw_run(w, &x), SAM_STAT_RESERVATION_CONFLICT);
	/* the old nexus's worker is busy: its detach, and so its free, wait */
	blk.msg.fn = block_fn;
	scsitgt__shard_post(ws, &blk.msg);
	scsitgt__session_destroy(s1);
	/* its reservation ended with it (SPC-2 §5.5.1): A writes */
	xw_rw10(&x, w->a, SBC_WRITE_10, 0, 1);
	assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
	/* the same I_T nexus logs in again (on home) and reserves */
	s2 = xw_nexus(w, PORT_C, 0);
	assert_int_equal(run_cdb6(w, s2, SPC_RESERVE_6, &x), SAM_STAT_GOOD);
	/* the worker goes on: detach, then the old nexus's free on home, then the wake-up */
	wk.msg.fn = waker_fn;
	wk.w = w;
	scsitgt__shard_post(ws, &wk.msg);
	atomic_store(&blk.go, 1);
	xw_wait_flag(w, &wk.flag);
	xw_settle(w);
	/* S2 holds the reservation */
	xw_rw10(&x, w->a, SBC_WRITE_10, 0, 1);
	assert_int_equal(xw_run(w, &x), SAM_STAT_RESERVATION_CONFLICT);
	xw_rw10(&x, s2, SBC_WRITE_10, 0, 1);
	assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
	xw_world_destroy(w);
}

/*
 * SPC-2 §5.5.1: under another nexus's RESERVE (6) a PERSISTENT RESERVE OUT conflicts. B's
 * (worker) REGISTER is checked on the worker while the LUN is free and runs on home a message
 * later; A (home) reserves in between. The REGISTER must conflict when it runs: it got GOOD,
 * a registration beside A's SPC-2 reservation, after which A's own RELEASE (6) conflicted
 * (reviewi, note to B1).
 */
static void test_pr_out_after_reserve6_on_home(void **state)
{
	struct xw_world *w;
	struct xw_cmd reg, res, x;

	(void)state;
	xw_world_create(&w, "iqn.2024-01.org.example:r2pr");
	xw_world_start(w, NULL);
	/* parsed and executed on the worker: its run on home is queued behind nothing yet */
	xw_pr_out(&reg, w->b, PR_OUT_REGISTER, 0, 0, 0x22);
	xw_start(w, &reg);
	/* A's RESERVE runs here and now, before home's loop takes B's message */
	xw_cmd_init(&res, w->a, SPC_RESERVE_6, 6);
	xw_start(w, &res);
	assert_int_equal(xw_wait(w, &reg), SAM_STAT_RESERVATION_CONFLICT);
	assert_int_equal(xw_wait(w, &res), SAM_STAT_GOOD);
	/* A holds it alone: B's write conflicts, A's RELEASE finds no registrant and releases */
	xw_rw10(&x, w->b, SBC_WRITE_10, 0, 1);
	assert_int_equal(xw_run(w, &x), SAM_STAT_RESERVATION_CONFLICT);
	assert_int_equal(run_cdb6(w, w->a, SPC_RELEASE_6, &x), SAM_STAT_GOOD);
	assert_int_equal(xw_run_pr_out(w, w->b, PR_OUT_REGISTER, 0, 0, 0x22, &x), SAM_STAT_GOOD);
	xw_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_nexus_free_keeps_new_reservation),
		cmocka_unit_test(test_pr_out_after_reserve6_on_home),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
