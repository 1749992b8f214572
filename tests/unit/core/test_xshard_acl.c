/* SPDX-License-Identifier: MIT */
/*
 * LUN masking and read-only mappings changed on home while commands of a worker shard check
 * them (issue 18): the bit tests of every command follow pointers home replaces and read words
 * home writes, and a map or an entry that goes must outlive the checks still running on the
 * worker (ThreadSanitizer reports the races, AddressSanitizer the use after free).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/scsi_spec.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

/* The initiator name of the world's worker nexus (xw_nexus() names it as its port). */
#define NAME_B XW_PORT_B

static int setup(void **state)
{
	struct xw_world *w;

	xw_world_create(&w, "iqn.2024-01.org.example:xacl");
	xw_world_start(w, NULL);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	xw_world_destroy(*state);
	return 0;
}

struct stream {
	struct xw_world *w;
	unsigned int n;
	unsigned int good, not_supported, changed, protected_;
	_Atomic int done;
};

static void count(struct stream *s, const struct xw_cmd *x)
{
	if (x->status == SAM_STAT_GOOD) {
		s->good++;
		return;
	}
	assert_int_equal(x->status, SAM_STAT_CHECK_CONDITION);
	if (xw_sense_key(x) == 0x05 && x->sense[12] == 0x25)
		s->not_supported++; /* LOGICAL UNIT NOT SUPPORTED: masked */
	else if (xw_sense_key(x) == 0x06 && x->sense[12] == 0x3f && x->sense[13] == 0x0e)
		s->changed++; /* REPORTED LUNS DATA HAS CHANGED (SPC-5 §5.14) */
	else if (xw_sense_key(x) == 0x07 && x->sense[12] == 0x27)
		s->protected_++; /* WRITE PROTECTED: mapped read-only */
	else
		fail_msg("unexpected sense %02x/%02x/%02x", xw_sense_key(x), x->sense[12],
			 x->sense[13]);
}

/* Off home: TEST UNIT READY and WRITE(10) of one block on the worker's nexus, in turn. */
static void stream_thread(void *arg)
{
	struct stream *s = arg;
	struct xw_cmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		if (i % 2) {
			memset(&x, 0, sizeof(x));
			x.sess = s->w->b;
			x.cdb[0] = SBC_WRITE_10;
			put_be16(&x.cdb[7], 1);
			x.cdb_len = 10;
			x.dout_len = 512;
			xw_run(s->w, &x);
		} else {
			xw_run_tur(s->w, s->w->b, &x);
		}
		count(s, &x);
	}
	atomic_store(&s->done, 1);
}

/* Home: one round of changes, each a map or an entry that comes and goes. */
static void churn(struct xw_world *w)
{
	struct scsitgt_target *t = w->tgt;

	assert_int_equal(scsitgt_target_map_lun(t, NAME_B, 0), 0); /* masking on, entry, map */
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_target_set_lun_read_only(t, NAME_B, 0, true), 0);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_target_set_lun_read_only(t, NAME_B, 0, false), 0);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_target_unmap_lun(t, NAME_B, 0), 0); /* map and entry go */
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_target_map_lun(t, NULL, 0), 0); /* every initiator's map */
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_target_set_lun_read_only(t, NULL, 0, true), 0);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_target_set_lun_read_only(t, NULL, 0, false), 0);
	assert_int_equal(scsitgt_target_unmap_lun(t, NULL, 0), 0);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(scsitgt_target_set_lun_masking(t, false), 0);
	uv_run(&w->loop, UV_RUN_NOWAIT);
}

static void test_masking_changes_under_worker_commands(void **state)
{
	struct xw_world *w = *state;
	struct stream s = { .w = w, .n = 3000 };
	unsigned int rounds = 0;
	uv_thread_t th;

	assert_int_equal(uv_thread_create(&th, stream_thread, &s), 0);
	while (!atomic_load(&s.done) || rounds < 10) {
		churn(w);
		rounds++;
	}
	assert_int_equal(uv_thread_join(&th), 0);
	print_message("%u rounds; GOOD %u, masked %u, inventory changed %u, write protected %u\n",
		      rounds, s.good, s.not_supported, s.changed, s.protected_);
	assert_int_equal(s.good + s.not_supported + s.changed + s.protected_, s.n);
	assert_true(s.good > 0);
	/* the last round left LUN 0 unmasked and writable */
	xw_settle(w);
	{
		struct xw_cmd x;

		while (xw_run_tur(w, w->b, &x) != SAM_STAT_GOOD)
			count(&s, &x);
	}
}

/*
 * REPORT LUNS on the worker's nexus while home turns LUN masking on and off (SPC-5 §6.33):
 * every answer lists distinct LUNs of the target, as many as its LUN LIST LENGTH says (one
 * that counted the LUNs it sees before a change and listed them after it had zeroed entries
 * left over: LUN 0 several times). Checked on home once the stream is over.
 */
#define RL_LUNS 32

struct rl_stream {
	struct xw_world *w;
	unsigned int n, good, changed, other;
	unsigned int bad_length, duplicates, unknown;
	_Atomic int done;
};

static void rl_check(struct rl_stream *s, const struct xw_cmd *x)
{
	uint32_t len = get_be32(x->din);
	bool seen[RL_LUNS] = { false };

	if (len % 8 != 0 || len > 8 * RL_LUNS || x->din_len != 8 + len) {
		s->bad_length++;
		return;
	}
	for (uint32_t i = 0; i < len / 8; i++) {
		const uint8_t *e = &x->din[8 + 8 * i];
		/* SAM-5 §4.7.7.2: peripheral device addressing of a LUN below 256 */
		uint64_t id = e[1];

		if (e[0] != 0 || get_be32(&e[2]) != 0 || get_be16(&e[6]) != 0 || id >= RL_LUNS)
			s->unknown++;
		else if (seen[id])
			s->duplicates++;
		else
			seen[id] = true;
	}
}

static void rl_thread(void *arg)
{
	struct rl_stream *s = arg;
	struct xw_cmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		xw_run_report_luns(s->w, s->w->b, 8 + 8 * RL_LUNS, &x);
		if (x.status == SAM_STAT_GOOD) {
			s->good++;
			rl_check(s, &x);
		} else if (x.status == SAM_STAT_CHECK_CONDITION && xw_sense_key(&x) == 0x06 &&
			   x.sense[12] == 0x3f && x.sense[13] == 0x0e) {
			s->changed++;
		} else {
			s->other++;
		}
	}
	atomic_store(&s->done, 1);
}

static void test_report_luns_while_masking_changes(void **state)
{
	struct xw_world *w = *state;
	struct rl_stream s = { .w = w, .n = 3000 };
	unsigned int rounds = 0;
	uv_thread_t th;

	for (uint64_t id = 1; id < RL_LUNS; id++)
		xw_null_lun(w, id);
	xw_settle(w);
	assert_int_equal(uv_thread_create(&th, rl_thread, &s), 0);
	while (!atomic_load(&s.done) || rounds < 10) {
		struct scsitgt_target *t = w->tgt;

		/* B sees LUN 0 alone, then none, then all of them again */
		assert_int_equal(scsitgt_target_map_lun(t, NAME_B, 0), 0);
		uv_run(&w->loop, UV_RUN_NOWAIT);
		assert_int_equal(scsitgt_target_unmap_lun(t, NAME_B, 0), 0);
		uv_run(&w->loop, UV_RUN_NOWAIT);
		assert_int_equal(scsitgt_target_set_lun_masking(t, false), 0);
		uv_run(&w->loop, UV_RUN_NOWAIT);
		rounds++;
	}
	assert_int_equal(uv_thread_join(&th), 0);
	print_message("%u rounds; GOOD %u, inventory changed %u; bad length %u, duplicates %u, "
		      "unknown %u\n",
		      rounds, s.good, s.changed, s.bad_length, s.duplicates, s.unknown);
	assert_int_equal(s.other, 0);
	assert_int_equal(s.good + s.changed, s.n);
	assert_int_equal(s.bad_length, 0);
	assert_int_equal(s.duplicates, 0);
	assert_int_equal(s.unknown, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_masking_changes_under_worker_commands, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_report_luns_while_masking_changes, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
