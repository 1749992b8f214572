/* SPDX-License-Identifier: MIT */
/*
 * What the target sends over iSER is bounded by the initiator's InitiatorRecvDataSegmentLength
 * (RFC 7145 §6.3; default 8192), not by its MaxRecvDataSegmentLength, and never beyond what
 * the data mover's send buffers hold (datamover.h max_send_dsl; review32 R3). Driven through
 * the iSCSI harness with a data mover marked rdma: a discovery login offering the iSER keys,
 * then SendTargets=All on a target set whose answer is far longer than 8 KiB; every Text
 * Response data segment must fit, and the continued answer must list every target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iser_login.h"

#define SEND_CAP 8192u
#define EXTRA_TARGETS 150

static const struct scsitgt__iscsi_dm_ops rdma_dm_ops = {
	.name = "rdma-test",
	.xmit = h_xmit,
	.close = h_close,
	.rdma = true,
	.max_recv_dsl = 8192,
	.max_send_dsl = SEND_CAP,
};

/* A discovery session over the rdma data mover, logged in with the '|' separated @keys. */
static void start(struct harness *h, const char *keys)
{
	char all[1024];

	assert_int_equal(h_init_dm(h, false, &rdma_dm_ops), 0);
	for (int i = 0; i < EXTRA_TARGETS; i++) {
		struct scsitgt_target_opts to;
		struct scsitgt_target *t;
		char name[128];

		snprintf(name, sizeof(name),
			 "iqn.2026-12.org.libscsitgt:initiator-recv-dsl-target-number-%03d", i);
		scsitgt_target_opts_init(&to, sizeof(to));
		to.name = name;
		assert_int_equal(scsitgt_target_create(&t, h->engine, &to), 0);
	}
	snprintf(all, sizeof(all), "SessionType=Discovery|%s", keys);
	iser_login(h, all);
}

/* One Text Request (F=1) with @itt, @ttt and the '|' separated @keys (NULL: no data). */
static void text_req(struct harness *h, uint32_t itt, uint32_t ttt, const char *keys)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[512];
	uint32_t len = keys ? h_text(text, sizeof(text), keys) : 0;

	scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_REQ | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ttt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn);
	h_send(h, bhs, keys ? text : NULL, len);
}

/* "TargetName=" at the start of a key in @buf (@len bytes). */
static unsigned int count_targets(const uint8_t *buf, size_t len)
{
	static const char key[] = "TargetName=";
	unsigned int n = 0;

	for (size_t off = 0; off < len;) {
		const char *kv = (const char *)buf + off;
		size_t l = strnlen(kv, len - off);

		if (l >= sizeof(key) - 1 && memcmp(kv, key, sizeof(key) - 1) == 0)
			n++;
		off += l + 1;
	}
	return n;
}

/*
 * SendTargets=All, continued (RFC 7143 §11.10: C bit, the target's TTT in the next empty
 * request) until the answer is complete; every data segment must be at most @limit bytes.
 * Returns the largest segment seen.
 */
static uint32_t send_targets(struct harness *h, uint32_t itt, uint32_t limit)
{
	uint8_t *all = NULL;
	size_t total = 0;
	uint32_t largest = 0, ttt = ISCSI_RESERVED_TAG;
	const char *keys = "SendTargets=All";

	for (int round = 0; round < 1000; round++) {
		struct h_pdu *r;
		uint8_t *grown;

		text_req(h, itt, ttt, keys);
		keys = NULL;
		r = h_take(h);
		assert_non_null(r);
		assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_TEXT_RSP);
		assert_int_equal(scsitgt__bhs_itt(r->bhs), itt);
		assert_true(r->len <= limit);
		if (r->len > largest)
			largest = r->len;
		grown = realloc(all, total + r->len + 1);
		assert_non_null(grown);
		all = grown;
		if (r->len)
			memcpy(all + total, r->data, r->len);
		total += r->len;
		if (r->bhs[ISCSI_BHS_FLAGS] & ISCSI_FLAG_FINAL) {
			assert_false(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_TEXT_FLAG_CONTINUE);
			break;
		}
		ttt = get_be32(&r->bhs[ISCSI_BHS_TTT]);
		assert_int_not_equal(ttt, ISCSI_RESERVED_TAG);
	}
	/* The test target and the extra ones, all of them, once. */
	assert_int_equal(count_targets(all, total), EXTRA_TARGETS + 1);
	assert_true(total > SEND_CAP);
	free(all);
	return largest;
}

/* InitiatorRecvDataSegmentLength=1024 bounds every PDU, whatever MaxRecvDataSegmentLength says. */
static void test_initiator_recv_dsl_bounds(void **state)
{
	struct harness h;

	(void)state;
	start(&h, "RDMAExtensions=Yes|InitiatorRecvDataSegmentLength=1024|"
		  "MaxRecvDataSegmentLength=262144");
	assert_int_equal(h.conn->max_xmit_dsl, 1024);
	assert_int_equal(send_targets(&h, 0x100, 1024), 1024);
	/* A MaxRecvDataSegmentLength declared again in full feature phase changes nothing. */
	text_req(&h, 0x101, ISCSI_RESERVED_TAG, "MaxRecvDataSegmentLength=262144");
	assert_non_null(h_take(&h));
	assert_int_equal(h.conn->max_xmit_dsl, 1024);
	assert_int_equal(send_targets(&h, 0x102, 1024), 1024);
	h_fini(&h);
}

/* A login with @keys: the target sends at most @want bytes in one PDU, and PDUs that long. */
static void bounded_to(const char *keys, uint32_t want)
{
	struct harness h;

	start(&h, keys);
	assert_int_equal(h.conn->max_xmit_dsl, want);
	assert_int_equal(send_targets(&h, 0x200, want), want);
	h_fini(&h);
}

/* Not offered: the RFC 7145 default, 8192, not MaxRecvDataSegmentLength's 262144. */
static void test_default_is_8192(void **state)
{
	(void)state;
	bounded_to("RDMAExtensions=Yes|MaxRecvDataSegmentLength=262144", 8192);
}

/* Larger than the data mover's send buffers: what they hold. */
static void test_capped_by_send_buffers(void **state)
{
	(void)state;
	bounded_to("RDMAExtensions=Yes|InitiatorRecvDataSegmentLength=65536|"
		   "MaxRecvDataSegmentLength=65536",
		   SEND_CAP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initiator_recv_dsl_bounds),
		cmocka_unit_test(test_default_is_8192),
		cmocka_unit_test(test_capped_by_send_buffers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
