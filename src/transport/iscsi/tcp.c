/* SPDX-License-Identifier: MIT */
/*
 * The TCP data mover (uv_tcp_t): large reads that may hold several PDUs, payload read
 * straight into the command buffer when the receiver is inside a data segment bound for one,
 * and one uv_write (writev) per batch of PDUs with their digests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/conn.h"

/* Read buffer for headers and small PDUs; big payloads bypass it. */
#define TCP_RBUF_SIZE (256u * 1024u)
/* Payload remainders at least this long are read in place rather than copied. */
#define TCP_DIRECT_MIN 2048u

struct tcp_conn {
	uv_tcp_t handle;
	struct scsitgt__iscsi_conn *conn;
	uint8_t *rbuf;
	bool closing;
};

struct tcp_write {
	uv_write_t req;
	struct tcp_conn *tc;
	struct scsitgt__iscsi_tx *tx;
	uv_buf_t bufs[];
};

static void tcp_write_cb(uv_write_t *req, int status)
{
	struct tcp_write *wr = req->data;
	struct tcp_conn *tc = wr->tc;

	scsitgt__iscsi_conn_tx_complete(tc->conn, wr->tx, status);
	free(wr);
	if (status < 0 && !tc->closing)
		scsitgt__iscsi_conn_dm_error(tc->conn, status);
}

static void tcp_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	struct tcp_conn *tc = conn->dm_ctx;
	struct tcp_write *wr;
	int rc;

	wr = malloc(sizeof(*wr) + (size_t)tx->iovcnt * sizeof(uv_buf_t));
	if (wr == NULL) {
		scsitgt__iscsi_conn_tx_complete(conn, tx, -ENOMEM);
		scsitgt__iscsi_conn_dm_error(conn, -ENOMEM);
		return;
	}
	wr->tc = tc;
	wr->tx = tx;
	wr->req.data = wr;
	for (int i = 0; i < tx->iovcnt; i++)
		wr->bufs[i] = uv_buf_init(tx->iov[i].iov_base, (unsigned int)tx->iov[i].iov_len);
	rc = uv_write(&wr->req, (uv_stream_t *)&tc->handle, wr->bufs, (unsigned int)tx->iovcnt,
		      tcp_write_cb);
	if (rc < 0) {
		free(wr);
		scsitgt__iscsi_conn_tx_complete(conn, tx, rc);
		scsitgt__iscsi_conn_dm_error(conn, rc);
	}
}

static void tcp_closed(uv_handle_t *h)
{
	struct tcp_conn *tc = h->data;

	if (tc->conn)
		scsitgt__iscsi_conn_dm_closed(tc->conn);
	free(tc->rbuf);
	free(tc);
}

static void tcp_close(struct scsitgt__iscsi_conn *conn)
{
	struct tcp_conn *tc = conn->dm_ctx;

	if (tc->closing)
		return;
	tc->closing = true;
	uv_read_stop((uv_stream_t *)&tc->handle);
	uv_close((uv_handle_t *)&tc->handle, tcp_closed);
}

static const struct scsitgt__iscsi_dm_ops tcp_dm_ops = {
	.name = "tcp",
	.xmit = tcp_xmit,
	.close = tcp_close,
};

static void tcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct tcp_conn *tc = h->data;
	uint8_t *dst;
	size_t n;

	(void)suggested;
	n = tc->conn ? scsitgt__iscsi_rx_direct(&tc->conn->rx, &dst) : 0;
	if (n >= TCP_DIRECT_MIN) {
		if (n > UINT32_MAX / 2)
			n = UINT32_MAX / 2;
		*buf = uv_buf_init((char *)dst, (unsigned int)n);
		return;
	}
	*buf = uv_buf_init((char *)tc->rbuf, TCP_RBUF_SIZE);
}

static void tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct tcp_conn *tc = s->data;

	if (tc->closing || nread == 0)
		return;
	if (nread < 0) {
		scsitgt__iscsi_conn_dm_error(tc->conn, (int)nread);
		return;
	}
	if ((uint8_t *)buf->base == tc->rbuf)
		scsitgt__iscsi_conn_recv(tc->conn, tc->rbuf, (size_t)nread);
	else
		scsitgt__iscsi_conn_recv_direct(tc->conn, (size_t)nread);
}

static void tcp_reject_closed(uv_handle_t *h)
{
	free(h->data);
}

int scsitgt__iscsi_tcp_accept(struct scsitgt_portal *portal)
{
	struct sockaddr_storage peer, local;
	int plen = sizeof(peer), llen = sizeof(local);
	struct tcp_conn *tc;
	int rc;

	tc = calloc(1, sizeof(*tc));
	if (tc == NULL)
		return -ENOMEM;
	tc->handle.data = tc;
	rc = uv_tcp_init(portal->ie->engine->loop, &tc->handle);
	if (rc < 0) {
		free(tc);
		return rc;
	}
	tc->rbuf = malloc(TCP_RBUF_SIZE);
	rc = tc->rbuf ? uv_accept((uv_stream_t *)&portal->listener, (uv_stream_t *)&tc->handle)
		      : -ENOMEM;
	if (rc == 0 && portal->closing)
		rc = -ESHUTDOWN;
	if (rc == 0) {
		memset(&peer, 0, sizeof(peer));
		memset(&local, 0, sizeof(local));
		uv_tcp_getpeername(&tc->handle, (struct sockaddr *)&peer, &plen);
		uv_tcp_getsockname(&tc->handle, (struct sockaddr *)&local, &llen);
		uv_tcp_nodelay(&tc->handle, 1);
		rc = scsitgt__iscsi_conn_create(&tc->conn, portal, &tcp_dm_ops, tc,
						(struct sockaddr *)&peer, (struct sockaddr *)&local);
	}
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&tc->handle, tcp_alloc, tcp_read);
	if (rc < 0) {
		if (tc->conn) {
			/* The connection owns the handle now; it closes it. */
			scsitgt__iscsi_conn_close(tc->conn, "cannot start reading");
			return rc;
		}
		free(tc->rbuf);
		tc->rbuf = NULL;
		uv_close((uv_handle_t *)&tc->handle, tcp_reject_closed);
		return rc;
	}
	return 0;
}
