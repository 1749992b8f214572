/* SPDX-License-Identifier: MIT */
/* iSER flow control (src/transport/iser/iser_flow.c): the RDMA READ depth queue, receive
 * credits and the unexpected PDUs we send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "transport/iser/iser_flow.h"

struct item {
	struct scsitgt__iser_rdq_item q;
	int id;
};

static int id_of(struct scsitgt__iser_rdq_item *it)
{
	return it ? ((struct item *)(void *)it)->id : -1;
}

static void test_rdq_depth_and_order(void **state)
{
	struct scsitgt__iser_rdq q;
	struct item it[6];

	(void)state;
	scsitgt__iser_rdq_init(&q, 2);
	for (int i = 0; i < 6; i++) {
		it[i].id = i;
		scsitgt__iser_rdq_push(&q, &it[i].q);
	}
	assert_int_equal(q.queued, 6);
	/* Two in flight at most; the excess waits in arrival order. */
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 0);
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 1);
	assert_null(scsitgt__iser_rdq_next(&q));
	assert_int_equal(q.busy, 2);
	assert_int_equal(q.queued, 4);
	scsitgt__iser_rdq_done(&q);
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 2);
	assert_null(scsitgt__iser_rdq_next(&q));
	/* A READ that could not be posted goes back to the head and frees its slot. */
	scsitgt__iser_rdq_done(&q);
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 3);
	scsitgt__iser_rdq_unget(&q, &it[3].q);
	assert_int_equal(q.busy, 1);
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 3);
	scsitgt__iser_rdq_done(&q);
	scsitgt__iser_rdq_done(&q);
	assert_int_equal(q.busy, 0);
	assert_int_equal(q.max_busy, 2);
	/* Teardown takes what still waits, in order. */
	{
		struct scsitgt__iser_rdq_item *l = scsitgt__iser_rdq_flush(&q);

		assert_int_equal(id_of(l), 4);
		assert_int_equal(id_of(l->next), 5);
		assert_null(l->next->next);
	}
	assert_int_equal(q.queued, 0);
	assert_null(scsitgt__iser_rdq_next(&q));
	/* The queue works again after a flush; done() never underflows. */
	scsitgt__iser_rdq_done(&q);
	assert_int_equal(q.busy, 0);
	scsitgt__iser_rdq_push(&q, &it[0].q);
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 0);
}

static void test_rdq_depth_zero_is_one(void **state)
{
	struct scsitgt__iser_rdq q;
	struct item a = { .id = 1 }, b = { .id = 2 };

	(void)state;
	scsitgt__iser_rdq_init(&q, 0);
	scsitgt__iser_rdq_push(&q, &a.q);
	scsitgt__iser_rdq_push(&q, &b.q);
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 1);
	assert_null(scsitgt__iser_rdq_next(&q));
}

/* Walk @l and write its ids into @ids (at most @n); returns how many. */
static int ids_of(struct scsitgt__iser_rdq_item *l, int *ids, int n)
{
	int k = 0;

	for (; l && k < n; l = l->next)
		ids[k++] = id_of(l);
	return k;
}

/*
 * An aborted task's waiting READs leave the queue (R4 of review32): the others keep their
 * order, the tail stays right for later pushes, and READs already in flight stay counted.
 */
static void test_rdq_take_itt(void **state)
{
	static const uint32_t itt_of[7] = { 5, 9, 5, 5, 7, 9, 5 };
	struct scsitgt__iser_rdq q;
	struct scsitgt__iser_rdq_item *l;
	struct item it[8];
	int ids[8];

	(void)state;
	scsitgt__iser_rdq_init(&q, 1);
	for (int i = 0; i < 7; i++) {
		it[i].id = i;
		it[i].q.itt = itt_of[i];
		scsitgt__iser_rdq_push(&q, &it[i].q);
	}
	/* READ 0 (ITT 5) is in flight: not queued any more, not taken. */
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 0);
	assert_int_equal(q.queued, 6);
	/* The head, the middle and the tail of the queue are ITT 5's. */
	l = scsitgt__iser_rdq_take_itt(&q, 5);
	assert_int_equal(ids_of(l, ids, 8), 3);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 3);
	assert_int_equal(ids[2], 6);
	assert_int_equal(q.queued, 3);
	assert_int_equal(q.busy, 1);
	/* An ITT with nothing waiting: nothing taken, nothing changed. */
	assert_null(scsitgt__iser_rdq_take_itt(&q, 5));
	assert_null(scsitgt__iser_rdq_take_itt(&q, 42));
	assert_int_equal(q.queued, 3);
	/* A push after taking the tail lands behind the survivors. */
	it[7].id = 7;
	it[7].q.itt = 9;
	scsitgt__iser_rdq_push(&q, &it[7].q);
	scsitgt__iser_rdq_done(&q);
	for (int want = 1; want <= 7; want++) {
		if (want == 2 || want == 3 || want == 6)
			continue;
		assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), want);
		scsitgt__iser_rdq_done(&q);
	}
	assert_null(scsitgt__iser_rdq_next(&q));
	assert_int_equal(q.queued, 0);
	/* Taking every READ leaves an empty queue that still works. */
	it[0].q.itt = 3;
	it[1].q.itt = 3;
	scsitgt__iser_rdq_push(&q, &it[0].q);
	scsitgt__iser_rdq_push(&q, &it[1].q);
	l = scsitgt__iser_rdq_take_itt(&q, 3);
	assert_int_equal(ids_of(l, ids, 8), 2);
	assert_int_equal(q.queued, 0);
	assert_null(scsitgt__iser_rdq_next(&q));
	scsitgt__iser_rdq_push(&q, &it[4].q);
	assert_int_equal(id_of(scsitgt__iser_rdq_next(&q)), 4);
	assert_null(scsitgt__iser_rdq_next(&q));
}

static void test_credit_per_cmd(void **state)
{
	struct scsitgt__iser_credit_params p = {
		.queue_depth = 128,
		.recv_dsl = 8192,
		.first_burst = 262144,
		.initial_r2t = false,
		.immediate_data = true,
		.unexpected = 16,
	};

	(void)state;
	/* 256 KiB of unsolicited data in 8 KiB Data-Outs: 32 receives, plus the command. */
	assert_int_equal(scsitgt__iser_credit_per_cmd(&p), 33);
	p.first_burst = 8193;
	assert_int_equal(scsitgt__iser_credit_per_cmd(&p), 3);
	p.first_burst = 8192;
	assert_int_equal(scsitgt__iser_credit_per_cmd(&p), 2);
	/* InitialR2T=Yes: only the immediate data, in the command's own SEND. */
	p.initial_r2t = true;
	p.first_burst = 262144;
	assert_int_equal(scsitgt__iser_credit_per_cmd(&p), 1);
}

static void test_credit_recvs_and_window(void **state)
{
	struct scsitgt__iser_credit_params p = {
		.queue_depth = 128,
		.recv_dsl = 8192,
		.first_burst = 8192,
		.initial_r2t = false,
		.immediate_data = true,
		.unexpected = 16,
	};

	(void)state;
	assert_int_equal(scsitgt__iser_credit_recvs(&p), 128 * 2 + 16);
	/* Enough posted: the whole window. */
	assert_int_equal(scsitgt__iser_credit_window(&p, 272), 128);
	assert_int_equal(scsitgt__iser_credit_window(&p, 512), 128);
	/* Fewer: the window shrinks to what they cover, never below one. */
	assert_int_equal(scsitgt__iser_credit_window(&p, 271), 127);
	assert_int_equal(scsitgt__iser_credit_window(&p, 116), 50);
	assert_int_equal(scsitgt__iser_credit_window(&p, 17), 1);
	assert_int_equal(scsitgt__iser_credit_window(&p, 3), 1);
	/* The big first burst of an unlimited configuration: 512 buffers cover 15 commands. */
	p.first_burst = 262144;
	assert_int_equal(scsitgt__iser_credit_recvs(&p), 128 * 33 + 16);
	assert_int_equal(scsitgt__iser_credit_window(&p, 512), 15);
	/* No reserve given still keeps one. */
	p.unexpected = 0;
	p.initial_r2t = true;
	assert_int_equal(scsitgt__iser_credit_recvs(&p), 129);
	/* Huge values saturate instead of wrapping. */
	p.queue_depth = UINT32_MAX;
	p.initial_r2t = false;
	p.recv_dsl = 512;
	p.first_burst = 16777215;
	assert_int_equal(scsitgt__iser_credit_recvs(&p), UINT32_MAX);
}

static void test_unexp_unlimited(void **state)
{
	struct scsitgt__iser_unexp u;

	(void)state;
	scsitgt__iser_unexp_init(&u, 0);
	for (int i = 0; i < 1000; i++) {
		assert_true(scsitgt__iser_unexp_can_send(&u));
		scsitgt__iser_unexp_sent(&u, i & 1, (uint32_t)i);
	}
	assert_int_equal(u.n, 0);
}

static void test_unexp_limit(void **state)
{
	struct scsitgt__iser_unexp u;

	(void)state;
	scsitgt__iser_unexp_init(&u, 2);
	assert_true(scsitgt__iser_unexp_can_send(&u));
	scsitgt__iser_unexp_sent(&u, true, 0x1234); /* ping, TTT 0x1234 */
	assert_true(scsitgt__iser_unexp_can_send(&u));
	scsitgt__iser_unexp_sent(&u, false, 100); /* Async Message, StatSN 100 */
	assert_false(scsitgt__iser_unexp_can_send(&u));
	/* ExpStatSN 100 does not acknowledge StatSN 100 yet; 101 does. */
	scsitgt__iser_unexp_ack(&u, 100);
	assert_false(scsitgt__iser_unexp_can_send(&u));
	scsitgt__iser_unexp_ack(&u, 101);
	assert_true(scsitgt__iser_unexp_can_send(&u));
	/* Acknowledgements never end a ping; its answer does, once. */
	scsitgt__iser_unexp_ack(&u, 5000);
	assert_int_equal(u.n, 1);
	assert_false(scsitgt__iser_unexp_pong(&u, 0x9999));
	assert_true(scsitgt__iser_unexp_pong(&u, 0x1234));
	assert_false(scsitgt__iser_unexp_pong(&u, 0x1234));
	assert_int_equal(u.n, 0);
	/* StatSN wraps (RFC 1982): 0xffffffff is acknowledged by ExpStatSN 0. */
	scsitgt__iser_unexp_sent(&u, false, 0xffffffffu);
	scsitgt__iser_unexp_ack(&u, 0xfffffff0u);
	assert_int_equal(u.n, 1);
	scsitgt__iser_unexp_ack(&u, 0);
	assert_int_equal(u.n, 0);
}

static void test_unexp_large_limit_is_tracked_bounded(void **state)
{
	struct scsitgt__iser_unexp u;
	uint32_t i;

	(void)state;
	scsitgt__iser_unexp_init(&u, 1000);
	for (i = 0; scsitgt__iser_unexp_can_send(&u); i++)
		scsitgt__iser_unexp_sent(&u, true, i);
	assert_int_equal(i, SCSITGT__ISER_UNEXP_TRACK);
	assert_true(scsitgt__iser_unexp_pong(&u, 7));
	assert_true(scsitgt__iser_unexp_can_send(&u));
}

/* review32 N9: room for one more behind the unexpected PDUs already queued, not sent yet. */
static void test_unexp_can_queue(void **state)
{
	struct scsitgt__iser_unexp u;

	(void)state;
	scsitgt__iser_unexp_init(&u, 0);
	assert_true(scsitgt__iser_unexp_can_queue(&u, 0));
	assert_true(scsitgt__iser_unexp_can_queue(&u, 0xffffffffu));
	scsitgt__iser_unexp_init(&u, 2);
	assert_true(scsitgt__iser_unexp_can_queue(&u, 0));
	assert_true(scsitgt__iser_unexp_can_queue(&u, 1));
	assert_false(scsitgt__iser_unexp_can_queue(&u, 2));
	scsitgt__iser_unexp_sent(&u, false, 100);
	assert_true(scsitgt__iser_unexp_can_queue(&u, 0));
	assert_false(scsitgt__iser_unexp_can_queue(&u, 1));
	assert_false(scsitgt__iser_unexp_can_queue(&u, 0xffffffffu)); /* no wrap */
	scsitgt__iser_unexp_sent(&u, true, 7);
	assert_false(scsitgt__iser_unexp_can_queue(&u, 0));
	assert_true(scsitgt__iser_unexp_pong(&u, 7));
	assert_true(scsitgt__iser_unexp_can_queue(&u, 0));
	/* A limit beyond what is tracked: bounded by the tracking. */
	scsitgt__iser_unexp_init(&u, 1000);
	assert_true(scsitgt__iser_unexp_can_queue(&u, SCSITGT__ISER_UNEXP_TRACK - 1));
	assert_false(scsitgt__iser_unexp_can_queue(&u, SCSITGT__ISER_UNEXP_TRACK));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rdq_depth_and_order),
		cmocka_unit_test(test_rdq_depth_zero_is_one),
		cmocka_unit_test(test_rdq_take_itt),
		cmocka_unit_test(test_credit_per_cmd),
		cmocka_unit_test(test_credit_recvs_and_window),
		cmocka_unit_test(test_unexp_unlimited),
		cmocka_unit_test(test_unexp_limit),
		cmocka_unit_test(test_unexp_large_limit_is_tracked_bounded),
		cmocka_unit_test(test_unexp_can_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
