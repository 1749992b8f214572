/* SPDX-License-Identifier: MIT */
/*
 * Several gateways, one RBD image (backend_rbd_gateway.h; docs/rbd.md, "Several gateways:
 * the HA model"). rbd_ha.c decides; this file observes and acts:
 *
 *  - a probe every probe_interval_ms, on the RBD context's worker thread (every librbd lock
 *    call blocks): rbd_lock_get_owners(), rbd_is_exclusive_lock_owner(), and a notify on the
 *    gateway object "rbd_gateway.<image id>" that every gateway watches. Each gateway answers
 *    with its group, state and client address (rbd_ha.h's ack format); the owner is alive
 *    when an answer carries the address rbd_lock_get_owners() names.
 *  - answers come from librados' watch callback thread, but only while the loop is alive: the
 *    loop refreshes the answer and a heartbeat at every tick, and a stalled loop answers
 *    nothing a peer accepts, so a gateway whose loop hangs loses the lock like a dead one.
 *  - lock acquisitions (with rbd_lock_break() of the dead or displaced owner first) and the
 *    reconnection of a fenced client run on the same worker thread, in order.
 *  - a watch that breaks (librados' error callback: the OSD dropped it, e.g. its pings came
 *    late on a loaded host, or the OSD restarted) is set up again at the next tick; meanwhile
 *    the gateway answers nobody.
 *  - the owner's heartbeat: at every tick the owner's loop writes a record (rbd_ha.h's beat
 *    format, a higher sequence each time) into an xattr of the gateway object, with an aio
 *    write of its own (never behind the worker thread, which a re-watch may hold); a standby
 *    reads it in each probe. An owner that answers nobody but whose record went on since the
 *    previous probe is alive (its watch is being re-established): no takeover. A dead,
 *    stalled, cut-off or blocklisted owner writes nothing, and is taken over as before; so
 *    does an owner whose re-watch hung longer than the model's bound (its worker thread, stuck,
 *    could neither probe, release nor hand over the lock).
 *  - the ALUA states of the target's groups follow the model after every event
 *    (scsitgt_alua_set_state(): an implicit change, ASYMMETRIC ACCESS STATE CHANGED).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alua.h"
#include "libscsitgt/alua.h"
#include "libscsitgt/backend_rbd_gateway.h"
#include "libscsitgt/testing.h"
#include "rbd_ha.h"
#include "rbd_int.h"

#define GW_OBJ_PREFIX "rbd_gateway."
#define GW_ADDR_MAX 160
#define GW_ACK_MAX 256
/* Between reconnection attempts, and while waiting for a fenced client's ios to end. */
#define GW_RETRY_MS 1000
#define GW_DRAIN_POLL_MS 10
/* The shortest rbd_blocklist_expire_seconds a gateway accepts: the monitors' default
 * (mon_osd_blocklist_default_expire, an hour). */
#define SCSITGT__RBD_BLOCKLIST_MIN_S 3600
/* The gateway object's xattr that holds the owner's heartbeat record. */
#define GW_BEAT_XATTR "scsitgt.heartbeat"

/* One connection's watch on the gateway object; lives until the connection is shut down. */
struct gw_watch {
	struct scsitgt_rbd_gateway *gw;
	rados_ioctx_t io;
	uint64_t handle;
	bool active;
	/* The callbacks' hand-over (rbd_int.h): given before rados_watch3 and by each callback
	 * when it returns, taken by the callbacks and by watch_stop() before it frees. */
	struct scsitgt__rbd_handover ho;
};

struct scsitgt_rbd_gateway {
	struct scsitgt__rbd_ctx *rc;
	struct scsitgt_target *tgt;
	uv_loop_t *loop;
	struct scsitgt__rbd_ha ha;
	uint16_t ports[SCSITGT_ALUA_MAX_PORTS];
	size_t nports;
	struct scsitgt_rbd_gateway_peer peers[SCSITGT__RBD_HA_MAX_PEERS];
	size_t npeers;
	uint32_t interval_ms, timeout_ms;
	char obj[96];

	uv_timer_t tick;
	uv_timer_t retry;
	/* Jobs queued and not done yet; a probe and an acquisition at most one each. */
	unsigned int jobs;
	bool probing;
	/* A tick came while probing: probe again as soon as that probe ends. */
	bool probe_due;
	bool acquiring;
	bool reconnecting;
	/* The owner seen by the last probe ("" none), for the takeover's check. */
	char owner[GW_ADDR_MAX];
	/* This client's address (rados_getaddrs), set by the watch job. */
	char addr[GW_ADDR_MAX];

	/* The answer to probes, refreshed by the loop; read by librados' watch callback. */
	pthread_mutex_t ack_mu;
	char ack[GW_ACK_MAX];
	size_t ack_len;
	atomic_uint_fast64_t heartbeat_ms;
	struct gw_watch *watch;
	/* Set by librados' watch error callback; the loop watches again. */
	atomic_bool watch_broken;
	bool rewatching;
	/* Ticks since the pending re-watch started (the heartbeat stops past the model's bound),
	 * and whether that stop was logged. */
	uint32_t rewatch_ticks;
	bool beat_stopped;

	/* The owner's heartbeat write in flight (NULL: none), its record's last sequence, and
	 * whether the last write failed (logged once per change). Loop. */
	rados_write_op_t beat_op;
	rados_completion_t beat_comp;
	uint64_t beat_seq;
	int beat_err;
	bool beat_failing;
	/* Whether the last probe found the owner alive on its heartbeat alone (logged once per
	 * change). Loop. */
	bool owner_beating;
	/* The group of a peer whose reservations are kept otherwise, and of one whose port ids
	 * clash with this gateway's configuration, as last logged. */
	uint16_t pr_clash;
	uint16_t port_clash;

	/* Fault injection (scsitgt_rbd_gateway_set_watch_fault()): while set, a re-watch waits in
	 * the worker thread. */
	pthread_mutex_t fault_mu;
	pthread_cond_t fault_cv;
	bool fault_hold; /* under fault_mu */

	enum scsitgt__rbd_ha_state logged_state;
	/* The target's ALUA once the gateway is destroyed: implicit, no hook. */
	struct scsitgt_alua_opts alua_off;
	bool destroying;
	scsitgt_done_cb destroy_cb;
	void *destroy_cb_arg;
	bool handles_closed;
	unsigned int handles_open;
};

static uint64_t now_ms(void)
{
	return uv_hrtime() / 1000000u;
}

static void gw_log(struct scsitgt_rbd_gateway *gw, enum scsitgt_log_level lvl, const char *fmt,
		   const char *a, const char *b)
{
	scsitgt__log(&gw->rc->log, lvl, SCSITGT__RBD_SUBSYS, "%s/%s: gateway %u: %s%s%s",
		     gw->rc->pool, gw->rc->image_name, gw->ha.cfg.group, fmt, a ? a : "",
		     b ? b : "");
}

/* ---- the answer to probes ---- */

/* Whether this gateway's reservations are shared (scsitgt_backend_rbd_use_pr() called, on this
 * loop): the model's pr_shared, which its answers carry (reviewh F12). */
static void pr_mode_refresh(struct scsitgt_rbd_gateway *gw)
{
	gw->ha.pr_shared = __atomic_load_n(&gw->rc->pr, __ATOMIC_ACQUIRE) != NULL;
}

static void ack_refresh(struct scsitgt_rbd_gateway *gw)
{
	char buf[GW_ACK_MAX];
	int n;

	pr_mode_refresh(gw);
	n = scsitgt__rbd_ha_ack_format(buf, sizeof(buf), &gw->ha, now_ms(),
				       gw->addr[0] ? gw->addr : "-");

	pthread_mutex_lock(&gw->ack_mu);
	if (n > 0) {
		memcpy(gw->ack, buf, (size_t)n);
		gw->ack_len = (size_t)n;
	}
	pthread_mutex_unlock(&gw->ack_mu);
	atomic_store(&gw->heartbeat_ms, now_ms());
}

/* librados' thread. A loop silent for three intervals answers nothing usable. */
static void watch_cb(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier_id,
		     void *data, size_t data_len)
{
	struct gw_watch *w = arg;
	struct scsitgt_rbd_gateway *gw;
	char buf[GW_ACK_MAX];
	size_t len = 0;

	(void)notifier_id;
	(void)data;
	(void)data_len;
	scsitgt__rbd_handover_take(&w->ho);
	gw = w->gw;
	if (now_ms() - atomic_load(&gw->heartbeat_ms) < 3 * (uint64_t)gw->interval_ms) {
		pthread_mutex_lock(&gw->ack_mu);
		memcpy(buf, gw->ack, gw->ack_len);
		len = gw->ack_len;
		pthread_mutex_unlock(&gw->ack_mu);
	}
	rados_notify_ack(w->io, gw->obj, notify_id, handle, len ? buf : NULL, (unsigned)len);
	scsitgt__rbd_handover_give(&w->ho);
}

static void watch_err_cb(void *arg, uint64_t handle, int err)
{
	struct gw_watch *w = arg;

	/* librados' thread. The next tick watches again (a blocklisted client fails to, and its
	 * next probe says -ESHUTDOWN). */
	(void)handle;
	(void)err;
	scsitgt__rbd_handover_take(&w->ho);
	atomic_store(&w->gw->watch_broken, true);
	scsitgt__rbd_handover_give(&w->ho);
}

/* Worker: create the gateway object if needed and watch it with the current client. */
static int watch_start(struct scsitgt_rbd_gateway *gw, char *addr, size_t addr_size)
{
	struct scsitgt__rbd_ctx *rc = gw->rc;
	rados_write_op_t op;
	struct gw_watch *w;
	char *a = NULL;
	int r;

	if (rc->ioctx == NULL)
		return -ENOTCONN;
	op = rados_create_write_op();
	if (op == NULL)
		return -ENOMEM;
	rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
	r = rados_write_op_operate(op, rc->ioctx, gw->obj, NULL, 0);
	rados_release_write_op(op);
	if (r < 0)
		return r;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->gw = gw;
	w->io = rc->ioctx;
	scsitgt__rbd_handover_give(&w->ho);
	r = rados_watch3(rc->ioctx, gw->obj, &w->handle, watch_cb, watch_err_cb, 0, w);
	if (r < 0) {
		free(w);
		return r;
	}
	w->active = true;
	r = rados_getaddrs(rc->cluster, &a);
	if (r == 0 && a) {
		snprintf(addr, addr_size, "%s", a);
		rados_buffer_free(a);
	}
	/* The loop reads gw->watch only to hand it back to a worker job. */
	gw->watch = w;
	return 0;
}

/* Worker: stop watching with the current (perhaps dead) client. */
static void watch_stop(struct scsitgt_rbd_gateway *gw)
{
	struct gw_watch *w = gw->watch;

	if (w == NULL)
		return;
	if (w->active)
		rados_unwatch2(w->io, w->handle);
	/* No callback runs after this (rados_watch_flush waits for them). */
	if (gw->rc->cluster)
		rados_watch_flush(gw->rc->cluster);
	scsitgt__rbd_handover_take(&w->ho);
	free(w);
	gw->watch = NULL;
}

/* ---- the owner's heartbeat ---- */

/* Loop: take the result of the heartbeat write in flight once it ended. True when none is in
 * flight any more. */
static bool beat_reap(struct scsitgt_rbd_gateway *gw)
{
	int r;

	if (gw->beat_comp == NULL)
		return true;
	if (!rados_aio_is_complete(gw->beat_comp))
		return false;
	r = rados_aio_get_return_value(gw->beat_comp);
	rados_aio_release(gw->beat_comp);
	rados_release_write_op(gw->beat_op);
	gw->beat_comp = NULL;
	gw->beat_op = NULL;
	if (r < 0 && !gw->beat_failing)
		gw_log(gw, SCSITGT_LOG_WARNING, "cannot write the heartbeat: ", strerror(-r), NULL);
	else if (r >= 0 && gw->beat_failing)
		gw_log(gw, SCSITGT_LOG_NOTICE, "the heartbeat is written again", NULL, NULL);
	gw->beat_failing = r < 0;
	gw->beat_err = r < 0 ? r : 0;
	return true;
}

static void act(struct scsitgt_rbd_gateway *gw, unsigned int actions);
static void apply(struct scsitgt_rbd_gateway *gw);

/*
 * Loop, every tick: the owner writes its heartbeat record. One write at a time: while the last
 * one has not ended (an OSD that does not answer, a client cut off), the record stands still
 * and the standbys count the owner's silence as before. The record carries this client's
 * address, so that only the lock's current owner can prove anything with it.
 */
static void beat_tick(struct scsitgt_rbd_gateway *gw)
{
	rados_write_op_t op;
	rados_completion_t c;
	char rec[GW_ACK_MAX];
	int n, r;

	if (!beat_reap(gw) || gw->ha.state != SCSITGT__RBD_HA_OWNER || gw->reconnecting ||
	    gw->rc->ioctx == NULL || gw->addr[0] == '\0')
		return;
	if (gw->beat_err == -ESHUTDOWN) {
		/* Blocklisted: another gateway broke the lock. Found out here even while the
		 * worker thread, where the probes run, is held up. */
		unsigned int actions = scsitgt__rbd_ha_fenced(&gw->ha);

		gw->beat_err = 0;
		gw_log(gw, SCSITGT_LOG_WARNING,
		       "the heartbeat write was refused, this client is blocklisted: another "
		       "gateway took the lock over",
		       NULL, NULL);
		apply(gw);
		act(gw, actions);
		return;
	}
	/* A worker held up past the bound probes nothing and cannot release or hand over the
	 * lock: stop vouching for it, so that a standby takes over. */
	if (!scsitgt__rbd_ha_beat_due(&gw->ha, gw->rewatching ? gw->rewatch_ticks : 0)) {
		if (!gw->beat_stopped)
			gw_log(gw, SCSITGT_LOG_WARNING,
			       "the re-watch hangs past its bound: the heartbeat stops, so that "
			       "another gateway takes the lock over",
			       NULL, NULL);
		gw->beat_stopped = true;
		return;
	}
	gw->beat_stopped = false;
	n = scsitgt__rbd_ha_beat_format(rec, sizeof(rec), &gw->ha, gw->beat_seq + 1, now_ms(),
					gw->addr);
	if (n < 0)
		return;
	op = rados_create_write_op();
	if (op == NULL)
		return;
	/* librados copies the value; no callback: the next tick asks whether it ended. */
	rados_write_op_setxattr(op, GW_BEAT_XATTR, rec, (size_t)n);
	if (rados_aio_create_completion2(NULL, NULL, &c) < 0) {
		rados_release_write_op(op);
		return;
	}
	r = rados_aio_write_op_operate(op, gw->rc->ioctx, c, gw->obj, NULL, 0);
	if (r < 0) {
		rados_aio_release(c);
		rados_release_write_op(op);
		return;
	}
	gw->beat_seq++;
	gw->beat_op = op;
	gw->beat_comp = c;
}

/* ---- ALUA ---- */

/*
 * Make the target's groups say what the model says, and gate the backend: it passes ios to
 * librbd only while this gateway owns the lock (rc->fenced set fails them with NOT READY).
 * Besides the blocklisted client, this keeps a write that slipped past the ALUA check (queued
 * before a state change) from reaching librbd on a client without the lock: librbd would ask
 * the owner for the lock, the very ping-pong this model avoids, or take a free lock behind the
 * model's back.
 */
static void apply(struct scsitgt_rbd_gateway *gw)
{
	const struct scsitgt__rbd_ha *ha = &gw->ha;

	gw->rc->fenced = ha->state != SCSITGT__RBD_HA_OWNER;

	scsitgt_alua_set_state(gw->tgt, ha->cfg.group,
			       (enum scsitgt_alua_state)scsitgt__rbd_ha_alua(ha, ha->cfg.group));
	for (size_t i = 0; i < gw->npeers; i++)
		scsitgt_alua_set_state(
			gw->tgt, gw->peers[i].group_id,
			(enum scsitgt_alua_state)scsitgt__rbd_ha_alua(ha, gw->peers[i].group_id));
	if (ha->state != gw->logged_state) {
		char msg[96];

		snprintf(msg, sizeof(msg), "%s -> ", scsitgt__rbd_ha_state_name(gw->logged_state));
		gw_log(gw,
		       ha->state == SCSITGT__RBD_HA_FENCED ? SCSITGT_LOG_WARNING :
							     SCSITGT_LOG_NOTICE,
		       msg, scsitgt__rbd_ha_state_name(ha->state), NULL);
		gw->logged_state = ha->state;
	}
	ack_refresh(gw);
}

static void probe_start(struct scsitgt_rbd_gateway *gw);
static void reconnect_try(uv_timer_t *t);

/* ---- jobs ---- */

struct gw_job {
	struct scsitgt__rbd_job job;
	struct scsitgt_rbd_gateway *gw;
	/* probe, and how long its lock queries took */
	struct scsitgt__rbd_ha_probe probe;
	uint64_t lock_ms;
	char owner[GW_ADDR_MAX];
	/* acquire */
	bool do_break;
	uint64_t started_ms;
	char broke[GW_ADDR_MAX];
	/* watch (re)start */
	char addr[GW_ADDR_MAX];
};

static void gw_maybe_finish(struct scsitgt_rbd_gateway *gw);

static struct gw_job *job_new(struct scsitgt_rbd_gateway *gw,
			      void (*work)(struct scsitgt__rbd_job *),
			      void (*done)(struct scsitgt__rbd_job *))
{
	struct gw_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->gw = gw;
	j->job.work = work;
	j->job.done = done;
	j->job.arg = j;
	return j;
}

static int job_queue(struct gw_job *j)
{
	int r = scsitgt__rbd_queue_work(j->gw->rc, &j->job);

	if (r < 0) {
		free(j);
		return r;
	}
	j->gw->jobs++;
	return 0;
}

/* Back on the loop: true when the gateway is going away (the job is freed). */
static bool job_end(struct gw_job *j)
{
	struct scsitgt_rbd_gateway *gw = j->gw;

	gw->jobs--;
	if (gw->destroying) {
		free(j);
		gw_maybe_finish(gw);
		return true;
	}
	return false;
}

/* Worker: the lock's owner ("" when none); 0 or a negative errno. */
static int lock_owner(rbd_image_t img, rbd_lock_mode_t *mode, char *owner, size_t size)
{
	char *owners[4];
	size_t n = 4;
	int r;

	owner[0] = '\0';
	r = rbd_lock_get_owners(img, mode, owners, &n);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (n > 0)
		snprintf(owner, size, "%s", owners[0]);
	rbd_lock_get_owners_cleanup(owners, n);
	return 0;
}

static void probe_work(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	struct scsitgt__rbd_ctx *rc = job->rc;
	struct scsitgt__rbd_ha_probe *p = &j->probe;
	struct notify_ack_t *acks = NULL;
	struct notify_timeout_t *tos = NULL;
	size_t nacks = 0, ntos = 0, rlen = 0;
	rbd_lock_mode_t mode;
	char *reply = NULL;
	int mine = 0, r;

	if (rc->image == NULL) {
		p->rc = -ENOTCONN;
		return;
	}
	r = lock_owner(rc->image, &mode, j->owner, sizeof(j->owner));
	if (r == 0)
		r = rbd_is_exclusive_lock_owner(rc->image, &mine);
	if (r < 0) {
		p->rc = r;
		return;
	}
	p->locked = j->owner[0] != '\0';
	p->mine = mine != 0;
	j->lock_ms = now_ms() - j->started_ms;
	r = rados_notify2(rc->ioctx, gw->obj, "probe", 5, gw->timeout_ms, &reply, &rlen);
	if (r < 0 && r != -ETIMEDOUT) {
		p->rc = r;
		if (reply)
			rados_buffer_free(reply);
		return;
	}
	if (reply && rados_decode_notify_response(reply, rlen, &acks, &nacks, &tos, &ntos) == 0) {
		for (size_t i = 0; i < nacks; i++) {
			struct scsitgt__rbd_ha_peer peer;
			char addr[GW_ADDR_MAX];
			uint64_t held;

			if (scsitgt__rbd_ha_ack_parse(acks[i].payload, acks[i].payload_len, &peer,
						      &held, addr, sizeof(addr)) < 0)
				continue;
			if (p->locked && strcmp(addr, j->owner) == 0 && !p->mine) {
				p->owner_alive = true;
				p->owner_group = peer.group;
				p->owner_held_ms = held;
				p->owner_pr = peer.pr;
				p->owner_streak = peer.streak;
			}
			if (peer.group != gw->ha.cfg.group && p->npeers < SCSITGT__RBD_HA_MAX_PEERS)
				p->peers[p->npeers++] = peer;
		}
		rados_free_notify_response(acks, nacks, tos);
	}
	if (reply)
		rados_buffer_free(reply);
	/* The owner's heartbeat record, read after the answers: silent or not, each probe reads
	 * it, so that the next one can tell whether the owner wrote since. */
	snprintf(p->owner_addr, sizeof(p->owner_addr), "%s", j->owner);
	if (p->locked && !p->mine) {
		char rec[GW_ACK_MAX];

		r = rados_getxattr(rc->ioctx, gw->obj, GW_BEAT_XATTR, rec, sizeof(rec));
		p->beat_read = r > 0 &&
			       scsitgt__rbd_ha_beat_parse(rec, (size_t)r, &p->beat_group,
							  &p->beat_seq, &p->beat_held_ms,
							  p->beat_addr, sizeof(p->beat_addr)) == 0;
	}
}

/* A peer keeps the image's reservations otherwise than this gateway: a configuration error
 * (reviewh F12); the one with local reservations never owns the lock while the other
 * answers. */
static void pr_clash_log(struct scsitgt_rbd_gateway *gw)
{
	char msg[256];

	snprintf(msg, sizeof(msg),
		 "%u keeps the persistent reservations %s, this one %s: every gateway of an "
		 "image must share them (scsitgt_backend_rbd_use_pr); %s",
		 gw->pr_clash, gw->ha.pr_shared ? "locally" : "shared",
		 gw->ha.pr_shared ? "shared" : "locally",
		 gw->ha.pr_shared ? "it is fenced if it owns the lock" :
				    "this one never takes the lock");
	gw_log(gw, SCSITGT_LOG_ERROR, "gateway ", msg, NULL);
}

/* A peer's relative target port ids clash with this gateway's configuration (reviewh F11):
 * logged, nothing refused (each side would refuse, and nobody serve). */
static void port_clash_log(struct scsitgt_rbd_gateway *gw)
{
	char msg[200];

	if (gw->ha.port_clash_own)
		snprintf(msg, sizeof(msg),
			 "%u uses relative target port %u, as this one does: initiators' "
			 "registrations through both are one (give every port of the image's "
			 "gateways its own id)",
			 gw->ha.port_clash_group, gw->ha.port_clash_port);
	else
		snprintf(msg, sizeof(msg),
			 "%u does not have relative target port %u, which this gateway's "
			 "configuration gives it (REPORT TARGET PORT GROUPS names the wrong port)",
			 gw->ha.port_clash_group, gw->ha.port_clash_port);
	gw_log(gw, SCSITGT_LOG_ERROR, "gateway ", msg, NULL);
}

static void probe_done(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	unsigned int actions;

	gw->probing = false;
	if (job_end(j))
		return;
	if (job->status == -ECANCELED) {
		free(j);
		return;
	}
	snprintf(gw->owner, sizeof(gw->owner), "%s", j->owner);
	if (j->probe.rc == -ESHUTDOWN) {
		gw_log(gw, SCSITGT_LOG_WARNING,
		       "this client was blocklisted: another gateway took the lock over", NULL,
		       NULL);
		actions = scsitgt__rbd_ha_fenced(&gw->ha);
	} else {
		j->probe.now_ms = now_ms();
		pr_mode_refresh(gw);
		actions = scsitgt__rbd_ha_probed(&gw->ha, &j->probe);
		if (gw->ha.pr_clash != gw->pr_clash) {
			gw->pr_clash = gw->ha.pr_clash;
			if (gw->pr_clash)
				pr_clash_log(gw);
		}
		if (gw->ha.port_clash_group != gw->port_clash) {
			gw->port_clash = gw->ha.port_clash_group;
			if (gw->port_clash)
				port_clash_log(gw);
		}
		if (actions & SCSITGT__RBD_HA_DO_RECONNECT)
			gw_log(gw, SCSITGT_LOG_WARNING, "lost the lock to ",
			       j->owner[0] ? j->owner : "nobody", NULL);
	}
	/* "(heartbeat)": silent, but its record went on since the previous probe. Only a probe
	 * that worked says so: a failed one leaves the model's view as the previous probe set it
	 * (rbd_ha_ownerwatch counts these lines as probes vouched for by the heartbeat). */
	scsitgt__log(&gw->rc->log, SCSITGT_LOG_DEBUG, SCSITGT__RBD_SUBSYS,
		     "%s/%s: gateway %u: probe in %" PRIu64 " ms (lock %" PRIu64
		     " ms): %d, owner %s%s, %zu peer(s)",
		     gw->rc->pool, gw->rc->image_name, gw->ha.cfg.group, now_ms() - j->started_ms,
		     j->lock_ms, j->probe.rc, j->owner[0] ? j->owner : "none",
		     j->probe.rc < 0	  ? " (probe failed)" :
		     j->probe.mine	  ? " (this gateway)" :
		     j->probe.owner_alive ? " (answered)" :
		     gw->ha.owner_beating ? " (heartbeat)" :
					    " (silent)",
		     j->probe.npeers);
	if (j->probe.rc >= 0 && gw->ha.owner_beating != gw->owner_beating) {
		gw->owner_beating = gw->ha.owner_beating;
		gw_log(gw, SCSITGT_LOG_NOTICE,
		       gw->owner_beating ? "the owner answers no probe, but its heartbeat goes on: "
					   "no takeover" :
		       j->probe.owner_alive ? "the owner answers probes again" :
					      "the owner's heartbeat stopped too",
		       NULL, NULL);
	}
	free(j);
	apply(gw);
	act(gw, actions);
	if (gw->probe_due && !gw->destroying)
		probe_start(gw);
}

static void acquire_work(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt__rbd_ctx *rc = job->rc;
	rbd_lock_mode_t mode = RBD_LOCK_MODE_EXCLUSIVE;
	char owner[GW_ADDR_MAX];
	int mine = 0, r;

	if (rc->image == NULL) {
		job->status = -ENOTCONN;
		return;
	}
	if (j->do_break) {
		r = lock_owner(rc->image, &mode, owner, sizeof(owner));
		if (r < 0) {
			job->status = r;
			return;
		}
		/* A takeover of a dead owner breaks that owner only: if the lock moved meanwhile
		 * (another standby was faster), this gateway stands by. */
		if (j->owner[0] && owner[0] && strcmp(owner, j->owner) != 0) {
			job->status = -EAGAIN;
			return;
		}
		if (owner[0]) {
			/* Blocklists the owner's client (fencing it), then removes its lock. */
			r = rbd_lock_break(rc->image, mode, owner);
			if (r < 0 && r != -ENOENT) {
				job->status = r;
				return;
			}
			snprintf(j->broke, sizeof(j->broke), "%s", owner);
		}
	}
	r = rbd_lock_acquire(rc->image, RBD_LOCK_MODE_EXCLUSIVE);
	if (r == 0)
		r = rbd_is_exclusive_lock_owner(rc->image, &mine);
	if (r == 0 && !mine)
		r = -EROFS;
	job->status = r;
}

static void acquire_done(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	unsigned int actions;
	char msg[GW_ADDR_MAX + 64];

	gw->acquiring = false;
	if (job_end(j))
		return;
	if (job->status == 0) {
		snprintf(msg, sizeof(msg), " in %" PRIu64 " ms%s%s", now_ms() - j->started_ms,
			 j->broke[0] ? ", broke the lock of " : "", j->broke);
		gw_log(gw, SCSITGT_LOG_NOTICE, "took the lock", msg, NULL);
	} else {
		gw_log(gw, SCSITGT_LOG_NOTICE, "did not take the lock: ", strerror(-job->status),
		       NULL);
	}
	actions = scsitgt__rbd_ha_acquired(
		&gw->ha, job->status == -ECANCELED ? -EAGAIN : job->status, now_ms());
	free(j);
	apply(gw);
	act(gw, actions);
}

/* Worker: replace the blocklisted client with a fresh one, then watch again. */
static void reconnect_work(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	int r;

	watch_stop(gw);
	r = scsitgt__rbd_reconnect(job->rc);
	if (r == 0) {
		atomic_store(&gw->watch_broken, false);
		r = watch_start(gw, j->addr, sizeof(j->addr));
	}
	job->status = r;
}

static void reconnect_done(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	unsigned int actions;

	gw->reconnecting = false;
	if (job->status == 0) {
		snprintf(gw->addr, sizeof(gw->addr), "%s", j->addr);
		/* The old client's refused heartbeat says nothing of the new one. */
		gw->beat_err = 0;
		gw_log(gw, SCSITGT_LOG_NOTICE, "reconnected as ", gw->addr, NULL);
	} else {
		gw_log(gw, SCSITGT_LOG_WARNING, "reconnection failed: ", strerror(-job->status),
		       NULL);
	}
	if (job_end(j))
		return;
	actions = scsitgt__rbd_ha_reconnected(&gw->ha,
					      job->status == -ECANCELED ? -EAGAIN : job->status);
	free(j);
	apply(gw);
	if (actions & SCSITGT__RBD_HA_DO_RECONNECT)
		uv_timer_start(&gw->retry, reconnect_try, GW_RETRY_MS, 0);
}

/* Worker: the watch broke; watch again with the same client. */
static void rewatch_work(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;

	watch_stop(gw);
	/* Fault injection: the re-watch hangs, as a rados_watch3() waiting for an OSD does. */
	pthread_mutex_lock(&gw->fault_mu);
	while (gw->fault_hold)
		pthread_cond_wait(&gw->fault_cv, &gw->fault_mu);
	pthread_mutex_unlock(&gw->fault_mu);
	job->status = watch_start(gw, j->addr, sizeof(j->addr));
}

static void rewatch_done(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	int status = job->status;

	gw->rewatching = false;
	if (job_end(j))
		return;
	free(j);
	if (status == 0) {
		gw_log(gw, SCSITGT_LOG_NOTICE, "watching the gateway object again", NULL, NULL);
		ack_refresh(gw);
		return;
	}
	/* Tried again at the next tick; a blocklisted client is found out by its probe. */
	atomic_store(&gw->watch_broken, true);
	gw_log(gw, SCSITGT_LOG_WARNING,
	       "cannot watch the gateway object again: ", strerror(-status), NULL);
}

static void start_rewatch(struct scsitgt_rbd_gateway *gw)
{
	struct gw_job *j;

	if (gw->rewatching || gw->reconnecting || gw->destroying ||
	    gw->ha.state == SCSITGT__RBD_HA_FENCED)
		return;
	j = job_new(gw, rewatch_work, rewatch_done);
	if (j == NULL)
		return;
	atomic_store(&gw->watch_broken, false);
	if (job_queue(j) < 0) {
		atomic_store(&gw->watch_broken, true);
		return;
	}
	gw->rewatching = true;
	gw->rewatch_ticks = 0;
	gw_log(gw, SCSITGT_LOG_WARNING, "the watch of the gateway object broke: watching again",
	       NULL, NULL);
}

/* ---- actions ---- */

static void start_acquire(struct scsitgt_rbd_gateway *gw, bool do_break, bool any_owner)
{
	struct gw_job *j;

	if (gw->acquiring)
		return;
	j = job_new(gw, acquire_work, acquire_done);
	if (j == NULL)
		goto fail;
	j->do_break = do_break;
	j->started_ms = now_ms();
	if (!any_owner)
		snprintf(j->owner, sizeof(j->owner), "%s", gw->owner);
	if (job_queue(j) < 0)
		goto fail;
	gw->acquiring = true;
	return;
fail:
	scsitgt__rbd_ha_acquired(&gw->ha, -ENOMEM, now_ms());
	apply(gw);
}

static void start_reconnect(struct scsitgt_rbd_gateway *gw)
{
	struct gw_job *j;

	if (gw->reconnecting || gw->destroying)
		return;
	/* The old client's ios must all have ended (they fail: blocklisted) before its image
	 * is closed, on every loop: set fenced (again) first, then sum the loops' counts; a loop
	 * counts an io before it reads fenced (rbd_int.h), so none reaches the image any more
	 * once the sum is 0. The core sends no new ones anyway (the group is unavailable). */
	gw->rc->fenced = true;
	/* The heartbeat write in flight, too: its client is about to be shut down (it fails at
	 * once when blocklisted, within op_timeout_s when cut off). */
	if (scsitgt__rbd_ios_inflight(gw->rc) > 0 || !beat_reap(gw)) {
		uv_timer_start(&gw->retry, reconnect_try, GW_DRAIN_POLL_MS, 0);
		return;
	}
	j = job_new(gw, reconnect_work, reconnect_done);
	if (j == NULL) {
		uv_timer_start(&gw->retry, reconnect_try, GW_RETRY_MS, 0);
		return;
	}
	if (job_queue(j) < 0) {
		uv_timer_start(&gw->retry, reconnect_try, GW_RETRY_MS, 0);
		return;
	}
	gw->reconnecting = true;
}

static void reconnect_try(uv_timer_t *t)
{
	struct scsitgt_rbd_gateway *gw = t->data;

	if (gw->ha.state == SCSITGT__RBD_HA_FENCED)
		start_reconnect(gw);
}

static void act(struct scsitgt_rbd_gateway *gw, unsigned int actions)
{
	if (gw->destroying)
		return;
	if (actions & SCSITGT__RBD_HA_DO_RECONNECT)
		start_reconnect(gw);
	if (actions & SCSITGT__RBD_HA_DO_BREAK)
		start_acquire(gw, true, false);
	else if (actions & SCSITGT__RBD_HA_DO_ACQUIRE)
		start_acquire(gw, false, false);
}

static void probe_start(struct scsitgt_rbd_gateway *gw)
{
	struct gw_job *j;

	gw->probe_due = false;
	if (gw->reconnecting || gw->ha.state == SCSITGT__RBD_HA_FENCED)
		return;
	j = job_new(gw, probe_work, probe_done);
	if (j == NULL)
		return;
	j->started_ms = now_ms();
	if (job_queue(j) < 0)
		return;
	gw->probing = true;
}

/* Every interval: a probe, or, if the last one is still waiting for answers (a dead owner's
 * lingering watch makes it last probe_timeout_ms), one right after it. */
static void tick_cb(uv_timer_t *t)
{
	struct scsitgt_rbd_gateway *gw = t->data;

	ack_refresh(gw);
	if (gw->rewatching && gw->rewatch_ticks < UINT32_MAX)
		gw->rewatch_ticks++;
	beat_tick(gw);
	if (atomic_load(&gw->watch_broken))
		start_rewatch(gw);
	if (gw->probing) {
		gw->probe_due = true;
		return;
	}
	probe_start(gw);
}

/* ---- hooks ---- */

static void hook_fenced(struct scsitgt__rbd_ctx *rc, void *arg)
{
	struct scsitgt_rbd_gateway *gw = arg;
	unsigned int actions;

	(void)rc;
	actions = scsitgt__rbd_ha_fenced(&gw->ha);
	apply(gw);
	act(gw, actions);
}

static void hook_io_failed(struct scsitgt__rbd_ctx *rc, int err, void *arg)
{
	struct scsitgt_rbd_gateway *gw = arg;

	/* -EROFS while this gateway believes it owns the lock: it does not any more. The io
	 * fails as the backend maps it (NOT READY), and the gateway starts over as fenced. */
	(void)rc;
	if (err == -EROFS && gw->ha.state == SCSITGT__RBD_HA_OWNER) {
		unsigned int actions;

		gw_log(gw, SCSITGT_LOG_WARNING, "a write was refused (-EROFS): lost the lock", NULL,
		       NULL);
		actions = scsitgt__rbd_ha_fenced(&gw->ha);
		apply(gw);
		act(gw, actions);
	}
}

/* SET TARGET PORT GROUPS (SPC-5 §6.50) through this gateway. */
static int hook_request(void *arg, struct scsitgt_target *tgt, uint16_t group_id,
			enum scsitgt_alua_state old_state, enum scsitgt_alua_state new_state)
{
	struct scsitgt_rbd_gateway *gw = arg;
	unsigned int actions = 0;
	int r;

	(void)tgt;
	(void)old_state;
	if (gw->destroying)
		return -ESHUTDOWN;
	pr_mode_refresh(gw);
	r = scsitgt__rbd_ha_request(&gw->ha, group_id, (uint8_t)new_state, now_ms(), &actions);
	if (r < 0) {
		gw_log(gw, SCSITGT_LOG_NOTICE, "SET TARGET PORT GROUPS refused: ", strerror(-r),
		       NULL);
		return r;
	}
	if (gw->ha.stpg_took) {
		/* Each such takeover fences a live gateway (a blocklist entry for an hour): name
		 * who asks, in case a multipath configuration keeps asking (reviewh F8). */
		const char *who = scsitgt__alua_requester();
		char msg[200];

		snprintf(msg, sizeof(msg),
			 "%s takes the lock from the live owner (group %u, held %" PRIu64
			 " ms, takeover %u in a row; the next one waits %" PRIu64 " ms)",
			 who ? who : "an initiator", gw->ha.owner_group, gw->ha.owner_held_ms,
			 (unsigned int)gw->ha.next_streak,
			 scsitgt__rbd_ha_holddown(&gw->ha, gw->ha.next_streak));
		gw_log(gw, SCSITGT_LOG_WARNING, "SET TARGET PORT GROUPS from ", msg, NULL);
	} else if (actions) {
		gw_log(gw, SCSITGT_LOG_NOTICE, "SET TARGET PORT GROUPS: taking the lock over", NULL,
		       NULL);
	}
	/* The requester wants this gateway active whoever owns the lock now. */
	if (actions & SCSITGT__RBD_HA_DO_BREAK) {
		start_acquire(gw, true, true);
		actions &= ~(unsigned int)SCSITGT__RBD_HA_DO_BREAK;
	}
	apply(gw);
	act(gw, actions);
	return SCSITGT_ALUA_REQUEST_DEFERRED;
}

/* ---- create, destroy ---- */

static void watch_first_work(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;

	job->status = watch_start(j->gw, j->addr, sizeof(j->addr));
}

static void watch_first_done(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	int status = job->status;

	if (job_end(j))
		return;
	if (status == 0)
		snprintf(gw->addr, sizeof(gw->addr), "%s", j->addr);
	free(j);
	/* The first probe at once, then every interval. */
	uv_timer_start(&gw->tick, tick_cb, 0, gw->interval_ms);
	if (status < 0) {
		/* Unwatched, this gateway's answers would never reach the others, and they would
		 * take the lock from it: start over with a fresh client instead. */
		gw_log(gw, SCSITGT_LOG_ERROR,
		       "cannot watch the gateway object: ", strerror(-status), NULL);
		unsigned int actions = scsitgt__rbd_ha_fenced(&gw->ha);

		apply(gw);
		act(gw, actions);
		return;
	}
	ack_refresh(gw);
	gw_log(gw, SCSITGT_LOG_NOTICE, "joined as ", gw->addr, NULL);
}

/* The request hook and modes of a gateway's target: explicit changes go through
 * hook_request. */
static void alua_opts_fill(struct scsitgt_alua_opts *ao, const struct scsitgt_rbd_gateway_opts *o,
			   struct scsitgt_rbd_gateway *gw)
{
	uint64_t itt;

	scsitgt_alua_opts_init(ao, sizeof(*ao));
	ao->modes = SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT;
	/* IMPLICIT TRANSITION TIME: detecting a dead owner and taking its lock, with margin. */
	itt = ((uint64_t)o->probe_misses * 2 * o->probe_interval_ms + o->probe_timeout_ms) / 1000 +
	      5;
	ao->implicit_transition_secs = (uint8_t)(itt > 255 ? 255 : itt);
	ao->request_cb = hook_request;
	ao->request_arg = gw;
}

/*
 * The groups and ports first, the hook last: until everything succeeded nothing of the
 * target points at @gw, which a failure frees (an STPG naming an existing group calls the
 * hook: it would run on freed memory). On failure the groups this call created go again.
 */
static int alua_setup(struct scsitgt_rbd_gateway *gw, const struct scsitgt_rbd_gateway_opts *o)
{
	struct scsitgt_alua_opts ao;
	uint16_t made[1 + SCSITGT__RBD_HA_MAX_PEERS];
	size_t nmade = 0;
	int r;

	r = scsitgt_alua_group_create(gw->tgt, o->group_id, SCSITGT_ALUA_STANDBY);
	if (r == 0)
		made[nmade++] = o->group_id;
	for (size_t i = 0; r == 0 && i < o->nrel_port_ids; i++)
		r = scsitgt_alua_group_add_port(gw->tgt, o->group_id, o->rel_port_ids[i]);
	if (r == 0)
		r = scsitgt_alua_set_preferred(gw->tgt, o->group_id, o->preferred);
	for (size_t i = 0; r == 0 && i < o->npeers; i++) {
		r = scsitgt_alua_group_create(gw->tgt, o->peers[i].group_id,
					      SCSITGT_ALUA_UNAVAILABLE);
		if (r == 0)
			made[nmade++] = o->peers[i].group_id;
		if (r == 0 && o->peers[i].rel_port_id)
			r = scsitgt_alua_group_add_port(gw->tgt, o->peers[i].group_id,
							o->peers[i].rel_port_id);
	}
	if (r == 0) {
		alua_opts_fill(&ao, o, gw);
		r = scsitgt_alua_configure(gw->tgt, &ao);
	}
	if (r < 0)
		while (nmade > 0)
			scsitgt_alua_group_destroy(gw->tgt, made[--nmade]);
	return r;
}

static void handle_closed(uv_handle_t *h)
{
	struct scsitgt_rbd_gateway *gw = h->data;

	if (--gw->handles_open > 0)
		return;
	if (gw->destroy_cb)
		gw->destroy_cb(gw->destroy_cb_arg, 0);
	pthread_mutex_destroy(&gw->ack_mu);
	pthread_mutex_destroy(&gw->fault_mu);
	pthread_cond_destroy(&gw->fault_cv);
	free(gw);
}

static void gw_free(struct scsitgt_rbd_gateway *gw)
{
	gw->handles_open = 2;
	uv_close((uv_handle_t *)&gw->tick, handle_closed);
	uv_close((uv_handle_t *)&gw->retry, handle_closed);
}

SCSITGT_EXPORT int scsitgt_rbd_gateway_create(struct scsitgt_rbd_gateway **gw_out,
					      struct scsitgt_target *tgt, void *bctx,
					      const struct scsitgt_rbd_gateway_opts *opts)
{
	struct scsitgt__rbd_ctx *rc = bctx;
	struct scsitgt_rbd_gateway_opts o;
	struct scsitgt__rbd_ha_cfg cfg;
	struct scsitgt_rbd_gateway *gw;
	struct gw_job *j;
	int r;

	if (gw_out == NULL || tgt == NULL || rc == NULL || opts == NULL || opts->size == 0)
		return -EINVAL;
	scsitgt_rbd_gateway_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	if (o.group_id == 0 || o.npeers >= SCSITGT__RBD_HA_MAX_PEERS ||
	    o.nrel_port_ids > SCSITGT_ALUA_MAX_PORTS || (o.npeers && o.peers == NULL) ||
	    (o.nrel_port_ids && o.rel_port_ids == NULL) || o.probe_interval_ms == 0 ||
	    o.probe_timeout_ms == 0)
		return -EINVAL;
	for (size_t i = 0; i < o.npeers; i++)
		if (o.peers[i].group_id == 0 || o.peers[i].group_id == o.group_id)
			return -EINVAL;
	if (!rc->opened || rc->closing || rc->hooks.arg != NULL)
		return -EBUSY;
	/* A write acknowledged from the client cache of a gateway that is then fenced is lost,
	 * and another gateway reads past it (docs/rbd.md, "Requirements and limits"). */
	if (rc->cache) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: a gateway needs the image without librbd's client cache "
			     "(write_through)",
			     rc->pool, rc->image_name);
		return -EINVAL;
	}
	/* The single writer rests on rbd_lock_break() fencing the owner it breaks: without the
	 * blocklisting the old owner's librbd still believes it holds the lock and its queued and
	 * newly admitted writes land after the new owner's; with a short one, a stall longer than
	 * it does the same (docs/rbd.md, "Requirements and limits"). */
	if (!rc->break_blocklists) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: a gateway needs rbd_blocklist_on_break_lock = true (a broken "
			     "lock must fence its old owner)",
			     rc->pool, rc->image_name);
		return -EINVAL;
	}
	if (rc->blocklist_expire_s != 0 && rc->blocklist_expire_s < SCSITGT__RBD_BLOCKLIST_MIN_S) {
		scsitgt__log(&rc->log, SCSITGT_LOG_ERROR, SCSITGT__RBD_SUBSYS,
			     "%s/%s: a gateway needs rbd_blocklist_expire_seconds = 0 (the "
			     "monitors' default) or at least %u, not %" PRIu64
			     " (a fenced owner stalled longer would write again)",
			     rc->pool, rc->image_name, (unsigned)SCSITGT__RBD_BLOCKLIST_MIN_S,
			     rc->blocklist_expire_s);
		return -EINVAL;
	}
	/* A zero-copy write queued to a hung OSD completes only when its connection resets, not
	 * within op_timeout_s: a fenced gateway's reconnection waits that long for it. */
	if (rc->zc_writes)
		scsitgt__log(
			&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			"%s/%s: librbd's zero-copy writes (rbd_disable_zero_copy_writes = false) "
			"are not bounded by op_timeout_s: a fenced gateway may take that long "
			"to reconnect",
			rc->pool, rc->image_name);
	gw = calloc(1, sizeof(*gw));
	if (gw == NULL)
		return -ENOMEM;
	gw->rc = rc;
	gw->tgt = tgt;
	gw->loop = rc->loop;
	gw->interval_ms = o.probe_interval_ms;
	/* RADOS counts a notify's timeout in whole seconds, rounded down, and 0 means its
	 * default (osd_default_notify_timeout, 30 s): below a second, a probe of a dead owner
	 * would wait for the owner's watch to expire. */
	gw->timeout_ms = o.probe_timeout_ms < 1000 ? 1000 : o.probe_timeout_ms;
	gw->npeers = o.npeers;
	memcpy(gw->peers, o.peers, o.npeers * sizeof(o.peers[0]));
	snprintf(gw->obj, sizeof(gw->obj), GW_OBJ_PREFIX "%s", rc->image_id);
	memset(&cfg, 0, sizeof(cfg));
	cfg.group = o.group_id;
	cfg.preferred = o.preferred;
	cfg.misses = o.probe_misses;
	/* "probe_misses probes of silence": each lasts the probe's timeout for a dead owner */
	cfg.silence_ms = (uint64_t)o.probe_misses * gw->timeout_ms;
	cfg.holddown_ms = o.holddown_ms;
	cfg.npeer_groups = o.npeers;
	for (size_t i = 0; i < o.npeers; i++) {
		cfg.peer_groups[i] = o.peers[i].group_id;
		cfg.peer_ports[i] = o.peers[i].rel_port_id;
	}
	cfg.nports = o.nrel_port_ids < SCSITGT__RBD_HA_PORTS_MAX ? o.nrel_port_ids :
								   SCSITGT__RBD_HA_PORTS_MAX;
	for (size_t i = 0; i < cfg.nports; i++)
		cfg.ports[i] = o.rel_port_ids[i];
	scsitgt__rbd_ha_init(&gw->ha, &cfg);
	gw->logged_state = gw->ha.state;
	pthread_mutex_init(&gw->ack_mu, NULL);
	pthread_mutex_init(&gw->fault_mu, NULL);
	pthread_cond_init(&gw->fault_cv, NULL);
	uv_timer_init(gw->loop, &gw->tick);
	uv_timer_init(gw->loop, &gw->retry);
	gw->tick.data = gw;
	gw->retry.data = gw;
	alua_opts_fill(&gw->alua_off, &o, gw);
	gw->alua_off.modes = SCSITGT_ALUA_IMPLICIT;
	gw->alua_off.request_cb = NULL;
	gw->alua_off.request_arg = NULL;
	j = job_new(gw, watch_first_work, watch_first_done);
	if (j == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	/* The worker first, before the target changes: with it running (and the context not
	 * closing, checked above) the job below cannot fail to queue, so no failure comes after
	 * alua_setup(), whose own failure leaves the target's ALUA as it was. (Undoing after a
	 * failed queue could not: the host's modes and hook are not known here; review34 N6.) */
	r = scsitgt__rbd_worker_start(rc);
	if (r == 0)
		r = alua_setup(gw, &o);
	if (r < 0) {
		free(j);
		goto fail;
	}
	r = job_queue(j);
	assert(r == 0);
	rc->hooks.arg = gw;
	rc->hooks.fenced = hook_fenced;
	rc->hooks.io_failed = hook_io_failed;
	apply(gw);
	*gw_out = gw;
	return 0;
fail:
	gw_free(gw);
	return r;
}

/* Worker: the last job. */
static void leave_work(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;
	int mine = 0;

	/* The last heartbeat write, before the client it went through can be shut down. */
	if (gw->beat_comp) {
		rados_aio_wait_for_complete(gw->beat_comp);
		rados_aio_release(gw->beat_comp);
		rados_release_write_op(gw->beat_op);
		gw->beat_comp = NULL;
		gw->beat_op = NULL;
	}
	if (job->rc->image && rbd_is_exclusive_lock_owner(job->rc->image, &mine) == 0 && mine)
		rbd_lock_release(job->rc->image);
	watch_stop(gw);
}

static void leave_done(struct scsitgt__rbd_job *job)
{
	struct gw_job *j = job->arg;
	struct scsitgt_rbd_gateway *gw = j->gw;

	free(j);
	gw->jobs--;
	gw->handles_closed = true;
	gw_free(gw);
}

static void gw_maybe_finish(struct scsitgt_rbd_gateway *gw)
{
	struct gw_job *j;

	if (gw->jobs > 0 || gw->handles_closed)
		return;
	j = job_new(gw, leave_work, leave_done);
	if (j == NULL || scsitgt__rbd_queue_work(gw->rc, &j->job) < 0) {
		free(j);
		/* No worker to wait on: a heartbeat write that ended is released; one still in
		 * flight is left unreleased rather than freed under librados (a small leak on a
		 * path that needs the context closing first; writes take milliseconds). */
		beat_reap(gw);
		gw->handles_closed = true;
		gw_free(gw);
		return;
	}
	gw->jobs++;
}

/* Loop: the watch fault on or off (testing.h). */
static void watch_fault_set(struct scsitgt_rbd_gateway *gw, bool hold)
{
	bool was;

	pthread_mutex_lock(&gw->fault_mu);
	was = gw->fault_hold;
	gw->fault_hold = hold;
	pthread_cond_broadcast(&gw->fault_cv);
	pthread_mutex_unlock(&gw->fault_mu);
	if (hold == was)
		return;
	if (hold) {
		/* What librados' watch error callback does: the next tick watches again. */
		atomic_store(&gw->watch_broken, true);
		gw_log(gw, SCSITGT_LOG_WARNING,
		       "fault injection: the watch of the gateway object breaks, its re-watch hangs",
		       NULL, NULL);
	} else {
		gw_log(gw, SCSITGT_LOG_NOTICE, "fault injection: the re-watch may go on", NULL,
		       NULL);
	}
}

SCSITGT_EXPORT void scsitgt_rbd_gateway_destroy(struct scsitgt_rbd_gateway *gw, scsitgt_done_cb cb,
						void *cb_arg)
{
	if (gw == NULL || gw->destroying)
		return;
	gw->destroying = true;
	gw->destroy_cb = cb;
	gw->destroy_cb_arg = cb_arg;
	uv_timer_stop(&gw->tick);
	uv_timer_stop(&gw->retry);
	/* A re-watch held by fault injection must end for the last job to run. */
	watch_fault_set(gw, false);
	if (gw->rc->hooks.arg == gw)
		memset(&gw->rc->hooks, 0, sizeof(gw->rc->hooks));
	/* The target outlives the gateway: its SET TARGET PORT GROUPS must not reach a gateway
	 * that is going (freed once its last job ended). Implicit ALUA only, without a hook; the
	 * groups stay as they are (backend_rbd_gateway.h). */
	scsitgt_alua_configure(gw->tgt, &gw->alua_off);
	/* The target is going away; nothing more reaches librbd through this gateway. */
	gw->rc->fenced = true;
	gw_maybe_finish(gw);
}

SCSITGT_EXPORT int scsitgt_rbd_gateway_set_watch_fault(struct scsitgt_rbd_gateway *gw, bool hold)
{
	if (gw == NULL)
		return -EINVAL;
	watch_fault_set(gw, hold);
	return 0;
}
