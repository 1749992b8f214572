/* SPDX-License-Identifier: MIT */
/*
 * Write buffers (src/transport/iscsi/scsi.c): a WRITE gets its data buffer only when data can
 * arrive, and R2Ts wait while the session holds max_write_buffer_bytes of write buffers; the
 * waiting WRITEs go on, oldest first, as buffers come back. A single WRITE larger than the
 * budget still proceeds. The data written is the data read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

#define KIB 1024u
#define SEG 8192u

struct wr {
	uint32_t itt;
	uint32_t lba;
	uint32_t len;
	/* R2Ts seen and not answered yet */
	struct {
		uint32_t ttt, off, len;
	} r2t[64];
	unsigned int nr2t, next;
	int status; /* -1 until the response */
};

static uint8_t pattern(uint32_t lba, uint32_t i)
{
	return (uint8_t)(lba * 13 + i * 7 + (i >> 9));
}

static void send_write(struct harness *h, struct wr *w, uint32_t lba, uint32_t len)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	memset(w, 0, sizeof(*w));
	w->lba = lba;
	w->len = len;
	w->status = -1;
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE | 1);
	w->itt = ++h->itt;
	put_be32(&bhs[ISCSI_BHS_ITT], w->itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], len);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn++);
	bhs[ISCSI_CMD_CDB] = 0x2a;
	put_be32(&bhs[ISCSI_CMD_CDB + 2], lba);
	put_be16(&bhs[ISCSI_CMD_CDB + 7], (uint16_t)(len / 512));
	h_send(h, bhs, NULL, 0); /* no immediate data: everything is solicited */
}

/* Sort what the target sent into the writes' R2T lists and statuses. */
static void collect(struct harness *h, struct wr *w, unsigned int n)
{
	struct h_pdu *r;

	while ((r = h_take(h)) != NULL) {
		uint32_t itt = get_be32(&r->bhs[ISCSI_BHS_ITT]);
		unsigned int i;

		for (i = 0; i < n && w[i].itt != itt; i++)
			;
		assert_true(i < n);
		if (scsitgt__bhs_opcode(r->bhs) == ISCSI_OP_R2T) {
			assert_true(w[i].nr2t < 64);
			w[i].r2t[w[i].nr2t].ttt = get_be32(&r->bhs[ISCSI_BHS_TTT]);
			w[i].r2t[w[i].nr2t].off = get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]);
			w[i].r2t[w[i].nr2t].len = get_be32(&r->bhs[ISCSI_R2T_DESIRED_LEN]);
			w[i].nr2t++;
		} else {
			assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
			w[i].status = r->bhs[ISCSI_RSP_STATUS];
		}
	}
}

/* Answer every R2T of @w seen so far, then collect what comes back. */
static void answer(struct harness *h, struct wr *w, struct wr *all, unsigned int n)
{
	static uint8_t seg[SEG];

	while (w->next < w->nr2t) {
		uint32_t o = w->r2t[w->next].off, end = o + w->r2t[w->next].len, sn = 0;
		uint32_t ttt = w->r2t[w->next].ttt;

		w->next++;
		for (; o < end; o += SEG) {
			uint8_t bhs[ISCSI_BHS_LEN];
			uint32_t k = end - o < SEG ? end - o : SEG;

			for (uint32_t i = 0; i < k; i++)
				seg[i] = pattern(w->lba, o + i);
			scsitgt__bhs_init(bhs, ISCSI_OP_DATA_OUT,
					  o + k == end ? ISCSI_FLAG_FINAL : 0);
			put_be32(&bhs[ISCSI_BHS_ITT], w->itt);
			put_be32(&bhs[ISCSI_BHS_TTT], ttt);
			put_be32(&bhs[ISCSI_BHS_DATASN], sn++);
			put_be32(&bhs[ISCSI_BHS_BUFFER_OFFSET], o);
			h_send(h, bhs, seg, k);
		}
		collect(h, all, n);
	}
}

static bool has_buf(struct harness *h, const struct wr *w)
{
	struct scsitgt__iscsi_task *t = scsitgt__iscsi_task_find(h->conn, w->itt);

	return t && t->cmd->buf != NULL;
}

static void check_readback(struct harness *h, const struct wr *w)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	uint32_t got = 0;
	struct h_pdu *r;

	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_READ | 1);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], w->len);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn++);
	bhs[ISCSI_CMD_CDB] = 0x28;
	put_be32(&bhs[ISCSI_CMD_CDB + 2], w->lba);
	put_be16(&bhs[ISCSI_CMD_CDB + 7], (uint16_t)(w->len / 512));
	h_send(h, bhs, NULL, 0);
	while ((r = h_take(h)) != NULL) {
		uint32_t off = get_be32(&r->bhs[ISCSI_BHS_BUFFER_OFFSET]);

		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_DATA_IN);
		for (uint32_t i = 0; i < r->len; i++)
			assert_int_equal(r->data[i], pattern(w->lba, off + i));
		got += r->len;
	}
	assert_int_equal(got, w->len);
}

static void set_budget(struct harness *h, uint64_t bytes)
{
	struct scsitgt_iscsi_params p;

	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.max_write_buffer_bytes = bytes;
	assert_int_equal(scsitgt_iscsi_target_set_params(h->tgt, &p), 0);
}

/* Four 512 KiB WRITEs under a 1 MiB budget: two at a time get R2Ts and buffers. */
static void test_budget_queues_r2ts(void **state)
{
	struct harness h;
	struct wr w[4];

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	set_budget(&h, 1024 * KIB);
	assert_int_equal(h_login(&h, "Normal"), 0);
	for (unsigned int i = 0; i < 4; i++)
		send_write(&h, &w[i], i * 1024, 512 * KIB);
	collect(&h, w, 4);
	/* MaxOutstandingR2T=4 bursts of 128 KiB for each of the first two; none for the rest. */
	assert_int_equal(w[0].nr2t, 4);
	assert_int_equal(w[1].nr2t, 4);
	assert_int_equal(w[2].nr2t, 0);
	assert_int_equal(w[3].nr2t, 0);
	assert_true(has_buf(&h, &w[0]) && has_buf(&h, &w[1]));
	assert_false(has_buf(&h, &w[2]) || has_buf(&h, &w[3]));
	assert_int_equal(h.conn->sess->write_bytes, 1024 * KIB);

	/* The second WRITE finishes first: its buffer lets the third one (not the fourth) go. */
	answer(&h, &w[1], w, 4);
	assert_int_equal(w[1].status, 0);
	assert_int_equal(w[2].nr2t, 4);
	assert_int_equal(w[3].nr2t, 0);
	answer(&h, &w[0], w, 4);
	assert_int_equal(w[0].status, 0);
	assert_int_equal(w[3].nr2t, 4);
	answer(&h, &w[3], w, 4);
	answer(&h, &w[2], w, 4);
	for (unsigned int i = 0; i < 4; i++)
		assert_int_equal(w[i].status, 0);
	assert_int_equal(h.conn->sess->write_bytes, 0);
	for (unsigned int i = 0; i < 4; i++)
		check_readback(&h, &w[i]);
	h_fini(&h);
}

/* A WRITE larger than the whole budget still goes (alone); a disconnect frees the waiters. */
static void test_budget_big_write_and_disconnect(void **state)
{
	struct harness h;
	struct wr w[3];

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	set_budget(&h, 256 * KIB);
	assert_int_equal(h_login(&h, "Normal"), 0);
	send_write(&h, &w[0], 0, 1024 * KIB);
	send_write(&h, &w[1], 2048, 64 * KIB);
	collect(&h, w, 2);
	assert_true(w[0].nr2t > 0);
	assert_int_equal(w[1].nr2t, 0);
	while (w[0].status < 0 && w[0].next < w[0].nr2t)
		answer(&h, &w[0], w, 2);
	assert_int_equal(w[0].status, 0);
	assert_int_equal(w[1].nr2t, 1);
	answer(&h, &w[1], w, 2);
	assert_int_equal(w[1].status, 0);
	check_readback(&h, &w[0]);
	check_readback(&h, &w[1]);

	/* Two waiting WRITEs behind one holding the budget, then the connection goes. */
	send_write(&h, &w[0], 0, 256 * KIB);
	send_write(&h, &w[1], 1024, 256 * KIB);
	send_write(&h, &w[2], 2048, 256 * KIB);
	collect(&h, w, 3);
	assert_int_equal(w[0].nr2t, 2);
	assert_int_equal(w[1].nr2t + w[2].nr2t, 0);
	h_fini(&h); /* must free every task and buffer: the sanitizer builds check */
}

/* Budget 0 means no limit: every WRITE gets its R2Ts at once. */
static void test_budget_unlimited(void **state)
{
	struct harness h;
	struct wr w[3];

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	set_budget(&h, 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	for (unsigned int i = 0; i < 3; i++)
		send_write(&h, &w[i], i * 1024, 512 * KIB);
	collect(&h, w, 3);
	for (unsigned int i = 0; i < 3; i++)
		assert_int_equal(w[i].nr2t, 4);
	for (unsigned int i = 0; i < 3; i++) {
		while (w[i].status < 0 && w[i].next < w[i].nr2t)
			answer(&h, &w[i], w, 3);
		assert_int_equal(w[i].status, 0);
	}
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_queues_r2ts),
		cmocka_unit_test(test_budget_big_write_and_disconnect),
		cmocka_unit_test(test_budget_unlimited),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
