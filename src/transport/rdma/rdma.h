/* SPDX-License-Identifier: MIT */
/*
 * Shared RDMA layer (iSER now, SRP later), built only when rdma-core is found:
 *  - cm.c: an rdma_cm event channel watched by a uv_poll_t. Each event is copied (with its
 *    private data) and acknowledged before dispatch, so handlers may destroy cm ids freely.
 *  - verbs.c: per device a PD and one CQ with its completion channel on a uv_poll_t, shared
 *    by every QP of the owner; batched ibv_poll_cq with the re-arm race closed (poll until
 *    empty, request notification, poll again); QP creation through rdma_create_qp.
 *  - mr.c: a pool of equal buffers registered once, handed out by index.
 * Completions carry a struct scsitgt__rdma_wr pointer in wr_id; its done() runs on the loop.
 */
#ifndef SCSITGT_RDMA_H
#define SCSITGT_RDMA_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "util/list.h"

/* Largest CM private data we keep (RDMA_PS_TCP REQ allows 196 bytes over IB). */
#define SCSITGT__RDMA_PRIV_MAX 256u

/* --- cm.c --- */
struct scsitgt__rdma_cm_handler;
struct scsitgt__rdma_cm_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;	      /* the id the event is about (new id for CONNECT_REQUEST) */
	struct rdma_cm_id *listen_id; /* CONNECT_REQUEST: the listener */
	struct rdma_conn_param conn;  /* private_data points to priv */
	uint8_t priv[SCSITGT__RDMA_PRIV_MAX];
};
/* An rdma_cm_id's context points to one of these. */
struct scsitgt__rdma_cm_handler {
	void (*event)(struct scsitgt__rdma_cm_handler *h, const struct scsitgt__rdma_cm_event *ev);
};

struct scsitgt__rdma_cm {
	struct rdma_event_channel *ch;
	uv_poll_t poll;
	void (*closed)(struct scsitgt__rdma_cm *cm);
	void *data;
};

int scsitgt__rdma_cm_open(struct scsitgt__rdma_cm *cm, uv_loop_t *loop);
/* Stop watching and destroy the channel (every id on it must be destroyed); closed() runs. */
void scsitgt__rdma_cm_close(struct scsitgt__rdma_cm *cm, void (*closed)(struct scsitgt__rdma_cm *));
const char *scsitgt__rdma_cm_event_name(enum rdma_cm_event_type t);

/* --- verbs.c --- */
struct scsitgt__rdma_wr {
	void (*done)(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc);
};

struct scsitgt__rdma_dev {
	struct scsitgt__list node;
	struct scsitgt__list *owner_list;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	uv_poll_t poll;
	struct ibv_device_attr attr;
	int cq_size;
	int cq_used; /* entries reserved by QPs */
	unsigned int refs;
	unsigned int unacked; /* CQ events not acknowledged yet (acked in batches) */
	bool closing;
	void (*gone)(void *arg); /* after the last put finished destroying */
	void *gone_arg;
};

/* Find or create the device state for @verbs in @list (refs + 1). */
int scsitgt__rdma_dev_get(struct scsitgt__rdma_dev **out, struct scsitgt__list *list,
			  uv_loop_t *loop, struct ibv_context *verbs, void (*gone)(void *),
			  void *gone_arg);
void scsitgt__rdma_dev_put(struct scsitgt__rdma_dev *dev);
/* Reserve CQ entries for a QP; -ENOSPC when the shared CQ is full. */
int scsitgt__rdma_dev_reserve(struct scsitgt__rdma_dev *dev, int n);
void scsitgt__rdma_dev_unreserve(struct scsitgt__rdma_dev *dev, int n);
/* An RC QP on @id using the device's PD and CQ. */
int scsitgt__rdma_qp_create(struct rdma_cm_id *id, struct scsitgt__rdma_dev *dev,
			    uint32_t send_wr, uint32_t recv_wr, uint32_t send_sge);

/* --- mr.c --- */
struct scsitgt__rdma_pool {
	uint8_t *mem;
	struct ibv_mr *mr;
	uint32_t buf_size;
	uint32_t count;
	uint32_t nfree;
	uint32_t *free_stack;
};

/* @count buffers of @buf_size bytes in one allocation registered once with @access. */
int scsitgt__rdma_pool_init(struct scsitgt__rdma_pool *p, struct ibv_pd *pd, uint32_t count,
			    uint32_t buf_size, int access);
void scsitgt__rdma_pool_destroy(struct scsitgt__rdma_pool *p);
/* An index of a free buffer, or -ENOBUFS. */
int scsitgt__rdma_pool_get(struct scsitgt__rdma_pool *p);
void scsitgt__rdma_pool_put(struct scsitgt__rdma_pool *p, uint32_t idx);
static inline uint8_t *scsitgt__rdma_pool_buf(const struct scsitgt__rdma_pool *p, uint32_t idx)
{
	return p->mem + (size_t)idx * p->buf_size;
}

#endif /* SCSITGT_RDMA_H */
