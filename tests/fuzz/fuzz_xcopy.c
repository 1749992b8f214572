/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the EXTENDED COPY(LID1) parameter list (SPC-4 §6.4) through the core dispatch on a
 * storing fake backend, then ask RECEIVE COPY RESULTS about it. Input:
 *   byte 0  LUN configuration of LUN 0 (FUZZ_LUN_* bits; FUZZ_LUN_STORE is forced on)
 *   byte 1  bit 0: a second LUN 1 (bit 1: with 4096-byte blocks) to copy to and from;
 *           bit 2: write the NAA of LUN (k % LUNs) into the designator of the k-th CSCD
 *           descriptor the header announces, so that copies reach real LUNs
 *   byte 2  bit 0: CDB PARAMETER LIST LENGTH = the list's length + byte 3, not the length
 *   byte 3  length adjustment
 *   then the parameter list, sent twice (the second finds the first's list identifier).
 */
#include "fuzz_common.h"

/* The largest list the core takes, and a little more to see it refused. */
#define XCOPY_FUZZ_MAX 4096u

static void fuzz_patch_designators(uint8_t *list, size_t len, const struct scsitgt_lun **luns,
				   unsigned int nluns)
{
	size_t tdll, k = 0;

	if (len < 16)
		return;
	tdll = (size_t)list[2] << 8 | list[3];
	for (size_t off = 16; off + 32 <= len && off + 32 <= 16 + tdll; off += 32, k++) {
		const struct scsitgt_lun *lun = luns[k % nluns];

		list[off + 4] = (uint8_t)((list[off + 4] & 0xf0) | 0x01);
		list[off + 5] = (uint8_t)((list[off + 5] & 0xc0) | 0x03);
		list[off + 7] = 8;
		fuzz_put_be64(&list[off + 8], lun->ident.naa);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t cdb[16] = { 0x83 }, rcr[16] = { 0x84 }, rd[16] = { 0x88 };
	const struct scsitgt_lun *luns[2];
	unsigned int nluns = 1;
	struct fuzz_env env;
	uint8_t *list;
	size_t len;

	if (size < 4)
		return 0;
	fuzz_env_init(&env, data[0] | FUZZ_LUN_STORE);
	luns[0] = env.lun;
	if (data[1] & 0x01) {
		struct fake_backend_opts o;
		struct scsitgt_lun *l1;

		fuzz_alloc_hold++;
		fake_backend_opts_init(&o);
		o.block_size = (data[1] & 0x02) ? 4096 : 512;
		o.num_blocks = FUZZ_BLOCKS;
		if (fake_backend_lun_create(&l1, NULL, env.lf->tgt, 1, 0, &o) != 0)
			abort();
		fuzz_alloc_hold--;
		luns[nluns++] = l1;
	}
	len = size - 4;
	if (len > XCOPY_FUZZ_MAX)
		len = XCOPY_FUZZ_MAX;
	fuzz_alloc_hold++;
	list = malloc(len ? len : 1);
	fuzz_alloc_hold--;
	if (list == NULL)
		abort();
	memcpy(list, &data[4], len);
	if (data[1] & 0x04)
		fuzz_patch_designators(list, len, luns, nluns);
	fuzz_put_be32(&cdb[10], (uint32_t)(len + ((data[2] & 1) ? data[3] : 0)));
	fuzz_run(&env, cdb, sizeof(cdb), list, len);
	fuzz_run(&env, cdb, sizeof(cdb), list, len);
	/* COPY STATUS and FAILED SEGMENT DETAILS of its list identifier, OPERATING PARAMETERS. */
	rcr[2] = len ? list[0] : 0;
	fuzz_put_be32(&rcr[10], 256);
	fuzz_run(&env, rcr, sizeof(rcr), NULL, 0);
	rcr[1] = 0x04;
	fuzz_run(&env, rcr, sizeof(rcr), NULL, 0);
	rcr[1] = 0x03;
	rcr[2] = 0;
	fuzz_run(&env, rcr, sizeof(rcr), NULL, 0);
	/* The LUN still reads. */
	fuzz_put_be32(&rd[10], FUZZ_BLOCKS);
	fuzz_run(&env, rd, sizeof(rd), NULL, 0);
	fuzz_alloc_hold++;
	free(list);
	fuzz_alloc_hold--;
	fuzz_env_fini(&env);
	return 0;
}
