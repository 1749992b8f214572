/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the data-carrying SBC commands whose Data-Out is more than blocks to store: WRITE
 * SAME(10)/(16) (SBC-4 §5.48, §5.50: one block replicated, UNMAP/ANCHOR/NDOB) and COMPARE AND
 * WRITE (§5.3: verify data then write data, miscompare offset), through the core dispatch on
 * a storing fake backend. Input:
 *   byte 0  LUN configuration (FUZZ_LUN_* bits; FUZZ_LUN_STORE is forced on)
 *   then up to 16 records: [op][byte 1][lba][nblocks][length, 2 bytes BE][data]
 *   op % 3: WRITE SAME(10), WRITE SAME(16), COMPARE AND WRITE; op bit 7: the LBA is taken
 *   near the end of the LUN (lba counts back from the last block), so ranges cross it.
 * A READ(16) of the touched range follows each record.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_env env;
	size_t off = 1;

	if (size < 1)
		return 0;
	fuzz_env_init(&env, data[0] | FUZZ_LUN_STORE);
	for (int n = 0; n < 16 && size - off >= 6; n++) {
		uint8_t op = data[off], b1 = data[off + 1], nb = data[off + 3];
		uint64_t lba = data[off + 2];
		size_t len = (size_t)data[off + 4] << 8 | data[off + 5];
		uint8_t cdb[16] = { 0 }, rd[16] = { 0x88 };
		size_t cdb_len;

		off += 6;
		if (len > size - off)
			len = size - off;
		if (op & 0x80)
			lba = FUZZ_BLOCKS - 1 - (lba % (FUZZ_BLOCKS + 2));
		switch (op % 3) {
		case 0:
			cdb[0] = 0x41;
			cdb[1] = b1;
			fuzz_put_be32(&cdb[2], (uint32_t)lba);
			fuzz_put_be16(&cdb[7], nb);
			cdb_len = 10;
			break;
		case 1:
			cdb[0] = 0x93;
			cdb[1] = b1;
			fuzz_put_be64(&cdb[2], lba);
			fuzz_put_be32(&cdb[10], nb);
			cdb_len = 16;
			break;
		default:
			cdb[0] = 0x89;
			cdb[1] = b1;
			fuzz_put_be64(&cdb[2], lba);
			cdb[13] = nb;
			cdb_len = 16;
			break;
		}
		fuzz_run(&env, cdb, cdb_len, &data[off], len);
		off += len;
		fuzz_put_be64(&rd[2], lba);
		fuzz_put_be32(&rd[10], nb % 8 + 1);
		fuzz_run(&env, rd, sizeof(rd), NULL, 0);
	}
	fuzz_env_fini(&env);
	return 0;
}
