/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the CHAP helpers: binary-value decoding (hex and base64) with several
 * output sizes, CHAP_A list selection, CHAP_I parsing, response verification and the mutual
 * response (with its reflection check), plus an encode/decode round trip of the decoded bytes.
 *
 * Input: byte 0 selects the output size for decoding; the rest is split at the first NUL into
 * two values (a CHAP_R/CHAP_C-like value and a CHAP_I/CHAP_A-like value).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/chap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fixed_random(void *cb_arg, void *buf, size_t len)
{
	memset(buf, 0x5a, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t bin[SCSITGT__CHAP_ENCODED_MAX];
	static char text[2 * SCSITGT__CHAP_ENCODED_MAX + 8];
	char *a, *b;
	int n;

	if (size < 1 || size > 2 * SCSITGT__CHAP_ENCODED_MAX) {
		return 0;
	}
	size_t out_size = (size_t)data[0] * 4 + 1;
	size_t len = size - 1;

	/* Split into two NUL-terminated strings. */
	char *buf = malloc(len + 2);
	if (buf == NULL) {
		return 0;
	}
	memcpy(buf, data + 1, len);
	buf[len] = '\0';
	buf[len + 1] = '\0';
	a = buf;
	b = buf + strlen(buf) + 1; /* at most buf + len + 1, the second terminator */

	n = scsitgt__chap_decode(bin, out_size < sizeof(bin) ? out_size : sizeof(bin),
				 (const char *)data + 1, len);
	if (n > 0) {
		/* A decoded value encodes and decodes back to the same bytes. */
		uint8_t back[SCSITGT__CHAP_ENCODED_MAX];
		for (int enc = 0; enc < 2; enc++) {
			int t = scsitgt__chap_encode(text, sizeof(text), bin, (size_t)n,
						     (enum scsitgt__chap_enc)enc);
			if (t > 0 &&
			    scsitgt__chap_decode(back, sizeof(back), text, (size_t)t) != n) {
				abort();
			}
			if (t > 0 && memcmp(back, bin, (size_t)n) != 0) {
				abort();
			}
		}
	}
	(void)scsitgt__chap_alg_select(b, NULL, 0);
	(void)scsitgt__chap_parse_id(b);

	struct scsitgt__chap_server s;
	int alg = SCSITGT__CHAP_MD5 + data[0] % 4;

	if (scsitgt__chap_server_start(&s, alg, 16, fixed_random, NULL) == 0) {
		char r[SCSITGT__CHAP_RESPONSE_TEXT_SIZE];

		(void)scsitgt__chap_server_verify(&s, a, "secretsecret", 12);
		(void)scsitgt__chap_mutual_respond(r, sizeof(r), &s, b, a, "othersecret1", 12);
		scsitgt__chap_server_clear(&s);
	}
	free(buf);
	return 0;
}
