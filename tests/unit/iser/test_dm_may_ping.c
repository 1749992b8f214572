/* SPDX-License-Identifier: MIT */
/*
 * The may_ping hook of the data-mover seam (transport/iscsi/datamover.h; review32 N9): while the
 * data mover says a NOP-In ping would be held (iSER: the initiator's
 * MaxOutstandingUnexpectedPDUs are out), the keepalive skips its ping and asks again an
 * interval later, the connection staying up; once the data mover has room, the ping goes out.
 * A data mover with the hook on the iSCSI harness (1 ms keepalive interval): the iSCSI side
 * is real, the data mover is fake.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../iscsi/iscsi_harness.h"

static struct {
	bool room;	    /* what may_ping answers */
	unsigned int asked; /* how often it was asked */
} dm;

static bool rec_may_ping(struct scsitgt__iscsi_conn *conn)
{
	(void)conn;
	dm.asked++;
	return dm.room;
}

static const struct scsitgt__iscsi_dm_ops ping_dm_ops = {
	.name = "may-ping",
	.xmit = h_xmit,
	.close = h_close,
	.may_ping = rec_may_ping,
};

/* NOP-In pings the target sent (ITT reserved, TTT not: RFC 7143 §11.19). */
static unsigned int pings(const struct harness *h)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < h->npdus; i++) {
		const uint8_t *bhs = h->pdus[i].bhs;

		if (scsitgt__bhs_opcode(bhs) == ISCSI_OP_NOP_IN &&
		    scsitgt__bhs_itt(bhs) == ISCSI_RESERVED_TAG &&
		    get_be32(&bhs[ISCSI_BHS_TTT]) != ISCSI_RESERVED_TAG)
			n++;
	}
	return n;
}

static void tick_cb(uv_timer_t *t)
{
	(void)t;
}

/*
 * Run the loop (its 1 ms keepalive timer) until @done, a bounded number of rounds. A 5 ms tick
 * of our own bounds each round's wait: the keepalive may fire at the start of a round (it was
 * due by then) and leave only the 10-minute ping timeout to wait for.
 */
static bool run_until(struct harness *h, bool (*done)(const struct harness *h))
{
	uv_timer_t tick;
	bool ok = false;

	uv_timer_init(&h->loop, &tick);
	uv_timer_start(&tick, tick_cb, 5, 5);
	for (int i = 0; i < 10000 && !ok; i++) {
		h_pump(h);
		ok = done(h);
		if (!ok)
			uv_run(&h->loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&tick, NULL);
	uv_run(&h->loop, UV_RUN_NOWAIT); /* the close completes before @tick goes */
	return ok || done(h);
}

/* Asked three times, or (the hook not asked) a ping went out anyway. */
static bool asked_thrice(const struct harness *h)
{
	return dm.asked >= 3 || pings(h) > 0;
}

static bool pinged(const struct harness *h)
{
	return pings(h) > 0;
}

static void test_ping_skipped_while_held(void **state)
{
	struct harness h;

	(void)state;
	memset(&dm, 0, sizeof(dm));
	assert_int_equal(h_init_dm(&h, true, &ping_dm_ops), 0);
	h.portal.ie->defaults.nop_interval_ms = 1;
	h.portal.ie->defaults.nop_timeout_ms = 600000;
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(h.conn->sess->tparams.nop_interval_ms, 1);
	/* Held: asked every interval, no ping sent, nothing outstanding, the connection up. */
	assert_true(run_until(&h, asked_thrice));
	assert_int_equal(pings(&h), 0);
	assert_false(h.conn->nop_outstanding);
	assert_false(h_conn_gone(&h));
	/* Room: the next interval's ping goes out. */
	dm.room = true;
	assert_true(run_until(&h, pinged));
	assert_int_equal(pings(&h), 1);
	assert_true(h.conn->nop_outstanding);
	assert_false(h_conn_gone(&h));
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_skipped_while_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
