/* SPDX-License-Identifier: MIT */
/*
 * Events a host gets from the iSCSI side (events.h): a refused login with its status, reason
 * and the names as sent, escaped; a task management function before it runs; a connection
 * closed on an error, with its kind, the peer and the nexus when there is one; and no
 * initiator address on events without a nexus.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

struct seen {
	int n;
	enum scsitgt_event_type type;
	uint16_t login_status;
	uint8_t tmf_function;
	uint8_t conn_error;
	uint64_t lun_id;
	bool has_target;
	bool addr_null;
	char reason[64];
	char iname[300];
	char tname[300];
};

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "(null)");
}

static void on_event(void *arg, const struct scsitgt_event *ev)
{
	struct seen *s = arg;

	if (ev->type == SCSITGT_EVENT_SESSION_LOGIN || ev->type == SCSITGT_EVENT_SESSION_LOGOUT)
		return;
	s->n++;
	s->type = ev->type;
	s->login_status = ev->login_status;
	s->tmf_function = ev->tmf_function;
	s->conn_error = ev->conn_error;
	s->lun_id = ev->lun_id;
	s->has_target = ev->target != NULL;
	s->addr_null = ev->initiator_addr == NULL;
	copy(s->reason, sizeof(s->reason), ev->reason);
	copy(s->iname, sizeof(s->iname), ev->initiator_name);
	copy(s->tname, sizeof(s->tname), ev->target_name);
}

static void login_with(struct harness *h, const char *keys)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[1024];
	uint32_t len = h_text(text, sizeof(text), keys);

	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(h, bhs, text, len);
	assert_non_null(h_take(h));
}

/* An unknown target: 0x0203 with the names as sent; a forged log line in the name arrives
 * escaped; an initiator the ACL refuses: 0x0202 with the target named. */
static void test_login_failed(void **state)
{
	struct harness h;
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	login_with(&h, "InitiatorName=" H_INITIATOR "|TargetName=iqn.2026-12.org.example:nope|"
		       "SessionType=Normal");
	assert_int_equal(s.n, 1);
	assert_int_equal(s.type, SCSITGT_EVENT_LOGIN_FAILED);
	assert_int_equal(s.login_status, 0x0203);
	assert_string_equal(s.reason, "target not found");
	assert_string_equal(s.iname, H_INITIATOR);
	assert_string_equal(s.tname, "iqn.2026-12.org.example:nope");
	assert_false(s.has_target);
	assert_false(s.addr_null);
	h_fini(&h);

	memset(&s, 0, sizeof(s));
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	login_with(&h, "InitiatorName=iqn.x\n2026-12-01 admin ok|TargetName=" H_TARGET);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.login_status, 0x0200);
	assert_string_equal(s.iname, "iqn.x\\x0a2026-12-01 admin ok");
	h_fini(&h);

	memset(&s, 0, sizeof(s));
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	assert_int_equal(scsitgt_target_add_initiator(h.tgt, "iqn.2026-12.org.example:only"), 0);
	login_with(&h, "InitiatorName=" H_INITIATOR "|TargetName=" H_TARGET "|SessionType=Normal");
	assert_int_equal(s.n, 1);
	assert_int_equal(s.login_status, 0x0202);
	assert_true(s.has_target);
	h_fini(&h);
}

/* LOGICAL UNIT RESET: the event comes with its function and LUN, before the response. */
static void test_tmf_event(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	struct seen s = { 0 };
	struct h_pdu *r;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	scsitgt__bhs_init(bhs, ISCSI_OP_TMF_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_FLAG_FINAL | ISCSI_TMF_LUN_RESET);
	scsitgt__lun_encode(0, &bhs[ISCSI_BHS_LUN]);
	put_be32(&bhs[ISCSI_BHS_ITT], 0x600);
	put_be32(&bhs[ISCSI_TMF_RTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h.cmd_sn);
	h_send(&h, bhs, NULL, 0);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_TMF_RSP);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.type, SCSITGT_EVENT_TMF);
	assert_int_equal(s.tmf_function, SCSITGT_TMF_LOGICAL_UNIT_RESET);
	assert_int_equal(s.lun_id, 0);
	assert_string_equal(s.iname, H_INITIATOR);
	assert_false(s.addr_null);

	/* A LUN going offline has no nexus: no initiator address at all (events.h). */
	memset(&s, 0, sizeof(s));
	assert_int_equal(scsitgt_lun_set_offline(scsitgt_target_get_lun(h.tgt, 0), true), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.type, SCSITGT_EVENT_LUN_OFFLINE);
	assert_true(s.addr_null);
	assert_string_equal(s.iname, "(null)");
	h_fini(&h);
}

/* A NOP-Out BHS (any valid PDU of full feature phase). */
static void nop_bhs(struct harness *h, uint8_t *bhs)
{
	scsitgt__bhs_init(bhs, ISCSI_OP_NOP_OUT | ISCSI_FLAG_IMMEDIATE, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], 0x700);
	put_be32(&bhs[ISCSI_BHS_TTT], ISCSI_RESERVED_TAG);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn);
}

/* A header digest error in a session: DIGEST, with the nexus and the peer. */
static void test_conn_error_digest(void **state)
{
	uint8_t pdu[ISCSI_BHS_LEN + 4] = { 0 };
	struct harness h;
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	/* As if HeaderDigest=CRC32C had been negotiated: a zero digest is wrong. */
	h.conn->rx.header_digest = true;
	nop_bhs(&h, pdu);
	h_feed(&h, pdu, sizeof(pdu));
	assert_true(h_conn_gone(&h));
	assert_int_equal(s.n, 1);
	assert_int_equal(s.type, SCSITGT_EVENT_CONNECTION_ERROR);
	assert_int_equal(s.conn_error, SCSITGT_CONN_ERROR_DIGEST);
	assert_string_equal(s.reason, "header digest error");
	assert_string_equal(s.iname, H_INITIATOR);
	assert_true(s.has_target);
	assert_false(s.addr_null);
	assert_string_equal(s.tname, "(null)");
	h_fini(&h);
}

/* A non-login PDU during login: PROTOCOL, no nexus yet (NULL names and target). */
static void test_conn_error_protocol(void **state)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	struct harness h;
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(h_init(&h, false), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	nop_bhs(&h, bhs);
	h_send(&h, bhs, NULL, 0);
	assert_true(h_conn_gone(&h));
	assert_int_equal(s.n, 1);
	assert_int_equal(s.type, SCSITGT_EVENT_CONNECTION_ERROR);
	assert_int_equal(s.conn_error, SCSITGT_CONN_ERROR_PROTOCOL);
	assert_string_equal(s.reason, "non-login PDU during login");
	assert_string_equal(s.iname, "(null)");
	assert_false(s.has_target);
	assert_false(s.addr_null);
	h_fini(&h);
}

/* A reset under a session is an error (RESET); an orderly close (EOF) is none. */
static void test_conn_error_reset(void **state)
{
	struct harness h;
	struct seen s = { 0 };

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	scsitgt__iscsi_conn_dm_error(h.conn, UV_ECONNRESET);
	h_pump(&h);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.type, SCSITGT_EVENT_CONNECTION_ERROR);
	assert_int_equal(s.conn_error, SCSITGT_CONN_ERROR_RESET);
	assert_string_equal(s.reason, "connection reset by the initiator");
	assert_string_equal(s.iname, H_INITIATOR);
	h_fini(&h);

	memset(&s, 0, sizeof(s));
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(scsitgt_engine_set_event_cb(h.engine, on_event, &s), 0);
	scsitgt__iscsi_conn_dm_error(h.conn, UV_EOF);
	h_pump(&h);
	assert_int_equal(s.n, 0);
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_login_failed),
		cmocka_unit_test(test_tmf_event),
		cmocka_unit_test(test_conn_error_digest),
		cmocka_unit_test(test_conn_error_protocol),
		cmocka_unit_test(test_conn_error_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
