/* SPDX-License-Identifier: MIT */
/* Tests of util/crc32c.c: RFC 3720 appendix B.4 vectors, chaining, iovecs, HW vs SW paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scsitgt_config.h"
#include "util/crc32c.h"

/* The digest goes on the wire least significant byte first (RFC 7143 §12.1). */
static void wire_bytes(uint32_t crc, uint8_t out[4])
{
	out[0] = (uint8_t)crc;
	out[1] = (uint8_t)(crc >> 8);
	out[2] = (uint8_t)(crc >> 16);
	out[3] = (uint8_t)(crc >> 24);
}

static void check_vector(const uint8_t *buf, size_t len, const uint8_t expect[4])
{
	uint8_t got[4];

	wire_bytes(scsitgt__crc32c(0, buf, len), got);
	assert_memory_equal(got, expect, 4);
	wire_bytes(scsitgt__crc32c_sw(0, buf, len), got);
	assert_memory_equal(got, expect, 4);
	wire_bytes(scsitgt__crc32c_builtin(0, buf, len), got);
	assert_memory_equal(got, expect, 4);
}

/* RFC 3720 appendix B.4 (CRC examples), bytes as they appear on the wire. */
static void test_rfc3720_b4(void **state)
{
	uint8_t buf[32];

	memset(buf, 0, sizeof(buf));
	check_vector(buf, 32, (const uint8_t[]){ 0xaa, 0x36, 0x91, 0x8a });
	memset(buf, 0xff, sizeof(buf));
	check_vector(buf, 32, (const uint8_t[]){ 0x43, 0xab, 0xa8, 0x62 });
	for (int i = 0; i < 32; i++) {
		buf[i] = (uint8_t)i;
	}
	check_vector(buf, 32, (const uint8_t[]){ 0x4e, 0x79, 0xdd, 0x46 });
	for (int i = 0; i < 32; i++) {
		buf[i] = (uint8_t)(31 - i);
	}
	check_vector(buf, 32, (const uint8_t[]){ 0x5c, 0xdb, 0x3f, 0x11 });

	static const uint8_t read_pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	check_vector(read_pdu, sizeof(read_pdu), (const uint8_t[]){ 0x56, 0x3a, 0x96, 0xd9 });
}

/* The usual CRC-32C check value, CRC("123456789") = 0xE3069283, and the empty input. */
static void test_check_value(void **state)
{
	assert_int_equal(scsitgt__crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(scsitgt__crc32c_sw(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(scsitgt__crc32c(0, NULL, 0), 0);
	assert_int_equal(scsitgt__crc32c(0x12345678u, NULL, 0), 0x12345678u);
	assert_int_equal(scsitgt__crc32c_builtin(0, "123456789", 9), 0xe3069283u);
}

/* A build with ISA-L really runs it (the other tests cannot tell which code answered). */
static void test_impl(void **state)
{
#if SCSITGT_HAVE_ISAL
	assert_string_equal(scsitgt__crc32c_impl(), "isa-l");
#else
	assert_string_equal(scsitgt__crc32c_impl(),
			    scsitgt__crc32c_hw_available() ? "sse4.2" : "table");
#endif
}

/* Table row 0 recomputed bit by bit: CRC of a single byte b equals the bitwise definition. */
static void test_single_bytes(void **state)
{
	for (unsigned int b = 0; b < 256; b++) {
		uint32_t c = 0xffffffffu ^ b;

		for (int k = 0; k < 8; k++) {
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		}
		uint8_t byte = (uint8_t)b;
		assert_int_equal(scsitgt__crc32c_sw(0, &byte, 1), ~c);
		assert_int_equal(scsitgt__crc32c(0, &byte, 1), ~c);
	}
}

static uint32_t rng_state = 0x9e3779b9u;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/* Bitwise reference, independent of both implementations. */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t c = ~crc;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++) {
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		}
	}
	return ~c;
}

/* Every length 0..300 at every alignment 0..7: HW, SW and the bitwise reference agree. */
static void test_hw_sw_agree(void **state)
{
	uint8_t *buf = malloc(300 + 16);

	assert_non_null(buf);
	for (size_t i = 0; i < 316; i++) {
		buf[i] = (uint8_t)rng();
	}
	for (size_t align = 0; align < 8; align++) {
		for (size_t len = 0; len <= 300; len++) {
			uint32_t ref = crc_ref(0, buf + align, len);

			assert_int_equal(scsitgt__crc32c_sw(0, buf + align, len), ref);
			assert_int_equal(scsitgt__crc32c_builtin(0, buf + align, len), ref);
			assert_int_equal(scsitgt__crc32c(0, buf + align, len), ref);
		}
	}
	free(buf);
}

/* Large buffers exercise the three-stream path and its shift constants. */
static void test_large_buffers(void **state)
{
	size_t max = 64 * 1024 + 64;
	uint8_t *buf = malloc(max);
	static const size_t lens[] = { 3071, 3072, 3073, 6144, 6151, 9216 + 5, 65536, 65536 + 7 };

	assert_non_null(buf);
	for (size_t i = 0; i < max; i++) {
		buf[i] = (uint8_t)rng();
	}
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (size_t align = 0; align < 3; align++) {
			uint32_t ref = crc_ref(0, buf + align, lens[i]);

			assert_int_equal(scsitgt__crc32c_sw(0, buf + align, lens[i]), ref);
			assert_int_equal(scsitgt__crc32c_builtin(0, buf + align, lens[i]), ref);
			assert_int_equal(scsitgt__crc32c(0, buf + align, lens[i]), ref);
		}
	}
	for (int round = 0; round < 20; round++) {
		size_t len = rng() % (max - 8);
		size_t align = rng() % 8;
		uint32_t seed = rng();

		assert_int_equal(scsitgt__crc32c(seed, buf + align, len),
				 scsitgt__crc32c_sw(seed, buf + align, len));
		assert_int_equal(scsitgt__crc32c_builtin(seed, buf + align, len),
				 scsitgt__crc32c_sw(seed, buf + align, len));
	}
	free(buf);
}

/* Chaining finished values equals one pass (header then data, as for digests). */
static void test_chaining(void **state)
{
	uint8_t buf[5000];

	for (size_t i = 0; i < sizeof(buf); i++) {
		buf[i] = (uint8_t)rng();
	}
	uint32_t whole = scsitgt__crc32c(0, buf, sizeof(buf));
	for (size_t split = 0; split <= sizeof(buf); split += 97) {
		uint32_t c = scsitgt__crc32c(0, buf, split);

		assert_int_equal(scsitgt__crc32c(c, buf + split, sizeof(buf) - split), whole);
		c = scsitgt__crc32c_sw(0, buf, split);
		assert_int_equal(scsitgt__crc32c_sw(c, buf + split, sizeof(buf) - split), whole);
	}
	/* Pad bytes: a 5-byte segment's digest covers 3 zero pad bytes. */
	uint8_t padded[8] = { 1, 2, 3, 4, 5, 0, 0, 0 };
	uint32_t c = scsitgt__crc32c(0, padded, 5);
	assert_int_equal(scsitgt__crc32c(c, scsitgt__crc32c_zero_pad, 3),
			 scsitgt__crc32c(0, padded, 8));
}

static void test_iov(void **state)
{
	uint8_t buf[1000];

	for (size_t i = 0; i < sizeof(buf); i++) {
		buf[i] = (uint8_t)rng();
	}
	struct iovec iov[4] = {
		{ .iov_base = buf, .iov_len = 1 },
		{ .iov_base = buf + 1, .iov_len = 0 },
		{ .iov_base = buf + 1, .iov_len = 499 },
		{ .iov_base = buf + 500, .iov_len = 500 },
	};
	assert_int_equal(scsitgt__crc32c_iov(iov, 4, 1000), scsitgt__crc32c(0, buf, 1000));
	assert_int_equal(scsitgt__crc32c_iov(iov, 4, 700), scsitgt__crc32c(0, buf, 700));
	/* Longer than the vector: stops at its end. */
	assert_int_equal(scsitgt__crc32c_iov(iov, 4, 5000), scsitgt__crc32c(0, buf, 1000));
	assert_int_equal(scsitgt__crc32c_iov(iov, 0, 10), 0);
	for (size_t off = 0; off <= 1000; off += 37) {
		for (size_t len = 0; off + len <= 1000; len += 113) {
			assert_int_equal(scsitgt__crc32c_iov_at(0, iov, 4, off, len),
					 scsitgt__crc32c(0, buf + off, len));
		}
	}
	uint32_t head = scsitgt__crc32c(0, "hdr", 3);
	assert_int_equal(scsitgt__crc32c_iov_at(head, iov, 4, 10, 20),
			 scsitgt__crc32c(head, buf + 10, 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc3720_b4),  cmocka_unit_test(test_check_value),
		cmocka_unit_test(test_impl),	    cmocka_unit_test(test_single_bytes),
		cmocka_unit_test(test_hw_sw_agree), cmocka_unit_test(test_large_buffers),
		cmocka_unit_test(test_chaining),    cmocka_unit_test(test_iov),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
