/* SPDX-License-Identifier: MIT */
/*
 * State home owns that commands of a worker shard read (issue 18, docs/threading.md "Per-LUN
 * state across shards"): the start of SANITIZE from two loops at once, and against a
 * foreground self-test another loop started; a LUN removed on home while a background walk
 * runs on the worker; EXTENDED COPY looking up its CSCD LUNs on the worker while home adds
 * LUNs; an event a worker posts naming a target home destroys before the event is delivered.
 * An engine with one worker loop, nexus A on home (shard 0) and nexus B on the worker's shard
 * (shard 1), whose commands run on the worker thread; the LUNs are null LUNs (their ios
 * complete on the loop of the command), so large that a walk over one never ends by itself.
 * Nothing waits on time: the test thread runs the home loop until a condition holds. Run under
 * the TSan build as well (scripts/test.sh --tsan).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/scsi_spec.h"
#include "core/shard.h"
#include "core/stats.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

/* 512 TiB of 512-byte blocks: no walk over it ends while a test runs. */
#define HUGE_BLOCKS (1ull << 40)

struct rd {
	struct xw_world *w;
	/* a command a test leaves to the teardown (dropped with its nexus, unanswered) */
	struct xw_cmd left;
};

/* On @x's loop: its Data-Out is in, execute it (it waits in NEED_DATA: x->wait_data). */
static void x_exec_here(struct xw_cmd *x)
{
	struct scsitgt__list *p;

	for (p = x->sess->cmds.next; p != &x->sess->cmds; p = p->next) {
		struct scsitgt__cmd *cmd = scsitgt__container_of(p, struct scsitgt__cmd, sess_node);

		if (*(struct xw_cmd **)scsitgt__cmd_fabric_priv(cmd) != x)
			continue;
		assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
		memcpy(cmd->buf, x->dout,
		       x->dout_len < cmd->xfer_len ? x->dout_len : cmd->xfer_len);
		scsitgt__cmd_execute(cmd);
		return;
	}
	fail_msg("no command of %p waits for its data", (void *)x);
}

static void x_exec_msg(struct scsitgt__msg *msg)
{
	x_exec_here((struct xw_cmd *)msg);
}

/* Execute @x, started with wait_data, on its nexus's loop (xw_wait() then waits for it). */
static void x_exec(struct xw_cmd *x)
{
	if (x->sess->shard->index == 0) {
		x_exec_here(x);
		return;
	}
	/* x->msg ran (xw_start() returned after it): free for this one */
	x->msg.fn = x_exec_msg;
	scsitgt__worker_post(x->sess->shard->worker, &x->msg);
}

static void assert_sense(const struct xw_cmd *x, uint8_t key, uint8_t asc, uint8_t ascq)
{
	assert_int_equal(x->status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(xw_sense_key(x), key);
	assert_int_equal(x->sense[12], asc);
	assert_int_equal(x->sense[13], ascq);
}

/* SANITIZE OVERWRITE (SBC-4 §5.28.2) with IMMED: one pass of a 4-byte pattern, its parameter
 * list held back (x_exec() delivers it). */
static void cdb_sanitize(struct xw_cmd *x, struct scsitgt__session *s)
{
	xw_cmd_init(x, s, SBC_SANITIZE, 10);
	x->cdb[1] = 0x80 | SBC_SANITIZE_OVERWRITE;
	put_be16(&x->cdb[7], 8);
	x->dout[0] = 1; /* OVERWRITE COUNT */
	put_be16(&x->dout[2], 4);
	memset(&x->dout[4], 0xa5, 4);
	x->dout_len = 8;
	x->wait_data = true;
}

static int setup(void **state)
{
	struct rd *r = calloc(1, sizeof(*r));
	struct scsitgt_lun_opts lo;
	void *bctx;

	assert_non_null(r);
	xw_world_create(&r->w, "iqn.2024-01.org.example:xread");
	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = HUGE_BLOCKS;
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = bctx;
	xw_world_start(r->w, &lo);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct rd *r = *state;

	/* a walk still running stops with its LUN's removal; a waiting command with its nexus */
	xw_world_destroy(r->w);
	free(r);
	return 0;
}

static void flag_done(void *arg, int status)
{
	assert_int_equal(status, 0);
	*(bool *)arg = true;
}

/*
 * SBC-4 §4.33: while a sanitize operation runs, a SANITIZE gets NOT READY, SANITIZE IN
 * PROGRESS. Two SANITIZE commands checked by the parse before either started (their
 * parameter lists arriving later) and then run on two loops at once: exactly one starts.
 */
static void test_sanitize_starts_once(void **state)
{
	struct xw_world *w = ((struct rd *)*state)->w;
	struct xw_cmd xa, xb;
	uint8_t sa, sb;

	cdb_sanitize(&xa, w->a);
	cdb_sanitize(&xb, w->b);
	xw_start(w, &xa);
	xw_start(w, &xb);
	x_exec(&xb);
	x_exec(&xa);
	sa = xw_wait(w, &xa);
	sb = xw_wait(w, &xb);
	assert_true((sa == SAM_STAT_GOOD) != (sb == SAM_STAT_GOOD));
	assert_sense(sa == SAM_STAT_GOOD ? &xb : &xa, 0x02, 0x04, 0x1b);
	assert_int_equal(w->lun->sanitize.state, 1 /* SCSITGT__SANITIZE_RUNNING */);
}

/*
 * SPC-5 §6.42: during a foreground self-test every command but INQUIRY, REPORT LUNS and
 * REQUEST SENSE gets NOT READY, SELF-TEST IN PROGRESS. A SANITIZE parsed before the worker's
 * SEND DIAGNOSTIC started a foreground test does not start a sanitize under it.
 */
static void test_sanitize_meets_foreground_selftest(void **state)
{
	struct rd *r = *state;
	struct xw_world *w = r->w;
	struct xw_cmd *st = &r->left;
	struct xw_cmd xa;

	cdb_sanitize(&xa, w->a);
	xw_start(w, &xa);
	/* an extended foreground self-test on the worker: it waits for the test, which reads
	 * the whole LUN (it ends with the nexus, at the teardown, unanswered) */
	xw_cmd_init(st, w->b, SPC_SEND_DIAGNOSTIC, 6);
	st->cdb[1] = 6 << 5;
	xw_start(w, st);
	while (!(scsitgt__lun_xflags(w->lun) & SCSITGT__LUN_XF_SELFTEST))
		uv_run(&w->loop, UV_RUN_NOWAIT);
	x_exec(&xa);
	xw_wait(w, &xa);
	assert_sense(&xa, 0x02, 0x04, 0x09);
	assert_int_equal(w->lun->sanitize.state, 0 /* SCSITGT__SANITIZE_IDLE */);
}

/*
 * LUN 0 removed on home while a SANITIZE of the worker's nexus runs over it: the walk, on the
 * worker, stops at its next piece (the removal does not wait for the sanitize), and the LUN
 * goes. Its removal flag is written on home and read by the walk there (TSan).
 */
static void test_lun_removed_under_worker_walk(void **state)
{
	struct xw_world *w = ((struct rd *)*state)->w;
	struct xw_cmd x;
	bool gone = false;

	cdb_sanitize(&x, w->b);
	x.wait_data = false;
	assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
	assert_int_equal(w->lun->sanitize.state, 1 /* SCSITGT__SANITIZE_RUNNING */);
	scsitgt_lun_destroy(w->lun, flag_done, &gone);
	while (!gone)
		uv_run(&w->loop, UV_RUN_ONCE);
	w->lun = NULL;
}

/* EXTENDED COPY (LID1, SPC-4 §6.4) of one block of @lun onto itself, the CSCD naming the LUN
 * by its NAA designator. */
static void cdb_xcopy(struct xw_cmd *x, struct scsitgt__session *s, const struct scsitgt_lun *lun)
{
	uint8_t *d;

	xw_cmd_init(x, s, SPC_EXTENDED_COPY, 16);
	put_be32(&x->cdb[10], 16 + 32 + 28);
	put_be16(&x->dout[2], 32); /* CSCD DESCRIPTOR LIST LENGTH */
	put_be32(&x->dout[8], 28); /* SEGMENT DESCRIPTOR LIST LENGTH */
	d = &x->dout[16];
	d[0] = 0xe4; /* identification descriptor */
	d[4] = 0x01; /* binary */
	d[5] = 0x03; /* logical unit, NAA */
	d[7] = 8;
	put_be64(&d[8], lun->ident.naa);
	put_be24(&d[29], 512);
	d = &x->dout[48];
	d[0] = 0x02; /* block to block */
	put_be16(&d[2], 0x18);
	put_be16(&d[10], 1);
	put_be64(&d[12], 0);
	put_be64(&d[20], 1);
	x->dout_len = 16 + 32 + 28;
}

enum {
	XC_GOOD,
	XC_CHANGED, /* REPORTED LUNS DATA HAS CHANGED (SPC-5 §5.14) as LUNs come */
	XC_OTHER
};

static void xcopy_fill(const struct xw_stream *s, struct xw_cmd *x, unsigned int i)
{
	(void)i;
	cdb_xcopy(x, s->w->b, s->w->lun);
}

static unsigned int xcopy_judge(const struct xw_stream *s, const struct xw_cmd *x)
{
	struct xw_answer a = xw_answer_of(x);

	(void)s;
	if (a.status == SAM_STAT_GOOD)
		return XC_GOOD;
	if (a.status == SAM_STAT_CHECK_CONDITION && a.key == 0x06 && a.asc == 0x3f &&
	    a.ascq == 0x0e)
		return XC_CHANGED;
	return XC_OTHER;
}

/*
 * EXTENDED COPY on the worker finds its CSCD LUN by designator among the target's LUNs while
 * home adds LUNs (the target's own array grows, reallocated): it looks in the table home
 * publishes, never in home's array (TSan, ASan).
 */
static void test_xcopy_while_luns_come(void **state)
{
	struct xw_world *w = ((struct rd *)*state)->w;
	struct xw_stream s = { .n = 200, .fill = xcopy_fill, .judge = xcopy_judge };

	xw_stream_start(w, &s);
	for (uint64_t id = 1; id <= 64; id++) {
		xw_null_lun(w, id);
		/* the replaced tables are freed once the worker has passed a message boundary */
		uv_run(&w->loop, UV_RUN_NOWAIT);
	}
	xw_stream_join(&s);
	xw_stream_assert_none(&s, XC_OTHER, "were neither GOOD nor REPORTED LUNS DATA HAS CHANGED");
	assert_true(s.count[XC_GOOD] > 0);
}

/* The event callback: what the last LOGIN FAILED event named, read while it is delivered. */
struct ev_seen {
	bool seen;
	bool target_gone_first;
	char target[64];
	bool *tgt_gone;
};

static void ev_cb(void *arg, const struct scsitgt_event *ev)
{
	struct ev_seen *e = arg;

	if (ev->type != SCSITGT_EVENT_LOGIN_FAILED)
		return;
	e->seen = true;
	e->target_gone_first = *e->tgt_gone;
	/* what a host does with it: a freed target is a use after free here (ASan) */
	snprintf(e->target, sizeof(e->target), "%s",
		 ev->target ? scsitgt_target_get_name(ev->target) : "(none)");
}

struct ev_post {
	struct scsitgt__msg msg;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	uv_sem_t posted;
};

/* On the worker: a login there failed for @tgt (found under the configuration lock). */
static void ev_raise(struct scsitgt__msg *msg)
{
	struct ev_post *p = (struct ev_post *)msg;
	bool locked = scsitgt__cfg_rdlock(p->engine);

	scsitgt__event_login_failed(p->engine, p->tgt, "iqn.2024-01.org.example:i", NULL,
				    "192.0.2.1:3260", 0x0201, "test");
	scsitgt__cfg_rdunlock(p->engine, locked);
	uv_sem_post(&p->posted);
}

/*
 * An event raised on a worker loop is delivered on home later (docs/threading.md): the target
 * it names stays valid until then, even when home destroys that target before it gets to the
 * event (the destruction waits; its callback comes after the event). The target's deferred
 * free is run at once here, as the loop may run it before it reads the event's message.
 */
static void test_event_target_outlives_delivery(void **state)
{
	struct xw_world *w = ((struct rd *)*state)->w;
	struct scsitgt_target_opts to;
	struct scsitgt_target *t2;
	struct ev_seen e;
	struct ev_post p;
	bool gone = false;

	memset(&e, 0, sizeof(e));
	e.tgt_gone = &gone;
	/* events of a worker go home by message in the mode with connections on workers */
	w->engine->conn_workers = true;
	assert_int_equal(scsitgt_engine_set_event_cb(w->engine, ev_cb, &e), 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:gone";
	assert_int_equal(scsitgt_target_create(&t2, w->engine, &to), 0);
	p.msg.fn = ev_raise;
	p.engine = w->engine;
	p.tgt = t2;
	assert_int_equal(uv_sem_init(&p.posted, 0), 0);
	scsitgt__worker_post(w->b->shard->worker, &p.msg);
	uv_sem_wait(&p.posted);
	uv_sem_destroy(&p.posted);
	/* the event waits in home's inbox; the target goes (no nexus, no LUN) */
	scsitgt_target_destroy(t2, flag_done, &gone);
	scsitgt__shard_run_deferred(scsitgt__shard_home(w->engine));
	while (!gone || !e.seen)
		uv_run(&w->loop, UV_RUN_ONCE);
	assert_false(e.target_gone_first);
	assert_string_equal(e.target, "iqn.2024-01.org.example:gone");
	assert_int_equal(scsitgt_engine_set_event_cb(w->engine, NULL, NULL), 0);
	w->engine->conn_workers = false;
}

/*
 * REPORT SUPPORTED OPERATION CODES (all commands) on the worker's nexus while home turns ALUA
 * on and off and installs and removes a cluster reservation store (SPC-5 §6.35.2): REPORT and
 * SET TARGET PORT GROUPS are listed only while the target has ALUA, RESERVE and RELEASE only
 * without a store (read under the LUN's lock: TSan), so the list changes under the command.
 * Every answer must be one whole list, in the table's order, each descriptor a command (a count
 * made before a change and a list made after it ran past the end of the table: a crash, or
 * zeroed descriptors at the end). Checked on home once the stream is over.
 */

/* Whether @x holds a well-formed list: descriptors (8 bytes, SPC-5 Table 258) in strictly
 * increasing opcode and service action order, each with its CDB length. */
static bool rsoc_list_ok(const struct xw_cmd *x)
{
	uint32_t len = get_be32(x->din);
	uint32_t prev = 0;

	if (len % 8 != 0 || x->din_len != 4 + len)
		return false;
	for (uint32_t off = 4; off < 4 + len; off += 8) {
		const uint8_t *d = &x->din[off];
		uint32_t key = (uint32_t)d[0] << 16 | get_be16(&d[2]);

		if ((off > 4 && key <= prev) || get_be16(&d[6]) == 0)
			return false;
		prev = key;
	}
	return true;
}

static void rsoc_fill(const struct xw_stream *s, struct xw_cmd *x, unsigned int i)
{
	(void)s;
	(void)i;
	x->cdb[0] = SPC_MAINTENANCE_IN;
	x->cdb[1] = SPC_MI_REPORT_SUPPORTED_OPCODES;
	put_be32(&x->cdb[6], XW_DATA_MAX);
	x->cdb_len = 12;
}

/* The kinds of answer of the worker's streams below. */
enum {
	B_GOOD,
	B_MALFORMED, /* GOOD, but not what it must be */
	B_OTHER	     /* not GOOD */
};

static unsigned int rsoc_judge(const struct xw_stream *s, const struct xw_cmd *x)
{
	(void)s;
	if (x->status != SAM_STAT_GOOD)
		return B_OTHER;
	return rsoc_list_ok(x) ? B_GOOD : B_MALFORMED;
}

static void rsoc_fetch(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req)
{
	(void)arg;
	(void)lun;
	scsitgt_pr_req_complete_fetch(req, -EIO, NULL, 0, 0);
}

static void rsoc_commit(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
			const void *data, size_t len, uint64_t version)
{
	(void)arg;
	(void)lun;
	(void)data;
	(void)len;
	(void)version;
	scsitgt_pr_req_complete_commit(req, -EIO);
}

static void test_rsoc_while_alua_changes(void **state)
{
	const struct scsitgt_pr_cluster_ops store = {
		.size = sizeof(store),
		.fetch = rsoc_fetch,
		.commit = rsoc_commit,
	};
	struct rd *r = *state;
	struct xw_world *w = r->w;
	struct xw_stream s = { .n = 2000, .fill = rsoc_fill, .judge = rsoc_judge };
	struct scsitgt_alua_opts on, off;
	unsigned int rounds = 0;

	scsitgt_alua_opts_init(&on, sizeof(on));
	on.modes = SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT;
	scsitgt_alua_opts_init(&off, sizeof(off));
	xw_stream_start(w, &s);
	while (!xw_stream_done(&s) || rounds < 10) {
		assert_int_equal(scsitgt_alua_configure(w->tgt, &on), 0);
		assert_int_equal(scsitgt_lun_set_pr_cluster(w->lun, &store, NULL), 0);
		uv_run(&w->loop, UV_RUN_NOWAIT);
		assert_int_equal(scsitgt_alua_configure(w->tgt, &off), 0);
		assert_int_equal(scsitgt_lun_set_pr_cluster(w->lun, NULL, NULL), 0);
		uv_run(&w->loop, UV_RUN_NOWAIT);
		rounds++;
	}
	xw_stream_join(&s);
	print_message("%u rounds; lists %u, malformed %u, not GOOD %u\n", rounds, s.count[B_GOOD],
		      s.count[B_MALFORMED], s.count[B_OTHER]);
	xw_stream_assert_none(&s, B_OTHER, "were not GOOD");
	xw_stream_assert_none(&s, B_MALFORMED, "were malformed lists");
	assert_int_equal(s.count[B_GOOD], s.n);
}

/*
 * LOG SELECT on home (an application client parameter, then a reset of the statistics) while
 * the worker's nexus reads those pages with LOG SENSE (SPC-5 §6.7, §6.8): the LUN's log state
 * is made, written and read by commands of both loops (TSan reports the races unless they
 * take the LUN's lock; two first LOG SELECTs of two loops each made a state, one leaked).
 */
static void log_fill(const struct xw_stream *s, struct xw_cmd *x, unsigned int i)
{
	(void)s;
	x->cdb[0] = SPC_LOG_SENSE;
	/* PC 01b (cumulative values) of the application client or statistics page */
	x->cdb[2] = (uint8_t)(0x40 | (i % 2 ? LOG_APP_CLIENT : LOG_GENERAL_STATS));
	put_be16(&x->cdb[7], XW_DATA_MAX);
	x->cdb_len = 10;
}

static unsigned int log_judge(const struct xw_stream *s, const struct xw_cmd *x)
{
	(void)s;
	return x->status == SAM_STAT_GOOD ? B_GOOD : B_OTHER;
}

static void test_log_select_while_worker_reads(void **state)
{
	struct rd *r = *state;
	struct xw_world *w = r->w;
	struct xw_stream s = { .n = 400, .fill = log_fill, .judge = log_judge };
	unsigned int rounds = 0;
	struct xw_cmd x;

	xw_stream_start(w, &s);
	while (!xw_stream_done(&s) || rounds < 10) {
		/* SPC-5 §7.3.7: one general usage parameter (0xfc bytes) of page 0Fh */
		xw_cmd_init(&x, w->a, SPC_LOG_SELECT, 10);
		x.cdb[2] = 0x40;
		put_be16(&x.cdb[7], 4 + 4 + 0xfc);
		x.dout[0] = LOG_APP_CLIENT;
		put_be16(&x.dout[2], 4 + 0xfc);
		put_be16(&x.dout[4], (uint16_t)(rounds % 64));
		x.dout[6] = LP_BINARY_LIST;
		x.dout[7] = 0xfc;
		memset(&x.dout[8], (int)(rounds & 0xff), 0xfc);
		x.dout_len = 4 + 4 + 0xfc;
		assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
		/* PCR: the statistics' cumulative values back to zero */
		xw_cmd_init(&x, w->a, SPC_LOG_SELECT, 10);
		x.cdb[1] = 0x02;
		x.cdb[2] = 0x40 | LOG_GENERAL_STATS;
		assert_int_equal(xw_run(w, &x), SAM_STAT_GOOD);
		rounds++;
	}
	xw_stream_join(&s);
	print_message("%u rounds, %u LOG SENSE GOOD\n", rounds, s.count[B_GOOD]);
	xw_stream_assert_none(&s, B_OTHER, "were not GOOD");
	assert_int_equal(s.count[B_GOOD], s.n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sanitize_starts_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sanitize_meets_foreground_selftest, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lun_removed_under_worker_walk, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_xcopy_while_luns_come, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_target_outlives_delivery, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rsoc_while_alua_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_select_while_worker_reads, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
