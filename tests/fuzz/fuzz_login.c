/* SPDX-License-Identifier: MIT */
/*
 * Fuzz a whole iSCSI connection from its first byte: the input is the byte stream an initiator
 * sends (login PDUs, then anything), fed through the real receive path, login state machine,
 * key negotiation and, if a login succeeds, full feature phase. The target has CHAP off, one
 * RAM LUN; the first input byte picks CHAP on and the read split.
 */
#include <stddef.h>
#include <stdint.h>

#include "../unit/iscsi/iscsi_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct harness h;
	size_t chunk, off = 1;

	if (size < 1)
		return 0;
	if (h_init(&h, true) != 0)
		return 0;
	if (data[0] & 1)
		scsitgt_iscsi_target_set_chap(h.tgt, "user", "secret-of-16byte");
	chunk = (size_t)(data[0] >> 1) * 13 + 1;
	while (off < size && !h_conn_gone(&h)) {
		size_t n = size - off < chunk ? size - off : chunk;

		h_feed(&h, data + off, n);
		off += n;
	}
	h_fini(&h);
	return 0;
}
