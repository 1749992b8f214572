/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the iSCSI text path: accumulator, pair parser, key negotiation, target
 * declarations, chunked output, and the CHAP helpers on the CHAP_* values found.
 *
 * Input: byte 0 = flags (bits 0-1 stage: 0 security, 1 operational, 2/3 full feature; bit 2
 * leading; bit 3 T bit; bit 4 RDMAExtensions allowed; bit 5 CHAP allowed; bit 6 repeat the
 * text as a second request), byte 1 = PDU size for splitting (1..256), rest = the text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/chap.h"
#include "transport/iscsi/text/keys.h"
#include "transport/iscsi/text/textbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_chap(const struct scsitgt__iscsi_chap_keys *chap)
{
	uint8_t bin[SCSITGT__CHAP_CHALLENGE_MAX];
	struct scsitgt__chap_server s;
	uint8_t seed = 7;

	if (chap->a != NULL) {
		(void)scsitgt__chap_alg_select(chap->a, NULL, 0);
	}
	if (chap->i != NULL) {
		(void)scsitgt__chap_parse_id(chap->i);
	}
	if (chap->c != NULL) {
		(void)scsitgt__chap_decode(bin, sizeof(bin), chap->c, strlen(chap->c));
	}
	memset(&s, 0, sizeof(s));
	s.alg = SCSITGT__CHAP_SHA256;
	s.id = seed;
	s.challenge_len = 32;
	if (chap->r != NULL) {
		(void)scsitgt__chap_server_verify(&s, chap->r, "secretsecret", 12);
	}
	if (chap->i != NULL && chap->c != NULL) {
		char r[SCSITGT__CHAP_RESPONSE_TEXT_SIZE];

		(void)scsitgt__chap_mutual_respond(r, sizeof(r), &s, chap->i, chap->c,
						   "tsecret12345", 12);
	}
}

static void negotiate(struct scsitgt__iscsi_neg *n, const uint8_t *text, size_t len, size_t pdu,
		      bool transit)
{
	struct scsitgt__iscsi_text_acc acc;
	struct scsitgt__iscsi_textbuf resp;
	struct scsitgt__iscsi_chap_keys chap;
	const uint8_t *chunk;
	size_t tlen;
	bool more;
	int rc = 0;

	scsitgt__iscsi_text_acc_init(&acc, 16384);
	scsitgt__iscsi_textbuf_init(&resp, 8192);
	for (size_t off = 0; off < len || len == 0; off += pdu) {
		size_t k = len - off < pdu ? len - off : pdu;

		rc = scsitgt__iscsi_text_acc_add(&acc, text + off, k, off + k < len);
		if (rc != 0 || len == 0) {
			break;
		}
	}
	if (rc == 1) {
		const uint8_t *t = scsitgt__iscsi_text_acc_data(&acc, &tlen);

		scsitgt__iscsi_neg_set_transit(n, transit);
		if (scsitgt__iscsi_neg_text(n, t, tlen, &resp, &chap) == 0) {
			use_chap(&chap);
		}
		(void)scsitgt__iscsi_neg_declare(n, &resp);
		(void)scsitgt__iscsi_neg_pending(n);
		while (scsitgt__iscsi_textbuf_next_chunk(&resp, &chunk, pdu, &more) > 0) {
			if (!more) {
				break;
			}
		}
	}
	scsitgt__iscsi_textbuf_destroy(&resp);
	scsitgt__iscsi_text_acc_destroy(&acc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgt__iscsi_neg_params cfg;
	struct scsitgt__iscsi_neg *n;

	if (size < 2) {
		return 0;
	}
	uint8_t flags = data[0];
	size_t pdu = (size_t)data[1] + 1;
	static const enum scsitgt__iscsi_neg_stage stages[4] = { SCSITGT__ISCSI_STAGE_SECURITY,
								 SCSITGT__ISCSI_STAGE_OPERATIONAL,
								 SCSITGT__ISCSI_STAGE_FFP,
								 SCSITGT__ISCSI_STAGE_FFP };

	scsitgt__iscsi_neg_params_init(&cfg);
	cfg.rdma_extensions = (flags & 0x10) != 0;
	if (flags & 0x20) {
		cfg.auth_methods |= SCSITGT__ISCSI_AUTH_MASK_CHAP;
	}
	cfg.target_alias = "fuzz";
	n = malloc(sizeof(*n));
	if (n == NULL) {
		return 0;
	}
	scsitgt__iscsi_neg_init(n, &cfg, (flags & 0x04) != 0);
	if (stages[flags & 3] == SCSITGT__ISCSI_STAGE_FFP) {
		scsitgt__iscsi_neg_text_start(n);
	} else {
		scsitgt__iscsi_neg_set_stage(n, stages[flags & 3]);
	}
	negotiate(n, data + 2, size - 2, pdu, (flags & 0x08) != 0);
	if (flags & 0x40) {
		if (n->stage == SCSITGT__ISCSI_STAGE_SECURITY) {
			scsitgt__iscsi_neg_set_stage(n, SCSITGT__ISCSI_STAGE_OPERATIONAL);
		}
		negotiate(n, data + 2, size - 2, pdu, true);
	}
	(void)scsitgt__iscsi_neg_finish(n);
	free(n);
	return 0;
}
