/* SPDX-License-Identifier: MIT */
/*
 * CHAP (RFC 1994) as used by iSCSI login (RFC 7143 §12.1.3), target side, and the RFC 7143
 * §6.1 binary-value codec its keys use. Digests come from Nettle.
 */
#include "transport/iscsi/chap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <nettle/md5.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <nettle/sha3.h>

#include "libscsitgt/common.h"

_Static_assert(SHA256_DIGEST_SIZE <= SCSITGT__CHAP_DIGEST_MAX, "digest buffer");
_Static_assert(SHA3_256_DIGEST_SIZE <= SCSITGT__CHAP_DIGEST_MAX, "digest buffer");

/* Challenge length we send by default: as long as the strongest digest. */
#define CHAP_CHALLENGE_DEFAULT 32
/* Largest CHAP_A list accepted (an ordinary text value, RFC 7143 §6.1). */
#define CHAP_A_LIST_MAX 255
#define CHAP_A_ITEMS_MAX 64

const enum scsitgt__chap_alg scsitgt__chap_default_prefs[4] = {
	SCSITGT__CHAP_SHA3_256,
	SCSITGT__CHAP_SHA256,
	SCSITGT__CHAP_SHA1,
	SCSITGT__CHAP_MD5,
};

int scsitgt__chap_random_default(void *cb_arg, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

size_t scsitgt__chap_digest_len(int alg)
{
	switch (alg) {
	case SCSITGT__CHAP_MD5:
		return MD5_DIGEST_SIZE;
	case SCSITGT__CHAP_SHA1:
		return SHA1_DIGEST_SIZE;
	case SCSITGT__CHAP_SHA256:
		return SHA256_DIGEST_SIZE;
	case SCSITGT__CHAP_SHA3_256:
		return SHA3_256_DIGEST_SIZE;
	default:
		return 0;
	}
}

const char *scsitgt__chap_alg_name(int alg)
{
	switch (alg) {
	case SCSITGT__CHAP_MD5:
		return "MD5";
	case SCSITGT__CHAP_SHA1:
		return "SHA-1";
	case SCSITGT__CHAP_SHA256:
		return "SHA-256";
	case SCSITGT__CHAP_SHA3_256:
		return "SHA3-256";
	default:
		return "unknown";
	}
}

/* One CHAP_A list item: decimal digits only, at most 3 of them (algorithm numbers < 256). */
static int parse_alg_item(const char *s, size_t len)
{
	int v = 0;

	if (len == 0 || len > 3) {
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9') {
			return -1;
		}
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int scsitgt__chap_alg_select(const char *list, const enum scsitgt__chap_alg *allowed,
			     size_t nallowed)
{
	int offered[CHAP_A_ITEMS_MAX];
	size_t n = 0;
	size_t len = strnlen(list, CHAP_A_LIST_MAX + 1);

	if (len > CHAP_A_LIST_MAX) {
		return -EINVAL;
	}
	if (allowed == NULL) {
		allowed = scsitgt__chap_default_prefs;
		nallowed = sizeof(scsitgt__chap_default_prefs) /
			   sizeof(scsitgt__chap_default_prefs[0]);
	}
	for (size_t start = 0; start <= len;) {
		const char *comma = memchr(list + start, ',', len - start);
		size_t end = comma ? (size_t)(comma - list) : len;

		if (n == CHAP_A_ITEMS_MAX) {
			return -EINVAL;
		}
		offered[n++] = parse_alg_item(list + start, end - start);
		start = end + 1;
	}
	/*
	 * RFC 7143 §6.2.1 (list negotiation), §12.1.3: the answer is the first value of the
	 * initiator's list that the target supports and allows; the order of @p allowed does
	 * not matter.
	 */
	for (size_t i = 0; i < n; i++) {
		if (scsitgt__chap_digest_len(offered[i]) == 0) {
			continue;
		}
		for (size_t p = 0; p < nallowed; p++) {
			if (offered[i] == (int)allowed[p]) {
				return offered[i];
			}
		}
	}
	return -ENOENT;
}

int scsitgt__chap_response(uint8_t *out, size_t out_size, int alg, uint8_t id, const void *secret,
			   size_t secret_len, const uint8_t *challenge, size_t challenge_len)
{
	size_t dlen = scsitgt__chap_digest_len(alg);

	if (dlen == 0) {
		return -EINVAL;
	}
	if (out_size < dlen) {
		return -ENOSPC;
	}
	/* RFC 1994 §4.1: Response = H(Identifier || secret || Challenge). */
	switch (alg) {
	case SCSITGT__CHAP_MD5: {
		struct md5_ctx c;

		md5_init(&c);
		md5_update(&c, 1, &id);
		md5_update(&c, secret_len, secret);
		md5_update(&c, challenge_len, challenge);
		md5_digest(&c, MD5_DIGEST_SIZE, out);
		break;
	}
	case SCSITGT__CHAP_SHA1: {
		struct sha1_ctx c;

		sha1_init(&c);
		sha1_update(&c, 1, &id);
		sha1_update(&c, secret_len, secret);
		sha1_update(&c, challenge_len, challenge);
		sha1_digest(&c, SHA1_DIGEST_SIZE, out);
		break;
	}
	case SCSITGT__CHAP_SHA256: {
		struct sha256_ctx c;

		sha256_init(&c);
		sha256_update(&c, 1, &id);
		sha256_update(&c, secret_len, secret);
		sha256_update(&c, challenge_len, challenge);
		sha256_digest(&c, SHA256_DIGEST_SIZE, out);
		break;
	}
	default: {
		struct sha3_256_ctx c;

		sha3_256_init(&c);
		sha3_256_update(&c, 1, &id);
		sha3_256_update(&c, secret_len, secret);
		sha3_256_update(&c, challenge_len, challenge);
		sha3_256_digest(&c, SHA3_256_DIGEST_SIZE, out);
		break;
	}
	}
	return (int)dlen;
}

bool scsitgt__chap_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a;
	const volatile uint8_t *y = b;
	uint8_t diff = 0;

	/* No early exit: the time must not tell how many leading bytes matched. */
	for (size_t i = 0; i < len; i++) {
		diff |= (uint8_t)(x[i] ^ y[i]);
	}
	return diff == 0;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z') {
		return c - 'A';
	}
	if (c >= 'a' && c <= 'z') {
		return c - 'a' + 26;
	}
	if (c >= '0' && c <= '9') {
		return c - '0' + 52;
	}
	if (c == '+') {
		return 62;
	}
	if (c == '/') {
		return 63;
	}
	return -1;
}

static int decode_hex(uint8_t *out, size_t out_size, const char *s, size_t n)
{
	size_t bytes = (n + 1) / 2;
	size_t o = 0;
	size_t i = 0;

	if (bytes > out_size) {
		return -EMSGSIZE;
	}
	/* An odd digit count means the first byte has only its low nibble written. */
	if (n % 2 == 1) {
		int v = hex_value(s[0]);

		if (v < 0) {
			return -EINVAL;
		}
		out[o++] = (uint8_t)v;
		i = 1;
	}
	for (; i < n; i += 2) {
		int hi = hex_value(s[i]);
		int lo = hex_value(s[i + 1]);

		if (hi < 0 || lo < 0) {
			return -EINVAL;
		}
		out[o++] = (uint8_t)(hi << 4 | lo);
	}
	return (int)o;
}

/* RFC 4648 §4 base64 with the padding it requires; non-zero unused bits are refused. */
static int decode_base64(uint8_t *out, size_t out_size, const char *s, size_t n)
{
	size_t pad = 0;
	size_t o = 0;

	if (n % 4 != 0) {
		return -EINVAL;
	}
	if (s[n - 1] == '=') {
		pad = (s[n - 2] == '=') ? 2 : 1;
	}
	size_t bytes = n / 4 * 3 - pad;
	if (bytes > out_size) {
		return -EMSGSIZE;
	}
	for (size_t i = 0; i < n; i += 4) {
		bool last = (i + 4 == n);
		int v[4];

		for (int k = 0; k < 4; k++) {
			if (last && s[i + k] == '=' && k >= (int)(4 - pad)) {
				v[k] = 0;
				continue;
			}
			v[k] = b64_value(s[i + k]);
			if (v[k] < 0) {
				return -EINVAL;
			}
		}
		uint32_t word = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
				(uint32_t)v[3];
		out[o++] = (uint8_t)(word >> 16);
		if (!last || pad < 2) {
			out[o++] = (uint8_t)(word >> 8);
		} else if ((word & 0xffff) != 0) {
			return -EINVAL;
		}
		if (!last || pad < 1) {
			out[o++] = (uint8_t)word;
		} else if ((word & 0xff) != 0) {
			return -EINVAL;
		}
	}
	return (int)o;
}

int scsitgt__chap_decode(uint8_t *out, size_t out_size, const char *text, size_t text_len)
{
	if (text_len > SCSITGT__CHAP_ENCODED_MAX) {
		return -EMSGSIZE;
	}
	if (text_len < 3 || text[0] != '0') {
		return -EINVAL;
	}
	/* RFC 7143 §6.1 binary-value: "0x"/"0X" hex-constant or "0b"/"0B" base64-constant. */
	if (text[1] == 'x' || text[1] == 'X') {
		return decode_hex(out, out_size, text + 2, text_len - 2);
	}
	if (text[1] == 'b' || text[1] == 'B') {
		return decode_base64(out, out_size, text + 2, text_len - 2);
	}
	return -EINVAL;
}

int scsitgt__chap_encode(char *out, size_t out_size, const uint8_t *bin, size_t len,
			 enum scsitgt__chap_enc enc)
{
	static const char hex[] = "0123456789abcdef";
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 2;

	if (len == 0) {
		return -EINVAL;
	}
	if (enc == SCSITGT__CHAP_ENC_HEX) {
		if (len > (SIZE_MAX - 3) / 2 || out_size < 2 + 2 * len + 1) {
			return -ENOSPC;
		}
		out[0] = '0';
		out[1] = 'x';
		for (size_t i = 0; i < len; i++) {
			out[o++] = hex[bin[i] >> 4];
			out[o++] = hex[bin[i] & 15];
		}
	} else {
		size_t need = 2 + (len + 2) / 3 * 4 + 1;

		if (len > SIZE_MAX / 2 || out_size < need) {
			return -ENOSPC;
		}
		out[0] = '0';
		out[1] = 'b';
		for (size_t i = 0; i < len; i += 3) {
			uint32_t w = (uint32_t)bin[i] << 16;
			size_t left = len - i;

			if (left > 1) {
				w |= (uint32_t)bin[i + 1] << 8;
			}
			if (left > 2) {
				w |= bin[i + 2];
			}
			out[o++] = b64[(w >> 18) & 63];
			out[o++] = b64[(w >> 12) & 63];
			out[o++] = left > 1 ? b64[(w >> 6) & 63] : '=';
			out[o++] = left > 2 ? b64[w & 63] : '=';
		}
	}
	out[o] = '\0';
	return (int)o;
}

int scsitgt__chap_parse_id(const char *value)
{
	size_t len = strnlen(value, 256);
	unsigned int v = 0;
	size_t i = 0;
	unsigned int base = 10;

	if (len == 0 || len > 255) {
		return -EINVAL;
	}
	if (len > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X')) {
		base = 16;
		i = 2;
	}
	for (; i < len; i++) {
		int d = (base == 16)			     ? hex_value(value[i]) :
			(value[i] >= '0' && value[i] <= '9') ? value[i] - '0' :
							       -1;

		if (d < 0) {
			return -EINVAL;
		}
		v = v * base + (unsigned int)d;
		if (v > 255) {
			return -EINVAL;
		}
	}
	return (int)v;
}

int scsitgt__chap_server_start(struct scsitgt__chap_server *s, int alg, size_t challenge_len,
			       scsitgt__chap_random_cb rnd, void *rnd_arg)
{
	uint8_t id;
	int rc;

	if (scsitgt__chap_digest_len(alg) == 0) {
		return -EINVAL;
	}
	if (challenge_len == 0) {
		challenge_len = CHAP_CHALLENGE_DEFAULT;
	}
	if (challenge_len < SCSITGT__CHAP_CHALLENGE_MIN ||
	    challenge_len > SCSITGT__CHAP_CHALLENGE_MAX) {
		return -EINVAL;
	}
	if (rnd == NULL) {
		rnd = scsitgt__chap_random_default;
	}
	memset(s, 0, sizeof(*s));
	rc = rnd(rnd_arg, &id, 1);
	if (rc == 0) {
		rc = rnd(rnd_arg, s->challenge, challenge_len);
	}
	if (rc < 0) {
		scsitgt__chap_server_clear(s);
		return rc;
	}
	s->alg = alg;
	s->id = id;
	s->challenge_len = challenge_len;
	return 0;
}

int scsitgt__chap_server_format(const struct scsitgt__chap_server *s, char a_out[4], char i_out[4],
				char *c_out, size_t c_size)
{
	int rc;

	if (scsitgt__chap_digest_len(s->alg) == 0 || s->challenge_len == 0) {
		return -EINVAL;
	}
	rc = scsitgt__chap_encode(c_out, c_size, s->challenge, s->challenge_len,
				  SCSITGT__CHAP_ENC_HEX);
	if (rc < 0) {
		return rc;
	}
	snprintf(a_out, 4, "%d", s->alg);
	snprintf(i_out, 4, "%u", (unsigned int)s->id);
	return 0;
}

int scsitgt__chap_server_verify(const struct scsitgt__chap_server *s, const char *r_value,
				const void *secret, size_t secret_len)
{
	uint8_t got[SCSITGT__CHAP_DIGEST_MAX];
	uint8_t want[SCSITGT__CHAP_DIGEST_MAX];
	size_t dlen = scsitgt__chap_digest_len(s->alg);
	int n;

	if (dlen == 0 || s->challenge_len == 0) {
		return -EINVAL;
	}
	n = scsitgt__chap_decode(got, sizeof(got), r_value,
				 strnlen(r_value, SCSITGT__CHAP_ENCODED_MAX + 1));
	if (n == -EMSGSIZE) {
		return SCSITGT_EAUTH; /* longer than any digest: simply wrong */
	}
	if (n < 0) {
		return n;
	}
	if ((size_t)n != dlen) {
		return SCSITGT_EAUTH;
	}
	scsitgt__chap_response(want, sizeof(want), s->alg, s->id, secret, secret_len, s->challenge,
			       s->challenge_len);
	bool ok = scsitgt__chap_equal(got, want, dlen);
	memset(want, 0, sizeof(want));
	return ok ? 0 : SCSITGT_EAUTH;
}

int scsitgt__chap_mutual_respond(char *r_out, size_t r_size, const struct scsitgt__chap_server *s,
				 const char *i_value, const char *c_value, const void *secret,
				 size_t secret_len)
{
	uint8_t challenge[SCSITGT__CHAP_CHALLENGE_MAX];
	uint8_t digest[SCSITGT__CHAP_DIGEST_MAX];
	int id, n, dlen;

	if (scsitgt__chap_digest_len(s->alg) == 0 || s->challenge_len == 0) {
		return -EINVAL;
	}
	id = scsitgt__chap_parse_id(i_value);
	if (id < 0) {
		return id;
	}
	n = scsitgt__chap_decode(challenge, sizeof(challenge), c_value,
				 strnlen(c_value, SCSITGT__CHAP_ENCODED_MAX + 1));
	if (n < 0) {
		return n;
	}
	if ((size_t)n < SCSITGT__CHAP_CHALLENGE_MIN) {
		return SCSITGT_EAUTH;
	}
	/*
	 * RFC 7143 §12.1.3: a target that receives its own challenge back must not answer it,
	 * or an attacker could have it compute the response to its own challenge.
	 */
	if ((size_t)n == s->challenge_len &&
	    scsitgt__chap_equal(challenge, s->challenge, (size_t)n)) {
		return SCSITGT_EAUTH;
	}
	dlen = scsitgt__chap_response(digest, sizeof(digest), s->alg, (uint8_t)id, secret,
				      secret_len, challenge, (size_t)n);
	if (dlen < 0) {
		return dlen;
	}
	n = scsitgt__chap_encode(r_out, r_size, digest, (size_t)dlen, SCSITGT__CHAP_ENC_HEX);
	memset(digest, 0, sizeof(digest));
	return n < 0 ? n : 0;
}

bool scsitgt__chap_secrets_distinct(const void *a, size_t a_len, const void *b, size_t b_len)
{
	return a_len != b_len || !scsitgt__chap_equal(a, b, a_len);
}

void scsitgt__chap_server_clear(struct scsitgt__chap_server *s)
{
	volatile uint8_t *p = (volatile uint8_t *)s;

	for (size_t i = 0; i < sizeof(*s); i++) {
		p[i] = 0;
	}
}
