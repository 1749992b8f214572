/* SPDX-License-Identifier: MIT */
/*
 * Fuzz Text Requests (key negotiation in full feature phase and SendTargets) after a valid
 * login. The first byte picks the session type and the C bit split; the rest is the text,
 * sent as one or two Text Request PDUs.
 */
#include <stddef.h>
#include <stdint.h>

#include "../unit/iscsi/iscsi_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct harness h;
	uint8_t bhs[ISCSI_BHS_LEN];
	size_t split;

	if (size < 1 || size > 16384)
		return 0;
	if (h_init(&h, false) != 0)
		return 0;
	if (h_login(&h, (data[0] & 1) ? "Discovery" : "Normal") != 0) {
		h_fini(&h);
		return 0;
	}
	data++;
	size--;
	split = size ? (size_t)(data[0] % 4 == 0 ? size / 2 : size) : 0;
	scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_REQ | ISCSI_FLAG_IMMEDIATE,
			  split < size ? ISCSI_TEXT_FLAG_CONTINUE : ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], 5);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
	h_send(&h, bhs, data, (uint32_t)split);
	if (split < size && !h_conn_gone(&h)) {
		struct h_pdu *r = h.npdus ? &h.pdus[h.npdus - 1] : NULL;

		scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_REQ | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
		put_be32(&bhs[ISCSI_BHS_ITT], 5);
		put_be32(&bhs[ISCSI_BHS_TTT],
			 r ? get_be32(&r->bhs[ISCSI_BHS_TTT]) : ISCSI_RESERVED_TAG);
		put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
		h_send(&h, bhs, data + split, (uint32_t)(size - split));
	}
	/* Ask for the rest of a long response, as an initiator would. */
	for (int i = 0; i < 4 && !h_conn_gone(&h) && h.npdus; i++) {
		struct h_pdu *r = &h.pdus[h.npdus - 1];

		if (scsitgt__bhs_opcode(r->bhs) != ISCSI_OP_TEXT_RSP ||
		    !(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_TEXT_FLAG_CONTINUE))
			break;
		scsitgt__bhs_init(bhs, ISCSI_OP_TEXT_REQ | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
		put_be32(&bhs[ISCSI_BHS_ITT], 5);
		put_be32(&bhs[ISCSI_BHS_TTT], get_be32(&r->bhs[ISCSI_BHS_TTT]));
		put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
		h_send(&h, bhs, NULL, 0);
	}
	h_fini(&h);
	return 0;
}
