/* SPDX-License-Identifier: MIT */
/*
 * The output writer of a TCP connection (transport/iscsi/txq.h) shares its loop: two writers
 * on one loop, each on a socket pair whose kernel buffers take everything queued (so the
 * writer is never stopped by a full socket). The one with a long queue writes its turn's
 * share (turn_bytes) and yields; the other one's batch, flushed in the same loop turn, is
 * written before the long queue is done; the long queue then goes on from later turns, whole
 * and in order. Below the share nothing changes: one flush writes the whole queue, without
 * yielding.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h"
#include "transport/iscsi/txq.h"

#define BATCH_DATA 4048u /* with its 48-byte header: 4 KiB a batch */
#define LONG_BATCHES 16u

struct tw {
	struct scsitgt__iscsi_writer w;
	uv_pipe_t pipe;
	uv_idle_t resume;
	int peer; /* the other end of the socket pair, read by the test */
	unsigned int queued;
	unsigned int written;
	unsigned int yields;
	unsigned int failed;
	uint8_t data[LONG_BATCHES][BATCH_DATA];
};

/* The long queue's batches written when the other writer's batch was. */
static unsigned int long_written_then;
static struct tw *long_tw;

static void tw_written(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *tx)
{
	struct tw *t = scsitgt__container_of(w, struct tw, w);

	t->written++;
	if (t != long_tw)
		long_written_then = long_tw->written;
	scsitgt__iscsi_tx_destroy(tx);
}

static void tw_failed(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *chain, int status)
{
	struct tw *t = scsitgt__container_of(w, struct tw, w);

	(void)status;
	while (chain) {
		struct scsitgt__iscsi_tx *next = chain->next;

		t->failed++;
		scsitgt__iscsi_tx_destroy(chain);
		chain = next;
	}
}

static void tw_write_done(struct scsitgt__iscsi_writer *w)
{
	scsitgt__iscsi_writer_flush(w);
}

/* As tcp.c: go on from the next loop turn, which does not wait for I/O. */
static void tw_resume_cb(uv_idle_t *i)
{
	struct tw *t = i->data;

	uv_idle_stop(i);
	scsitgt__iscsi_writer_resume(&t->w);
}

static void tw_yield(struct scsitgt__iscsi_writer *w)
{
	struct tw *t = scsitgt__container_of(w, struct tw, w);

	t->yields++;
	uv_idle_start(&t->resume, tw_resume_cb);
}

static const struct scsitgt__iscsi_writer_ops tw_ops = {
	.written = tw_written,
	.failed = tw_failed,
	.write_done = tw_write_done,
	.yield = tw_yield,
};

static void tw_init(struct tw *t, uv_loop_t *loop)
{
	int sv[2];

	memset(t, 0, sizeof(*t));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(uv_pipe_init(loop, &t->pipe, 0), 0);
	assert_int_equal(uv_pipe_open(&t->pipe, sv[0]), 0);
	assert_int_equal(uv_idle_init(loop, &t->resume), 0);
	t->resume.data = t;
	t->peer = sv[1];
	scsitgt__iscsi_writer_init(&t->w, (uv_stream_t *)&t->pipe, &tw_ops);
}

/* Queue @n more batches of one PDU each; the i-th batch queued has its data filled with i + 1. */
static void tw_queue(struct tw *t, unsigned int n)
{
	for (unsigned int k = 0; k < n; k++) {
		struct scsitgt__iscsi_tx *tx = scsitgt__iscsi_tx_create(1);
		unsigned int i = t->queued;
		uint8_t *bhs;

		assert_non_null(tx);
		assert_true(i < LONG_BATCHES);
		memset(t->data[i], (int)i + 1, BATCH_DATA);
		bhs = scsitgt__iscsi_tx_add(tx, t->data[i], BATCH_DATA);
		assert_non_null(bhs);
		bhs[0] = 0x25; /* SCSI Data-In */
		scsitgt__iscsi_tx_seal(tx, false, false);
		assert_int_equal(tx->bytes, 48 + BATCH_DATA);
		scsitgt__iscsi_txq_push(&t->w.q, tx);
		t->queued++;
	}
}

/* Every byte the writer wrote, in order: each batch's header, then its data. */
static void tw_check_stream(struct tw *t)
{
	uint8_t buf[48 + BATCH_DATA];

	for (unsigned int i = 0; i < t->queued; i++) {
		size_t got = 0;

		while (got < sizeof(buf)) {
			ssize_t n = read(t->peer, buf + got, sizeof(buf) - got);

			assert_true(n > 0);
			got += (size_t)n;
		}
		assert_int_equal(buf[0], 0x25);
		for (unsigned int j = 0; j < BATCH_DATA; j++)
			if (buf[48 + j] != (uint8_t)(i + 1))
				fail_msg("batch %u byte %u: %u", i, j, buf[48 + j]);
	}
}

static void tw_close(struct tw *t)
{
	uv_close((uv_handle_t *)&t->pipe, NULL);
	uv_close((uv_handle_t *)&t->resume, NULL);
	close(t->peer);
}

/* Two writers on @loop: @a with a long queue, @b with one batch. */
static void pair_start(uv_loop_t *loop, struct tw *a, struct tw *b)
{
	assert_int_equal(uv_loop_init(loop), 0);
	tw_init(a, loop);
	tw_init(b, loop);
	long_tw = a;
	long_written_then = UINT32_MAX;
}

static void pair_queue(struct tw *a, struct tw *b)
{
	tw_queue(a, LONG_BATCHES);
	tw_queue(b, 1);
}

/* Both streams whole and in order; everything closed. */
static void pair_end(uv_loop_t *loop, struct tw *a, struct tw *b)
{
	tw_check_stream(a);
	tw_check_stream(b);
	tw_close(a);
	tw_close(b);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
}

/* Loop turns until @a's LONG_BATCHES are written: one share (four batches) a turn. */
static void long_run_out(uv_loop_t *loop, struct tw *a)
{
	while (a->written + a->failed < LONG_BATCHES)
		assert_true(uv_run(loop, UV_RUN_ONCE) != 0 || a->written == LONG_BATCHES);
	assert_int_equal(a->failed, 0);
	assert_int_equal(a->written, LONG_BATCHES);
	assert_int_equal(a->yields, LONG_BATCHES / 4 - 1);
	assert_false(a->w.yielded);
	assert_null(a->w.q.head);
}

static void test_long_queue_yields(void **state)
{
	static struct tw a, b;
	uv_loop_t loop;

	(void)state;
	pair_start(&loop, &a, &b);
	/* A share of four batches: 64 KiB queued fit the socket pair's buffers whole. */
	a.w.turn_bytes = 4 * (48 + BATCH_DATA);
	b.w.turn_bytes = a.w.turn_bytes;
	pair_queue(&a, &b);
	/* One loop turn in which both connections flush (their read callbacks, say). */
	scsitgt__iscsi_writer_flush(&a.w);
	scsitgt__iscsi_writer_flush(&b.w);
	assert_int_equal(b.written, 1);
	assert_int_equal(b.yields, 0);
	/* The long queue wrote its share and let the other one go. */
	assert_int_equal(long_written_then, 4);
	assert_int_equal(a.yields, 1);
	assert_true(a.w.yielded);
	/* It goes on from later turns until everything is written. */
	long_run_out(&loop, &a);
	pair_end(&loop, &a, &b);
}

/*
 * While a writer has yielded, only its idle turn writes: a batch queued meanwhile and a flush
 * in the same loop turn (a read callback's, as tcp.c's and tcp_worker.c's make when a command
 * arrives) write nothing, or a connection that keeps receiving commands would get a fresh
 * share with every read and the yield would not hold.
 */
static void test_no_flush_while_yielded(void **state)
{
	static struct tw a, b;
	uv_loop_t loop;

	(void)state;
	pair_start(&loop, &a, &b);
	a.w.turn_bytes = 4 * (48 + BATCH_DATA);
	tw_queue(&a, LONG_BATCHES - 4);
	scsitgt__iscsi_writer_flush(&a.w);
	assert_int_equal(a.written, 4);
	assert_true(a.w.yielded);
	/* Same loop turn: a response is queued and the read callback flushes. */
	tw_queue(&a, 4);
	scsitgt__iscsi_writer_flush(&a.w);
	assert_int_equal(a.written, 4);
	assert_true(a.w.yielded);
	assert_int_equal(a.yields, 1);
	/* The idle turn writes the next share, and no more. */
	assert_true(uv_run(&loop, UV_RUN_ONCE) != 0);
	assert_int_equal(a.written, 8);
	assert_int_equal(a.yields, 2);
	assert_true(a.w.yielded);
	long_run_out(&loop, &a);
	pair_end(&loop, &a, &b);
}

/* The default share is a whole writev (4 MiB): a turn's output below it is written by one
 * flush, as before, without a yield. */
static void test_below_share_no_yield(void **state)
{
	static struct tw a, b;
	uv_loop_t loop;

	(void)state;
	pair_start(&loop, &a, &b);
	assert_int_equal(a.w.turn_bytes, SCSITGT__ISCSI_TXQ_TURN_BYTES);
	pair_queue(&a, &b);
	scsitgt__iscsi_writer_flush(&a.w);
	assert_int_equal(a.written, LONG_BATCHES);
	assert_int_equal(a.yields, 0);
	assert_false(a.w.yielded);
	scsitgt__iscsi_writer_flush(&b.w);
	assert_int_equal(b.written, 1);
	pair_end(&loop, &a, &b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_queue_yields),
		cmocka_unit_test(test_below_share_no_yield),
		cmocka_unit_test(test_no_flush_while_yielded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
