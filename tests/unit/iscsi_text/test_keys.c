/* SPDX-License-Identifier: MIT */
/* Tests of transport/iscsi/text/{textbuf,keys}.c: text segments and key negotiation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/iscsi/text/keys.h"
#include "transport/iscsi/text/textbuf.h"

/* Build "k=v\0k=v\0" from a string with '\n' as pair separator (last pair ends with '\n'). */
static size_t mk(uint8_t *out, const char *pairs)
{
	size_t n = strlen(pairs);

	for (size_t i = 0; i < n; i++) {
		out[i] = pairs[i] == '\n' ? '\0' : (uint8_t)pairs[i];
	}
	return n;
}

/* Value of @p key in a response text, or NULL. Fails the test if the key appears twice. */
static const char *resp_get(const struct scsitgt__iscsi_textbuf *tb, const char *key)
{
	size_t len, pos = 0;
	const uint8_t *text = scsitgt__iscsi_textbuf_data(tb, &len);
	struct scsitgt__iscsi_kv kv;
	const char *found = NULL;

	while (scsitgt__iscsi_text_next(text, len, &pos, &kv) == 1) {
		if (kv.key_len == strlen(key) && memcmp(kv.key, key, kv.key_len) == 0) {
			assert_null(found);
			found = kv.value;
		}
	}
	return found;
}

static int resp_count(const struct scsitgt__iscsi_textbuf *tb)
{
	size_t len, pos = 0;
	const uint8_t *text = scsitgt__iscsi_textbuf_data(tb, &len);
	struct scsitgt__iscsi_kv kv;
	int n = 0;

	while (scsitgt__iscsi_text_next(text, len, &pos, &kv) == 1) {
		n++;
	}
	return n;
}

struct fixture {
	struct scsitgt__iscsi_neg_params cfg;
	struct scsitgt__iscsi_neg neg;
	struct scsitgt__iscsi_textbuf resp;
	struct scsitgt__iscsi_chap_keys chap;
	uint8_t text[16384];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL) {
		return -1;
	}
	scsitgt__iscsi_neg_params_init(&f->cfg);
	scsitgt__iscsi_neg_init(&f->neg, &f->cfg, true);
	scsitgt__iscsi_textbuf_init(&f->resp, 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	scsitgt__iscsi_textbuf_destroy(&f->resp);
	free(f);
	return 0;
}

/* Run one request text through the negotiator, with a fresh response. */
static int run(struct fixture *f, enum scsitgt__iscsi_neg_stage stage, const char *pairs)
{
	size_t n = mk(f->text, pairs);

	scsitgt__iscsi_textbuf_reset(&f->resp);
	scsitgt__iscsi_neg_set_stage(&f->neg, stage);
	return scsitgt__iscsi_neg_text(&f->neg, f->text, n, &f->resp, &f->chap);
}

static void reinit(struct fixture *f, bool leading)
{
	scsitgt__iscsi_neg_init(&f->neg, &f->cfg, leading);
}

#define SEC SCSITGT__ISCSI_STAGE_SECURITY
#define OP SCSITGT__ISCSI_STAGE_OPERATIONAL
#define FFP SCSITGT__ISCSI_STAGE_FFP

/* ---- textbuf.c ---- */

static void test_acc(void **state)
{
	struct scsitgt__iscsi_text_acc acc;
	size_t len;
	const uint8_t *d;

	scsitgt__iscsi_text_acc_init(&acc, 64);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "A=1\0", 4, false), 1);
	d = scsitgt__iscsi_text_acc_data(&acc, &len);
	assert_int_equal(len, 4);
	assert_memory_equal(d, "A=1\0", 4);

	/* A pair split across three PDUs (C bit set on the first two). */
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "Key", 3, true), 0);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "=va", 3, true), 0);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "lue\0B=2\0", 8, false), 1);
	d = scsitgt__iscsi_text_acc_data(&acc, &len);
	assert_int_equal(len, 14);
	assert_memory_equal(d, "Key=value\0B=2\0", 14);

	/* Empty final segment: an empty text. */
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, NULL, 0, false), 1);
	assert_null(scsitgt__iscsi_text_acc_data(&acc, &len));
	assert_int_equal(len, 0);

	/* Not NUL-terminated, empty continued segment. */
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "A=1", 3, false), -EINVAL);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "A=1", 0, true), -EINVAL);

	/* The limit: exactly 64 bytes fit, 65 do not, and the text is dropped. */
	uint8_t big[64];
	memset(big, 'a', sizeof(big));
	big[63] = '\0';
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, big, 32, true), 0);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, big + 32, 32, false), 1);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, big, 40, true), 0);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, big, 25, true), -EMSGSIZE);
	scsitgt__iscsi_text_acc_data(&acc, &len);
	assert_int_equal(len, 0);
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "A=1\0", 4, false), 1);
	scsitgt__iscsi_text_acc_reset(&acc);
	scsitgt__iscsi_text_acc_data(&acc, &len);
	assert_int_equal(len, 0);
	scsitgt__iscsi_text_acc_destroy(&acc);

	/* Default limit of 64 KiB over many PDUs. */
	scsitgt__iscsi_text_acc_init(&acc, 0);
	uint8_t chunk[8192];
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 8; i++) {
		assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, chunk, sizeof(chunk), true), 0);
	}
	assert_int_equal(scsitgt__iscsi_text_acc_add(&acc, "\0", 1, false), -EMSGSIZE);
	scsitgt__iscsi_text_acc_destroy(&acc);
}

static void test_iterate(void **state)
{
	uint8_t t[256];
	size_t n, pos = 0;
	struct scsitgt__iscsi_kv kv;

	n = mk(t, "A=1\nEmpty=\nX-com.example.k=v=w\nX#ieee=2\n");
	assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), 1);
	assert_int_equal(kv.key_len, 1);
	assert_string_equal(kv.value, "1");
	assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), 1);
	assert_int_equal(kv.value_len, 0);
	assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), 1);
	assert_string_equal(kv.value, "v=w");
	assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), 1);
	assert_memory_equal(kv.key, "X#ieee", 6);
	assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), 0);

	static const char *bad[] = {
		"NoEquals\n", "=value\n", "1Key=v\n",	   "Ke y=v\n",
		"Ke#y=v\n",   "Key=v",	  "K\xc3\xa9=v\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pos = 0;
		n = mk(t, bad[i]);
		assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), -EINVAL);
	}
	/* Key length limit: 63 accepted, 64 refused. */
	char key[80];
	memset(key, 'K', sizeof(key));
	strcpy(key + 63, "=v\n");
	pos = 0;
	n = mk(t, key);
	assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), 1);
	memset(key, 'K', sizeof(key));
	strcpy(key + 64, "=v\n");
	pos = 0;
	n = mk(t, key);
	assert_int_equal(scsitgt__iscsi_text_next(t, n, &pos, &kv), -EINVAL);
	/* Value length limit: 8192 accepted, 8193 refused. */
	static uint8_t big[8300];
	memcpy(big, "CHAP_C=", 7);
	memset(big + 7, 'a', 8192);
	big[7 + 8192] = '\0';
	pos = 0;
	assert_int_equal(scsitgt__iscsi_text_next(big, 7 + 8193, &pos, &kv), 1);
	memset(big + 7, 'a', 8193);
	big[7 + 8193] = '\0';
	pos = 0;
	assert_int_equal(scsitgt__iscsi_text_next(big, 7 + 8194, &pos, &kv), -EINVAL);
}

static void test_builder_chunks(void **state)
{
	struct scsitgt__iscsi_textbuf tb;
	const uint8_t *d;
	bool more;

	scsitgt__iscsi_textbuf_init(&tb, 40);
	assert_int_equal(scsitgt__iscsi_textbuf_add(&tb, "HeaderDigest", "None"), 0);
	assert_int_equal(scsitgt__iscsi_textbuf_add_u32(&tb, "MaxBurstLength", 262144), 0);
	assert_int_equal(scsitgt__iscsi_textbuf_remaining(&tb), 18 + 22);
	/* 40 bytes used: nothing more fits, and a failed add leaves the text intact. */
	assert_int_equal(scsitgt__iscsi_textbuf_add(&tb, "A", ""), -ENOSPC);
	assert_int_equal(scsitgt__iscsi_textbuf_add(&tb, "", "x"), -EINVAL);
	assert_true(scsitgt__iscsi_textbuf_has_key(&tb, "HeaderDigest"));
	assert_true(scsitgt__iscsi_textbuf_has_key(&tb, "MaxBurstLength"));
	assert_false(scsitgt__iscsi_textbuf_has_key(&tb, "Header"));
	assert_false(scsitgt__iscsi_textbuf_has_key(&tb, "None"));

	/* Chunks of 16: 16 + 16 + 8, C bit on the first two. */
	assert_int_equal(scsitgt__iscsi_textbuf_next_chunk(&tb, &d, 16, &more), 16);
	assert_true(more);
	assert_memory_equal(d, "HeaderDigest=Non", 16);
	assert_int_equal(scsitgt__iscsi_textbuf_next_chunk(&tb, &d, 16, &more), 16);
	assert_true(more);
	assert_int_equal(scsitgt__iscsi_textbuf_next_chunk(&tb, &d, 16, &more), 8);
	assert_false(more);
	assert_memory_equal(d, "=262144\0", 8);
	assert_int_equal(scsitgt__iscsi_textbuf_next_chunk(&tb, &d, 16, &more), 0);
	assert_false(more);

	/* Reassembled through the accumulator, the chunks give back the text. */
	scsitgt__iscsi_textbuf_reset(&tb);
	assert_int_equal(scsitgt__iscsi_textbuf_add(&tb, "A", "1"), 0);
	assert_int_equal(scsitgt__iscsi_textbuf_add(&tb, "B", "22"), 0);
	struct scsitgt__iscsi_text_acc acc;
	scsitgt__iscsi_text_acc_init(&acc, 0);
	size_t got;
	int r;
	do {
		got = scsitgt__iscsi_textbuf_next_chunk(&tb, &d, 3, &more);
		r = scsitgt__iscsi_text_acc_add(&acc, d, got, more);
	} while (more);
	assert_int_equal(r, 1);
	size_t len;
	assert_memory_equal(scsitgt__iscsi_text_acc_data(&acc, &len), "A=1\0B=22\0", 9);
	assert_int_equal(len, 9);
	/* One chunk when it fits. */
	tb.taken = 0;
	assert_int_equal(scsitgt__iscsi_textbuf_next_chunk(&tb, &d, 8192, &more), 9);
	assert_false(more);
	scsitgt__iscsi_text_acc_destroy(&acc);
	scsitgt__iscsi_textbuf_destroy(&tb);
}

/* ---- keys.c ---- */

static void test_table(void **state)
{
	for (int i = 0; i < SCSITGT__ISCSI_KEY_COUNT; i++) {
		const struct scsitgt__iscsi_key_desc *d = scsitgt__iscsi_key_get(i);

		assert_non_null(d);
		assert_non_null(d->name);
		assert_true(scsitgt__iscsi_key_name_valid(d->name, strlen(d->name)));
		assert_int_equal(scsitgt__iscsi_key_lookup(d->name, strlen(d->name)), i);
		assert_true(d->value_max > 0);
		assert_true(d->min <= d->max);
	}
	assert_null(scsitgt__iscsi_key_get(SCSITGT__ISCSI_KEY_COUNT));
	assert_int_equal(scsitgt__iscsi_key_lookup("headerdigest", 12), -ENOENT);
	assert_int_equal(scsitgt__iscsi_key_lookup("HeaderDigestX", 13), -ENOENT);

	uint64_t v;
	assert_int_equal(scsitgt__iscsi_parse_number("262144", 6, &v), 0);
	assert_int_equal(v, 262144);
	assert_int_equal(scsitgt__iscsi_parse_number("0x40000", 7, &v), 0);
	assert_int_equal(v, 262144);
	assert_int_equal(scsitgt__iscsi_parse_number("18446744073709551615", 20, &v), 0);
	assert_int_equal(scsitgt__iscsi_parse_number("18446744073709551616", 20, &v), -ERANGE);
	assert_int_equal(scsitgt__iscsi_parse_number("0x10000000000000000", 19, &v), -ERANGE);
	assert_int_equal(scsitgt__iscsi_parse_number("", 0, &v), -EINVAL);
	assert_int_equal(scsitgt__iscsi_parse_number("0x", 2, &v), -EINVAL);
	assert_int_equal(scsitgt__iscsi_parse_number("-1", 2, &v), -EINVAL);
	assert_int_equal(scsitgt__iscsi_parse_number("+1", 2, &v), -EINVAL);
	assert_int_equal(scsitgt__iscsi_parse_number("1 ", 2, &v), -EINVAL);
	assert_int_equal(scsitgt__iscsi_parse_number("0bAA==", 6, &v), -EINVAL);
}

static void test_defaults(void **state)
{
	struct fixture *f = *state;
	const struct scsitgt__iscsi_session_params *p = &f->neg.params;

	/* RFC 7143 §13 defaults until negotiated. */
	assert_int_equal(p->header_digest, SCSITGT__ISCSI_DIGEST_NONE);
	assert_int_equal(p->max_connections, 1);
	assert_true(p->initial_r2t);
	assert_true(p->immediate_data);
	assert_int_equal(p->max_recv_dsl, 8192);
	assert_int_equal(p->max_xmit_dsl, 8192);
	assert_int_equal(p->max_burst, 262144);
	assert_int_equal(p->first_burst, 65536);
	assert_int_equal(p->default_time2wait, 2);
	assert_int_equal(p->default_time2retain, 20);
	assert_int_equal(p->max_outstanding_r2t, 1);
	assert_int_equal(p->error_recovery_level, 0);
	assert_int_equal(p->session_type, SCSITGT__ISCSI_SESSION_NORMAL);
	/* Target preferences. */
	assert_int_equal(f->cfg.max_recv_dsl, 262144);
	assert_int_equal(f->cfg.max_burst, 16776192);
	assert_int_equal(f->cfg.first_burst, 262144);
	assert_false(f->cfg.initial_r2t);
	assert_true(f->cfg.immediate_data);
}

/* What open-iscsi sends for a normal session without authentication. */
static void test_open_iscsi_login(void **state)
{
	struct fixture *f = *state;
	struct scsitgt__iscsi_session_params *p = &f->neg.params;

	assert_int_equal(run(f, SEC,
			     "InitiatorName=iqn.2004-10.com.ubuntu:01:abc\n"
			     "InitiatorAlias=host1\n"
			     "TargetName=iqn.2024-01.org.example:disk1\n"
			     "SessionType=Normal\nAuthMethod=None\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "AuthMethod"), "None");
	assert_int_equal(p->auth_method, SCSITGT__ISCSI_AUTH_NONE);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_string_equal(resp_get(&f->resp, "TargetPortalGroupTag"), "1");
	assert_null(resp_get(&f->resp, "MaxRecvDataSegmentLength"));
	assert_int_equal(resp_count(&f->resp), 2);
	assert_string_equal(p->initiator_name, "iqn.2004-10.com.ubuntu:01:abc");
	assert_string_equal(p->initiator_alias, "host1");
	assert_string_equal(p->target_name, "iqn.2024-01.org.example:disk1");

	assert_int_equal(run(f, OP,
			     "HeaderDigest=None\nDataDigest=None\nDefaultTime2Wait=2\n"
			     "DefaultTime2Retain=0\nIFMarker=No\nOFMarker=No\n"
			     "ErrorRecoveryLevel=0\nInitialR2T=No\nImmediateData=Yes\n"
			     "MaxBurstLength=16776192\nFirstBurstLength=262144\n"
			     "MaxOutstandingR2T=1\nMaxConnections=1\nDataPDUInOrder=Yes\n"
			     "DataSequenceInOrder=Yes\nMaxRecvDataSegmentLength=262144\n"),
			 0);
	scsitgt__iscsi_neg_set_transit(&f->neg, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "None");
	assert_string_equal(resp_get(&f->resp, "DataDigest"), "None");
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Wait"), "2");
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Retain"), "0");
	assert_string_equal(resp_get(&f->resp, "IFMarker"), "No");
	assert_string_equal(resp_get(&f->resp, "OFMarker"), "No");
	assert_string_equal(resp_get(&f->resp, "ErrorRecoveryLevel"), "0");
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "No");
	assert_string_equal(resp_get(&f->resp, "ImmediateData"), "Yes");
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "16776192");
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "262144");
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingR2T"), "1");
	assert_string_equal(resp_get(&f->resp, "MaxConnections"), "1");
	assert_string_equal(resp_get(&f->resp, "DataPDUInOrder"), "Yes");
	assert_string_equal(resp_get(&f->resp, "DataSequenceInOrder"), "Yes");
	/* Our declaration, not an answer; TPGT only once. */
	assert_string_equal(resp_get(&f->resp, "MaxRecvDataSegmentLength"), "262144");
	assert_null(resp_get(&f->resp, "TargetPortalGroupTag"));
	assert_int_equal(resp_count(&f->resp), 16);
	assert_false(scsitgt__iscsi_neg_pending(&f->neg));
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), 0);

	assert_false(p->initial_r2t);
	assert_true(p->immediate_data);
	assert_int_equal(p->max_burst, 16776192);
	assert_int_equal(p->first_burst, 262144);
	assert_int_equal(p->max_xmit_dsl, 262144);
	assert_int_equal(p->max_recv_dsl, 262144);
	assert_int_equal(p->default_time2retain, 0);
	assert_int_equal(p->max_outstanding_r2t, 1);

	/* A second declare adds nothing. */
	scsitgt__iscsi_textbuf_reset(&f->resp);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_int_equal(resp_count(&f->resp), 0);
}

static void test_list_keys(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, OP, "HeaderDigest=CRC32C,None\nDataDigest=None,CRC32C\n"), 0);
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "CRC32C");
	assert_string_equal(resp_get(&f->resp, "DataDigest"), "None");
	assert_int_equal(f->neg.params.header_digest, SCSITGT__ISCSI_DIGEST_CRC32C);
	assert_int_equal(f->neg.params.data_digest, SCSITGT__ISCSI_DIGEST_NONE);

	/* A target that requires digests: CRC32C wherever the initiator lists it. */
	f->cfg.header_digests = SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	f->cfg.data_digests = SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	reinit(f, true);
	assert_int_equal(run(f, OP, "HeaderDigest=None,CRC32C\nDataDigest=CRC32C,None\n"), 0);
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "CRC32C");
	assert_string_equal(resp_get(&f->resp, "DataDigest"), "CRC32C");
	assert_int_equal(f->neg.params.header_digest, SCSITGT__ISCSI_DIGEST_CRC32C);
	assert_int_equal(f->neg.params.data_digest, SCSITGT__ISCSI_DIGEST_CRC32C);

	/* Unknown values are skipped; empty items too; nothing acceptable is Reject when the
	 * default (None) is acceptable. */
	f->cfg.header_digests = SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	f->cfg.data_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE | SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	reinit(f, true);
	assert_int_equal(run(f, OP, "HeaderDigest=MD5,,CRC32C\nDataDigest=crc32c\n"), 0);
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "CRC32C");
	assert_string_equal(resp_get(&f->resp, "DataDigest"), "Reject");
	assert_int_equal(f->neg.params.data_digest, SCSITGT__ISCSI_DIGEST_NONE);
	/* A target that accepts only None: an offer of CRC32C alone is Reject, None stands. */
	f->cfg.header_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE;
	reinit(f, true);
	assert_int_equal(run(f, OP, "HeaderDigest=CRC32C\n"), 0);
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "Reject");
	assert_int_equal(f->neg.params.header_digest, SCSITGT__ISCSI_DIGEST_NONE);

	/* TaskReporting: only RFC3720. */
	reinit(f, true);
	assert_int_equal(run(f, OP, "TaskReporting=ResponseFence,FastAbort,RFC3720\n"), 0);
	assert_string_equal(resp_get(&f->resp, "TaskReporting"), "RFC3720");
	reinit(f, true);
	assert_int_equal(run(f, OP, "TaskReporting=FastAbort\n"), 0);
	assert_string_equal(resp_get(&f->resp, "TaskReporting"), "Reject");
}

/*
 * RFC 7143 §6.2.1: with no acceptable value in the offer the responder may answer Reject or
 * terminate the negotiation. Reject keeps the default (None, §13.1): a target required to use
 * digests must terminate, never go on without them.
 */
static void test_required_digest(void **state)
{
	struct fixture *f = *state;
	static const char *const refused[] = {
		"HeaderDigest=None\n",
		"DataDigest=None\n",
		"HeaderDigest=CRC32C\nDataDigest=None\n",
		"HeaderDigest=MD5,None\n",
		"DataDigest=crc32c\n",
	};

	f->cfg.header_digests = SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	f->cfg.data_digests = SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		reinit(f, true);
		assert_int_equal(run(f, OP, refused[i]), -ENOTSUP);
	}
	/* Only the digest the target requires is refused that way: DataDigest is free. */
	f->cfg.data_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE | SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	reinit(f, true);
	assert_int_equal(run(f, OP, "DataDigest=None\n"), 0);
	assert_int_equal(run(f, OP, "HeaderDigest=None\n"), -ENOTSUP);

	/* Agreed: the login may finish. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "HeaderDigest=None,CRC32C\nDataDigest=None\n"), 0);
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), 0);
	assert_int_equal(f->neg.params.header_digest, SCSITGT__ISCSI_DIGEST_CRC32C);

	/* Never offered: the default None stands, which the target refuses at the end. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "DataDigest=None\n"), 0);
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), -ENOTSUP);
	/* A discovery session too: digests are per connection (RFC 7143 §13.1). */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nSessionType=Discovery\n"), 0);
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), -ENOTSUP);

	/* The other list keys keep Reject: their default is acceptable. */
	reinit(f, true);
	assert_int_equal(run(f, OP, "TaskReporting=FastAbort\n"), 0);
	assert_string_equal(resp_get(&f->resp, "TaskReporting"), "Reject");
}

static void test_auth_method(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, SEC, "AuthMethod=CHAP,None\n"), 0);
	assert_string_equal(resp_get(&f->resp, "AuthMethod"), "None");

	f->cfg.auth_methods = SCSITGT__ISCSI_AUTH_MASK_CHAP | SCSITGT__ISCSI_AUTH_MASK_NONE;
	reinit(f, true);
	assert_int_equal(run(f, SEC, "AuthMethod=CHAP,None\n"), 0);
	assert_string_equal(resp_get(&f->resp, "AuthMethod"), "CHAP");
	assert_int_equal(f->neg.params.auth_method, SCSITGT__ISCSI_AUTH_CHAP);

	f->cfg.auth_methods = SCSITGT__ISCSI_AUTH_MASK_CHAP;
	reinit(f, true);
	assert_int_equal(run(f, SEC, "AuthMethod=KRB5,SRP,None\n"), 0);
	assert_string_equal(resp_get(&f->resp, "AuthMethod"), "Reject");
	assert_int_equal(f->neg.params.auth_method, SCSITGT__ISCSI_AUTH_REJECTED);

	/* CHAP keys go to the caller, in the same text or the next. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "AuthMethod=CHAP\nCHAP_A=7,5\n"), 0);
	assert_string_equal(f->chap.a, "7,5");
	assert_null(f->chap.r);
	assert_int_equal(run(f, SEC, "CHAP_N=user\nCHAP_R=0x0102\nCHAP_I=3\nCHAP_C=0xaabb\n"), 0);
	assert_null(f->chap.a);
	assert_string_equal(f->chap.n, "user");
	assert_string_equal(f->chap.r, "0x0102");
	assert_string_equal(f->chap.i, "3");
	assert_string_equal(f->chap.c, "0xaabb");
	assert_int_equal(resp_count(&f->resp), 0);
	/* A CHAP key offered again is a protocol error. */
	assert_int_equal(run(f, SEC, "CHAP_R=0x0102\n"), -EPROTO);

	/* Without a chap struct CHAP keys are refused. */
	reinit(f, true);
	size_t n = mk(f->text, "CHAP_A=5\n");
	scsitgt__iscsi_neg_set_stage(&f->neg, SEC);
	assert_int_equal(scsitgt__iscsi_neg_text(&f->neg, f->text, n, &f->resp, NULL), -EPROTO);

	/* Security keys outside the security stage. */
	reinit(f, true);
	assert_int_equal(run(f, OP, "AuthMethod=None\n"), -EPROTO);
	reinit(f, true);
	assert_int_equal(run(f, OP, "CHAP_A=5\n"), -EPROTO);
	reinit(f, true);
	scsitgt__iscsi_neg_text_start(&f->neg);
	n = mk(f->text, "CHAP_N=x\n");
	assert_int_equal(scsitgt__iscsi_neg_text(&f->neg, f->text, n, &f->resp, &f->chap), -EPROTO);

	/* A long CHAP_C is fine (binary value up to 8192), an overlong CHAP_N is not. */
	reinit(f, true);
	static char big[1200];
	strcpy(big, "CHAP_C=0x");
	memset(big + 9, 'a', 1000);
	strcpy(big + 1009, "\n");
	assert_int_equal(run(f, SEC, big), 0);
	assert_int_equal(strlen(f->chap.c), 1002);
	strcpy(big, "CHAP_N=");
	memset(big + 7, 'a', 256);
	strcpy(big + 263, "\n");
	assert_int_equal(run(f, SEC, big), -EPROTO);
}

static void test_bool_keys(void **state)
{
	struct fixture *f = *state;

	/* AND: our Yes with their No is No. OR: our No with their Yes is Yes. */
	assert_int_equal(run(f, OP,
			     "ImmediateData=No\nInitialR2T=Yes\nDataPDUInOrder=No\n"
			     "DataSequenceInOrder=No\nRDMAExtensions=Yes\nOFMarker=Yes\n"
			     "IFMarker=No\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "ImmediateData"), "No");
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "Yes");
	/* We want in-order data, and OR makes it so. */
	assert_string_equal(resp_get(&f->resp, "DataPDUInOrder"), "Yes");
	assert_string_equal(resp_get(&f->resp, "DataSequenceInOrder"), "Yes");
	assert_string_equal(resp_get(&f->resp, "RDMAExtensions"), "No");
	assert_string_equal(resp_get(&f->resp, "OFMarker"), "No");
	assert_string_equal(resp_get(&f->resp, "IFMarker"), "No");
	assert_false(f->neg.params.immediate_data);
	assert_true(f->neg.params.initial_r2t);
	assert_false(f->neg.params.rdma_extensions);

	/* Our InitialR2T=Yes wins over their No (OR). */
	f->cfg.initial_r2t = true;
	f->cfg.rdma_extensions = true;
	reinit(f, true);
	assert_int_equal(run(f, OP, "InitialR2T=No\nImmediateData=Yes\nRDMAExtensions=Yes\n"), 0);
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "Yes");
	assert_string_equal(resp_get(&f->resp, "ImmediateData"), "Yes");
	assert_string_equal(resp_get(&f->resp, "RDMAExtensions"), "Yes");
	assert_true(f->neg.params.rdma_extensions);

	/* Bad boolean values are rejected and keep the default. */
	reinit(f, true);
	assert_int_equal(run(f, OP, "ImmediateData=yes\nInitialR2T=\nDataPDUInOrder=Maybe\n"), 0);
	assert_string_equal(resp_get(&f->resp, "ImmediateData"), "Reject");
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "Reject");
	assert_string_equal(resp_get(&f->resp, "DataPDUInOrder"), "Reject");
	assert_true(f->neg.params.immediate_data);
	assert_true(f->neg.params.initial_r2t);
}

static void test_numeric_keys(void **state)
{
	struct fixture *f = *state;
	struct scsitgt__iscsi_session_params *p = &f->neg.params;

	assert_int_equal(run(f, OP,
			     "MaxBurstLength=262144\nFirstBurstLength=0x100000\n"
			     "DefaultTime2Wait=0\nDefaultTime2Retain=3600\n"
			     "MaxOutstandingR2T=64\nErrorRecoveryLevel=2\nMaxConnections=8\n"
			     "iSCSIProtocolLevel=2\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "262144");
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "262144");
	/* DefaultTime2Wait is a maximum; Retain a minimum. */
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Wait"), "2");
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Retain"), "20");
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingR2T"), "16");
	assert_string_equal(resp_get(&f->resp, "ErrorRecoveryLevel"), "0");
	assert_string_equal(resp_get(&f->resp, "MaxConnections"), "1");
	assert_string_equal(resp_get(&f->resp, "iSCSIProtocolLevel"), "1");
	assert_int_equal(p->max_burst, 262144);
	assert_int_equal(p->first_burst, 262144);
	assert_int_equal(p->max_outstanding_r2t, 16);
	assert_int_equal(p->protocol_level, 1);

	reinit(f, true);
	assert_int_equal(run(f, OP, "DefaultTime2Wait=10\niSCSIProtocolLevel=0\n"), 0);
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Wait"), "10");
	assert_string_equal(resp_get(&f->resp, "iSCSIProtocolLevel"), "0");
	assert_int_equal(p->default_time2wait, 10);

	/* Out of range and malformed values: Reject, default kept. */
	reinit(f, true);
	assert_int_equal(run(f, OP,
			     "MaxBurstLength=16777216\nFirstBurstLength=511\n"
			     "DefaultTime2Wait=3601\nMaxOutstandingR2T=0\n"
			     "ErrorRecoveryLevel=3\nMaxConnections=65536\n"
			     "DefaultTime2Retain=-1\niSCSIProtocolLevel=32\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "Reject");
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "Reject");
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Wait"), "Reject");
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingR2T"), "Reject");
	assert_string_equal(resp_get(&f->resp, "ErrorRecoveryLevel"), "Reject");
	assert_string_equal(resp_get(&f->resp, "MaxConnections"), "Reject");
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Retain"), "Reject");
	assert_string_equal(resp_get(&f->resp, "iSCSIProtocolLevel"), "Reject");
	assert_int_equal(p->max_burst, 262144);
	/* A declaration is not answered, not even Reject beside the target's own declaration
	 * of the key (review35a N2): one out of range or malformed is an initiator error. */
	for (unsigned int i = 0; i < 3; i++) {
		static const char *const bad[] = { "MaxRecvDataSegmentLength=511\n",
						   "MaxRecvDataSegmentLength=16777216\n",
						   "MaxRecvDataSegmentLength=lots\n" };

		reinit(f, true);
		assert_int_equal(run(f, OP, bad[i]), -EPROTO);
		assert_null(resp_get(&f->resp, "MaxRecvDataSegmentLength"));
		assert_int_equal(p->max_xmit_dsl, 8192);
	}

	/* The largest allowed lengths. */
	reinit(f, true);
	assert_int_equal(run(f, OP, "MaxRecvDataSegmentLength=16777215\nMaxBurstLength=16777215\n"),
			 0);
	assert_null(resp_get(&f->resp, "MaxRecvDataSegmentLength"));
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "16776192");
	assert_int_equal(p->max_xmit_dsl, 16777215);

	/* Markers' intervals: valid ranges are irrelevant (markers off), bad ones rejected. */
	reinit(f, true);
	assert_int_equal(run(f, OP, "OFMarkInt=2048~8192\nIFMarkInt=8192~2048\n"), 0);
	assert_string_equal(resp_get(&f->resp, "OFMarkInt"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "IFMarkInt"), "Reject");
	reinit(f, true);
	assert_int_equal(run(f, OP, "OFMarkInt=2048\nIFMarkInt=0~10\n"), 0);
	assert_string_equal(resp_get(&f->resp, "OFMarkInt"), "Reject");
	assert_string_equal(resp_get(&f->resp, "IFMarkInt"), "Reject");
}

/* RFC 7143 §4.2.7, RFC 3722 §6: which names a login may carry. */
static void test_name_check(void **state)
{
	static const char *const good[] = {
		"iqn.2026-11.org.libscsitgt:disk-1.a",
		"iqn.1994-05.com.redhat:c7bb74ede1a",
		"IQN.1991-05.COM.MICROSOFT:WIN-7", /* ASCII upper case maps to lower case */
		"eui.02004567a425678d",
		"naa.52004567ba64678d",
		"iqn.2026-11.jp.example:\xe6\x97\xa5\xe6\x9c\xac", /* UTF-8 Japanese */
		"iqn.2026-11.de.example:m\xc3\xbcller",
		"iqn.a",
	};
	static const char *const bad[] = {
		"iqn.x\n2026 iscsi: login of iqn.admin accepted", /* a forged log line */
		"iqn.x\r",
		"iqn.x\x1b[31m",
		"iqn.x\x7f",
		"iqn.x\t",
		"iqn.x y",
		"iqn.x/y",
		"iqn.x\\y",
		"iqn.x\"",
		"iqn.x_y",
		"iqn.x,y",
		"iqn.x=y",
		"iqn.x%s",
		"iqn.x@y",
		"iqn.x\xc2\x85",	 /* NEL (C1) */
		"iqn.x\xc2\x9b",	 /* CSI (C1) */
		"iqn.x\xc2\xa0",	 /* NO-BREAK SPACE */
		"iqn.x\xe2\x80\xa8",	 /* LINE SEPARATOR */
		"iqn.x\xe2\x80\xae",	 /* RIGHT-TO-LEFT OVERRIDE */
		"iqn.x\xe2\x81\xa8",	 /* FIRST STRONG ISOLATE (found by fuzz_names) */
		"iqn.x\xe2\x80\x8b",	 /* ZERO WIDTH SPACE */
		"iqn.x\xe3\x80\x80",	 /* IDEOGRAPHIC SPACE */
		"iqn.x\xee\x80\x80",	 /* private use */
		"iqn.x\xef\xbb\xbf",	 /* BOM */
		"iqn.x\xef\xbf\xbe",	 /* non-character */
		"iqn.x\xf3\xa0\x80\x81", /* LANGUAGE TAG */
		"iqn.x\xff",
		"iqn.x\xc0\xae",
		"iqn.x\xe6\x97",
		"iqn.x\xed\xa0\x80", /* bad UTF-8 */
		"iqn.",
		"iqn",
		"x.2026-11.org.example:a",
		"2026-11.org.example",
		"iqn-x",
	};
	char big[300];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(scsitgt__iscsi_name_check(good[i], strlen(good[i])), 0);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(scsitgt__iscsi_name_check(bad[i], strlen(bad[i])), -EINVAL);
	}
	assert_int_equal(scsitgt__iscsi_name_check("iqn.a\0b", 7), -EINVAL);
	assert_int_equal(scsitgt__iscsi_name_check("", 0), -ENOENT);
	memset(big, 'a', sizeof(big));
	memcpy(big, "iqn.", 4);
	assert_int_equal(scsitgt__iscsi_name_check(big, 223), 0);
	assert_int_equal(scsitgt__iscsi_name_check(big, 224), -ENAMETOOLONG);

	/* Through the negotiation: a bad InitiatorName or TargetName is a protocol error. */
	struct fixture *f = *state;

	assert_int_equal(run(f, SEC, "InitiatorName=iqn.x\x1b]0;owned\x07\n"), -EPROTO);
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b c\n"), -EPROTO);
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
}

/*
 * RFC 7143 §13.14: FirstBurstLength must not exceed MaxBurstLength, and the value answered is
 * the value in force, in either order of the two keys and across exchanges.
 */
static void test_first_burst_fixup(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "MaxBurstLength=65536\nFirstBurstLength=131072\n"), 0);
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "65536");
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "65536");
	assert_int_equal(f->neg.params.max_burst, 65536);
	assert_int_equal(f->neg.params.first_burst, 65536);
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), 0);
	assert_int_equal(f->neg.params.first_burst, 65536);

	/* The case: FirstBurstLength first in the text, far above MaxBurstLength. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP,
			     "FirstBurstLength=262144\nImmediateData=Yes\n"
			     "MaxBurstLength=16384\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "16384");
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "16384");
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), 0);
	assert_int_equal(f->neg.params.first_burst, 16384);

	/* MaxBurstLength settled in an earlier exchange bounds a later FirstBurstLength. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "MaxBurstLength=8192\n"), 0);
	assert_int_equal(run(f, OP, "FirstBurstLength=65536\n"), 0);
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "8192");

	/* MaxBurstLength not offered: the RFC default (262144) is in force and bounds it. */
	f->cfg.first_burst = 1048576;
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "FirstBurstLength=16777215\n"), 0);
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "262144");

	/* The target's own MaxBurstLength below its FirstBurstLength. */
	f->cfg.first_burst = 262144;
	f->cfg.max_burst = 32768;
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "FirstBurstLength=131072\nMaxBurstLength=1048576\n"), 0);
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "32768");
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "32768");

	/* ... and when the target proposes both, the proposals agree with each other. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "HeaderDigest=None\n"), 0);
	scsitgt__iscsi_neg_set_transit(&f->neg, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "32768");
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "32768");

	/* A FirstBurstLength offered twice in one text is still a protocol error. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(run(f, OP, "FirstBurstLength=4096\nFirstBurstLength=4096\n"), -EPROTO);
}

static void test_discovery(void **state)
{
	struct fixture *f = *state;

	/* SessionType comes last, yet the session keys before it are already irrelevant. */
	assert_int_equal(run(f, SEC,
			     "InitiatorName=iqn.1994-05.com.redhat:c7bb74ede1a\n"
			     "InitialR2T=No\nMaxBurstLength=65536\nImmediateData=Yes\n"
			     "MaxConnections=1\niSCSIProtocolLevel=1\n"
			     "HeaderDigest=None\nErrorRecoveryLevel=0\n"
			     "DefaultTime2Wait=2\nSessionType=Discovery\n"
			     "AuthMethod=None\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "ImmediateData"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "MaxConnections"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "iSCSIProtocolLevel"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "None");
	assert_string_equal(resp_get(&f->resp, "ErrorRecoveryLevel"), "0");
	assert_string_equal(resp_get(&f->resp, "DefaultTime2Wait"), "2");
	assert_int_equal(f->neg.params.session_type, SCSITGT__ISCSI_SESSION_DISCOVERY);
	assert_int_equal(f->neg.params.max_burst, 262144);
	/* No TargetName needed; no proposals in discovery. */
	scsitgt__iscsi_textbuf_reset(&f->resp);
	scsitgt__iscsi_neg_set_stage(&f->neg, OP);
	scsitgt__iscsi_neg_set_transit(&f->neg, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_string_equal(resp_get(&f->resp, "TargetPortalGroupTag"), "1");
	assert_string_equal(resp_get(&f->resp, "MaxRecvDataSegmentLength"), "262144");
	assert_int_equal(resp_count(&f->resp), 2);
	assert_false(scsitgt__iscsi_neg_pending(&f->neg));
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), 0);

	/* An invalid SessionType is an initiator error. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "SessionType=Weird\n"), -EPROTO);
}

static void test_not_understood(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, OP,
			     "X-com.example.Foo=bar\nX#ieee.Thing=1\nFrobnicate=Yes\n"
			     "headerdigest=None\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "X-com.example.Foo"), "NotUnderstood");
	assert_string_equal(resp_get(&f->resp, "X#ieee.Thing"), "NotUnderstood");
	assert_string_equal(resp_get(&f->resp, "Frobnicate"), "NotUnderstood");
	assert_string_equal(resp_get(&f->resp, "headerdigest"), "NotUnderstood");
	assert_false(scsitgt__iscsi_neg_offered(&f->neg, SCSITGT__ISCSI_KEY_HEADER_DIGEST));

	/* Unknown keys are remembered across PDUs of the negotiation. */
	assert_int_equal(run(f, OP, "Frobnicate=No\n"), -EPROTO);

	/* The table of unknown names is bounded. */
	reinit(f, true);
	char line[64];
	for (int i = 0; i < SCSITGT__ISCSI_NEG_UNKNOWN_MAX; i++) {
		snprintf(line, sizeof(line), "X-k%d=1\n", i);
		assert_int_equal(run(f, OP, line), 0);
	}
	assert_int_equal(run(f, OP, "X-one-too-many=1\n"), -EPROTO);
}

static void test_duplicates(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, OP, "HeaderDigest=None\nHeaderDigest=None\n"), -EPROTO);
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nInitiatorName=iqn.a\n"), -EPROTO);
	/* Across two requests of one login. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "MaxBurstLength=65536\n"), 0);
	assert_int_equal(run(f, OP, "MaxBurstLength=65536\n"), -EPROTO);
	reinit(f, true);
	assert_int_equal(run(f, OP, "MaxRecvDataSegmentLength=8192\n"), 0);
	assert_int_equal(run(f, OP, "MaxRecvDataSegmentLength=8192\n"), -EPROTO);
	/* Rejected offers count too. */
	reinit(f, true);
	assert_int_equal(run(f, OP, "ErrorRecoveryLevel=9\n"), 0);
	assert_int_equal(run(f, OP, "ErrorRecoveryLevel=0\n"), -EPROTO);
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;

	/* Nothing is applied when the text is malformed anywhere. */
	assert_int_equal(run(f, OP, "InitialR2T=No\nBroken\n"), -EINVAL);
	assert_int_equal(resp_count(&f->resp), 0);
	assert_false(scsitgt__iscsi_neg_offered(&f->neg, SCSITGT__ISCSI_KEY_INITIAL_R2T));
	assert_int_equal(run(f, OP, "InitialR2T=No\n=x\n"), -EINVAL);
	/* Values beyond 255 bytes for ordinary keys, names beyond 223. */
	static char big[600];
	strcpy(big, "InitialR2T=");
	memset(big + 11, 'N', 256);
	strcpy(big + 267, "\n");
	assert_int_equal(run(f, OP, big), -EPROTO);
	/* List values may be longer. */
	reinit(f, true);
	strcpy(big, "HeaderDigest=");
	for (int i = 0; i < 60; i++) {
		strcat(big, "MD5,");
	}
	strcat(big, "CRC32C\n");
	assert_int_equal(run(f, OP, big), 0);
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "CRC32C");
	reinit(f, true);
	strcpy(big, "InitiatorName=");
	memset(big + 14, 'n', 224);
	memcpy(big + 14, "iqn.", 4);
	strcpy(big + 238, "\n");
	assert_int_equal(run(f, SEC, big), -EPROTO);
	reinit(f, true);
	big[14 + 223] = '\n';
	big[14 + 224] = '\0';
	assert_int_equal(run(f, SEC, big), 0);
	assert_int_equal(strlen(f->neg.params.initiator_name), 223);
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=\n"), -EPROTO);
}

static void test_non_leading(void **state)
{
	struct fixture *f = *state;

	reinit(f, false);
	assert_int_equal(run(f, SEC,
			     "InitiatorName=iqn.a\nTargetName=iqn.b\nSessionType=Normal\n"
			     "AuthMethod=None\n"),
			 0);
	assert_int_equal(run(f, OP,
			     "HeaderDigest=CRC32C\nMaxRecvDataSegmentLength=65536\n"
			     "InitialR2T=No\nMaxBurstLength=65536\nErrorRecoveryLevel=0\n"),
			 0);
	/* Connection-scoped keys negotiate; session-wide (LO) keys are irrelevant here. */
	assert_string_equal(resp_get(&f->resp, "HeaderDigest"), "CRC32C");
	assert_null(resp_get(&f->resp, "MaxRecvDataSegmentLength"));
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "MaxBurstLength"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "ErrorRecoveryLevel"), "Irrelevant");
	assert_int_equal(f->neg.params.max_xmit_dsl, 65536);
	assert_true(f->neg.params.initial_r2t);
	/* No proposals on a non-leading connection. */
	scsitgt__iscsi_neg_set_transit(&f->neg, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_false(scsitgt__iscsi_neg_pending(&f->neg));
	assert_null(resp_get(&f->resp, "FirstBurstLength"));
	assert_null(resp_get(&f->resp, "MaxOutstandingR2T"));
}

static void test_iser_keys(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, OP,
			     "RDMAExtensions=Yes\nTargetRecvDataSegmentLength=8192\n"
			     "InitiatorRecvDataSegmentLength=65536\n"
			     "MaxOutstandingUnexpectedPDUs=32\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "RDMAExtensions"), "No");
	assert_string_equal(resp_get(&f->resp, "TargetRecvDataSegmentLength"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "InitiatorRecvDataSegmentLength"), "Irrelevant");
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingUnexpectedPDUs"), "Irrelevant");

	f->cfg.rdma_extensions = true;
	reinit(f, true);
	assert_int_equal(run(f, OP,
			     "RDMAExtensions=Yes\nTargetRecvDataSegmentLength=1048576\n"
			     "InitiatorRecvDataSegmentLength=65536\n"
			     "MaxOutstandingUnexpectedPDUs=32\n"),
			 0);
	assert_string_equal(resp_get(&f->resp, "RDMAExtensions"), "Yes");
	assert_string_equal(resp_get(&f->resp, "TargetRecvDataSegmentLength"), "262144");
	assert_string_equal(resp_get(&f->resp, "InitiatorRecvDataSegmentLength"), "65536");
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingUnexpectedPDUs"), "32");
	assert_int_equal(f->neg.params.target_recv_dsl, 262144);
	assert_int_equal(f->neg.params.max_outstanding_unexpected_pdus, 32);
	reinit(f, true);
	assert_int_equal(run(f, OP, "MaxOutstandingUnexpectedPDUs=1\n"), 0);
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingUnexpectedPDUs"), "Reject");
	reinit(f, true);
	assert_int_equal(run(f, OP, "MaxOutstandingUnexpectedPDUs=0\n"), 0);
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingUnexpectedPDUs"), "0");
}

/* An initiator that offers little (libiscsi-like minimal): the target proposes its values. */
static void test_target_proposals(void **state)
{
	struct fixture *f = *state;
	struct scsitgt__iscsi_session_params *p = &f->neg.params;

	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\nAuthMethod=None\n"),
			 0);
	assert_int_equal(run(f, OP, "HeaderDigest=None\nMaxBurstLength=1048576\n"), 0);
	/* Without the T bit, no proposals yet. */
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_null(resp_get(&f->resp, "InitialR2T"));
	assert_false(scsitgt__iscsi_neg_pending(&f->neg));

	assert_int_equal(run(f, OP, "DataDigest=None\n"), 0);
	scsitgt__iscsi_neg_set_transit(&f->neg, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "No");
	assert_string_equal(resp_get(&f->resp, "FirstBurstLength"), "262144");
	assert_string_equal(resp_get(&f->resp, "MaxOutstandingR2T"), "16");
	/* Keys equal to the RFC default or already negotiated are not proposed. */
	assert_null(resp_get(&f->resp, "ImmediateData"));
	assert_null(resp_get(&f->resp, "MaxBurstLength"));
	assert_null(resp_get(&f->resp, "DefaultTime2Wait"));
	assert_null(resp_get(&f->resp, "ErrorRecoveryLevel"));
	assert_true(scsitgt__iscsi_neg_pending(&f->neg));

	/* The initiator answers (no response from us), partly refusing. */
	assert_int_equal(run(f, OP, "InitialR2T=Yes\nFirstBurstLength=65536\n"), 0);
	assert_true(scsitgt__iscsi_neg_pending(&f->neg));
	assert_int_equal(run(f, OP, "MaxOutstandingR2T=Reject\n"), 0);
	assert_int_equal(resp_count(&f->resp), 0);
	assert_false(scsitgt__iscsi_neg_pending(&f->neg));
	assert_true(p->initial_r2t);
	assert_int_equal(p->first_burst, 65536);
	assert_int_equal(p->max_outstanding_r2t, 1);
	/* Proposals are made once. */
	scsitgt__iscsi_neg_set_transit(&f->neg, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_int_equal(resp_count(&f->resp), 0);
	/* After the answer, the key is an offer again... and then a duplicate. */
	assert_int_equal(run(f, OP, "InitialR2T=No\n"), 0);
	assert_int_equal(run(f, OP, "InitialR2T=No\n"), -EPROTO);

	/* cfg.propose off: nothing proposed. */
	f->cfg.propose = false;
	reinit(f, true);
	assert_int_equal(run(f, OP, "HeaderDigest=None\n"), 0);
	scsitgt__iscsi_neg_set_transit(&f->neg, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_false(scsitgt__iscsi_neg_pending(&f->neg));
}

static void test_required_keys(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, SEC, "TargetName=iqn.b\n"), 0);
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), -ENOENT);
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\n"), 0);
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), -ENOENT);
	reinit(f, true);
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nSessionType=Discovery\n"), 0);
	assert_int_equal(scsitgt__iscsi_neg_finish(&f->neg), 0);
}

static void test_declarations(void **state)
{
	struct fixture *f = *state;
	static const char alias[] = "disk one";

	f->cfg.tpgt = 7;
	f->cfg.target_alias = alias;
	f->cfg.max_recv_dsl = 65536;
	reinit(f, true);
	/* Security stage: TPGT and alias in the first response, no MaxRecvDataSegmentLength. */
	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nTargetName=iqn.b\n"), 0);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_string_equal(resp_get(&f->resp, "TargetPortalGroupTag"), "7");
	assert_string_equal(resp_get(&f->resp, "TargetAlias"), "disk one");
	assert_null(resp_get(&f->resp, "MaxRecvDataSegmentLength"));
	assert_int_equal(f->neg.params.max_recv_dsl, 8192);
	/* An initiator's copy of target-only keys is ignored. */
	assert_int_equal(run(f, SEC,
			     "TargetAlias=x\nTargetPortalGroupTag=9\n"
			     "TargetAddress=a:1,1\n"),
			 0);
	assert_int_equal(resp_count(&f->resp), 0);
	assert_int_equal(run(f, OP, ""), 0);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_string_equal(resp_get(&f->resp, "MaxRecvDataSegmentLength"), "65536");
	assert_null(resp_get(&f->resp, "TargetPortalGroupTag"));
	assert_int_equal(f->neg.params.max_recv_dsl, 65536);

	/* A full response buffer is reported. */
	struct scsitgt__iscsi_textbuf small;
	scsitgt__iscsi_textbuf_init(&small, 10);
	reinit(f, true);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &small), -ENOSPC);
	scsitgt__iscsi_textbuf_destroy(&small);
	scsitgt__iscsi_textbuf_init(&small, 17);
	reinit(f, true);
	size_t n = mk(f->text, "HeaderDigest=None\n");
	assert_int_equal(scsitgt__iscsi_neg_text(&f->neg, f->text, n, &small, &f->chap), -ENOSPC);
	scsitgt__iscsi_textbuf_destroy(&small);
}

/* Text Request negotiation in full feature phase. */
static void test_ffp_text(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(run(f, SEC, "InitiatorName=iqn.a\nSessionType=Discovery\n"), 0);
	scsitgt__iscsi_neg_text_start(&f->neg);
	scsitgt__iscsi_textbuf_reset(&f->resp);
	size_t n = mk(f->text, "SendTargets=All\nMaxRecvDataSegmentLength=32768\n"
			       "InitialR2T=No\nInitiatorName=iqn.x\nX-foo=1\n");
	assert_int_equal(scsitgt__iscsi_neg_text(&f->neg, f->text, n, &f->resp, &f->chap), 0);
	assert_true(f->neg.has_send_targets);
	assert_string_equal(f->neg.send_targets, "All");
	assert_int_equal(f->neg.params.max_xmit_dsl, 32768);
	assert_string_equal(resp_get(&f->resp, "InitialR2T"), "Reject");
	assert_string_equal(resp_get(&f->resp, "X-foo"), "NotUnderstood");
	assert_null(resp_get(&f->resp, "InitiatorName"));
	assert_string_equal(f->neg.params.initiator_name, "iqn.a");
	/* Declarations are login-only. */
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_null(resp_get(&f->resp, "MaxRecvDataSegmentLength"));

	/* A new exchange forgets the previous one's offers. */
	scsitgt__iscsi_neg_text_start(&f->neg);
	assert_false(f->neg.has_send_targets);
	scsitgt__iscsi_textbuf_reset(&f->resp);
	n = mk(f->text, "SendTargets=\nMaxRecvDataSegmentLength=65536\n");
	assert_int_equal(scsitgt__iscsi_neg_text(&f->neg, f->text, n, &f->resp, &f->chap), 0);
	assert_string_equal(f->neg.send_targets, "");
	assert_int_equal(f->neg.params.max_xmit_dsl, 65536);
	/* SendTargets during login is irrelevant. */
	reinit(f, true);
	assert_int_equal(run(f, SEC, "SendTargets=All\n"), 0);
	assert_string_equal(resp_get(&f->resp, "SendTargets"), "Irrelevant");
	assert_false(f->neg.has_send_targets);
}

/* Accumulate a request split over PDUs, negotiate, and send the response in chunks. */
static void test_end_to_end_chunks(void **state)
{
	struct fixture *f = *state;
	struct scsitgt__iscsi_text_acc acc;
	uint8_t req[1024];
	size_t n = mk(req, "HeaderDigest=None\nDataDigest=None\nMaxRecvDataSegmentLength=512\n"
			   "X-a=1\nX-b=2\nX-c=3\nX-d=4\nMaxBurstLength=262144\n");
	size_t len;
	int r = 0;

	scsitgt__iscsi_text_acc_init(&acc, 0);
	for (size_t off = 0; off < n; off += 10) {
		size_t k = n - off < 10 ? n - off : 10;

		r = scsitgt__iscsi_text_acc_add(&acc, req + off, k, off + k < n);
	}
	assert_int_equal(r, 1);
	const uint8_t *text = scsitgt__iscsi_text_acc_data(&acc, &len);
	scsitgt__iscsi_neg_set_stage(&f->neg, OP);
	assert_int_equal(scsitgt__iscsi_neg_text(&f->neg, text, len, &f->resp, &f->chap), 0);
	assert_int_equal(scsitgt__iscsi_neg_declare(&f->neg, &f->resp), 0);
	assert_int_equal(f->neg.params.max_xmit_dsl, 512);

	size_t total = scsitgt__iscsi_textbuf_remaining(&f->resp);
	size_t seen = 0;
	int pdus = 0;
	bool more;
	const uint8_t *d;
	do {
		size_t k = scsitgt__iscsi_textbuf_next_chunk(&f->resp, &d, 32, &more);
		assert_true(k <= 32);
		assert_true(k > 0);
		seen += k;
		pdus++;
	} while (more);
	assert_int_equal(seen, total);
	assert_int_equal(pdus, (int)((total + 31) / 32));
	scsitgt__iscsi_text_acc_destroy(&acc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acc),
		cmocka_unit_test(test_iterate),
		cmocka_unit_test(test_builder_chunks),
		cmocka_unit_test(test_table),
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_iscsi_login, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_required_digest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auth_method, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bool_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_numeric_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_burst_fixup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_name_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_understood, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_non_leading, setup, teardown),
		cmocka_unit_test_setup_teardown(test_iser_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_target_proposals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_required_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_declarations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ffp_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_end_to_end_chunks, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
