/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's management socket: JSON-RPC 2.0 (https://www.jsonrpc.org/specification) over a
 * unix stream socket on the home loop, one JSON object per line each way (docs/scsitgtd.md).
 * JSON is built and parsed by json-c. Every method runs on the home loop, so it may call the
 * library's "Loop: home" functions directly. This file is the socket, its connections, the
 * framing and the dispatch; the methods are in scsitgtd_control_show.c (reading state) and
 * scsitgtd_control_change.c (changing it).
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

#include "scsitgtd_control_int.h"

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
 * (unless a configuration file was applied since: the LUN is then the file's). A reload whose
 * file has RBD LUNs waits the same way for every image of the file (@reload): its answer lists
 * the LUNs that failed, and those still opening after CTL_WAIT_MS.
 */
struct ctl_wait {
	struct ctl_wait *next;
	struct scsitgtd_control *ctl;
	struct ctl_conn *conn; /* NULL once the connection is gone: nobody to answer */
	uv_timer_t timer;
	uint64_t deadline;     /* uv_now() */
	json_object *id;       /* the request's */
	bool answered;	       /* "still opening" went out */
	bool reload;	       /* a reload's answer (lun and tname unused) */
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
/* How long an add_lun or reload answer waits for its RBD images to open (docs/scsitgtd.md). */
#define CTL_WAIT_MS SCSITGTD_SETTLE_MS

void rpc_error(struct rpc_reply *r, int code, const char *fmt, ...)
{
	va_list ap;

	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
}

/* A string member of @params, or NULL (then @r holds the error). */
const char *param_str(json_object *params, const char *name, struct rpc_reply *r)
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
struct scsitgt_target *param_target(struct scsitgtd *d, json_object *params,
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

/* ---- dispatch ---- */

static const struct method {
	const char *name;
	void (*fn)(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
} methods[] = {
	{ "show", ctl_show },
	{ "stats", ctl_stats },
	{ "kick", ctl_kick },
	{ "reload", ctl_reload },
	{ "add_lun", ctl_add_lun },
	{ "remove_lun", ctl_remove_lun },
	{ "add_initiator", ctl_add_initiator },
	{ "remove_initiator", ctl_remove_initiator },
	{ "add_address", ctl_add_address },
	{ "remove_address", ctl_remove_address },
#ifndef SCSITGTD_CONTROL_NO_SAVE /* the fuzz target writes no files */
	{ "save", ctl_save },
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

static struct ctl_wait *wait_start(struct ctl_conn *c, json_object *id, const struct rpc_reply *r);

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
			if (r.deferred && wait_start(c, id, &r)) {
				json_tokener_free(tok);
				json_object_put(req);
				return NULL;
			}
			if (r.deferred && r.wait_reload) /* no memory to wait: answer now */
				ctl_reload_answer(d, &r);
			else if (r.deferred)
				ctl_add_lun_answer(d, r.wait_tname, r.wait_lun, true, &r);
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
	    !ctl_lun_configured(d, w->tname, w->lun))
		return;
	scsitgtd_log(d, SCSITGT_LOG_NOTICE,
		     "control: %s: LUN %llu: not created (%s): taken out of the running "
		     "configuration",
		     w->tname, (unsigned long long)w->lun, why ? why : "see above");
	ctl_lun_drop(d, w->tname, w->lun, &r);
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
	bool opening = w->reload ? scsitgtd_luns_opening(d) :
				   scsitgtd_lun_opening(d, w->tname, w->lun);

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
	if (w->reload)
		ctl_reload_answer(d, &r); /* those still opening listed as such */
	else
		ctl_add_lun_answer(d, w->tname, w->lun, w->file_gen == d->file_gen, &r);
	if (r.code == 0 && r.result == NULL)
		rpc_error(&r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
	resp = response(&r, w->id);
	if (opening && !w->reload) {
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
		if (w->reload ? !scsitgtd_luns_opening(d) :
				w->lun == id && !strcmp(w->tname, tname))
			uv_timer_start(&w->timer, wait_fire, 0, 0);
}

static struct ctl_wait *wait_start(struct ctl_conn *c, json_object *id, const struct rpc_reply *r)
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
	w->reload = r->wait_reload;
	w->lun = r->wait_lun;
	snprintf(w->tname, sizeof(w->tname), "%s", r->wait_tname);
	w->deadline = uv_now(d->loop) + CTL_WAIT_MS;
	w->file_gen = d->file_gen;
	uv_timer_start(&w->timer, wait_fire, CTL_WAIT_MS, 0);
	w->next = c->ctl->waits;
	c->ctl->waits = w;
	c->wait = w;
	if (w->reload)
		scsitgtd_log(d, SCSITGT_LOG_INFO,
			     "control: reload: answer once its images are open");
	else
		scsitgtd_log(d, SCSITGT_LOG_INFO,
			     "control: %s: LUN %llu: answer once its image is open", w->tname,
			     (unsigned long long)w->lun);
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
