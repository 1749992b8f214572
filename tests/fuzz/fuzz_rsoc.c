/* SPDX-License-Identifier: MIT */
/*
 * Fuzz REPORT SUPPORTED OPERATION CODES and REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS
 * (SPC-5 §6.35, §6.36) through the CDB path: every reporting option, requested operation
 * code / service action, RCTD and allocation length, with the answer checked against its own
 * length fields. Input: up to 64 records of 8 bytes:
 *   [byte 1 of the CDB: service action (low 5 bits), 0x0c/0x0d chosen by bit 5]
 *   [byte 2: RCTD and REPORTING OPTIONS][requested opcode][requested SA, 2 bytes]
 *   [allocation length, 2 bytes (scaled: the high byte becomes bits 23..16 when bit 6 of
 *    byte 1 is set)][control]
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_env env;

	fuzz_env_init(&env, 0);
	for (size_t off = 0; off + 8 <= size && off < 64 * 8; off += 8) {
		const uint8_t *r = &data[off];
		uint8_t cdb[12] = { 0xa3 };
		uint32_t alloc = (uint32_t)r[5] << 8 | r[6];

		if (r[0] & 0x40)
			alloc = (uint32_t)r[5] << 16 | r[6];
		cdb[1] = (r[0] & 0x20) ? 0x0d : 0x0c;
		if (r[0] & 0x80)
			cdb[1] = r[0] & 0x1f;
		cdb[2] = r[1];
		cdb[3] = r[2];
		cdb[4] = r[3];
		cdb[5] = r[4];
		fuzz_put_be32(&cdb[6], alloc);
		cdb[11] = r[7];
		fuzz_run(&env, cdb, sizeof(cdb), NULL, 0);
	}
	fuzz_env_fini(&env);
	return 0;
}
