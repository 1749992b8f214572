/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the iSER receive-side parsers (RFC 7145 §9): the iSER header, the CM REQ
 * private data, and the one-PDU-per-SEND span check, on arbitrary SEND payloads.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "transport/iser/iser_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgt__iser_hdr h;
	struct scsitgt__iser_cm cm;
	uint32_t pad = 0;
	long n;

	if (scsitgt__iser_cm_req_decode(data, size, &cm) == 0 && size >= SCSITGT__ISER_CM_LEN &&
	    !cm.given)
		abort();
	if (scsitgt__iser_hdr_decode(data, size, &h) != 0)
		return 0;
	if (h.opcode != SCSITGT__ISER_OP_ISCSI)
		return 0;
	n = scsitgt__iser_pdu_span(data + SCSITGT__ISER_HDR_LEN, size - SCSITGT__ISER_HDR_LEN, &pad);
	/* A span never exceeds what was received, and a pad is only owed when none was sent. */
	if (n >= 0 && ((size_t)n > size - SCSITGT__ISER_HDR_LEN || pad > 3 ||
		       (pad && (size_t)n != size - SCSITGT__ISER_HDR_LEN)))
		abort();
	return 0;
}
