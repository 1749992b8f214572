/* SPDX-License-Identifier: MIT */
/*
 * Tests of transport/iscsi/chap.c. Expected digests were computed independently with python3
 * hashlib and checked with `openssl dgst` over the bytes id || secret || challenge.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "libscsitgt/common.h"
#include "transport/iscsi/chap.h"

static const char secret[] = "Th1sIsAS3cret";

/* SHA-256 vector below as a CHAP_R value: hex, upper-case hex, and base64. */
#define R_HEX "0x0af126a54eae8d5c3c74a6cedf54bd30bdfea84a3cdf9965e156f041812bce90"
#define R_HEX_UC "0X0AF126A54EAE8D5C3C74A6CEDF54BD30BDFEA84A3CDF9965E156F041812BCE90"
#define R_HEX_LAST "0x0af126a54eae8d5c3c74a6cedf54bd30bdfea84a3cdf9965e156f041812bce91"
#define R_B64 "0bCvEmpU6ujVw8dKbO31S9ML3+qEo835ll4VbwQYErzpA="
#define MUTUAL_R "0x75c0b2e9d2803e071af78464f4ccb7bf606c23d9263270ce25810784db3a3f8c"
#define I_CHALLENGE "0xa5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"

static int verify(const struct scsitgt__chap_server *s, const char *r, const char *sec)
{
	return scsitgt__chap_server_verify(s, r, sec, strlen(sec));
}

static void fill_challenge(uint8_t ch[32])
{
	for (int i = 0; i < 32; i++) {
		ch[i] = (uint8_t)(0x10 + i);
	}
}

static void hex_to_bytes(const char *hex, uint8_t *out)
{
	for (size_t i = 0; hex[2 * i]; i++) {
		unsigned int v;

		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

static void check_alg_vector(int alg, const char *hex)
{
	uint8_t ch[32], got[SCSITGT__CHAP_DIGEST_MAX], want[SCSITGT__CHAP_DIGEST_MAX];
	size_t dlen = strlen(hex) / 2;

	fill_challenge(ch);
	hex_to_bytes(hex, want);
	assert_int_equal(scsitgt__chap_digest_len(alg), dlen);
	assert_int_equal(scsitgt__chap_response(got, sizeof(got), alg, 0x2a, secret, strlen(secret),
						ch, sizeof(ch)),
			 (int)dlen);
	assert_memory_equal(got, want, dlen);
}

static void test_vectors(void **state)
{
	check_alg_vector(SCSITGT__CHAP_MD5, "38ebd27f66ae5b705a1dd10cc8fdb189");
	check_alg_vector(SCSITGT__CHAP_SHA1, "d89cf871c0c83fb53cf32d9f72d7410ded93377b");
	check_alg_vector(SCSITGT__CHAP_SHA256,
			 "0af126a54eae8d5c3c74a6cedf54bd30bdfea84a3cdf9965e156f041812bce90");
	check_alg_vector(SCSITGT__CHAP_SHA3_256,
			 "4d4e57f6592cde637843a54455503e070b3f46447cfd84724912a058b078cf33");

	uint8_t out[32];
	assert_int_equal(scsitgt__chap_response(out, sizeof(out), 4, 1, "x", 1, out, 1), -EINVAL);
	assert_int_equal(scsitgt__chap_response(out, 15, SCSITGT__CHAP_MD5, 1, "x", 1, out, 1),
			 -ENOSPC);
	assert_int_equal(scsitgt__chap_digest_len(9), 0);
	assert_string_equal(scsitgt__chap_alg_name(SCSITGT__CHAP_SHA3_256), "SHA3-256");
	assert_string_equal(scsitgt__chap_alg_name(77), "unknown");
}

static void test_alg_select(void **state)
{
	static const enum scsitgt__chap_alg md5_sha256[] = { SCSITGT__CHAP_MD5,
							     SCSITGT__CHAP_SHA256 };
	static const enum scsitgt__chap_alg no_md5[] = { SCSITGT__CHAP_SHA256, SCSITGT__CHAP_SHA1 };

	/* RFC 7143 §6.2.1: the first value of the initiator's list that is allowed. */
	assert_int_equal(scsitgt__chap_alg_select("5", NULL, 0), 5);
	assert_int_equal(scsitgt__chap_alg_select("5,7", NULL, 0), 5);
	assert_int_equal(scsitgt__chap_alg_select("7,5,6,8", NULL, 0), 7);
	assert_int_equal(scsitgt__chap_alg_select("6,5", NULL, 0), 6);
	assert_int_equal(scsitgt__chap_alg_select("8,7", NULL, 0), 8);
	assert_int_equal(scsitgt__chap_alg_select("7,5", md5_sha256, 2), 7);
	assert_int_equal(scsitgt__chap_alg_select("6,8", md5_sha256, 2), -ENOENT);
	assert_int_equal(scsitgt__chap_alg_select("5,6,7", no_md5, 2), 6);
	assert_int_equal(scsitgt__chap_alg_select("5", no_md5, 2), -ENOENT);
	/* Unknown values and junk items are skipped, not fatal. */
	assert_int_equal(scsitgt__chap_alg_select("99,abc,,5", NULL, 0), 5);
	assert_int_equal(scsitgt__chap_alg_select("1,2,3", NULL, 0), -ENOENT);
	assert_int_equal(scsitgt__chap_alg_select("", NULL, 0), -ENOENT);
	assert_int_equal(scsitgt__chap_alg_select("0005", NULL, 0), -ENOENT);
	assert_int_equal(scsitgt__chap_alg_select("-5", NULL, 0), -ENOENT);

	char many[200];
	memset(many, 0, sizeof(many));
	for (int i = 0; i < 70; i++) {
		strcat(many, "5,");
	}
	assert_int_equal(scsitgt__chap_alg_select(many, NULL, 0), -EINVAL);
	char longlist[300];
	memset(longlist, '1', sizeof(longlist) - 1);
	longlist[sizeof(longlist) - 1] = '\0';
	assert_int_equal(scsitgt__chap_alg_select(longlist, NULL, 0), -EINVAL);
}

static void test_equal(void **state)
{
	assert_true(scsitgt__chap_equal("abcd", "abcd", 4));
	assert_false(scsitgt__chap_equal("abcd", "abce", 4));
	assert_false(scsitgt__chap_equal("xbcd", "abcd", 4));
	assert_true(scsitgt__chap_equal("a", "b", 0));
	assert_false(scsitgt__chap_secrets_distinct("secret123456", 12, "secret123456", 12));
	assert_true(scsitgt__chap_secrets_distinct("secret123456", 12, "secret1234567", 13));
	assert_true(scsitgt__chap_secrets_distinct("secret123456", 12, "secret123457", 12));
}

static int dec(uint8_t *out, size_t size, const char *s)
{
	return scsitgt__chap_decode(out, size, s, strlen(s));
}

static void test_decode(void **state)
{
	uint8_t out[16];

	assert_int_equal(dec(out, sizeof(out), "0x0102ff"), 3);
	assert_memory_equal(out, "\x01\x02\xff", 3);
	assert_int_equal(dec(out, sizeof(out), "0XABcd"), 2);
	assert_memory_equal(out, "\xab\xcd", 2);
	/* Odd digit count: implicit leading zero nibble. */
	assert_int_equal(dec(out, sizeof(out), "0x123"), 2);
	assert_memory_equal(out, "\x01\x23", 2);
	assert_int_equal(dec(out, sizeof(out), "0bAQIDBAU="), 5);
	assert_memory_equal(out, "\x01\x02\x03\x04\x05", 5);
	assert_int_equal(dec(out, sizeof(out), "0B+/8="), 2);
	assert_memory_equal(out, "\xfb\xff", 2);
	assert_int_equal(dec(out, sizeof(out), "0b/w=="), 1);
	assert_int_equal(out[0], 0xff);
	assert_int_equal(dec(out, sizeof(out), "0bAAAA"), 3);

	/* Malformed. */
	assert_int_equal(dec(out, sizeof(out), ""), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0x"), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0b"), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "1234"), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0y12"), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0x12g4"), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0x12 4"), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0bAQID BAU="), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0bAQIDBAU"), -EINVAL);	/* missing padding */
	assert_int_equal(dec(out, sizeof(out), "0bAQ=DBAU="), -EINVAL); /* '=' inside */
	assert_int_equal(dec(out, sizeof(out), "0b=AAA"), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0bA==="), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0b/x=="), -EINVAL); /* non-zero spare bits */
	assert_int_equal(dec(out, sizeof(out), "0b+/9="), -EINVAL);
	assert_int_equal(dec(out, sizeof(out), "0b===="), -EINVAL);
	assert_int_equal(scsitgt__chap_decode(out, sizeof(out), "0x1\0002", 5), -EINVAL);

	/* Too long for the output or the RFC limit. */
	assert_int_equal(dec(out, 2, "0x010203"), -EMSGSIZE);
	assert_int_equal(dec(out, 2, "0bAQID"), -EMSGSIZE);
	static char big[SCSITGT__CHAP_ENCODED_MAX + 2];
	big[0] = '0';
	big[1] = 'x';
	memset(big + 2, 'a', sizeof(big) - 3);
	uint8_t huge[SCSITGT__CHAP_ENCODED_MAX];
	assert_int_equal(scsitgt__chap_decode(huge, sizeof(huge), big, sizeof(big) - 1), -EMSGSIZE);
}

static void test_encode_roundtrip(void **state)
{
	uint8_t bin[64], back[64];
	char text[200];

	for (size_t i = 0; i < sizeof(bin); i++) {
		bin[i] = (uint8_t)(i * 37 + 11);
	}
	for (size_t len = 1; len <= sizeof(bin); len++) {
		for (int enc = 0; enc < 2; enc++) {
			int n = scsitgt__chap_encode(text, sizeof(text), bin, len,
						     (enum scsitgt__chap_enc)enc);
			assert_true(n > 0);
			assert_int_equal((size_t)n, strlen(text));
			assert_int_equal(dec(back, sizeof(back), text), (int)len);
			assert_memory_equal(back, bin, len);
		}
	}
	const enum scsitgt__chap_enc hex = SCSITGT__CHAP_ENC_HEX, b64 = SCSITGT__CHAP_ENC_BASE64;
	static const uint8_t five[5] = { 1, 2, 3, 4, 5 };

	assert_int_equal(scsitgt__chap_encode(text, sizeof(text), bin, 2, hex), 6);
	assert_string_equal(text, "0x0b30");
	assert_int_equal(scsitgt__chap_encode(text, sizeof(text), five, 5, b64), 10);
	assert_string_equal(text, "0bAQIDBAU=");
	assert_int_equal(scsitgt__chap_encode(text, 6, bin, 2, SCSITGT__CHAP_ENC_HEX), -ENOSPC);
	assert_int_equal(scsitgt__chap_encode(text, 7, bin, 2, SCSITGT__CHAP_ENC_HEX), 6);
	assert_int_equal(scsitgt__chap_encode(text, 6, bin, 1, SCSITGT__CHAP_ENC_BASE64), -ENOSPC);
	assert_int_equal(scsitgt__chap_encode(text, sizeof(text), bin, 0, SCSITGT__CHAP_ENC_HEX),
			 -EINVAL);
}

static void test_parse_id(void **state)
{
	assert_int_equal(scsitgt__chap_parse_id("0"), 0);
	assert_int_equal(scsitgt__chap_parse_id("255"), 255);
	assert_int_equal(scsitgt__chap_parse_id("0x1f"), 31);
	assert_int_equal(scsitgt__chap_parse_id("007"), 7);
	assert_int_equal(scsitgt__chap_parse_id("256"), -EINVAL);
	assert_int_equal(scsitgt__chap_parse_id("99999999999"), -EINVAL);
	assert_int_equal(scsitgt__chap_parse_id(""), -EINVAL);
	assert_int_equal(scsitgt__chap_parse_id("0x"), -EINVAL);
	assert_int_equal(scsitgt__chap_parse_id("-1"), -EINVAL);
	assert_int_equal(scsitgt__chap_parse_id("12a"), -EINVAL);
}

/* Deterministic random source: counts up from a seed. */
static int counting_random(void *cb_arg, void *buf, size_t len)
{
	uint8_t *seed = cb_arg;
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		p[i] = (*seed)++;
	}
	return 0;
}

static int failing_random(void *cb_arg, void *buf, size_t len)
{
	return -EIO;
}

/* A complete one-way and mutual exchange, checked against the independent vectors. */
static void test_server_exchange(void **state)
{
	struct scsitgt__chap_server s;
	uint8_t seed = 0x2a; /* id 0x2a, then challenge 0x2b.. */
	char a[4], i[4], c[SCSITGT__CHAP_CHALLENGE_TEXT_SIZE];

	assert_int_equal(
		scsitgt__chap_server_start(&s, SCSITGT__CHAP_SHA256, 32, counting_random, &seed),
		0);
	assert_int_equal(s.id, 0x2a);
	assert_int_equal(scsitgt__chap_server_format(&s, a, i, c, sizeof(c)), 0);
	assert_string_equal(a, "7");
	assert_string_equal(i, "42");
	assert_int_equal(strlen(c), 2 + 64);
	assert_memory_equal(c, "0x2b2c2d", 8);

	/* Make the challenge the vector's one, then check the vector's response. */
	fill_challenge(s.challenge);
	assert_int_equal(verify(&s, R_HEX, secret), 0);
	assert_int_equal(verify(&s, R_HEX_UC, secret), 0);
	/* Same response in base64. */
	assert_int_equal(verify(&s, R_B64, secret), 0);
	/* Wrong secret, wrong last byte, wrong length (MD5-sized, one byte more), malformed. */
	assert_int_equal(verify(&s, R_HEX, "Th1sIsAS3creT"), SCSITGT_EAUTH);
	assert_int_equal(verify(&s, R_HEX_LAST, secret), SCSITGT_EAUTH);
	assert_int_equal(verify(&s, "0x38ebd27f66ae5b705a1dd10cc8fdb189", secret), SCSITGT_EAUTH);
	assert_int_equal(verify(&s, R_HEX "00", secret), SCSITGT_EAUTH);
	assert_int_equal(verify(&s, "zz", secret), -EINVAL);

	/* Mutual: the initiator's challenge of 16 x 0xa5 with id 200. */
	char r[SCSITGT__CHAP_RESPONSE_TEXT_SIZE];
	static const char tsecret[] = "TargetSecret99";
	assert_int_equal(scsitgt__chap_mutual_respond(r, sizeof(r), &s, "200", I_CHALLENGE, tsecret,
						      strlen(tsecret)),
			 0);
	assert_string_equal(r, MUTUAL_R);
	/* Reflection: the initiator sends our own challenge back. */
	char own[SCSITGT__CHAP_CHALLENGE_TEXT_SIZE];
	assert_int_equal(scsitgt__chap_server_format(&s, a, i, own, sizeof(own)), 0);
	assert_int_equal(scsitgt__chap_mutual_respond(r, sizeof(r), &s, "200", own, tsecret,
						      strlen(tsecret)),
			 SCSITGT_EAUTH);
	/* Same bytes in another encoding are still a reflection. */
	char own64[200];
	assert_true(scsitgt__chap_encode(own64, sizeof(own64), s.challenge, s.challenge_len,
					 SCSITGT__CHAP_ENC_BASE64) > 0);
	assert_int_equal(scsitgt__chap_mutual_respond(r, sizeof(r), &s, "7", own64, tsecret,
						      strlen(tsecret)),
			 SCSITGT_EAUTH);
	/* Too short a challenge, bad id, bad challenge, small output. */
	assert_int_equal(scsitgt__chap_mutual_respond(r, sizeof(r), &s, "1", "0x0102", tsecret,
						      strlen(tsecret)),
			 SCSITGT_EAUTH);
	assert_int_equal(scsitgt__chap_mutual_respond(r, sizeof(r), &s, "300", I_CHALLENGE, tsecret,
						      strlen(tsecret)),
			 -EINVAL);
	assert_int_equal(scsitgt__chap_mutual_respond(r, sizeof(r), &s, "1", "0xq5", tsecret,
						      strlen(tsecret)),
			 -EINVAL);
	assert_int_equal(scsitgt__chap_mutual_respond(r, 10, &s, "200", I_CHALLENGE, tsecret,
						      strlen(tsecret)),
			 -ENOSPC);

	scsitgt__chap_server_clear(&s);
	assert_int_equal(s.alg, 0);
	assert_int_equal(verify(&s, "0x00", secret), -EINVAL);
	assert_int_equal(scsitgt__chap_server_format(&s, a, i, c, sizeof(c)), -EINVAL);
}

static void test_server_start(void **state)
{
	struct scsitgt__chap_server s, s2;
	char a[4], i[4], c[10];
	uint8_t seed = 0;

	assert_int_equal(scsitgt__chap_server_start(&s, 4, 0, NULL, NULL), -EINVAL);
	const int md5 = SCSITGT__CHAP_MD5, sha1 = SCSITGT__CHAP_SHA1;

	assert_int_equal(scsitgt__chap_server_start(&s, md5, 15, NULL, NULL), -EINVAL);
	assert_int_equal(
		scsitgt__chap_server_start(&s, md5, SCSITGT__CHAP_CHALLENGE_MAX + 1, NULL, NULL),
		-EINVAL);
	assert_int_equal(scsitgt__chap_server_start(&s, md5, 0, failing_random, NULL), -EIO);
	assert_int_equal(s.challenge_len, 0);
	assert_int_equal(scsitgt__chap_server_start(&s, md5, 0, counting_random, &seed), 0);
	assert_int_equal(s.challenge_len, 32);
	assert_int_equal(scsitgt__chap_server_format(&s, a, i, c, sizeof(c)), -ENOSPC);
	/* The default source gives different challenges each time. */
	assert_int_equal(scsitgt__chap_server_start(&s, sha1, 0, NULL, NULL), 0);
	assert_int_equal(scsitgt__chap_server_start(&s2, sha1, 0, NULL, NULL), 0);
	assert_memory_not_equal(s.challenge, s2.challenge, 32);
	assert_int_equal(
		scsitgt__chap_server_start(&s, sha1, SCSITGT__CHAP_CHALLENGE_MAX, NULL, NULL), 0);
	char big[SCSITGT__CHAP_CHALLENGE_TEXT_SIZE];
	assert_int_equal(scsitgt__chap_server_format(&s, a, i, big, sizeof(big)), 0);
	assert_int_equal(strlen(big), sizeof(big) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_alg_select),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_parse_id),
		cmocka_unit_test(test_server_exchange),
		cmocka_unit_test(test_server_start),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
