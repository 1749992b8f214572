/* SPDX-License-Identifier: MIT */
/*
 * Shards (core/shard.h, issue 18): two sessions, each bound to its own worker shard, run
 * READ and WRITE commands at once on their worker threads against one shared null LUN, one
 * shared RAM LUN (each session writes its own blocks and reads them back), a LUN whose
 * backend has no SCSITGT_BACKEND_MULTI_LOOP (its ios go to home and back) and a null LUN the
 * home loop destroys while they run, taking LUN statistics snapshots meanwhile. Part of the
 * TSan suite (scripts/test.sh --tsan): every structure two threads touch must be safe.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "libscsitgt/scsitgt.h"
#include "util/be.h"

#define NWORKERS 2
#define CMDS_PER_WORKER 6000
#define BS 512u
#define LUN_BLOCKS 4096u
/* Blocks of the RAM LUN each session owns: session i writes [i * SLICE, (i + 1) * SLICE). */
#define SLICE 256u

enum {
	LUN_NULL = 0,
	LUN_RAM = 1,
	LUN_HOME = 2,
	LUN_GONE = 3,
	NLUNS = 4
};

struct home_backend {
	uv_thread_t home;
	uv_loop_t *loop;
	atomic_uint submits;
	atomic_uint off_home; /* submits seen off the home thread or loop: must stay 0 */
	/* forwarded READs that carried SCSITGT_IO_FLAG_MAY_LEND or could lend: must stay 0
	 * (lent memory would be released on the command's loop, not this backend's) */
	atomic_uint lend_ok;
};

/* A backend without SCSITGT_BACKEND_MULTI_LOOP: every call must come on the home loop. */
static int hb_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	(void)bctx;
	geo->block_size = BS;
	return 0;
}

static void hb_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	(void)bctx;
	if (cb)
		cb(cb_arg, 0);
}

static void hb_submit(void *bctx, struct scsitgt_io *io)
{
	struct home_backend *hb = bctx;
	uv_thread_t self = uv_thread_self();

	atomic_fetch_add(&hb->submits, 1);
	if (!uv_thread_equal(&self, &hb->home) || scsitgt_io_get_loop(io) != hb->loop)
		atomic_fetch_add(&hb->off_home, 1);
	if (scsitgt_io_get_type(io) == SCSITGT_IO_READ) {
		static const uint8_t lent[LUN_BLOCKS * BS];
		size_t len = (size_t)scsitgt_io_get_num_blocks(io) * BS;
		int n;
		const struct iovec *iov = scsitgt_io_get_iov(io, &n);

		/* Session 0 lends Data-In, but not through a backend on another loop. */
		if ((scsitgt_io_get_flags(io) & SCSITGT_IO_FLAG_MAY_LEND) ||
		    (len <= sizeof(lent) && scsitgt_io_lend_data(io, lent, len, NULL, NULL) == 0))
			atomic_fetch_add(&hb->lend_ok, 1);

		for (int i = 0; i < n; i++)
			memset(iov[i].iov_base, 0x77, iov[i].iov_len);
	}
	scsitgt_io_complete(io, 0);
}

static const struct scsitgt_backend_ops hb_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "home-only",
	.open = hb_open,
	.close = hb_close,
	.submit = hb_submit,
};

struct worker_ctx;

struct cmd_priv {
	struct worker_ctx *w;
	unsigned int lun;
	bool write;
	uint32_t lba;
};

/* One session on one worker shard, driven from that worker's thread. */
struct worker_ctx {
	struct scsitgt__session *sess;
	struct scsitgt__shard *shard;
	struct scsitgt__msg start_msg;
	struct scsitgt__msg done_msg;
	unsigned int index;
	/* Worker thread only, until done_msg reaches home. */
	uv_thread_t thread;
	unsigned int issued, completed;
	unsigned int per_lun[NLUNS];
	unsigned int good[NLUNS];
	unsigned int bad; /* wrong status, wrong data, wrong thread */
	bool in_submit, want_next;
	/* Home only. */
	bool done;
};

static uint8_t pattern(unsigned int w, uint32_t lba)
{
	return (uint8_t)(0x40 + w * 16 + (lba & 7));
}

static void issue(struct worker_ctx *w);

static void check_data(struct worker_ctx *w, struct scsitgt__cmd *cmd, struct cmd_priv *p)
{
	const uint8_t *d = scsitgt__cmd_data_in(cmd);
	uint8_t want = p->lun == LUN_RAM  ? pattern(w->index, p->lba) :
		       p->lun == LUN_HOME ? 0x77 :
					    0;

	if (cmd->data_len != BS) {
		w->bad++;
		return;
	}
	for (unsigned int i = 0; i < BS; i++) {
		if (d[i] != want) {
			w->bad++;
			return;
		}
	}
}

static void w_cmd_done(struct scsitgt__cmd *cmd)
{
	struct cmd_priv *p = scsitgt__cmd_fabric_priv(cmd);
	struct worker_ctx *w = p->w;
	uv_thread_t self = uv_thread_self();

	if (!uv_thread_equal(&self, &w->thread) || cmd->shard != w->shard)
		w->bad++;
	if (cmd->status == SAM_STAT_GOOD) {
		w->good[p->lun]++;
		if (!p->write)
			check_data(w, cmd, p);
	} else if (p->lun != LUN_GONE) {
		/* The destroyed LUN answers LOGICAL UNIT NOT SUPPORTED once gone; nothing else
		 * may fail. */
		w->bad++;
	}
	w->completed++;
	scsitgt__cmd_destroy(cmd);
	if (w->in_submit)
		w->want_next = true;
	else
		issue(w);
}

static void w_cmd_aborted(struct scsitgt__cmd *cmd)
{
	struct cmd_priv *p = scsitgt__cmd_fabric_priv(cmd);

	p->w->bad++;
	p->w->completed++;
	scsitgt__cmd_destroy(cmd);
}

static void w_session_shutdown(struct scsitgt__session *sess)
{
	(void)sess;
	fail_msg("no session is shut down while the test runs");
}

static const struct scsitgt__fabric_ops w_ops = {
	.name = "shard-test",
	.cmd_done = w_cmd_done,
	.cmd_aborted = w_cmd_aborted,
	.session_shutdown = w_session_shutdown,
};

/* Home: a worker finished its commands. */
static void w_done(struct scsitgt__msg *msg)
{
	scsitgt__container_of(msg, struct worker_ctx, done_msg)->done = true;
}

/*
 * Command k of a worker: every LUN in turn; on the RAM LUN the first SLICE commands write the
 * session's own blocks, the later ones read them back.
 */
static void issue_one(struct worker_ctx *w)
{
	unsigned int k = w->issued++;
	struct scsitgt__cmd *cmd;
	struct cmd_priv *p;
	uint8_t cdb[10] = { 0 }, lun[8];
	uint32_t lba;

	if (scsitgt__cmd_create(&cmd, w->sess, sizeof(*p)) < 0) {
		w->bad++;
		w->completed++;
		return;
	}
	p = scsitgt__cmd_fabric_priv(cmd);
	p->w = w;
	p->lun = k % NLUNS;
	lba = (k / NLUNS) % SLICE;
	p->write = p->lun == LUN_RAM ? k / NLUNS < SLICE : (k / NLUNS) % 2 == 1;
	p->lba = p->lun == LUN_RAM ? w->index * SLICE + lba : lba;
	w->per_lun[p->lun]++;
	/* SBC-4 §5.16 READ (10) / §5.40 WRITE (10). */
	cdb[0] = p->write ? SBC_WRITE_10 : SBC_READ_10;
	put_be32(&cdb[2], p->lba);
	put_be16(&cdb[7], 1);
	scsitgt__lun_encode(p->lun, lun);
	scsitgt__cmd_setup(cmd, lun, cdb, sizeof(cdb), 0, k);
	if (cmd->state == SCSITGT__CMD_NEED_DATA)
		memset(cmd->buf, pattern(w->index, p->lba), cmd->xfer_len);
	scsitgt__cmd_execute(cmd);
}

/* Back to back, two at a time; completions inside execute ask for the next instead of
 * recursing. */
static void issue(struct worker_ctx *w)
{
	do {
		w->want_next = false;
		if (w->issued == CMDS_PER_WORKER) {
			if (w->completed == CMDS_PER_WORKER)
				scsitgt__engine_post(w->shard->engine, &w->done_msg);
			return;
		}
		w->in_submit = true;
		issue_one(w);
		w->in_submit = false;
	} while (w->want_next);
}

/* The worker's thread: start issuing. */
static void w_start(struct scsitgt__msg *msg)
{
	struct worker_ctx *w = scsitgt__container_of(msg, struct worker_ctx, start_msg);

	w->thread = uv_thread_self();
	issue(w);
	/* a second stream keeps ios of both kinds in flight at once */
	issue(w);
}

struct snap {
	struct scsitgt_lun *lun;
	unsigned int taken;
};

static void snap_tick(uv_timer_t *t)
{
	struct snap *s = t->data;
	struct scsitgt_lun_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	assert_int_equal(scsitgt_lun_get_stats(s->lun, &st), 0);
	s->taken++;
}

static void cb_count(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

static void test_two_shards(void **state)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *luns[NLUNS];
	struct worker_ctx w[NWORKERS];
	struct home_backend hb;
	struct snap snap = { 0 };
	uv_timer_t timer;
	uv_loop_t loop;
	int gone = 0, destroyed = 0;
	unsigned int sent_null = 0, good_null = 0;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = NWORKERS;
	assert_int_equal(scsitgt_engine_create(&engine, &loop, &eo), 0);
	assert_int_equal(engine->nshards, NWORKERS + 1);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-12.org.libscsitgt:shards";
	assert_int_equal(scsitgt_target_create(&tgt, engine, &to), 0);

	memset(&hb, 0, sizeof(hb));
	hb.home = uv_thread_self();
	hb.loop = &loop;
	for (unsigned int i = 0; i < NLUNS; i++) {
		void *bctx = &hb;

		scsitgt_lun_opts_init(&lo, sizeof(lo));
		lo.id = i;
		lo.block_size = BS;
		lo.num_blocks = LUN_BLOCKS;
		if (i == LUN_RAM) {
			assert_int_equal(scsitgt_backend_ram_create(&bctx), 0);
			lo.backend = scsitgt_backend_ram_ops();
		} else if (i == LUN_HOME) {
			lo.backend = &hb_ops;
		} else {
			assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
			lo.backend = scsitgt_backend_null_ops();
		}
		lo.backend_ctx = bctx;
		assert_int_equal(scsitgt_lun_create(&luns[i], tgt, &lo), 0);
	}

	memset(w, 0, sizeof(w));
	for (unsigned int i = 0; i < NWORKERS; i++) {
		struct scsitgt__nexus_info ni;
		char port[128];

		snprintf(port, sizeof(port), "iqn.2026-12.org.libscsitgt:init%u,i,0x23d00000000%u",
			 i, i);
		memset(&ni, 0, sizeof(ni));
		ni.protocol_id = SCSITGT__PROTO_ISCSI;
		ni.initiator_name = "iqn.2026-12.org.libscsitgt:init";
		ni.initiator_port = port;
		ni.target_port = "iqn.2026-12.org.libscsitgt:shards,t,0x0001";
		ni.rel_port_id = 1;
		ni.tpg_id = 1;
		ni.lend_data_in = i == 0; /* one lends READ data, the other gets it copied */
		ni.shard = NWORKERS + 1;
		assert_int_equal(scsitgt__session_create(&w[i].sess, tgt, &ni, &w_ops, &w[i]),
				 -EINVAL);
		ni.shard = i + 1;
		assert_int_equal(scsitgt__session_create(&w[i].sess, tgt, &ni, &w_ops, &w[i]), 0);
		w[i].sess->ua_no_power_on = true;
		w[i].index = i;
		w[i].shard = &engine->shards[i + 1];
		assert_ptr_equal(w[i].sess->shard, w[i].shard);
		w[i].start_msg.fn = w_start;
		w[i].done_msg.fn = w_done;
	}

	/* Snapshots of the shared LUN while the workers run, from a timer on home. */
	snap.lun = luns[LUN_NULL];
	assert_int_equal(uv_timer_init(&loop, &timer), 0);
	timer.data = &snap;
	uv_timer_start(&timer, snap_tick, 1, 1);
	for (unsigned int i = 0; i < NWORKERS; i++)
		scsitgt__shard_post(w[i].shard, &w[i].start_msg);
	/* Removed while both shards send it commands: it waits for each shard's part. */
	scsitgt_lun_destroy(luns[LUN_GONE], cb_count, &destroyed);
	while (!(w[0].done && w[1].done && destroyed))
		uv_run(&loop, UV_RUN_ONCE);
	uv_timer_stop(&timer);
	uv_close((uv_handle_t *)&timer, NULL);

	for (unsigned int i = 0; i < NWORKERS; i++) {
		assert_int_equal(w[i].bad, 0);
		assert_int_equal(w[i].completed, CMDS_PER_WORKER);
		assert_int_equal(w[i].good[LUN_RAM], w[i].per_lun[LUN_RAM]);
		assert_int_equal(w[i].good[LUN_HOME], w[i].per_lun[LUN_HOME]);
		sent_null += w[i].per_lun[LUN_NULL];
		good_null += w[i].good[LUN_NULL];
		assert_false(uv_thread_equal(&w[i].thread, &hb.home));
		scsitgt__session_destroy(w[i].sess);
	}
	assert_false(uv_thread_equal(&w[0].thread, &w[1].thread));
	assert_int_equal(good_null, sent_null);
	/* Every io of the backend without the flag was submitted on home. */
	assert_int_equal(atomic_load(&hb.off_home), 0);
	assert_int_equal(atomic_load(&hb.lend_ok), 0);
	assert_int_equal(atomic_load(&hb.submits), w[0].per_lun[LUN_HOME] + w[1].per_lun[LUN_HOME]);
	/* The snapshot sums both shards' parts. */
	{
		struct scsitgt_lun_stats st;

		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		assert_int_equal(scsitgt_lun_get_stats(luns[LUN_NULL], &st), 0);
		assert_int_equal(st.cmds.read_cmds + st.cmds.write_cmds, sent_null);
		assert_int_equal(st.inflight, 0);
	}
	assert_int_equal(destroyed, 1);

	scsitgt_engine_destroy(engine, cb_count, &gone);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(gone, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_shards),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
