/* SPDX-License-Identifier: MIT */
/* The two-shard test world of xshard_world.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka needs the headers above first. */
#include <cmocka.h>

#include "cdb_build.h"
#include "core/scsi_spec.h"
#include "core/shard.h"
#include "util/be.h"
#include "xshard_world.h"

bool xw_on_home(const struct xw_world *w)
{
	uv_thread_t self = uv_thread_self();

	return uv_thread_equal(&w->home, &self);
}

static void wake_fn(struct scsitgt__msg *msg)
{
	struct xw_wake *k = (struct xw_wake *)msg;

	atomic_store(k->flag, k->value);
}

void xw_wake_home(struct xw_world *w, struct xw_wake *k, _Atomic int *flag, int value)
{
	k->msg.fn = wake_fn;
	k->flag = flag;
	k->value = value;
	scsitgt__engine_post(w->engine, &k->msg);
}

void xw_wait_flag(struct xw_world *w, _Atomic int *flag)
{
	while (atomic_load(flag) == 0)
		uv_run(&w->loop, UV_RUN_ONCE);
}

/* The end of a command, on its own thread: what came back, then the waiter is told (a
 * message to home, or the semaphore of a waiter on another thread); @x is the waiter's again
 * once told, so nothing of it is read after. */
static void x_end(struct scsitgt__cmd *cmd, int how)
{
	struct xw_cmd *x = *(struct xw_cmd **)scsitgt__cmd_fabric_priv(cmd);
	struct xw_world *w = x->w;
	const uint8_t *din = scsitgt__cmd_data_in(cmd);

	x->status = cmd->status;
	memcpy(x->sense, cmd->sense, cmd->sense_len);
	x->din_len = cmd->data_len < sizeof(x->din) ? cmd->data_len : sizeof(x->din);
	if (din && x->din_len)
		memcpy(x->din, din, x->din_len);
	x->lent = cmd->lent_data != NULL;
	scsitgt__cmd_destroy(cmd);
	if (x->at_end)
		x->at_end(x);
	atomic_store(&x->ended_on_home, xw_on_home(w));
	atomic_store(&x->finished, true);
	if (x->wake_home) {
		xw_wake_home(w, &x->wake, &x->ended, how);
		return;
	}
	atomic_store(&x->ended, how);
	uv_sem_post(&x->done);
}

static void x_done(struct scsitgt__cmd *cmd)
{
	x_end(cmd, XW_DONE);
}

static void x_aborted(struct scsitgt__cmd *cmd)
{
	x_end(cmd, XW_ABORTED);
}

static void x_unit_attention(struct scsitgt__session *sess, uint64_t lun_id,
			     enum scsitgt__sense_reason reason)
{
	struct xw_world *w = sess->fabric_ctx;

	(void)lun_id;
	(void)reason;
	atomic_fetch_add(&w->uas, 1);
	if (!xw_on_home(w))
		atomic_fetch_add(&w->uas_off_home, 1);
}

static void x_session_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops x_ops = {
	.name = "xshard_world",
	.cmd_done = x_done,
	.cmd_aborted = x_aborted,
	.session_shutdown = x_session_shutdown,
	.unit_attention = x_unit_attention,
};

/* Create, set up and (unless x->wait_data) execute @x on the calling thread, its nexus's. */
static void x_start_here(struct xw_cmd *x)
{
	struct scsitgt__cmd *cmd;
	uint8_t lun[8];

	scsitgt__lun_encode(x->lun_id, lun);
	assert_int_equal(scsitgt__cmd_create(&cmd, x->sess, sizeof(x)), 0);
	*(struct xw_cmd **)scsitgt__cmd_fabric_priv(cmd) = x;
	scsitgt__cmd_setup(cmd, lun, x->cdb, x->cdb_len, x->attr ? x->attr : 1,
			   (uint64_t)(uintptr_t)x);
	if (x->wait_data)
		return;
	if (cmd->state == SCSITGT__CMD_NEED_DATA)
		memcpy(cmd->buf, x->dout,
		       x->dout_len < cmd->xfer_len ? x->dout_len : cmd->xfer_len);
	scsitgt__cmd_execute(cmd);
}

static void x_start_msg(struct scsitgt__msg *msg)
{
	struct xw_cmd *x = (struct xw_cmd *)msg;

	x_start_here(x);
	uv_sem_post(&x->started);
}

void xw_start(struct xw_world *w, struct xw_cmd *x)
{
	x->w = w;
	x->wake_home = xw_on_home(w);
	atomic_init(&x->ended, XW_RUNNING);
	atomic_init(&x->ended_on_home, false);
	atomic_init(&x->finished, false);
	if (!x->wake_home)
		assert_int_equal(uv_sem_init(&x->done, 0), 0);
	if (x->sess->shard->index == 0) {
		/* home's commands run on the thread that runs the home loop */
		assert_true(x->wake_home);
		x_start_here(x);
		return;
	}
	assert_int_equal(uv_sem_init(&x->started, 0), 0);
	x->msg.fn = x_start_msg;
	scsitgt__worker_post(x->sess->shard->worker, &x->msg);
	uv_sem_wait(&x->started);
	uv_sem_destroy(&x->started);
}

uint8_t xw_wait(struct xw_world *w, struct xw_cmd *x)
{
	if (x->wake_home) {
		xw_wait_flag(w, &x->ended);
	} else {
		uv_sem_wait(&x->done);
		uv_sem_destroy(&x->done);
	}
	return x->status;
}

uint8_t xw_run(struct xw_world *w, struct xw_cmd *x)
{
	xw_start(w, x);
	return xw_wait(w, x);
}

bool xw_finished(const struct xw_cmd *x)
{
	return atomic_load(&x->finished);
}

/* The worker has run every message posted to it before this one. */
struct sync_msg {
	struct scsitgt__msg msg;
	uv_sem_t sem;
};

static void sync_there(struct scsitgt__msg *msg)
{
	uv_sem_post(&((struct sync_msg *)msg)->sem);
}

void xw_settle(struct xw_world *w)
{
	for (int i = 0; i < 4; i++) {
		struct sync_msg s;

		assert_int_equal(uv_sem_init(&s.sem, 0), 0);
		s.msg.fn = sync_there;
		scsitgt__worker_post(w->engine->shards[1].worker, &s.msg);
		uv_sem_wait(&s.sem);
		uv_sem_destroy(&s.sem);
		uv_run(&w->loop, UV_RUN_NOWAIT);
	}
}

void xw_cmd_init(struct xw_cmd *x, struct scsitgt__session *s, uint8_t op, size_t cdb_len)
{
	memset(x, 0, sizeof(*x));
	x->sess = s;
	x->cdb[0] = op;
	x->cdb_len = cdb_len;
}

void xw_rw10(struct xw_cmd *x, struct scsitgt__session *s, uint8_t op, uint32_t lba,
	     uint16_t blocks)
{
	xw_cmd_init(x, s, op, 10);
	put_be32(&x->cdb[2], lba);
	put_be16(&x->cdb[7], blocks);
	if (op == SBC_WRITE_10) {
		assert_true((size_t)blocks * 512 <= sizeof(x->dout));
		x->dout_len = (size_t)blocks * 512;
	}
}

void xw_caw(struct xw_cmd *x, struct scsitgt__session *s, uint64_t lba, uint8_t fill)
{
	xw_cmd_init(x, s, SBC_COMPARE_AND_WRITE, 16);
	cdb_caw(x->cdb, lba, 1, 0);
	memset(x->dout + 512, fill, 512);
	x->dout_len = 2 * 512;
}

uint8_t xw_run_tur(struct xw_world *w, struct scsitgt__session *s, struct xw_cmd *x)
{
	xw_cmd_init(x, s, SPC_TEST_UNIT_READY, 6);
	return xw_run(w, x);
}

void xw_pr_out(struct xw_cmd *x, struct scsitgt__session *s, uint8_t sa, uint8_t type, uint64_t key,
	       uint64_t sa_key)
{
	xw_cmd_init(x, s, SPC_PERSISTENT_RESERVE_OUT, 10);
	x->cdb[1] = sa;
	x->cdb[2] = type;
	put_be32(&x->cdb[5], 24);
	put_be64(&x->dout[0], key);
	put_be64(&x->dout[8], sa_key);
	x->dout_len = 24;
}

uint8_t xw_run_report_luns(struct xw_world *w, struct scsitgt__session *s, uint32_t alloc,
			   struct xw_cmd *x)
{
	xw_cmd_init(x, s, SPC_REPORT_LUNS, 12);
	put_be32(&x->cdb[6], alloc);
	return xw_run(w, x);
}

uint8_t xw_run_pr_out(struct xw_world *w, struct scsitgt__session *s, uint8_t sa, uint8_t type,
		      uint64_t key, uint64_t sa_key, struct xw_cmd *x)
{
	xw_pr_out(x, s, sa, type, key, sa_key);
	return xw_run(w, x);
}

uint8_t xw_sense_key(const struct xw_cmd *x)
{
	return x->sense[2] & 0x0f;
}

void xw_assert_ua(const struct xw_cmd *x, uint8_t asc, uint8_t ascq)
{
	assert_int_equal(x->status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(xw_sense_key(x), 0x06);
	assert_int_equal(x->sense[12], asc);
	assert_int_equal(x->sense[13], ascq);
}

struct xw_answer xw_answer_of(const struct xw_cmd *x)
{
	struct xw_answer a = { .status = x->status };

	if (x->status == SAM_STAT_CHECK_CONDITION) {
		a.key = xw_sense_key(x);
		a.asc = x->sense[12];
		a.ascq = x->sense[13];
	}
	return a;
}

/* The stream's thread: no assert here (see xshard_world.h), only counts. */
static void stream_main(void *arg)
{
	struct xw_stream *s = arg;
	struct xw_cmd x;

	for (unsigned int i = 0; i < s->n; i++) {
		unsigned int kind;

		memset(&x, 0, sizeof(x));
		x.sess = s->w->b;
		s->fill(s, &x, i);
		xw_run(s->w, &x);
		kind = s->judge(s, &x);
		if (kind >= XW_STREAM_KINDS) {
			s->bad_kinds++;
			continue;
		}
		if (s->count[kind]++ == 0)
			s->first[kind] = xw_answer_of(&x);
	}
	atomic_store(&s->done, 1);
}

void xw_stream_start(struct xw_world *w, struct xw_stream *s)
{
	assert_true(xw_on_home(w));
	s->w = w;
	atomic_init(&s->done, 0);
	assert_int_equal(uv_thread_create(&s->thread, stream_main, s), 0);
}

bool xw_stream_done(const struct xw_stream *s)
{
	return atomic_load(&s->done) != 0;
}

void xw_stream_join(struct xw_stream *s)
{
	assert_int_equal(uv_thread_join(&s->thread), 0);
	assert_true(xw_stream_done(s));
	if (s->bad_kinds)
		fail_msg("the stream's judge answered %u kinds out of range", s->bad_kinds);
}

void xw_stream_assert_none_at(const struct xw_stream *s, unsigned int kind, const char *what,
			      const char *file, int line)
{
	const struct xw_answer *a = &s->first[kind];

	assert_true(kind < XW_STREAM_KINDS);
	if (s->count[kind] == 0)
		return;
	print_error("ERROR: %u of %u answers %s; the first: status 0x%02x, sense %02x/%02x/%02x\n",
		    s->count[kind], s->n, what, a->status, a->key, a->asc, a->ascq);
	_fail(file, line);
}

struct scsitgt__session *xw_nexus(struct xw_world *w, const char *port, unsigned int shard)
{
	struct scsitgt__session *s = xw_nexus_new(w, port, shard);
	struct xw_cmd x;

	/* the first command meets POWER ON (SAM-5 §5.14) */
	xw_run_tur(w, s, &x);
	assert_int_equal(xw_run_tur(w, s, &x), SAM_STAT_GOOD);
	return s;
}

struct scsitgt__session *xw_nexus_new(struct xw_world *w, const char *port, unsigned int shard)
{
	struct scsitgt__nexus_info ni;
	struct scsitgt__session *s;

	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = port;
	ni.initiator_port = port;
	ni.target_port = w->target_port;
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	ni.shard = shard;
	ni.lend_data_in = w->lend_data_in;
	assert_int_equal(scsitgt__session_create(&s, w->tgt, &ni, &x_ops, w), 0);
	return s;
}

void xw_world_create(struct xw_world **out, const char *name)
{
	struct xw_world *w = calloc(1, sizeof(*w));
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;

	assert_non_null(w);
	w->home = uv_thread_self();
	assert_int_equal(uv_loop_init(&w->loop), 0);
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.workers = 1;
	assert_int_equal(scsitgt_engine_create(&w->engine, &w->loop, &eo), 0);
	assert_true(w->engine->nshards == 2);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = name;
	assert_int_equal(scsitgt_target_create(&w->tgt, w->engine, &to), 0);
	assert_true((size_t)snprintf(w->target_port, sizeof(w->target_port), "%s,t,0x0001", name) <
		    sizeof(w->target_port));
	*out = w;
}

struct scsitgt_lun *xw_null_lun(struct xw_world *w, uint64_t id)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx;

	assert_int_equal(scsitgt_backend_null_create(&bctx), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_null_ops();
	lo.backend_ctx = bctx;
	assert_int_equal(scsitgt_lun_create(&lun, w->tgt, &lo), 0);
	return lun;
}

void xw_world_start(struct xw_world *w, const struct scsitgt_lun_opts *lo)
{
	if (lo) {
		assert_int_equal(scsitgt_lun_create(&w->lun, w->tgt, lo), 0);
		w->bctx = lo->backend_ctx;
	} else {
		w->lun = xw_null_lun(w, 0);
		w->bctx = NULL;
	}
	w->a = xw_nexus(w, XW_PORT_A, 0);
	w->b = xw_nexus(w, XW_PORT_B, 1);
}

void xw_world_start_fault(struct xw_world *w, const char *spec)
{
	struct scsitgt_lun_opts lo;
	void *ram, *fault;

	assert_int_equal(scsitgt_backend_ram_create(&ram), 0);
	assert_int_equal(
		scsitgt_backend_fault_create(&fault, &w->loop, scsitgt_backend_ram_ops(), ram), 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(fault, spec), 1);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.block_size = 512;
	lo.num_blocks = 2048;
	lo.backend = scsitgt_backend_fault_ops(fault);
	lo.backend_ctx = fault;
	xw_world_start(w, &lo);
}

struct scsitgt_fault_stats xw_fault_stats(const struct xw_world *w)
{
	struct scsitgt_fault_stats st = { .size = sizeof(st) };

	assert_int_equal(scsitgt_backend_fault_get_stats(w->bctx, &st), 0);
	return st;
}

int xw_teardown(void **state)
{
	xw_world_destroy(*state);
	return 0;
}

int xw_teardown_fault(void **state)
{
	struct xw_world *w = *state;

	if (w->bctx)
		scsitgt_backend_fault_release(w->bctx, 0, -EIO);
	xw_world_destroy(w);
	return 0;
}

static void lun_removed(void *arg, int status)
{
	(void)status;
	atomic_store((_Atomic int *)arg, 1);
}

void xw_lun_remove(struct xw_world *w)
{
	_Atomic int removed = 0;

	scsitgt_lun_destroy(w->lun, lun_removed, &removed);
	w->lun = NULL;
	xw_wait_flag(w, &removed);
}

static void engine_gone(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

void xw_world_destroy(struct xw_world *w)
{
	bool gone = false;

	if (w->b)
		scsitgt__session_destroy(w->b);
	if (w->a)
		scsitgt__session_destroy(w->a);
	scsitgt_engine_destroy(w->engine, engine_gone, &gone);
	while (!gone)
		uv_run(&w->loop, UV_RUN_ONCE);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&w->loop), 0);
	free(w);
}
