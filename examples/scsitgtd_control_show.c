/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's control methods that read the daemon's state (scsitgtd_control.c serves them):
 * show (portals, targets, LUNs, access lists, sessions) and stats (the library's counters,
 * also what the metrics listener formats).
 */
#include <stdint.h>

#include "scsitgtd_control_int.h"

/* ---- show ---- */

static const char *backend_name(enum scsitgtd_backend b)
{
	switch (b) {
	case SCSITGTD_BACKEND_RAM:
		return "ram";
	case SCSITGTD_BACKEND_NULL:
		return "null";
	case SCSITGTD_BACKEND_FILE:
		return "file";
	case SCSITGTD_BACKEND_BLOCK:
		return "block";
	case SCSITGTD_BACKEND_RBD:
		return "rbd";
	default:
		return "?";
	}
}

struct show_walk {
	struct scsitgtd *d;
	const struct scsitgtd_target *conf;
	json_object *arr;
};

/* A LUN of the configuration, @l (NULL: not in it), with running LUN @lun (NULL: none). */
static json_object *lun_json(const struct scsitgtd_lun *l, struct scsitgt_lun *lun, uint64_t id,
			     enum scsitgtd_lun_run state, const char *why)
{
	static const char *const states[] = { [SCSITGTD_LUN_RUNNING] = "running",
					      [SCSITGTD_LUN_OPENING] = "opening",
					      [SCSITGTD_LUN_FAILED] = "failed" };
	struct scsitgt_lun_geometry g = { .size = sizeof(g) };
	json_object *o = json_object_new_object(), *vis;

	json_object_object_add(o, "id", ju64(id));
	json_object_object_add(o, "backend", jstr(l ? backend_name(l->backend) : NULL));
	if (l && l->path)
		json_object_object_add(o, "path", jstr(l->path));
	if (lun && scsitgt_lun_get_geometry(lun, &g) == 0) {
		json_object_object_add(o, "size", ju64(g.num_blocks * g.block_size));
		json_object_object_add(o, "block_size", ju64(g.block_size));
	} else if (lun == NULL && l && l->size) {
		/* As asked (a file's or image's own size is known once it is open). */
		json_object_object_add(o, "size", ju64(l->size));
		json_object_object_add(o, "block_size", ju64(l->block_size ? l->block_size : 512));
	}
	json_object_object_add(
		o, "offline",
		json_object_new_boolean(lun ? scsitgt_lun_get_offline(lun) : l && l->offline));
	json_object_object_add(o, "read_only",
			       json_object_new_boolean(l && (l->flags & SCSITGTD_LUN_READ_ONLY)));
	vis = json_object_new_array();
	for (size_t i = 0; l && i < l->nvisible_to; i++)
		json_object_array_add(vis, jstr(l->visible_to[i]));
	json_object_object_add(o, "visible_to", vis);
	json_object_object_add(o, "state", jstr(states[state]));
	if (why)
		json_object_object_add(o, "error", jstr(why));
	return o;
}

static int show_lun(void *arg, struct scsitgt_lun *lun)
{
	struct show_walk *w = arg;
	uint64_t id = scsitgt_lun_get_id(lun);

	json_object_array_add(w->arr, lun_json(scsitgtd_config_find_lun(w->conf, id), lun, id,
					       SCSITGTD_LUN_RUNNING, NULL));
	return 0;
}

static int by_id(const void *a, const void *b)
{
	json_object *x, *y;
	uint64_t i, j;

	json_object_object_get_ex(*(json_object *const *)a, "id", &x);
	json_object_object_get_ex(*(json_object *const *)b, "id", &y);
	i = json_object_get_uint64(x);
	j = json_object_get_uint64(y);
	return (i > j) - (i < j);
}

/* The LUNs of target @tgt: those it serves, and those its configuration asks for that it does
 * not (their image opening, or failed, and why), by id. */
static json_object *luns_json(struct scsitgtd *d, struct scsitgt_target *tgt,
			      const struct scsitgtd_target *t)
{
	struct show_walk w = { .d = d, .conf = t, .arr = json_object_new_array() };

	scsitgt_target_foreach_lun(tgt, show_lun, &w);
	for (size_t i = 0; i < t->nluns; i++) {
		const char *why;
		enum scsitgtd_lun_run s = scsitgtd_lun_run(d, t, t->luns[i].id, &why);

		if (s != SCSITGTD_LUN_RUNNING)
			json_object_array_add(w.arr,
					      lun_json(&t->luns[i], NULL, t->luns[i].id, s, why));
	}
	json_object_array_sort(w.arr, by_id);
	return w.arr;
}

static int show_session(void *arg, const struct scsitgt_session_stats *s)
{
	struct show_walk *w = arg;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "initiator_name", jstr(s->initiator_name));
	json_object_object_add(o, "initiator_port", jstr(s->initiator_port));
	json_object_object_add(o, "address", jstr(s->initiator_addr));
	json_object_object_add(o, "target_port", jstr(s->target_port));
	json_object_array_add(w->arr, o);
	return 0;
}

/* The LUNs of target @t, which does not run: each failed, as its target. */
static json_object *luns_json_failed(struct scsitgtd *d, const struct scsitgtd_target *t)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < t->nluns; i++) {
		const char *why;
		enum scsitgtd_lun_run s = scsitgtd_lun_run(d, t, t->luns[i].id, &why);

		json_object_array_add(arr, lun_json(&t->luns[i], NULL, t->luns[i].id, s, why));
	}
	json_object_array_sort(arr, by_id);
	return arr;
}

/* Target @t of the configuration, running as @tgt or, NULL, not created (@slot says why). */
static json_object *target_json(struct scsitgtd *d, struct scsitgt_target *tgt,
				const struct scsitgtd_target *t, const struct scsitgtd_tgt *slot)
{
	json_object *o = json_object_new_object(), *a;
	struct show_walk w = { .d = d, .conf = t };

	json_object_object_add(o, "name", jstr(tgt ? scsitgt_target_get_name(tgt) : t->name));
	if (t->alias)
		json_object_object_add(o, "alias", jstr(t->alias));
	if (tgt) {
		json_object_object_add(o, "state", jstr("running"));
	} else {
		json_object_object_add(o, "state", jstr(slot->waiting ? "waiting" : "failed"));
		json_object_object_add(o, "error", jstr(slot->why));
	}
	json_object_object_add(o, "luns", tgt ? luns_json(d, tgt, t) : luns_json_failed(d, t));
	a = json_object_new_array();
	for (size_t i = 0; i < t->ninitiators; i++)
		json_object_array_add(a, jstr(t->initiators[i]));
	json_object_object_add(o, "initiators", a);
	a = json_object_new_array();
	for (size_t i = 0; i < t->naddresses; i++) {
		json_object *x = json_object_new_object();

		if (t->addresses[i].initiator)
			json_object_object_add(x, "initiator", jstr(t->addresses[i].initiator));
		json_object_object_add(x, "cidr", jstr(t->addresses[i].cidr));
		json_object_array_add(a, x);
	}
	json_object_object_add(o, "addresses", a);
	json_object_object_add(o, "chap", json_object_new_boolean(t->chap_user != NULL));
	w.arr = json_object_new_array();
	if (tgt)
		scsitgt_target_foreach_session(tgt, show_session, &w);
	json_object_object_add(o, "sessions", w.arr);
	return o;
}

static json_object *show_target(struct scsitgtd *d, struct scsitgt_target *tgt,
				const struct scsitgtd_target *t)
{
	return target_json(d, tgt, t, NULL);
}

struct target_walk {
	struct scsitgtd *d;
	json_object *arr;
	json_object *(*fn)(struct scsitgtd *d, struct scsitgt_target *tgt,
			   const struct scsitgtd_target *t);
};

static int target_visit(void *arg, struct scsitgt_target *tgt)
{
	struct target_walk *w = arg;
	const struct scsitgtd_target *t =
		scsitgtd_config_find_target(w->d->cfg, scsitgt_target_get_name(tgt));

	if (t)
		json_object_array_add(w->arr, w->fn(w->d, tgt, t));
	return 0;
}

static json_object *targets_json(struct scsitgtd *d,
				 json_object *(*fn)(struct scsitgtd *, struct scsitgt_target *,
						    const struct scsitgtd_target *))
{
	struct target_walk w = { .d = d, .arr = json_object_new_array(), .fn = fn };

	scsitgt_engine_foreach_target(d->engine, target_visit, &w);
	return w.arr;
}

void ctl_show(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	(void)params;
	for (size_t i = 0; i < d->cfg->nportals; i++) {
		const struct scsitgtd_portal *p = &d->cfg->portals[i];
		json_object *x = json_object_new_object();

		json_object_object_add(
			x, "transport",
			jstr(p->transport == SCSITGTD_TRANSPORT_ISER ? "iser" : "tcp"));
		json_object_object_add(x, "address", jstr(p->address));
		json_object_object_add(
			x, "port",
			ju64(d->portals[i] ? scsitgt_portal_get_port(d->portals[i]) : p->port));
		json_object_object_add(x, "tpgt", ju64(p->tpgt));
		json_object_object_add(x, "listening",
				       json_object_new_boolean(d->portals[i] != NULL));
		json_object_array_add(a, x);
	}
	json_object_object_add(o, "portals", a);
	a = targets_json(d, show_target);
	/* The configuration's targets that were not created, after the running ones. */
	for (size_t i = 0; i < d->cfg->ntargets; i++)
		if (d->tgts[i].tgt == NULL)
			json_object_array_add(
				a, target_json(d, NULL, &d->cfg->targets[i], &d->tgts[i]));
	json_object_object_add(o, "targets", a);
	r->result = o;
}

/* ---- stats ---- */

static json_object *counters_json(const struct scsitgt_cmd_counters *c)
{
	json_object *o = json_object_new_object(), *cc = json_object_new_array();

	json_object_object_add(o, "read_cmds", ju64(c->read_cmds));
	json_object_object_add(o, "write_cmds", ju64(c->write_cmds));
	json_object_object_add(o, "other_cmds", ju64(c->other_cmds));
	json_object_object_add(o, "bytes_read", ju64(c->bytes_read));
	json_object_object_add(o, "bytes_written", ju64(c->bytes_written));
	for (int k = 0; k < 16; k++)
		json_object_array_add(cc, ju64(c->check_conditions[k]));
	json_object_object_add(o, "check_conditions", cc);
	json_object_object_add(o, "reservation_conflicts", ju64(c->reservation_conflicts));
	json_object_object_add(o, "busy", ju64(c->busy));
	json_object_object_add(o, "aborted", ju64(c->aborted));
	json_object_object_add(o, "tmfs", ju64(c->tmfs));
	return o;
}

static int stats_lun(void *arg, struct scsitgt_lun *lun)
{
	json_object *arr = arg, *o, *lat;
	struct scsitgt_lun_stats s;

	s.size = sizeof(s);
	if (scsitgt_lun_get_stats(lun, &s) < 0)
		return 0;
	o = json_object_new_object();
	json_object_object_add(o, "id", ju64(scsitgt_lun_get_id(lun)));
	json_object_object_add(o, "offline", json_object_new_boolean(s.offline));
	json_object_object_add(o, "inflight", ju64(s.inflight));
	json_object_object_add(o, "cmds", counters_json(&s.cmds));
	/* Bucket i: latencies below 2^(i+1) us (stats.h), the last one unbounded. */
	lat = json_object_new_array();
	for (int b = 0; b < SCSITGT_LATENCY_BUCKETS; b++)
		json_object_array_add(lat, ju64(s.latency_us[b]));
	json_object_object_add(o, "latency_us", lat);
	json_object_array_add(arr, o);
	return 0;
}

static int stats_session(void *arg, const struct scsitgt_session_stats *s)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "initiator_name", jstr(s->initiator_name));
	json_object_object_add(o, "initiator_port", jstr(s->initiator_port));
	json_object_object_add(o, "address", jstr(s->initiator_addr));
	json_object_object_add(o, "inflight", ju64(s->inflight));
	json_object_object_add(o, "cmds", counters_json(&s->cmds));
	json_object_array_add(arg, o);
	return 0;
}

static json_object *stats_target(struct scsitgtd *d, struct scsitgt_target *tgt,
				 const struct scsitgtd_target *t)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	json_object_object_add(o, "name", jstr(scsitgt_target_get_name(tgt)));
	scsitgt_target_foreach_lun(tgt, stats_lun, a);
	json_object_object_add(o, "luns", a);
	a = json_object_new_array();
	scsitgt_target_foreach_session(tgt, stats_session, a);
	json_object_object_add(o, "sessions", a);
	a = json_object_new_array();
	for (size_t j = 0; j < t->nsrps; j++) {
		struct scsitgtd_tgt *dt = &d->tgts[t - d->cfg->targets];
		uint32_t channels = 0, nexuses = 0;
		json_object *x;

		if (dt->srps[j] == NULL)
			continue;
		scsitgt_srp_portal_get_counts(dt->srps[j], &channels, &nexuses);
		x = json_object_new_object();
		json_object_object_add(x, "address", jstr(t->srps[j].address));
		json_object_object_add(x, "port", ju64(scsitgt_srp_portal_get_port(dt->srps[j])));
		json_object_object_add(x, "channels", ju64(channels));
		json_object_object_add(x, "nexuses", ju64(nexuses));
		json_object_array_add(a, x);
	}
	json_object_object_add(o, "srp", a);
	return o;
}

static int stats_conn(void *arg, const struct scsitgt_iscsi_conn_stats *s)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "peer_addr", jstr(s->peer_addr));
	json_object_object_add(o, "initiator_name", jstr(s->initiator_name));
	json_object_object_add(o, "target_name", jstr(s->target_name));
	json_object_object_add(o, "cid", ju64(s->cid));
	json_object_object_add(o, "tsih", ju64(s->tsih));
	json_object_object_add(o, "full_feature", json_object_new_boolean(s->full_feature));
	json_object_object_add(o, "discovery", json_object_new_boolean(s->discovery));
	json_object_object_add(o, "rx_pdus", ju64(s->rx_pdus));
	json_object_object_add(o, "tx_pdus", ju64(s->tx_pdus));
	json_object_object_add(o, "rx_bytes", ju64(s->rx_bytes));
	json_object_object_add(o, "tx_bytes", ju64(s->tx_bytes));
	json_object_array_add(arg, o);
	return 0;
}

json_object *scsitgtd_control_stats(struct scsitgtd *d)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	json_object_object_add(o, "targets", targets_json(d, stats_target));
	scsitgt_iscsi_engine_foreach_conn(d->engine, stats_conn, a);
	json_object_object_add(o, "connections", a);
	return o;
}

void ctl_stats(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	(void)params;
	r->result = scsitgtd_control_stats(d);
}
