/* SPDX-License-Identifier: MIT */
/*
 * CHAP for iSCSI login authentication (RFC 1994, RFC 7143 §12.1.3), target side.
 *
 * The login code (login.c) only sequences the exchange; everything that touches a secret, a
 * challenge or a wire encoding lives here:
 *
 *   1. Initiator: CHAP_A=<list>        -> scsitgt__chap_alg_select() picks one (or answer
 *                                          CHAP_A=Reject and fail with an auth error).
 *   2. Target:    CHAP_A=<a> CHAP_I=<id> CHAP_C=<challenge>
 *                                       -> scsitgt__chap_server_start(), then
 *                                          scsitgt__chap_server_format() fills the three values.
 *   3. Initiator: CHAP_N=<name> CHAP_R=<response> [CHAP_I=<id> CHAP_C=<challenge>]
 *                                       -> login.c looks the secret up by CHAP_N/initiator,
 *                                          scsitgt__chap_server_verify() checks CHAP_R.
 *                                          When CHAP_I/CHAP_C came too (mutual CHAP),
 *                                          scsitgt__chap_mutual_respond() makes the target's
 *                                          CHAP_R (refusing a reflected challenge).
 *   4. Target:    CHAP_N=<target user> CHAP_R=<response>   (mutual CHAP only)
 *
 * Algorithms are numbered as in the IANA "PPP Authentication Algorithms" registry, which
 * CHAP_A uses (RFC 7143 §12.1.3): 5 MD5, 6 SHA-1, 7 SHA-256, 8 SHA3-256 (also the Linux target's
 * numbers). Digests come from Nettle.
 *
 * Binary values (CHAP_C, CHAP_R) use the RFC 7143 §6.1 binary-value encoding: "0x"/"0X" and an
 * even or odd number of hex digits, or "0b"/"0B" and base64 (RFC 4648 alphabet, with padding).
 *
 * All functions are pure (no I/O except the default random source) and thread-safe.
 * Errors are negative errno values; a wrong response is SCSITGT_EAUTH.
 */
#ifndef SCSITGT_ISCSI_CHAP_H
#define SCSITGT_ISCSI_CHAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** CHAP_A algorithm numbers (IANA PPP Authentication Algorithms registry). */
enum scsitgt__chap_alg {
	SCSITGT__CHAP_MD5 = 5,
	SCSITGT__CHAP_SHA1 = 6,
	SCSITGT__CHAP_SHA256 = 7,
	SCSITGT__CHAP_SHA3_256 = 8,
};

/** Largest digest of any supported algorithm, in bytes. */
#define SCSITGT__CHAP_DIGEST_MAX 32
/** Largest challenge we accept or send, in bytes (RFC 7143 §12.1.3 limits CHAP_C to 1024). */
#define SCSITGT__CHAP_CHALLENGE_MAX 1024
/** Shortest challenge we send; also refuse shorter challenges from an initiator. */
#define SCSITGT__CHAP_CHALLENGE_MIN 16
/** Largest encoded binary value (a text value, RFC 7143 §6.1 limit for binary keys). */
#define SCSITGT__CHAP_ENCODED_MAX 8192
/** Output buffer size that holds any hex-encoded CHAP_C we produce, with its NUL. */
#define SCSITGT__CHAP_CHALLENGE_TEXT_SIZE (2 + 2 * SCSITGT__CHAP_CHALLENGE_MAX + 1)
/** Output buffer size that holds any hex-encoded CHAP_R, with its NUL. */
#define SCSITGT__CHAP_RESPONSE_TEXT_SIZE (2 + 2 * SCSITGT__CHAP_DIGEST_MAX + 1)
/** RFC 7143 §12.1.3 asks for secrets of at least 96 bits (12 bytes). */
#define SCSITGT__CHAP_SECRET_MIN 12
/** Longest secret we accept (a sanity bound, not from the RFC). */
#define SCSITGT__CHAP_SECRET_MAX 256

/** Every algorithm implemented: SHA3-256, SHA-256, SHA-1, MD5. */
extern const enum scsitgt__chap_alg scsitgt__chap_default_prefs[4];

/** Encoding of a binary value (RFC 7143 §6.1). */
enum scsitgt__chap_enc {
	SCSITGT__CHAP_ENC_HEX,	  /**< "0x" + hex digits (lower case on output). */
	SCSITGT__CHAP_ENC_BASE64, /**< "0b" + base64 with padding. */
};

/**
 * Random byte source.
 *
 * @param cb_arg The argument given with the callback.
 * @param buf    Where to write.
 * @param len    Number of bytes wanted.
 * @return 0 on success, a negative errno value on failure.
 */
typedef int (*scsitgt__chap_random_cb)(void *cb_arg, void *buf, size_t len);

/**
 * Default random source: getrandom(2), retried on EINTR and short reads.
 *
 * @param cb_arg Unused.
 * @return 0, or -errno of getrandom (e.g. -ENOSYS).
 */
int scsitgt__chap_random_default(void *cb_arg, void *buf, size_t len);

/**
 * Digest length of an algorithm.
 *
 * @param alg A CHAP_A number.
 * @return 16, 20 or 32; 0 when @p alg is not supported.
 */
size_t scsitgt__chap_digest_len(int alg);

/**
 * Name of an algorithm for logs ("MD5", "SHA-1", "SHA-256", "SHA3-256").
 *
 * @return A static string; "unknown" for an unsupported number.
 */
const char *scsitgt__chap_alg_name(int alg);

/**
 * Pick the algorithm for a CHAP_A offer: the first value of the initiator's list that the
 * target implements and allows (RFC 7143 §6.2.1 list negotiation, §12.1.3; the initiator's
 * order decides, not the target's). Values we do not know, non-numbers and empty items are
 * skipped.
 *
 * @param list     The CHAP_A value, a comma-separated list of decimal numbers, NUL-terminated.
 * @param allowed  The algorithms the target allows, in any order; NULL means
 *                 scsitgt__chap_default_prefs.
 * @param nallowed Number of entries in @p allowed.
 * @return The chosen CHAP_A number (> 0); -ENOENT when no offered value is acceptable (answer
 *         "CHAP_A=Reject" and fail the login with an authentication error); -EINVAL when
 *         @p list is longer than 255 bytes or has more than 64 items.
 */
int scsitgt__chap_alg_select(const char *list, const enum scsitgt__chap_alg *allowed,
			     size_t nallowed);

/**
 * CHAP response: H(id || secret || challenge) (RFC 1994 §4.1).
 *
 * @param out           Receives the digest (scsitgt__chap_digest_len(alg) bytes).
 * @param out_size      Size of @p out.
 * @param alg           CHAP_A number.
 * @param id            The CHAP_I identifier (0..255).
 * @param secret        The shared secret.
 * @param secret_len    Its length.
 * @param challenge     The challenge bytes.
 * @param challenge_len Its length.
 * @return The digest length; -EINVAL for an unsupported @p alg; -ENOSPC when @p out is small.
 */
int scsitgt__chap_response(uint8_t *out, size_t out_size, int alg, uint8_t id, const void *secret,
			   size_t secret_len, const uint8_t *challenge, size_t challenge_len);

/**
 * Compare two byte strings in time independent of their contents.
 *
 * @return true when the @p len bytes are equal.
 */
bool scsitgt__chap_equal(const void *a, const void *b, size_t len);

/**
 * Decode a binary value (RFC 7143 §6.1): "0x"/"0X" + hex digits (an odd count means a leading
 * zero nibble) or "0b"/"0B" + base64. Whitespace, missing digits, bad padding, trailing bits in
 * base64 and an empty payload are rejected.
 *
 * @param out      Receives the bytes.
 * @param out_size Size of @p out; the largest value accepted.
 * @param text     The encoded value (need not be NUL-terminated).
 * @param text_len Its length in bytes (at most ::SCSITGT__CHAP_ENCODED_MAX).
 * @return The number of decoded bytes (>= 1); -EINVAL for a malformed value; -EMSGSIZE when
 *         the value is longer than @p out_size bytes or the text longer than the RFC limit.
 */
int scsitgt__chap_decode(uint8_t *out, size_t out_size, const char *text, size_t text_len);

/**
 * Encode bytes as a binary value with its prefix, NUL-terminated.
 *
 * @param out      Receives the text.
 * @param out_size Size of @p out including the NUL.
 * @param bin      The bytes.
 * @param len      Their number (>= 1).
 * @param enc      Hex or base64.
 * @return The text length without the NUL; -ENOSPC when @p out is too small; -EINVAL when
 *         @p len is 0.
 */
int scsitgt__chap_encode(char *out, size_t out_size, const uint8_t *bin, size_t len,
			 enum scsitgt__chap_enc enc);

/**
 * Parse a CHAP_I value: a decimal (or 0x hex) number 0..255 (RFC 7143 §12.1.3).
 *
 * @param value NUL-terminated text.
 * @return The identifier (0..255); -EINVAL when malformed or out of range.
 */
int scsitgt__chap_parse_id(const char *value);

/** Target-side state of one CHAP exchange. Plain data; no destroy needed. */
struct scsitgt__chap_server {
	int alg;	      /**< Chosen CHAP_A number, 0 before start. */
	uint8_t id;	      /**< The CHAP_I we sent. */
	size_t challenge_len; /**< Bytes of @ref challenge in use. */
	uint8_t challenge[SCSITGT__CHAP_CHALLENGE_MAX]; /**< The CHAP_C we sent. */
};

/**
 * Start an exchange: remember the algorithm and draw a fresh identifier and challenge from the
 * random source (RFC 1994: both must be unpredictable and never reused).
 *
 * @param s             State to fill.
 * @param alg           Algorithm from scsitgt__chap_alg_select().
 * @param challenge_len Challenge bytes, ::SCSITGT__CHAP_CHALLENGE_MIN ..
 *                      ::SCSITGT__CHAP_CHALLENGE_MAX; 0 means the default (32).
 * @param rnd           Random source; NULL means scsitgt__chap_random_default().
 * @param rnd_arg       Its argument.
 * @return 0; -EINVAL for a bad algorithm or length; the random source's error.
 */
int scsitgt__chap_server_start(struct scsitgt__chap_server *s, int alg, size_t challenge_len,
			       scsitgt__chap_random_cb rnd, void *rnd_arg);

/**
 * Text of the three values the target sends after start: CHAP_A, CHAP_I (decimal) and CHAP_C
 * (hex binary value).
 *
 * @param s       Started state.
 * @param a_out   Receives CHAP_A's value, at least 4 bytes.
 * @param i_out   Receives CHAP_I's value, at least 4 bytes.
 * @param c_out   Receives CHAP_C's value.
 * @param c_size  Size of @p c_out (::SCSITGT__CHAP_CHALLENGE_TEXT_SIZE always suffices).
 * @return 0; -EINVAL when @p s was not started; -ENOSPC when @p c_out is too small.
 */
int scsitgt__chap_server_format(const struct scsitgt__chap_server *s, char a_out[4], char i_out[4],
				char *c_out, size_t c_size);

/**
 * Check the initiator's CHAP_R against the expected H(id || secret || challenge).
 *
 * @param s          Started state.
 * @param r_value    The CHAP_R value (binary-value text), NUL-terminated.
 * @param secret     The secret the target holds for this initiator (CHAP_N).
 * @param secret_len Its length.
 * @return 0 when the response is right; SCSITGT_EAUTH when it is wrong or of the wrong
 *         length; -EINVAL when @p r_value is malformed or @p s was not started.
 */
int scsitgt__chap_server_verify(const struct scsitgt__chap_server *s, const char *r_value,
				const void *secret, size_t secret_len);

/**
 * Mutual CHAP: answer the initiator's CHAP_I/CHAP_C with the target's secret. Refuses a
 * challenge equal to the one the target sent (a reflection attack, RFC 7143 §12.1.3) and
 * challenges shorter than ::SCSITGT__CHAP_CHALLENGE_MIN.
 *
 * @param r_out      Receives the CHAP_R value (hex), NUL-terminated.
 * @param r_size     Size of @p r_out (::SCSITGT__CHAP_RESPONSE_TEXT_SIZE suffices).
 * @param s          Started state (for the algorithm and the reflection check).
 * @param i_value    The initiator's CHAP_I value.
 * @param c_value    The initiator's CHAP_C value.
 * @param secret     The target's secret for mutual authentication.
 * @param secret_len Its length.
 * @return 0; SCSITGT_EAUTH for a reflected or too short challenge; -EINVAL for malformed
 *         values or an unstarted @p s; -EMSGSIZE for a too long challenge; -ENOSPC when
 *         @p r_out is too small.
 */
int scsitgt__chap_mutual_respond(char *r_out, size_t r_size, const struct scsitgt__chap_server *s,
				 const char *i_value, const char *c_value, const void *secret,
				 size_t secret_len);

/**
 * Check a pair of secrets for mutual CHAP. RFC 7143 §12.1.3 forbids using a secret configured
 * for authenticating initiators also for authenticating the target (an attacker could else
 * replay one side's response to the other); configuration code calls this when both are set.
 *
 * @return true when the secrets differ (in content or length).
 */
bool scsitgt__chap_secrets_distinct(const void *a, size_t a_len, const void *b, size_t b_len);

/**
 * Forget the challenge (overwrite it) once the exchange is over.
 */
void scsitgt__chap_server_clear(struct scsitgt__chap_server *s);

#endif /* SCSITGT_ISCSI_CHAP_H */
