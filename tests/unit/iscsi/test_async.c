/* SPDX-License-Identifier: MIT */
/*
 * iSCSI Async Messages for unit attentions (RFC 7143 §11.9, AsyncEvent 0): the PDU byte for
 * byte, one message per change when a LUN is added (however many LUNs the nexus sees) and on
 * a resize, the unit attention still reported on the next command, the per-target switch;
 * and a Logout that waits for a hung write no longer than logout_timeout_ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"
#include "libscsitgt/backend_fault.h"
#include "sn_harness.h"

/* AsyncEvent 0 on LUN 5 with REPORTED LUNS DATA HAS CHANGED, before the sequence numbers. */
static void test_pdu_bytes(void **state)
{
	static const uint8_t want_bhs[ISCSI_BHS_LEN] = {
		0x32, 0x80, 0,	  0,	0, 0, 0, 0, /* opcode, F, reserved, AHS, DSL (sender) */
		0x00, 0x05, 0,	  0,	0, 0, 0, 0, /* LUN 5, peripheral addressing */
		0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, /* ITT reserved, reserved */
		0,    0,    0,	  0,	0, 0, 0, 0,
		0,    0,    0,	  0,		    /* StatSN, ExpCmdSN, MaxCmdSN (sender) */
		0x00, 0x00, 0,	  0,	0, 0, 0, 0, /* AsyncEvent 0, AsyncVCode, Parameter1-3 */
		0,    0,    0,	  0,		    /* reserved */
	};
	static const uint8_t want_data[20] = {
		0x00, 0x12,				  /* SenseLength 18 */
		0x70, 0x00, 0x06, 0, 0,	   0,	 0, 0x0a, /* fixed, current; UNIT ATTENTION; ADD. LEN */
		0,    0,    0,	  0, 0x3f, 0x0e, 0, 0,	  0, 0, /* ASC/ASCQ 3Fh/0Eh */
	};
	uint8_t bhs[ISCSI_BHS_LEN], data[64];

	(void)state;
	memset(bhs, 0xee, sizeof(bhs));
	assert_int_equal(
		scsitgt__iscsi_async_scsi_event(bhs, data, sizeof(data), 5, 0x6, 0x3f, 0x0e),
		sizeof(want_data));
	assert_memory_equal(bhs, want_bhs, sizeof(want_bhs));
	assert_memory_equal(data, want_data, sizeof(want_data));
	/* Flat addressing above 255; too small a buffer builds nothing. */
	assert_int_equal(
		scsitgt__iscsi_async_scsi_event(bhs, data, sizeof(data), 300, 0x6, 0x2a, 0x09), 20);
	assert_int_equal(get_be16(&bhs[ISCSI_BHS_LUN]), 0x4000 | 300);
	assert_int_equal(data[14], 0x2a);
	assert_int_equal(scsitgt__iscsi_async_scsi_event(bhs, data, 19, 0, 0x6, 0x3f, 0x0e), 0);
}

static void add_ram_lun(struct harness *h, uint64_t id, uint64_t blocks)
{
	assert_int_equal(h_ram_lun(h->tgt, id, blocks), 0);
}

static void tur(struct harness *h, uint64_t lun)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | 1);
	scsitgt__lun_encode(lun, &bhs[ISCSI_BHS_LUN]);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn++);
	h_send(h, bhs, NULL, 0);
}

/* The next PDU must be a SCSI Response; returns its status. */
static uint8_t take_status(struct harness *h, uint8_t *asc)
{
	struct h_pdu *r = h_take(h);

	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_SCSI_RSP);
	if (asc)
		*asc = r->len >= 2 + 13 ? r->data[2 + 12] : 0;
	return r->bhs[ISCSI_RSP_STATUS];
}

static void expect_async(struct harness *h, uint64_t lun, uint8_t asc, uint8_t ascq)
{
	struct h_pdu *r = h_take(h);

	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_ASYNC_MSG);
	assert_int_equal(r->bhs[ISCSI_ASYNC_EVENT], ISCSI_ASYNC_SCSI_EVENT);
	assert_int_equal(scsitgt__lun_decode(&r->bhs[ISCSI_BHS_LUN]), lun);
	assert_int_equal(r->len, 20);
	assert_int_equal(get_be16(r->data), 18);
	assert_int_equal(r->data[2 + 2] & 0x0f, 0x6);
	assert_int_equal(r->data[2 + 12], asc);
	assert_int_equal(r->data[2 + 13], ascq);
}

static void test_async_ua(void **state)
{
	struct scsitgt_iscsi_params p;
	struct scsitgt_lun *lun0;
	struct harness h;
	uint32_t statsn;
	uint8_t asc;

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	add_ram_lun(&h, 0, 1024);
	add_ram_lun(&h, 1, 1024);
	assert_int_equal(h_login(&h, "Normal"), 0);
	/* This nexus reports unit attentions: it sees both LUNs (POWER ON consumed). */
	h.conn->sess->core->ua_no_power_on = false;
	tur(&h, 0);
	take_status(&h, NULL);
	tur(&h, 1);
	take_status(&h, NULL);
	tur(&h, 0);
	assert_int_equal(take_status(&h, NULL), 0);
	/* A LUN appears: the UA is queued on LUN 0 and LUN 1, one message goes out. */
	add_ram_lun(&h, 2, 1024);
	h_pump(&h);
	expect_async(&h, 0, 0x3f, 0x0e);
	assert_null(h_take(&h));
	/* It took a StatSN like a status: the next response carries the one after. */
	statsn = get_be32(&h.pdus[h.next - 1].bhs[ISCSI_BHS_STATSN]);
	/* The unit attention itself stays pending (docs/iscsi.md). */
	tur(&h, 1);
	assert_int_equal(get_be32(&h.pdus[h.next].bhs[ISCSI_BHS_STATSN]), statsn + 1);
	assert_int_equal(take_status(&h, &asc), 0x02);
	assert_int_equal(asc, 0x3f);
	/* A resize: CAPACITY DATA HAS CHANGED on that LUN. */
	lun0 = scsitgt_target_get_lun(h.tgt, 0);
	assert_non_null(lun0);
	assert_int_equal(scsitgt_lun_resize(lun0, 2048), 0);
	h_pump(&h);
	expect_async(&h, 0, 0x2a, 0x09);
	assert_null(h_take(&h));
	/* Switched off for the target: the condition alone. */
	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.async_events = 0;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
	assert_int_equal(scsitgt_lun_resize(lun0, 4096), 0);
	h_pump(&h);
	assert_null(h_take(&h));
	p.async_events = 0x80;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), -EINVAL);
	p.async_events = 0;
	p.logout_timeout_ms = 0;
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), -EINVAL);
	h_fini(&h);
}

/* A Logout waits for the session's write that a backend holds, but only logout_timeout_ms,
 * and then says that the cleanup failed (RFC 7143 §11.15.1 Response 3); the write's late
 * return afterwards frees it. */
static void test_logout_bounded(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN], data[512];
	struct scsitgt_iscsi_params p;
	struct scsitgt_fault_stats st;
	struct harness h;
	struct h_pdu *r;
	void *fault;

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	sn_fault_lun(&h, "hang@write", &fault);
	scsitgt_iscsi_params_init(&p, sizeof(p));
	p.logout_timeout_ms = 2000; /* long: the "not yet" checks below must not race it */
	assert_int_equal(scsitgt_iscsi_target_set_params(h.tgt, &p), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	/* A one-block WRITE (10) with its data immediate: straight into the backend. */
	memset(data, 0x11, sizeof(data));
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, ISCSI_FLAG_FINAL | ISCSI_CMD_FLAG_WRITE | 1);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h.itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], 512);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn++);
	bhs[ISCSI_CMD_CDB] = 0x2a;
	put_be16(&bhs[ISCSI_CMD_CDB + 7], 1);
	h_send(&h, bhs, data, sizeof(data));
	assert_null(h_take(&h));
	st.size = sizeof(st);
	assert_int_equal(scsitgt_backend_fault_get_stats(fault, &st), 0);
	assert_int_equal(st.held, 1);
	h_logout(&h, 0x700);
	/* No response while the write is in the backend... */
	assert_null(h_take(&h));
	assert_false(h_conn_gone(&h));
	/* ...until the logout timeout. */
	while (h.npdus == h.next)
		uv_run(&h.loop, UV_RUN_ONCE);
	r = h_take(&h);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_LOGOUT_RSP);
	assert_int_equal(r->bhs[ISCSI_LOGOUT_RSP_RESPONSE], ISCSI_LOGOUT_RSP_CLEANUP_FAILED);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_ITT]), 0x700);
	/* No SCSI Response for the aborted write, ever. */
	assert_null(h_take(&h));
	h_pump(&h);
	assert_true(h_conn_gone(&h));
	/* The late return frees the write; then the LUN and engine go as usual. */
	assert_int_equal(scsitgt_backend_fault_release(fault, 0, 0), 1);
	h_fini(&h);
}

/* Without anything in a backend, the Logout Response goes out at once. */
static void test_logout_immediate(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	h_logout(&h, 0x701);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_LOGOUT_RSP);
	assert_true(h_conn_gone(&h));
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pdu_bytes),
		cmocka_unit_test(test_async_ua),
		cmocka_unit_test(test_logout_bounded),
		cmocka_unit_test(test_logout_immediate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
