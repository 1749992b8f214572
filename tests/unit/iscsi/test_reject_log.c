/* SPDX-License-Identifier: MIT */
/*
 * Rejects are logged at a bounded rate per connection: an initiator that repeats a rejected
 * PDU (immediate TMFs or SCSI commands over the window, SNACKs at ERL 0) got one NOTICE line
 * each, 20,000 lines for 20,000 PDUs. Now at most SCSITGT__ISCSI_REJECT_LOG_BURST lines a
 * second, and the others are counted in one summary line (the next second's first Reject, or
 * the connection's end): every Reject is still accounted for in the log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "iscsi_harness.h"

#define N_REJECTS 2000

struct reject_lines {
	unsigned int logged;	     /* "reject ..." lines */
	unsigned int summaries;	     /* summary lines */
	unsigned long long unlogged; /* sum of the summaries' counts */
};

static void reject_log(void *arg, enum scsitgt_log_level level, const char *subsystem,
		       const char *fmt, va_list ap)
{
	struct reject_lines *r = arg;
	unsigned long long n;
	char line[512];
	const char *p;

	(void)subsystem;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (strstr(line, "reject SNACK") != NULL) {
		assert_int_equal(level, SCSITGT_LOG_NOTICE);
		r->logged++;
		return;
	}
	p = strstr(line, " more rejects not logged");
	if (p == NULL)
		return;
	while (p > line && p[-1] >= '0' && p[-1] <= '9')
		p--;
	assert_int_equal(sscanf(p, "%llu more rejects not logged", &n), 1);
	r->summaries++;
	r->unlogged += n;
}

/* A SNACK in full feature phase at ERL 0: rejected (Command not supported), nothing else. */
static void send_snack(struct harness *h)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_SNACK_REQ, ISCSI_FLAG_FINAL);
	put_be32(&bhs[ISCSI_BHS_ITT], ISCSI_RESERVED_TAG);
	h_send(h, bhs, NULL, 0);
}

static unsigned int count_rejects(struct harness *h)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < h->npdus; i++)
		n += scsitgt__bhs_opcode(h->pdus[i].bhs) == ISCSI_OP_REJECT;
	return n;
}

static void test_reject_log_bounded(void **state)
{
	struct reject_lines r = { 0 };
	struct harness h;
	uint64_t start;
	unsigned int sent = 0, burst;

	(void)state;
	assert_int_equal(h_init(&h, true), 0);
	assert_int_equal(h_login(&h, "Normal"), 0);
	h.engine->log.cb = reject_log;
	h.engine->log.arg = &r;
	h.engine->log.level = SCSITGT_LOG_DEBUG;
	start = uv_now(&h.loop);
	/* Sent within one second of loop time (the loop's clock moves only in uv_run). */
	while (sent < N_REJECTS && uv_now(&h.loop) - start < SCSITGT__ISCSI_REJECT_LOG_MS / 2) {
		send_snack(&h);
		sent++;
	}
	assert_true(sent > SCSITGT__ISCSI_REJECT_LOG_BURST * 4);
	/* Every one was answered with a Reject; only a burst of them logged. */
	assert_int_equal(count_rejects(&h), sent);
	burst = r.logged;
	assert_true(burst >= 1);
	assert_true(burst <= SCSITGT__ISCSI_REJECT_LOG_BURST);
	assert_int_equal(r.summaries, 0);

	/* Once the window has passed (waited for on the loop's clock), the next Reject logs
	 * the count of those left out, then itself. */
	while (uv_now(&h.loop) - start < SCSITGT__ISCSI_REJECT_LOG_MS * 2) {
		uv_sleep(10);
		uv_update_time(&h.loop);
	}
	send_snack(&h);
	sent++;
	assert_int_equal(r.summaries, 1);
	assert_int_equal(r.logged, burst + 1);
	assert_int_equal(r.logged + r.unlogged, sent);

	/* A new burst past the limit; the connection's end logs what it left out. */
	for (int i = 0; i < SCSITGT__ISCSI_REJECT_LOG_BURST * 3; i++) {
		send_snack(&h);
		sent++;
	}
	assert_true(r.logged <= burst + SCSITGT__ISCSI_REJECT_LOG_BURST);
	h_fini(&h);
	assert_int_equal(r.summaries, 2);
	assert_int_equal(r.logged + r.unlogged, sent);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reject_log_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
