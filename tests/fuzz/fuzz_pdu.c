/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the iSCSI receive state machine and BHS parsing with arbitrary bytes. The first byte
 * picks header/data digests, a caller destination buffer and the read split size. Bits 2-3 = 3
 * read as tcp.c does: a caller buffer, and no read past scsitgt__iscsi_rx_header_window(),
 * after which the machine must stand at the start of a part (the header is whole).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/pdu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t dest[300];
static int use_dest;

/* The "big" data segment of the header window: small, so that short inputs reach it. */
#define FZ_WINDOW_BIG 64u

static int fz_header(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	(void)arg;
	(void)scsitgt__iscsi_opcode_name(scsitgt__bhs_opcode(pdu->bhs));
	if (use_dest == 1) {
		pdu->dest = dest;
		pdu->dest_len = sizeof(dest);
	} else if (use_dest == 2) {
		pdu->discard = true;
	}
	return scsitgt__iscsi_opcode_is_initiator(scsitgt__bhs_opcode(pdu->bhs)) ? 0 : 0;
}

static int fz_pdu(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	volatile uint8_t sink = 0;

	(void)arg;
	if (pdu->data) {
		uint32_t n = pdu->dest ? pdu->dest_len : pdu->data_len;

		for (uint32_t i = 0; i < n; i++)
			sink ^= pdu->data[i];
	}
	(void)sink;
	return 0;
}

static const struct scsitgt__iscsi_rx_ops fz_ops = { fz_header, fz_pdu };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgt__iscsi_rx rx;
	size_t chunk, off = 1;
	bool window;

	if (size < 1)
		return 0;
	window = ((data[0] >> 2) & 3) == 3;
	use_dest = window ? 1 : (data[0] >> 2) % 3;
	chunk = (size_t)(data[0] >> 4) * 7 + 1;
	scsitgt__iscsi_rx_init(&rx, &fz_ops, NULL, 8192);
	rx.header_digest = data[0] & 1;
	rx.data_digest = data[0] & 2;
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		uint8_t *dst;
		size_t k = scsitgt__iscsi_rx_direct(&rx, &dst);
		size_t w = window ? scsitgt__iscsi_rx_header_window(&rx, FZ_WINDOW_BIG) : 0;

		if (k && (data[0] & 0x80)) {
			/* Exercise the zero-copy path as the TCP data mover does. */
			if (k > n)
				k = n;
			memcpy(dst, data + off, k);
			if (scsitgt__iscsi_rx_direct_done(&rx, k) < 0)
				break;
			off += k;
			continue;
		}
		if (w && w <= n) {
			/* The read ends with the header: nothing of the next part is taken. */
			if (scsitgt__iscsi_rx_feed(&rx, data + off, w) < 0)
				break;
			if (rx.got != 0)
				abort();
			off += w;
			continue;
		}
		if (scsitgt__iscsi_rx_feed(&rx, data + off, n) < 0)
			break;
		off += n;
	}
	scsitgt__iscsi_rx_destroy(&rx);
	return 0;
}
