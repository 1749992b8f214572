/* SPDX-License-Identifier: MIT */
/* The output queue of a TCP connection and its writer, see txq.h. */
#include "transport/iscsi/txq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

unsigned int scsitgt__iscsi_txq_gather(const struct scsitgt__iscsi_txq *q, uv_buf_t *bufs,
				       size_t max_bytes, unsigned int *ntx, size_t *total,
				       bool *big)
{
	unsigned int nb = 0;

	*ntx = 0;
	*total = 0;
	*big = false;
	for (struct scsitgt__iscsi_tx *tx = q->head; tx; tx = tx->next) {
		if ((unsigned int)tx->iovcnt > SCSITGT__ISCSI_TXQ_IOV) {
			*big = *ntx == 0;
			break;
		}
		if (nb + (unsigned int)tx->iovcnt > SCSITGT__ISCSI_TXQ_IOV ||
		    (*ntx && *total >= max_bytes))
			break;
		for (int i = 0; i < tx->iovcnt; i++) {
			bufs[nb++] =
				uv_buf_init(tx->iov[i].iov_base, (unsigned int)tx->iov[i].iov_len);
		}
		*total += tx->bytes;
		(*ntx)++;
	}
	return nb;
}

struct scsitgt__iscsi_tx *scsitgt__iscsi_txq_take(struct scsitgt__iscsi_txq *q, unsigned int n)
{
	struct scsitgt__iscsi_tx *head = q->head, **link = &q->head;

	while (n-- && *link)
		link = &(*link)->next;
	q->head = *link;
	*link = NULL;
	if (q->head == NULL)
		q->tail = &q->head;
	return head;
}

int scsitgt__iscsi_txq_rest(const struct scsitgt__iscsi_tx *chain, size_t skip, uv_buf_t *small,
			    uv_buf_t **out)
{
	uv_buf_t *bufs = small;
	int nb = 0;

	/* A batch above SCSITGT__ISCSI_TXQ_IOV iovecs travels alone; size its array. */
	if (chain->next == NULL && (unsigned int)chain->iovcnt > SCSITGT__ISCSI_TXQ_IOV) {
		bufs = malloc((size_t)chain->iovcnt * sizeof(*bufs));
		if (bufs == NULL)
			return -ENOMEM;
	}
	for (const struct scsitgt__iscsi_tx *tx = chain; tx; tx = tx->next) {
		for (int i = 0; i < tx->iovcnt; i++) {
			size_t len = tx->iov[i].iov_len;
			char *base = tx->iov[i].iov_base;

			if (skip >= len) {
				skip -= len;
				continue;
			}
			bufs[nb++] = uv_buf_init(base + skip, (unsigned int)(len - skip));
			skip = 0;
		}
	}
	*out = bufs;
	return nb;
}

void scsitgt__iscsi_writer_init(struct scsitgt__iscsi_writer *w, uv_stream_t *stream,
				const struct scsitgt__iscsi_writer_ops *ops)
{
	memset(w, 0, sizeof(*w));
	w->stream = stream;
	w->ops = ops;
	w->wr.data = w;
	w->turn_bytes = SCSITGT__ISCSI_TXQ_TURN_BYTES;
	scsitgt__iscsi_txq_init(&w->q);
}

static void writer_write_cb(uv_write_t *req, int status)
{
	struct scsitgt__iscsi_writer *w = req->data;
	struct scsitgt__iscsi_tx *txs = w->wr_txs;

	w->wr_txs = NULL;
	w->busy = false;
	if (status < 0) {
		w->ops->failed(w, txs, status);
		return;
	}
	while (txs) {
		struct scsitgt__iscsi_tx *tx = txs;

		txs = txs->next;
		tx->next = NULL;
		w->ops->written(w, tx);
	}
	w->ops->write_done(w);
}

/* Hand the unwritten rest of @chain (after @skip bytes) to uv_write. */
static int writer_write_rest(struct scsitgt__iscsi_writer *w, struct scsitgt__iscsi_tx *chain,
			     size_t skip)
{
	uv_buf_t small[SCSITGT__ISCSI_TXQ_IOV];
	uv_buf_t *bufs;
	int nb, rc;

	nb = scsitgt__iscsi_txq_rest(chain, skip, small, &bufs);
	if (nb < 0)
		return nb;
	w->wr_txs = chain;
	w->busy = true;
	/* libuv copies the buffer array; the payloads stay where they are. */
	rc = uv_write(&w->wr, w->stream, bufs, (unsigned int)nb, writer_write_cb);
	if (bufs != small)
		free(bufs);
	if (rc < 0) {
		w->wr_txs = NULL;
		w->busy = false;
	}
	return rc;
}

void scsitgt__iscsi_writer_flush(struct scsitgt__iscsi_writer *w)
{
	uv_buf_t bufs[SCSITGT__ISCSI_TXQ_IOV];
	size_t turn = 0; /* bytes the kernel took in this call */

	/* After a yield only the idle turn writes (writer_resume): a flush in the same turn (a
	 * read callback's, another batch's) must not grant a fresh share. */
	if (w->flushing || w->yielded)
		return;
	w->flushing = true;
	while (w->q.head && !w->busy && !w->stopped) {
		struct scsitgt__iscsi_tx *chain, *tx;
		size_t total, max_bytes;
		unsigned int ntx, nb;
		ssize_t n;
		bool big;
		int rc;

		/* The kernel took everything so far: past this turn's share, let the loop run the
		 * other connections first (txq.h, SCSITGT__ISCSI_TXQ_TURN_BYTES). */
		if (turn >= w->turn_bytes && w->ops->yield) {
			w->yielded = true;
			w->ops->yield(w);
			break;
		}
		max_bytes = SCSITGT__ISCSI_TXQ_BYTES;
		if (w->ops->yield && w->turn_bytes - turn < max_bytes)
			max_bytes = w->turn_bytes - turn;
		nb = scsitgt__iscsi_txq_gather(&w->q, bufs, max_bytes, &ntx, &total, &big);
		if (big) {
			/* Too many iovecs for one writev: let libuv write it in steps. */
			chain = scsitgt__iscsi_txq_take(&w->q, 1);
			rc = writer_write_rest(w, chain, 0);
			if (rc < 0)
				w->ops->failed(w, chain, rc);
			break;
		}
		n = uv_try_write(w->stream, bufs, nb);
		if (n == UV_EAGAIN)
			n = 0;
		chain = scsitgt__iscsi_txq_take(&w->q, ntx);
		if (n < 0) {
			w->ops->failed(w, chain, (int)n);
			break;
		}
		turn += (size_t)n;
		/* Batches the kernel took whole are done; the rest goes to uv_write. */
		while (chain && (size_t)n >= chain->bytes) {
			tx = chain;
			chain = chain->next;
			n -= (ssize_t)tx->bytes;
			tx->next = NULL;
			w->ops->written(w, tx);
		}
		if (chain == NULL)
			continue;
		if (w->stopped) {
			/* A completion closed the connection: the rest is dropped. */
			w->ops->failed(w, chain, -ECANCELED);
			break;
		}
		rc = writer_write_rest(w, chain, (size_t)n);
		if (rc < 0)
			w->ops->failed(w, chain, rc);
	}
	w->flushing = false;
}

void scsitgt__iscsi_writer_resume(struct scsitgt__iscsi_writer *w)
{
	w->yielded = false;
	scsitgt__iscsi_writer_flush(w);
}

unsigned int scsitgt__iscsi_writer_try_last(struct scsitgt__iscsi_writer *w)
{
	uv_buf_t bufs[SCSITGT__ISCSI_TXQ_IOV];
	unsigned int ntx, nb, whole = 0;
	size_t total;
	ssize_t n;
	bool big;

	if (w->q.head == NULL || w->busy || w->flushing || w->stopped)
		return 0;
	nb = scsitgt__iscsi_txq_gather(&w->q, bufs, SCSITGT__ISCSI_TXQ_BYTES, &ntx, &total, &big);
	n = nb ? uv_try_write(w->stream, bufs, nb) : 0;
	for (struct scsitgt__iscsi_tx *tx = w->q.head; tx && n > 0 && (size_t)n >= tx->bytes;
	     tx = tx->next) {
		n -= (ssize_t)tx->bytes;
		whole++;
	}
	return whole;
}
