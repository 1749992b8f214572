/* SPDX-License-Identifier: MIT */
/*
 * Per-LUN state across two shards (issue 18, docs/threading.md "Per-LUN state across
 * shards"): the task set's ORDERED and HEAD OF QUEUE barriers, the range lock's exclusive
 * entries, the self-test state and the synchronous get_lba_status() of a backend without
 * SCSITGT_BACKEND_MULTI_LOOP, with nexus A on home (shard 0) and nexus B on the worker's shard
 * (shard 1), whose commands run on the worker thread. The fake backend has no MULTI_LOOP
 * flag: every io is submitted on home and held there until the test completes it, so a
 * command of either shard can be kept in flight. Nothing waits on time: a step that must not
 * happen yet is checked after the worker has run every message posted before (a round trip
 * through its inbox) and home's loop has run what was ready (the world is
 * tests/support/xshard_world.h). Run under the TSan build as well (scripts/test.sh --tsan).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "fake_backend.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"
#include "xshard_world.h"

/* The world's backend. */
static struct fake_backend *fb(const struct xw_world *t)
{
	return t->bctx;
}

/* Run home's loop until the backend holds @n ios (a worker's io is forwarded to home). */
static void wait_pending(struct xw_world *t, size_t n)
{
	while (fb(t)->npending < n)
		uv_run(&t->loop, UV_RUN_ONCE);
}

static void cdb_tur(struct xw_cmd *x, struct scsitgt__session *s, uint8_t attr)
{
	xw_cmd_init(x, s, SPC_TEST_UNIT_READY, 6);
	x->attr = attr;
}

/* WRITE (10) of one block of 0x5a at @lba. */
static void cdb_write(struct xw_cmd *x, struct scsitgt__session *s, uint32_t lba)
{
	xw_rw10(x, s, SBC_WRITE_10, lba, 1);
	memset(x->dout, 0x5a, 512);
}

static struct xw_world *lbas_owner;
static atomic_int lbas_calls, lbas_off_home;
static int (*lbas_real)(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out);

/* The backend's synchronous op, recording which thread called it (home is the only one
 * allowed: the backend has no MULTI_LOOP flag). */
static int lbas_check(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out)
{
	atomic_fetch_add(&lbas_calls, 1);
	if (!xw_on_home(lbas_owner))
		atomic_fetch_add(&lbas_off_home, 1);
	return lbas_real(bctx, lba, num_blocks_out, mapped_out);
}

/* fb's table with get_lba_status() wrapped */
static struct scsitgt_backend_ops lun_ops;

static int setup(void **state)
{
	struct xw_world *t;
	struct scsitgt_lun_opts lo;
	struct fake_backend_opts fo;
	struct fake_backend *b;

	xw_world_create(&t, "iqn.2024-01.org.example:xshard");
	fake_backend_opts_init(&fo);
	fo.block_size = 512;
	fo.num_blocks = 2048;
	fo.store = true;
	fo.lba_status = true;
	fo.supports = 1u << SCSITGT_IO_UNMAP;
	fo.mode = FAKE_MANUAL;
	assert_int_equal(fake_backend_create(&b, &fo), 0);
	/* no SCSITGT_BACKEND_MULTI_LOOP */
	lun_ops = b->ops;
	assert_false(lun_ops.flags & SCSITGT_BACKEND_MULTI_LOOP);
	lbas_owner = t;
	atomic_store(&lbas_calls, 0);
	atomic_store(&lbas_off_home, 0);
	lbas_real = lun_ops.get_lba_status;
	lun_ops.get_lba_status = lbas_check;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.flags = SCSITGT_LUN_THIN;
	lo.backend = &lun_ops;
	lo.backend_ctx = b;
	xw_world_start(t, &lo);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct xw_world *t = *state;

	fake_backend_complete_pending(fb(t));
	xw_world_destroy(t);
	return 0;
}

/*
 * SAM-5 §8.6.3: an ORDERED task starts once every older task completed, whichever I_T nexus
 * (and so whichever loop) sent it. A WRITE of shard 1 held in the backend holds back an
 * ORDERED command of shard 0, which starts once the WRITE completes.
 */
static void test_ordered_waits_for_other_shard(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd w, o;

	cdb_write(&w, t->b, 0);
	xw_start(t, &w);
	wait_pending(t, 1);
	cdb_tur(&o, t->a, 2 /* ORDERED */);
	xw_start(t, &o);
	xw_settle(t);
	assert_false(xw_finished(&o));
	assert_false(xw_finished(&w));
	fake_backend_complete_pending(fb(t));
	assert_int_equal(xw_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &o), SAM_STAT_GOOD);
	/* the barrier is gone: plain commands count themselves again */
	assert_false(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_BARRIER);
	cdb_tur(&o, t->b, 0);
	assert_int_equal(xw_run(t, &o), SAM_STAT_GOOD);
}

/*
 * The other way round: an ORDERED command of shard 1 waits for shard 0's WRITE, and holds back
 * a SIMPLE command sent after it from shard 0 (SAM-5 §8.6.2) until it completes.
 */
static void test_ordered_holds_back_newer(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd w, o, s;

	cdb_write(&w, t->a, 0);
	xw_start(t, &w);
	wait_pending(t, 1);
	cdb_tur(&o, t->b, 2 /* ORDERED */);
	xw_start(t, &o);
	xw_settle(t);
	cdb_tur(&s, t->a, 1 /* SIMPLE */);
	xw_start(t, &s);
	xw_settle(t);
	assert_false(xw_finished(&o));
	assert_false(xw_finished(&s));
	fake_backend_complete_pending(fb(t));
	assert_int_equal(xw_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &o), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &s), SAM_STAT_GOOD);
}

/*
 * SAM-5 §8.6.4: a HEAD OF QUEUE task starts at once, even with an older task of another loop
 * in flight, and holds back the newer SIMPLE ones of every loop until it completes. (Which
 * command's status comes first is not compared across threads: a task leaves the task set
 * just before its status goes out, so the next may overtake it on the other loop.)
 */
static void test_head_of_queue_across_shards(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd w, h, s;

	cdb_write(&w, t->b, 0);
	xw_start(t, &w);
	wait_pending(t, 1);
	/* a WRITE with HEAD OF QUEUE from home: it reaches the backend while shard 1's waits */
	cdb_write(&h, t->a, 8);
	h.attr = 3;
	xw_start(t, &h);
	wait_pending(t, 2);
	cdb_tur(&s, t->b, 1);
	xw_start(t, &s);
	xw_settle(t);
	assert_false(xw_finished(&s));
	fake_backend_complete_pending(fb(t));
	assert_int_equal(xw_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &h), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &s), SAM_STAT_GOOD);
}

/*
 * SBC-4 §5.3: COMPARE AND WRITE is atomic against every other command on its range. Its
 * exclusive range entry waits for the plain commands of every shard that took no entry: a
 * WRITE of the other shard held in the backend keeps it from reading until it completes.
 */
static void caw_waits_for(struct xw_world *t, struct scsitgt__session *writer,
			  struct scsitgt__session *caw_sess)
{
	struct xw_cmd w, c;

	cdb_write(&w, writer, 0);
	xw_start(t, &w);
	wait_pending(t, 1);
	/* compare with zeros, write 0xaa */
	xw_caw(&c, caw_sess, 100, 0xaa);
	xw_start(t, &c);
	xw_settle(t);
	/* the CAW has not read yet: the backend holds the WRITE alone */
	assert_int_equal(fb(t)->npending, 1);
	assert_false(xw_finished(&c));
	assert_true(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_EXCL);
	/* complete the WRITE, then the CAW's READ and WRITE as they come */
	while (!xw_finished(&c)) {
		fake_backend_complete_pending(fb(t));
		uv_run(&t->loop, UV_RUN_ONCE);
	}
	assert_int_equal(xw_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(xw_wait(t, &c), SAM_STAT_GOOD);
	assert_false(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_EXCL);
	assert_int_equal(t->lun->rlock.nexcl, 0);
	/* the block holds the CAW's data, and plain commands go untracked again */
	assert_int_equal(fb(t)->data[100 * 512], 0xaa);
	cdb_write(&w, caw_sess, 1);
	xw_start(t, &w);
	wait_pending(t, 1);
	fake_backend_complete_pending(fb(t));
	assert_int_equal(xw_wait(t, &w), SAM_STAT_GOOD);
}

static void test_caw_waits_for_worker_write(void **state)
{
	struct xw_world *t = *state;

	caw_waits_for(t, t->b, t->a);
}

static void test_caw_on_worker_waits_for_home_write(void **state)
{
	struct xw_world *t = *state;

	caw_waits_for(t, t->a, t->b);
}

static void test_lba_status_asked_on_home(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	xw_cmd_init(&x, t->b, SBC_SERVICE_ACTION_IN_16, 16);
	x.cdb[1] = SBC_SAI_GET_LBA_STATUS;
	put_be64(&x.cdb[2], 0);
	put_be32(&x.cdb[10], 64);
	assert_int_equal(xw_run(t, &x), SAM_STAT_GOOD);
	/* one descriptor: the whole LUN deallocated (nothing written yet) */
	assert_int_equal(get_be32(&x.din[0]), 4 + 16);
	assert_int_equal(get_be64(&x.din[8]), 0);
	assert_int_equal(get_be32(&x.din[16]), 2048);
	assert_int_equal(x.din[20] & 0x0f, 1);
	assert_true(atomic_load(&lbas_calls) > 0);
	assert_int_equal(atomic_load(&lbas_off_home), 0);
}

/* SEND DIAGNOSTIC with SELF-TEST CODE @code on @s. */
static void cdb_selftest(struct xw_cmd *x, struct scsitgt__session *s, uint8_t code)
{
	xw_cmd_init(x, s, SPC_SEND_DIAGNOSTIC, 6);
	x->cdb[1] = (uint8_t)(code << 5);
}

/*
 * SPC-5 §6.42: a background self-test started on shard 1 runs on its loop; shard 0's
 * commands meet it (another test is NOT READY, SELF-TEST IN PROGRESS; REQUEST SENSE reports
 * the progress), shard 0 aborts it (SELF-TEST CODE 100b) and reads the result in the
 * Self-Test Results log page.
 */
static void test_selftest_across_shards(void **state)
{
	struct xw_world *t = *state;
	struct xw_cmd x;

	cdb_selftest(&x, t->b, 1 /* background short */);
	assert_int_equal(xw_run(t, &x), SAM_STAT_GOOD);
	/* the walk's first read is held by the backend */
	wait_pending(t, 1);
	assert_true(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_SELFTEST);
	cdb_selftest(&x, t->a, 1);
	assert_int_equal(xw_run(t, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(x.sense[2] & 0x0f, 0x02);
	assert_int_equal(x.sense[12], 0x04);
	assert_int_equal(x.sense[13], 0x09);
	xw_cmd_init(&x, t->a, SPC_REQUEST_SENSE, 6);
	x.cdb[4] = 18;
	assert_int_equal(xw_run(t, &x), SAM_STAT_GOOD);
	assert_int_equal(x.din[2] & 0x0f, 0x02);
	assert_int_equal(x.din[12], 0x04);
	assert_int_equal(x.din[13], 0x09);
	/* plain commands go on meanwhile, from both loops */
	cdb_tur(&x, t->a, 0);
	assert_int_equal(xw_run(t, &x), SAM_STAT_GOOD);
	cdb_tur(&x, t->b, 0);
	assert_int_equal(xw_run(t, &x), SAM_STAT_GOOD);
	/* abort it from home; the walk on the worker stops at its next piece */
	cdb_selftest(&x, t->a, 4);
	assert_int_equal(xw_run(t, &x), SAM_STAT_GOOD);
	assert_false(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_SELFTEST);
	fake_backend_complete_pending(fb(t));
	xw_settle(t);
	/* LOG SENSE page 10h: the newest entry, SELF-TEST CODE 001b, RESULT 1h */
	xw_cmd_init(&x, t->b, SPC_LOG_SENSE, 10);
	x.cdb[2] = 0x40 | 0x10;
	put_be16(&x.cdb[7], 64);
	assert_int_equal(xw_run(t, &x), SAM_STAT_GOOD);
	assert_int_equal(x.din[0] & 0x3f, 0x10);
	assert_int_equal(get_be16(&x.din[4]), 1);
	assert_int_equal(x.din[8], (1 << 5) | 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ordered_waits_for_other_shard, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ordered_holds_back_newer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_head_of_queue_across_shards, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caw_waits_for_worker_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caw_on_worker_waits_for_home_write, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lba_status_asked_on_home, setup, teardown),
		cmocka_unit_test_setup_teardown(test_selftest_across_shards, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
