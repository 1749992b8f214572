/* SPDX-License-Identifier: MIT */
/*
 * CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78), the iSCSI header and data
 * digest (RFC 7143 §12.1, RFC 3385).
 *
 * Running-value convention (the zlib crc32() one): the value passed in and returned is always a
 * *finished* CRC. Start with 0 and feed the previous result back in to continue, so
 *
 *	scsitgt__crc32c(scsitgt__crc32c(0, a, la), b, lb) == scsitgt__crc32c(0, a||b, la + lb)
 *
 * The pre- and post-inversion (init 0xFFFFFFFF, final xor 0xFFFFFFFF) happen inside each call.
 * The result is the digest value; on the wire it goes little-endian (least significant byte
 * first, RFC 7143 §12.1 and the examples of RFC 3720 appendix B.4), e.g. with put_le32().
 *
 * A data digest covers the data segment and its pad bytes (RFC 7143 §11.1): continue the CRC
 * over the 0..3 zero pad bytes, e.g. scsitgt__crc32c(crc, scsitgt__crc32c_zero_pad, pad).
 *
 * All functions are pure and thread-safe. Built with ISA-L, scsitgt__crc32c() is ISA-L's
 * crc32_iscsi; otherwise (scsitgt__crc32c_builtin()) the SSE4.2 crc32 instruction on x86-64 when
 * the CPU has it (checked at run time), else a slicing-by-8 table implementation.
 */
#ifndef SCSITGT_UTIL_CRC32C_H
#define SCSITGT_UTIL_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/** Length of an iSCSI digest on the wire. */
#define SCSITGT_CRC32C_DIGEST_LEN 4

/** Four zero bytes, for continuing a data digest over the segment's pad bytes. */
extern const uint8_t scsitgt__crc32c_zero_pad[4];

/**
 * CRC32C of @p len bytes at @p buf, continuing @p crc.
 *
 * @param crc Previous result, or 0 to start.
 * @param buf The bytes; may be NULL when @p len is 0.
 * @param len Number of bytes.
 * @return The CRC over everything fed so far (the digest value).
 */
uint32_t scsitgt__crc32c(uint32_t crc, const void *buf, size_t len);

/**
 * CRC32C of the first @p len bytes described by an iovec array (starting from 0).
 *
 * @param iov The vector.
 * @param cnt Number of entries in @p iov.
 * @param len Number of bytes to cover; stops early at the end of the vector.
 * @return The digest value.
 */
uint32_t scsitgt__crc32c_iov(const struct iovec *iov, int cnt, size_t len);

/**
 * Continue a CRC32C over @p len bytes of an iovec array, starting @p offset bytes into it
 * (e.g. a Data-In PDU covering a slice of a larger buffer).
 *
 * @param crc    Previous result, or 0 to start.
 * @param iov    The vector.
 * @param cnt    Number of entries in @p iov.
 * @param offset Bytes of the vector to skip first.
 * @param len    Number of bytes to cover; stops early at the end of the vector.
 * @return The updated CRC.
 */
uint32_t scsitgt__crc32c_iov_at(uint32_t crc, const struct iovec *iov, int cnt, size_t offset,
				size_t len);

/**
 * The portable slicing-by-8 implementation, same convention as scsitgt__crc32c(). Exposed so
 * tests can check it against the hardware path.
 */
uint32_t scsitgt__crc32c_sw(uint32_t crc, const void *buf, size_t len);

/**
 * The project's own implementation (SSE4.2 or slicing-by-8), same convention as
 * scsitgt__crc32c(); what scsitgt__crc32c() is when the library is built without ISA-L.
 */
uint32_t scsitgt__crc32c_builtin(uint32_t crc, const void *buf, size_t len);

/**
 * Whether scsitgt__crc32c_builtin() uses the CPU's crc32 instruction.
 *
 * @return true on x86-64 with SSE4.2, false otherwise.
 */
bool scsitgt__crc32c_hw_available(void);

/**
 * Which implementation scsitgt__crc32c() runs, for logs and benchmarks.
 *
 * @return "isa-l", "sse4.2" or "table" (a static string).
 */
const char *scsitgt__crc32c_impl(void);

#endif /* SCSITGT_UTIL_CRC32C_H */
