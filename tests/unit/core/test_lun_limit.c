/* SPDX-License-Identifier: MIT */
/*
 * The per-LUN command limit across shards (SAM-5 §5.3 TASK SET FULL; target option
 * max_lun_commands): commands of three loops (home and two worker shards) on one LUN whose
 * backend holds every io until the test lets it go. The limit counts every shard's commands,
 * while the check of a command reads the other shards' parts only when some part holds more
 * than its share (core/lun.c): a shard far below its own share must still be refused when
 * another shard holds most of the limit, and a shard above its share must still be let in
 * while the total is below the limit. Part of the TSan suite.
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
#define LIMIT 4u /* three shards: a part is above its share (1) from 2 commands on */
#define BS 512u
#define MAX_PARKED 16u

/* A multi-loop backend that holds every io until the test completes it. */
struct park {
	uv_mutex_t lock;
	struct scsitgt_io *ios[MAX_PARKED];
	unsigned int n;
	atomic_uint parked;
};

static int park_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	(void)bctx;
	geo->block_size = BS;
	return 0;
}

static void park_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	(void)bctx;
	if (cb)
		cb(cb_arg, 0);
}

static void park_submit(void *bctx, struct scsitgt_io *io)
{
	struct park *pk = bctx;

	uv_mutex_lock(&pk->lock);
	if (pk->n == MAX_PARKED) {
		uv_mutex_unlock(&pk->lock);
		scsitgt_io_complete(io, -EIO);
		return;
	}
	pk->ios[pk->n++] = io;
	atomic_fetch_add(&pk->parked, 1);
	uv_mutex_unlock(&pk->lock);
}

static const struct scsitgt_backend_ops park_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "park",
	.open = park_open,
	.close = park_close,
	.submit = park_submit,
	.flags = SCSITGT_BACKEND_MULTI_LOOP,
};

/* Complete (GOOD) the parked ios of @loop, at most @max of them; how many. */
static unsigned int park_release(struct park *pk, uv_loop_t *loop, unsigned int max)
{
	unsigned int done = 0, keep = 0;

	uv_mutex_lock(&pk->lock);
	for (unsigned int i = 0; i < pk->n; i++) {
		struct scsitgt_io *io = pk->ios[i];

		if (done < max && scsitgt_io_get_loop(io) == loop) {
			atomic_fetch_sub(&pk->parked, 1);
			scsitgt_io_complete_threadsafe(io, 0);
			done++;
		} else {
			pk->ios[keep++] = io;
		}
	}
	pk->n = keep;
	uv_mutex_unlock(&pk->lock);
	return done;
}

/* One nexus on one shard; its commands' outcomes (written on that shard's thread). */
struct stream {
	struct scsitgt__session *sess;
	struct scsitgt__shard *shard;
	struct scsitgt__msg issue_msg;
	unsigned int batch; /* READs the next issue_msg starts */
	unsigned int tag;
	atomic_uint rounds; /* issue_msg runs finished */
	atomic_uint good, full, bad;
};

/* The command's outcome is counted after it is gone: home may destroy the session once the
 * counts say so (the atomic is what orders the worker's last writes before home's reads). */
static void s_cmd_done(struct scsitgt__cmd *cmd)
{
	struct stream *s = cmd->sess->fabric_ctx;
	atomic_uint *outcome;

	if (cmd->shard != s->shard)
		outcome = &s->bad;
	else if (cmd->status == SAM_STAT_GOOD)
		outcome = &s->good;
	else if (cmd->status == SAM_STAT_TASK_SET_FULL && cmd->sense_len == 0)
		outcome = &s->full;
	else
		outcome = &s->bad;
	scsitgt__cmd_destroy(cmd);
	atomic_fetch_add(outcome, 1);
}

static void s_cmd_aborted(struct scsitgt__cmd *cmd)
{
	struct stream *s = cmd->sess->fabric_ctx;

	scsitgt__cmd_destroy(cmd);
	atomic_fetch_add(&s->bad, 1);
}

static void s_session_shutdown(struct scsitgt__session *sess)
{
	(void)sess;
	fail_msg("no session is shut down while the test runs");
}

static const struct scsitgt__fabric_ops s_ops = {
	.name = "lun-limit-test",
	.cmd_done = s_cmd_done,
	.cmd_aborted = s_cmd_aborted,
	.session_shutdown = s_session_shutdown,
};

/* On the stream's loop: start its batch of READ (10)s of one block on LUN 0. */
static void s_issue(struct scsitgt__msg *msg)
{
	struct stream *s = scsitgt__container_of(msg, struct stream, issue_msg);

	for (unsigned int i = 0; i < s->batch; i++) {
		struct scsitgt__cmd *cmd;
		uint8_t cdb[10] = { 0 }, lun[8];

		if (scsitgt__cmd_create(&cmd, s->sess, 0) < 0) {
			atomic_fetch_add(&s->bad, 1);
			continue;
		}
		cdb[0] = SBC_READ_10; /* SBC-4 §5.16 */
		put_be32(&cdb[2], s->tag);
		put_be16(&cdb[7], 1);
		scsitgt__lun_encode(0, lun);
		scsitgt__cmd_setup(cmd, lun, cdb, sizeof(cdb), 0, s->tag++);
		scsitgt__cmd_execute(cmd);
	}
	atomic_fetch_add(&s->rounds, 1);
}

struct rig {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_lun *lun;
	struct park pk;
	struct stream home, a, b;
};

static void stream_init(struct rig *r, struct stream *s, unsigned int shard)
{
	struct scsitgt__nexus_info ni;
	char port[128];

	snprintf(port, sizeof(port), "iqn.2026-12.org.libscsitgt:init%u,i,0x23d00000000%u", shard,
		 shard);
	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = "iqn.2026-12.org.libscsitgt:init";
	ni.initiator_port = port;
	ni.target_port = "iqn.2026-12.org.libscsitgt:limit,t,0x0001";
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	ni.shard = shard;
	assert_int_equal(scsitgt__session_create(&s->sess, r->tgt, &ni, &s_ops, s), 0);
	s->sess->ua_no_power_on = true;
	s->shard = &r->engine->shards[shard];
	s->issue_msg.fn = s_issue;
}

/* Run home's loop until @c holds; bounded (the machine may be loaded, so generously). */
#define WAIT_FOR(r, c)                                     \
	do {                                               \
		unsigned int spins_ = 0;                   \
		while (!(c)) {                             \
			assert_true(++spins_ < 200000);    \
			uv_run(&(r)->loop, UV_RUN_NOWAIT); \
			if (spins_ > 100)                  \
				uv_sleep(1);               \
		}                                          \
	} while (0)

/* Start @n READs on @s's loop (home: right here) and wait until they are issued. */
static void start(struct rig *r, struct stream *s, unsigned int n)
{
	unsigned int round = atomic_load(&s->rounds) + 1;

	s->batch = n;
	if (s->shard->index == 0)
		s_issue(&s->issue_msg);
	else
		scsitgt__shard_post(s->shard, &s->issue_msg);
	WAIT_FOR(r, atomic_load(&s->rounds) == round);
}

static unsigned int over_shares(const struct rig *r)
{
	return atomic_load(&r->lun->over_shares);
}

static void cb_count(void *arg, int status)
{
	assert_int_equal(status, 0);
	(*(int *)arg)++;
}

static void test_limit_across_shards(void **state)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct rig *r = calloc(1, sizeof(*r));
	int gone = 0;

	(void)state;
	assert_non_null(r);
	assert_int_equal(uv_loop_init(&r->loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = NWORKERS;
	assert_int_equal(scsitgt_engine_create(&r->engine, &r->loop, &eo), 0);
	assert_int_equal(r->engine->nshards, NWORKERS + 1);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2026-12.org.libscsitgt:limit";
	to.max_lun_commands = LIMIT;
	assert_int_equal(scsitgt_target_create(&r->tgt, r->engine, &to), 0);
	assert_int_equal(uv_mutex_init(&r->pk.lock), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = 0;
	lo.block_size = BS;
	lo.num_blocks = 4096;
	lo.backend = &park_ops;
	lo.backend_ctx = &r->pk;
	assert_int_equal(scsitgt_lun_create(&r->lun, r->tgt, &lo), 0);
	stream_init(r, &r->home, 0);
	stream_init(r, &r->a, 1);
	stream_init(r, &r->b, 2);

	/* A holds 3 of the 4: above its share. */
	start(r, &r->a, 3);
	WAIT_FOR(r, atomic_load(&r->pk.parked) == 3);
	assert_int_equal(over_shares(r), 1);
	/* Home, below its share, makes 4: still within the limit. */
	start(r, &r->home, 1);
	WAIT_FOR(r, atomic_load(&r->pk.parked) == 4);
	/* B, below its share too, would make 5: refused, though its own part holds nothing. */
	start(r, &r->b, 1);
	WAIT_FOR(r, atomic_load(&r->b.full) == 1);
	assert_int_equal(atomic_load(&r->pk.parked), 4);
	/* One of A's ends (A still above its share): room for exactly one more. */
	assert_int_equal(park_release(&r->pk, r->a.shard->loop, 1), 1);
	WAIT_FOR(r, atomic_load(&r->a.good) == 1);
	assert_int_equal(over_shares(r), 1);
	start(r, &r->b, 2);
	WAIT_FOR(r, atomic_load(&r->b.full) == 2 && atomic_load(&r->pk.parked) == 4);
	/* All end: no part is above its share any more. */
	assert_int_equal(park_release(&r->pk, r->a.shard->loop, MAX_PARKED), 2);
	assert_int_equal(park_release(&r->pk, r->b.shard->loop, MAX_PARKED), 1);
	assert_int_equal(park_release(&r->pk, r->home.shard->loop, MAX_PARKED), 1);
	WAIT_FOR(r, atomic_load(&r->a.good) == 3 && atomic_load(&r->b.good) == 1 &&
			    atomic_load(&r->home.good) == 1);
	assert_int_equal(over_shares(r), 0);
	assert_int_equal(scsitgt__lun_inflight(r->lun), 0);

	/* Home above its share while the total is below the limit: let in; then the others
	 * fill the limit and the next is refused. */
	start(r, &r->home, 3);
	WAIT_FOR(r, atomic_load(&r->pk.parked) == 3);
	assert_int_equal(over_shares(r), 1);
	start(r, &r->b, 1);
	WAIT_FOR(r, atomic_load(&r->pk.parked) == 4);
	start(r, &r->a, 1);
	WAIT_FOR(r, atomic_load(&r->a.full) == 1);
	assert_int_equal(park_release(&r->pk, r->home.shard->loop, MAX_PARKED), 3);
	assert_int_equal(park_release(&r->pk, r->b.shard->loop, MAX_PARKED), 1);
	WAIT_FOR(r, atomic_load(&r->home.good) == 4 && atomic_load(&r->b.good) == 2);
	assert_int_equal(over_shares(r), 0);
	/* Two shards at their share each (1 + 1 of 4), then a third: nobody is refused. */
	start(r, &r->a, 1);
	start(r, &r->b, 1);
	start(r, &r->home, 1);
	WAIT_FOR(r, atomic_load(&r->pk.parked) == 3);
	assert_int_equal(over_shares(r), 0);
	assert_int_equal(park_release(&r->pk, r->a.shard->loop, MAX_PARKED), 1);
	assert_int_equal(park_release(&r->pk, r->b.shard->loop, MAX_PARKED), 1);
	assert_int_equal(park_release(&r->pk, r->home.shard->loop, MAX_PARKED), 1);
	WAIT_FOR(r, atomic_load(&r->a.good) == 4 && atomic_load(&r->b.good) == 3 &&
			    atomic_load(&r->home.good) == 5);

	assert_int_equal(atomic_load(&r->a.full), 1);
	assert_int_equal(atomic_load(&r->b.full), 2);
	assert_int_equal(atomic_load(&r->home.full), 0);
	assert_int_equal(
		atomic_load(&r->a.bad) + atomic_load(&r->b.bad) + atomic_load(&r->home.bad), 0);
	assert_int_equal(over_shares(r), 0);
	scsitgt__session_destroy(r->a.sess);
	scsitgt__session_destroy(r->b.sess);
	scsitgt__session_destroy(r->home.sess);
	scsitgt_engine_destroy(r->engine, cb_count, &gone);
	uv_run(&r->loop, UV_RUN_DEFAULT);
	assert_int_equal(gone, 1);
	assert_int_equal(uv_loop_close(&r->loop), 0);
	uv_mutex_destroy(&r->pk.lock);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit_across_shards),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
