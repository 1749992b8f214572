/* SPDX-License-Identifier: MIT */
/*
 * Persistent reservations shared by two engines (two gateways) through a cluster store
 * (include/libscsitgt/pr.h): a fake in-memory store with a version, compare-and-swap commits,
 * delivery to the other engine, requests held until the test releases them (delays,
 * reordering) and injected errors.
 *
 * Gateway A's nexuses use relative target port 1, gateway B's port 2: one initiator reaching
 * the logical unit through both gateways has two I_T nexuses, as with ALUA.
 */
#include <errno.h>
#include <time.h>

#include "libscsitgt/pr.h"
#include "test_pr_common.h"

#define MAX_OPS 64

struct gw;

struct fop {
	bool commit;
	struct gw *gw;
	struct scsitgt_pr_req *req;
	uint8_t *data;
	size_t len;
	uint64_t version;
};

struct fstore {
	uint8_t *data;
	size_t len;
	uint64_t version;
	/* Requests waiting for fs_release() (all of them: the store never answers inside a
	 * call). */
	struct fop q[MAX_OPS];
	unsigned int nq;
	/* Injected: the next fetch / commit answer this error. always_stale: every commit. */
	int fetch_err, commit_err;
	bool always_stale;
	unsigned int nfetch, ncommit, nstale, ndelivered;
	struct gw *gws[2];
	unsigned int ngws;
};

struct gw {
	struct fstore *st;
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct scsitgt_lun *lun;
	/* Nexuses: initiator A, initiator B, an observer that never registers. */
	struct scsitgt__session *a, *b, *obs;
	struct lf_result r;
	bool detached;
	/* Its watch is broken: commits made elsewhere are not delivered to it. */
	bool cut;
	/* Its deliveries are announced (scsitgt_lun_start_pr_delivery(), as a watch callback on
	 * librados' thread) and wait for gw_apply_deliveries() (its loop, late). */
	bool defer;
	uint8_t *deferred[4];
	size_t deferred_len[4];
	unsigned int ndeferred;
	/* the store's recheck was asked (an expired lease) */
	unsigned int nrecheck;
	/* Its deliveries go through scsitgt_lun_apply_pr_state_async(): @nacked counts the
	 * callbacks (the acknowledgements an RBD gateway sends from them). */
	bool async;
	unsigned int nacked;
};

static void fs_fetch(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req)
{
	struct gw *g = arg;
	struct fstore *st = g->st;

	(void)lun;
	assert_true(st->nq < MAX_OPS);
	st->q[st->nq++] = (struct fop){ .commit = false, .gw = g, .req = req };
}

static void fs_commit(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
		      const void *data, size_t len, uint64_t version)
{
	struct gw *g = arg;
	struct fstore *st = g->st;
	struct fop *op;

	(void)lun;
	assert_true(st->nq < MAX_OPS);
	op = &st->q[st->nq++];
	*op = (struct fop){ .commit = true, .gw = g, .req = req, .len = len, .version = version };
	/* The data stays valid until the answer; keep a copy anyway to check that claim. */
	op->data = malloc(len);
	assert_non_null(op->data);
	memcpy(op->data, data, len);
	assert_memory_equal(op->data, data, len);
}

static void fs_detach(void *arg, struct scsitgt_lun *lun)
{
	(void)lun;
	((struct gw *)arg)->detached = true;
}

static void fs_recheck(void *arg, struct scsitgt_lun *lun)
{
	(void)lun;
	((struct gw *)arg)->nrecheck++;
}

static const struct scsitgt_pr_cluster_ops fs_ops = {
	.size = sizeof(struct scsitgt_pr_cluster_ops),
	.fetch = fs_fetch,
	.commit = fs_commit,
	.detach = fs_detach,
	.recheck = fs_recheck,
};

static void gw_acked(void *arg, int status)
{
	assert_int_equal(status, 0);
	((struct gw *)arg)->nacked++;
}

/* Deliver a committed state to @g: applied at once, or announced and kept for later. */
static void gw_deliver(struct gw *g, const uint8_t *data, size_t len)
{
	if (g->async) {
		unsigned int acked = g->nacked;

		assert_int_equal(scsitgt_lun_apply_pr_state_async(g->lun, data, len, gw_acked, g),
				 0);
		/* never inside the call */
		assert_int_equal(g->nacked, acked);
		return;
	}
	if (!g->defer) {
		assert_int_equal(scsitgt_lun_apply_pr_state(g->lun, data, len), 0);
		return;
	}
	assert_int_equal(scsitgt_lun_start_pr_delivery(g->lun), 0);
	assert_true(g->ndeferred < 4);
	g->deferred[g->ndeferred] = malloc(len);
	assert_non_null(g->deferred[g->ndeferred]);
	memcpy(g->deferred[g->ndeferred], data, len);
	g->deferred_len[g->ndeferred++] = len;
}

/* The loop of @g gets to the deliveries announced: each applied, then completed. */
static void gw_apply_deliveries(struct gw *g)
{
	for (unsigned int i = 0; i < g->ndeferred; i++) {
		assert_int_equal(
			scsitgt_lun_apply_pr_state(g->lun, g->deferred[i], g->deferred_len[i]), 0);
		free(g->deferred[i]);
		assert_int_equal(scsitgt_lun_complete_pr_delivery(g->lun), 0);
	}
	g->ndeferred = 0;
}

/* Answer request @i of the queue (0: the oldest). */
static void fs_release(struct fstore *st, unsigned int i)
{
	struct fop op;

	assert_true(i < st->nq);
	op = st->q[i];
	memmove(&st->q[i], &st->q[i + 1], (st->nq - i - 1) * sizeof(op));
	st->nq--;
	if (!op.commit) {
		int err = st->fetch_err;

		st->nfetch++;
		st->fetch_err = 0;
		scsitgt_pr_req_complete_fetch(op.req, err, err ? NULL : st->data, err ? 0 : st->len,
					      st->version);
		return;
	}
	st->ncommit++;
	if (st->commit_err) {
		int err = st->commit_err;

		st->commit_err = 0;
		scsitgt_pr_req_complete_commit(op.req, err);
	} else if (st->always_stale || op.version != st->version) {
		st->nstale++;
		scsitgt_pr_req_complete_commit(op.req, -ESTALE);
	} else {
		free(st->data);
		st->data = op.data;
		st->len = op.len;
		op.data = NULL;
		st->version++;
		/* Deliver to the other engine before answering (the notify round trip). */
		for (unsigned int k = 0; k < st->ngws; k++) {
			if (st->gws[k] == op.gw || st->gws[k]->cut)
				continue;
			gw_deliver(st->gws[k], st->data, st->len);
			st->ndelivered++;
		}
		scsitgt_pr_req_complete_commit(op.req, 0);
	}
	free(op.data);
}

static void pump(struct fstore *st)
{
	for (unsigned int k = 0; k < st->ngws; k++)
		uv_run(&st->gws[k]->lf->loop, UV_RUN_NOWAIT);
}

/* Answer requests in order until @res is done. */
static void fs_run_until(struct fstore *st, struct lf_result *res)
{
	for (int guard = 0; !res->done; guard++) {
		assert_true(guard < 10000);
		if (st->nq)
			fs_release(st, 0);
		pump(st);
	}
}

static void tur(struct gw *g, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];

	lf_result_clear(&g->r);
	loop_fabric_run_on(g->lf, s, 0, cdb, cdb_tur(cdb), NULL, 0, &g->r);
	lf_result_clear(&g->r);
}

/* A gateway whose backend completes ios in @mode (FAKE_MANUAL: held until the test lets them
 * go). */
static void gw_init(struct gw *g, struct fstore *st, uint16_t port, enum fake_mode mode)
{
	struct fake_backend_opts o;

	memset(g, 0, sizeof(*g));
	g->st = st;
	assert_int_equal(loop_fabric_create(&g->lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = mode;
	assert_int_equal(fake_backend_lun_create(&g->lun, &g->fb, g->lf->tgt, 0, 0, &o), 0);
	assert_int_equal(loop_fabric_add_session(g->lf, PORT_A, port, &g->a), 0);
	assert_int_equal(loop_fabric_add_session(g->lf, PORT_B, port, &g->b), 0);
	assert_int_equal(loop_fabric_add_session(g->lf, PORT_OBS, port, &g->obs), 0);
	tur(g, g->a);
	tur(g, g->b);
	tur(g, g->obs);
	assert_int_equal(scsitgt_lun_set_pr_cluster(g->lun, &fs_ops, g), 0);
	st->gws[st->ngws++] = g;
}

struct two {
	struct fstore st;
	struct gw ga, gb;
	/* Commands started on A and on B that run concurrently. */
	struct lf_result ra, rb;
};

static struct two *two_create_modes(enum fake_mode mode_a, enum fake_mode mode_b)
{
	struct two *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	gw_init(&t->ga, &t->st, 1, mode_a);
	gw_init(&t->gb, &t->st, 2, mode_b);
	return t;
}

static struct two *two_create_mode(enum fake_mode mode_a)
{
	return two_create_modes(mode_a, FAKE_SYNC);
}

static struct two *two_create(void)
{
	return two_create_mode(FAKE_SYNC);
}

static void two_destroy(struct two *t)
{
	assert_int_equal(t->st.nq, 0);
	lf_result_clear(&t->ga.r);
	lf_result_clear(&t->gb.r);
	lf_result_clear(&t->ra);
	lf_result_clear(&t->rb);
	loop_fabric_destroy(t->ga.lf);
	loop_fabric_destroy(t->gb.lf);
	assert_true(t->ga.detached);
	assert_true(t->gb.detached);
	free(t->st.data);
	free(t);
}

/* Start a command on gateway @g's nexus @s; finish with fs_run_until(). */
static struct lf_result *start(struct gw *g, struct scsitgt__session *s, const uint8_t *cdb,
			       size_t len, const void *dout, size_t dlen, struct lf_result *res)
{
	lf_result_clear(res);
	loop_fabric_start_on(g->lf, s, 0, cdb, len, dout, dlen, res);
	return res;
}

static size_t pr_out_cdb(uint8_t *cdb, uint8_t *p, uint8_t sa, uint8_t type, uint64_t key,
			 uint64_t sa_key)
{
	memset(cdb, 0, 10);
	memset(p, 0, 24);
	cdb[0] = SPC_PERSISTENT_RESERVE_OUT;
	cdb[1] = sa;
	cdb[2] = type;
	put_be32(&cdb[5], 24);
	put_be64(&p[0], key);
	put_be64(&p[8], sa_key);
	return 10;
}

static struct lf_result *out_start(struct gw *g, struct scsitgt__session *s, uint8_t sa,
				   uint8_t type, uint64_t key, uint64_t sa_key,
				   struct lf_result *res)
{
	uint8_t cdb[10], p[24];

	return start(g, s, cdb, pr_out_cdb(cdb, p, sa, type, key, sa_key), p, sizeof(p), res);
}

/* PERSISTENT RESERVE OUT through gateway @g, the store answering in order. */
static struct lf_result *out(struct gw *g, struct scsitgt__session *s, uint8_t sa, uint8_t type,
			     uint64_t key, uint64_t sa_key)
{
	out_start(g, s, sa, type, key, sa_key, &g->r);
	fs_run_until(g->st, &g->r);
	return &g->r;
}

static struct lf_result *run(struct gw *g, struct scsitgt__session *s, const uint8_t *cdb,
			     size_t len, const void *dout, size_t dlen)
{
	start(g, s, cdb, len, dout, dlen, &g->r);
	fs_run_until(g->st, &g->r);
	return &g->r;
}

static struct lf_result *in(struct gw *g, struct scsitgt__session *s, uint8_t sa)
{
	uint8_t cdb[10] = { SPC_PERSISTENT_RESERVE_IN, sa };

	put_be16(&cdb[7], 1024);
	return run(g, s, cdb, 10, NULL, 0);
}

static struct lf_result *wr(struct gw *g, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF], blk[512] = { 0x5a };

	return run(g, s, cdb, cdb_rw(cdb, SBC_WRITE_10, 0, 1, 0), blk, sizeof(blk));
}

static struct lf_result *rd(struct gw *g, struct scsitgt__session *s)
{
	uint8_t cdb[CDB_BUF];

	return run(g, s, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0);
}

/* READ KEYS through @g's observer: PRgeneration and the number of keys. */
static void keys(struct gw *g, uint32_t *gen, unsigned int *n)
{
	struct lf_result *r = in(g, g->obs, PR_IN_READ_KEYS);

	assert_good(r);
	*gen = get_be32(r->data);
	*n = get_be32(&r->data[4]) / 8;
}

static bool has_key(struct gw *g, uint64_t key)
{
	struct lf_result *r = in(g, g->obs, PR_IN_READ_KEYS);

	assert_good(r);
	for (uint32_t i = 0; i < get_be32(&r->data[4]) / 8; i++)
		if (get_be64(&r->data[8 + 8 * i]) == key)
			return true;
	return false;
}

/* READ RESERVATION through @g: the holder's key and the type, 0 when none. */
static uint8_t resv(struct gw *g, uint64_t *key)
{
	struct lf_result *r = in(g, g->obs, PR_IN_READ_RESERVATION);

	assert_good(r);
	if (get_be32(&r->data[4]) == 0)
		return 0;
	*key = get_be64(&r->data[8]);
	return r->data[21];
}

/* A reservation taken through A is enforced through B, with no store round trip for I/O. */
static void test_reservation_enforced_on_other_gateway(void **state)
{
	struct two *t = two_create();
	uint64_t key = 0;
	unsigned int fetches;

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa1, 0));
	assert_int_equal(t->st.ncommit, 2);
	assert_int_equal(t->st.ndelivered, 2);
	/* B sees it in PERSISTENT RESERVE IN and enforces it. */
	assert_int_equal(resv(&t->gb, &key), PR_TYPE_EA);
	assert_int_equal(key, 0xa1);
	fetches = t->st.nfetch;
	conflict(wr(&t->gb, t->gb.b));
	conflict(rd(&t->gb, t->gb.b));
	/* Initiator A through B is another I_T nexus (port 2), not registered: conflict too. */
	conflict(wr(&t->gb, t->gb.a));
	ok(wr(&t->ga, t->ga.a));
	assert_int_equal(t->st.nfetch, fetches);
	/* A PERSISTENT RESERVE OUT through B against the holder's reservation conflicts. */
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	conflict(out(&t->gb, t->gb.b, PR_OUT_RESERVE, PR_TYPE_EA, 0xb1, 0));
	/* Registered now, B still may not access an EXCLUSIVE ACCESS reservation. */
	conflict(wr(&t->gb, t->gb.b));
	/* Released through A: B may write. */
	ok(out(&t->ga, t->ga.a, PR_OUT_RELEASE, PR_TYPE_EA, 0xa1, 0));
	ok(wr(&t->gb, t->gb.b));
	two_destroy(t);
}

/* Two registrations racing through A and B: both land, PRgeneration +2, one stale retry. */
static void test_concurrent_registers_both_land(void **state)
{
	struct two *t = two_create();
	uint32_t gen;
	unsigned int n;

	(void)state;
	out_start(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1, &t->ra);
	out_start(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1, &t->rb);
	assert_int_equal(t->st.nq, 2);
	/* Both fetch version 0, both commit against it. */
	fs_release(&t->st, 0);
	fs_release(&t->st, 0);
	assert_int_equal(t->st.nq, 2);
	assert_true(t->st.q[0].commit && t->st.q[1].commit);
	/* Nothing is visible before the commit: A's own PERSISTENT RESERVE IN still sees
	 * nothing (no uncommitted state on any gateway). */
	keys(&t->ga, &gen, &n);
	assert_int_equal(n, 0);
	/* B's commit lands first (reordered), A's is stale and is executed again. */
	fs_release(&t->st, 1);
	assert_true(t->rb.done);
	assert_good(&t->rb);
	assert_false(t->ra.done);
	fs_release(&t->st, 0);
	assert_int_equal(t->st.nstale, 1);
	assert_false(t->ra.done);
	fs_run_until(&t->st, &t->ra);
	assert_good(&t->ra);
	for (int k = 0; k < 2; k++) {
		struct gw *g = k ? &t->gb : &t->ga;

		keys(g, &gen, &n);
		assert_int_equal(gen, 2);
		assert_int_equal(n, 2);
		assert_true(has_key(g, 0xa1));
		assert_true(has_key(g, 0xb1));
	}
	two_destroy(t);
}

/* Many interleaved changes through both gateways: PRgeneration counts every one of them. */
static void test_interleaved_changes_never_lost(void **state)
{
	struct two *t = two_create();
	uint32_t gen;
	unsigned int n;

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 1));
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 1));
	/* Each round changes both keys at once, the store answering newest request first. */
	for (uint64_t k = 1; k <= 10; k++) {
		out_start(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, k, k + 1, &t->ra);
		out_start(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, k, k + 1, &t->rb);
		for (int guard = 0; !(t->ra.done && t->rb.done); guard++) {
			assert_true(guard < 1000);
			unsigned int i = 0;

			/* Fetches in order, then the newest commit first: stale commits. */
			while (i < t->st.nq && t->st.q[i].commit)
				i++;
			if (i == t->st.nq)
				i = t->st.nq - 1;
			if (t->st.nq)
				fs_release(&t->st, i);
			pump(&t->st);
		}
		assert_good(&t->ra);
		assert_good(&t->rb);
	}
	assert_true(t->st.nstale > 0);
	keys(&t->gb, &gen, &n);
	assert_int_equal(gen, 22);
	assert_int_equal(n, 2);
	assert_true(has_key(&t->gb, 11));
	keys(&t->ga, &gen, &n);
	assert_int_equal(gen, 22);
	two_destroy(t);
}

/* PREEMPT through A: REGISTRATIONS PREEMPTED for the preempted nexus logged in through B. */
static void test_preempt_ua_on_other_gateway(void **state)
{
	struct two *t = two_create();
	uint64_t key = 0;

	(void)state;
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	ok(out(&t->gb, t->gb.b, PR_OUT_RESERVE, PR_TYPE_WE, 0xb1, 0));
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	conflict(wr(&t->ga, t->ga.a));
	ok(out(&t->ga, t->ga.a, PR_OUT_PREEMPT, PR_TYPE_WE, 0xa1, 0xb1));
	/* The preempted nexus on B finds the unit attention first (SPC-5 §5.13.11.4). */
	ua(wr(&t->gb, t->gb.b), 0x2a, 0x05);
	conflict(wr(&t->gb, t->gb.b));
	ok(wr(&t->ga, t->ga.a));
	/* Nexuses that were not registered find nothing; neither does the preempting one. */
	ok(rd(&t->gb, t->gb.obs));
	ok(rd(&t->ga, t->ga.a));
	assert_int_equal(resv(&t->gb, &key), PR_TYPE_WE);
	assert_int_equal(key, 0xa1);
	two_destroy(t);
}

/* RELEASE of a registrants-only reservation and CLEAR through A, seen by B's registrant. */
static void test_release_and_clear_ua_on_other_gateway(void **state)
{
	struct two *t = two_create();

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa1, 0));
	ok(out(&t->ga, t->ga.a, PR_OUT_RELEASE, PR_TYPE_WE_RO, 0xa1, 0));
	ua(rd(&t->gb, t->gb.b), 0x2a, 0x04);
	ok(rd(&t->gb, t->gb.b));
	ok(rd(&t->ga, t->ga.a));
	ok(out(&t->ga, t->ga.a, PR_OUT_CLEAR, 0, 0xa1, 0));
	ua(rd(&t->gb, t->gb.b), 0x2a, 0x03);
	ok(rd(&t->ga, t->ga.a));
	two_destroy(t);
}

/* PREEMPT AND ABORT through A aborts the preempted nexus's tasks on B. */
static void test_preempt_and_abort_on_other_gateway(void **state)
{
	struct two *t = two_create();
	struct lf_result slow;
	uint8_t cdb[CDB_BUF];

	(void)state;
	memset(&slow, 0, sizeof(slow));
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	/* A task of B's nexus in flight on B: a PERSISTENT RESERVE OUT held by the store. */
	start(&t->gb, t->gb.b, cdb, cdb_tur(cdb), NULL, 0, &slow);
	assert_true(slow.done);
	lf_result_clear(&slow);
	out_start(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0xb1, 0xb2, &slow);
	assert_int_equal(t->st.nq, 1);
	out_start(&t->ga, t->ga.a, PR_OUT_PREEMPT_AND_ABORT, PR_TYPE_EA, 0xa1, 0xb1, &t->ga.r);
	/* A's fetch and commit go first; B's queued request then sees the preempted state. */
	fs_release(&t->st, 1);
	fs_release(&t->st, 1);
	assert_true(t->ga.r.done);
	assert_good(&t->ga.r);
	assert_false(slow.done);
	fs_run_until(&t->st, &slow);
	assert_task_aborted(&slow);
	ua(rd(&t->gb, t->gb.b), 0x2a, 0x05);
	assert_false(has_key(&t->gb, 0xb1) || has_key(&t->gb, 0xb2));
	lf_result_clear(&slow);
	two_destroy(t);
}

/* Store commit @i of the queue and deliver it to the other engine (and to the committer too
 * with @to_self, as a store whose watchers include the committer's), but keep its answer: the
 * request is returned for scsitgt_pr_req_complete_commit() later (a slow notify round trip). */
static struct scsitgt_pr_req *fs_store_hold_answer(struct fstore *st, unsigned int i, bool to_self)
{
	struct fop op;

	assert_true(i < st->nq && st->q[i].commit);
	op = st->q[i];
	assert_int_equal(op.version, st->version);
	memmove(&st->q[i], &st->q[i + 1], (st->nq - i - 1) * sizeof(op));
	st->nq--;
	st->ncommit++;
	free(st->data);
	st->data = op.data;
	st->len = op.len;
	st->version++;
	for (unsigned int k = 0; k < st->ngws; k++) {
		if (st->gws[k] == op.gw && !to_self)
			continue;
		assert_int_equal(scsitgt_lun_apply_pr_state(st->gws[k]->lun, st->data, st->len), 0);
		st->ndelivered++;
	}
	return op.req;
}

/*
 * Through gateway A (its backend holding ios): initiator A registered and holding an
 * EXCLUSIVE ACCESS reservation, a WRITE of A inside the backend, then initiator B's PREEMPT
 * AND ABORT of A fetched and its commit at the store (queue entry 0).
 */
static void pa_start(struct two *t, struct lf_result *held)
{
	uint8_t cdb[CDB_BUF], blk[512] = { 0x5a };

	memset(held, 0, sizeof(*held));
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_EA, 0xa1, 0));
	ok(out(&t->ga, t->ga.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	start(&t->ga, t->ga.a, cdb, cdb_rw(cdb, SBC_WRITE_10, 0, 1, 0), blk, sizeof(blk), held);
	assert_false(held->done);
	out_start(&t->ga, t->ga.b, PR_OUT_PREEMPT_AND_ABORT, PR_TYPE_EA, 0xb1, 0xa1, &t->ra);
	fs_release(&t->st, 0);
	assert_int_equal(t->st.nq, 1);
	assert_true(t->st.q[0].commit);
	assert_false(t->ra.done);
}

/* After pa_start() and the PREEMPT AND ABORT's status: A's WRITE was aborted (no status when
 * the backend gives it back), A finds REGISTRATIONS PREEMPTED once and then B's reservation;
 * B, which made the change, is told nothing (SPC-5 §5.13.11.5). */
static void pa_check(struct two *t, struct lf_result *held)
{
	uint8_t cdb[CDB_BUF];

	fake_backend_complete_pending(t->ga.fb);
	pump(&t->st);
	assert_task_aborted(held);
	lf_result_clear(held);
	ua(rd(&t->ga, t->ga.a), 0x2a, 0x05);
	conflict(rd(&t->ga, t->ga.a));
	ok(run(&t->ga, t->ga.b, cdb, cdb_tur(cdb), NULL, 0));
}

/*
 * PREEMPT AND ABORT through A whose commit is answered only after a newer state (made through
 * B on top of it) reached A: the preempted nexus's task on A is still aborted before the
 * status, and it gets its unit attention once.
 */
static void test_preempt_and_abort_overtaken_by_newer_state(void **state)
{
	struct two *t = two_create_mode(FAKE_MANUAL);
	struct scsitgt_pr_req *req;
	struct lf_result held;
	uint32_t gen;
	unsigned int n;

	(void)state;
	pa_start(t, &held);
	/* Stored (sequence 4) and delivered to B, the answer to A still on its way. */
	req = fs_store_hold_answer(&t->st, 0, false);
	/* B changes the state again (sequence 5), delivered to A before A's own answer. */
	ok(out(&t->gb, t->gb.obs, PR_OUT_REGISTER, 0, 0, 0xc1));
	keys(&t->ga, &gen, &n);
	assert_int_equal(n, 2);
	scsitgt_pr_req_complete_commit(req, 0);
	pump(&t->st);
	assert_true(t->ra.done);
	assert_good(&t->ra);
	pa_check(t, &held);
	two_destroy(t);
}

/*
 * The same, with the newer states (made through B) clearing everything: the preempted nexus on
 * A, no longer refused, sends a WRITE admitted under them before A's own commit is answered.
 * SPC-5 §5.13.11.5 aborts the tasks the PREEMPT AND ABORT found (the WRITE held since before
 * it); the later one only meets its restrictions (none are left) and completes. Before each
 * command carried the sequence it was admitted under, both were aborted.
 */
static void test_preempt_and_abort_overtaken_spares_later_tasks(void **state)
{
	struct two *t = two_create_mode(FAKE_MANUAL);
	struct scsitgt_pr_req *req;
	struct lf_result held, later;
	uint8_t cdb[CDB_BUF], blk[512] = { 0x5a };

	(void)state;
	memset(&later, 0, sizeof(later));
	pa_start(t, &held);
	/* Stored (sequence 4) and delivered to B, the answer to A still on its way. */
	req = fs_store_hold_answer(&t->st, 0, false);
	/* Through B: the observer registers (5) and clears (6), delivered to A first. */
	ok(out(&t->gb, t->gb.obs, PR_OUT_REGISTER, 0, 0, 0xc1));
	ok(out(&t->gb, t->gb.obs, PR_OUT_CLEAR, 0, 0xc1, 0));
	/* A's registration went in a change A missed: the derived unit attention first. */
	ua(rd(&t->ga, t->ga.a), 0x2a, 0x05);
	start(&t->ga, t->ga.a, cdb, cdb_rw(cdb, SBC_WRITE_10, 8, 1, 0), blk, sizeof(blk), &later);
	assert_false(later.done);
	scsitgt_pr_req_complete_commit(req, 0);
	pump(&t->st);
	assert_true(t->ra.done);
	assert_good(&t->ra);
	fake_backend_complete_pending(t->ga.fb);
	pump(&t->st);
	assert_task_aborted(&held);
	assert_true(later.done);
	assert_false(later.aborted);
	assert_good(&later);
	lf_result_clear(&held);
	lf_result_clear(&later);
	two_destroy(t);
}

/* What a store may answer after it delivered the committed state back to the committer: the
 * delivery proves the change is stored (pr.h), so every one of them ends as committed. */
static const int own_delivered_answers[] = { 0, -ESTALE, -ECANCELED, -ETIMEDOUT, -EIO };

/*
 * The committer's own state delivered back to it before the answer (an RBD watch gets its own
 * notify): the aborts and unit attentions happen once, with the answer, and the PREEMPT AND
 * ABORT ends GOOD whatever the answer says; never executed again on the state that already
 * holds it (it would find its key gone: RESERVATION CONFLICT for a change that was made).
 */
static void test_preempt_and_abort_own_state_delivered_first(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(own_delivered_answers) / sizeof(int); i++) {
		struct two *t = two_create_mode(FAKE_MANUAL);
		struct scsitgt_pr_req *req;
		struct lf_result held;
		unsigned int fetches;
		uint64_t key = 0;

		pa_start(t, &held);
		fetches = t->st.nfetch;
		req = fs_store_hold_answer(&t->st, 0, true);
		assert_false(t->ra.done);
		scsitgt_pr_req_complete_commit(req, own_delivered_answers[i]);
		pump(&t->st);
		assert_true(t->ra.done);
		assert_good(&t->ra);
		assert_int_equal(t->st.nq, 0);
		assert_int_equal(t->st.nfetch, fetches);
		pa_check(t, &held);
		assert_int_equal(resv(&t->gb, &key), PR_TYPE_EA);
		assert_int_equal(key, 0xb1);
		two_destroy(t);
	}
}

/* A REGISTER that changes the key, its state delivered back to its engine, then -ESTALE: GOOD,
 * the new key registered once (executed again it would find the old key gone). */
static void test_register_own_state_delivered_then_stale(void **state)
{
	(void)state;
	for (size_t i = 1; i < sizeof(own_delivered_answers) / sizeof(int); i++) {
		struct two *t = two_create();
		struct scsitgt_pr_req *req;
		uint32_t gen;
		unsigned int n;

		ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
		out_start(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0xa1, 0xa2, &t->ra);
		fs_release(&t->st, 0);
		req = fs_store_hold_answer(&t->st, 0, true);
		scsitgt_pr_req_complete_commit(req, own_delivered_answers[i]);
		pump(&t->st);
		assert_true(t->ra.done);
		assert_good(&t->ra);
		assert_int_equal(t->st.nq, 0);
		for (int k = 0; k < 2; k++) {
			struct gw *g = k ? &t->gb : &t->ga;

			keys(g, &gen, &n);
			assert_int_equal(gen, 2);
			assert_int_equal(n, 1);
			assert_true(has_key(g, 0xa2));
		}
		/* The registration is the new key's: it reserves with it. */
		ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa2, 0));
		two_destroy(t);
	}
}

/* Store errors fail the command with sense and change nothing anywhere. */
static void test_store_errors_change_nothing(void **state)
{
	struct two *t = two_create();
	uint32_t gen;
	unsigned int n;

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	t->st.fetch_err = -ETIMEDOUT;
	sense(out(&t->ga, t->ga.b, PR_OUT_REGISTER, 0, 0, 0xb1), SENSE_HARDWARE_ERROR, 0x08, 0x00);
	t->st.commit_err = -EIO;
	sense(out(&t->ga, t->ga.b, PR_OUT_REGISTER, 0, 0, 0xb1), SENSE_HARDWARE_ERROR, 0x44, 0x00);
	t->st.commit_err = -ENOTCONN;
	sense(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa1, 0), SENSE_HARDWARE_ERROR, 0x08,
	      0x00);
	t->st.commit_err = -EBUSY;
	assert_int_equal(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1)->status, SAM_STAT_BUSY);
	for (int k = 0; k < 2; k++) {
		struct gw *g = k ? &t->gb : &t->ga;
		uint64_t key;

		keys(g, &gen, &n);
		assert_int_equal(gen, 1);
		assert_int_equal(n, 1);
		assert_int_equal(resv(g, &key), 0);
	}
	/* The reservation the failed commit would have taken is not enforced anywhere. */
	ok(wr(&t->ga, t->ga.b));
	ok(wr(&t->gb, t->gb.b));
	/* A stored state that does not decode: HARDWARE ERROR too. */
	{
		uint8_t junk[30] = "SGPR junk";

		free(t->st.data);
		t->st.data = malloc(sizeof(junk));
		memcpy(t->st.data, junk, sizeof(junk));
		t->st.len = sizeof(junk);
		t->st.version++;
		sense(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa1, 0),
		      SENSE_HARDWARE_ERROR, 0x44, 0x00);
		assert_true(has_key(&t->ga, 0xa1));
	}
	two_destroy(t);
}

/* A store that always finds a newer version: retried a bounded number of times, then BUSY. */
static void test_stale_retries_bounded(void **state)
{
	struct two *t = two_create();

	(void)state;
	t->st.always_stale = true;
	assert_int_equal(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1)->status, SAM_STAT_BUSY);
	assert_int_equal(t->st.ncommit, SCSITGT_PR_CLUSTER_RETRIES + 1);
	assert_false(has_key(&t->ga, 0xa1));
	t->st.always_stale = false;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	assert_true(has_key(&t->gb, 0xa1));
	two_destroy(t);
}

/* Commands that change nothing commit nothing; refused ones neither. */
static void test_no_change_no_commit(void **state)
{
	struct two *t = two_create();

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa1, 0));
	assert_int_equal(t->st.ncommit, 2);
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE, 0xa1, 0));
	conflict(out(&t->ga, t->ga.b, PR_OUT_RESERVE, PR_TYPE_WE, 0xb1, 0));
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0));
	assert_int_equal(t->st.ncommit, 2);
	/* REPORT CAPABILITIES: a cluster store persists, so PTPL_C. */
	assert_int_equal(in(&t->gb, t->gb.b, PR_IN_REPORT_CAPABILITIES)->data[2] & 1, 1);
	two_destroy(t);
}

/* Delivered states: duplicates and late ones change nothing; a gap derives the unit
 * attentions; version 1 states still apply; version 2 states load. */
static void test_apply_versions(void **state)
{
	struct two *t = two_create();
	uint8_t *old;
	size_t old_len;
	uint8_t v1[4096];
	size_t v1_len;
	uint32_t gen;
	unsigned int n;

	(void)state;
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	old_len = t->st.len;
	old = malloc(old_len);
	memcpy(old, t->st.data, old_len);
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->ga, t->ga.a, PR_OUT_PREEMPT, PR_TYPE_WE, 0xa1, 0xb1));
	ua(rd(&t->gb, t->gb.b), 0x2a, 0x05);
	/* The same state again (a duplicate notify), or an older one: nothing. */
	assert_int_equal(scsitgt_lun_apply_pr_state(t->gb.lun, t->st.data, t->st.len), 0);
	assert_int_equal(scsitgt_lun_apply_pr_state(t->gb.lun, old, old_len), 0);
	ok(rd(&t->gb, t->gb.b));
	keys(&t->gb, &gen, &n);
	assert_int_equal(gen, 3);
	assert_int_equal(n, 1);
	/* Malformed: refused, nothing changes. */
	assert_int_equal(scsitgt_lun_apply_pr_state(t->gb.lun, old, old_len - 1), -EINVAL);
	old[5] = 9;
	assert_int_equal(scsitgt_lun_apply_pr_state(t->gb.lun, old, old_len), -ENOTSUP);
	free(old);
	/* A gap: B misses two changes (B registers again through A's nexus... through its own
	 * gateway, then A preempts it); the state that finally arrives is two ahead. */
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb2));
	t->st.ngws = 1; /* deliveries to B are lost */
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0xa1, 0xa2));
	ok(out(&t->ga, t->ga.a, PR_OUT_PREEMPT, PR_TYPE_WE, 0xa2, 0xb2));
	t->st.ngws = 2;
	ok(rd(&t->gb, t->gb.b));
	assert_int_equal(scsitgt_lun_apply_pr_state(t->gb.lun, t->st.data, t->st.len), 0);
	ua(rd(&t->gb, t->gb.b), 0x2a, 0x05);
	assert_false(has_key(&t->gb, 0xb2));
	/* Version 1 (the save hook's format) applies and loads; version 2 loads. */
	assert_int_equal(scsitgt_lun_save_pr_state(t->ga.lun, v1, sizeof(v1), &v1_len), 0);
	assert_int_equal(get_be16(&v1[4]), SCSITGT_PR_STATE_VERSION);
	assert_int_equal(scsitgt_lun_apply_pr_state(t->gb.lun, v1, v1_len), 0);
	assert_int_equal(scsitgt_lun_load_pr_state(t->gb.lun, t->st.data, t->st.len), 0);
	assert_true(has_key(&t->gb, 0xa2));
	two_destroy(t);
}

/* An aborted PERSISTENT RESERVE OUT waiting for the store is answered and ends aborted. */
static void test_abort_while_waiting(void **state)
{
	struct two *t = two_create();
	struct lf_result r;
	int resp = -1;
	uint8_t lun[8];

	(void)state;
	memset(&r, 0, sizeof(r));

	out_start(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1, &r);
	assert_int_equal(t->st.nq, 1);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->ga.a, SCSITGT__TMF_ABORT_TASK, lun, r.cmd->tag, tmf_resp, &resp);
	/* The TMF waits for the command to come back from the store. */
	assert_int_equal(resp, -1);
	fs_run_until(&t->st, &r);
	assert_true(r.aborted);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	/* Nothing was committed. */
	assert_int_equal(t->st.ncommit, 0);
	assert_false(has_key(&t->ga, 0xa1));
	lf_result_clear(&r);
	two_destroy(t);
}

/* Gateway @g's watch breaks: it misses deliveries, and its store says so. */
static void gw_cut(struct gw *g)
{
	g->cut = true;
	assert_int_equal(scsitgt_lun_set_pr_sync(g->lun, SCSITGT_PR_RESYNCING), 0);
}

/* The store watches again and applies the state it read after that: synced. */
static void gw_resync(struct gw *g)
{
	g->cut = false;
	assert_int_equal(scsitgt_lun_apply_pr_state(g->lun, g->st->data, g->st->len), 0);
	assert_int_equal(scsitgt_lun_set_pr_sync(g->lun, SCSITGT_PR_SYNCED), 0);
}

/* A gateway told "stale" answers PERSISTENT RESERVE IN from a fresh read of the store, not
 * from the copy that missed a registration (session 30's "B misses A's registration"). */
static void test_unsynced_pr_in_reads_store(void **state)
{
	struct two *t = two_create();
	unsigned int fetches, n;
	uint64_t key = 0;
	uint32_t gen;

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	gw_cut(&t->gb);
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa1, 0));
	ok(out(&t->ga, t->ga.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	fetches = t->st.nfetch;
	keys(&t->gb, &gen, &n);
	assert_int_equal(t->st.nfetch, fetches + 1);
	/* Two registrations (RESERVE leaves PRgeneration alone, SPC-5 §6.16.2). */
	assert_int_equal(gen, 2);
	assert_int_equal(n, 2);
	assert_int_equal(resv(&t->gb, &key), PR_TYPE_WE_RO);
	assert_int_equal(key, 0xa1);
	/* Every answer reads the store while the copy is called stale. */
	assert_int_equal(t->st.nfetch, fetches + 2);
	gw_resync(&t->gb);
	keys(&t->gb, &gen, &n);
	assert_int_equal(t->st.nfetch, fetches + 2);
	assert_int_equal(n, 2);
	two_destroy(t);
}

/* The fencing Windows Failover Clustering relies on: an initiator preempted (PREEMPT AND
 * ABORT) through A must not write through B, which missed the change. B refuses every command
 * a reservation could refuse with BUSY until it is synced, then decides on the fresh state. */
static void test_unsynced_refuses_until_synced(void **state)
{
	struct two *t = two_create();
	uint8_t cdb[CDB_BUF];

	(void)state;
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	ok(out(&t->gb, t->gb.a, PR_OUT_REGISTER, 0, 0, 0xa2));
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_EA_RO, 0xa1, 0));
	ok(wr(&t->gb, t->gb.b));
	gw_cut(&t->gb);
	ok(out(&t->ga, t->ga.a, PR_OUT_PREEMPT_AND_ABORT, PR_TYPE_EA_RO, 0xa1, 0xb1));
	/* B's copy still shows 0xb1 registered: it must not decide on it. */
	assert_int_equal(wr(&t->gb, t->gb.b)->status, SAM_STAT_BUSY);
	assert_int_equal(rd(&t->gb, t->gb.b)->status, SAM_STAT_BUSY);
	assert_int_equal(wr(&t->gb, t->gb.a)->status, SAM_STAT_BUSY);
	/* Commands every reservation allows still run, without a store round trip. */
	ok(run(&t->gb, t->gb.b, cdb, cdb_tur(cdb), NULL, 0));
	ok(run(&t->gb, t->gb.b, cdb, cdb_inquiry(cdb, 0, 0, 96), NULL, 0));
	/* A PERSISTENT RESERVE IN refreshes the copy, but the channel is still broken. */
	assert_false(has_key(&t->gb, 0xb1));
	assert_int_equal(wr(&t->gb, t->gb.a)->status, SAM_STAT_BUSY);
	/* Synced: the preempted nexus finds its unit attention, then the conflict; a registrant
	 * is served. */
	gw_resync(&t->gb);
	ua(wr(&t->gb, t->gb.b), 0x2a, 0x05);
	conflict(wr(&t->gb, t->gb.b));
	ok(wr(&t->gb, t->gb.a));
	ok(rd(&t->gb, t->gb.a));
	/* Gateway A was never affected. */
	ok(wr(&t->ga, t->ga.a));
	two_destroy(t);
}

/* While stale and the store unreachable, PERSISTENT RESERVE IN fails as PR OUT's fetch does:
 * HARDWARE ERROR, LOGICAL UNIT COMMUNICATION FAILURE; never an answer from the old copy. */
static void test_unsynced_store_unreachable(void **state)
{
	struct two *t = two_create();
	uint8_t cdb[10] = { SPC_PERSISTENT_RESERVE_IN, PR_IN_READ_KEYS };

	(void)state;
	put_be16(&cdb[7], 1024);
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	gw_cut(&t->gb);
	t->st.fetch_err = -ETIMEDOUT;
	sense(run(&t->gb, t->gb.obs, cdb, 10, NULL, 0), SENSE_HARDWARE_ERROR, 0x08, 0x00);
	t->st.fetch_err = -EIO;
	sense(run(&t->gb, t->gb.obs, cdb, 10, NULL, 0), SENSE_HARDWARE_ERROR, 0x44, 0x00);
	assert_true(has_key(&t->gb, 0xa1));
	/* Told twice, or synced twice: one state, no harm. */
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_RESYNCING), 0);
	gw_resync(&t->gb);
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_SYNCED), 0);
	ok(wr(&t->gb, t->gb.b));
	two_destroy(t);
}

/* The store says why the copy is stale, and that decides what a command a reservation could
 * refuse gets: unreachable, NOT READY 04h/01h (as I/O to an unreachable store ends); fenced,
 * NOT READY 04h/0Ah, what the backend answers every io of a fenced client, without reaching
 * it. PR IN reads the store in both. */
static void test_unsynced_states(void **state)
{
	struct two *t = two_create();

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	gw_cut(&t->gb);
	ok(out(&t->ga, t->ga.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_UNREACHABLE), 0);
	sense(wr(&t->gb, t->gb.obs), SENSE_NOT_READY, 0x04, 0x01);
	sense(rd(&t->gb, t->gb.obs), SENSE_NOT_READY, 0x04, 0x01);
	assert_true(has_key(&t->gb, 0xb1));
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_FENCED), 0);
	sense(wr(&t->gb, t->gb.obs), SENSE_NOT_READY, 0x04, 0x0a);
	sense(rd(&t->gb, t->gb.obs), SENSE_NOT_READY, 0x04, 0x0a);
	assert_true(has_key(&t->gb, 0xb1));
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, (enum scsitgt_pr_sync)7), -EINVAL);
	gw_resync(&t->gb);
	ok(wr(&t->gb, t->gb.b));
	two_destroy(t);
}

/*
 * A fenced gateway (its client blocklisted) whose copy holds a reservation: a command the copy
 * would refuse gets the fenced sense, NOT READY 04h/0Ah, not RESERVATION CONFLICT from a copy
 * that may be stale (the holder may have been preempted meanwhile, the initiator does not
 * fail over on a conflict); neither does the holder's, and commands every reservation allows
 * run. Before, the conflict check answered from the copy.
 */
static void test_unsynced_fenced_answers_before_conflict(void **state)
{
	struct two *t = two_create();
	uint8_t cdb[CDB_BUF];

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->gb, t->gb.a, PR_OUT_REGISTER, 0, 0, 0xa2));
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_EA_RO, 0xa1, 0));
	conflict(wr(&t->gb, t->gb.b));
	conflict(rd(&t->gb, t->gb.b));
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_FENCED), 0);
	sense(wr(&t->gb, t->gb.b), SENSE_NOT_READY, 0x04, 0x0a);
	sense(rd(&t->gb, t->gb.b), SENSE_NOT_READY, 0x04, 0x0a);
	sense(wr(&t->gb, t->gb.a), SENSE_NOT_READY, 0x04, 0x0a);
	ok(run(&t->gb, t->gb.b, cdb, cdb_tur(cdb), NULL, 0));
	ok(run(&t->gb, t->gb.b, cdb, cdb_inquiry(cdb, 0, 0, 96), NULL, 0));
	/* Gateway A, not fenced, decides as before. */
	conflict(wr(&t->ga, t->ga.b));
	gw_resync(&t->gb);
	conflict(wr(&t->gb, t->gb.b));
	ok(wr(&t->gb, t->gb.a));
	two_destroy(t);
}

/* A LUN without a cluster store has nothing to sync: refused, and its commands unaffected;
 * removing the store clears the mark. */
static void test_unsynced_needs_cluster_store(void **state)
{
	struct prt *p = prt_create(FAKE_SYNC);
	struct two *t;

	(void)state;
	assert_int_equal(scsitgt_lun_set_pr_sync(NULL, SCSITGT_PR_RESYNCING), -EINVAL);
	assert_int_equal(scsitgt_lun_set_pr_sync(p->lun, SCSITGT_PR_RESYNCING), -ENOENT);
	assert_int_equal(scsitgt__lun_xflags(p->lun), 0);
	ok(prt_write(p, p->b));
	ok(prt_read(p, p->b));
	prt_destroy(p);

	t = two_create();
	gw_cut(&t->gb);
	assert_int_equal(wr(&t->gb, t->gb.b)->status, SAM_STAT_BUSY);
	assert_int_equal(scsitgt_lun_set_pr_cluster(t->gb.lun, NULL, NULL), 0);
	assert_true(t->gb.detached);
	assert_int_equal(scsitgt__lun_xflags(t->gb.lun) & SCSITGT__LUN_XF_PR_UNSYNCED, 0);
	ok(wr(&t->gb, t->gb.b));
	two_destroy(t);
}

/* Let @g's loop run until it has nothing left to do now (no store answer given). */
static void gw_idle(struct gw *g)
{
	for (int i = 0; i < 8; i++)
		uv_run(&g->lf->loop, UV_RUN_NOWAIT);
}

static struct lf_result *wr_start(struct gw *g, struct scsitgt__session *s, uint32_t lba,
				  struct lf_result *res)
{
	uint8_t cdb[CDB_BUF], blk[512] = { 0x5a };

	return start(g, s, cdb, cdb_rw(cdb, SBC_WRITE_10, lba, 1, 0), blk, sizeof(blk), res);
}

static struct lf_result *rd_start(struct gw *g, struct scsitgt__session *s, struct lf_result *res)
{
	uint8_t cdb[CDB_BUF];

	return start(g, s, cdb, cdb_rw(cdb, SBC_READ_10, 0, 1, 0), NULL, 0, res);
}

/* CLOCK_MONOTONIC in ms: the lease's clock (libscsitgt/pr.h). */
static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * docs/rbd.md, "What is left" of session 32, (a): a state committed through A has reached B's
 * store (announced from the store's thread, scsitgt_lun_start_pr_delivery()) but B's loop has
 * not applied it, and A answered GOOD (its wait for B ended). B's copy holds no reservation: a
 * non-registrant's write that the new one refuses was admitted on it. It is held instead, not
 * failed, and refused once the state is applied; a registrant's write held behind it then
 * runs. Commands every reservation allows run meanwhile, and PERSISTENT RESERVE IN reads the
 * store.
 */
static void test_delivery_pending_holds_then_decides(void **state)
{
	struct two *t = two_create();
	struct lf_result rw2;
	uint8_t cdb[CDB_BUF];
	unsigned int fetches, n;
	uint32_t gen;
	size_t ios;

	(void)state;
	memset(&rw2, 0, sizeof(rw2));
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->gb, t->gb.a, PR_OUT_REGISTER, 0, 0, 0xa2));
	t->gb.defer = true;
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa1, 0));
	assert_int_equal(t->gb.ndeferred, 1);
	ios = t->gb.fb->nrecs;
	wr_start(&t->gb, t->gb.b, 0, &t->rb);
	wr_start(&t->gb, t->gb.a, 1, &rw2);
	gw_idle(&t->gb);
	assert_false(t->rb.done);
	assert_false(rw2.done);
	assert_int_equal(t->gb.fb->nrecs, ios);
	ok(run(&t->gb, t->gb.b, cdb, cdb_tur(cdb), NULL, 0));
	ok(run(&t->gb, t->gb.b, cdb, cdb_inquiry(cdb, 0, 0, 96), NULL, 0));
	assert_int_equal(t->st.nq, 0);
	/* Applied: each decided on the new copy, in order. */
	gw_apply_deliveries(&t->gb);
	gw_idle(&t->gb);
	assert_true(t->rb.done);
	conflict(&t->rb);
	assert_true(rw2.done);
	ok(&rw2);
	assert_int_equal(t->gb.fb->nrecs, ios + 1);
	conflict(wr(&t->gb, t->gb.b));
	/* Announced again: PERSISTENT RESERVE IN reads the store, not the copy. */
	ok(out(&t->ga, t->ga.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	fetches = t->st.nfetch;
	keys(&t->gb, &gen, &n);
	assert_int_equal(t->st.nfetch, fetches + 1);
	assert_int_equal(n, 3);
	gw_apply_deliveries(&t->gb);
	t->gb.defer = false;
	keys(&t->gb, &gen, &n);
	assert_int_equal(t->st.nfetch, fetches + 1);
	assert_int_equal(n, 3);
	/* Nothing announced: nothing to complete. */
	assert_int_equal(scsitgt_lun_complete_pr_delivery(t->gb.lun), -EALREADY);
	lf_result_clear(&rw2);
	two_destroy(t);
}

/* A PREEMPT AND ABORT announced and not applied: the preempted initiator's write is held, and
 * aborted when the state is applied (it was admitted under the older state), never run. */
static void test_delivery_pending_preempt_and_abort(void **state)
{
	struct two *t = two_create();
	size_t ios;

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	ok(out(&t->gb, t->gb.b, PR_OUT_RESERVE, PR_TYPE_WE, 0xb1, 0));
	t->gb.defer = true;
	ok(out(&t->ga, t->ga.a, PR_OUT_PREEMPT_AND_ABORT, PR_TYPE_WE, 0xa1, 0xb1));
	ios = t->gb.fb->nrecs;
	wr_start(&t->gb, t->gb.b, 0, &t->rb);
	gw_idle(&t->gb);
	assert_false(t->rb.done);
	gw_apply_deliveries(&t->gb);
	gw_idle(&t->gb);
	/* aborted by A's PREEMPT AND ABORT: TASK ABORTED (TAS 1), never in the backend */
	assert_task_aborted(&t->rb);
	assert_int_equal(t->gb.fb->nrecs, ios);
	t->gb.defer = false;
	ua(wr(&t->gb, t->gb.b), 0x2a, 0x05);
	conflict(wr(&t->gb, t->gb.b));
	two_destroy(t);
}

/*
 * (b): the store's lease ran out (its loop ran late past the watch's bound). A command a
 * reservation could refuse is held, never failed, and the store asked once to check; a new
 * lease lets each be decided on the copy. A store that finds its channel lost says so instead,
 * and the held commands get what that state answers.
 */
static void test_lease_expired_holds_until_renewed(void **state)
{
	struct two *t = two_create();
	struct lf_result rr;
	uint8_t cdb[CDB_BUF];
	size_t ios;

	(void)state;
	memset(&rr, 0, sizeof(rr));
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->ga, t->ga.a, PR_OUT_RESERVE, PR_TYPE_WE_RO, 0xa1, 0));
	assert_int_equal(scsitgt_lun_set_pr_lease(NULL, 1), -EINVAL);
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, mono_ms() + 600000), 0);
	conflict(wr(&t->gb, t->gb.b));
	ok(rd(&t->gb, t->gb.b));
	assert_int_equal(t->gb.nrecheck, 0);
	/* Run out (at 1 ms of the clock: long past; a lease just past could still look valid
	 * to the admission's coarse clock, one tick behind). */
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, 1), 0);
	ios = t->gb.fb->nrecs;
	rd_start(&t->gb, t->gb.b, &rr);
	wr_start(&t->gb, t->gb.b, 0, &t->rb);
	gw_idle(&t->gb);
	assert_false(rr.done);
	assert_false(t->rb.done);
	assert_int_equal(t->gb.fb->nrecs, ios);
	assert_int_equal(t->gb.nrecheck, 1);
	ok(run(&t->gb, t->gb.b, cdb, cdb_tur(cdb), NULL, 0));
	/* Confirmed: the read runs, the write meets the reservation. */
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, mono_ms() + 600000), 0);
	gw_idle(&t->gb);
	assert_true(rr.done);
	ok(&rr);
	assert_true(t->rb.done);
	conflict(&t->rb);
	assert_int_equal(t->gb.fb->nrecs, ios + 1);
	/* Run out again (asked again); the store finds its watch gone: what that state says. */
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, 1), 0);
	rd_start(&t->gb, t->gb.b, &rr);
	gw_idle(&t->gb);
	assert_false(rr.done);
	assert_int_equal(t->gb.nrecheck, 2);
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_UNREACHABLE), 0);
	gw_idle(&t->gb);
	assert_true(rr.done);
	sense(&rr, SENSE_NOT_READY, 0x04, 0x01);
	/* Synced with a lease again: decided on the copy. */
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, mono_ms() + 600000), 0);
	gw_resync(&t->gb);
	ok(rd(&t->gb, t->gb.b));
	/* Removing the store drops the lease: nothing is held. */
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, 1), 0);
	assert_int_equal(scsitgt_lun_set_pr_cluster(t->gb.lun, NULL, NULL), 0);
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, 1), -ENOENT);
	assert_int_equal(scsitgt_lun_start_pr_delivery(t->gb.lun), -ENOENT);
	ok(rd(&t->gb, t->gb.b));
	lf_result_clear(&rr);
	two_destroy(t);
}

/* A READ of initiator B through @g, held: the store asked @nrecheck times so far. */
static void rd_held(struct gw *g, struct lf_result *res, unsigned int nrecheck)
{
	memset(res, 0, sizeof(*res));
	rd_start(g, g->b, res);
	gw_idle(g);
	assert_false(res->done);
	assert_int_equal(g->nrecheck, nrecheck);
}

/*
 * A lease ran out, the store was asked, then found its channel lost and restored it
 * (UNREACHABLE, then SYNCED after a re-watch: no new lease). The lease is still past: a
 * command arriving now is held and must ask the store again at once (review34 N1: it asked
 * nothing, and waited for the store's next periodic renewal, up to 500 ms with rbd_pr.c).
 */
static void test_resync_asks_again(void **state)
{
	struct two *t = two_create();
	struct lf_result rr, rr2;

	(void)state;
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, 1), 0);
	rd_held(&t->gb, &rr, 1);
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_UNREACHABLE), 0);
	gw_idle(&t->gb);
	assert_true(rr.done);
	sense(&rr, SENSE_NOT_READY, 0x04, 0x01);
	lf_result_clear(&rr);
	/* Watched and read again: synced, the lease as it was (past). Asked again at once. */
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_SYNCED), 0);
	rd_held(&t->gb, &rr, 2);
	/* The store's answer to that recheck: a new lease lets it go. */
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, mono_ms() + 600000), 0);
	gw_idle(&t->gb);
	assert_true(rr.done);
	ok(&rr);
	lf_result_clear(&rr);
	/* Still once per lapse: two commands held after a change of state ask once. */
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, 1), 0);
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_RESYNCING), 0);
	assert_int_equal(scsitgt_lun_set_pr_sync(t->gb.lun, SCSITGT_PR_SYNCED), 0);
	rd_held(&t->gb, &rr, 3);
	rd_held(&t->gb, &rr2, 3);
	assert_int_equal(scsitgt_lun_set_pr_lease(t->gb.lun, mono_ms() + 600000), 0);
	gw_idle(&t->gb);
	assert_true(rr.done);
	assert_true(rr2.done);
	ok(&rr);
	ok(&rr2);
	lf_result_clear(&rr);
	lf_result_clear(&rr2);
	two_destroy(t);
}

static void test_set_cluster_args(void **state)
{
	struct two *t = two_create();
	struct scsitgt_pr_cluster_ops bad = fs_ops;

	(void)state;
	assert_int_equal(scsitgt_lun_set_pr_cluster(NULL, &fs_ops, NULL), -EINVAL);
	bad.size = 8;
	assert_int_equal(scsitgt_lun_set_pr_cluster(t->ga.lun, &bad, &t->ga), -EINVAL);
	bad = fs_ops;
	bad.commit = NULL;
	assert_int_equal(scsitgt_lun_set_pr_cluster(t->ga.lun, &bad, &t->ga), -EINVAL);
	assert_int_equal(scsitgt_lun_apply_pr_state(t->ga.lun, NULL, 0), -EINVAL);
	/* Removing the store detaches it; PERSISTENT RESERVE OUT is local again. */
	assert_int_equal(scsitgt_lun_set_pr_cluster(t->ga.lun, NULL, NULL), 0);
	assert_true(t->ga.detached);
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	assert_int_equal(t->st.ncommit, 0);
	assert_int_equal(scsitgt_lun_set_pr_cluster(t->ga.lun, &fs_ops, &t->ga), 0);
	t->ga.detached = false;
	two_destroy(t);
}

/*
 * reviewh F7: a PREEMPT AND ABORT made through A, delivered to B through the async apply: B's
 * callback (where an RBD gateway acknowledges the notify, letting A answer GOOD) waits until
 * the preempted nexus's task that B's backend holds has left it (SPC-5 §5.13.11.5: aborted
 * before the command completes). A change that aborts nothing calls back on a later turn.
 */
static void test_apply_async_waits_for_aborts(void **state)
{
	struct two *t = two_create_modes(FAKE_SYNC, FAKE_MANUAL);

	(void)state;
	ok(out(&t->ga, t->ga.a, PR_OUT_REGISTER, 0, 0, 0xa1));
	ok(out(&t->gb, t->gb.b, PR_OUT_REGISTER, 0, 0, 0xb1));
	ok(out(&t->gb, t->gb.b, PR_OUT_RESERVE, PR_TYPE_EA, 0xb1, 0));
	/* the holder's WRITE, in B's backend */
	wr_start(&t->gb, t->gb.b, 0, &t->rb);
	gw_idle(&t->gb);
	assert_false(t->rb.done);
	t->gb.async = true;
	ok(out(&t->ga, t->ga.a, PR_OUT_PREEMPT_AND_ABORT, PR_TYPE_EA, 0xa1, 0xb1));
	gw_idle(&t->gb);
	/* applied (B enforces A's reservation), not acknowledged: the task is still in B's
	 * backend */
	assert_int_equal(t->gb.nacked, 0);
	fake_backend_complete_pending(t->gb.fb);
	gw_idle(&t->gb);
	assert_int_equal(t->gb.nacked, 1);
	assert_task_aborted(&t->rb);
	/* a registration: nothing to wait for */
	ok(out(&t->ga, t->ga.obs, PR_OUT_REGISTER, 0, 0, 0xc1));
	gw_idle(&t->gb);
	assert_int_equal(t->gb.nacked, 2);
	/* malformed: refused, no callback */
	assert_int_equal(scsitgt_lun_apply_pr_state_async(t->gb.lun, "x", 1, gw_acked, &t->gb),
			 -EINVAL);
	assert_int_equal(
		scsitgt_lun_apply_pr_state_async(t->gb.lun, t->st.data, t->st.len, NULL, NULL),
		-EINVAL);
	gw_idle(&t->gb);
	assert_int_equal(t->gb.nacked, 2);
	t->gb.async = false;
	ua(wr(&t->gb, t->gb.b), 0x2a, 0x05);
	two_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reservation_enforced_on_other_gateway),
		cmocka_unit_test(test_concurrent_registers_both_land),
		cmocka_unit_test(test_interleaved_changes_never_lost),
		cmocka_unit_test(test_preempt_ua_on_other_gateway),
		cmocka_unit_test(test_release_and_clear_ua_on_other_gateway),
		cmocka_unit_test(test_preempt_and_abort_on_other_gateway),
		cmocka_unit_test(test_preempt_and_abort_overtaken_by_newer_state),
		cmocka_unit_test(test_preempt_and_abort_overtaken_spares_later_tasks),
		cmocka_unit_test(test_preempt_and_abort_own_state_delivered_first),
		cmocka_unit_test(test_register_own_state_delivered_then_stale),
		cmocka_unit_test(test_store_errors_change_nothing),
		cmocka_unit_test(test_stale_retries_bounded),
		cmocka_unit_test(test_no_change_no_commit),
		cmocka_unit_test(test_apply_versions),
		cmocka_unit_test(test_abort_while_waiting),
		cmocka_unit_test(test_set_cluster_args),
		cmocka_unit_test(test_unsynced_pr_in_reads_store),
		cmocka_unit_test(test_unsynced_refuses_until_synced),
		cmocka_unit_test(test_unsynced_store_unreachable),
		cmocka_unit_test(test_unsynced_states),
		cmocka_unit_test(test_unsynced_fenced_answers_before_conflict),
		cmocka_unit_test(test_unsynced_needs_cluster_store),
		cmocka_unit_test(test_delivery_pending_holds_then_decides),
		cmocka_unit_test(test_delivery_pending_preempt_and_abort),
		cmocka_unit_test(test_lease_expired_holds_until_renewed),
		cmocka_unit_test(test_resync_asks_again),
		cmocka_unit_test(test_apply_async_waits_for_aborts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
