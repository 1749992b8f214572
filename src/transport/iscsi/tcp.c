/* SPDX-License-Identifier: MIT */
/*
 * The TCP data mover (uv_tcp_t): large reads that may hold several PDUs, payload read
 * straight into the command buffer when the receiver is inside a data segment bound for one,
 * and coalesced output.
 *
 * Output: xmit() only queues a batch. The queue is written (the writer of txq.h) with one
 * writev for every batch that became ready in this loop iteration: at the end of the read
 * callback (the responses of every PDU of that read), and from a uv_prepare handle for
 * batches queued elsewhere (timers, backend completions), which runs before the loop can
 * block. uv_try_write() goes first; only what the kernel did not take goes to one uv_write()
 * (the payloads are never copied), and the queue waits for its callback. Writing without a
 * uv_write request in the common case also keeps libuv from re-arming the socket in epoll
 * after every write. A connection writes at most its share in a loop turn (txq.h: one
 * connection's long queue must not hold up the others of the loop while the kernel takes
 * everything): after that its flushes write nothing (read callbacks included) and the rest
 * goes on from a uv_idle handle, which runs in the next loop turn without letting the loop
 * block, after the other connections' ready callbacks of this turn.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/iscsi/conn.h"
#include "transport/iscsi/txq.h"

/* Read buffer for headers and small PDUs; big payloads bypass it. */
#define TCP_RBUF_SIZE (256u * 1024u)
/*
 * Before login completes a connection reads through a small buffer (one login PDU header and
 * its 8 KiB data segment, RFC 7143 §6.2), so that connections that never log in cost little;
 * it grows to TCP_RBUF_SIZE in full feature phase.
 */
#define TCP_RBUF_LOGIN (8192u + 48u)
/*
 * Payload remainders at least this long are read in place rather than copied. A read in place
 * that fills its buffer makes libuv read again (usually EAGAIN: one system call more), and an
 * initiator that sends a Data-Out or immediate data apart from its header makes every such
 * remainder a read of its own; below this size copying it out of the read buffer is cheaper.
 */
#define TCP_DIRECT_MIN (16u * 1024u)
/*
 * Data segments at least this long are read in place from their first byte: the read before
 * them stops at the end of their header (scsitgt__iscsi_rx_header_window), one more system
 * call per PDU instead of a copy of the segment out of the read buffer. A 1 MiB write arrives
 * as four 256 KiB segments (immediate data and Data-Out PDUs at MaxRecvDataSegmentLength).
 */
#define TCP_DIRECT_BIG (32u * 1024u)

struct tcp_conn {
	uv_tcp_t handle;
	uv_prepare_t flusher; /* flushes batches queued outside the read callback */
	uv_idle_t resume;     /* goes on after a flush yielded its turn */
	struct scsitgt__iscsi_conn *conn;
	uint8_t *rbuf;
	size_t rbuf_size;
	struct scsitgt__iscsi_writer w; /* the output queue and its uv_write (txq.h) */
	bool in_read;			/* inside tcp_read: it flushes at its end */
	bool closing;
	unsigned int close_written; /* head batches the last write at close took whole */
	unsigned int handles;	    /* open uv handles; freed at 0 */
};

/* Finish a chain of batches (linked by next) in order. */
static void tcp_complete_chain(struct tcp_conn *tc, struct scsitgt__iscsi_tx *tx, int status)
{
	while (tx) {
		struct scsitgt__iscsi_tx *next = tx->next;

		tx->next = NULL;
		scsitgt__iscsi_conn_tx_complete(tc->conn, tx, status);
		tx = next;
	}
}

static void tcp_written(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *tx)
{
	struct tcp_conn *tc = scsitgt__container_of(w, struct tcp_conn, w);

	scsitgt__iscsi_conn_tx_complete(tc->conn, tx, 0);
}

static void tcp_write_failed(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *chain,
			     int status)
{
	struct tcp_conn *tc = scsitgt__container_of(w, struct tcp_conn, w);

	tcp_complete_chain(tc, chain, status);
	if (!tc->closing)
		scsitgt__iscsi_conn_dm_error(tc->conn, status);
}

/* After a flush: the prepare flusher stays on only while it has something to do. */
static void tcp_flusher_settle(struct tcp_conn *tc)
{
	/* A yield goes on from the idle handle, not in this turn's prepare phase. */
	if (tc->w.q.head == NULL || tc->w.busy || tc->closing || tc->w.yielded)
		uv_prepare_stop(&tc->flusher);
}

static void tcp_flush(struct tcp_conn *tc)
{
	scsitgt__iscsi_writer_flush(&tc->w);
	tcp_flusher_settle(tc);
}

static void tcp_resume_cb(uv_idle_t *i)
{
	struct tcp_conn *tc = i->data;

	uv_idle_stop(i);
	scsitgt__iscsi_writer_resume(&tc->w);
	tcp_flusher_settle(tc);
}

static void tcp_yield(struct scsitgt__iscsi_writer *w)
{
	struct tcp_conn *tc = scsitgt__container_of(w, struct tcp_conn, w);

	if (!tc->closing)
		uv_idle_start(&tc->resume, tcp_resume_cb);
}

static void tcp_write_done(struct scsitgt__iscsi_writer *w)
{
	tcp_flush(scsitgt__container_of(w, struct tcp_conn, w));
}

static const struct scsitgt__iscsi_writer_ops tcp_writer_ops = {
	.written = tcp_written,
	.failed = tcp_write_failed,
	.write_done = tcp_write_done,
	.yield = tcp_yield,
};

static void tcp_flusher_cb(uv_prepare_t *p)
{
	tcp_flush(p->data);
}

static void tcp_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	struct tcp_conn *tc = conn->dm_ctx;

	scsitgt__iscsi_txq_push(&tc->w.q, tx);
	/* The read callback flushes when it ends; anything else waits for the prepare phase
	 * (or for the idle handle, after a yield). */
	if (!tc->in_read && !tc->w.busy && !tc->w.yielded)
		uv_prepare_start(&tc->flusher, tcp_flusher_cb);
}

static void tcp_handle_closed(uv_handle_t *h)
{
	struct tcp_conn *tc = h->data;

	if (--tc->handles)
		return;
	if (tc->conn) {
		struct scsitgt__iscsi_tx *chain = scsitgt__iscsi_txq_take(&tc->w.q, UINT_MAX);

		while (chain) {
			struct scsitgt__iscsi_tx *tx = chain;

			chain = chain->next;
			tx->next = NULL;
			scsitgt__iscsi_conn_tx_complete(tc->conn, tx,
							tc->close_written ? 0 : -ECANCELED);
			if (tc->close_written)
				tc->close_written--;
		}
		scsitgt__iscsi_conn_dm_closed(tc->conn);
	}
	free(tc->rbuf);
	free(tc);
}

static void tcp_close(struct scsitgt__iscsi_conn *conn)
{
	struct tcp_conn *tc = conn->dm_ctx;

	if (tc->closing)
		return;
	/*
	 * Last chance for what is queued (a Reject before the drop, say), as an immediate
	 * uv_write would have done. Batches it took whole are finished as written once the
	 * handles are closed; the rest is dropped then.
	 */
	tc->close_written = scsitgt__iscsi_writer_try_last(&tc->w);
	tc->closing = true;
	tc->w.stopped = true;
	uv_read_stop((uv_stream_t *)&tc->handle);
	uv_prepare_stop(&tc->flusher);
	uv_close((uv_handle_t *)&tc->flusher, tcp_handle_closed);
	uv_close((uv_handle_t *)&tc->resume, tcp_handle_closed);
	uv_close((uv_handle_t *)&tc->handle, tcp_handle_closed);
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
	if (tc->rbuf_size < TCP_RBUF_SIZE && tc->conn && tc->conn->state == SCSITGT__CONN_FFP) {
		/* Logged in: the full buffer. Nothing in the old one is needed between reads. */
		uint8_t *big = malloc(TCP_RBUF_SIZE);

		if (big) {
			free(tc->rbuf);
			tc->rbuf = big;
			tc->rbuf_size = TCP_RBUF_SIZE;
		}
	}
	n = tc->conn ? scsitgt__iscsi_rx_header_window(&tc->conn->rx, TCP_DIRECT_BIG) : 0;
	if (n == 0 || n > tc->rbuf_size)
		n = tc->rbuf_size;
	*buf = uv_buf_init((char *)tc->rbuf, (unsigned int)n);
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
	tc->in_read = true;
	/* One clock read for the latency of every command of this read (not two per command). */
	tc->conn->rx_stamp = uv_hrtime();
	if ((uint8_t *)buf->base == tc->rbuf)
		scsitgt__iscsi_conn_recv(tc->conn, tc->rbuf, (size_t)nread);
	else
		scsitgt__iscsi_conn_recv_direct(tc->conn, (size_t)nread);
	tc->conn->rx_stamp = 0; /* the connection lives until its handles are closed */
	tc->in_read = false;
	/* Every response this read produced, in one writev; after a yield they wait for the
	 * idle handle, which is armed (txq.h: one share a loop turn, not one a read). */
	if (!tc->w.yielded)
		tcp_flush(tc);
}

/*
 * With worker loops the socket goes to one of them; this loop's handles close, the worker
 * keeps its own descriptor of the socket. @whole: the connection runs there end to end
 * (xloop.c), else only its socket (tcp_worker.c).
 */
static int tcp_hand_off(struct tcp_conn *tc, struct scsitgt_portal *portal,
			const struct sockaddr_storage *peer, const struct sockaddr_storage *local,
			bool whole)
{
	uv_os_fd_t fd;
	int rc = uv_fileno((uv_handle_t *)&tc->handle, &fd);

	if (rc == 0)
		rc = whole ? scsitgt__iscsi_xloop_adopt(portal, fd, peer, local) :
			     scsitgt__iscsi_tcpw_adopt(portal, fd, (const struct sockaddr *)peer,
						       (const struct sockaddr *)local);
	tc->closing = true;
	uv_close((uv_handle_t *)&tc->flusher, tcp_handle_closed);
	uv_close((uv_handle_t *)&tc->resume, tcp_handle_closed);
	uv_close((uv_handle_t *)&tc->handle, tcp_handle_closed);
	return rc;
}

/* A data mover on @loop: its handles initialised (tc->handles counts them), no socket yet. */
static int tcp_conn_new(struct tcp_conn **out, uv_loop_t *loop)
{
	struct tcp_conn *tc = calloc(1, sizeof(*tc));
	int rc;

	if (tc == NULL)
		return -ENOMEM;
	scsitgt__iscsi_writer_init(&tc->w, (uv_stream_t *)&tc->handle, &tcp_writer_ops);
	tc->handle.data = tc;
	tc->flusher.data = tc;
	tc->resume.data = tc;
	rc = uv_tcp_init(loop, &tc->handle);
	if (rc < 0) {
		free(tc);
		return rc;
	}
	tc->handles = 1;
	/* handles counts them in this order: the socket, flusher, resume. */
	rc = uv_prepare_init(loop, &tc->flusher);
	if (rc == 0) {
		tc->handles++;
		rc = uv_idle_init(loop, &tc->resume);
	}
	if (rc == 0)
		tc->handles++;
	tc->rbuf_size = TCP_RBUF_LOGIN;
	tc->rbuf = rc == 0 ? malloc(tc->rbuf_size) : NULL;
	if (rc == 0 && tc->rbuf == NULL)
		rc = -ENOMEM;
	*out = tc;
	return rc;
}

/* Start the connection of a data mover whose socket is open; on failure everything closes. */
static int tcp_conn_start(struct tcp_conn *tc, struct scsitgt_portal *portal,
			  struct scsitgt__iscsi_handoff *h, const struct sockaddr *peer,
			  const struct sockaddr *local, int rc)
{
	if (rc == 0)
		rc = scsitgt__iscsi_conn_create_on(&tc->conn, portal, h, &tcp_dm_ops, tc, peer,
						   local);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&tc->handle, tcp_alloc, tcp_read);
	if (rc < 0) {
		if (tc->conn) {
			/* The connection owns the handles now; it closes them. */
			scsitgt__iscsi_conn_close(tc->conn, "cannot start reading");
			return rc;
		}
		tc->closing = true;
		if (tc->handles >= 2)
			uv_close((uv_handle_t *)&tc->flusher, tcp_handle_closed);
		if (tc->handles == 3)
			uv_close((uv_handle_t *)&tc->resume, tcp_handle_closed);
		uv_close((uv_handle_t *)&tc->handle, tcp_handle_closed);
		return rc;
	}
	return 0;
}

void scsitgt__iscsi_tcp_adopt_here(struct scsitgt__iscsi_handoff *h)
{
	struct tcp_conn *tc = NULL;
	int rc = tcp_conn_new(&tc, &h->w->loop);

	if (rc == 0) {
		rc = uv_tcp_open(&tc->handle, h->fd);
		if (rc == 0)
			h->fd = -1; /* the handle closes it */
	}
	if (tc == NULL || rc < 0) {
		if (h->fd >= 0)
			close(h->fd);
	}
	if (tc == NULL) {
		scsitgt__iscsi_xloop_conn_gone(h);
		return;
	}
	rc = tcp_conn_start(tc, h->portal, h, (const struct sockaddr *)&h->peer,
			    (const struct sockaddr *)&h->local, rc);
	/* Without a connection the slot goes back now; a connection gives it back when gone. */
	if (rc < 0 && tc->conn == NULL)
		scsitgt__iscsi_xloop_conn_gone(h);
	else if (rc == 0)
		scsitgt__iscsi_conn_log(tc->conn, SCSITGT_LOG_DEBUG,
					"connection placed on worker %u (all of it runs there)",
					h->w->index);
}

int scsitgt__iscsi_tcp_accept(struct scsitgt_portal *portal)
{
	struct scsitgt_engine *engine = portal->ie->engine;
	struct sockaddr_storage peer, local;
	int plen = sizeof(peer), llen = sizeof(local);
	struct tcp_conn *tc = NULL;
	int rc;

	rc = tcp_conn_new(&tc, engine->loop);
	if (tc == NULL)
		return rc;
	if (rc == 0)
		rc = uv_accept((uv_stream_t *)&portal->listener, (uv_stream_t *)&tc->handle);
	/* Refused: accepted (so the backlog drains) and closed at once. */
	if (rc == 0)
		rc = scsitgt__iscsi_portal_admit(portal);
	if (rc == 0) {
		memset(&peer, 0, sizeof(peer));
		memset(&local, 0, sizeof(local));
		uv_tcp_getpeername(&tc->handle, (struct sockaddr *)&peer, &plen);
		uv_tcp_getsockname(&tc->handle, (struct sockaddr *)&local, &llen);
		uv_tcp_nodelay(&tc->handle, 1);
		if (engine->conn_workers)
			return tcp_hand_off(tc, portal, &peer, &local, true);
		if (engine->nworkers)
			return tcp_hand_off(tc, portal, &peer, &local, false);
	}
	return tcp_conn_start(tc, portal, NULL, (struct sockaddr *)&peer, (struct sockaddr *)&local,
			      rc);
}
