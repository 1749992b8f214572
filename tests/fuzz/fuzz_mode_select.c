/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the MODE SELECT(6)/(10) parameter list (SPC-5 §6.11, §6.12, §7.5): header, block
 * descriptors and mode pages, through the core dispatch on the loop fabric; each list is
 * followed by a MODE SENSE of all pages and subpages, so that whatever was accepted is also
 * reported back. Input:
 *   byte 0  LUN configuration (FUZZ_LUN_* bits)
 *   then up to 16 records: [flags][length, 2 bytes BE][parameter list]
 *   flags: bit 0 MODE SELECT(10) (else 6), bit 1 PF, bit 2 SP,
 *          bit 3 CDB PARAMETER LIST LENGTH = length + (flags >> 4), not the length,
 *          bit 7..4 also the MODE SENSE page control (flags >> 6) and DBD (bit 5)
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_env env;
	size_t off = 1;

	if (size < 1)
		return 0;
	fuzz_env_init(&env, data[0]);
	for (int n = 0; n < 16 && size - off >= 3; n++) {
		uint8_t flags = data[off], cdb[10] = { 0 }, ms[10] = { 0x5a };
		size_t len = (size_t)data[off + 1] << 8 | data[off + 2];
		uint32_t plen;
		const uint8_t *pl;

		off += 3;
		if (len > size - off)
			len = size - off;
		pl = &data[off];
		off += len;
		plen = (uint32_t)len + ((flags & 8) ? flags >> 4 : 0);
		if (flags & 1) {
			cdb[0] = 0x55;
			fuzz_put_be16(&cdb[7], plen & 0xffff);
		} else {
			cdb[0] = 0x15;
			cdb[4] = (uint8_t)plen;
		}
		cdb[1] = (uint8_t)(((flags & 2) ? 0x10 : 0) | ((flags & 4) ? 0x01 : 0));
		fuzz_run(&env, cdb, (flags & 1) ? 10 : 6, pl, len);

		ms[1] = (flags & 0x20) ? 0x08 : 0x10; /* DBD, or LLBAA */
		ms[2] = (uint8_t)((flags >> 6) << 6 | 0x3f);
		ms[3] = 0xff;
		fuzz_put_be16(&ms[7], 0xffff);
		fuzz_run(&env, ms, sizeof(ms), NULL, 0);
	}
	fuzz_env_fini(&env);
	return 0;
}
