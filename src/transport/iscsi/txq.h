/* SPDX-License-Identifier: MIT */
/*
 * The output queue of a TCP connection: sealed batches (struct scsitgt__iscsi_tx) waiting for
 * the socket, turned into uv_buf_t arrays for one writev. Shared by the home-loop sender
 * (tcp.c) and the worker-loop sender (tcp_worker.c); each keeps its own queue and uv_write.
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
 * @q, whole batches only. Returns the number of buffers and sets *ntx to the number of batches
 * and *total to their bytes; *big is set when the head batch alone has more iovecs than fit.
 */
unsigned int scsitgt__iscsi_txq_gather(const struct scsitgt__iscsi_txq *q, uv_buf_t *bufs,
				       unsigned int *ntx, size_t *total, bool *big);

/* Take the first @n batches (all, if fewer) off @q; returns them as a NULL-terminated chain. */
struct scsitgt__iscsi_tx *scsitgt__iscsi_txq_take(struct scsitgt__iscsi_txq *q, unsigned int n);

/*
 * Buffers for the unwritten rest of @chain after @skip bytes. Uses @small (room for
 * SCSITGT__ISCSI_TXQ_IOV) unless @chain is one batch with more iovecs, then allocates: the
 * caller frees *out when it is not @small. Returns the number of buffers or -ENOMEM.
 */
int scsitgt__iscsi_txq_rest(const struct scsitgt__iscsi_tx *chain, size_t skip, uv_buf_t *small,
			    uv_buf_t **out);

#endif /* SCSITGT_TRANSPORT_ISCSI_TXQ_H */
