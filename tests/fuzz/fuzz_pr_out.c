/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the PERSISTENT RESERVE OUT parameter list (SPC-5 §6.17) and the reservation state it
 * builds, through the core dispatch on the loop fabric. Two I_T nexuses share LUN 0, so that
 * REGISTER AND MOVE, PREEMPT and the conflict checks have someone to act on. Input:
 *   byte 0      LUN configuration (FUZZ_LUN_* bits)
 *   then up to 32 records:
 *     [service action][scope/type][flags][length, 2 bytes BE][parameter list]
 *   flags: bit 0  issue it on the second nexus
 *          bit 1  CDB PARAMETER LIST LENGTH = record length + (flags >> 4), not the length
 *          bits 2-3  PERSISTENT RESERVE IN service action run afterwards (READ KEYS,
 *                    READ RESERVATION, REPORT CAPABILITIES, READ FULL STATUS)
 * After every record a WRITE and a READ run on the first nexus, so the conflict checks see
 * each state. Nothing may crash, hang or leak.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgt__session *other;
	struct fuzz_env env;
	size_t off = 1;

	if (size < 1)
		return 0;
	fuzz_env_init(&env, data[0] & ~FUZZ_LUN_READ_ONLY);
	other = fuzz_add_other(&env);
	for (int n = 0; n < 32 && size - off >= 5; n++) {
		uint8_t cdb[10] = { 0x5f }, in[10] = { 0x5e }, rw[10] = { 0x2a };
		uint8_t flags = data[off + 2];
		size_t len = (size_t)data[off + 3] << 8 | data[off + 4];
		uint32_t cdb_len;
		const uint8_t *pl = &data[off + 5];

		cdb[1] = data[off] & 0x1f;
		cdb[2] = data[off + 1];
		off += 5;
		if (len > size - off)
			len = size - off;
		off += len;
		cdb_len = (uint32_t)len + ((flags & 2) ? flags >> 4 : 0);
		fuzz_put_be32(&cdb[5], cdb_len);
		fuzz_run_on(&env, (flags & 1) ? other : NULL, cdb, sizeof(cdb), pl, len);

		in[1] = (flags >> 2) & 3;
		fuzz_put_be16(&in[7], 0x2000);
		fuzz_run_on(&env, (flags & 1) ? NULL : other, in, sizeof(in), NULL, 0);
		/* WRITE(10) then READ(10) of one block: reservation conflict or not. */
		fuzz_put_be32(&rw[2], n % FUZZ_BLOCKS);
		fuzz_put_be16(&rw[7], 1);
		fuzz_run(&env, rw, sizeof(rw), pl, len);
		rw[0] = 0x28;
		fuzz_run(&env, rw, sizeof(rw), NULL, 0);
	}
	fuzz_env_fini(&env);
	return 0;
}
