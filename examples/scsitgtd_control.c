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
};

struct scsitgtd_control {
	struct scsitgtd *d;
	uv_pipe_t server;
	char *path;
	struct ctl_conn *conns;
};

/* A method's outcome: a result, or an error code and message. */
struct rpc_reply {
	json_object *result;
	int code;
	char message[600];
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
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.%s: a non-empty string is required",
			  name);
		return NULL;
	}
	return json_object_get_string(v);
}

/* The running target named by params.target (and its configuration), or NULL. */
static struct scsitgt_target *param_target(struct scsitgtd *d, json_object *params,
					   const struct scsitgtd_target **conf,
					   struct rpc_reply *r)
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
	case SCSITGTD_BACKEND_RAM: return "ram";
	case SCSITGTD_BACKEND_NULL: return "null";
	case SCSITGTD_BACKEND_FILE: return "file";
	case SCSITGTD_BACKEND_BLOCK: return "block";
	case SCSITGTD_BACKEND_RBD: return "rbd";
	default: return "?";
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
			x, "transport", jstr(p->transport == SCSITGTD_TRANSPORT_ISER ? "iser" : "tcp"));
		json_object_object_add(x, "address", jstr(p->address));
		json_object_object_add(x, "port",
				       ju64(d->portals[i] ? scsitgt_portal_get_port(d->portals[i])
							  : p->port));
		json_object_object_add(x, "tpgt", ju64(p->tpgt));
		json_object_object_add(x, "listening", json_object_new_boolean(d->portals[i] != NULL));
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

static void m_stats(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();

	(void)params;
	json_object_object_add(o, "targets", targets_json(d, stats_target));
	scsitgt_iscsi_engine_foreach_conn(d->engine, stats_conn, a);
	json_object_object_add(o, "connections", a);
	r->result = o;
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
	char err[600];
	int rc;

	(void)params;
	rc = scsitgtd_reload(d, err, sizeof(err));
	if (rc < 0) {
		rpc_error(r, rc == -EINVAL ? SCSITGTD_RPC_CONFIG_INVALID : SCSITGTD_RPC_INTERNAL_ERROR,
			  "%s", err);
		return;
	}
	r->result = json_object_new_object();
	json_object_object_add(r->result, "reloaded", jstr(d->path));
}

/* ---- dispatch ---- */

static const struct method {
	const char *name;
	void (*fn)(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
} methods[] = {
	{ "show", m_show },
	{ "stats", m_stats },
	{ "kick", m_kick },
	{ "reload", m_reload },
};

/* Handle one request line; returns the response (NULL for a notification). */
static json_object *handle(struct scsitgtd *d, const char *line, size_t len)
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
			  req ? "trailing data" : json_tokener_error_desc(json_tokener_get_error(tok)));
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
		rpc_error(&r, SCSITGTD_RPC_INVALID_PARAMS, "params: an object (by name) is required");
		goto reply;
	}
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (!strcmp(methods[i].name, mname)) {
			methods[i].fn(d, params, &r);
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
	resp = json_object_new_object();
	json_object_object_add(resp, "jsonrpc", json_object_new_string("2.0"));
	if (r.code) {
		json_object *e = json_object_new_object();

		json_object_put(r.result);
		json_object_object_add(e, "code", json_object_new_int(r.code));
		json_object_object_add(e, "message", json_object_new_string(r.message));
		json_object_object_add(resp, "error", e);
	} else {
		json_object_object_add(resp, "result", r.result);
	}
	json_object_object_add(resp, "id", id ? json_object_get(id) : json_object_new_null());
	json_object_put(req);
	return resp;
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

static void conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct ctl_conn *c = s->data;
	struct scsitgtd *d = c->ctl->d;
	size_t start = 0;

	(void)buf;
	if (nread < 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)nread;
	for (size_t i = 0; i < c->len && !c->closing; i++) {
		json_object *resp;

		if (c->buf[i] != '\n')
			continue;
		if (i > start) {
			resp = handle(d, c->buf + start, i - start);
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
	if (c->len == SCSITGTD_CONTROL_MAX_REQUEST && !c->closing) {
		/* A line this long is not a request we would take: say so, hang up. */
		send_error(c, SCSITGTD_RPC_INVALID_REQUEST, "request longer than 65536 bytes");
		uv_read_stop(s);
		conn_close(c);
	}
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
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0 ||
	    uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0)
		conn_close(c);
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
			snprintf(err, err_size, "another process listens there (another scsitgtd?)");
			return -EADDRINUSE;
		}
		if (unlink(path) < 0) {
			rc = -errno;
			snprintf(err, err_size, "stale socket, cannot remove it: %s", strerror(errno));
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
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control socket %s (mode 0600)", path);
	return 0;
}

void scsitgtd_control_stop(struct scsitgtd *d)
{
	struct scsitgtd_control *ctl = d->control;

	if (ctl == NULL)
		return;
	d->control = NULL;
	while (ctl->conns)
		conn_close(ctl->conns);
	unlink(ctl->path);
	uv_close((uv_handle_t *)&ctl->server, server_closed);
}
