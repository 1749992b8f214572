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
 * through its inbox) and home's loop has run what was ready. Run under the TSan build as well
 * (scripts/test.sh --tsan).
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

#define PORT_A "iqn.2024-01.org.example:a,i,0x23d000000001"
#define PORT_B "iqn.2024-01.org.example:b,i,0x23d000000002"

struct two;

/* One command and what came back. */
struct xcmd {
	struct scsitgt__msg msg; /* first: posted to the worker */
	struct two *t;
	struct scsitgt__session *sess;
	uint8_t attr;
	uint8_t cdb[16];
	size_t cdb_len;
	uint8_t dout[1024];
	size_t dout_len;
	uint8_t din[512];
	uint8_t status;
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	uv_sem_t done;
};

struct two {
	uv_loop_t loop;
	uv_async_t wake; /* a worker's command completed: home's loop looks again */
	uv_thread_t home;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct fake_backend *fb;
	struct scsitgt_backend_ops ops; /* fb's, get_lba_status() wrapped */
	struct scsitgt__session *a, *b;
	atomic_int lbas_calls, lbas_off_home;
};

static void x_done(struct scsitgt__cmd *cmd)
{
	struct xcmd *x = *(struct xcmd **)scsitgt__cmd_fabric_priv(cmd);
	size_t n = cmd->data_len < sizeof(x->din) ? cmd->data_len : sizeof(x->din);
	/* @x is the waiting thread's again once posted: nothing of it is read after. */
	struct two *t = x->t;

	x->status = cmd->status;
	memcpy(x->sense, cmd->sense, cmd->sense_len);
	if (cmd->buf && n)
		memcpy(x->din, cmd->buf, n);
	scsitgt__cmd_destroy(cmd);
	uv_sem_post(&x->done);
	uv_async_send(&t->wake);
}

static void x_session_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops x_ops = {
	.name = "xshard",
	.cmd_done = x_done,
	.cmd_aborted = x_done,
	.session_shutdown = x_session_shutdown,
};

/* Create, set up and execute @x on its nexus, on the calling thread (the nexus's shard). */
static void x_start(struct xcmd *x)
{
	struct scsitgt__cmd *cmd;
	uint8_t lun[8] = { 0 };

	assert_int_equal(scsitgt__cmd_create(&cmd, x->sess, sizeof(x)), 0);
	*(struct xcmd **)scsitgt__cmd_fabric_priv(cmd) = x;
	scsitgt__cmd_setup(cmd, lun, x->cdb, x->cdb_len, x->attr ? x->attr : 1, 1);
	if (cmd->state == SCSITGT__CMD_NEED_DATA)
		memcpy(cmd->buf, x->dout,
		       x->dout_len < cmd->xfer_len ? x->dout_len : cmd->xfer_len);
	scsitgt__cmd_execute(cmd);
}

static void x_on_worker(struct scsitgt__msg *msg)
{
	x_start((struct xcmd *)msg);
}

/* Start @x on its nexus's loop without waiting for it. */
static void x_begin(struct two *t, struct xcmd *x)
{
	x->t = t;
	assert_int_equal(uv_sem_init(&x->done, 0), 0);
	if (x->sess->shard->index != 0) {
		x->msg.fn = x_on_worker;
		scsitgt__worker_post(x->sess->shard->worker, &x->msg);
	} else {
		x_start(x);
	}
}

static bool x_finished(struct xcmd *x)
{
	if (uv_sem_trywait(&x->done) != 0)
		return false;
	uv_sem_post(&x->done);
	return true;
}

/* Run home's loop until @x completed (a worker's completion wakes it through t->wake). */
static uint8_t x_wait(struct two *t, struct xcmd *x)
{
	while (uv_sem_trywait(&x->done) != 0)
		uv_run(&t->loop, UV_RUN_ONCE);
	uv_sem_destroy(&x->done);
	return x->status;
}

static uint8_t x_run(struct two *t, struct xcmd *x)
{
	x_begin(t, x);
	return x_wait(t, x);
}

/* The worker has run every message posted to it before this call. */
struct sync_msg {
	struct scsitgt__msg msg;
	uv_sem_t sem;
};

static void sync_there(struct scsitgt__msg *msg)
{
	uv_sem_post(&((struct sync_msg *)msg)->sem);
}

/* Let both loops run what is ready: the worker its inbox, home its loop (without blocking). */
static void settle(struct two *t)
{
	for (int i = 0; i < 4; i++) {
		struct sync_msg s;

		assert_int_equal(uv_sem_init(&s.sem, 0), 0);
		s.msg.fn = sync_there;
		scsitgt__worker_post(t->b->shard->worker, &s.msg);
		uv_sem_wait(&s.sem);
		uv_sem_destroy(&s.sem);
		uv_run(&t->loop, UV_RUN_NOWAIT);
	}
}

/* Run home's loop until the backend holds @n ios (a worker's io is forwarded to home). */
static void wait_pending(struct two *t, size_t n)
{
	while (t->fb->npending < n)
		uv_run(&t->loop, UV_RUN_ONCE);
}

static void cdb_tur(struct xcmd *x, struct scsitgt__session *s, uint8_t attr)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->attr = attr;
	x->cdb_len = 6;
}

static void cdb_write(struct xcmd *x, struct scsitgt__session *s, uint32_t lba)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_WRITE_10;
	put_be32(&x->cdb[2], lba);
	put_be16(&x->cdb[7], 1);
	x->cdb_len = 10;
	memset(x->dout, 0x5a, 512);
	x->dout_len = 512;
}

/* COMPARE AND WRITE of one block at @lba: compare with zeros, write 0xaa. */
static void cdb_caw(struct xcmd *x, struct scsitgt__session *s, uint64_t lba)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_COMPARE_AND_WRITE;
	put_be64(&x->cdb[2], lba);
	x->cdb[13] = 1;
	x->cdb_len = 16;
	memset(x->dout + 512, 0xaa, 512);
	x->dout_len = 1024;
}

static struct two *lbas_owner;
static int (*lbas_real)(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out);

/* The backend's synchronous op, recording which thread called it (home is the only one
 * allowed: the backend has no MULTI_LOOP flag). */
static int lbas_check(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out)
{
	uv_thread_t self = uv_thread_self();

	atomic_fetch_add(&lbas_owner->lbas_calls, 1);
	if (!uv_thread_equal(&self, &lbas_owner->home))
		atomic_fetch_add(&lbas_owner->lbas_off_home, 1);
	return lbas_real(bctx, lba, num_blocks_out, mapped_out);
}

static struct scsitgt__session *nexus(struct two *t, const char *port, unsigned int shard)
{
	struct scsitgt__nexus_info ni;
	struct scsitgt__session *s;
	struct xcmd x;

	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = port;
	ni.initiator_port = port;
	ni.target_port = "iqn.2024-01.org.example:xshard,t,0x0001";
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	assert_int_equal(scsitgt__session_create(&s, t->tgt, &ni, &x_ops, t), 0);
	/* bound to its shard before its first command (what an in-process fabric does) */
	s->shard = &t->engine->shards[shard];
	/* the first command meets POWER ON (SAM-5 §5.14) */
	cdb_tur(&x, s, 0);
	x_run(t, &x);
	cdb_tur(&x, s, 0);
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
	return s;
}

static void wake_cb(uv_async_t *h)
{
	(void)h;
}

static int setup(void **state)
{
	struct two *t = calloc(1, sizeof(*t));
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct fake_backend_opts fo;

	assert_non_null(t);
	t->home = uv_thread_self();
	assert_int_equal(uv_loop_init(&t->loop), 0);
	assert_int_equal(uv_async_init(&t->loop, &t->wake, wake_cb), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = 1;
	assert_int_equal(scsitgt_engine_create(&t->engine, &t->loop, &eo), 0);
	assert_true(t->engine->nshards == 2);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:xshard";
	assert_int_equal(scsitgt_target_create(&t->tgt, t->engine, &to), 0);
	fake_backend_opts_init(&fo);
	fo.block_size = 512;
	fo.num_blocks = 2048;
	fo.store = true;
	fo.lba_status = true;
	fo.supports = 1u << SCSITGT_IO_UNMAP;
	fo.mode = FAKE_MANUAL;
	assert_int_equal(fake_backend_create(&t->fb, &fo), 0);
	/* fb's table with get_lba_status() wrapped; no SCSITGT_BACKEND_MULTI_LOOP */
	t->ops = t->fb->ops;
	assert_false(t->ops.flags & SCSITGT_BACKEND_MULTI_LOOP);
	lbas_owner = t;
	lbas_real = t->ops.get_lba_status;
	t->ops.get_lba_status = lbas_check;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.flags = SCSITGT_LUN_THIN;
	lo.backend = &t->ops;
	lo.backend_ctx = t->fb;
	assert_int_equal(scsitgt_lun_create(&t->lun, t->tgt, &lo), 0);
	t->a = nexus(t, PORT_A, 0);
	t->b = nexus(t, PORT_B, 1);
	*state = t;
	return 0;
}

static void engine_gone(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

static int teardown(void **state)
{
	struct two *t = *state;
	bool gone = false;

	fake_backend_complete_pending(t->fb);
	scsitgt__session_destroy(t->b);
	scsitgt__session_destroy(t->a);
	scsitgt_engine_destroy(t->engine, engine_gone, &gone);
	while (!gone)
		uv_run(&t->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t->wake, NULL);
	uv_run(&t->loop, UV_RUN_DEFAULT);
	uv_loop_close(&t->loop);
	free(t);
	return 0;
}

/*
 * SAM-5 §8.6.3: an ORDERED task starts once every older task completed, whichever I_T nexus
 * (and so whichever loop) sent it. A WRITE of shard 1 held in the backend holds back an
 * ORDERED command of shard 0, which starts once the WRITE completes.
 */
static void test_ordered_waits_for_other_shard(void **state)
{
	struct two *t = *state;
	struct xcmd w, o;

	cdb_write(&w, t->b, 0);
	x_begin(t, &w);
	wait_pending(t, 1);
	cdb_tur(&o, t->a, 2 /* ORDERED */);
	x_begin(t, &o);
	settle(t);
	assert_false(x_finished(&o));
	assert_false(x_finished(&w));
	fake_backend_complete_pending(t->fb);
	assert_int_equal(x_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(x_wait(t, &o), SAM_STAT_GOOD);
	/* the barrier is gone: plain commands count themselves again */
	assert_false(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_BARRIER);
	cdb_tur(&o, t->b, 0);
	assert_int_equal(x_run(t, &o), SAM_STAT_GOOD);
}

/*
 * The other way round: an ORDERED command of shard 1 waits for shard 0's WRITE, and holds back
 * a SIMPLE command sent after it from shard 0 (SAM-5 §8.6.2) until it completes.
 */
static void test_ordered_holds_back_newer(void **state)
{
	struct two *t = *state;
	struct xcmd w, o, s;

	cdb_write(&w, t->a, 0);
	x_begin(t, &w);
	wait_pending(t, 1);
	cdb_tur(&o, t->b, 2 /* ORDERED */);
	x_begin(t, &o);
	settle(t);
	cdb_tur(&s, t->a, 1 /* SIMPLE */);
	x_begin(t, &s);
	settle(t);
	assert_false(x_finished(&o));
	assert_false(x_finished(&s));
	fake_backend_complete_pending(t->fb);
	assert_int_equal(x_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(x_wait(t, &o), SAM_STAT_GOOD);
	assert_int_equal(x_wait(t, &s), SAM_STAT_GOOD);
}

/*
 * SAM-5 §8.6.4: a HEAD OF QUEUE task starts at once, even with an older task of another loop
 * in flight, and holds back the newer SIMPLE ones of every loop until it completes. (Which
 * command's status comes first is not compared across threads: a task leaves the task set
 * just before its status goes out, so the next may overtake it on the other loop.)
 */
static void test_head_of_queue_across_shards(void **state)
{
	struct two *t = *state;
	struct xcmd w, h, s;

	cdb_write(&w, t->b, 0);
	x_begin(t, &w);
	wait_pending(t, 1);
	/* a WRITE with HEAD OF QUEUE from home: it reaches the backend while shard 1's waits */
	cdb_write(&h, t->a, 8);
	h.attr = 3;
	x_begin(t, &h);
	wait_pending(t, 2);
	cdb_tur(&s, t->b, 1);
	x_begin(t, &s);
	settle(t);
	assert_false(x_finished(&s));
	fake_backend_complete_pending(t->fb);
	assert_int_equal(x_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(x_wait(t, &h), SAM_STAT_GOOD);
	assert_int_equal(x_wait(t, &s), SAM_STAT_GOOD);
}

/*
 * SBC-4 §5.3: COMPARE AND WRITE is atomic against every other command on its range. Its
 * exclusive range entry waits for the plain commands of every shard that took no entry: a
 * WRITE of the other shard held in the backend keeps it from reading until it completes.
 */
static void caw_waits_for(struct two *t, struct scsitgt__session *writer,
			  struct scsitgt__session *caw_sess)
{
	struct xcmd w, c;

	cdb_write(&w, writer, 0);
	x_begin(t, &w);
	wait_pending(t, 1);
	cdb_caw(&c, caw_sess, 100);
	x_begin(t, &c);
	settle(t);
	/* the CAW has not read yet: the backend holds the WRITE alone */
	assert_int_equal(t->fb->npending, 1);
	assert_false(x_finished(&c));
	assert_true(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_EXCL);
	/* complete the WRITE, then the CAW's READ and WRITE as they come */
	while (!x_finished(&c)) {
		fake_backend_complete_pending(t->fb);
		uv_run(&t->loop, UV_RUN_ONCE);
	}
	assert_int_equal(x_wait(t, &w), SAM_STAT_GOOD);
	assert_int_equal(x_wait(t, &c), SAM_STAT_GOOD);
	assert_false(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_EXCL);
	assert_int_equal(t->lun->rlock.nexcl, 0);
	/* the block holds the CAW's data, and plain commands go untracked again */
	assert_int_equal(t->fb->data[100 * 512], 0xaa);
	cdb_write(&w, caw_sess, 1);
	x_begin(t, &w);
	wait_pending(t, 1);
	fake_backend_complete_pending(t->fb);
	assert_int_equal(x_wait(t, &w), SAM_STAT_GOOD);
}

static void test_caw_waits_for_worker_write(void **state)
{
	struct two *t = *state;

	caw_waits_for(t, t->b, t->a);
}

static void test_caw_on_worker_waits_for_home_write(void **state)
{
	struct two *t = *state;

	caw_waits_for(t, t->a, t->b);
}

static void test_lba_status_asked_on_home(void **state)
{
	struct two *t = *state;
	struct xcmd x;

	memset(&x, 0, sizeof(x));
	x.sess = t->b;
	x.cdb[0] = SBC_SERVICE_ACTION_IN_16;
	x.cdb[1] = SBC_SAI_GET_LBA_STATUS;
	put_be64(&x.cdb[2], 0);
	put_be32(&x.cdb[10], 64);
	x.cdb_len = 16;
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
	/* one descriptor: the whole LUN deallocated (nothing written yet) */
	assert_int_equal(get_be32(&x.din[0]), 4 + 16);
	assert_int_equal(get_be64(&x.din[8]), 0);
	assert_int_equal(get_be32(&x.din[16]), 2048);
	assert_int_equal(x.din[20] & 0x0f, 1);
	assert_true(atomic_load(&t->lbas_calls) > 0);
	assert_int_equal(atomic_load(&t->lbas_off_home), 0);
}

/* SEND DIAGNOSTIC with SELF-TEST CODE @code on @s. */
static void cdb_selftest(struct xcmd *x, struct scsitgt__session *s, uint8_t code)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SPC_SEND_DIAGNOSTIC;
	x->cdb[1] = (uint8_t)(code << 5);
	x->cdb_len = 6;
}

/*
 * SPC-5 §6.42: a background self-test started on shard 1 runs on its loop; shard 0's
 * commands meet it (another test is NOT READY, SELF-TEST IN PROGRESS; REQUEST SENSE reports
 * the progress), shard 0 aborts it (SELF-TEST CODE 100b) and reads the result in the
 * Self-Test Results log page.
 */
static void test_selftest_across_shards(void **state)
{
	struct two *t = *state;
	struct xcmd x;

	cdb_selftest(&x, t->b, 1 /* background short */);
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
	/* the walk's first read is held by the backend */
	wait_pending(t, 1);
	assert_true(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_SELFTEST);
	cdb_selftest(&x, t->a, 1);
	assert_int_equal(x_run(t, &x), SAM_STAT_CHECK_CONDITION);
	assert_int_equal(x.sense[2] & 0x0f, 0x02);
	assert_int_equal(x.sense[12], 0x04);
	assert_int_equal(x.sense[13], 0x09);
	memset(&x, 0, sizeof(x));
	x.sess = t->a;
	x.cdb[0] = SPC_REQUEST_SENSE;
	x.cdb[4] = 18;
	x.cdb_len = 6;
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
	assert_int_equal(x.din[2] & 0x0f, 0x02);
	assert_int_equal(x.din[12], 0x04);
	assert_int_equal(x.din[13], 0x09);
	/* plain commands go on meanwhile, from both loops */
	cdb_tur(&x, t->a, 0);
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
	cdb_tur(&x, t->b, 0);
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
	/* abort it from home; the walk on the worker stops at its next piece */
	cdb_selftest(&x, t->a, 4);
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
	assert_false(scsitgt__lun_xflags(t->lun) & SCSITGT__LUN_XF_SELFTEST);
	fake_backend_complete_pending(t->fb);
	settle(t);
	/* LOG SENSE page 10h: the newest entry, SELF-TEST CODE 001b, RESULT 1h */
	memset(&x, 0, sizeof(x));
	x.sess = t->b;
	x.cdb[0] = SPC_LOG_SENSE;
	x.cdb[2] = 0x40 | 0x10;
	put_be16(&x.cdb[7], 64);
	x.cdb_len = 10;
	assert_int_equal(x_run(t, &x), SAM_STAT_GOOD);
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
