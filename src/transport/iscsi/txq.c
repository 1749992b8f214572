/* SPDX-License-Identifier: MIT */
/* The output queue of a TCP connection, see txq.h. */
#include "transport/iscsi/txq.h"

#include <errno.h>
#include <stdlib.h>

unsigned int scsitgt__iscsi_txq_gather(const struct scsitgt__iscsi_txq *q, uv_buf_t *bufs,
				       unsigned int *ntx, size_t *total, bool *big)
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
		    *total >= SCSITGT__ISCSI_TXQ_BYTES)
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
