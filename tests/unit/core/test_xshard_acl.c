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

/* The kinds of answer the worker's nexus gets while home changes its mappings. */
enum {
	ACL_GOOD,
	ACL_MASKED,    /* LOGICAL UNIT NOT SUPPORTED */
	ACL_CHANGED,   /* REPORTED LUNS DATA HAS CHANGED (SPC-5 §5.14) */
	ACL_PROTECTED, /* WRITE PROTECTED: mapped read-only */
	ACL_OTHER
};

static unsigned int acl_judge(const struct xw_stream *s, const struct xw_cmd *x)
{
	struct xw_answer a = xw_answer_of(x);

	(void)s;
	if (a.status == SAM_STAT_GOOD)
		return ACL_GOOD;
	if (a.status != SAM_STAT_CHECK_CONDITION)
		return ACL_OTHER;
	if (a.key == 0x05 && a.asc == 0x25)
		return ACL_MASKED;
	if (a.key == 0x06 && a.asc == 0x3f && a.ascq == 0x0e)
		return ACL_CHANGED;
	if (a.key == 0x07 && a.asc == 0x27)
		return ACL_PROTECTED;
	return ACL_OTHER;
}

/* TEST UNIT READY and WRITE(10) of one block, in turn. */
static void acl_fill(const struct xw_stream *s, struct xw_cmd *x, unsigned int i)
{
	(void)s;
	x->cdb_len = 6;
	if (i % 2) {
		x->cdb[0] = SBC_WRITE_10;
		put_be16(&x->cdb[7], 1);
		x->cdb_len = 10;
		x->dout_len = 512;
	}
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
	struct xw_stream s = { .n = 3000, .fill = acl_fill, .judge = acl_judge };
	unsigned int rounds = 0;
	struct xw_cmd x;

	xw_stream_start(w, &s);
	while (!xw_stream_done(&s) || rounds < 10) {
		churn(w);
		rounds++;
	}
	xw_stream_join(&s);
	print_message("%u rounds; GOOD %u, masked %u, inventory changed %u, write protected %u\n",
		      rounds, s.count[ACL_GOOD], s.count[ACL_MASKED], s.count[ACL_CHANGED],
		      s.count[ACL_PROTECTED]);
	xw_stream_assert_none(&s, ACL_OTHER, "were none of GOOD, masked, changed, protected");
	assert_true(s.count[ACL_GOOD] > 0);
	/* the last round left LUN 0 unmasked and writable: what may still come is the change of
	 * the inventory, each once */
	xw_settle(w);
	while (xw_run_tur(w, w->b, &x) != SAM_STAT_GOOD)
		xw_assert_ua(&x, 0x3f, 0x0e);
}

/*
 * REPORT LUNS on the worker's nexus while home turns LUN masking on and off (SPC-5 §6.33):
 * every answer lists distinct LUNs of the target, as many as its LUN LIST LENGTH says (one
 * that counted the LUNs it sees before a change and listed them after it had zeroed entries
 * left over: LUN 0 several times). Checked on home once the stream is over.
 */
#define RL_LUNS 32

enum {
	RL_GOOD,       /* a well-formed list */
	RL_CHANGED,    /* REPORTED LUNS DATA HAS CHANGED */
	RL_BAD_LENGTH, /* LUN LIST LENGTH not 8 per LUN, or not what came */
	RL_DUPLICATE,  /* a LUN listed twice */
	RL_UNKNOWN,    /* a LUN the target has not */
	RL_OTHER
};

/* What is wrong with REPORT LUNS's GOOD answer @x, if anything. */
static unsigned int rl_check(const struct xw_cmd *x)
{
	uint32_t len = get_be32(x->din);
	bool seen[RL_LUNS] = { false };

	if (len % 8 != 0 || len > 8 * RL_LUNS || x->din_len != 8 + len)
		return RL_BAD_LENGTH;
	for (uint32_t i = 0; i < len / 8; i++) {
		const uint8_t *e = &x->din[8 + 8 * i];
		/* SAM-5 §4.7.7.2: peripheral device addressing of a LUN below 256 */
		uint64_t id = e[1];

		if (e[0] != 0 || get_be32(&e[2]) != 0 || get_be16(&e[6]) != 0 || id >= RL_LUNS)
			return RL_UNKNOWN;
		if (seen[id])
			return RL_DUPLICATE;
		seen[id] = true;
	}
	return RL_GOOD;
}

static void rl_fill(const struct xw_stream *s, struct xw_cmd *x, unsigned int i)
{
	(void)s;
	(void)i;
	x->cdb[0] = SPC_REPORT_LUNS;
	put_be32(&x->cdb[6], 8 + 8 * RL_LUNS);
	x->cdb_len = 12;
}

static unsigned int rl_judge(const struct xw_stream *s, const struct xw_cmd *x)
{
	struct xw_answer a = xw_answer_of(x);

	(void)s;
	if (a.status == SAM_STAT_GOOD)
		return rl_check(x);
	if (a.status == SAM_STAT_CHECK_CONDITION && a.key == 0x06 && a.asc == 0x3f &&
	    a.ascq == 0x0e)
		return RL_CHANGED;
	return RL_OTHER;
}

static void test_report_luns_while_masking_changes(void **state)
{
	struct xw_world *w = *state;
	struct xw_stream s = { .n = 3000, .fill = rl_fill, .judge = rl_judge };
	unsigned int rounds = 0;

	for (uint64_t id = 1; id < RL_LUNS; id++)
		xw_null_lun(w, id);
	xw_settle(w);
	xw_stream_start(w, &s);
	while (!xw_stream_done(&s) || rounds < 10) {
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
	xw_stream_join(&s);
	print_message("%u rounds; GOOD %u, inventory changed %u; bad length %u, duplicates %u, "
		      "unknown %u\n",
		      rounds, s.count[RL_GOOD], s.count[RL_CHANGED], s.count[RL_BAD_LENGTH],
		      s.count[RL_DUPLICATE], s.count[RL_UNKNOWN]);
	xw_stream_assert_none(&s, RL_OTHER, "were neither GOOD nor REPORTED LUNS DATA HAS CHANGED");
	xw_stream_assert_none(&s, RL_BAD_LENGTH, "had a wrong LUN LIST LENGTH");
	xw_stream_assert_none(&s, RL_DUPLICATE, "listed a LUN twice");
	xw_stream_assert_none(&s, RL_UNKNOWN, "listed a LUN the target has not");
	assert_int_equal(s.count[RL_GOOD] + s.count[RL_CHANGED], s.n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_masking_changes_under_worker_commands, setup,
						xw_teardown),
		cmocka_unit_test_setup_teardown(test_report_luns_while_masking_changes, setup,
						xw_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
