/* SPDX-License-Identifier: MIT */
/*
 * iSER receive credits from what the login negotiated (reviewe D3; RFC 7145 §6.3, §8): with
 * InitialR2T=No the initiator may send the first burst unsolicited, in Data-Out PDUs of at most
 * the negotiated TargetRecvDataSegmentLength each, one SEND (one posted receive buffer) apiece.
 * The key is a Minimum one: an initiator offering 1024 gets 1024, and then a command of an
 * 8192-byte first burst may take 1 + 8 receive buffers, not the 1 + 1 our own 8192 would give.
 * The iSCSI harness logs in over a data mover marked rdma whose login_complete hook computes
 * the credit parameters as iser.c's does (scsitgt__iser_credit_params_of()) and cuts the
 * window to what 512 receive buffers cover; the Login Response's MaxCmdSN must show that cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iser_login.h"
#include "transport/iser/iser_flow.h"

#define POSTED 512u /* receive buffers the fake data mover has (iSER's ISER_NRECV_MAX) */
#define RESERVE 16u /* for immediate and unexpected PDUs (iSER's ISER_UNEXP_RESERVE) */

static struct {
	struct scsitgt__iser_credit_params cp;
	uint32_t window;
	unsigned int calls;
} seen;

static int rec_login_complete(struct scsitgt__iscsi_conn *conn,
			      const struct scsitgt__iscsi_dm_login *login, uint32_t *window)
{
	uint32_t w;

	(void)conn;
	seen.calls++;
	scsitgt__iser_credit_params_of(&seen.cp, login->params, login->queue_depth, RESERVE);
	w = scsitgt__iser_credit_window(&seen.cp, POSTED);
	if (w < *window)
		*window = w;
	seen.window = *window;
	return 0;
}

static const struct scsitgt__iscsi_dm_ops credit_dm_ops = {
	.name = "iser-credits",
	.xmit = h_xmit,
	.close = h_close,
	.rdma = true,
	.max_recv_dsl = 8192,
	.max_send_dsl = 8192,
	.login_complete = rec_login_complete,
};

/* A normal session logged in over the rdma data mover with the '|' separated @keys. */
static void login(struct harness *h, const char *keys)
{
	char all[1024];
	struct h_pdu *r;

	memset(&seen, 0, sizeof(seen));
	assert_int_equal(h_init_dm(h, true, &credit_dm_ops), 0);
	snprintf(all, sizeof(all), "TargetName=%s|SessionType=Normal|RDMAExtensions=Yes|%s",
		 H_TARGET, keys);
	r = iser_login(h, all);
	assert_int_equal(seen.calls, 1);
	/* The response grants the window the data mover cut (RFC 7143 §4.2.2.1). */
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_MAXCMDSN]) -
				 get_be32(&r->bhs[ISCSI_BHS_EXPCMDSN]) + 1,
			 seen.window);
}

/* TargetRecvDataSegmentLength=1024 offered: 1 + 8192 / 1024 receive buffers per command. */
static void test_smaller_target_recv_dsl(void **state)
{
	struct harness h;

	(void)state;
	login(&h, "TargetRecvDataSegmentLength=1024|InitialR2T=No|ImmediateData=No|"
		  "FirstBurstLength=8192|MaxBurstLength=262144");
	assert_int_equal(seen.cp.recv_dsl, 1024);
	assert_int_equal(seen.cp.first_burst, 8192);
	assert_false(seen.cp.initial_r2t);
	assert_int_equal(scsitgt__iser_credit_per_cmd(&seen.cp), 9);
	/* 512 buffers, 16 kept back: a full window of such writes never finds none posted. */
	assert_int_equal(seen.window, (POSTED - RESERVE) / 9);
	assert_true((uint64_t)seen.window * 9 + RESERVE <= POSTED);
	h_fini(&h);
}

/* Not offered: the RFC 7145 default 8192 (our offer): 1 + 1 per command. */
static void test_default_target_recv_dsl(void **state)
{
	struct harness h;

	(void)state;
	login(&h, "InitialR2T=No|ImmediateData=No|FirstBurstLength=8192|MaxBurstLength=262144");
	assert_int_equal(seen.cp.recv_dsl, 8192);
	assert_int_equal(scsitgt__iser_credit_per_cmd(&seen.cp), 2);
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_smaller_target_recv_dsl),
		cmocka_unit_test(test_default_target_recv_dsl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
