/* SPDX-License-Identifier: MIT */
/*
 * scsitgt_session_kick() on iSCSI: the session handle from the session visitor, the Async
 * Message asking for a logout (RFC 7143 §11.9.1, AsyncEvent 1, Parameter3 the seconds to do
 * it), the session gone after the initiator's Logout, the connection closed by the target when
 * the initiator ignores the request, and -EALREADY on a second kick.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

struct found {
	struct scsitgt_session *session;
	unsigned int n;
	bool kick_inside; /* kick from inside the visitor */
	int kick_rc;
};

static int find_session(void *arg, const struct scsitgt_session_stats *s)
{
	struct found *f = arg;

	f->n++;
	f->session = s->session;
	if (f->kick_inside)
		f->kick_rc = scsitgt_session_kick(s->session);
	return 0;
}

static unsigned int count_sessions(struct harness *h)
{
	struct found f = { 0 };

	assert_int_equal(scsitgt_target_foreach_session(h->tgt, find_session, &f), 0);
	return f.n;
}

/* The next PDU is the logout request; returns its Parameter3 (seconds). */
static uint16_t expect_logout_request(struct harness *h)
{
	struct h_pdu *r = h_take(h);

	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_ASYNC_MSG);
	assert_int_equal(r->bhs[ISCSI_ASYNC_EVENT], ISCSI_ASYNC_REQUEST_LOGOUT);
	assert_int_equal(get_be32(&r->bhs[ISCSI_BHS_ITT]), ISCSI_RESERVED_TAG);
	return get_be16(&r->bhs[ISCSI_ASYNC_PARAM3]);
}

/* The initiator complies: Logout, Logout Response, the session is gone. */
static void test_kick_then_logout(void **state)
{
	struct found f = { .kick_inside = true };
	struct harness h;
	struct h_pdu *r;
	uint16_t secs;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(scsitgt_target_foreach_session(h.tgt, find_session, &f), 0);
	assert_int_equal(f.n, 1);
	assert_non_null(f.session);
	assert_int_equal(f.kick_rc, 0);
	h_pump(&h);
	secs = expect_logout_request(&h);
	assert_true(secs >= 1 && secs <= 5);
	/* Already being ended. */
	assert_int_equal(scsitgt_session_kick(f.session), -EALREADY);
	assert_int_equal(scsitgt_session_kick(NULL), -EINVAL);

	h_logout(&h, 0x900);
	r = h_take(&h);
	assert_non_null(r);
	assert_int_equal(scsitgt__bhs_opcode(r->bhs), ISCSI_OP_LOGOUT_RSP);
	assert_int_equal(r->bhs[ISCSI_LOGOUT_RSP_RESPONSE], ISCSI_LOGOUT_RSP_SUCCESS);
	h_pump(&h);
	assert_true(h_conn_gone(&h));
	assert_int_equal(count_sessions(&h), 0);
	h_fini(&h);
}

/* The initiator ignores the request: the target closes the connection once the grace period
 * (Parameter3 seconds plus one) has passed. The loop runs until then: a wait on the
 * condition, bounded by the loop having nothing left to do. */
static void test_kick_ignored(void **state)
{
	struct found f = { 0 };
	struct harness h;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	assert_int_equal(scsitgt_target_foreach_session(h.tgt, find_session, &f), 0);
	assert_int_equal(scsitgt_session_kick(f.session), 0);
	h_pump(&h);
	expect_logout_request(&h);
	assert_false(h_conn_gone(&h));
	while (!h.close_requested)
		assert_int_not_equal(uv_run(&h.loop, UV_RUN_ONCE), 0);
	h_pump(&h);
	assert_true(h_conn_gone(&h));
	assert_int_equal(count_sessions(&h), 0);
	h_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kick_then_logout),
		cmocka_unit_test(test_kick_ignored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
