/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the checks on strings from the wire before they are used or logged: the
 * iSCSI name rules (RFC 7143 §4.2.7, RFC 3722; scsitgt__iscsi_name_check()) and the log
 * escaper (scsitgt__log_escape()), whose output must never hold a control character and
 * must always be NUL-terminated within its buffer, whatever its size.
 *
 * Input: byte 0 = output buffer size for the escaper (0..255), rest = the string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/text/keys.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[256 + 1];
	size_t cap, n;

	if (size < 1) {
		return 0;
	}
	cap = data[0];
	data++;
	size--;
	if (scsitgt__iscsi_name_check((const char *)data, size) == 0) {
		/* A valid name is printable as it is: the escaper leaves it unchanged. */
		n = scsitgt__log_escape(out, sizeof(out), (const char *)data, size);
		if (size < 64 && (n != size || memcmp(out, data, size) != 0)) {
			abort();
		}
	}
	memset(out, 0x5a, sizeof(out));
	n = scsitgt__log_escape(out, cap, (const char *)data, size);
	if (cap == 0) {
		if (n != 0 || out[0] != 0x5a) {
			abort();
		}
		return 0;
	}
	if (n >= cap || out[n] != '\0' || out[cap] != 0x5a || strlen(out) != n) {
		abort();
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)out[i];

		if (c < 0x20 || c == 0x7f) {
			abort();
		}
	}
	return 0;
}
