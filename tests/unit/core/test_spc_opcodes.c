/* SPDX-License-Identifier: MIT */
/* SPC-5 §6.35 REPORT SUPPORTED OPERATION CODES and §6.36 REPORT SUPPORTED TMFs. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "core/alua.h"
#include "core/cdb.h"
#include "core/scsi_spec.h"

static size_t cdb_rsoc(uint8_t *cdb, bool rctd, uint8_t opts, uint8_t op, uint16_t sa,
		       uint32_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_MAINTENANCE_IN;
	cdb[1] = SPC_MI_REPORT_SUPPORTED_OPCODES;
	cdb[2] = (uint8_t)((rctd ? 0x80 : 0) | opts);
	cdb[3] = op;
	put_be16(&cdb[4], sa);
	put_be32(&cdb[6], alloc);
	return 12;
}

static size_t cdb_rstmf(uint8_t *cdb, bool repd, uint32_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_MAINTENANCE_IN;
	cdb[1] = SPC_MI_REPORT_SUPPORTED_TMFS;
	cdb[2] = repd ? 0x80 : 0;
	put_be32(&cdb[6], alloc);
	return 12;
}

/* The all_commands list names every table row once, in table order, with its CDB length. */
static void check_all(struct lf_result *r, bool rctd)
{
	size_t dlen = rctd ? 20 : 8, n = 0;
	unsigned int it = 0;
	uint8_t op;
	uint16_t sa;
	const struct scsitgt__cdb_def *row;

	assert_good(r);
	assert_true(r->data_len >= 4);
	assert_int_equal(get_be32(r->data), r->data_len - 4);
	while ((row = scsitgt__cdb_iter(&it, &op, &sa)) != NULL) {
		const uint8_t *d = &r->data[4 + n * dlen];

		/* The LUN is fully provisioned: rows for thin LUNs only are left out; the target
		 * has no ALUA: so are the target port group commands (test_alua.c). */
		if (row->flags & SCSITGT__CDB_F_THIN)
			continue;
		if (op == SPC_MAINTENANCE_IN && sa == SPC_MI_REPORT_TARGET_PORT_GROUPS)
			continue;
		if (op == SPC_MAINTENANCE_OUT && sa == SPC_MO_SET_TARGET_PORT_GROUPS)
			continue;

		assert_true(4 + (n + 1) * dlen <= r->data_len);
		assert_int_equal(d[0], op);
		assert_int_equal(get_be16(&d[2]), sa);
		assert_int_equal(d[5] & 0x01, scsitgt__cdb_has_sa(op) ? 1 : 0); /* SERVACTV */
		assert_int_equal(!!(d[5] & 0x02), rctd);			/* CTDP */
		assert_int_equal(get_be16(&d[6]), row->cdb_len);
		if (rctd)
			assert_int_equal(get_be16(&d[8]), 0x0a);
		n++;
	}
	assert_int_equal(r->data_len, 4 + n * dlen);
	/* The list includes this very command, and SANITIZE with its service actions. */
	assert_true(n > 10);
}

static void test_rsoc_all(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 0, 0, 0, 65535));
	check_all(r, false);
	r = tctx_run(t, cdb_rsoc(t->cdb, true, 0, 0, 0, 65535));
	check_all(r, true);
	/* Truncated to the allocation length, COMMAND DATA LENGTH still the whole list. */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 0, 0, 0, 12));
	assert_good(r);
	assert_int_equal(r->data_len, 12);
	assert_true(get_be32(r->data) > 8);
	tctx_destroy(t);
}

static void test_rsoc_one(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	const struct scsitgt__cdb_def *row;
	uint8_t key[2] = { SBC_READ_16, 0 };
	struct lf_result *r;

	(void)state;
	/* 001b on an opcode without service actions: SUPPORT 011b, usage data of the row. */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 1, SBC_READ_16, 0, 65535));
	assert_good(r);
	row = scsitgt__cdb_lookup(key, 2);
	assert_non_null(row);
	assert_int_equal(r->data_len, 4 + 16);
	assert_int_equal(r->data[1], 0x03);
	assert_int_equal(get_be16(&r->data[2]), 16);
	assert_memory_equal(&r->data[4], row->usage, 16);
	/* With RCTD: CTDP and a timeouts descriptor after the usage data. */
	r = tctx_run(t, cdb_rsoc(t->cdb, true, 1, SBC_READ_16, 0, 65535));
	assert_good(r);
	assert_int_equal(r->data_len, 4 + 16 + 12);
	assert_int_equal(r->data[1], 0x83);
	assert_int_equal(get_be16(&r->data[20]), 0x0a);
	/* 010b with the service action of a SANITIZE row: its usage, SA bits = the SA. */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 2, SBC_SANITIZE, SBC_SANITIZE_CRYPTO_ERASE, 512));
	assert_good(r);
	assert_int_equal(r->data[1], 0x03);
	assert_int_equal(get_be16(&r->data[2]), 10);
	assert_int_equal(r->data[4], SBC_SANITIZE);
	assert_int_equal(r->data[5], 0x80 | 0x20 | SBC_SANITIZE_CRYPTO_ERASE); /* IMMED, AUSE */
	/* 011b: the same as 010b for it, as 001b for READ (16). */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 3, SBC_SANITIZE, SBC_SANITIZE_OVERWRITE, 512));
	assert_good(r);
	assert_int_equal(r->data[5] & 0x1f, SBC_SANITIZE_OVERWRITE);
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 3, SBC_READ_16, 0, 512));
	assert_good(r);
	assert_int_equal(r->data[1], 0x03);
	/* Unsupported opcode / service action: SUPPORT 001b, CDB SIZE 0. */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 1, 0xff, 0, 512));
	assert_good(r);
	assert_int_equal(r->data_len, 4);
	assert_int_equal(r->data[1], 0x01);
	assert_int_equal(get_be16(&r->data[2]), 0);
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 2, SBC_SANITIZE, 0x05, 512));
	assert_good(r);
	assert_int_equal(r->data[1], 0x01);
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 3, SBC_READ_16, 1, 512));
	assert_good(r);
	assert_int_equal(r->data[1], 0x01);
	/* BLOCK ERASE is for thin LUNs only. */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 2, SBC_SANITIZE, SBC_SANITIZE_BLOCK_ERASE, 512));
	assert_good(r);
	assert_int_equal(r->data[1], 0x01);
	tctx_destroy(t);
}

/*
 * SPC-5 §6.35.3: SUPPORT 011b says the device server supports the command. Every command the
 * all_commands list names is one this LUN runs: sent with every field zero, to a LUN of its
 * own (so that no earlier command stopped or sanitized it), none answers INVALID COMMAND
 * OPERATION CODE or an invalid SERVICE ACTION (it may refuse other fields). A fully
 * provisioned LUN once listed UNMAP, which it refused as an unknown opcode.
 */
static void test_rsoc_per_lun(void **state)
{
	(void)state;
	for (int thin = 0; thin < 2; thin++) {
		struct tctx *t = tctx_create_unmap(thin);
		struct lf_result *r;
		uint8_t *list;
		size_t n;
		bool unmap = false;

		r = tctx_run(t, cdb_rsoc(t->cdb, false, 0, 0, 0, 65535));
		assert_good(r);
		n = (r->data_len - 4) / 8;
		list = malloc(r->data_len);
		assert_non_null(list);
		memcpy(list, r->data, r->data_len);
		tctx_destroy(t);
		for (size_t i = 0; i < n; i++) {
			const uint8_t *d = &list[4 + 8 * i];
			uint16_t len = get_be16(&d[6]);

			t = tctx_create_unmap(thin);
			memset(t->cdb, 0, CDB_BUF);
			t->cdb[0] = d[0];
			if (d[5] & 0x01) /* SERVACTV */
				t->cdb[1] = (uint8_t)get_be16(&d[2]);
			unmap |= d[0] == SBC_UNMAP;
			r = tctx_run(t, len);
			if (r->status == 0x02 && (r->sense[2] & 0x0f) == 0x5 &&
			    (r->sense[12] == 0x20 ||
			     /* the SERVICE ACTION field: byte 1, bit 4 */
			     (r->sense[12] == 0x24 && (d[5] & 0x01) &&
			      (r->sense[15] & 0xcf) == 0xcc && get_be16(&r->sense[16]) == 1)))
				fail_msg("%s LUN: %02xh/%u is listed but refused as unsupported",
					 thin ? "thin" : "full", d[0], get_be16(&d[2]));
			tctx_destroy(t);
		}
		/* UNMAP is listed where it runs, on the thin LUN only. */
		assert_int_equal(unmap, thin);
		free(list);
		/* The one_command form agrees: UNMAP is supported on the thin LUN only, and the
		 * CDB USAGE DATA of WRITE SAME offers its UNMAP bit there only, and ANCHOR
		 * nowhere (ANC_SUP 0): a bit it shows the command takes, one it hides it
		 * refuses. */
		t = tctx_create_unmap(thin);
		r = tctx_run(t, cdb_rsoc(t->cdb, false, 1, SBC_UNMAP, 0, 512));
		assert_good(r);
		assert_int_equal(r->data[1] & 0x07, thin ? 0x03 : 0x01);
		r = tctx_run(t, cdb_rsoc(t->cdb, false, 1, SBC_WRITE_SAME_10, 0, 512));
		assert_good(r);
		assert_int_equal(r->data[4 + 1], thin ? 0x08 : 0x00);
		r = tctx_run(t, cdb_rsoc(t->cdb, false, 1, SBC_WRITE_SAME_16, 0, 512));
		assert_good(r);
		assert_int_equal(r->data[4 + 1], thin ? 0x09 : 0x01); /* (UNMAP,) NDOB */
		/* What the parser does with them: WRITE SAME (16) NDOB of one block. */
		memset(t->cdb, 0, CDB_BUF);
		t->cdb[0] = SBC_WRITE_SAME_16;
		t->cdb[13] = 1;
		t->cdb[1] = 0x01 | 0x08;
		r = tctx_run(t, 16);
		if (thin)
			assert_good(r);
		else
			assert_bad_cdb(r, 1, 3);
		t->cdb[1] = 0x01 | 0x10;
		assert_bad_cdb(tctx_run(t, 16), 1, 4);
		tctx_destroy(t);
	}
}

static void test_rsoc_bad_fields(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	/* 001b for an opcode with service actions, 010b for one without: REQUESTED OPCODE. */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 1, SBC_SANITIZE, 1, 512));
	assert_bad_cdb(r, 3, 7);
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 2, SBC_READ_16, 0, 512));
	assert_bad_cdb(r, 3, 7);
	/* Reserved REPORTING OPTIONS. */
	r = tctx_run(t, cdb_rsoc(t->cdb, false, 4, 0, 0, 512));
	assert_bad_cdb(r, 2, 2);
	/* Reserved bits of byte 2 (bits 6..3), and of byte 10. */
	cdb_rsoc(t->cdb, false, 0, 0, 0, 512);
	t->cdb[2] = 0x08;
	r = tctx_run(t, 12);
	assert_bad_cdb(r, 2, 3);
	cdb_rsoc(t->cdb, false, 0, 0, 0, 512);
	t->cdb[10] = 0x01;
	r = tctx_run(t, 12);
	assert_bad_cdb(r, 10, 0);
	/* An unknown MAINTENANCE IN service action: the SERVICE ACTION field. */
	cdb_rsoc(t->cdb, false, 0, 0, 0, 512);
	t->cdb[1] = 0x1e;
	r = tctx_run(t, 12);
	assert_bad_cdb(r, 1, 4);
	tctx_destroy(t);
}

static void test_rstmf(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = tctx_run(t, cdb_rstmf(t->cdb, false, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 4);
	/* ATS ATSS CTSS LURS QTS TRS; no CACAS (no ACA); QTSS, no QAES or ITNRS. */
	assert_int_equal(r->data[0], 0xde);
	assert_int_equal(r->data[1], 0x02);
	r = tctx_run(t, cdb_rstmf(t->cdb, true, 255));
	assert_good(r);
	assert_int_equal(r->data_len, 16);
	assert_int_equal(r->data[3], 0x0c);
	/* ALLOCATION LENGTH below 4 is invalid (SPC-5 §6.36). */
	r = tctx_run(t, cdb_rstmf(t->cdb, false, 3));
	assert_bad_cdb(r, 6, -1);
	/* Reserved bits of byte 2. */
	cdb_rstmf(t->cdb, false, 16);
	t->cdb[2] = 0x40;
	r = tctx_run(t, 12);
	assert_bad_cdb(r, 2, 6);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rsoc_all),     cmocka_unit_test(test_rsoc_one),
		cmocka_unit_test(test_rsoc_per_lun), cmocka_unit_test(test_rsoc_bad_fields),
		cmocka_unit_test(test_rstmf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
