/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the UNMAP parameter list (SBC-4 §5.30.2) through the core dispatch on the loop fabric,
 * on a thin LUN whose backend either deallocates (SCSITGT_IO_UNMAP) or lacks it (emulation).
 * Input:
 *   byte 0  LUN configuration (FUZZ_LUN_* bits; FUZZ_LUN_THIN is forced on unless bit 7)
 *   byte 1  CDB byte 1 (ANCHOR) and, in bits 7..4, the GROUP NUMBER
 *   byte 2  bit 0: CDB PARAMETER LIST LENGTH = the list's length + byte 3, not the length
 *   byte 3  length adjustment
 *   then the parameter list; a GET LBA STATUS of the first blocks runs after it.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t cdb[10] = { 0x42 }, gls[16] = { 0x9e, 0x12 };
	struct fuzz_env env;
	unsigned int cfg;
	size_t len;

	if (size < 4)
		return 0;
	cfg = data[0] & 0x7f;
	if (!(data[0] & 0x80))
		cfg |= FUZZ_LUN_THIN;
	fuzz_env_init(&env, cfg);
	len = size - 4;
	if (len > 0xffff)
		len = 0xffff;
	cdb[1] = data[1] & 0x01;
	cdb[6] = data[1] >> 4;
	fuzz_put_be16(&cdb[7], (uint32_t)(len + ((data[2] & 1) ? data[3] : 0)) & 0xffff);
	fuzz_run(&env, cdb, sizeof(cdb), &data[4], len);
	fuzz_put_be32(&gls[10], 256);
	fuzz_run(&env, gls, sizeof(gls), NULL, 0);
	/* The same list a second time, on the state the first one left. */
	fuzz_run(&env, cdb, sizeof(cdb), &data[4], len);
	fuzz_env_fini(&env);
	return 0;
}
