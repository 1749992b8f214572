/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's HTTP metrics listener (scsitgtd_metrics.h). One request per connection: the head
 * is read into a fixed buffer (SCSITGTD_HTTP_MAX_REQUEST) and judged by scsitgtd_http_request()
 * after every read; the answer goes out with "Connection: close", then the write side is shut
 * and whatever the client still sends is read and dropped until it closes (closing with
 * unread data would reset the connection and could lose the answer). A timer bounds the whole
 * life of a connection, so a client that sends slowly, never reads, or never closes cannot
 * hold it; at most SCSITGTD_METRICS_MAX_CONNS are served at once.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include <json-c/json.h>

#include "scsitgtd_control.h"
#include "scsitgtd_http.h"
#include "scsitgtd_metrics.h"
#include "scsitgtd_prom.h"

struct metrics_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_write_t wreq;
	uv_shutdown_t sreq;
	struct scsitgtd_metrics *m;
	struct metrics_conn *next;
	char head[256];
	char text[64]; /* the body of an error answer */
	char *body;    /* from open_memstream(), or text */
	bool body_owned;
	bool answered; /* reading only to drop what comes */
	bool sent;     /* the answer is written */
	bool peer_eof; /* the client closed its side */
	bool closing;
	int handles; /* tcp and timer not closed yet */
	size_t len;
	char buf[SCSITGTD_HTTP_MAX_REQUEST];
};

struct scsitgtd_metrics {
	struct scsitgtd *d;
	uv_tcp_t server;
	struct metrics_conn *conns;
	unsigned int nconns;
};

static void conn_handle_closed(uv_handle_t *h)
{
	struct metrics_conn *c = h->data;

	if (--c->handles > 0)
		return;
	if (c->body_owned)
		free(c->body);
	free(c);
}

static void conn_close(struct metrics_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	c->m->nconns--;
	for (struct metrics_conn **pp = &c->m->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
	uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
}

static void conn_timeout(uv_timer_t *t)
{
	conn_close(t->data);
}

static void shut_down(uv_shutdown_t *req, int status)
{
	struct metrics_conn *c = req->data;

	/* The client's close (EOF) or the timer ends the connection from here on. */
	if (status < 0)
		conn_close(c);
}

static void written(uv_write_t *req, int status)
{
	struct metrics_conn *c = req->data;

	if (c->closing)
		return;
	c->sent = true;
	if (status < 0 || c->peer_eof ||
	    uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, shut_down) < 0)
		conn_close(c);
}

/* The Prometheus text of the daemon's counters in a malloc'd buffer, or NULL. */
static char *metrics_text(struct scsitgtd *d, size_t *len)
{
	json_object *st = scsitgtd_control_stats(d);
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	if (f == NULL) {
		json_object_put(st);
		return NULL;
	}
	scsitgtd_prom_write(st, f);
	json_object_put(st);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static void answer(struct metrics_conn *c, int status, bool head_only)
{
	size_t blen = 0;
	uv_buf_t b[2];
	int hl;

	c->answered = true;
	if (status == 200) {
		c->body = metrics_text(c->m->d, &blen);
		c->body_owned = c->body != NULL;
		if (c->body == NULL)
			status = 500;
	}
	if (status != 200) {
		/* A one-line text body: the status and its reason. */
		snprintf(c->text, sizeof(c->text), "%d %s\n", status, scsitgtd_http_reason(status));
		c->body = c->text;
		blen = strlen(c->text);
	}
	hl = scsitgtd_http_response_head(c->head, sizeof(c->head), status, blen);
	b[0] = uv_buf_init(c->head, (unsigned int)hl);
	b[1] = uv_buf_init(c->body, head_only ? 0 : (unsigned int)blen);
	c->wreq.data = c;
	if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, b, 2, written) < 0)
		conn_close(c);
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct metrics_conn *c = h->data;

	(void)suggested;
	/* Once answered, what comes is dropped: the whole buffer will do. */
	*buf = c->answered ? uv_buf_init(c->buf, sizeof(c->buf)) :
			     uv_buf_init(c->buf + c->len, (unsigned int)(sizeof(c->buf) - c->len));
}

static void conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct metrics_conn *c = s->data;
	bool head_only = false;
	int status;

	(void)buf;
	if (nread == UV_EOF && c->answered && !c->sent) {
		/* Half-closed after its request: the answer still goes out. */
		c->peer_eof = true;
		uv_read_stop(s);
		return;
	}
	if (nread < 0) {
		conn_close(c);
		return;
	}
	if (c->answered || nread == 0)
		return;
	c->len += (size_t)nread;
	status = scsitgtd_http_request(c->buf, c->len, &head_only);
	if (status != 0)
		answer(c, status, head_only);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct scsitgtd_metrics *m = server->data;
	struct metrics_conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return;
	if (uv_tcp_init(m->d->loop, &c->tcp) < 0) {
		free(c);
		return;
	}
	c->m = m;
	c->tcp.data = c;
	c->timer.data = c;
	c->sreq.data = c;
	c->handles = 2;
	uv_timer_init(m->d->loop, &c->timer);
	c->next = m->conns;
	m->conns = c;
	m->nconns++;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
	    m->nconns > SCSITGTD_METRICS_MAX_CONNS ||
	    uv_timer_start(&c->timer, conn_timeout, SCSITGTD_METRICS_TIMEOUT_MS, 0) < 0 ||
	    uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_read) < 0)
		conn_close(c);
}

static void server_closed(uv_handle_t *h)
{
	free(h->data);
}

int scsitgtd_metrics_start(struct scsitgtd *d, const char *addr, uint16_t port, char *err,
			   size_t err_size)
{
	struct scsitgtd_metrics *m = calloc(1, sizeof(*m));
	struct sockaddr_storage ss;
	int rc;

	if (m == NULL) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	m->d = d;
	if (strchr(addr, ':'))
		rc = uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&ss);
	else
		rc = uv_ip4_addr(addr, port, (struct sockaddr_in *)&ss);
	if (rc < 0 || (rc = uv_tcp_init(d->loop, &m->server)) < 0) {
		snprintf(err, err_size, "%s", uv_strerror(rc));
		free(m);
		return rc;
	}
	m->server.data = m;
	rc = uv_tcp_bind(&m->server, (const struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&m->server, 64, on_connection);
	if (rc < 0) {
		snprintf(err, err_size, "%s", uv_strerror(rc));
		uv_close((uv_handle_t *)&m->server, server_closed);
		return rc;
	}
	d->metrics = m;
	return 0;
}

void scsitgtd_metrics_stop(struct scsitgtd *d)
{
	struct scsitgtd_metrics *m = d->metrics;

	if (m == NULL)
		return;
	d->metrics = NULL;
	while (m->conns)
		conn_close(m->conns);
	uv_close((uv_handle_t *)&m->server, server_closed);
}
