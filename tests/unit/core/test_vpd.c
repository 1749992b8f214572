/* SPDX-License-Identifier: MIT */
/* VPD pages (SPC-5 §7.7, SBC-4 §6.6) through INQUIRY with EVPD set. */
#include <string.h>

#include "test_util.h"

#include "core/cdb.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"

static struct lf_result *vpd(struct tctx *t, uint8_t page, uint16_t alloc)
{
	return tctx_run(t, cdb_inquiry(t->cdb, true, page, alloc));
}

static void test_supported_pages(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	/* 8Fh (third-party copy) with EXTENDED COPY (core/xcopy*.c). */
	const uint8_t want[] = { 0x00, 0x80, 0x83, 0x86, 0x8f, 0xb0, 0xb1 };
	struct lf_result *r;

	(void)state;
	r = vpd(t, 0x00, 255);
	assert_good(r);
	assert_int_equal(r->data[0], 0x00);
	assert_int_equal(r->data[1], 0x00);
	assert_int_equal(get_be16(&r->data[2]), sizeof(want));
	assert_int_equal(r->data_len, 4 + sizeof(want));
	assert_memory_equal(&r->data[4], want, sizeof(want));
	tctx_destroy(t);
}

static struct tctx *thin_lun(uint32_t geo_flags)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP;
	o.geo_flags = geo_flags;
	return tctx_create(SCSITGT_LUN_THIN, &o);
}

static void test_supported_pages_thin(void **state)
{
	struct tctx *t = thin_lun(0);
	const uint8_t want[] = { 0x00, 0x80, 0x83, 0x86, 0x8f, 0xb0, 0xb1, 0xb2 };
	struct lf_result *r;

	(void)state;
	r = vpd(t, 0x00, 255);
	assert_good(r);
	assert_int_equal(get_be16(&r->data[2]), sizeof(want));
	assert_memory_equal(&r->data[4], want, sizeof(want));
	tctx_destroy(t);
}

static void test_unit_serial(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;
	size_t len;

	(void)state;
	r = vpd(t, 0x80, 255);
	assert_good(r);
	assert_int_equal(r->data[1], 0x80);
	len = get_be16(&r->data[2]);
	assert_int_equal(len, strlen(t->lun->ident.serial));
	assert_true(len > 0);
	assert_int_equal(r->data_len, 4 + len);
	assert_memory_equal(&r->data[4], t->lun->ident.serial, len);
	tctx_destroy(t);
}

/* Find the designator of @type and @assoc in a device identification page; NULL if none. */
static const uint8_t *find_desig(const uint8_t *d, size_t len, uint8_t type, uint8_t assoc)
{
	size_t off = 4;

	while (off + 4 <= len) {
		const uint8_t *p = &d[off];

		if ((p[1] & 0x0f) == type && ((p[1] >> 4) & 0x03) == assoc)
			return p;
		off += 4 + p[3];
	}
	return NULL;
}

static void test_device_id(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	const char *port = "iqn.2024-01.org.example:loop,t,0x0001";
	const char *dev = "iqn.2024-01.org.example:loop";
	struct lf_result *r;
	const uint8_t *p;
	size_t len, off;

	(void)state;
	r = vpd(t, 0x83, 1024);
	assert_good(r);
	len = get_be16(&r->data[2]) + 4;
	assert_int_equal(r->data_len, len);
	/* The descriptors tile the page exactly. */
	for (off = 4; off < len; off += 4 + r->data[off + 3])
		;
	assert_int_equal(off, len);

	/* NAA IEEE Registered, LU association, binary. */
	p = find_desig(r->data, len, 0x3, 0);
	assert_non_null(p);
	assert_int_equal(p[0], 0x01);
	assert_int_equal(p[1] & 0x80, 0); /* PIV 0 for LU designators */
	assert_int_equal(p[3], 8);
	assert_int_equal(p[4] >> 4, 5);
	assert_true(get_be64(&p[4]) == t->lun->ident.naa);
	/* No EUI-64 unless configured. */
	assert_null(find_desig(r->data, len, 0x2, 0));
	/* T10 vendor ID based: ASCII, vendor identification first. */
	p = find_desig(r->data, len, 0x1, 0);
	assert_non_null(p);
	assert_int_equal(p[0] & 0x0f, 0x2);
	assert_memory_equal(&p[4], "LIBSCSI ", 8);
	assert_memory_equal(&p[12], "fake            ", 16);
	assert_memory_equal(&p[28], t->lun->ident.serial, strlen(t->lun->ident.serial));
	/* Relative target port: iSCSI protocol, PIV, target port association, id 1. */
	p = find_desig(r->data, len, 0x4, 1);
	assert_non_null(p);
	assert_int_equal(p[0], 0x51);
	assert_int_equal(p[1], 0x80 | 0x10 | 0x4);
	assert_int_equal(p[3], 4);
	assert_int_equal(get_be16(&p[6]), 1);
	/* No target port group without ALUA (INQUIRY TPGS 00b, issue 17): test_alua.c. */
	assert_null(find_desig(r->data, len, 0x5, 1));
	assert_int_equal(t->lf->sess->rel_port_id, 1);
	/* SCSI name string of the target port: UTF-8, null-terminated, padded to 4. */
	p = find_desig(r->data, len, 0x8, 1);
	assert_non_null(p);
	assert_int_equal(p[0], 0x53);
	assert_int_equal(p[1] & 0x80, 0x80);
	assert_int_equal(p[3] % 4, 0);
	assert_true(p[3] >= strlen(port) + 1);
	assert_string_equal((const char *)&p[4], port);
	for (size_t i = strlen(port); i < p[3]; i++)
		assert_int_equal(p[4 + i], 0);
	/* And of the target device. */
	p = find_desig(r->data, len, 0x8, 2);
	assert_non_null(p);
	assert_int_equal(p[3] % 4, 0);
	assert_string_equal((const char *)&p[4], dev);

	/* Truncation keeps the full PAGE LENGTH. */
	r = vpd(t, 0x83, 6);
	assert_good(r);
	assert_int_equal(r->data_len, 6);
	assert_int_equal(get_be16(&r->data[2]) + 4, len);
	tctx_destroy(t);
}

static void test_device_id_eui64(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct fake_backend_opts o;
	struct scsitgt_lun_opts lo;
	struct fake_backend *fb;
	struct scsitgt_lun *lun;
	struct lf_result *r;
	const uint8_t *p;

	(void)state;
	fake_backend_opts_init(&o);
	assert_int_equal(fake_backend_create(&fb, &o), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 3;
	lo.backend = &fb->ops;
	lo.backend_ctx = fb;
	lo.eui64 = 0x0011223344556677ull;
	lo.naa = 0x0123456789abcdefull;
	lo.vendor = "ACME";
	assert_int_equal(scsitgt_lun_create(&lun, t->lf->tgt, &lo), 0);
	cdb_inquiry(t->cdb, true, 0x83, 1024);
	r = tctx_run_lun(t, 3, 6, NULL, 0);
	assert_good(r);
	p = find_desig(r->data, r->data_len, 0x2, 0);
	assert_non_null(p);
	assert_int_equal(p[3], 8);
	assert_true(get_be64(&p[4]) == 0x0011223344556677ull);
	p = find_desig(r->data, r->data_len, 0x3, 0);
	assert_non_null(p);
	/* The top nibble is forced to NAA 5. */
	assert_true(get_be64(&p[4]) == 0x5123456789abcdefull);
	p = find_desig(r->data, r->data_len, 0x1, 0);
	assert_memory_equal(&p[4], "ACME    ", 8);
	tctx_destroy(t);
}

static void test_block_limits(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	fake_backend_opts_init(&o);
	o.phys_exp = 3;
	o.opt_blocks = 128;
	t = tctx_create(0, &o);
	r = vpd(t, 0xb0, 255);
	assert_good(r);
	assert_int_equal(r->data_len, 64);
	assert_int_equal(r->data[1], 0xb0);
	assert_int_equal(get_be16(&r->data[2]), 0x3c);
	assert_int_equal(r->data[4] & 0x01, 0x00);		   /* WSNZ 0: 0 means to the end */
	assert_int_equal(r->data[5], SCSITGT__SBC_MAX_CAW_BLOCKS); /* MAX COMPARE AND WRITE */
	assert_int_equal(get_be16(&r->data[6]), 8); /* granularity: a physical block */
	assert_int_equal(get_be32(&r->data[8]), (8u << 20) / 512); /* MAXIMUM TRANSFER LENGTH */
	assert_int_equal(get_be32(&r->data[12]), 128);		   /* OPTIMAL TRANSFER LENGTH */
	assert_int_equal(get_be32(&r->data[20]), 0);		   /* no UNMAP on a full LUN */
	assert_int_equal(get_be32(&r->data[24]), 0);
	assert_true(get_be64(&r->data[36]) == SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS);
	assert_int_equal(get_be32(&r->data[44]), SCSITGT__SBC_MAX_ATOMIC_BLOCKS);
	tctx_destroy(t);

	o.block_size = 4096;
	o.num_blocks = 256;
	o.phys_exp = 0;
	o.opt_blocks = 1u << 20; /* capped at the maximum */
	t = tctx_create(0, &o);
	r = vpd(t, 0xb0, 255);
	assert_good(r);
	assert_int_equal(get_be32(&r->data[8]), (8u << 20) / 4096);
	assert_int_equal(get_be32(&r->data[12]), (8u << 20) / 4096);
	assert_int_equal(get_be16(&r->data[6]), 1);
	tctx_destroy(t);

	/* A backend's own deallocation unit (RBD: 64 KiB): OPTIMAL UNMAP GRANULARITY 128 with
	 * UGAVALID and alignment 0; without it a physical block and no UGAVALID. */
	fake_backend_opts_init(&o);
	o.supports = 1u << SCSITGT_IO_UNMAP;
	o.unmap_gran = 128;
	t = tctx_create(SCSITGT_LUN_THIN, &o);
	r = vpd(t, 0xb0, 255);
	assert_good(r);
	assert_int_equal(get_be32(&r->data[28]), 128);
	assert_int_equal(get_be32(&r->data[32]), 0x80000000u);
	tctx_destroy(t);
	o.unmap_gran = 0;
	o.phys_exp = 3;
	t = tctx_create(SCSITGT_LUN_THIN, &o);
	r = vpd(t, 0xb0, 255);
	assert_good(r);
	assert_int_equal(get_be32(&r->data[28]), 8);
	assert_int_equal(get_be32(&r->data[32]), 0);
	tctx_destroy(t);
}

static void test_block_dev_chars(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	t = tctx_create(0, NULL);
	r = vpd(t, 0xb1, 255);
	assert_good(r);
	assert_int_equal(r->data_len, 64);
	assert_int_equal(get_be16(&r->data[4]), 0); /* rotation rate not reported */
	assert_int_equal(r->data[7] & 0x0f, 0);
	tctx_destroy(t);

	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_NON_ROTATIONAL;
	t = tctx_create(0, &o);
	r = vpd(t, 0xb1, 255);
	assert_good(r);
	assert_int_equal(get_be16(&r->data[4]), 1);
	tctx_destroy(t);
}

static void test_lb_provisioning(void **state)
{
	struct tctx *t;
	struct lf_result *r;

	(void)state;
	/* Fully provisioned: no B2 page. */
	t = tctx_create(0, NULL);
	r = vpd(t, 0xb2, 255);
	assert_bad_cdb(r, 2, 7);
	tctx_destroy(t);

	t = thin_lun(SCSITGT_GEOMETRY_LBPRZ);
	r = vpd(t, 0xb2, 255);
	assert_good(r);
	assert_int_equal(r->data_len, 8);
	assert_int_equal(get_be16(&r->data[2]), 4);
	/* LBPRZ field 001b; LBPU/LBPWS/LBPWS10 only once those commands exist. */
	assert_int_equal((r->data[5] >> 2) & 0x07, 1);
	assert_int_equal(r->data[5] & 0x80, scsitgt__cdb_supported(SBC_UNMAP, 0) ? 0x80 : 0);
	assert_int_equal(r->data[6] & 0x07, 0x02); /* thin */
	tctx_destroy(t);

	t = thin_lun(0);
	r = vpd(t, 0xb2, 255);
	assert_good(r);
	assert_int_equal((r->data[5] >> 2) & 0x07, 0);
	tctx_destroy(t);
}

/* SPC-5 §7.7.7 extended INQUIRY data. */
static void test_extended_inquiry(void **state)
{
	struct fake_backend_opts o;
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = vpd(t, 0x86, 255);
	assert_good(r);
	assert_int_equal(r->data_len, 0x40);
	assert_int_equal(r->data[0], 0x00);
	assert_int_equal(r->data[1], 0x86);
	assert_int_equal(get_be16(&r->data[2]), 0x3c);
	/* No protection information, no microcode activation. */
	assert_int_equal(r->data[4], 0x00);
	/* HEADSUP, ORDSUP, SIMPSUP; no UASK_SUP, GROUP_SUP, PRIOR_SUP. */
	assert_int_equal(r->data[5], 0x07);
	/* No volatile cache on the plain fake backend: V_SUP 0, NV_SUP 0. */
	assert_int_equal(r->data[6], 0x00);
	/* LUICLR. */
	assert_int_equal(r->data[7], 0x01);
	assert_int_equal(r->data[13], SCSITGT_SENSE_BUF_SIZE);
	/* The allocation length truncates. */
	r = vpd(t, 0x86, 6);
	assert_good(r);
	assert_int_equal(r->data_len, 6);
	tctx_destroy(t);

	/* A write cache the core can flush: V_SUP. */
	fake_backend_opts_init(&o);
	o.geo_flags = SCSITGT_GEOMETRY_WRITE_CACHE;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	t = tctx_create(SCSITGT_LUN_WRITE_CACHE, &o);
	r = vpd(t, 0x86, 255);
	assert_good(r);
	assert_int_equal(r->data[6], 0x01);
	tctx_destroy(t);
}

static void test_unsupported_page(void **state)
{
	struct tctx *t = tctx_create(0, NULL);
	struct lf_result *r;

	(void)state;
	r = vpd(t, 0x81, 255);
	assert_bad_cdb(r, 2, 7);
	r = vpd(t, 0xff, 255);
	assert_bad_cdb(r, 2, 7);
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_supported_pages),
		cmocka_unit_test(test_supported_pages_thin),
		cmocka_unit_test(test_unit_serial),
		cmocka_unit_test(test_device_id),
		cmocka_unit_test(test_device_id_eui64),
		cmocka_unit_test(test_block_limits),
		cmocka_unit_test(test_block_dev_chars),
		cmocka_unit_test(test_lb_provisioning),
		cmocka_unit_test(test_extended_inquiry),
		cmocka_unit_test(test_unsupported_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
