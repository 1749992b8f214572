/* SPDX-License-Identifier: MIT */
/* Counters, latency histograms and events of LUNs and sessions (stats.h, events.h). */
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>

#include "test_util.h"

#include "core/scsi_spec.h"
#include "core/stats.h"

#define MAX_EVENTS 16

struct ev_log {
	unsigned int n;
	enum scsitgt_event_type type[MAX_EVENTS];
	uint8_t key[MAX_EVENTS], asc[MAX_EVENTS], opcode[MAX_EVENTS], sa[MAX_EVENTS];
	uint64_t lun_id[MAX_EVENTS];
	char initiator[MAX_EVENTS][64];
};

static void ev_cb(void *arg, const struct scsitgt_event *ev)
{
	struct ev_log *l = arg;

	assert_int_equal(ev->size, sizeof(*ev));
	/* Events of a nexus carry its address ("" when unknown); the others none (events.h). */
	if (ev->type == SCSITGT_EVENT_LUN_OFFLINE || ev->type == SCSITGT_EVENT_LUN_ONLINE ||
	    ev->type == SCSITGT_EVENT_ALUA_STATE_CHANGED)
		assert_null(ev->initiator_addr);
	else
		assert_non_null(ev->initiator_addr);
	if (l->n >= MAX_EVENTS)
		return;
	l->type[l->n] = ev->type;
	l->key[l->n] = ev->sense_key;
	l->asc[l->n] = ev->asc;
	l->opcode[l->n] = ev->opcode;
	l->sa[l->n] = ev->service_action;
	l->lun_id[l->n] = ev->lun_id;
	snprintf(l->initiator[l->n], sizeof(l->initiator[0]), "%s",
		 ev->initiator_name ? ev->initiator_name : "");
	l->n++;
}

static struct tctx *stats_ctx(void)
{
	struct fake_backend_opts o;

	fake_backend_opts_init(&o);
	o.block_size = 512;
	o.num_blocks = 1024;
	o.store = true;
	return tctx_create(0, &o);
}

static uint64_t hist_total(const struct scsitgt_lun_stats *s)
{
	uint64_t n = 0;

	for (int i = 0; i < SCSITGT_LATENCY_BUCKETS; i++)
		n += s->latency_us[i];
	return n;
}

static void test_bucket(void **state)
{
	(void)state;
	assert_int_equal(scsitgt__stats_bucket(0), 0);
	assert_int_equal(scsitgt__stats_bucket(1), 0);
	assert_int_equal(scsitgt__stats_bucket(2), 1);
	assert_int_equal(scsitgt__stats_bucket(3), 1);
	assert_int_equal(scsitgt__stats_bucket(4), 2);
	assert_int_equal(scsitgt__stats_bucket(1023), 9);
	assert_int_equal(scsitgt__stats_bucket(1024), 10);
	assert_int_equal(scsitgt__stats_bucket(UINT64_MAX), SCSITGT_LATENCY_BUCKETS - 1);
}

static void test_lun_counters(void **state)
{
	struct tctx *t = stats_ctx();
	struct scsitgt_lun_stats s;
	uint8_t wdata[4 * 512];

	(void)state;
	memset(wdata, 0xa5, sizeof(wdata));
	/* Two writes of 4 and 2 blocks, one read of 3, one INQUIRY, one read past the end. */
	lf_result_clear(&t->r);
	loop_fabric_run(t->lf, 0, t->cdb, cdb_rw(t->cdb, SBC_WRITE_10, 0, 4, 0), wdata,
			sizeof(wdata), &t->r);
	assert_good(&t->r);
	lf_result_clear(&t->r);
	loop_fabric_run(t->lf, 0, t->cdb, cdb_rw(t->cdb, SBC_WRITE_10, 8, 2, 0), wdata, 1024,
			&t->r);
	assert_good(&t->r);
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 3, 0)));
	assert_good(tctx_run(t, cdb_inquiry(t->cdb, false, 0, 96)));
	assert_sense(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 1023, 2, 0)), SENSE_ILLEGAL_REQUEST,
		     0x21, 0x00);

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	assert_int_equal(scsitgt_lun_get_stats(t->lun, &s), 0);
	assert_int_equal(s.size, sizeof(s));
	assert_int_equal(s.cmds.write_cmds, 2);
	assert_int_equal(s.cmds.read_cmds, 2);
	assert_int_equal(s.cmds.other_cmds, 1);
	assert_int_equal(s.cmds.bytes_written, 6 * 512);
	assert_int_equal(s.cmds.bytes_read, 3 * 512);
	assert_int_equal(s.cmds.check_conditions[SENSE_ILLEGAL_REQUEST], 1);
	assert_int_equal(s.cmds.check_conditions[SENSE_MEDIUM_ERROR], 0);
	assert_int_equal(s.inflight, 0);
	assert_false(s.offline);
	assert_int_equal(hist_total(&s), 5);

	/* A short struct (an older caller) gets only what it asked for. */
	{
		struct {
			size_t size;
			struct scsitgt_cmd_counters cmds;
		} small;

		memset(&small, 0, sizeof(small));
		small.size = sizeof(small);
		assert_int_equal(scsitgt_lun_get_stats(t->lun, (struct scsitgt_lun_stats *)&small),
				 0);
		assert_int_equal(small.size, sizeof(small));
		assert_int_equal(small.cmds.write_cmds, 2);
	}
	s.size = 1;
	assert_int_equal(scsitgt_lun_get_stats(t->lun, &s), -EINVAL);
	assert_int_equal(scsitgt_lun_get_stats(NULL, &s), -EINVAL);

	assert_int_equal(scsitgt_lun_reset_stats(t->lun), 0);
	memset(&s, 0xff, sizeof(s));
	s.size = sizeof(s);
	assert_int_equal(scsitgt_lun_get_stats(t->lun, &s), 0);
	assert_int_equal(s.cmds.write_cmds + s.cmds.read_cmds + s.cmds.other_cmds, 0);
	assert_int_equal(hist_total(&s), 0);
	tctx_destroy(t);
}

/* A LUN's counts since scsitgt_lun_reset_stats(), as a snapshot reports them. */
static struct scsitgt_lun_stats lun_stats(struct scsitgt_lun *lun)
{
	struct scsitgt_lun_stats s;

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	assert_int_equal(scsitgt_lun_get_stats(lun, &s), 0);
	return s;
}

/* LOG SENSE 19h's NUMBER OF READ COMMANDS (SPC-5 §7.3.9.2), as an initiator reads it. */
static uint64_t log_reads(struct tctx *t)
{
	struct lf_result *r = tctx_run(t, cdb_log_sense(t->cdb, 0, 1, 0x19, 0x00, 0, 255));

	assert_good(r);
	return get_be64(&r->data[8]);
}

static size_t cdb_log_reset(uint8_t *cdb)
{
	/* LOG SELECT, PCR 1, PC 01b (cumulative values), page 19h (SPC-5 §6.7). */
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_LOG_SELECT;
	cdb[1] = 0x02;
	cdb[2] = 1 << 6 | 0x19;
	return 10;
}

/*
 * The host's reset (scsitgt_lun_reset_stats()) and an initiator's (LOG SELECT PCR on the
 * General Statistics page) each restart their own view only: neither moves the other.
 */
static void test_resets_apart(void **state)
{
	struct tctx *t = stats_ctx();

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	assert_good(tctx_run(t, cdb_log_reset(t->cdb)));
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	assert_int_equal(log_reads(t), 1);
	assert_int_equal(lun_stats(t->lun).cmds.read_cmds, 4);

	assert_int_equal(scsitgt_lun_reset_stats(t->lun), 0);
	assert_int_equal(lun_stats(t->lun).cmds.read_cmds, 0);
	assert_int_equal(log_reads(t), 1);
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	assert_int_equal(log_reads(t), 2);
	assert_int_equal(lun_stats(t->lun).cmds.read_cmds, 1);

	assert_good(tctx_run(t, cdb_log_reset(t->cdb)));
	assert_int_equal(log_reads(t), 0);
	/* Since the host's reset: one read; three LOG SENSE and one LOG SELECT, "other"
	 * commands. */
	assert_int_equal(lun_stats(t->lun).cmds.read_cmds, 1);
	assert_int_equal(lun_stats(t->lun).cmds.other_cmds, 4);
	tctx_destroy(t);
}

/*
 * A shard that counts while home resets (with worker loops each shard counts its own commands
 * on its own thread): the thread here stands for one, counting aborted commands through the
 * core's own counting into the LUN's part as fast as it can, and says how many it began
 * before each. Every reset must leave the counts made from then on, never those of before:
 * right after a reset the counter may not show more than the commands begun during it (plus
 * the one that may have been under way). Zeroing counters a shard writes breaks that: a shard
 * that loaded a counter before the reset's zero stores its old value plus one after it.
 */
#define RACE_RESETS 1000u
/* Counts between two resets: what a count surviving a reset would show at least. */
#define RACE_COUNTS_BETWEEN 300u

struct race {
	struct scsitgt__cmd *cmd;
	atomic_uint_fast64_t begun;
	atomic_bool stop;
};

static void race_counter(void *arg)
{
	struct race *rc = arg;

	while (!atomic_load(&rc->stop)) {
		atomic_fetch_add(&rc->begun, 1);
		/* A command of the shard's that never completes: counted once per command. */
		rc->cmd->stats_done = false;
		scsitgt__stats_cmd_aborted(rc->cmd);
	}
}

static void test_reset_while_counting(void **state)
{
	struct tctx *t = stats_ctx();
	struct race rc;
	uv_thread_t tid;
	uint64_t last = 0;

	(void)state;
	memset(&rc, 0, sizeof(rc));
	rc.cmd = calloc(1, sizeof(*rc.cmd));
	assert_non_null(rc.cmd);
	rc.cmd->lun = t->lun;
	rc.cmd->shard = &t->lun->engine->shards[0];
	rc.cmd->state = SCSITGT__CMD_EXEC;
	atomic_init(&rc.begun, 0);
	atomic_init(&rc.stop, false);
	assert_int_equal(uv_thread_create(&tid, race_counter, &rc), 0);
	for (unsigned int i = 0; i < RACE_RESETS; i++) {
		uint64_t before, after, aborted;

		/* Let counts pile up since the last reset (the thread always makes progress). */
		while (atomic_load(&rc.begun) - last < RACE_COUNTS_BETWEEN)
			sched_yield();
		before = atomic_load(&rc.begun);
		assert_int_equal(scsitgt_lun_reset_stats(t->lun), 0);
		aborted = lun_stats(t->lun).cmds.aborted;
		after = atomic_load(&rc.begun);
		last = after;
		if (aborted > after - before + 1)
			fail_msg("reset %u: %" PRIu64 " aborted after it, at most %" PRIu64
				 " began since",
				 i, aborted, after - before + 1);
	}
	atomic_store(&rc.stop, true);
	assert_int_equal(uv_thread_join(&tid), 0);
	free(rc.cmd);
	tctx_destroy(t);
}

/* A fabric that read the request earlier gives that time; the histogram counts from it. */
static void test_latency_from_arrival(void **state)
{
	struct tctx *t = stats_ctx();
	struct scsitgt_lun_stats s;
	unsigned int b = scsitgt__stats_bucket(3000000); /* 3 s, in microseconds */

	(void)state;
	/* 2^21 us <= 3 s + the run < 2^22 us: one bucket, whatever the machine's load. */
	assert_int_equal(b, 21);
	t->lf->arrival_ns = uv_hrtime() - 3000000000ull;
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	t->lf->arrival_ns = 0;
	assert_good(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)));
	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	assert_int_equal(scsitgt_lun_get_stats(t->lun, &s), 0);
	assert_int_equal(hist_total(&s), 2);
	assert_int_equal(s.latency_us[b], 1);
	tctx_destroy(t);
}

struct sess_walk {
	unsigned int n;
	uint64_t cmds;
	uint64_t conflicts;
	char name[128];
};

static int walk_cb(void *arg, const struct scsitgt_session_stats *s)
{
	struct sess_walk *w = arg;

	assert_int_equal(s->size, sizeof(*s));
	assert_non_null(s->initiator_addr);
	w->n++;
	w->cmds += s->cmds.read_cmds + s->cmds.write_cmds + s->cmds.other_cmds;
	w->conflicts += s->cmds.reservation_conflicts;
	snprintf(w->name, sizeof(w->name), "%s", s->initiator_port);
	return 0;
}

static int stop_cb(void *arg, const struct scsitgt_session_stats *s)
{
	(void)s;
	(*(unsigned int *)arg)++;
	return 42;
}

static void test_sessions_and_events(void **state)
{
	struct tctx *t = stats_ctx();
	struct scsitgt__session *other;
	struct scsitgt_lun_stats s;
	struct sess_walk w;
	struct ev_log log;
	struct lf_result r;
	uint8_t cdb[16];
	unsigned int stops = 0;

	(void)state;
	memset(&log, 0, sizeof(log));
	memset(&r, 0, sizeof(r));
	assert_int_equal(scsitgt_engine_set_event_cb(NULL, ev_cb, &log), -EINVAL);
	assert_int_equal(scsitgt_engine_set_event_cb(t->lf->engine, ev_cb, &log), 0);
	assert_int_equal(
		loop_fabric_add_session(t->lf, "iqn.2024-01.org.example:other,i,0x1", 1, &other),
		0);
	/* The other nexus sees POWER ON first; clear it. */
	loop_fabric_run_on(t->lf, other, 0, cdb, cdb_tur(cdb), NULL, 0, &r);
	lf_result_clear(&r);

	/* RESERVE (6) by the first nexus: an event; the second nexus then conflicts. */
	memset(t->cdb, 0, 6);
	t->cdb[0] = SPC_RESERVE_6;
	assert_good(tctx_run(t, 6));
	assert_int_equal(log.n, 1);
	assert_int_equal(log.type[0], SCSITGT_EVENT_RESERVATION_CHANGED);
	assert_int_equal(log.opcode[0], SPC_RESERVE_6);
	loop_fabric_run_on(t->lf, other, 0, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, &r);
	assert_int_equal(r.status, SAM_STAT_RESERVATION_CONFLICT);
	lf_result_clear(&r);
	assert_int_equal(log.n, 1);
	t->cdb[0] = SPC_RELEASE_6;
	memset(&t->cdb[1], 0, 5);
	assert_good(tctx_run(t, 6));
	assert_int_equal(log.n, 2);
	assert_int_equal(log.opcode[1], SPC_RELEASE_6);

	/* A backend failure is a LUN error event with its sense. */
	fake_backend_fail_next(t->fb, -EIO, 1);
	assert_sense(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0)), SENSE_MEDIUM_ERROR, 0x11,
		     0x00);
	assert_int_equal(log.n, 3);
	assert_int_equal(log.type[2], SCSITGT_EVENT_LUN_ERROR);
	assert_int_equal(log.key[2], SENSE_MEDIUM_ERROR);
	assert_int_equal(log.asc[2], 0x11);
	assert_int_equal(log.opcode[2], SBC_READ_10);
	/* An initiator's mistake is not a LUN error. */
	assert_sense(tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 5000, 1, 0)), SENSE_ILLEGAL_REQUEST,
		     0x21, 0x00);
	assert_int_equal(log.n, 3);

	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	assert_int_equal(scsitgt_lun_get_stats(t->lun, &s), 0);
	assert_int_equal(s.cmds.reservation_conflicts, 1);
	assert_int_equal(s.cmds.check_conditions[SENSE_MEDIUM_ERROR], 1);
	/* TUR + POWER ON UA on the other nexus: that CHECK CONDITION is a UNIT ATTENTION. */
	assert_int_equal(s.cmds.check_conditions[SENSE_UNIT_ATTENTION], 1);

	/* Two sessions; counters per nexus add up to the LUN's. */
	memset(&w, 0, sizeof(w));
	assert_int_equal(scsitgt_target_foreach_session(t->lf->tgt, walk_cb, &w), 0);
	assert_int_equal(w.n, 2);
	assert_int_equal(w.cmds, s.cmds.read_cmds + s.cmds.write_cmds + s.cmds.other_cmds);
	assert_int_equal(w.conflicts, 1);
	assert_int_equal(scsitgt_target_foreach_session(t->lf->tgt, stop_cb, &stops), 42);
	assert_int_equal(stops, 1);
	assert_int_equal(scsitgt_target_foreach_session(NULL, walk_cb, &w), -EINVAL);
	assert_int_equal(scsitgt_target_foreach_session(t->lf->tgt, NULL, &w), -EINVAL);

	/* Session events carry the names; the address comes from the fabric. */
	scsitgt__event_session(other, SCSITGT_EVENT_SESSION_LOGIN, "192.0.2.1:3260");
	assert_int_equal(log.type[3], SCSITGT_EVENT_SESSION_LOGIN);
	assert_string_equal(log.initiator[3], other->initiator_name);
	assert_string_equal(other->initiator_addr, "192.0.2.1:3260");
	scsitgt__event_alua_changed(NULL, t->lun, 2, 0x0, 0x2);
	assert_int_equal(log.type[4], SCSITGT_EVENT_ALUA_STATE_CHANGED);
	assert_int_equal(log.lun_id[4], 0);

	/* Removing the callback stops events. */
	assert_int_equal(scsitgt_engine_set_event_cb(t->lf->engine, NULL, NULL), 0);
	fake_backend_fail_next(t->fb, -EIO, 1);
	tctx_run(t, cdb_rw(t->cdb, SBC_READ_10, 0, 1, 0));
	assert_int_equal(log.n, 5);

	assert_int_equal(scsitgt_target_get_lun(t->lf->tgt, 0), t->lun);
	assert_null(scsitgt_target_get_lun(t->lf->tgt, 7));
	assert_string_equal(scsitgt_event_type_name(SCSITGT_EVENT_LUN_ERROR), "lun-error");
	assert_string_equal(scsitgt_event_type_name((enum scsitgt_event_type)99), "unknown");
	tctx_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_lun_counters),
		cmocka_unit_test(test_latency_from_arrival),
		cmocka_unit_test(test_resets_apart),
		cmocka_unit_test(test_reset_while_counting),
		cmocka_unit_test(test_sessions_and_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
