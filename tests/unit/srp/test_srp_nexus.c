/* SPDX-License-Identifier: MIT */
/*
 * SRP nexuses on worker loops (transport/srp/srp_nexus.c, issue 18), without an RDMA device:
 * a port that never listens, logins admitted on home (scsitgt__srp_nexus_admit()) and channels
 * without an rdma_cm id or QP, which take the same teardown as real ones. Checked: a new
 * nexus is placed on the least-loaded worker with its core session bound to that worker's
 * shard (home without connections on workers); MULTI joins it up to max_channels; a unit
 * attention raised on home reaches its channel on the nexus's loop by message, one raised
 * there is queued at once, and one raised on a third loop (another worker) is queued on the
 * nexus's loop too, never where it was raised (the queueing asserts its loop); SINGLE closes
 * the old nexus's channels on their loop, and the last channel released there ends the nexus
 * on home (RELEASE) and frees it on its loop (FINAL). Part of the TSan suite's unit tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../support/conn_workers_env.h"
#include "core/core.h"
#include "core/shard.h"
#include "core/worker.h"
#include "srp_harness.h"

/* A world with two workers, connections on them when @conn_workers, and max_channels 2. */
static void world_create(struct srp_world *w, bool conn_workers)
{
	struct scsitgt_engine_opts o;

	scsitgt_engine_opts_init(&o, sizeof(o));
	o.workers = 2;
	o.conn_workers = conn_workers;
	srp_world_create(w, &o, "iqn.2026-12.org.example:srp-nexus", conn_workers);
	assert_int_equal(w->engine->conn_workers, conn_workers);
	w->port->opts.max_channels = 2;
	/* The unit attentions these tests follow to a channel are reported there (opt-in). */
	w->port->opts.aer = true;
}

static unsigned int count(const struct scsitgt__list *l)
{
	unsigned int n = 0;

	for (const struct scsitgt__list *p = l->next; p != l; p = p->next)
		n++;
	return n;
}

static void login_req(struct scsitgt__srp_login_req *req, uint8_t initiator)
{
	memset(req, 0, sizeof(*req));
	req->initiator_port_id[15] = initiator;
	req->target_port_id[15] = 0x77;
}

/*
 * Something to do on a nexus's loop, and what it saw; home waits for done, which the wake
 * message sets on home (so both messages have left their queues and @p may be reused).
 */
struct probe {
	struct scsitgt__msg msg;
	struct scsitgt__msg wake;
	struct srp_world *w;
	struct srp_nexus *nx;
	struct srp_ch *ch;
	void (*fn)(struct probe *p);
	struct srp_nexus *ua_nx; /* ua_from_third(): the nexus of the unit attention */
	bool here;		 /* it ran on the nexus's loop */
	bool third;		 /* ua_from_third() ran on neither home nor ua_nx's loop */
	unsigned int aer_n;
	uint64_t aer_lun;
	enum scsitgt__sense_reason aer_reason;
	atomic_bool done;
};

static void wake_fn(struct scsitgt__msg *msg)
{
	atomic_store(&scsitgt__container_of(msg, struct probe, wake)->done, true);
}

static void probe_fn(struct scsitgt__msg *msg)
{
	struct probe *p = scsitgt__container_of(msg, struct probe, msg);

	p->here = scsitgt__srp_nexus_here(p->nx);
	p->fn(p);
	if (p->ch) {
		p->aer_n = p->ch->aer_n;
		p->aer_lun = p->ch->aer_n ? p->ch->aerq[p->ch->aer_n - 1].lun_id : 0;
		p->aer_reason = p->ch->aer_n ? p->ch->aerq[p->ch->aer_n - 1].reason : 0;
	}
	p->wake.fn = wake_fn;
	scsitgt__engine_post(p->w->engine, &p->wake);
}

/*
 * Run @fn on @nx's loop (@ch: then read its queued reports there; @ua_nx: for @fn) and wait for
 * it.
 */
static void probe_run(struct srp_world *w, struct probe *p, struct srp_nexus *nx, struct srp_ch *ch,
		      struct srp_nexus *ua_nx, void (*fn)(struct probe *p))
{
	memset(p, 0, sizeof(*p));
	p->w = w;
	p->nx = nx;
	p->ch = ch;
	p->ua_nx = ua_nx;
	p->fn = fn;
	atomic_init(&p->done, false);
	p->msg.fn = probe_fn;
	scsitgt__loop_post(w->engine, nx->w, &p->msg);
	while (!atomic_load(&p->done))
		uv_run(&w->loop, UV_RUN_ONCE);
}

static void on_nexus_loop(struct srp_world *w, struct probe *p, struct srp_nexus *nx,
			  struct srp_ch *ch, void (*fn)(struct probe *p))
{
	probe_run(w, p, nx, ch, NULL, fn);
}

static void nothing(struct probe *p)
{
	(void)p;
}

/* A connected channel joins its nexus on the nexus's loop (as ch_accept() and ESTABLISHED). */
static void join_connected(struct probe *p)
{
	scsitgt__srp_ch_join(p->ch);
	p->ch->connected = true;
}

/* A channel of an admitted login, attached on home and joined on its nexus's loop. */
static struct srp_ch *channel(struct srp_world *w, struct srp_nexus *nx)
{
	struct srp_ch *ch = calloc(1, sizeof(*ch));
	struct probe p;

	assert_non_null(ch);
	scsitgt__srp_ch_attach(ch, w->port, NULL, nx);
	assert_ptr_equal(ch->lp->w, nx->w);
	on_nexus_loop(w, &p, nx, ch, join_connected);
	assert_true(p.here);
	return ch;
}

static void ua_from_here(struct probe *p)
{
	scsitgt__srp_unit_attention(p->nx->core, 3, SCSITGT__SR_UA_CAPACITY_CHANGED);
}

/* On another nexus's worker: a unit attention for p->ua_nx, which runs elsewhere. */
static void ua_from_third(struct probe *p)
{
	p->third = !scsitgt__engine_on_home(p->w->engine) && !scsitgt__srp_nexus_here(p->ua_nx);
	scsitgt__srp_unit_attention(p->ua_nx->core, 7, SCSITGT__SR_UA_REPORTED_LUNS_CHANGED);
}

/* Placement, MULTI, unit attentions from home, the nexus's loop and a third loop, teardown. */
static void test_nexus_on_worker(void **state)
{
	struct scsitgt__srp_login_req req;
	struct srp_nexus *nx, *nx2, *other;
	struct srp_ch *ch, *ch2, *ch3;
	struct srp_world w;
	struct probe p;
	uint8_t mc;

	(void)state;
	world_create(&w, true);
	login_req(&req, 1);
	assert_int_equal(scsitgt__srp_nexus_admit(&nx, w.port, &req, true, "peer", &mc), 0);
	assert_int_equal(mc, SRP_LOGIN_RSP_NO_CHANNELS);
	/* On a worker, with its core session bound to that worker's shard. */
	assert_non_null(nx->w);
	assert_ptr_equal(nx->shard, nx->w->shard);
	assert_ptr_equal(nx->core->shard, nx->w->shard);
	assert_int_equal(nx->w->nconns, 1);
	ch = channel(&w, nx);
	/* MULTI joins it, up to max_channels (2). */
	assert_int_equal(scsitgt__srp_nexus_admit(&nx2, w.port, &req, true, "peer", &mc), 0);
	assert_ptr_equal(nx2, nx);
	assert_int_equal(mc, SRP_LOGIN_RSP_MAINTAINED);
	assert_int_equal(nx->nchans, 2);
	ch2 = channel(&w, nx);
	assert_int_equal(scsitgt__srp_nexus_admit(&nx2, w.port, &req, true, "peer", &mc),
			 SRP_REJ_CHANNEL_LIMIT);
	/* Another initiator port: a nexus of its own, on the other (least-loaded) worker. */
	login_req(&req, 2);
	assert_int_equal(scsitgt__srp_nexus_admit(&other, w.port, &req, false, "peer", &mc), 0);
	assert_ptr_not_equal(other, nx);
	assert_non_null(other->w);
	assert_ptr_not_equal(other->w, nx->w);
	ch3 = channel(&w, other);

	/* Raised on home (a reset, a LUN added): reported on the nexus's loop, by message. */
	scsitgt__srp_unit_attention(nx->core, 5, SCSITGT__SR_UA_POWER_ON_RESET);
	on_nexus_loop(&w, &p, nx, ch, nothing);
	assert_true(p.here);
	assert_int_equal(p.aer_n, 1);
	assert_int_equal(p.aer_lun, 5);
	assert_int_equal(p.aer_reason, SCSITGT__SR_UA_POWER_ON_RESET);
	/* Raised on the nexus's own loop: queued at once. */
	on_nexus_loop(&w, &p, nx, ch, ua_from_here);
	assert_int_equal(p.aer_n, 2);
	assert_int_equal(p.aer_lun, 3);
	assert_int_equal(p.aer_reason, SCSITGT__SR_UA_CAPACITY_CHANGED);
	/* The other nexus heard nothing. */
	on_nexus_loop(&w, &p, other, ch3, nothing);
	assert_int_equal(p.aer_n, 0);
	/*
	 * Raised on a third loop (the other nexus's worker): posted to the nexus's loop, which
	 * queues it (before the probe home posts there after the third loop's wake).
	 */
	probe_run(&w, &p, other, NULL, nx, ua_from_third);
	assert_true(p.third);
	on_nexus_loop(&w, &p, nx, ch, nothing);
	assert_int_equal(p.aer_n, 3);
	assert_int_equal(p.aer_lun, 7);
	assert_int_equal(p.aer_reason, SCSITGT__SR_UA_REPORTED_LUNS_CHANGED);
	on_nexus_loop(&w, &p, other, ch3, nothing);
	assert_int_equal(p.aer_n, 0);

	/* Closing: on the nexus's loop; the channels released there, home ends the nexuses. */
	scsitgt__srp_nexus_close(nx, SRP_TLO_NO_REASON, "test over");
	scsitgt__srp_nexus_close(other, SRP_TLO_NO_REASON, "test over");
	assert_true(nx->closing);
	srp_world_wait(&w, srp_world_idle);
	assert_int_equal(w.engine->workers[0].nconns + w.engine->workers[1].nconns, 0);
	(void)ch2;
	srp_world_destroy(&w);
}

/* SINGLE: the old nexus's channel is logged out on its loop, a new nexus takes over. */
static void test_single_replaces(void **state)
{
	struct scsitgt__srp_login_req req;
	struct srp_nexus *nx, *nx2;
	struct scsitgt__session *old_core;
	struct srp_world w;
	uint8_t mc;

	(void)state;
	world_create(&w, true);
	login_req(&req, 1);
	assert_int_equal(scsitgt__srp_nexus_admit(&nx, w.port, &req, false, "peer", &mc), 0);
	channel(&w, nx);
	old_core = nx->core;
	assert_int_equal(scsitgt__srp_nexus_admit(&nx2, w.port, &req, false, "peer", &mc), 0);
	assert_ptr_not_equal(nx2, nx);
	assert_int_equal(mc, SRP_LOGIN_RSP_TERMINATED);
	channel(&w, nx2);
	/* Until the old nexus is gone: its session too. */
	while (count(&w.port->nexuses) != 1 || count(&w.tgt->sessions) != 1)
		uv_run(&w.loop, UV_RUN_ONCE);
	assert_ptr_equal(scsitgt__container_of(w.port->nexuses.next, struct srp_nexus, node), nx2);
	assert_ptr_equal(scsitgt__container_of(w.tgt->sessions.next, struct scsitgt__session, node),
			 nx2->core);
	assert_ptr_not_equal(nx2->core, old_core);
	scsitgt__srp_nexus_close(nx2, SRP_TLO_NO_REASON, "test over");
	srp_world_destroy(&w);
}

/* Without connections on workers a nexus stays home, and everything runs inside the calls. */
static void test_nexus_home(void **state)
{
	struct scsitgt__srp_login_req req;
	struct srp_nexus *nx;
	struct srp_ch *ch;
	struct srp_world w;
	struct probe p;
	uint8_t mc;

	(void)state;
	world_create(&w, false);
	login_req(&req, 1);
	assert_int_equal(scsitgt__srp_nexus_admit(&nx, w.port, &req, false, "peer", &mc), 0);
	assert_null(nx->w);
	assert_ptr_equal(nx->core->shard, scsitgt__shard_home(w.engine));
	ch = channel(&w, nx);
	scsitgt__srp_unit_attention(nx->core, 1, SCSITGT__SR_UA_POWER_ON_RESET);
	on_nexus_loop(&w, &p, nx, ch, nothing);
	assert_int_equal(p.aer_n, 1);
	/* The channel goes once its report's flush let go of it; the nexus with it. */
	scsitgt__srp_nexus_close(nx, SRP_TLO_NO_REASON, "test over");
	srp_world_destroy(&w);
}

/*
 * review32 R6: the host's SESSION_LOGIN callback may kick the new session or destroy the SRP
 * port (events.h forbids only the engine, target and LUN). The login is then refused and the
 * nexus ends with it, on home or on its worker; nothing is set up on the stopping port.
 */
enum hook_mode {
	HOOK_NONE,
	HOOK_KICK,
	HOOK_STOP
};

static struct {
	struct srp_world *w;
	enum hook_mode mode;
	unsigned int logins, logouts;
} hook;

static void hook_event(void *arg, const struct scsitgt_event *e)
{
	(void)arg;
	if (e->type == SCSITGT_EVENT_SESSION_LOGOUT)
		hook.logouts++;
	if (e->type != SCSITGT_EVENT_SESSION_LOGIN)
		return;
	hook.logins++;
	if (hook.mode == HOOK_KICK) {
		/* The nexus being made is the port's newest. */
		struct srp_nexus *nx =
			scsitgt__container_of(hook.w->port->nexuses.prev, struct srp_nexus, node);

		assert_int_equal(scsitgt_session_kick((struct scsitgt_session *)nx->core), 0);
	} else if (hook.mode == HOOK_STOP) {
		/* What scsitgt_srp_portal_destroy() does first (this port has no listener). */
		hook.w->port->stopping = true;
	}
}

static void login_hook(bool conn_workers, enum hook_mode mode)
{
	struct scsitgt__srp_login_req req;
	struct srp_nexus *nx = NULL;
	struct srp_world w;
	uint8_t mc;

	world_create(&w, conn_workers);
	memset(&hook, 0, sizeof(hook));
	hook.w = &w;
	hook.mode = mode;
	assert_int_equal(scsitgt_engine_set_event_cb(w.engine, hook_event, NULL), 0);
	login_req(&req, 1);
	assert_int_equal(scsitgt__srp_nexus_admit(&nx, w.port, &req, true, "peer", &mc),
			 SRP_REJ_UNABLE_ESTABLISH);
	assert_null(nx);
	assert_int_equal(hook.logins, 1);
	assert_int_equal(hook.logouts, 1);
	srp_world_wait(&w, srp_world_idle);
	assert_int_equal(w.engine->workers[0].nconns + w.engine->workers[1].nconns, 0);
	/* A later login (the kick was for that session only) is admitted as usual. */
	if (mode == HOOK_KICK) {
		hook.mode = HOOK_NONE;
		assert_int_equal(scsitgt__srp_nexus_admit(&nx, w.port, &req, true, "peer", &mc), 0);
		assert_non_null(nx);
		assert_int_equal(hook.logins, 2);
		(void)channel(&w, nx);
		scsitgt__srp_nexus_close(nx, SRP_TLO_NO_REASON, "test over");
	}
	w.port->stopping = false;
	srp_world_destroy(&w);
}

static void test_login_hook_kick(void **state)
{
	(void)state;
	login_hook(false, HOOK_KICK);
	login_hook(true, HOOK_KICK);
}

static void test_login_hook_port_stop(void **state)
{
	(void)state;
	login_hook(false, HOOK_STOP);
	login_hook(true, HOOK_STOP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nexus_on_worker),	     cmocka_unit_test(test_single_replaces),
		cmocka_unit_test(test_nexus_home),	     cmocka_unit_test(test_login_hook_kick),
		cmocka_unit_test(test_login_hook_port_stop),
	};

	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
}
