/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the CDB parse/execute path: arbitrary CDBs and Data-Out through the in-process loop
 * fabric onto a small RAM-like fake backend. Input layout:
 *   byte 0      LUN configuration (see below)
 *   byte 1      backend failure injection: bits 2..0 pick an errno for the first io
 *   then up to 64 records: [cdb length % 33][cdb bytes][Data-Out length, 2 bytes BE][data]
 * Nothing may crash, hang or leak; the loop must close cleanly after every input.
 *
 * tests/fuzz/meson.build builds each target from its one source file, so the support code of
 * the loop fabric is compiled in here rather than linked.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../support/fake_backend.c"
#include "../support/loop_fabric.c"

enum {
	CFG_REMOVABLE = 1u << 0,
	CFG_READ_ONLY = 1u << 1,
	CFG_THIN = 1u << 2,
	CFG_WRITE_CACHE = 1u << 3,
	CFG_D_SENSE = 1u << 4,
	CFG_BS_4096 = 1u << 5,
	CFG_ASYNC = 1u << 6,
	CFG_OTHER_LUN = 1u << 7, /* address LUN 300 (flat), which does not exist */
};

static const int fuzz_errnos[8] = { 0, -EIO, -ENOSPC, -EROFS, -ENOMEM, -ENOTSUP, -EBADF, 0 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fake_backend_opts o;
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct scsitgt_lun *lun;
	uint32_t lun_flags = 0;
	uint8_t cfg, fail;
	size_t off = 2;

	if (size < 2)
		return 0;
	cfg = data[0];
	fail = data[1];
	if (loop_fabric_create(&lf, NULL) != 0)
		abort();
	fake_backend_opts_init(&o);
	o.block_size = (cfg & CFG_BS_4096) ? 4096 : 512;
	o.num_blocks = 64;
	o.supports = 1u << SCSITGT_IO_FLUSH | 1u << SCSITGT_IO_UNMAP |
		     1u << SCSITGT_IO_WRITE_ZEROES;
	o.geo_flags = SCSITGT_GEOMETRY_LBPRZ |
		      ((cfg & CFG_WRITE_CACHE) ? SCSITGT_GEOMETRY_WRITE_CACHE : 0);
	o.phys_exp = fail >> 6;
	o.mode = (cfg & CFG_ASYNC) ? FAKE_ASYNC : FAKE_SYNC;
	o.loop = &lf->loop;
	if (cfg & CFG_REMOVABLE)
		lun_flags |= SCSITGT_LUN_REMOVABLE;
	if (cfg & CFG_READ_ONLY)
		lun_flags |= SCSITGT_LUN_READ_ONLY;
	if (cfg & CFG_THIN)
		lun_flags |= SCSITGT_LUN_THIN;
	if (cfg & CFG_WRITE_CACHE)
		lun_flags |= SCSITGT_LUN_WRITE_CACHE;
	if (fake_backend_lun_create(&lun, &fb, lf->tgt, 0, lun_flags, &o) != 0)
		abort();
	lun->mode.d_sense = cfg & CFG_D_SENSE;
	if (fuzz_errnos[fail & 7])
		fake_backend_fail_next(fb, fuzz_errnos[fail & 7], 1);

	for (int n = 0; n < 64 && off < size; n++) {
		size_t cdb_len = data[off++] % 33, dout_len = 0;
		const uint8_t *cdb, *dout = NULL;
		struct lf_result res;

		if (size - off < cdb_len)
			cdb_len = size - off;
		cdb = &data[off];
		off += cdb_len;
		if (size - off >= 2) {
			dout_len = (size_t)data[off] << 8 | data[off + 1];
			off += 2;
			if (dout_len > size - off)
				dout_len = size - off;
			dout = &data[off];
			off += dout_len;
		}
		loop_fabric_run(lf, (cfg & CFG_OTHER_LUN) && (n & 1) ? 300 : 0, cdb, cdb_len, dout,
				dout_len, &res);
		/* Invariants every fabric relies on. */
		if (!lf_result_sane(&res))
			abort();
		lf_result_clear(&res);
	}
	loop_fabric_destroy(lf);
	return 0;
}
