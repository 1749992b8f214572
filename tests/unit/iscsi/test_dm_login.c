/* SPDX-License-Identifier: MIT */
/*
 * The login_complete hook of the data-mover seam (transport/iscsi/datamover.h): login calls
 * it once per connection, with the negotiated session keys and the session's CmdSN window,
 * after the session exists and before the final Login Response (so before any full-feature
 * PDU); a window the data mover lowers is the one the response announces and the session
 * keeps; an error closes the connection without that response; a refused login never calls it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

/* What the hook saw, and what it answers. */
static struct {
	unsigned int calls;
	unsigned int pdus_before; /* PDUs the target had sent when it was called */
	enum scsitgt__iscsi_conn_state state;
	bool had_sess;
	bool discovery;
	uint32_t queue_depth;
	uint32_t window_in;
	struct scsitgt__iscsi_session_params params;
	/* Answer: lower the window to this when nonzero; fail with this when < 0. */
	uint32_t cut_to;
	int fail;
} hk;

static int hk_login_complete(struct scsitgt__iscsi_conn *conn,
			     const struct scsitgt__iscsi_dm_login *login, uint32_t *window)
{
	struct harness *h = h_of(conn);

	hk.calls++;
	hk.pdus_before = h->npdus;
	hk.state = conn->state;
	hk.had_sess = conn->sess != NULL;
	hk.discovery = login->discovery;
	hk.queue_depth = login->queue_depth;
	hk.window_in = *window;
	hk.params = *login->params;
	if (hk.fail < 0)
		return hk.fail;
	if (hk.cut_to)
		*window = hk.cut_to;
	return 0;
}

static const struct scsitgt__iscsi_dm_ops hk_dm_ops = {
	.name = "hook-test",
	.xmit = h_xmit,
	.close = h_close,
	.login_complete = hk_login_complete,
};

static int status_of(const struct h_pdu *r)
{
	return r->bhs[ISCSI_LOGIN_STATUS_CLASS] << 8 | r->bhs[ISCSI_LOGIN_STATUS_DETAIL];
}

/* Send one Login Request (T=1, CSG @csg, NSG @nsg) with the '|' separated @keys; the answer. */
static struct h_pdu *login_req(struct harness *h, uint8_t csg, uint8_t nsg, const char *keys)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[2048];
	uint32_t len = h_text(text, sizeof(text), keys);

	h_login_bhs(h, bhs,
		    (uint8_t)(ISCSI_LOGIN_FLAG_TRANSIT | csg << ISCSI_LOGIN_CSG_SHIFT | nsg), 0);
	h_send(h, bhs, text, len);
	return h_take(h);
}

static void hk_reset(void)
{
	memset(&hk, 0, sizeof(hk));
}

static void nop_out(struct harness *h, uint32_t itt)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_NOP_OUT | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn);
	h_send(h, bhs, NULL, 0);
}

/* One-step login: called once, in login, with the negotiated keys; the window stays. */
static void test_called_once_with_negotiated_values(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	hk_reset();
	assert_int_equal(h_init_dm(&h, true, &hk_dm_ops), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(hk.calls, 1);
	/* Before the final Login Response, the session already there. */
	assert_int_equal(hk.pdus_before, 0);
	assert_int_equal(hk.state, SCSITGT__CONN_LOGIN);
	assert_true(hk.had_sess);
	assert_false(hk.discovery);
	/* H_OP_KEYS against the defaults: what the session uses. */
	assert_int_equal(hk.queue_depth, 128);
	assert_int_equal(hk.window_in, 128);
	assert_int_equal(hk.params.first_burst, 65536);
	assert_int_equal(hk.params.max_burst, 131072);
	assert_false(hk.params.initial_r2t);
	assert_true(hk.params.immediate_data);
	assert_int_equal(hk.params.max_xmit_dsl, 8192);
	assert_int_equal(memcmp(&hk.params, &h.conn->sess->params, sizeof(hk.params)), 0);
	r = &h.pdus[0];
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_MAXCMDSN]), 128);
	assert_int_equal(h.conn->sess->queue_depth, 128);
	/* Full feature phase traffic does not call it again. */
	nop_out(&h, 7);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_NOP_IN);
	assert_int_equal(hk.calls, 1);
	h_fini(&h);
}

/* A lowered window is the one the final response announces and the session keeps. */
static void test_window_cut(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	hk_reset();
	hk.cut_to = 10;
	assert_int_equal(h_init_dm(&h, true, &hk_dm_ops), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(hk.calls, 1);
	r = &h.pdus[0];
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_EXPCMDSN]), 1);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_MAXCMDSN]), 1 + 10 - 1);
	assert_int_equal(h.conn->sess->queue_depth, 10);
	assert_int_equal(h.conn->sess->max_cmd_sn, 10);
	/* A raise is not taken: the window stays the session's. */
	h_fini(&h);
	hk_reset();
	hk.cut_to = 1000;
	assert_int_equal(h_init_dm(&h, true, &hk_dm_ops), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(get_be32(&h.pdus[0].bhs[ISCSI_BHS_MAXCMDSN]), 128);
	assert_int_equal(h.conn->sess->queue_depth, 128);
	h_fini(&h);
}

/* Security stage first: only the request that transits to full feature phase calls it. */
static void test_two_stage_login(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	hk_reset();
	assert_int_equal(h_init_dm(&h, true, &hk_dm_ops), 0);
	r = login_req(&h, ISCSI_STAGE_SECURITY, ISCSI_STAGE_OPERATIONAL,
		      "InitiatorName=" H_INITIATOR "|TargetName=" H_TARGET
		      "|SessionType=Normal|AuthMethod=None");
	assert_non_null(r);
	assert_int_equal(status_of(r), 0);
	assert_int_equal(hk.calls, 0);
	r = login_req(&h, ISCSI_STAGE_OPERATIONAL, ISCSI_STAGE_FFP, H_OP_KEYS);
	assert_non_null(r);
	assert_int_equal(status_of(r), 0);
	assert_int_equal(r->bhs[ISCSI_BHS_FLAGS] & ISCSI_LOGIN_STAGE_MASK, ISCSI_STAGE_FFP);
	assert_int_equal(hk.calls, 1);
	assert_int_equal(hk.pdus_before, 1);
	assert_int_equal(h.conn->state, SCSITGT__CONN_FFP);
	h_fini(&h);
}

/* Discovery sessions call it too, with their own window. */
static void test_discovery(void **state)
{
	struct harness h;

	(void)state;
	hk_reset();
	assert_int_equal(h_init_dm(&h, false, &hk_dm_ops), 0);
	assert_int_equal(h_login(&h, "Discovery"), 0);
	assert_int_equal(hk.calls, 1);
	assert_true(hk.discovery);
	assert_int_equal(hk.queue_depth, h.conn->sess->queue_depth);
	h_fini(&h);
}

/* An error closes the connection; no final Login Response goes out. */
static void test_error_closes(void **state)
{
	struct harness h;

	(void)state;
	hk_reset();
	hk.fail = -EIO;
	assert_int_equal(h_init_dm(&h, true, &hk_dm_ops), 0);
	assert_int_equal(h_login(&h, "Normal"), -1);
	assert_int_equal(hk.calls, 1);
	assert_int_equal(h.npdus, 0);
	assert_true(h.close_requested);
	h_fini(&h);
}

/* A refused login never reaches full feature phase: no call. */
static void test_refused_login(void **state)
{
	struct harness h;
	struct h_pdu *r;

	(void)state;
	hk_reset();
	assert_int_equal(h_init_dm(&h, true, &hk_dm_ops), 0);
	r = login_req(&h, ISCSI_STAGE_OPERATIONAL, ISCSI_STAGE_FFP,
		      "InitiatorName=" H_INITIATOR "|TargetName=iqn.2026-11.org.libscsitgt:nosuch"
		      "|SessionType=Normal|" H_OP_KEYS);
	assert_non_null(r);
	assert_int_equal(status_of(r), ISCSI_LOGIN_STATUS_TGT_NOT_FOUND);
	assert_int_equal(hk.calls, 0);
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_called_once_with_negotiated_values),
		cmocka_unit_test(test_window_cut),
		cmocka_unit_test(test_two_stage_login),
		cmocka_unit_test(test_discovery),
		cmocka_unit_test(test_error_closes),
		cmocka_unit_test(test_refused_login),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
