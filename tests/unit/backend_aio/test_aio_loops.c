/* SPDX-License-Identifier: MIT */
/*
 * The aio backend on two loops at once (SCSITGT_BACKEND_MULTI_LOOP, issue 18): an engine with
 * one worker loop, nexus A on home (shard 0) and nexus B bound to the worker's shard (shard 1),
 * whose commands run on the worker thread, so that their ios are submitted there and complete
 * through the worker loop's own kernel context. Data written through one loop is read back
 * through the other; both loops stream writes and reads at once; the engine's teardown closes
 * the worker's context on the worker loop (a hang fails the test by its timeout). Each step
 * waits on a semaphore or runs the home loop until done: no sleep, no timing. Runs once per
 * engine (AIO_TEST_ENGINE), on a direct (/var/tmp) and a buffered (/dev/shm) file, and under
 * the TSan build (scripts/test.sh --tsan).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aio_test_util.h"
#include "backend/aio_hooks.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"

#define PORT_A "iqn.2024-01.org.example:a,i,0x23d000000001"
#define PORT_B "iqn.2024-01.org.example:b,i,0x23d000000002"
#define BS 512u
#define NBLOCKS 8192u
/* Blocks per command. */
#define XB 8u

/* One command and what came back. */
struct xcmd {
	struct scsitgt__msg msg; /* first: posted to the worker */
	struct scsitgt__session *sess;
	uint8_t cdb[16];
	size_t cdb_len;
	uint8_t dout[XB * BS];
	size_t dout_len;
	uint8_t din[XB * BS];
	size_t din_len;
	uint8_t status;
	uv_sem_t done;
};

struct two {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct scsitgt__session *a, *b;
	char *path;
	void *bctx;
};

static void x_done(struct scsitgt__cmd *cmd)
{
	struct xcmd *x = *(struct xcmd **)scsitgt__cmd_fabric_priv(cmd);

	x->status = cmd->status;
	x->din_len = cmd->data_len < sizeof(x->din) ? cmd->data_len : sizeof(x->din);
	if (x->din_len) {
		memcpy(x->din, scsitgt__cmd_data_in(cmd), x->din_len);
	}
	scsitgt__cmd_destroy(cmd);
	uv_sem_post(&x->done);
}

static void x_session_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops x_ops = {
	.name = "aioloops",
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
	scsitgt__cmd_setup(cmd, lun, x->cdb, x->cdb_len, 1, 1);
	if (cmd->state == SCSITGT__CMD_NEED_DATA) {
		memcpy(cmd->buf, x->dout,
		       x->dout_len < cmd->xfer_len ? x->dout_len : cmd->xfer_len);
	}
	scsitgt__cmd_execute(cmd);
}

static void x_on_worker(struct scsitgt__msg *msg)
{
	x_start((struct xcmd *)msg);
}

/* Run @x to its end: on the worker for B (this thread waits), here for A. */
static uint8_t x_run(struct two *t, struct xcmd *x)
{
	assert_int_equal(uv_sem_init(&x->done, 0), 0);
	if (x->sess->shard->index != 0) {
		x->msg.fn = x_on_worker;
		scsitgt__worker_post(x->sess->shard->worker, &x->msg);
		uv_sem_wait(&x->done);
	} else {
		x_start(x);
		while (uv_sem_trywait(&x->done) != 0) {
			uv_run(&t->loop, UV_RUN_ONCE);
		}
	}
	uv_sem_destroy(&x->done);
	return x->status;
}

static uint8_t run_tur(struct two *t, struct scsitgt__session *s, struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb_len = 6;
	return x_run(t, x);
}

/* WRITE (10) of XB blocks at @lba with the pattern of @seed; FUA when asked. */
static uint8_t run_write(struct two *t, struct scsitgt__session *s, uint32_t lba, uint32_t seed,
			 bool fua, struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_WRITE_10;
	x->cdb[1] = fua ? 0x08 : 0;
	put_be32(&x->cdb[2], lba);
	put_be16(&x->cdb[7], XB);
	x->cdb_len = 10;
	aio_test_pattern(x->dout, sizeof(x->dout), seed);
	x->dout_len = sizeof(x->dout);
	return x_run(t, x);
}

/* READ (10) of XB blocks at @lba; true when GOOD with the pattern of @seed. */
static bool read_is(struct two *t, struct scsitgt__session *s, uint32_t lba, uint32_t seed,
		    struct xcmd *x)
{
	uint8_t expect[XB * BS];

	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_READ_10;
	put_be32(&x->cdb[2], lba);
	put_be16(&x->cdb[7], XB);
	x->cdb_len = 10;
	if (x_run(t, x) != SAM_STAT_GOOD || x->din_len != sizeof(expect)) {
		return false;
	}
	aio_test_pattern(expect, sizeof(expect), seed);
	return memcmp(x->din, expect, sizeof(expect)) == 0;
}

/* SYNCHRONIZE CACHE (10) of the whole medium. */
static uint8_t run_sync(struct two *t, struct scsitgt__session *s, struct xcmd *x)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = SBC_SYNCHRONIZE_CACHE_10;
	x->cdb_len = 10;
	return x_run(t, x);
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
	ni.target_port = "iqn.2024-01.org.example:aioloops,t,0x0001";
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	assert_int_equal(scsitgt__session_create(&s, t->tgt, &ni, &x_ops, t), 0);
	/* bound to its shard before its first command (what an in-process fabric does) */
	s->shard = &t->engine->shards[shard];
	/* the first command meets POWER ON (SAM-5 §5.14) */
	run_tur(t, s, &x);
	assert_int_equal(run_tur(t, s, &x), SAM_STAT_GOOD);
	return s;
}

static int setup(void **state)
{
	const char *dir = *state;
	struct two *t = calloc(1, sizeof(*t));
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct scsitgt_backend_aio_opts o;

	assert_non_null(t);
	aio_test_log_clear();
	t->path = aio_test_file(dir, (off_t)NBLOCKS * BS);
	if (t->path == NULL) {
		/* the test skips (no scratch file there) */
		*state = t;
		return 0;
	}
	assert_int_equal(uv_loop_init(&t->loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = 1;
	assert_int_equal(scsitgt_engine_create(&t->engine, &t->loop, &eo), 0);
	assert_true(t->engine->nshards == 2);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.org.example:aioloops";
	assert_int_equal(scsitgt_target_create(&t->tgt, t->engine, &to), 0);
	aio_test_opts(&o, &t->loop, t->path);
	assert_int_equal(scsitgt_backend_aio_create(&t->bctx, &o), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = BS;
	lo.num_blocks = NBLOCKS;
	lo.backend = scsitgt_backend_aio_ops();
	lo.backend_ctx = t->bctx;
	assert_true(lo.backend->flags & SCSITGT_BACKEND_MULTI_LOOP);
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

	if (t->engine) {
		scsitgt__session_destroy(t->b);
		scsitgt__session_destroy(t->a);
		/* closes the LUN: the worker's kernel context is torn down on the worker loop */
		scsitgt_engine_destroy(t->engine, engine_gone, &gone);
		while (!gone) {
			uv_run(&t->loop, UV_RUN_ONCE);
		}
		uv_run(&t->loop, UV_RUN_DEFAULT);
		assert_int_equal(uv_loop_close(&t->loop), 0);
	}
	aio_test_file_remove(t->path);
	free(t);
	return 0;
}

static void skip_without_file(struct two *t)
{
	if (t->path == NULL) {
		print_message("no scratch file: skipped\n");
		skip();
	}
}

/* What one loop writes the other reads, FUA and SYNCHRONIZE CACHE on the worker too; the
 * worker made a kernel context of its own. */
static void test_data_across_loops(void **state)
{
	struct two *t = *state;
	struct xcmd x;

	skip_without_file(t);
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 1);
	assert_int_equal(run_write(t, t->b, 16, 1, false, &x), SAM_STAT_GOOD);
	/* home and the worker each submit through their own context */
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 2);
	aio_test_pattern(x.dout, sizeof(x.dout), 1);
	assert_true(aio_test_file_equals(t->path, 16 * BS, x.dout, sizeof(x.dout)));
	assert_true(read_is(t, t->a, 16, 1, &x));
	assert_true(read_is(t, t->b, 16, 1, &x));
	assert_int_equal(run_write(t, t->a, 64, 2, false, &x), SAM_STAT_GOOD);
	assert_true(read_is(t, t->b, 64, 2, &x));
	assert_int_equal(run_write(t, t->b, 64, 3, true, &x), SAM_STAT_GOOD);
	assert_true(read_is(t, t->a, 64, 3, &x));
	assert_int_equal(run_sync(t, t->b, &x), SAM_STAT_GOOD);
	assert_int_equal(run_sync(t, t->a, &x), SAM_STAT_GOOD);
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 2);
}

/* Both loops write and read back at once, on ranges of their own. */
struct stream {
	struct two *t;
	struct scsitgt__session *s;
	uint32_t base;
	unsigned int n, bad;
};

static void stream_run(struct stream *s)
{
	struct xcmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		uint32_t lba = s->base + (i % 64) * XB;
		uint32_t seed = s->base + i;

		if (run_write(s->t, s->s, lba, seed, (i % 7) == 0, &x) != SAM_STAT_GOOD ||
		    !read_is(s->t, s->s, lba, seed, &x)) {
			s->bad++;
		}
	}
}

static void stream_thread(void *arg)
{
	stream_run(arg);
}

static void test_both_loops_at_once(void **state)
{
	struct two *t = *state;
	struct stream sb = { .t = t, .s = t->b, .base = 1024, .n = 300 };
	struct stream sa = { .t = t, .s = t->a, .base = 4096, .n = 300 };
	uv_thread_t th;

	skip_without_file(t);
	assert_int_equal(uv_thread_create(&th, stream_thread, &sb), 0);
	stream_run(&sa);
	assert_int_equal(uv_thread_join(&th), 0);
	assert_int_equal(sa.bad, 0);
	assert_int_equal(sb.bad, 0);
	assert_int_equal(scsitgt__backend_aio_loop_count(t->bctx), 2);
}

int main(void)
{
	static const char *var_tmp = "/var/tmp";
	static const char *dev_shm = "/dev/shm";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_data_across_loops, setup, teardown,
							 (void *)var_tmp),
		cmocka_unit_test_prestate_setup_teardown(test_data_across_loops, setup, teardown,
							 (void *)dev_shm),
		cmocka_unit_test_prestate_setup_teardown(test_both_loops_at_once, setup, teardown,
							 (void *)var_tmp),
		cmocka_unit_test_prestate_setup_teardown(test_both_loops_at_once, setup, teardown,
							 (void *)dev_shm),
	};

	aio_test_engine_require();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
