/* SPDX-License-Identifier: MIT */
/* PDU codec: serial arithmetic, receive state machine (any split, AHS, pad, digests), tx seal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/iscsi/pdu.h"
#include "util/crc32c.h"

struct got {
	unsigned int headers;
	unsigned int pdus;
	uint8_t bhs[8][ISCSI_BHS_LEN];
	uint8_t data[8][600];
	uint32_t len[8];
	uint32_t ahs_len[8];
	uint8_t *dest; /* when set, the header callback places data here */
	uint32_t dest_len;
};

static int got_header(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	struct got *g = arg;

	g->headers++;
	if (g->dest) {
		pdu->dest = g->dest;
		pdu->dest_len = g->dest_len;
	}
	return 0;
}

static int got_pdu(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	struct got *g = arg;
	unsigned int i = g->pdus++ % 8;

	memcpy(g->bhs[i], pdu->bhs, ISCSI_BHS_LEN);
	g->len[i] = pdu->data_len;
	g->ahs_len[i] = pdu->ahs_len;
	if (pdu->data) {
		/* With a destination, only its dest_len bytes were kept. */
		uint32_t n = pdu->dest ? pdu->dest_len : pdu->data_len;

		memcpy(g->data[i], pdu->data, n < 600 ? n : 600);
	}
	return 0;
}

static const struct scsitgt__iscsi_rx_ops got_ops = { got_header, got_pdu };

static void test_serial(void **state)
{
	(void)state;
	assert_true(scsitgt__sn_lt(1, 2));
	assert_false(scsitgt__sn_lt(2, 1));
	assert_false(scsitgt__sn_lt(5, 5));
	/* RFC 1982: wrap-around. */
	assert_true(scsitgt__sn_lt(0xfffffffeu, 1));
	assert_true(scsitgt__sn_gt(1, 0xfffffffeu));
	assert_true(scsitgt__sn_le(0xffffffffu, 0));
	assert_true(scsitgt__sn_ge(0, 0xffffffffu));
	/* Exactly 2^31 apart is undefined: neither less nor greater. */
	assert_false(scsitgt__sn_lt(0, 0x80000000u));
	assert_false(scsitgt__sn_gt(0, 0x80000000u));
	assert_int_equal(scsitgt__iscsi_pad(0), 0);
	assert_int_equal(scsitgt__iscsi_pad(1), 3);
	assert_int_equal(scsitgt__iscsi_pad(4), 0);
	assert_int_equal(scsitgt__iscsi_pad(7), 1);
}

/* Build a stream of PDUs with a tx batch (the target's own encoder). */
static size_t build_stream(uint8_t *out, bool hd, bool dd)
{
	struct scsitgt__iscsi_tx *tx = scsitgt__iscsi_tx_create(3);
	static uint8_t d1[5] = "abcde";
	static uint8_t d2[512];
	uint8_t *b;
	size_t off = 0;

	memset(d2, 0x5a, sizeof(d2));
	b = scsitgt__iscsi_tx_add(tx, NULL, 0);
	b[0] = ISCSI_OP_NOP_OUT | ISCSI_FLAG_IMMEDIATE;
	b[1] = ISCSI_FLAG_FINAL;
	put_be32(&b[ISCSI_BHS_ITT], 7);
	b = scsitgt__iscsi_tx_add(tx, d1, 5);
	b[0] = ISCSI_OP_TEXT_REQ;
	b[1] = ISCSI_FLAG_FINAL;
	b = scsitgt__iscsi_tx_add(tx, d2, sizeof(d2));
	b[0] = ISCSI_OP_DATA_OUT;
	b[1] = ISCSI_FLAG_FINAL;
	scsitgt__iscsi_tx_seal(tx, hd, dd);
	for (int i = 0; i < tx->iovcnt; i++) {
		memcpy(out + off, tx->iov[i].iov_base, tx->iov[i].iov_len);
		off += tx->iov[i].iov_len;
	}
	assert_int_equal(off, tx->bytes);
	scsitgt__iscsi_tx_destroy(tx);
	return off;
}

static void check_stream(const struct got *g)
{
	assert_int_equal(g->pdus, 3);
	assert_int_equal(scsitgt__bhs_opcode(g->bhs[0]), ISCSI_OP_NOP_OUT);
	assert_true(scsitgt__bhs_immediate(g->bhs[0]));
	assert_int_equal(scsitgt__bhs_itt(g->bhs[0]), 7);
	assert_int_equal(g->len[1], 5);
	assert_memory_equal(g->data[1], "abcde", 5);
	assert_int_equal(g->len[2], 512);
	assert_int_equal(g->data[2][g->dest ? 99 : 511], 0x5a);
}

static void run_split(bool hd, bool dd, size_t chunk)
{
	uint8_t stream[2048];
	size_t n = build_stream(stream, hd, dd);
	struct scsitgt__iscsi_rx rx;
	struct got g;

	memset(&g, 0, sizeof(g));
	scsitgt__iscsi_rx_init(&rx, &got_ops, &g, 8192);
	rx.header_digest = hd;
	rx.data_digest = dd;
	for (size_t off = 0; off < n; off += chunk) {
		size_t k = n - off < chunk ? n - off : chunk;

		assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + off, k), (ssize_t)k);
	}
	check_stream(&g);
	scsitgt__iscsi_rx_destroy(&rx);
}

static void test_rx_splits(void **state)
{
	(void)state;
	for (int hd = 0; hd < 2; hd++) {
		for (int dd = 0; dd < 2; dd++) {
			run_split(hd, dd, 1); /* byte by byte */
			run_split(hd, dd, 3);
			run_split(hd, dd, 47);
			run_split(hd, dd, 4096); /* all PDUs in one read */
		}
	}
}

static void test_rx_digest_errors(void **state)
{
	uint8_t stream[2048];
	size_t n;
	struct scsitgt__iscsi_rx rx;
	struct got g;

	(void)state;
	/* Header digest: flip a BHS byte. */
	n = build_stream(stream, true, false);
	stream[20] ^= 1;
	memset(&g, 0, sizeof(g));
	scsitgt__iscsi_rx_init(&rx, &got_ops, &g, 8192);
	rx.header_digest = true;
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream, n), SCSITGT__RX_EHDIGEST);
	assert_int_equal(g.pdus, 0);
	/* The error is sticky. */
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream, 1), SCSITGT__RX_EHDIGEST);
	scsitgt__iscsi_rx_destroy(&rx);

	/* Data digest: flip a payload byte of the second PDU. */
	n = build_stream(stream, false, true);
	stream[48 + 48 + 1] ^= 0x40;
	memset(&g, 0, sizeof(g));
	scsitgt__iscsi_rx_init(&rx, &got_ops, &g, 8192);
	rx.data_digest = true;
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream, n), SCSITGT__RX_EDDIGEST);
	assert_int_equal(g.pdus, 1);
	assert_int_equal(scsitgt__bhs_opcode(rx.pdu.bhs), ISCSI_OP_TEXT_REQ);
	scsitgt__iscsi_rx_destroy(&rx);
}

static void test_rx_limits_and_ahs(void **state)
{
	uint8_t pdu[48 + 8 + 12];
	struct scsitgt__iscsi_rx rx;
	struct got g;

	(void)state;
	memset(pdu, 0, sizeof(pdu));
	pdu[0] = ISCSI_OP_SCSI_CMD;
	pdu[ISCSI_BHS_TOTAL_AHS_LEN] = 2; /* 8 bytes of AHS */
	put_be24(&pdu[ISCSI_BHS_DSL], 10);
	memset(&g, 0, sizeof(g));
	scsitgt__iscsi_rx_init(&rx, &got_ops, &g, 8192);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, pdu, sizeof(pdu)), (ssize_t)sizeof(pdu));
	assert_int_equal(g.pdus, 1);
	assert_int_equal(g.ahs_len[0], 8);
	assert_int_equal(g.len[0], 10);
	scsitgt__iscsi_rx_destroy(&rx);

	/* DataSegmentLength above the limit: refused before any allocation. */
	put_be24(&pdu[ISCSI_BHS_DSL], 8193);
	pdu[ISCSI_BHS_TOTAL_AHS_LEN] = 0;
	memset(&g, 0, sizeof(g));
	scsitgt__iscsi_rx_init(&rx, &got_ops, &g, 8192);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, pdu, 48), SCSITGT__RX_ETOOBIG);
	assert_null(rx.buf);
	scsitgt__iscsi_rx_destroy(&rx);
}

static void test_rx_direct(void **state)
{
	uint8_t stream[2048], dest[100];
	size_t n = build_stream(stream, false, true);
	struct scsitgt__iscsi_rx rx;
	uint8_t *dst;
	struct got g;
	size_t k, off;

	(void)state;
	memset(&g, 0, sizeof(g));
	g.dest = dest;
	g.dest_len = sizeof(dest); /* the third PDU's first 100 bytes land here */
	scsitgt__iscsi_rx_init(&rx, &got_ops, &g, 8192);
	rx.data_digest = true;
	/* Feed up to the third PDU's data (two PDUs of 48 + data + pad + digest, one header). */
	off = 48 + 48 + 5 + 3 + 4 + 48;
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream, off), (ssize_t)off);
	k = scsitgt__iscsi_rx_direct(&rx, &dst);
	assert_int_equal(k, sizeof(dest));
	assert_ptr_equal(dst, dest);
	memcpy(dst, stream + off, k); /* as a socket read would */
	assert_int_equal(scsitgt__iscsi_rx_direct_done(&rx, k), 0);
	off += k;
	assert_int_equal(scsitgt__iscsi_rx_direct(&rx, &dst), 0);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + off, n - off), (ssize_t)(n - off));
	assert_int_equal(g.pdus, 3);
	assert_int_equal(dest[99], 0x5a);
	scsitgt__iscsi_rx_destroy(&rx);
}

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* A stream of big PDUs: reads stop at each header's end, small PDUs never. */
static void test_rx_header_window(void **state)
{
	static uint8_t stream[2 * (48 + 8 + 4 + 4096 + 4) + 48 + 4];
	static uint8_t dest[4096];
	struct scsitgt__iscsi_rx rx;
	struct got g;
	uint8_t *dst;
	size_t off = 0;

	(void)state;
	memset(&g, 0, sizeof(g));
	g.dest = dest;
	g.dest_len = sizeof(dest);
	/* Two PDUs with an 8-byte AHS, a header digest and 4096 bytes of data, then a NOP-Out
	 * (48 + 4: its header digest). */
	for (int i = 0; i < 2; i++) {
		uint8_t *b = stream + off;
		uint32_t crc;

		memset(b, 0, 48);
		b[0] = ISCSI_OP_DATA_OUT;
		b[1] = ISCSI_FLAG_FINAL;
		b[ISCSI_BHS_TOTAL_AHS_LEN] = 2;
		b[5] = 0x00;
		b[6] = 0x10; /* DataSegmentLength 4096 */
		b[7] = 0x00;
		memset(b + 48, 0, 8);
		crc = scsitgt__crc32c(scsitgt__crc32c(0, b, 48), b + 48, 8);
		le32(b + 56, crc);
		memset(b + 60, 0x30 + i, 4096);
		crc = scsitgt__crc32c(0, b + 60, 4096);
		le32(b + 60 + 4096, crc);
		off += 48 + 8 + 4 + 4096 + 4;
	}
	memset(stream + off, 0, 48);
	stream[off] = ISCSI_OP_NOP_OUT | ISCSI_FLAG_IMMEDIATE;
	stream[off + 1] = ISCSI_FLAG_FINAL;
	le32(stream + off + 48, scsitgt__crc32c(0, stream + off, 48));
	off = 0;
	scsitgt__iscsi_rx_init(&rx, &got_ops, &g, 8192);
	rx.header_digest = true;
	rx.data_digest = true;
	/* Nothing received yet: no previous PDU to predict from. Above the size: no limit. */
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 0);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream, 48), 48);
	/* This PDU's data is 4096 bytes: stop after AHS and digest. */
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 8 + 4);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4097), 0);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + 48, 5), 5);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 3 + 4);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + 53, 5), 5);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 2); /* in the digest */
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + 58, 2), 2);
	off = 60;
	/* Inside the data: the direct read, no window. */
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 0);
	assert_int_equal(scsitgt__iscsi_rx_direct(&rx, &dst), 4096);
	memcpy(dst, stream + off, 4096);
	assert_int_equal(scsitgt__iscsi_rx_direct_done(&rx, 4096), 0);
	off += 4096;
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 0); /* data digest */
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + off, 4), 4);
	off += 4;
	assert_int_equal(g.pdus, 1);
	/* The previous PDU was big and went to a caller buffer: predict the BHS's end. */
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 48);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 8192), 0);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + off, 10), 10);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 38);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + off + 10, 38 + 12 + 4096 + 4),
			 38 + 12 + 4096 + 4);
	off += 48 + 12 + 4096 + 4;
	assert_int_equal(g.pdus, 2);
	assert_int_equal(dest[4095], 0x31);
	/* The NOP-Out has no data: after it, no limit again. */
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 48);
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + off, 48), 48);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 0); /* no data to come */
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream + off + 48, 4), 4);
	assert_int_equal(g.pdus, 3);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 0);
	/* Data kept in the receiver's own buffer predicts nothing either. */
	g.dest = NULL;
	assert_int_equal(scsitgt__iscsi_rx_feed(&rx, stream, 60 + 4096 + 4), 60 + 4096 + 4);
	assert_int_equal(g.pdus, 4);
	assert_int_equal(scsitgt__iscsi_rx_header_window(&rx, 4096), 0);
	scsitgt__iscsi_rx_destroy(&rx);
}

static void test_tx_seal(void **state)
{
	struct scsitgt__iscsi_tx *tx = scsitgt__iscsi_tx_create(1);
	uint8_t data[6] = "hello";
	uint8_t *b;
	uint32_t crc;

	(void)state;
	b = scsitgt__iscsi_tx_add(tx, data, 6);
	b[0] = ISCSI_OP_TEXT_RSP;
	assert_null(scsitgt__iscsi_tx_add(tx, NULL, 0)); /* full */
	scsitgt__iscsi_tx_seal(tx, true, true);
	assert_int_equal(tx->iovcnt, 3);
	assert_int_equal(scsitgt__bhs_dsl(b), 6);
	assert_int_equal(tx->iov[0].iov_len, 52);
	assert_int_equal(tx->iov[2].iov_len, 2 + 4); /* pad + digest */
	crc = scsitgt__crc32c(0, b, 48);
	assert_int_equal(b[48], crc & 0xff);
	assert_int_equal(b[51], crc >> 24);
	assert_int_equal(tx->bytes, 52 + 6 + 6);
	scsitgt__iscsi_tx_destroy(tx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serial),		 cmocka_unit_test(test_rx_splits),
		cmocka_unit_test(test_rx_digest_errors), cmocka_unit_test(test_rx_limits_and_ahs),
		cmocka_unit_test(test_rx_direct),	 cmocka_unit_test(test_rx_header_window),
		cmocka_unit_test(test_tx_seal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
