/* SPDX-License-Identifier: MIT */
/*
 * The output of a TCP connection: a queue of sealed batches (struct scsitgt__iscsi_tx) waiting
 * for the socket, turned into uv_buf_t arrays for one writev, and the one writer that empties
 * it. Shared by the home-loop sender (tcp.c) and the worker-loop sender (tcp_worker.c): each
 * has its own writer (queue and uv_write) and says what a written or failed batch means on
 * its side (as libuv keeps one uv__write for every stream).
 */
#ifndef SCSITGT_TRANSPORT_ISCSI_TXQ_H
#define SCSITGT_TRANSPORT_ISCSI_TXQ_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "transport/iscsi/pdu.h"

/* One writev takes at most this many iovecs (IOV_MAX is 1024 on Linux) ... */
#define SCSITGT__ISCSI_TXQ_IOV 512u
/* ... and stops adding batches once it holds this many bytes. */
#define SCSITGT__ISCSI_TXQ_BYTES (4u * 1024u * 1024u)
/*
 * A writer's share of one loop turn: a flush that handed this many bytes to the kernel yields
 * (writer_ops.yield) rather than write on while the kernel takes everything, so that one
 * connection's long queue (large READs at a high queue depth, a reader on another core
 * keeping the socket empty) does not hold up the other connections of its loop. Until its
 * idle turn (writer_resume) the writer writes nothing more: flushes meanwhile (read
 * callbacks, batches arriving) only leave their batches queued, so the share holds per loop
 * turn however many commands the connection receives. One full writev: a turn's output below
 * it (the common case) is written as before, and above it the yield costs a loop turn per
 * 4 MiB, not a system call per PDU.
 */
#define SCSITGT__ISCSI_TXQ_TURN_BYTES SCSITGT__ISCSI_TXQ_BYTES

struct scsitgt__iscsi_txq {
	struct scsitgt__iscsi_tx *head;
	struct scsitgt__iscsi_tx **tail;
};

static inline void scsitgt__iscsi_txq_init(struct scsitgt__iscsi_txq *q)
{
	q->head = NULL;
	q->tail = &q->head;
}

static inline void scsitgt__iscsi_txq_push(struct scsitgt__iscsi_txq *q,
					   struct scsitgt__iscsi_tx *tx)
{
	tx->next = NULL;
	*q->tail = tx;
	q->tail = &tx->next;
}

/* Append a NULL-terminated chain of batches to @q. */
static inline void scsitgt__iscsi_txq_append(struct scsitgt__iscsi_txq *q,
					     struct scsitgt__iscsi_tx *chain)
{
	*q->tail = chain;
	for (; chain; chain = chain->next)
		q->tail = &chain->next;
}

/*
 * Gather up to SCSITGT__ISCSI_TXQ_IOV buffers (@bufs has room for that many) from the head of
 * @q, whole batches only, adding none once they hold @max_bytes (the first always goes).
 * Returns the number of buffers and sets *ntx to the number of batches and *total to their
 * bytes; *big is set when the head batch alone has more iovecs than fit.
 */
unsigned int scsitgt__iscsi_txq_gather(const struct scsitgt__iscsi_txq *q, uv_buf_t *bufs,
				       size_t max_bytes, unsigned int *ntx, size_t *total,
				       bool *big);

/* Take the first @n batches (all, if fewer) off @q; returns them as a NULL-terminated chain. */
struct scsitgt__iscsi_tx *scsitgt__iscsi_txq_take(struct scsitgt__iscsi_txq *q, unsigned int n);

/*
 * Buffers for the unwritten rest of @chain after @skip bytes. Uses @small (room for
 * SCSITGT__ISCSI_TXQ_IOV) unless @chain is one batch with more iovecs, then allocates: the
 * caller frees *out when it is not @small. Returns the number of buffers or -ENOMEM.
 */
int scsitgt__iscsi_txq_rest(const struct scsitgt__iscsi_tx *chain, size_t skip, uv_buf_t *small,
			    uv_buf_t **out);

struct scsitgt__iscsi_writer;

struct scsitgt__iscsi_writer_ops {
	/* The kernel took batch @tx whole (tx->next is NULL). */
	void (*written)(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *tx);
	/*
	 * The batches of @chain (NULL-terminated, in order) cannot be written: a socket error
	 * (@status < 0), or -ECANCELED when the writer was stopped meanwhile.
	 */
	void (*failed)(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *chain,
		       int status);
	/* The uv_write in flight finished well (its batches went to written): flush again. */
	void (*write_done)(struct scsitgt__iscsi_writer *w);
	/*
	 * The flush stopped with batches left after its turn's share (turn_bytes): call
	 * writer_resume from a later loop turn that does not wait for I/O (a uv_idle handle).
	 * Until then w->yielded is set and writer_flush writes nothing, so that call is the only
	 * way on: it must come unless the connection closes. Optional: NULL writes on until the
	 * queue is empty or the kernel is full.
	 */
	void (*yield)(struct scsitgt__iscsi_writer *w);
};

struct scsitgt__iscsi_writer {
	uv_stream_t *stream;
	const struct scsitgt__iscsi_writer_ops *ops;
	struct scsitgt__iscsi_txq q;	  /* batches not handed to the kernel yet, oldest first */
	uv_write_t wr;			  /* the one uv_write in flight ... */
	struct scsitgt__iscsi_tx *wr_txs; /* ... with the batches it carries, in order */
	bool busy;			  /* wr is in flight */
	bool flushing;			  /* in flush: callbacks may queue more; no recursion */
	bool stopped;			  /* closing or failed: nothing more is written */
	bool yielded;			  /* stopped for its turn's share until writer_resume */
	size_t turn_bytes; /* share of a loop turn (SCSITGT__ISCSI_TXQ_TURN_BYTES; tests less) */
};

void scsitgt__iscsi_writer_init(struct scsitgt__iscsi_writer *w, uv_stream_t *stream,
				const struct scsitgt__iscsi_writer_ops *ops);
/*
 * Write the queue: every batch that fits in one writev (uv_try_write) at a time; what the
 * kernel did not take goes to one uv_write (the payloads are never copied), and the queue
 * waits for its callback. Returns when the queue is empty, a uv_write is in flight, the
 * writer is stopped, or it wrote its turn's share (turn_bytes) and yielded (ops->yield).
 * Writes nothing while yielded.
 */
void scsitgt__iscsi_writer_flush(struct scsitgt__iscsi_writer *w);
/* The loop turn after a yield (ops->yield): a fresh share, and flush. */
void scsitgt__iscsi_writer_resume(struct scsitgt__iscsi_writer *w);
/*
 * At close, the last chance for what is queued (a Reject before the drop, say): one write
 * that never blocks, when no uv_write is in flight. Returns how many head batches it took
 * whole; they stay queued, for the caller to finish as written.
 */
unsigned int scsitgt__iscsi_writer_try_last(struct scsitgt__iscsi_writer *w);

#endif /* SCSITGT_TRANSPORT_ISCSI_TXQ_H */
