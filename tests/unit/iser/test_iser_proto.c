/* SPDX-License-Identifier: MIT */
/*
 * Tests of transport/iser/iser_proto.c (RFC 7145 §9 codecs) and of the iSER keys in the
 * shared negotiator (RFC 7145 §6.3) as login.c configures it for an iSER connection.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/iscsi/text/keys.h"
#include "transport/iscsi/text/textbuf.h"
#include "transport/iser/iser_proto.h"

/* ---- iSER header (§9.2) ---- */

static void test_hdr_roundtrip(void **state)
{
	struct scsitgt__iser_hdr h = { .wsv = true, .rsv = true }, d;
	uint8_t buf[SCSITGT__ISER_HDR_LEN];

	(void)state;
	h.write_stag = 0x11223344u;
	h.write_va = 0x0102030405060708ull;
	h.read_stag = 0xa1b2c3d4u;
	h.read_va = 0xfffefdfcfbfaf9f8ull;
	scsitgt__iser_hdr_encode(buf, &h);
	assert_int_equal(buf[0], 0x1c);
	assert_int_equal(buf[4], 0x11);
	assert_int_equal(buf[15], 0x08);
	assert_int_equal(buf[16], 0xa1);
	assert_int_equal(buf[27], 0xf8);
	assert_int_equal(scsitgt__iser_hdr_decode(buf, sizeof(buf), &d), 0);
	assert_int_equal(d.opcode, SCSITGT__ISER_OP_ISCSI);
	assert_true(d.wsv && d.rsv);
	assert_int_equal(d.write_stag, h.write_stag);
	assert_true(d.write_va == h.write_va);
	assert_int_equal(d.read_stag, h.read_stag);
	assert_true(d.read_va == h.read_va);
}

static void test_hdr_target_send(void **state)
{
	uint8_t buf[SCSITGT__ISER_HDR_LEN];
	struct scsitgt__iser_hdr d;

	(void)state;
	memset(buf, 0xee, sizeof(buf));
	scsitgt__iser_hdr_encode(buf, NULL);
	/* A target SEND: iSCSI control-type, no STag valid, everything else zero. */
	assert_int_equal(buf[0], 0x10);
	for (size_t i = 1; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(scsitgt__iser_hdr_decode(buf, sizeof(buf), &d), 0);
	assert_false(d.wsv || d.rsv);
}

static void test_hdr_bad(void **state)
{
	uint8_t buf[SCSITGT__ISER_HDR_LEN] = { 0x10 };
	struct scsitgt__iser_hdr d;

	(void)state;
	assert_int_equal(scsitgt__iser_hdr_decode(buf, SCSITGT__ISER_HDR_LEN - 1, &d), -EMSGSIZE);
	assert_int_equal(scsitgt__iser_hdr_decode(buf, 0, &d), -EMSGSIZE);
	buf[0] = 0x00; /* opcode 0 is not defined */
	assert_int_equal(scsitgt__iser_hdr_decode(buf, sizeof(buf), &d), -EPROTO);
	buf[0] = 0x40;
	assert_int_equal(scsitgt__iser_hdr_decode(buf, sizeof(buf), &d), -EPROTO);
	buf[0] = 0x11; /* reserved low bit */
	assert_int_equal(scsitgt__iser_hdr_decode(buf, sizeof(buf), &d), -EPROTO);
}

static void test_hdr_hello(void **state)
{
	uint8_t buf[SCSITGT__ISER_HDR_LEN] = { 0x20, 0x11, 0x00, 0x10 };
	struct scsitgt__iser_hdr d;

	(void)state;
	assert_int_equal(scsitgt__iser_hdr_decode(buf, sizeof(buf), &d), 0);
	assert_int_equal(d.opcode, SCSITGT__ISER_OP_HELLO);
	assert_int_equal(d.max_ver, 1);
	assert_int_equal(d.min_ver, 1);
	assert_int_equal(d.ird, 16);
	buf[0] = 0x31;
	assert_int_equal(scsitgt__iser_hdr_decode(buf, sizeof(buf), &d), 0);
	assert_int_equal(d.opcode, SCSITGT__ISER_OP_HELLO_REPLY);
	assert_true(d.reject);
}

/* ---- CM private data (§9.1) ---- */

static void test_cm(void **state)
{
	uint8_t req[4] = { 0xc0, 0, 0, 0 }, rep[4];
	struct scsitgt__iser_cm c;

	(void)state;
	assert_int_equal(scsitgt__iser_cm_req_decode(req, 4, &c), 0);
	assert_true(c.given && c.zbva_not_sup && c.sie_not_sup);
	req[0] = 0x40;
	assert_int_equal(scsitgt__iser_cm_req_decode(req, sizeof(req), &c), 0);
	assert_false(c.zbva_not_sup);
	assert_true(c.sie_not_sup);
	/* Longer private data (rdma_cm pads it) is fine; reserved bits are ignored. */
	uint8_t big[56] = { 0x80 | 0x01 };
	assert_int_equal(scsitgt__iser_cm_req_decode(big, sizeof(big), &c), 0);
	assert_true(c.zbva_not_sup && !c.sie_not_sup);
	assert_int_equal(scsitgt__iser_cm_req_decode(NULL, 0, &c), 0);
	assert_false(c.given);
	assert_int_equal(scsitgt__iser_cm_req_decode(req, 3, &c), -EMSGSIZE);
	scsitgt__iser_cm_rep_encode(rep);
	assert_int_equal(rep[0], 0xc0);
	assert_int_equal(rep[1] | rep[2] | rep[3], 0);
}

/* ---- one PDU per SEND ---- */

static void test_pdu_span(void **state)
{
	uint8_t pdu[48 + 8 + 12] = { 0 };
	uint32_t pad;

	(void)state;
	pdu[7] = 5; /* DSL 5: pad 3 */
	assert_int_equal(scsitgt__iser_pdu_span(pdu, 53, &pad), 53);
	assert_int_equal(pad, 3);
	assert_int_equal(scsitgt__iser_pdu_span(pdu, 56, &pad), 56);
	assert_int_equal(pad, 0);
	assert_int_equal(scsitgt__iser_pdu_span(pdu, 52, &pad), -EMSGSIZE);
	assert_int_equal(scsitgt__iser_pdu_span(pdu, 57, &pad), -EPROTO);
	assert_int_equal(scsitgt__iser_pdu_span(pdu, 47, &pad), -EMSGSIZE);
	pdu[4] = 2; /* 8 bytes of AHS */
	pdu[7] = 0;
	assert_int_equal(scsitgt__iser_pdu_span(pdu, 56, &pad), 56);
	assert_int_equal(pad, 0);
	assert_int_equal(scsitgt__iser_pdu_span(pdu, 48, &pad), -EMSGSIZE);
}

/* ---- keys (§6.3) ---- */

struct neg_fx {
	struct scsitgt__iscsi_neg_params cfg;
	struct scsitgt__iscsi_neg neg;
	struct scsitgt__iscsi_textbuf resp;
	struct scsitgt__iscsi_chap_keys chap;
	uint8_t text[4096];
};

static const char *resp_get(const struct scsitgt__iscsi_textbuf *tb, const char *key)
{
	size_t len, pos = 0;
	const uint8_t *text = scsitgt__iscsi_textbuf_data(tb, &len);
	struct scsitgt__iscsi_kv kv;

	while (scsitgt__iscsi_text_next(text, len, &pos, &kv) == 1) {
		if (kv.key_len == strlen(key) && memcmp(kv.key, key, kv.key_len) == 0)
			return kv.value;
	}
	return NULL;
}

static int run(struct neg_fx *f, const char *pairs)
{
	size_t n = strlen(pairs);

	for (size_t i = 0; i < n; i++)
		f->text[i] = pairs[i] == '\n' ? '\0' : (uint8_t)pairs[i];
	scsitgt__iscsi_textbuf_reset(&f->resp);
	scsitgt__iscsi_neg_set_stage(&f->neg, SCSITGT__ISCSI_STAGE_OPERATIONAL);
	return scsitgt__iscsi_neg_text(&f->neg, f->text, n, &f->resp, &f->chap);
}

/* What login.c sets for an iSER connection. */
static void fx_init(struct neg_fx *f, bool iser)
{
	memset(f, 0, sizeof(*f));
	scsitgt__iscsi_neg_params_init(&f->cfg);
	if (iser) {
		f->cfg.rdma_extensions = true;
		f->cfg.header_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE;
		f->cfg.data_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE;
		f->cfg.max_recv_dsl = 8192;
		f->cfg.propose = false;
	}
	scsitgt__iscsi_neg_init(&f->neg, &f->cfg, true);
	scsitgt__iscsi_textbuf_init(&f->resp, 0);
}

static void test_keys_iser(void **state)
{
	struct neg_fx *f = malloc(sizeof(*f));
	const char *v;

	(void)state;
	assert_non_null(f);
	fx_init(f, true);
	assert_int_equal(run(f, "InitiatorName=iqn.2024-01.x:i\nTargetName=iqn.2024-01.x:t\n"
				"RDMAExtensions=Yes\nHeaderDigest=CRC32C,None\n"
				"DataDigest=CRC32C\nInitiatorRecvDataSegmentLength=262144\n"
				"TargetRecvDataSegmentLength=65536\n"
				"MaxOutstandingUnexpectedPDUs=0\n"),
			 0);
	v = resp_get(&f->resp, "RDMAExtensions");
	assert_non_null(v);
	assert_string_equal(v, "Yes");
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "None");
	/* Only CRC32C offered but we take None only: the answer is Reject. */
	assert_string_equal(resp_get(&f->resp, "DataDigest"), "Reject");
	assert_true(f->neg.params.rdma_extensions);
	assert_int_equal(f->neg.params.initiator_recv_dsl, 262144);
	/* TargetRecvDataSegmentLength: the smaller of theirs and our receive buffers. */
	v = resp_get(&f->resp, "TargetRecvDataSegmentLength");
	assert_non_null(v);
	assert_string_equal(v, "8192");
	assert_int_equal(f->neg.params.target_recv_dsl, 8192);
	/* Nothing proposed: the login can end with this answer (Linux ib_iser needs that). */
	assert_false(scsitgt__iscsi_neg_pending(&f->neg));
	scsitgt__iscsi_textbuf_destroy(&f->resp);
	free(f);
}

static void test_keys_iser_on_tcp(void **state)
{
	struct neg_fx *f = malloc(sizeof(*f));

	(void)state;
	assert_non_null(f);
	fx_init(f, false);
	assert_int_equal(run(f, "InitiatorName=iqn.2024-01.x:i\nTargetName=iqn.2024-01.x:t\n"
				"RDMAExtensions=Yes\nTargetRecvDataSegmentLength=65536\n"),
			 0);
	/* A TCP connection refuses RDMAExtensions and calls the iSER-only keys irrelevant. */
	assert_string_equal(resp_get(&f->resp, "RDMAExtensions"), "No");
	assert_string_equal(resp_get(&f->resp, "TargetRecvDataSegmentLength"), "Irrelevant");
	assert_false(f->neg.params.rdma_extensions);
	scsitgt__iscsi_textbuf_destroy(&f->resp);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_hdr_target_send),
		cmocka_unit_test(test_hdr_bad),
		cmocka_unit_test(test_hdr_hello),
		cmocka_unit_test(test_cm),
		cmocka_unit_test(test_pdu_span),
		cmocka_unit_test(test_keys_iser),
		cmocka_unit_test(test_keys_iser_on_tcp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
