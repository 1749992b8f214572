/* SPDX-License-Identifier: MIT */
/*
 * Fuzz SANITIZE (SBC-4 §5.28): the OVERWRITE parameter list (§5.28.3: count, pattern length,
 * pattern) and the service actions around it (BLOCK ERASE, CRYPTOGRAPHIC ERASE, EXIT FAILURE
 * MODE, AUSE), with backend failures injected so that the failure state and its exit are
 * reached, through the core dispatch on the loop fabric. Input:
 *   byte 0  LUN configuration (FUZZ_LUN_* bits)
 *   then up to 8 records: [byte 1 of the CDB][fail][length, 2 bytes BE][parameter list]
 *   fail: bits 2..0 pick an errno for the next backend ios, bits 6..4 how many;
 *         bit 3: CDB PARAMETER LIST LENGTH = length + 4, not the length
 * A TEST UNIT READY and a READ(10) follow each record (they see the sanitize state).
 */
#include "fuzz_common.h"

static const int sz_errnos[8] = { 0, -EIO, -ENOSPC, -EROFS, -ENOMEM, -ENOTSUP, -EBADF, 0 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_env env;
	size_t off = 1;

	if (size < 1)
		return 0;
	fuzz_env_init(&env, data[0]);
	for (int n = 0; n < 8 && size - off >= 4; n++) {
		uint8_t cdb[10] = { 0x48 }, tur[6] = { 0 }, rd[10] = { 0x28 };
		uint8_t fail = data[off + 1];
		size_t len = (size_t)data[off + 2] << 8 | data[off + 3];

		cdb[1] = data[off];
		off += 4;
		if (len > size - off)
			len = size - off;
		fuzz_put_be16(&cdb[7], (uint32_t)(len + ((fail & 8) ? 4 : 0)) & 0xffff);
		if (sz_errnos[fail & 7])
			fake_backend_fail_next(env.fb, sz_errnos[fail & 7], (fail >> 4) & 7);
		fuzz_run(&env, cdb, sizeof(cdb), &data[off], len);
		off += len;
		fake_backend_fail_next(env.fb, 0, 0);
		fuzz_run(&env, tur, sizeof(tur), NULL, 0);
		fuzz_put_be16(&rd[7], 2);
		fuzz_run(&env, rd, sizeof(rd), NULL, 0);
	}
	fuzz_env_fini(&env);
	return 0;
}
