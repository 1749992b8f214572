/* SPDX-License-Identifier: MIT */
/*
 * The fault-injection backend is transparent for every op it does not inject into
 * (backend_fault.h): around a recording backend that has every op, each op of the wrapper's
 * table reaches it with its own context and arguments, and its answer comes back; around one
 * that has only the required ops, the optional ones stay absent (NULL: the core emulates or
 * refuses). Through the core with an `error@all` rule in place: a LOGICAL UNIT RESET reaches
 * the backend's reset_async() and is answered only once it calls back (as the RBD backend
 * does after telling the other gateways), and scsitgt_lun_resize_medium() reaches its
 * get_size() and resize(). Before the wrapper passed reset_async, get_size and resize on, the
 * reset was answered without the backend and both resizes answered -ENOTSUP.
 */
#include <errno.h>

#include "test_util.h"

#include "core/scsi_spec.h"
#include "libscsitgt/backend_fault.h"

#define REC_BLOCKS 1024u
#define REC_CTX_SIZE 40u

/* A backend that records every call it gets. */
struct rec {
	unsigned int opens, closes, submits, supports, lba_status, aborts, resets, reset_asyncs;
	unsigned int get_sizes, resizes, detaches;
	void *last_ctx;	    /* the context of the last call */
	uint64_t size;	    /* what get_size() answers */
	uint64_t resize_to; /* the last resize() argument */
	int resize_rc;	    /* what resize() answers */
	bool reset_inline;  /* reset_async() calls back from inside */
	scsitgt_done_cb reset_cb;
	void *reset_arg;
	struct scsitgt_lun *detached;
};

static int rec_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct rec *r = bctx;

	r->opens++;
	r->last_ctx = bctx;
	geo->block_size = 512;
	geo->num_blocks = REC_BLOCKS;
	return 0;
}

static void rec_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct rec *r = bctx;

	r->closes++;
	r->last_ctx = bctx;
	if (cb)
		cb(cb_arg, 0);
}

static void rec_submit(void *bctx, struct scsitgt_io *io)
{
	struct rec *r = bctx;

	r->submits++;
	r->last_ctx = bctx;
	scsitgt_io_complete(io, 0);
}

static bool rec_supports(void *bctx, enum scsitgt_io_type type)
{
	struct rec *r = bctx;

	r->supports++;
	r->last_ctx = bctx;
	return type == SCSITGT_IO_FLUSH;
}

static int rec_get_lba_status(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out)
{
	struct rec *r = bctx;

	r->lba_status++;
	r->last_ctx = bctx;
	*num_blocks_out = REC_BLOCKS - lba;
	*mapped_out = false;
	return 0;
}

static void rec_abort(void *bctx, struct scsitgt_io *io)
{
	struct rec *r = bctx;

	(void)io;
	r->aborts++;
	r->last_ctx = bctx;
}

static void rec_reset(void *bctx)
{
	struct rec *r = bctx;

	r->resets++;
	r->last_ctx = bctx;
}

static void rec_reset_async(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct rec *r = bctx;

	r->reset_asyncs++;
	r->last_ctx = bctx;
	if (r->reset_inline) {
		cb(cb_arg, 0);
		return;
	}
	r->reset_cb = cb;
	r->reset_arg = cb_arg;
}

static int rec_get_size(void *bctx, uint64_t *num_blocks_out)
{
	struct rec *r = bctx;

	r->get_sizes++;
	r->last_ctx = bctx;
	*num_blocks_out = r->size;
	return 0;
}

static int rec_resize(void *bctx, uint64_t num_blocks)
{
	struct rec *r = bctx;

	r->resizes++;
	r->last_ctx = bctx;
	r->resize_to = num_blocks;
	return r->resize_rc;
}

static void rec_detach(void *bctx, struct scsitgt_lun *lun)
{
	struct rec *r = bctx;

	r->detaches++;
	r->last_ctx = bctx;
	r->detached = lun;
}

static const struct scsitgt_backend_ops rec_full_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "rec",
	.io_ctx_size = REC_CTX_SIZE,
	.open = rec_open,
	.close = rec_close,
	.submit = rec_submit,
	.supports = rec_supports,
	.get_lba_status = rec_get_lba_status,
	.abort = rec_abort,
	.reset = rec_reset,
	.reset_async = rec_reset_async,
	.get_size = rec_get_size,
	.resize = rec_resize,
	.flags = SCSITGT_BACKEND_MULTI_LOOP,
	.detach = rec_detach,
};

/* Only what backend.h requires. */
static const struct scsitgt_backend_ops rec_min_ops = {
	.size = sizeof(struct scsitgt_backend_ops),
	.name = "recmin",
	.open = rec_open,
	.close = rec_close,
	.submit = rec_submit,
};

static void done_cb(void *arg, int status)
{
	*(int *)arg = status;
}

/* Each op of the wrapper's table, called as the core calls it, reaches the wrapped backend
 * with the wrapped context; what it answers comes back unchanged. */
static void test_every_op_reaches_inner(void **state)
{
	const struct scsitgt_backend_ops *ops;
	struct scsitgt_lun_geometry geo = { .size = sizeof(geo) };
	struct scsitgt_fault_stats st = { .size = sizeof(st) };
	struct rec r = { .size = 3000, .resize_rc = -ENOSPC };
	struct scsitgt_lun *fake_lun = (struct scsitgt_lun *)&r;
	uv_loop_t loop;
	uint64_t n = 0;
	bool mapped = true;
	int status = 1, closed = 1;
	void *f;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_backend_fault_create(&f, &loop, &rec_full_ops, &r), 0);
	/* Rules act on ios only. */
	assert_int_equal(scsitgt_backend_fault_add_spec(f, "error@all"), 1);
	ops = scsitgt_backend_fault_ops(f);
	assert_string_equal(ops->name, "rec");
	assert_int_equal(ops->io_ctx_size, REC_CTX_SIZE);
	assert_int_equal(ops->flags, SCSITGT_BACKEND_MULTI_LOOP);

	assert_int_equal(ops->open(f, &geo), 0);
	assert_int_equal(r.opens, 1);
	assert_int_equal(geo.num_blocks, REC_BLOCKS);

	assert_non_null(ops->supports);
	assert_true(ops->supports(f, SCSITGT_IO_FLUSH));
	assert_false(ops->supports(f, SCSITGT_IO_UNMAP));
	assert_int_equal(r.supports, 2);

	assert_non_null(ops->get_lba_status);
	assert_int_equal(ops->get_lba_status(f, 24, &n, &mapped), 0);
	assert_int_equal(r.lba_status, 1);
	assert_int_equal(n, REC_BLOCKS - 24);
	assert_false(mapped);

	r.last_ctx = NULL;
	assert_non_null(ops->get_size);
	n = 0;
	assert_int_equal(ops->get_size(f, &n), 0);
	assert_int_equal(r.get_sizes, 1);
	assert_int_equal(n, 3000);
	assert_ptr_equal(r.last_ctx, &r);

	r.last_ctx = NULL;
	assert_non_null(ops->resize);
	assert_int_equal(ops->resize(f, 5000), -ENOSPC);
	assert_int_equal(r.resizes, 1);
	assert_int_equal(r.resize_to, 5000);
	assert_ptr_equal(r.last_ctx, &r);

	/* reset_async: the wrapped backend's callback is the core's. */
	r.last_ctx = NULL;
	assert_non_null(ops->reset_async);
	ops->reset_async(f, done_cb, &status);
	assert_int_equal(r.reset_asyncs, 1);
	assert_ptr_equal(r.last_ctx, &r);
	assert_int_equal(status, 1);
	r.reset_cb(r.reset_arg, -EAGAIN);
	assert_int_equal(status, -EAGAIN);

	r.last_ctx = NULL;
	assert_non_null(ops->reset);
	ops->reset(f);
	assert_int_equal(r.resets, 1);
	assert_ptr_equal(r.last_ctx, &r);
	/* Both kinds of reset are counted; no rule fired on any of these. */
	assert_int_equal(scsitgt_backend_fault_get_stats(f, &st), 0);
	assert_int_equal(st.resets, 2);
	assert_int_equal(st.submitted, 0);
	assert_int_equal(st.errors, 0);

	r.last_ctx = NULL;
	assert_non_null(ops->detach);
	ops->detach(f, fake_lun);
	assert_int_equal(r.detaches, 1);
	assert_ptr_equal(r.detached, fake_lun);
	assert_ptr_equal(r.last_ctx, &r);

	assert_non_null(ops->abort);
	ops->close(f, done_cb, &closed);
	assert_int_equal(r.closes, 1);
	assert_int_equal(closed, 0);
	/* Nothing else was called on the way. */
	assert_int_equal(r.submits + r.aborts, 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* An optional op the wrapped backend lacks is absent from the wrapper too; abort and reset,
 * the wrapper's own, are there and call nothing of the wrapped backend. */
static void test_absent_stays_absent(void **state)
{
	const struct scsitgt_backend_ops *ops;
	struct scsitgt_fault_stats st = { .size = sizeof(st) };
	struct rec r = { 0 };
	uv_loop_t loop;
	void *f;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(scsitgt_backend_fault_create(&f, &loop, &rec_min_ops, &r), 0);
	ops = scsitgt_backend_fault_ops(f);
	assert_null(ops->supports);
	assert_null(ops->get_lba_status);
	assert_null(ops->reset_async);
	assert_null(ops->get_size);
	assert_null(ops->resize);
	assert_null(ops->detach);
	assert_int_equal(ops->flags, 0);
	assert_int_equal(ops->io_ctx_size, 0);
	assert_non_null(ops->abort);
	assert_non_null(ops->reset);
	ops->reset(f);
	assert_int_equal(scsitgt_backend_fault_get_stats(f, &st), 0);
	assert_int_equal(st.resets, 1);
	assert_int_equal(r.resets + r.reset_asyncs, 0);
	assert_int_equal(scsitgt_backend_fault_destroy(f), 0);
	assert_int_equal(r.closes, 1);
	assert_int_equal(uv_loop_close(&loop), 0);
}

struct world {
	struct loop_fabric *lf;
	struct scsitgt_lun *lun;
	void *fault;
};

static void world_create(struct world *w, const struct scsitgt_backend_ops *inner, struct rec *r)
{
	struct scsitgt_lun_opts lo;

	assert_int_equal(loop_fabric_create(&w->lf, NULL), 0);
	assert_int_equal(scsitgt_backend_fault_create(&w->fault, &w->lf->loop, inner, r), 0);
	assert_int_equal(scsitgt_backend_fault_add_spec(w->fault, "error@all"), 1);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = scsitgt_backend_fault_ops(w->fault);
	lo.backend_ctx = w->fault;
	assert_int_equal(scsitgt_lun_create(&w->lun, w->lf->tgt, &lo), 0);
}

static void tmf_resp(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

/* A LOGICAL UNIT RESET of a fault-wrapped LUN reaches the backend's reset_async() and is
 * answered only when the backend calls back (the RBD backend: once the other gateways know). */
static void test_lun_reset_reaches_backend(void **state)
{
	struct scsitgt_fault_stats st = { .size = sizeof(st) };
	struct rec r = { 0 };
	struct world w;
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	world_create(&w, &rec_full_ops, &r);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(w.lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(r.reset_asyncs, 1);
	assert_int_equal(r.resets, 0);
	assert_non_null(r.reset_cb);
	/* Not answered while the backend holds the reset. */
	uv_run(&w.lf->loop, UV_RUN_NOWAIT);
	assert_int_equal(resp, -1);
	r.reset_cb(r.reset_arg, 0);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* A backend done inside the call: answered at once. */
	resp = -1;
	r.reset_inline = true;
	scsitgt__tmf_execute(w.lf->sess, SCSITGT__TMF_LUN_RESET, lun, 0, tmf_resp, &resp);
	assert_int_equal(r.reset_asyncs, 2);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_int_equal(scsitgt_backend_fault_get_stats(w.fault, &st), 0);
	assert_int_equal(st.resets, 2);
	assert_int_equal(r.resets, 0);
	loop_fabric_destroy(w.lf);
	assert_int_equal(r.detaches, 1);
	assert_int_equal(r.closes, 1);
}

/* scsitgt_lun_resize_medium() of a fault-wrapped LUN asks the backend for its size and has it
 * resize the medium; initiators see the new capacity. */
static void test_resize_medium_reaches_backend(void **state)
{
	struct rec r = { .size = 3000 };
	struct lf_result res = { 0 };
	uint8_t cdb[CDB_BUF];
	uint64_t now = 0;
	struct world w;

	(void)state;
	world_create(&w, &rec_full_ops, &r);
	assert_int_equal(scsitgt_lun_resize_medium(w.lun, 0, 0, &now), 0);
	assert_int_equal(r.get_sizes, 1);
	assert_int_equal(now, 3000);
	assert_int_equal(scsitgt_lun_resize_medium(w.lun, 6000, 0, &now), 0);
	assert_int_equal(r.resizes, 1);
	assert_int_equal(r.resize_to, 6000);
	assert_int_equal(now, 6000);
	/* A refusal of the backend comes back too, and the capacity stays. */
	r.resize_rc = -ENOSPC;
	assert_int_equal(scsitgt_lun_resize_medium(w.lun, 9000, 0, &now), -ENOSPC);
	assert_int_equal(now, 6000);
	/* READ CAPACITY (after the unit attention of the change): last LBA 5999. */
	loop_fabric_run(w.lf, 0, cdb, cdb_read_capacity10(cdb, 0, false), NULL, 0, &res);
	assert_sense(&res, SENSE_UNIT_ATTENTION, 0x2a, 0x09);
	lf_result_clear(&res);
	loop_fabric_run(w.lf, 0, cdb, cdb_read_capacity10(cdb, 0, false), NULL, 0, &res);
	assert_good(&res);
	assert_int_equal(res.data_len, 8);
	assert_int_equal(get_be32(res.data), 5999);
	lf_result_clear(&res);
	loop_fabric_destroy(w.lf);
}

/* Around a backend without them, the same calls are refused as on the bare backend. */
static void test_resize_medium_absent(void **state)
{
	struct rec r = { .size = 3000 };
	uint64_t now = 0;
	struct world w;

	(void)state;
	world_create(&w, &rec_min_ops, &r);
	assert_int_equal(scsitgt_lun_resize_medium(w.lun, 0, 0, &now), -ENOTSUP);
	assert_int_equal(scsitgt_lun_resize_medium(w.lun, 6000, 0, &now), -ENOTSUP);
	assert_int_equal(now, REC_BLOCKS);
	assert_int_equal(r.get_sizes + r.resizes, 0);
	loop_fabric_destroy(w.lf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_op_reaches_inner),
		cmocka_unit_test(test_absent_stays_absent),
		cmocka_unit_test(test_lun_reset_reaches_backend),
		cmocka_unit_test(test_resize_medium_reaches_backend),
		cmocka_unit_test(test_resize_medium_absent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
