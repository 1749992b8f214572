/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's management socket: JSON-RPC 2.0 (https://www.jsonrpc.org/specification) over a
 * unix stream socket on the home loop, one JSON object per line each way (docs/scsitgtd.md).
 * JSON is built and parsed by json-c. Every method runs on the home loop, so it may call the
 * library's "Loop: home" functions directly.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "scsitgtd_control.h"

struct ctl_conn {
	uv_pipe_t pipe;
	struct scsitgtd_control *ctl;
	struct ctl_conn *next;
	char *buf; /* SCSITGTD_CONTROL_MAX_REQUEST bytes */
	size_t len;
	bool closing;
	/* The request whose answer waits (struct ctl_wait): the connection reads nothing more
	 * until it is sent, so that answers keep the order of their requests. */
	struct ctl_wait *wait;
};

/*
 * An add_lun of an RBD LUN whose image opens off the loop: its answer waits for the open to
 * end (the LUN created, or why not), CTL_WAIT_MS at most; after that it says the image is still
 * opening, and the entry stays until the open ends, to take the LUN out again if it failed
 * (unless a configuration file was applied since: the LUN is then the file's).
 */
struct ctl_wait {
	struct ctl_wait *next;
	struct scsitgtd_control *ctl;
	struct ctl_conn *conn; /* NULL once the connection is gone: nobody to answer */
	uv_timer_t timer;
	uint64_t deadline;     /* uv_now() */
	json_object *id;       /* the request's */
	bool answered;	       /* "still opening" went out */
	unsigned int file_gen; /* d->file_gen when the LUN was added */
	uint64_t lun;
	char tname[256];
};

struct scsitgtd_control {
	struct scsitgtd *d;
	uv_pipe_t server;
	char *path;
	struct ctl_conn *conns;
	unsigned int nconns;
	struct ctl_wait *waits;
};

/* Connections served at once (each holds a request buffer); more are answered and closed. */
#define CTL_MAX_CONNS 16
/* How long an add_lun answer waits for its RBD image to open (docs/scsitgtd.md). */
#define CTL_WAIT_MS 10000

/* A method's outcome: a result, or an error code and message. */
struct rpc_reply {
	json_object *result;
	int code;
	char message[SCSITGTD_ERR_SIZE]; /* a reload lists every error of the file */
	/* The connection, when the method may answer later (add_lun: set wait_lun, wait_tname
	 * and deferred); NULL otherwise (a notification, the fuzz target). */
	struct ctl_conn *conn;
	bool deferred;
	uint64_t wait_lun;
	char wait_tname[256];
};

static void rpc_error(struct rpc_reply *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void rpc_error(struct rpc_reply *r, int code, const char *fmt, ...)
{
	va_list ap;

	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
}

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : json_object_new_null();
}

static json_object *ju64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* A string member of @params, or NULL (then @r holds the error). */
static const char *param_str(json_object *params, const char *name, struct rpc_reply *r)
{
	json_object *v;

	if (params == NULL || !json_object_object_get_ex(params, name, &v) ||
	    !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS,
			  "params.%s: a non-empty string is required", name);
		return NULL;
	}
	return json_object_get_string(v);
}

/* The running target named by params.target (and its configuration), or NULL. */
static struct scsitgt_target *param_target(struct scsitgtd *d, json_object *params,
					   const struct scsitgtd_target **conf, struct rpc_reply *r)
{
	const char *name = param_str(params, "target", r);
	struct scsitgt_target *tgt;

	if (name == NULL)
		return NULL;
	tgt = scsitgt_engine_find_target(d->engine, name);
	*conf = tgt ? scsitgtd_config_find_target(d->cfg, scsitgt_target_get_name(tgt)) : NULL;
	if (tgt == NULL || *conf == NULL) {
		rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "no target %s", name);
		return NULL;
	}
	return tgt;
}

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
	const struct scsitgtd_target *conf;
	json_object *arr;
};

static int show_lun(void *arg, struct scsitgt_lun *lun)
{
	struct show_walk *w = arg;
	const struct scsitgtd_lun *l = scsitgtd_config_find_lun(w->conf, scsitgt_lun_get_id(lun));
	struct scsitgt_lun_geometry g = { .size = sizeof(g) };
	json_object *o = json_object_new_object(), *vis;

	json_object_object_add(o, "id", ju64(scsitgt_lun_get_id(lun)));
	json_object_object_add(o, "backend", jstr(l ? backend_name(l->backend) : NULL));
	if (l && l->path)
		json_object_object_add(o, "path", jstr(l->path));
	if (scsitgt_lun_get_geometry(lun, &g) == 0) {
		json_object_object_add(o, "size", ju64(g.num_blocks * g.block_size));
		json_object_object_add(o, "block_size", ju64(g.block_size));
	}
	json_object_object_add(o, "offline", json_object_new_boolean(scsitgt_lun_get_offline(lun)));
	json_object_object_add(o, "read_only",
			       json_object_new_boolean(l && (l->flags & SCSITGTD_LUN_READ_ONLY)));
	vis = json_object_new_array();
	for (size_t i = 0; l && i < l->nvisible_to; i++)
		json_object_array_add(vis, jstr(l->visible_to[i]));
	json_object_object_add(o, "visible_to", vis);
	json_object_array_add(w->arr, o);
	return 0;
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

static json_object *show_target(struct scsitgtd *d, struct scsitgt_target *tgt,
				const struct scsitgtd_target *t)
{
	json_object *o = json_object_new_object(), *a;
	struct show_walk w = { .conf = t };

	json_object_object_add(o, "name", jstr(scsitgt_target_get_name(tgt)));
	if (t->alias)
		json_object_object_add(o, "alias", jstr(t->alias));
	w.arr = json_object_new_array();
	scsitgt_target_foreach_lun(tgt, show_lun, &w);
	json_object_object_add(o, "luns", w.arr);
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
	scsitgt_target_foreach_session(tgt, show_session, &w);
	json_object_object_add(o, "sessions", w.arr);
	(void)d;
	return o;
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

static void m_show(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
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
	json_object_object_add(o, "targets", targets_json(d, show_target));
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

static void m_stats(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	(void)params;
	r->result = scsitgtd_control_stats(d);
}

/* ---- kick ---- */

struct kick_walk {
	const char *port;
	int rc;
	bool found;
};

static int kick_visit(void *arg, const struct scsitgt_session_stats *s)
{
	struct kick_walk *w = arg;

	/* iSCSI names compare case-insensitively (RFC 7143 §4.2.7.1); so do their ports. */
	if (strcasecmp(s->initiator_port, w->port) != 0)
		return 0;
	w->found = true;
	w->rc = scsitgt_session_kick(s->session);
	return 1;
}

static void m_kick(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	const struct scsitgtd_target *t;
	struct scsitgt_target *tgt = param_target(d, params, &t, r);
	struct kick_walk w = { 0 };

	if (tgt == NULL || (w.port = param_str(params, "initiator_port", r)) == NULL)
		return;
	scsitgt_target_foreach_session(tgt, kick_visit, &w);
	if (!w.found) {
		rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "no session of %s on %s", w.port,
			  scsitgt_target_get_name(tgt));
		return;
	}
	if (w.rc < 0) {
		rpc_error(r, SCSITGTD_RPC_FAILED, "kick %s: %s", w.port, scsitgt_strerror(w.rc));
		return;
	}
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: kicked %s from %s", w.port,
		     scsitgt_target_get_name(tgt));
	r->result = json_object_new_object();
	json_object_object_add(r->result, "kicked", jstr(w.port));
}

/* ---- reload ---- */

static void m_reload(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	char err[SCSITGTD_ERR_SIZE];
	int rc;

	(void)params;
	rc = scsitgtd_reload(d, err, sizeof(err));
	if (rc < 0) {
		rpc_error(r,
			  rc == -EINVAL ? SCSITGTD_RPC_CONFIG_INVALID : SCSITGTD_RPC_INTERNAL_ERROR,
			  "%s", err);
		return;
	}
	r->result = json_object_new_object();
	json_object_object_add(r->result, "reloaded", jstr(d->path));
}

/* ---- runtime changes: a copy of the configuration, changed, applied as a reload ---- */

/*
 * Parse "[target]" with @body after it (the file's syntax and checks, scsitgtd_config.c), so
 * that what a request adds is validated exactly as the same lines in the file would be.
 */
static struct scsitgtd_config *parse_snippet(const char *body, struct rpc_reply *r)
{
	struct scsitgtd_config *cfg = NULL;
	char text[SCSITGTD_CONTROL_MAX_REQUEST + 64], err[512];
	const char *msg = err;
	int n = snprintf(text, sizeof(text), "[target]\nname = iqn.2000-01.invalid:request\n%s",
			 body);

	if (n < 0 || (size_t)n >= sizeof(text)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "request too long");
		return NULL;
	}
	if (scsitgtd_config_parse(text, (size_t)n, &cfg, err, sizeof(err)) < 0) {
		/* "line N: what": the line numbers are of the snippet, not useful here. */
		if (!strncmp(err, "line ", 5) && strstr(err, ": "))
			msg = strstr(err, ": ") + 2;
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "%s", msg);
		return NULL;
	}
	return cfg;
}

/* Append "KEY = VALUE\n" to @buf; values are strings, numbers or booleans on one line. */
static bool add_line(char *buf, size_t size, const char *key, json_object *v, struct rpc_reply *r)
{
	size_t len = strlen(buf);
	const char *val;
	int n;

	if (!json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_boolean)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.%s: a string, integer or boolean",
			  key);
		return false;
	}
	val = json_object_is_type(v, json_type_boolean) ?
		      (json_object_get_boolean(v) ? "yes" : "no") :
		      json_object_get_string(v);
	if (strpbrk(key, "\r\n=[]#;") || strpbrk(val, "\r\n") || *key == '\0') {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.%s: one line, no section syntax",
			  key);
		return false;
	}
	n = snprintf(buf + len, size - len, "%s = %s\n", key, val);
	if (n < 0 || (size_t)n >= size - len) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "request too long");
		return false;
	}
	return true;
}

/*
 * Apply @nc (a changed copy of d->cfg; consumed) the way a reload does, once it passes the
 * file's checks across sections (scsitgtd_config_check()): a change the file would refuse (a
 * second LUN on an rbd_gateway target) is refused here too, else the daemon would serve it and
 * `save` would write a file the next start refuses.
 */
static bool apply_copy(struct scsitgtd *d, struct scsitgtd_config *nc, struct rpc_reply *r)
{
	char err[512];
	const char *msg = err;

	if (scsitgtd_config_check(nc, err, sizeof(err)) < 0) {
		scsitgtd_config_free(nc);
		/* "line N: what": the first error, without a line of a file nobody edited. */
		if (!strncmp(err, "line ", 5) && strstr(err, ": "))
			msg = strstr(err, ": ") + 2;
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "%.*s", (int)strcspn(msg, "\n"), msg);
		return false;
	}
	if (scsitgtd_apply(d, nc) < 0) {
		scsitgtd_config_free(nc);
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		return false;
	}
	return true;
}

/* A copy of d->cfg and, in it, the target of params.target. */
static struct scsitgtd_config *copy_for(struct scsitgtd *d, json_object *params,
					struct scsitgtd_target **t, struct rpc_reply *r)
{
	const struct scsitgtd_target *conf;
	struct scsitgtd_config *nc;

	if (param_target(d, params, &conf, r) == NULL)
		return NULL;
	nc = scsitgtd_config_dup(d->cfg);
	if (nc == NULL) {
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	*t = &nc->targets[conf - d->cfg->targets];
	return nc;
}

static bool param_lun_id(json_object *params, uint64_t *id, struct rpc_reply *r)
{
	json_object *v;

	if (!json_object_object_get_ex(params, "id", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    json_object_get_int64(v) > SCSITGTD_MAX_LUN_ID) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.id: a LUN number 0..%d",
			  SCSITGTD_MAX_LUN_ID);
		return false;
	}
	*id = (uint64_t)json_object_get_int64(v);
	return true;
}

static void changed(struct rpc_reply *r, const char *what, const char *target)
{
	r->result = json_object_new_object();
	json_object_object_add(r->result, "changed", jstr(what));
	json_object_object_add(r->result, "target", jstr(target));
}

/* Remove LUN @id of target @tname from a copy of the configuration and apply it. */
static bool lun_drop(struct scsitgtd *d, const char *tname, uint64_t id, struct rpc_reply *r)
{
	struct scsitgtd_config *nc = scsitgtd_config_dup(d->cfg);
	struct scsitgtd_target *t;
	struct scsitgtd_lun *l;

	if (nc == NULL) {
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		return false;
	}
	t = (struct scsitgtd_target *)scsitgtd_config_find_target(nc, tname);
	l = t ? (struct scsitgtd_lun *)scsitgtd_config_find_lun(t, id) : NULL;
	if (l == NULL) {
		scsitgtd_config_free(nc);
		rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "%s has no LUN %llu", tname,
			  (unsigned long long)id);
		return false;
	}
	scsitgtd_lun_clear(l);
	memmove(l, l + 1, (size_t)(t->luns + t->nluns - (l + 1)) * sizeof(*l));
	t->nluns--;
	return apply_copy(d, nc, r);
}

static void m_remove_lun(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	const struct scsitgtd_target *conf;
	char what[64], tname[256];
	uint64_t id;

	if (!param_lun_id(params, &id, r) || param_target(d, params, &conf, r) == NULL)
		return;
	snprintf(tname, sizeof(tname), "%s", conf->name);
	if (!lun_drop(d, tname, id, r))
		return;
	snprintf(what, sizeof(what), "lun %llu removed", (unsigned long long)id);
	changed(r, what, tname);
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: %s: LUN %llu removed", tname,
		     (unsigned long long)id);
}

/*
 * add_initiator / remove_initiator / add_address / remove_address: the target's "initiator =",
 * "address =" and "initiator_address =" lines, checked by the parser as in the file.
 */
static void acl_change(struct scsitgtd *d, json_object *params, struct rpc_reply *r, bool add,
		       bool address)
{
	struct scsitgtd_config *nc, *snip = NULL;
	struct scsitgtd_target *t, *st;
	json_object *ini = NULL, *cidr = NULL;
	char body[1024], what[600];
	bool ok;

	if (address) {
		if (!json_object_object_get_ex(params, "cidr", &cidr) ||
		    (json_object_object_get_ex(params, "initiator", &ini) && ini == NULL)) {
			rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.cidr: required");
			return;
		}
	} else if (!json_object_object_get_ex(params, "initiator", &ini)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.initiator: required");
		return;
	}
	if ((nc = copy_for(d, params, &t, r)) == NULL)
		return;
	body[0] = '\0';
	if (address && ini) {
		char v[600];

		if (!json_object_is_type(ini, json_type_string) ||
		    !json_object_is_type(cidr, json_type_string)) {
			rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params: strings required");
			goto out;
		}
		snprintf(v, sizeof(v), "%.250s %.250s", json_object_get_string(ini),
			 json_object_get_string(cidr));
		json_object *jv = json_object_new_string(v);

		ok = add_line(body, sizeof(body), "initiator_address", jv, r);
		json_object_put(jv);
	} else {
		ok = add_line(body, sizeof(body), address ? "address" : "initiator",
			      address ? cidr : ini, r);
	}
	if (!ok || (snip = parse_snippet(body, r)) == NULL)
		goto out;
	st = &snip->targets[0];
	if (!address) {
		const char *name = st->initiators[0];
		size_t i;

		for (i = 0; i < t->ninitiators && strcasecmp(t->initiators[i], name); i++)
			;
		if (add && i < t->ninitiators) {
			rpc_error(r, SCSITGTD_RPC_EXISTS, "%s is in the list already", name);
			goto out;
		}
		if (!add && i == t->ninitiators) {
			rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "%s is not in the list", name);
			goto out;
		}
		if (add) {
			char **a = realloc(t->initiators, (t->ninitiators + 1) * sizeof(*a));

			if (a == NULL)
				goto nomem;
			t->initiators = a;
			a[t->ninitiators++] = st->initiators[0];
			st->ninitiators = 0;
		} else {
			free(t->initiators[i]);
			memmove(&t->initiators[i], &t->initiators[i + 1],
				(t->ninitiators - i - 1) * sizeof(*t->initiators));
			t->ninitiators--;
		}
		snprintf(what, sizeof(what), "initiator %s %s", name, add ? "added" : "removed");
	} else {
		const struct scsitgtd_address *sa = &st->addresses[0];
		const struct scsitgtd_address *have =
			scsitgtd_config_find_address(t, sa->initiator, sa->cidr);

		if (add && have) {
			rpc_error(r, SCSITGTD_RPC_EXISTS, "address %s is in the list already",
				  sa->cidr);
			goto out;
		}
		if (!add && have == NULL) {
			rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "address %s is not in the list",
				  sa->cidr);
			goto out;
		}
		snprintf(what, sizeof(what), "address %s%s%s %s",
			 sa->initiator ? sa->initiator : "", sa->initiator ? " " : "", sa->cidr,
			 add ? "added" : "removed");
		if (add) {
			struct scsitgtd_address *a =
				realloc(t->addresses, (t->naddresses + 1) * sizeof(*a));

			if (a == NULL)
				goto nomem;
			t->addresses = a;
			a[t->naddresses++] = st->addresses[0];
			st->naddresses = 0;
		} else {
			size_t i = (size_t)(have - t->addresses);

			free(t->addresses[i].initiator);
			free(t->addresses[i].cidr);
			memmove(&t->addresses[i], &t->addresses[i + 1],
				(t->naddresses - i - 1) * sizeof(*t->addresses));
			t->naddresses--;
		}
	}
	{
		char tname[256];

		snprintf(tname, sizeof(tname), "%s", t->name);
		ok = apply_copy(d, nc, r);
		nc = NULL;
		if (ok) {
			changed(r, what, tname);
			scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: %s: %s", tname, what);
		}
	}
	goto out;
nomem:
	rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
out:
	scsitgtd_config_free(snip);
	scsitgtd_config_free(nc);
}

static void m_add_initiator(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, true, false);
}

static void m_remove_initiator(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, false, false);
}

static void m_add_address(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, true, true);
}

static void m_remove_address(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, false, true);
}

/* Whether the running configuration has LUN @id of @tname. */
static bool lun_configured(struct scsitgtd *d, const char *tname, uint64_t id)
{
	const struct scsitgtd_target *t = scsitgtd_config_find_target(d->cfg, tname);

	return t && scsitgtd_config_find_lun(t, id);
}

/*
 * The answer to add_lun of LUN @id of @tname once it was applied: added, still opening (its
 * RBD image), or not created (then taken out again if @drop, as if never asked, with the
 * reason).
 */
static void add_lun_answer(struct scsitgtd *d, const char *tname, uint64_t id, bool drop,
			   struct rpc_reply *r)
{
	struct scsitgt_target *tgt = scsitgt_engine_find_target(d->engine, tname);
	const char *why = scsitgtd_lun_failure(d, tname, id);
	char what[96], reason[600];

	if (tgt && scsitgt_target_get_lun(tgt, id)) {
		snprintf(what, sizeof(what), "lun %llu added", (unsigned long long)id);
		changed(r, what, tname);
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: %s: LUN %llu added", tname,
			     (unsigned long long)id);
	} else if (scsitgtd_lun_opening(d, tname, id)) {
		snprintf(what, sizeof(what), "lun %llu added, its image still opening",
			 (unsigned long long)id);
		changed(r, what, tname);
		json_object_object_add(r->result, "opening", json_object_new_boolean(1));
		scsitgtd_log(d, SCSITGT_LOG_NOTICE,
			     "control: %s: LUN %llu added, its image still opening", tname,
			     (unsigned long long)id);
	} else {
		/* The reason before lun_drop(), which applies a configuration again. */
		snprintf(reason, sizeof(reason), "%s",
			 why ? why : "the configuration changed while its image opened");
		if (drop && lun_configured(d, tname, id))
			lun_drop(d, tname, id, r);
		rpc_error(r, SCSITGTD_RPC_FAILED, "LUN %llu: not created: %s",
			  (unsigned long long)id, reason);
		json_object_put(r->result);
		r->result = NULL;
	}
}

static void m_add_lun(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	static char body[SCSITGTD_CONTROL_MAX_REQUEST];
	struct scsitgtd_config *nc, *snip;
	struct scsitgtd_target *t;
	struct scsitgtd_lun *l;
	struct scsitgt_target *tgt;
	uint64_t id;

	if (!param_lun_id(params, &id, r) || (nc = copy_for(d, params, &t, r)) == NULL)
		return;
	if (scsitgtd_config_find_lun(t, id)) {
		rpc_error(r, SCSITGTD_RPC_EXISTS, "%s has a LUN %llu", t->name,
			  (unsigned long long)id);
		scsitgtd_config_free(nc);
		return;
	}
	/* Every other member is a key of [lun N]. */
	snprintf(body, sizeof(body), "[lun %llu]\n", (unsigned long long)id);
	json_object_object_foreach(params, key, v)
	{
		if (strcmp(key, "target") && strcmp(key, "id") &&
		    !add_line(body, sizeof(body), key, v, r)) {
			scsitgtd_config_free(nc);
			return;
		}
	}
	snip = parse_snippet(body, r);
	if (snip == NULL) {
		scsitgtd_config_free(nc);
		return;
	}
	l = &snip->targets[0].luns[0];
	if (l->fault && scsitgtd_fault_spec_check(l->fault) < 0) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS,
			  "fault: \"%s\" is not a fault specification", l->fault);
		goto out;
	}
	l = realloc(t->luns, (t->nluns + 1) * sizeof(*t->luns));
	if (l == NULL) {
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	/* The LUN moves from the snippet to the copy. */
	t->luns = l;
	t->luns[t->nluns++] = snip->targets[0].luns[0];
	snip->targets[0].nluns = 0;
	if (!apply_copy(d, nc, r)) {
		nc = NULL;
		goto out;
	}
	nc = NULL;
	tgt = scsitgt_engine_find_target(d->engine, t->name);
	if (tgt && !scsitgt_target_get_lun(tgt, id) && scsitgtd_lun_opening(d, t->name, id) &&
	    r->conn) {
		/* Its RBD image opens off the loop: answer once it has (lun_settled()). */
		r->deferred = true;
		r->wait_lun = id;
		snprintf(r->wait_tname, sizeof(r->wait_tname), "%s", t->name);
		goto out;
	}
	add_lun_answer(d, t->name, id, true, r);
out:
	scsitgtd_config_free(snip);
	scsitgtd_config_free(nc);
}
/* ---- save ---- */
#ifndef SCSITGTD_CONTROL_NO_SAVE

/*
 * Write the running configuration (with the runtime changes) to params.file, as INI that
 * scsitgtd reads back to the same state. The file may hold CHAP secrets: it is made 0600,
 * written beside and renamed over, so a reader never sees half of it.
 */
static void m_save(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	const char *file = param_str(params, "file", r);
	char tmp[4096];
	FILE *f;
	int fd, rc;

	if (file == NULL)
		return;
	if (file[0] != '/') {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS,
			  "params.file: an absolute path (the "
			  "daemon's working directory is not the client's)");
		return;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", file) >= sizeof(tmp)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.file: too long");
		return;
	}
	fd = mkstemp(tmp); /* mode 0600 */
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		rpc_error(r, SCSITGTD_RPC_FAILED, "%s: %s", file, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return;
	}
	rc = scsitgtd_config_write(d->cfg, f);
	if (fflush(f) != 0 || fsync(fd) != 0)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	if (rc < 0 || rename(tmp, file) < 0) {
		rpc_error(r, SCSITGTD_RPC_FAILED, "%s: %s", file, strerror(errno));
		unlink(tmp);
		return;
	}
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: configuration saved to %s", file);
	r->result = json_object_new_object();
	json_object_object_add(r->result, "saved", jstr(file));
}
#endif

/* ---- dispatch ---- */

static const struct method {
	const char *name;
	void (*fn)(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
} methods[] = {
	{ "show", m_show },
	{ "stats", m_stats },
	{ "kick", m_kick },
	{ "reload", m_reload },
	{ "add_lun", m_add_lun },
	{ "remove_lun", m_remove_lun },
	{ "add_initiator", m_add_initiator },
	{ "remove_initiator", m_remove_initiator },
	{ "add_address", m_add_address },
	{ "remove_address", m_remove_address },
#ifndef SCSITGTD_CONTROL_NO_SAVE /* the fuzz target writes no files */
	{ "save", m_save },
#endif
};

/* The response to a request of id @id (NULL: none could be read) with outcome @r (consumed). */
static json_object *response(struct rpc_reply *r, json_object *id)
{
	json_object *resp = json_object_new_object();

	json_object_object_add(resp, "jsonrpc", json_object_new_string("2.0"));
	if (r->code) {
		json_object *e = json_object_new_object();

		json_object_put(r->result);
		json_object_object_add(e, "code", json_object_new_int(r->code));
		json_object_object_add(e, "message", json_object_new_string(r->message));
		json_object_object_add(resp, "error", e);
	} else {
		json_object_object_add(resp, "result", r->result);
	}
	r->result = NULL;
	json_object_object_add(resp, "id", id ? json_object_get(id) : json_object_new_null());
	return resp;
}

static struct ctl_wait *wait_start(struct ctl_conn *c, json_object *id, const char *tname,
				   uint64_t lun);

/* Handle one request of connection @c (NULL: its answer cannot wait): the response, or NULL
 * (a notification, out of memory, or the answer waits: c->wait is then set). */
static json_object *handle(struct scsitgtd *d, struct ctl_conn *c, const char *line, size_t len)
{
	struct rpc_reply r = { 0 };
	json_tokener *tok = json_tokener_new();
	json_object *req = NULL, *id = NULL, *v, *params = NULL, *resp;
	const char *mname;
	bool notification = false;

	if (tok == NULL)
		return NULL;
	req = json_tokener_parse_ex(tok, line, (int)len);
	if (req == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    tok->char_offset != (int)len) {
		rpc_error(&r, SCSITGTD_RPC_PARSE_ERROR, "parse error: %s",
			  req ? "trailing data" :
				json_tokener_error_desc(json_tokener_get_error(tok)));
		goto reply;
	}
	if (!json_object_is_type(req, json_type_object)) {
		rpc_error(&r, SCSITGTD_RPC_INVALID_REQUEST, "a request is a JSON object");
		goto reply;
	}
	if (json_object_object_get_ex(req, "id", &id)) {
		if (id != NULL && !json_object_is_type(id, json_type_string) &&
		    !json_object_is_type(id, json_type_int)) {
			id = NULL;
			rpc_error(&r, SCSITGTD_RPC_INVALID_REQUEST, "id: a string or an integer");
			goto reply;
		}
	} else {
		notification = true;
	}
	if (!json_object_object_get_ex(req, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), "2.0")) {
		rpc_error(&r, SCSITGTD_RPC_INVALID_REQUEST, "jsonrpc: must be \"2.0\"");
		goto reply;
	}
	if (!json_object_object_get_ex(req, "method", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		rpc_error(&r, SCSITGTD_RPC_INVALID_REQUEST, "method: a string is required");
		goto reply;
	}
	mname = json_object_get_string(v);
	if (json_object_object_get_ex(req, "params", &params) && params &&
	    !json_object_is_type(params, json_type_object)) {
		rpc_error(&r, SCSITGTD_RPC_INVALID_PARAMS,
			  "params: an object (by name) is required");
		goto reply;
	}
	r.conn = notification ? NULL : c;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (!strcmp(methods[i].name, mname)) {
			methods[i].fn(d, params, &r);
			if (r.deferred && wait_start(c, id, r.wait_tname, r.wait_lun)) {
				json_tokener_free(tok);
				json_object_put(req);
				return NULL;
			}
			if (r.deferred) /* no memory to wait: answer now */
				add_lun_answer(d, r.wait_tname, r.wait_lun, true, &r);
			if (r.code == 0 && r.result == NULL)
				rpc_error(&r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
			goto reply;
		}
	}
	rpc_error(&r, SCSITGTD_RPC_METHOD_NOT_FOUND, "no method %s", mname);
reply:
	json_tokener_free(tok);
	if (notification) {
		json_object_put(r.result);
		json_object_put(req);
		return NULL;
	}
	resp = response(&r, id);
	json_object_put(req);
	return resp;
}

json_object *scsitgtd_control_handle(struct scsitgtd *d, const char *line, size_t len)
{
	return handle(d, NULL, line, len);
}

/* ---- connections ---- */

struct ctl_write {
	uv_write_t req;
	char *text;
};

static void conn_closed(uv_handle_t *h)
{
	struct ctl_conn *c = h->data;

	free(c->buf);
	free(c);
}

static void conn_close(struct ctl_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	if (c->wait) /* its answer has nobody to go to */
		c->wait->conn = NULL;
	c->ctl->nconns--;
	for (struct ctl_conn **pp = &c->ctl->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static void written(uv_write_t *req, int status)
{
	struct ctl_write *w = (struct ctl_write *)req;

	(void)status;
	free(w->text);
	free(w);
}

static void send_json(struct ctl_conn *c, json_object *resp)
{
	const char *s = json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(s);
	struct ctl_write *w = calloc(1, sizeof(*w));
	uv_buf_t b;

	if (w == NULL || (w->text = malloc(n + 1)) == NULL) {
		free(w);
		conn_close(c);
		return;
	}
	memcpy(w->text, s, n);
	w->text[n] = '\n';
	b = uv_buf_init(w->text, (unsigned int)(n + 1));
	if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, written) < 0) {
		free(w->text);
		free(w);
		conn_close(c);
	}
}

static void send_error(struct ctl_conn *c, int code, const char *message)
{
	json_object *resp = json_object_new_object(), *e = json_object_new_object();

	json_object_object_add(resp, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(message));
	json_object_object_add(resp, "error", e);
	json_object_object_add(resp, "id", json_object_new_null());
	send_json(c, resp);
	json_object_put(resp);
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct ctl_conn *c = h->data;

	(void)suggested;
	*buf = uv_buf_init(c->buf + c->len, (unsigned int)(SCSITGTD_CONTROL_MAX_REQUEST - c->len));
}

/* Answer the complete request lines buffered on @c, in order, until one's answer waits. */
static void conn_process(struct ctl_conn *c)
{
	struct scsitgtd *d = c->ctl->d;
	size_t start = 0;

	for (size_t i = 0; i < c->len && !c->closing && c->wait == NULL; i++) {
		json_object *resp;

		if (c->buf[i] != '\n')
			continue;
		if (i > start) {
			resp = handle(d, c, c->buf + start, i - start);
			if (resp) {
				send_json(c, resp);
				json_object_put(resp);
			}
		}
		start = i + 1;
		if (d->stopping) /* a method cannot stop the daemon today; be safe anyway */
			break;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	if (c->wait && !c->closing) {
		uv_read_stop((uv_stream_t *)&c->pipe); /* until the answer is sent */
	} else if (c->len == SCSITGTD_CONTROL_MAX_REQUEST && !c->closing) {
		/* A line this long is not a request we would take: say so, hang up. */
		send_error(c, SCSITGTD_RPC_INVALID_REQUEST, "request longer than 65536 bytes");
		uv_read_stop((uv_stream_t *)&c->pipe);
		conn_close(c);
	}
}

static void conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct ctl_conn *c = s->data;

	(void)buf;
	if (nread < 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)nread;
	conn_process(c);
}

/* ---- answers that wait (struct ctl_wait) ---- */

static void wait_freed(uv_handle_t *h)
{
	struct ctl_wait *w = h->data;

	json_object_put(w->id);
	free(w);
}

static void wait_end(struct ctl_wait *w)
{
	for (struct ctl_wait **pp = &w->ctl->waits; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	if (w->conn)
		w->conn->wait = NULL;
	uv_close((uv_handle_t *)&w->timer, wait_freed);
}

/* The open of a LUN answered "still opening" ended: take the LUN out if it was not created. */
static void wait_late(struct ctl_wait *w)
{
	struct scsitgtd *d = w->ctl->d;
	struct scsitgt_target *tgt = scsitgt_engine_find_target(d->engine, w->tname);
	struct rpc_reply r = { 0 };
	const char *why = scsitgtd_lun_failure(d, w->tname, w->lun);

	if ((tgt && scsitgt_target_get_lun(tgt, w->lun)) || w->file_gen != d->file_gen ||
	    !lun_configured(d, w->tname, w->lun))
		return;
	scsitgtd_log(d, SCSITGT_LOG_NOTICE,
		     "control: %s: LUN %llu: not created (%s): taken out of the running "
		     "configuration",
		     w->tname, (unsigned long long)w->lun, why ? why : "see above");
	lun_drop(d, w->tname, w->lun, &r);
	json_object_put(r.result);
}

/* The open ended, or the time is up: answer (on a clean stack: a timer callback). */
static void wait_fire(uv_timer_t *timer)
{
	struct ctl_wait *w = timer->data;
	struct scsitgtd *d = w->ctl->d;
	struct ctl_conn *c = w->conn;
	struct rpc_reply r = { 0 };
	json_object *resp;
	uint64_t now = uv_now(d->loop);
	bool opening = scsitgtd_lun_opening(d, w->tname, w->lun);

	if (w->answered) {
		if (!opening) { /* else another open (a reload's): its end comes here again */
			wait_late(w);
			wait_end(w);
		}
		return;
	}
	if (opening && now < w->deadline) {
		/* Another open of the LUN (a reload changed it meanwhile): wait for that one. */
		uv_timer_start(&w->timer, wait_fire, w->deadline - now, 0);
		return;
	}
	add_lun_answer(d, w->tname, w->lun, w->file_gen == d->file_gen, &r);
	if (r.code == 0 && r.result == NULL)
		rpc_error(&r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
	resp = response(&r, w->id);
	if (opening) {
		/* Answered; kept until the open ends (lun_settled()). */
		w->answered = true;
		if (c)
			c->wait = NULL;
		w->conn = NULL;
	} else {
		wait_end(w);
	}
	if (c && !c->closing) {
		send_json(c, resp);
		/* The requests that came meanwhile, then more. */
		conn_process(c);
		if (c->wait == NULL && !c->closing &&
		    uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0)
			conn_close(c);
	}
	json_object_put(resp);
}

/* An RBD LUN's open ended (d->lun_settled): the answers waiting for it go out. */
static void lun_settled(struct scsitgtd *d, const char *tname, uint64_t id)
{
	for (struct ctl_wait *w = d->control ? d->control->waits : NULL; w; w = w->next)
		if (w->lun == id && !strcmp(w->tname, tname))
			uv_timer_start(&w->timer, wait_fire, 0, 0);
}

static struct ctl_wait *wait_start(struct ctl_conn *c, json_object *id, const char *tname,
				   uint64_t lun)
{
	struct scsitgtd *d = c->ctl->d;
	struct ctl_wait *w = calloc(1, sizeof(*w));

	if (w == NULL || uv_timer_init(d->loop, &w->timer) < 0) {
		free(w);
		return NULL;
	}
	w->timer.data = w;
	w->ctl = c->ctl;
	w->conn = c;
	w->id = id ? json_object_get(id) : NULL;
	w->lun = lun;
	snprintf(w->tname, sizeof(w->tname), "%s", tname);
	w->deadline = uv_now(d->loop) + CTL_WAIT_MS;
	w->file_gen = d->file_gen;
	uv_timer_start(&w->timer, wait_fire, CTL_WAIT_MS, 0);
	w->next = c->ctl->waits;
	c->ctl->waits = w;
	c->wait = w;
	scsitgtd_log(d, SCSITGT_LOG_INFO, "control: %s: LUN %llu: answer once its image is open",
		     tname, (unsigned long long)lun);
	return w;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct scsitgtd_control *ctl = server->data;
	struct ctl_conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->buf = malloc(SCSITGTD_CONTROL_MAX_REQUEST)) == NULL ||
	    uv_pipe_init(ctl->d->loop, &c->pipe, 0) < 0) {
		if (c)
			free(c->buf);
		free(c);
		return;
	}
	c->ctl = ctl;
	c->pipe.data = c;
	c->next = ctl->conns;
	ctl->conns = c;
	ctl->nconns++;
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
		conn_close(c);
	} else if (ctl->nconns > CTL_MAX_CONNS) {
		send_error(c, SCSITGTD_RPC_INTERNAL_ERROR, "too many control connections");
		conn_close(c);
	} else if (uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0) {
		conn_close(c);
	}
}

/* ---- the listening socket ---- */

/* Whether a process accepts connections on the unix socket @path. */
static bool socket_live(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true; /* cannot tell: do not remove it */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno != ECONNREFUSED;
	close(fd);
	return live;
}

static void server_closed(uv_handle_t *h)
{
	struct scsitgtd_control *ctl = h->data;

	free(ctl->path);
	free(ctl);
}

int scsitgtd_control_start(struct scsitgtd *d, const char *path, char *err, size_t err_size)
{
	struct scsitgtd_control *ctl;
	struct stat st;
	mode_t old_mask;
	int rc;

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, err_size, "exists and is not a socket");
			return -EEXIST;
		}
		if (socket_live(path)) {
			snprintf(err, err_size,
				 "another process listens there (another scsitgtd?)");
			return -EADDRINUSE;
		}
		if (unlink(path) < 0) {
			rc = -errno;
			snprintf(err, err_size, "stale socket, cannot remove it: %s",
				 strerror(errno));
			return rc;
		}
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control_socket %s: removed a stale socket",
			     path);
	}
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL || (ctl->path = strdup(path)) == NULL) {
		free(ctl);
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	ctl->d = d;
	uv_pipe_init(d->loop, &ctl->server, 0);
	ctl->server.data = ctl;
	/* Only the daemon's user may connect: the socket is made 0600 (no window where it is
	 * wider, as a chmod after bind would leave). */
	old_mask = umask(0177);
	rc = uv_pipe_bind(&ctl->server, path);
	umask(old_mask);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&ctl->server, 16, on_connection);
	if (rc < 0) {
		snprintf(err, err_size, "%s", uv_strerror(rc));
		uv_close((uv_handle_t *)&ctl->server, server_closed);
		return rc;
	}
	d->control = ctl;
	d->lun_settled = lun_settled;
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control socket %s (mode 0600)", path);
	return 0;
}

void scsitgtd_control_stop(struct scsitgtd *d)
{
	struct scsitgtd_control *ctl = d->control;

	if (ctl == NULL)
		return;
	d->control = NULL;
	d->lun_settled = NULL;
	while (ctl->conns)
		conn_close(ctl->conns);
	while (ctl->waits)
		wait_end(ctl->waits);
	unlink(ctl->path);
	uv_close((uv_handle_t *)&ctl->server, server_closed);
}
