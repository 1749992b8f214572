/* SPDX-License-Identifier: MIT */
/*
 * The TCP data mover of a connection placed on a worker loop (engine opts .workers > 0).
 *
 * The home loop accepts (tcp.c), gives the socket to the least-loaded worker and keeps the
 * connection object: login, the session, CmdSN order, the core and the backends stay where
 * the targets and LUNs live, so no state is shared. The worker owns the socket: it reads and
 * hands the bytes home, and writes the batches home hands it (the kernel's copies, the
 * syscalls and the epoll work run there). Everything crosses by message (core/worker.h) and
 * every object belongs to one side at a time:
 *
 *   home -> worker: START (open the socket), XMIT (a chain of sealed batches), RESUME
 *                   (reading was paused for flow control), CLOSE (last batches; close)
 *   worker -> home: RX (bytes read), TX_DONE (written or dropped batches, with a status;
 *                   written ones go without waking the home loop, core/worker.h),
 *                   ERROR (EOF or a socket error), CLOSED (the last message: the socket is
 *                   closed, the unwritten batches come back)
 *
 * The home loop only posts CLOSE after its connection asked for it, and posts nothing after
 * CLOSE; the worker closes its socket only on CLOSE and posts nothing after CLOSED. Received
 * bytes not yet consumed by the home loop are bounded: above WORKER_RX_HIGH the worker stops
 * reading until the home loop is below WORKER_RX_LOW again.
 *
 * Batches are written by the writer tcp.c uses too (txq.h): every batch that arrived in one
 * inbox pass in one writev (uv_try_write), the rest through one uv_write, payloads never
 * copied; past its turn's share the writer yields and goes on from a uv_idle handle, as in
 * tcp.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/worker.h"
#include "transport/iscsi/conn.h"
#include "transport/iscsi/txq.h"

/* Read buffers handed home whole; smaller reads are copied into a message of their size. */
#define WORKER_RX_CHUNK (64u * 1024u)
#define WORKER_RX_COPY_MAX 4096u
/* Flow control of received bytes waiting for the home loop. */
#define WORKER_RX_HIGH (4u * 1024u * 1024u)
#define WORKER_RX_LOW (1u * 1024u * 1024u)

struct tcpw {
	/* Set before START, read-only afterwards. */
	struct scsitgt__worker *worker;
	struct scsitgt_engine *engine;
	uv_os_sock_t fd;

	/* Home loop only. */
	struct scsitgt__iscsi_conn *conn;
	uv_prepare_t h_flusher; /* hands batches queued outside an RX pass to the worker */
	struct scsitgt__iscsi_tx *h_pending;
	struct scsitgt__iscsi_tx **h_pending_tail;
	bool h_in_rx;
	bool h_close_sent;
	bool h_closed_seen;
	bool h_flusher_closed;

	/* Both: received bytes posted home and not consumed yet; the worker paused reading. */
	atomic_size_t rx_queued;
	atomic_bool rx_want_resume;

	/* Worker loop only. */
	uv_tcp_t w_handle;
	uv_idle_t w_resume;	/* goes on after a flush yielded its turn */
	unsigned int w_handles; /* of w_handle and w_resume, open */
	bool w_open;		/* w_handle initialised */
	bool w_fd_owned;	/* fd not adopted by w_handle: close it ourselves */
	bool w_reading;
	bool w_eof;
	bool w_closing;
	struct scsitgt__iscsi_writer w_out; /* the output queue and its uv_write (txq.h) */
	struct scsitgt__iscsi_tx *w_done;   /* written batches to report home */
	struct scsitgt__iscsi_tx **w_done_tail;
	struct tcpw_rx *w_chunk; /* the read buffer */
	unsigned int w_close_written;

	/* Embedded messages (each in flight at most once). */
	struct scsitgt__msg start_msg;
	struct scsitgt__msg resume_msg;
	struct scsitgt__msg close_msg;
	struct scsitgt__iscsi_tx *close_chain; /* with close_msg */
	struct scsitgt__msg closed_msg;
	struct scsitgt__iscsi_tx *closed_chain; /* with closed_msg */
	unsigned int closed_written;		/* head batches of closed_chain that were written */
};

/* RX: bytes read. */
struct tcpw_rx {
	struct scsitgt__msg msg;
	struct tcpw *tc;
	size_t len;
	_Alignas(16) uint8_t data[];
};

/* XMIT, TX_DONE and ERROR: a chain of batches and a status. */
struct tcpw_tx {
	struct scsitgt__msg msg;
	struct tcpw *tc;
	struct scsitgt__iscsi_tx *chain;
	int status;
};

static void chain_append(struct scsitgt__iscsi_tx ***tail, struct scsitgt__iscsi_tx *chain)
{
	**tail = chain;
	while (chain) {
		*tail = &chain->next;
		chain = chain->next;
	}
}

/* ------------------------------------------------------------------ home loop ---------- */

static void home_complete_chain(struct tcpw *tc, struct scsitgt__iscsi_tx *tx, int status)
{
	while (tx) {
		struct scsitgt__iscsi_tx *next = tx->next;

		tx->next = NULL;
		scsitgt__iscsi_conn_tx_complete(tc->conn, tx, status);
		tx = next;
	}
}

static void worker_xmit_fn(struct scsitgt__msg *msg);

/* Give every batch queued on the home side to the worker, in one message. */
static void home_flush(struct tcpw *tc)
{
	struct scsitgt__iscsi_tx *chain = tc->h_pending;
	struct tcpw_tx *m;

	if (tc->h_close_sent)
		return;
	uv_prepare_stop(&tc->h_flusher);
	if (chain == NULL)
		return;
	m = malloc(sizeof(*m));
	if (m == NULL) {
		/* Nothing else can be sent in order after a lost batch: give up the connection. */
		tc->h_pending = NULL;
		tc->h_pending_tail = &tc->h_pending;
		home_complete_chain(tc, chain, -ENOMEM);
		scsitgt__iscsi_conn_dm_error(tc->conn, -ENOMEM);
		return;
	}
	tc->h_pending = NULL;
	tc->h_pending_tail = &tc->h_pending;
	m->msg.fn = worker_xmit_fn;
	m->tc = tc;
	m->chain = chain;
	m->status = 0;
	scsitgt__worker_post(tc->worker, &m->msg);
}

static void home_flusher_cb(uv_prepare_t *p)
{
	home_flush(p->data);
}

static void tcpw_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	struct tcpw *tc = conn->dm_ctx;

	tx->next = NULL;
	*tc->h_pending_tail = tx;
	tc->h_pending_tail = &tx->next;
	/* An RX pass hands its responses over when it ends; the rest before the loop blocks. */
	if (!tc->h_in_rx)
		uv_prepare_start(&tc->h_flusher, home_flusher_cb);
}

static void worker_close_fn(struct scsitgt__msg *msg);

static void home_flusher_closed(uv_handle_t *h)
{
	struct tcpw *tc = h->data;

	tc->h_flusher_closed = true;
	if (tc->h_closed_seen)
		free(tc);
}

static void tcpw_close(struct scsitgt__iscsi_conn *conn)
{
	struct tcpw *tc = conn->dm_ctx;

	if (tc->h_close_sent)
		return;
	/* The last batches (a Reject, a Logout Response) travel with CLOSE. */
	tc->close_chain = tc->h_pending;
	tc->h_pending = NULL;
	tc->h_pending_tail = &tc->h_pending;
	tc->h_close_sent = true;
	uv_prepare_stop(&tc->h_flusher);
	uv_close((uv_handle_t *)&tc->h_flusher, home_flusher_closed);
	tc->close_msg.fn = worker_close_fn;
	scsitgt__worker_post(tc->worker, &tc->close_msg);
}

static const struct scsitgt__iscsi_dm_ops tcpw_dm_ops = {
	.name = "tcp-worker",
	.xmit = tcpw_xmit,
	.close = tcpw_close,
};

static void worker_resume_fn(struct scsitgt__msg *msg);

static void home_rx_fn(struct scsitgt__msg *msg)
{
	struct tcpw_rx *m = scsitgt__container_of(msg, struct tcpw_rx, msg);
	struct tcpw *tc = m->tc;
	size_t left;

	tc->h_in_rx = true;
	scsitgt__iscsi_conn_recv(tc->conn, m->data, m->len);
	tc->h_in_rx = false;
	left = atomic_fetch_sub(&tc->rx_queued, m->len) - m->len;
	free(m);
	/* Every response this read produced, in one hand-off. */
	home_flush(tc);
	if (left <= WORKER_RX_LOW && !tc->h_close_sent && atomic_load(&tc->rx_want_resume) &&
	    atomic_exchange(&tc->rx_want_resume, false)) {
		tc->resume_msg.fn = worker_resume_fn;
		scsitgt__worker_post(tc->worker, &tc->resume_msg);
	}
}

static void home_tx_done_fn(struct scsitgt__msg *msg)
{
	struct tcpw_tx *m = scsitgt__container_of(msg, struct tcpw_tx, msg);

	home_complete_chain(m->tc, m->chain, m->status);
	free(m);
}

static void home_error_fn(struct scsitgt__msg *msg)
{
	struct tcpw_tx *m = scsitgt__container_of(msg, struct tcpw_tx, msg);
	struct tcpw *tc = m->tc;
	int status = m->status;

	free(m);
	if (!tc->h_close_sent)
		scsitgt__iscsi_conn_dm_error(tc->conn, status);
}

/* The worker closed the socket: finish the batches it gave back, release the connection. */
static void home_closed_fn(struct scsitgt__msg *msg)
{
	struct tcpw *tc = scsitgt__container_of(msg, struct tcpw, closed_msg);
	struct scsitgt__iscsi_tx *tx = tc->closed_chain;
	unsigned int written = tc->closed_written;

	while (tx) {
		struct scsitgt__iscsi_tx *next = tx->next;

		tx->next = NULL;
		scsitgt__iscsi_conn_tx_complete(tc->conn, tx, written ? 0 : -ECANCELED);
		if (written)
			written--;
		tx = next;
	}
	scsitgt__worker_unpick(tc->worker);
	scsitgt__iscsi_conn_dm_closed(tc->conn);
	tc->h_closed_seen = true;
	if (tc->h_flusher_closed)
		free(tc);
}

/* ------------------------------------------------------------------ worker loop -------- */

/*
 * Report written batches home (one message for all of this pass). The home loop only frees
 * them, so the report does not wake it (it goes with the next received bytes, or a few ms
 * later): that saves a thread wake-up per response. A batch whose completion closes the
 * connection (a Logout Response) is reported at once.
 */
static void worker_post_done(struct tcpw *tc)
{
	bool urgent = false;
	struct tcpw_tx *m;

	if (tc->w_done == NULL)
		return;
	for (struct scsitgt__iscsi_tx *t = tc->w_done; t && !urgent; t = t->next)
		urgent = t->close_after;
	m = malloc(sizeof(*m));
	if (m == NULL)
		return; /* kept for the next pass, or for CLOSED */
	m->msg.fn = home_tx_done_fn;
	m->tc = tc;
	m->chain = tc->w_done;
	m->status = 0;
	tc->w_done = NULL;
	tc->w_done_tail = &tc->w_done;
	if (urgent)
		scsitgt__engine_post(tc->engine, &m->msg);
	else
		scsitgt__engine_post_lazy(tc->worker, &m->msg);
}

/* Batches that failed, after the written ones (completion order is queue order). */
static void worker_fail_chain(struct tcpw *tc, struct scsitgt__iscsi_tx *chain, int status)
{
	struct tcpw_tx *m;

	if (chain == NULL)
		return;
	worker_post_done(tc);
	m = malloc(sizeof(*m));
	if (m == NULL || tc->w_done) {
		/* Keep them: CLOSED gives back whatever is still queued. */
		free(m);
		scsitgt__iscsi_txq_append(&tc->w_out.q, chain);
		return;
	}
	m->msg.fn = home_tx_done_fn;
	m->tc = tc;
	m->chain = chain;
	m->status = status;
	scsitgt__engine_post(tc->engine, &m->msg);
}

static void worker_error(struct tcpw *tc, int status)
{
	struct tcpw_tx *m;

	if (tc->w_eof)
		return;
	tc->w_eof = true;
	tc->w_out.stopped = true;
	if (tc->w_reading) {
		uv_read_stop((uv_stream_t *)&tc->w_handle);
		tc->w_reading = false;
	}
	m = malloc(sizeof(*m));
	if (m == NULL)
		return; /* the connection's idle timer ends it */
	m->msg.fn = home_error_fn;
	m->tc = tc;
	m->chain = NULL;
	m->status = status;
	scsitgt__engine_post(tc->engine, &m->msg);
}

static void worker_written(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *tx)
{
	struct tcpw *tc = scsitgt__container_of(w, struct tcpw, w_out);

	tx->next = NULL;
	*tc->w_done_tail = tx;
	tc->w_done_tail = &tx->next;
}

static void worker_write_failed(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *chain,
				int status)
{
	struct tcpw *tc = scsitgt__container_of(w, struct tcpw, w_out);

	worker_fail_chain(tc, chain, status);
	if (!tc->w_closing)
		worker_error(tc, status);
}

static void worker_flush(struct tcpw *tc)
{
	if (tc->w_open)
		scsitgt__iscsi_writer_flush(&tc->w_out);
}

static void worker_write_done(struct scsitgt__iscsi_writer *w)
{
	struct tcpw *tc = scsitgt__container_of(w, struct tcpw, w_out);

	worker_flush(tc);
	worker_post_done(tc);
}

static void worker_resume_cb(uv_idle_t *i)
{
	struct tcpw *tc = i->data;

	uv_idle_stop(i);
	if (tc->w_open)
		scsitgt__iscsi_writer_resume(&tc->w_out);
	worker_post_done(tc);
}

static void worker_yield(struct scsitgt__iscsi_writer *w)
{
	struct tcpw *tc = scsitgt__container_of(w, struct tcpw, w_out);

	if (!tc->w_closing)
		uv_idle_start(&tc->w_resume, worker_resume_cb);
}

static const struct scsitgt__iscsi_writer_ops worker_writer_ops = {
	.written = worker_written,
	.failed = worker_write_failed,
	.write_done = worker_write_done,
	.yield = worker_yield,
};

static void worker_xmit_fn(struct scsitgt__msg *msg)
{
	struct tcpw_tx *m = scsitgt__container_of(msg, struct tcpw_tx, msg);
	struct tcpw *tc = m->tc;

	scsitgt__iscsi_txq_append(&tc->w_out.q, m->chain);
	free(m);
	/* After a yield the batches wait for the idle handle, which is armed (txq.h: one share a
	 * loop turn, not one an inbox pass). */
	if (tc->w_out.yielded)
		return;
	worker_flush(tc);
	worker_post_done(tc);
}

static void worker_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct tcpw *tc = h->data;

	(void)suggested;
	if (tc->w_chunk == NULL)
		tc->w_chunk = malloc(sizeof(*tc->w_chunk) + WORKER_RX_CHUNK);
	if (tc->w_chunk == NULL) {
		*buf = uv_buf_init(NULL, 0); /* UV_ENOBUFS to the read callback */
		return;
	}
	*buf = uv_buf_init((char *)tc->w_chunk->data, WORKER_RX_CHUNK);
}

static void worker_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void worker_pause_check(struct tcpw *tc, size_t queued)
{
	if (queued <= WORKER_RX_HIGH)
		return;
	uv_read_stop((uv_stream_t *)&tc->w_handle);
	tc->w_reading = false;
	atomic_store(&tc->rx_want_resume, true);
	/* The home loop may have drained everything before it could see the flag. */
	if (atomic_load(&tc->rx_queued) <= WORKER_RX_LOW &&
	    atomic_exchange(&tc->rx_want_resume, false)) {
		if (uv_read_start((uv_stream_t *)&tc->w_handle, worker_alloc, worker_read) == 0)
			tc->w_reading = true;
	}
}

static void worker_resume_fn(struct scsitgt__msg *msg)
{
	struct tcpw *tc = scsitgt__container_of(msg, struct tcpw, resume_msg);

	if (tc->w_closing || tc->w_eof || tc->w_reading || !tc->w_open)
		return;
	if (uv_read_start((uv_stream_t *)&tc->w_handle, worker_alloc, worker_read) == 0)
		tc->w_reading = true;
}

static void worker_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct tcpw *tc = s->data;
	struct tcpw_rx *m;
	size_t queued;

	(void)buf;
	if (tc->w_closing || nread == 0)
		return;
	if (nread < 0) {
		worker_error(tc, (int)nread);
		return;
	}
	if ((size_t)nread <= WORKER_RX_COPY_MAX) {
		/* A small read (commands, status traffic): copy it; keep the big buffer. */
		m = malloc(sizeof(*m) + (size_t)nread);
		if (m == NULL) {
			worker_error(tc, -ENOMEM);
			return;
		}
		memcpy(m->data, tc->w_chunk->data, (size_t)nread);
	} else {
		m = tc->w_chunk;
		tc->w_chunk = NULL;
	}
	m->msg.fn = home_rx_fn;
	m->tc = tc;
	m->len = (size_t)nread;
	queued = atomic_fetch_add(&tc->rx_queued, (size_t)nread) + (size_t)nread;
	scsitgt__engine_post(tc->engine, &m->msg);
	worker_pause_check(tc, queued);
}

static void worker_handle_closed(uv_handle_t *h)
{
	struct tcpw *tc = h->data;
	unsigned int written = tc->w_close_written;

	if (tc->w_handles && --tc->w_handles)
		return; /* the other handle's close comes */

	/* Batches written earlier whose report could not be posted come first. */
	worker_post_done(tc);
	for (struct scsitgt__iscsi_tx *t = tc->w_done; t; t = t->next)
		written++;
	chain_append(&tc->w_done_tail, scsitgt__iscsi_txq_take(&tc->w_out.q, UINT_MAX));
	tc->closed_chain = tc->w_done;
	tc->closed_written = written;
	tc->w_done = NULL;
	tc->w_done_tail = &tc->w_done;
	if (tc->w_fd_owned)
		close(tc->fd);
	free(tc->w_chunk);
	tc->w_chunk = NULL;
	tc->closed_msg.fn = home_closed_fn;
	/* The last message of this connection; the home loop frees it. */
	scsitgt__engine_post(tc->engine, &tc->closed_msg);
}

static void worker_close_fn(struct scsitgt__msg *msg)
{
	struct tcpw *tc = scsitgt__container_of(msg, struct tcpw, close_msg);

	scsitgt__iscsi_txq_append(&tc->w_out.q, tc->close_chain);
	tc->close_chain = NULL;
	/* Last chance for what is queued, as tcp.c: one write that never blocks. */
	tc->w_close_written = tc->w_open ? scsitgt__iscsi_writer_try_last(&tc->w_out) : 0;
	tc->w_closing = true;
	tc->w_out.stopped = true;
	if (!tc->w_open) {
		worker_handle_closed((uv_handle_t *)&tc->w_handle);
		return;
	}
	if (tc->w_reading)
		uv_read_stop((uv_stream_t *)&tc->w_handle);
	tc->w_reading = false;
	/* A uv_write in flight is cancelled (its callback reports it) before the close cb. */
	if (tc->w_handles == 2)
		uv_close((uv_handle_t *)&tc->w_resume, worker_handle_closed);
	uv_close((uv_handle_t *)&tc->w_handle, worker_handle_closed);
}

static void worker_start_fn(struct scsitgt__msg *msg)
{
	struct tcpw *tc = scsitgt__container_of(msg, struct tcpw, start_msg);
	int rc;

	tc->w_handle.data = tc;
	tc->w_resume.data = tc;
	rc = uv_tcp_init(&tc->worker->loop, &tc->w_handle);
	if (rc < 0) {
		worker_error(tc, rc);
		return;
	}
	tc->w_open = true;
	tc->w_handles = 1;
	if (uv_idle_init(&tc->worker->loop, &tc->w_resume) == 0)
		tc->w_handles++;
	else
		tc->w_out.turn_bytes = SIZE_MAX; /* nothing would go on after a yield */
	rc = uv_tcp_open(&tc->w_handle, tc->fd);
	if (rc == 0)
		tc->w_fd_owned = false;
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&tc->w_handle, worker_alloc, worker_read);
	if (rc < 0) {
		worker_error(tc, rc);
		return;
	}
	tc->w_reading = true;
}

/* ------------------------------------------------------------------ hand-off ----------- */

int scsitgt__iscsi_tcpw_adopt(struct scsitgt_portal *portal, uv_os_sock_t fd,
			      const struct sockaddr *peer, const struct sockaddr *local)
{
	struct scsitgt_engine *engine = portal->ie->engine;
	struct tcpw *tc;
	int rc;

	tc = calloc(1, sizeof(*tc));
	if (tc == NULL)
		return -ENOMEM;
	/* The worker's own descriptor of the socket; the caller closes the one it accepted. */
	tc->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (tc->fd < 0) {
		rc = -errno;
		free(tc);
		return rc;
	}
	tc->engine = engine;
	tc->w_fd_owned = true;
	tc->h_pending_tail = &tc->h_pending;
	scsitgt__iscsi_writer_init(&tc->w_out, (uv_stream_t *)&tc->w_handle, &worker_writer_ops);
	tc->w_done_tail = &tc->w_done;
	atomic_init(&tc->rx_queued, 0);
	atomic_init(&tc->rx_want_resume, false);
	rc = uv_prepare_init(engine->loop, &tc->h_flusher);
	if (rc < 0) {
		close(tc->fd);
		free(tc);
		return rc;
	}
	tc->h_flusher.data = tc;
	tc->worker = scsitgt__worker_pick(engine);
	rc = scsitgt__iscsi_conn_create(&tc->conn, portal, &tcpw_dm_ops, tc, peer, local);
	if (rc < 0) {
		scsitgt__worker_unpick(tc->worker);
		close(tc->fd);
		/* No CLOSED will come: free with the flusher handle. */
		tc->h_closed_seen = true;
		uv_close((uv_handle_t *)&tc->h_flusher, home_flusher_closed);
		return rc;
	}
	scsitgt__iscsi_conn_log(tc->conn, SCSITGT_LOG_DEBUG, "connection placed on worker %u",
				tc->worker->index);
	tc->start_msg.fn = worker_start_fn;
	scsitgt__worker_post(tc->worker, &tc->start_msg);
	return 0;
}
