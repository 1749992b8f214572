/* SPDX-License-Identifier: MIT */
/* Per-device PD and shared CQ on the libuv loop, QP creation. See rdma.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma/rdma.h"

/* Completions taken per ibv_poll_cq call. */
#define RDMA_POLL_BATCH 32
/* CQ events acknowledged in batches (ibv_ack_cq_events takes a mutex). */
#define RDMA_ACK_BATCH 64u
/*
 * RNR NAK timer we ask the initiator to wait before resending to an empty receive queue (IBTA
 * encoding 12: 0.64 ms). rdma_cm leaves it at 0, which means 655 ms.
 */
#define RDMA_MIN_RNR_TIMER 12

static void dev_idle_cb(uv_idle_t *h);

static int dev_drain(struct scsitgt__rdma_dev *dev)
{
	struct ibv_wc wc[RDMA_POLL_BATCH];
	int n, total = 0;

	do {
		n = ibv_poll_cq(dev->cq, RDMA_POLL_BATCH, wc);
		for (int i = 0; i < n; i++) {
			struct scsitgt__rdma_wr *w =
				(struct scsitgt__rdma_wr *)(uintptr_t)wc[i].wr_id;

			if (w && w->done)
				w->done(w, &wc[i]);
		}
		if (n > 0)
			total += n;
	} while (n == RDMA_POLL_BATCH && !dev->closing);
	return n < 0 ? n : total;
}

static void dev_poll_more(struct scsitgt__rdma_dev *dev);

static void dev_poll_cb(uv_poll_t *h, int status, int events)
{
	struct scsitgt__rdma_dev *dev = h->data;
	struct ibv_cq *cq;
	void *ctx;

	(void)events;
	if (status < 0 || dev->closing)
		return;
	/*
	 * Take every pending event (the channel is non-blocking): a re-arm below may have raised
	 * one more that the polls already covered, and a stale one would only wake us again.
	 */
	while (ibv_get_cq_event(dev->ch, &cq, &ctx) == 0) {
		if (++dev->unacked >= RDMA_ACK_BATCH) {
			ibv_ack_cq_events(dev->cq, dev->unacked);
			dev->unacked = 0;
		}
	}
	dev_poll_more(dev);
}

/*
 * Adaptive polling: a pass that found completions polls again on the next loop iteration (an
 * idle handle: the loop does not sleep) instead of re-arming, so a busy device costs no
 * notification round trip (re-arm, event, wake-up) per completion. A pass that finds none
 * re-arms: poll until empty, request notification, then poll again, since a completion that
 * arrived between the last empty poll and the re-arm raises no event and must be taken here.
 */
static void dev_poll_more(struct scsitgt__rdma_dev *dev)
{
	int n = dev_drain(dev);

	if (n < 0 || dev->closing)
		return;
	if (n == 0) {
		if (ibv_req_notify_cq(dev->cq, 0) != 0)
			return;
		n = dev_drain(dev);
		if (n <= 0 || dev->closing) {
			if (dev->polling) {
				uv_idle_stop(&dev->idle);
				dev->polling = false;
			}
			return;
		}
	}
	if (!dev->polling) {
		uv_idle_start(&dev->idle, dev_idle_cb);
		dev->polling = true;
	}
}

static void dev_idle_cb(uv_idle_t *h)
{
	struct scsitgt__rdma_dev *dev = h->data;

	if (dev->closing) {
		uv_idle_stop(&dev->idle);
		dev->polling = false;
		return;
	}
	dev_poll_more(dev);
}

static void dev_poll_closed(uv_handle_t *h)
{
	struct scsitgt__rdma_dev *dev = h->data;
	void (*gone)(void *) = dev->gone;
	void *arg = dev->gone_arg;

	/* Two handles close (the poll and the idle); the second one frees. */
	if (--dev->closing_handles)
		return;

	if (dev->unacked)
		ibv_ack_cq_events(dev->cq, dev->unacked);
	ibv_destroy_cq(dev->cq);
	scsitgt__rdma_dev_release_parked(dev);
	ibv_destroy_comp_channel(dev->ch);
	ibv_dealloc_pd(dev->pd);
	free(dev);
	if (gone)
		gone(arg);
}

int scsitgt__rdma_dev_get(struct scsitgt__rdma_dev **out, struct scsitgt__list *list,
			  uv_loop_t *loop, struct ibv_context *verbs, void (*gone)(void *),
			  void *gone_arg)
{
	struct scsitgt__list *pos, *tmp;
	struct scsitgt__rdma_dev *dev;
	int flags, rc = -ENOMEM;

	if (verbs == NULL)
		return -ENODEV;
	scsitgt__list_foreach_safe(pos, tmp, list)
	{
		dev = scsitgt__container_of(pos, struct scsitgt__rdma_dev, node);
		if (dev->verbs == verbs && !dev->closing) {
			dev->refs++;
			*out = dev;
			return 0;
		}
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL)
		return -ENOMEM;
	dev->verbs = verbs;
	scsitgt__list_init(&dev->parked);
	dev->gone = gone;
	dev->gone_arg = gone_arg;
	if (ibv_query_device(verbs, &dev->attr) != 0) {
		rc = -ENODEV;
		goto fail;
	}
	dev->pd = ibv_alloc_pd(verbs);
	if (dev->pd == NULL)
		goto fail;
	dev->ch = ibv_create_comp_channel(verbs);
	if (dev->ch == NULL)
		goto fail;
	flags = fcntl(dev->ch->fd, F_GETFL);
	if (flags < 0 || fcntl(dev->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		rc = -errno;
		goto fail;
	}
	dev->cq_size = dev->attr.max_cqe < SCSITGT__RDMA_CQ_SIZE ? dev->attr.max_cqe :
								   SCSITGT__RDMA_CQ_SIZE;
	dev->cq = ibv_create_cq(verbs, dev->cq_size, dev, dev->ch, 0);
	if (dev->cq == NULL)
		goto fail;
	if (ibv_req_notify_cq(dev->cq, 0) != 0) {
		rc = -EIO;
		goto fail;
	}
	rc = uv_poll_init(loop, &dev->poll, dev->ch->fd);
	if (rc < 0)
		goto fail;
	dev->poll.data = dev;
	uv_idle_init(loop, &dev->idle);
	dev->idle.data = dev;
	rc = uv_poll_start(&dev->poll, UV_READABLE, dev_poll_cb);
	if (rc < 0) {
		dev->gone = NULL;
		dev->closing_handles = 2;
		uv_close((uv_handle_t *)&dev->poll, dev_poll_closed);
		uv_close((uv_handle_t *)&dev->idle, dev_poll_closed);
		return rc;
	}
	dev->refs = 1;
	dev->owner_list = list;
	scsitgt__list_add_tail(list, &dev->node);
	*out = dev;
	return 0;
fail:
	if (dev->cq)
		ibv_destroy_cq(dev->cq);
	if (dev->ch)
		ibv_destroy_comp_channel(dev->ch);
	if (dev->pd)
		ibv_dealloc_pd(dev->pd);
	free(dev);
	return rc;
}

void scsitgt__rdma_dev_park(struct scsitgt__rdma_dev *dev, struct scsitgt__rdma_parked *p,
			    void *mem)
{
	p->mem = mem;
	scsitgt__list_add_tail(&dev->parked, &p->node);
}

void scsitgt__rdma_dev_release_parked(struct scsitgt__rdma_dev *dev)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &dev->parked)
	{
		struct scsitgt__rdma_parked *p =
			scsitgt__container_of(pos, struct scsitgt__rdma_parked, node);

		scsitgt__list_remove(pos);
		free(p->mem);
	}
}

void scsitgt__rdma_dev_hold(struct scsitgt__rdma_dev *dev)
{
	dev->refs++;
}

void scsitgt__rdma_dev_put(struct scsitgt__rdma_dev *dev)
{
	if (--dev->refs)
		return;
	dev->closing = true;
	scsitgt__list_remove(&dev->node);
	uv_poll_stop(&dev->poll);
	uv_idle_stop(&dev->idle);
	dev->closing_handles = 2;
	uv_close((uv_handle_t *)&dev->poll, dev_poll_closed);
	uv_close((uv_handle_t *)&dev->idle, dev_poll_closed);
}

int scsitgt__rdma_dev_reserve(struct scsitgt__rdma_dev *dev, int n)
{
	if (n <= 0 || dev->cq_used + n > dev->cq_size)
		return -ENOSPC;
	dev->cq_used += n;
	return 0;
}

void scsitgt__rdma_dev_unreserve(struct scsitgt__rdma_dev *dev, int n)
{
	dev->cq_used -= n;
}

static int qp_create(struct rdma_cm_id *id, struct scsitgt__rdma_dev *dev, uint32_t send_wr,
		     uint32_t recv_wr, uint32_t send_sge, bool sig_all)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.send_cq = dev->cq;
	a.recv_cq = dev->cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = send_wr;
	a.cap.max_recv_wr = recv_wr;
	a.cap.max_send_sge = send_sge;
	a.cap.max_recv_sge = 1;
	a.sq_sig_all = sig_all;
	if (rdma_create_qp(id, dev->pd, &a) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

int scsitgt__rdma_qp_create(struct rdma_cm_id *id, struct scsitgt__rdma_dev *dev, uint32_t send_wr,
			    uint32_t recv_wr, uint32_t send_sge)
{
	/* Every WR is signaled: completions release buffers and count the drain. */
	return qp_create(id, dev, send_wr, recv_wr, send_sge, true);
}

int scsitgt__rdma_qp_create_sel(struct rdma_cm_id *id, struct scsitgt__rdma_dev *dev,
				uint32_t send_wr, uint32_t recv_wr, uint32_t send_sge)
{
	return qp_create(id, dev, send_wr, recv_wr, send_sge, false);
}

int scsitgt__rdma_qp_set_min_rnr(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	/* RTS -> RTS may change the RNR timer (IBTA 11.2.4.2 / ibv_modify_qp(3)). */
	memset(&a, 0, sizeof(a));
	a.min_rnr_timer = RDMA_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER) != 0)
		return errno ? -errno : -EIO;
	return 0;
}

void scsitgt__rdma_qp_attr_str(const struct ibv_qp_attr *a, char *buf, size_t len)
{
	char tmo[32];
	/* ibv_modify_qp(3): 4.096 us * 2^timeout (5 bits); 0 disables the timer. */
	uint64_t us = (4096ull << (a->timeout & 31u)) / 1000u;
	int mtu = a->path_mtu >= IBV_MTU_256 && a->path_mtu <= IBV_MTU_4096 ? 128 << a->path_mtu :
									      0;

	if (a->timeout == 0)
		snprintf(tmo, sizeof(tmo), "infinite");
	else
		snprintf(tmo, sizeof(tmo), "%llu.%03llu ms", (unsigned long long)(us / 1000u),
			 (unsigned long long)(us % 1000u));
	snprintf(buf, len,
		 "local ACK timeout %u (%s), retry %u, RNR retry %u, RNR timer %u, path MTU %d, "
		 "RDMA READs out %u, in %u",
		 a->timeout, tmo, a->retry_cnt, a->rnr_retry, a->min_rnr_timer, mtu,
		 a->max_rd_atomic, a->max_dest_rd_atomic);
}

int scsitgt__rdma_qp_describe(struct ibv_qp *qp, char *buf, size_t len)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a,
			 IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MTU | IBV_QP_MAX_QP_RD_ATOMIC |
				 IBV_QP_MAX_DEST_RD_ATOMIC,
			 &init) != 0)
		return errno ? -errno : -EIO;
	scsitgt__rdma_qp_attr_str(&a, buf, len);
	return 0;
}
