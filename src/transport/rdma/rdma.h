/* SPDX-License-Identifier: MIT */
/*
 * Shared RDMA layer of iSER (transport/iser) and SRP (transport/srp), built only when
 * rdma-core is found:
 *  - cm.c: an rdma_cm event channel watched by a uv_poll_t. Each event is copied (with its
 *    private data) and acknowledged before dispatch, so handlers may destroy cm ids freely.
 *  - verbs.c: per device a PD and one CQ with its completion channel on a uv_poll_t, shared
 *    by every QP of the owner; batched ibv_poll_cq with the re-arm race closed (poll until
 *    empty, request notification, poll again), and while completions keep coming the CQ is
 *    polled once per loop iteration without re-arming; QP creation through rdma_create_qp.
 *  - mr.c: a pool of equal buffers registered once, handed out by index; and registered
 *    buffer memory (struct scsitgt__rdma_mem) for command data, looked up per io by address.
 *  - loop_ctx.c: a port's per-loop device contexts (the devices and registered memory its
 *    connections on one loop share), home's and, with connections on workers, each worker's;
 *    and the hand-over of a worker connection's rdma_cm events from home to its loop, and of
 *    its teardown (RELEASE home, FINAL back).
 * Completions carry a struct scsitgt__rdma_wr pointer in wr_id; its done() runs on the loop.
 */
#ifndef SCSITGT_RDMA_H
#define SCSITGT_RDMA_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/worker.h"
#include "transport/rdma/bufpool.h"
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
/*
 * A listener on @cm for @sa whose events go to @h: created, bound and listening with
 * @backlog. An address that is not a @wildcard must be on an RDMA device (-ENODEV). 0 and
 * *@out, or a negative errno and nothing left behind. Also how a port listens again after
 * DEVICE_REMOVAL or ADDR_CHANGE took its listener (iSER, SRP). Loop: home.
 */
int scsitgt__rdma_cm_listen(struct scsitgt__rdma_cm *cm, struct scsitgt__rdma_cm_handler *h,
			    const struct sockaddr_storage *sa, bool wildcard, int backlog,
			    struct rdma_cm_id **out);

/* --- verbs.c --- */
struct scsitgt__rdma_wr {
	void (*done)(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc);
};

/*
 * Memory a completion may still name after its QP is gone: the wr_id of a work request whose
 * end could not be waited for (iSER: a refused chain's WRITEs when no fence could be posted
 * behind them). Its wrs' done() must then do nothing; it is freed with the device's CQ, after
 * which no completion can name it.
 */
struct scsitgt__rdma_parked {
	struct scsitgt__list node;
	void *mem; /* free()d */
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
	/* Adaptive polling (verbs.c): polled from an idle handle while completions keep coming. */
	uv_idle_t idle;
	bool polling;
	unsigned int closing_handles;
	struct scsitgt__list parked; /* struct scsitgt__rdma_parked */
};

/* Find or create the device state for @verbs in @list (refs + 1). */
int scsitgt__rdma_dev_get(struct scsitgt__rdma_dev **out, struct scsitgt__list *list,
			  uv_loop_t *loop, struct ibv_context *verbs, void (*gone)(void *),
			  void *gone_arg);
void scsitgt__rdma_dev_put(struct scsitgt__rdma_dev *dev);
/* Keep @p (its mem) until the device's CQ is destroyed. Loop: the device's. */
void scsitgt__rdma_dev_park(struct scsitgt__rdma_dev *dev, struct scsitgt__rdma_parked *p,
			    void *mem);
/* Free what was parked on @dev (its CQ is gone, or no completion can come any more). */
void scsitgt__rdma_dev_release_parked(struct scsitgt__rdma_dev *dev);
/* Take one more reference on a device (dropped with scsitgt__rdma_dev_put()). */
void scsitgt__rdma_dev_hold(struct scsitgt__rdma_dev *dev);
/* Entries of a device's shared CQ (fewer when the device allows fewer, max_cqe). */
#define SCSITGT__RDMA_CQ_SIZE 16384
/* Reserve CQ entries for a QP; -ENOSPC when the shared CQ is full. */
int scsitgt__rdma_dev_reserve(struct scsitgt__rdma_dev *dev, int n);
void scsitgt__rdma_dev_unreserve(struct scsitgt__rdma_dev *dev, int n);
/* An RC QP on @id using the device's PD and CQ. */
int scsitgt__rdma_qp_create(struct rdma_cm_id *id, struct scsitgt__rdma_dev *dev, uint32_t send_wr,
			    uint32_t recv_wr, uint32_t send_sge);
/*
 * The same with selective signaling: only send WRs posted with IBV_SEND_SIGNALED complete when
 * they succeed (an unsignaled WR's send queue slot is free once a later signaled one
 * completed); unsignaled WRs still complete when they fail or are flushed, with their wr_id.
 */
int scsitgt__rdma_qp_create_sel(struct rdma_cm_id *id, struct scsitgt__rdma_dev *dev,
				uint32_t send_wr, uint32_t recv_wr, uint32_t send_sge);
/*
 * Once the connection is ESTABLISHED (the QP in RTS): the initiator waits 0.64 ms, not the
 * 655 ms rdma_cm leaves, before it resends to an empty receive queue. 0 or -errno.
 */
int scsitgt__rdma_qp_set_min_rnr(struct ibv_qp *qp);
/*
 * The transport attributes of an RC QP as one line for the log: local ACK timeout
 * (ibv_modify_qp(3): 4.096 us * 2^timeout, 0 infinite), retry and RNR retry counts, RNR
 * timer, path MTU, RDMA READs outstanding as requester and as responder. Always
 * NUL-terminated.
 */
void scsitgt__rdma_qp_attr_str(const struct ibv_qp_attr *a, char *buf, size_t len);
/*
 * The same for a live QP (ibv_query_qp): on the passive side of rdma_cm the timeout and retry
 * count come from the initiator's CM REQ (docs/srp.md "Measured"). 0 or -errno.
 */
int scsitgt__rdma_qp_describe(struct ibv_qp *qp, char *buf, size_t len);

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

/*
 * Registered buffer memory: one region of a device's PD, registered once (ibv_reg_mr) and cut
 * by a buddy allocator (bufpool.h) into command data buffers, so that the per-io path only
 * looks the lkey up by address instead of registering. The object lives while its owner
 * keeps it (scsitgt__rdma_mem_put() drops that) or any block is allocated or held, so buffers
 * of commands that outlive their connection stay valid; it holds a reference on the device.
 */
struct scsitgt__rdma_mem {
	struct scsitgt__bufpool bp;
	struct scsitgt__rdma_dev *dev;
	uint8_t *mem;
	size_t size;
	struct ibv_mr *mr;
	bool owned;	    /* the owner has not called put yet */
	unsigned int users; /* connections allocating from it (scsitgt__rdma_mem_use()) */
};

/*
 * Allocate @bytes (rounded down to 4 KiB units, at least one) and register them on @dev's PD
 * with @access. Returns 0; -EINVAL (@bytes below 4 KiB); -ENOMEM; or the errno of
 * ibv_reg_mr() (e.g. -ENOMEM or -EPERM when RLIMIT_MEMLOCK is too small).
 */
int scsitgt__rdma_mem_create(struct scsitgt__rdma_mem **out, struct scsitgt__rdma_dev *dev,
			     size_t bytes, int access);
/* The owner is done; the memory goes once no block is left and no connection uses it. */
void scsitgt__rdma_mem_put(struct scsitgt__rdma_mem *m);
/*
 * A connection (an iSER connection, an SRP channel) allocates its commands' buffers from @m
 * until unuse: the memory stays that long even when its owner put it meanwhile (a device
 * removal on the listener drops the port's memory while the connections on that device have
 * not yet seen their own DEVICE_REMOVAL; review32 N11). NULL is ignored. Loop: @m's.
 */
void scsitgt__rdma_mem_use(struct scsitgt__rdma_mem *m);
void scsitgt__rdma_mem_unuse(struct scsitgt__rdma_mem *m);
/* A registered buffer of at least @size bytes (block size in *@cap), or NULL when none is free. */
void *scsitgt__rdma_mem_alloc(struct scsitgt__rdma_mem *m, size_t size, size_t *cap);
/* Give back a buffer from scsitgt__rdma_mem_alloc(). */
void scsitgt__rdma_mem_free(struct scsitgt__rdma_mem *m, void *p);
/*
 * The per-io lookup: true and the lkey when [@p, @p + @len) lies in one live buffer of @m (a
 * NULL @m never matches).
 */
bool scsitgt__rdma_mem_lookup(const struct scsitgt__rdma_mem *m, const void *p, size_t len,
			      uint32_t *lkey);
/* Pin the buffer holding @p while an RDMA operation targets it (0 or -ENOENT); unpin. */
int scsitgt__rdma_mem_hold(struct scsitgt__rdma_mem *m, const void *p);
void scsitgt__rdma_mem_release(struct scsitgt__rdma_mem *m, const void *p);

/* --- loop_ctx.c --- */
struct scsitgt_engine;
struct scsitgt__rdma_loops;

/*
 * What the connections of one port (an iSER portal, an SRP target port) that run on one loop
 * share, touched by that loop's thread only: the devices (PD, CQ and completion channel polled
 * on this loop, verbs.c) and the port's registered memory on each (mr.c's buddy allocator is
 * not thread-safe). The home loop's is loops->v[0]; worker i's (connections on workers,
 * engine->conn_workers) loops->v[i + 1].
 */
struct scsitgt__rdma_loop {
	struct scsitgt__list devs; /* struct scsitgt__rdma_dev */
	struct scsitgt__list mems; /* the port's registered memory, one per device */
	uv_loop_t *loop;
	struct scsitgt__worker *w; /* NULL: home */
	struct scsitgt__rdma_loops *set;
	/* Home asks a worker loop to drop its memory (and at the end its device list). */
	struct scsitgt__msg drop_msg;
	bool drop_posted; /* home: drop_msg is on its way or on its way back */
	bool drop_unlink; /* with drop_msg */
};

/* A port's loops: home's, and each worker's when its connections run there. Home's. */
struct scsitgt__rdma_loops {
	struct scsitgt_engine *engine;
	struct scsitgt__rdma_loop *v;
	unsigned int n;
	unsigned int xmsgs;	 /* drop messages to worker loops not back yet */
	bool released;		 /* the final drop (scsitgt__rdma_loops_release()) was asked */
	void (*back)(void *arg); /* home, whenever a drop message is back */
	void *arg;
};

/*
 * Home's loop context, and with @on_workers one per worker of @engine; @back(@arg) runs on
 * home each time a worker loop's drop is back. 0 or -ENOMEM. Loop: home.
 */
int scsitgt__rdma_loops_init(struct scsitgt__rdma_loops *s, struct scsitgt_engine *engine,
			     bool on_workers, void (*back)(void *arg), void *arg);
/* Free them: home's drops its lists now, the workers' were released before. Loop: home. */
void scsitgt__rdma_loops_fini(struct scsitgt__rdma_loops *s);
/* The context of worker @w's loop (NULL: home's; home's too without one per worker). */
struct scsitgt__rdma_loop *scsitgt__rdma_loops_at(struct scsitgt__rdma_loops *s,
						  const struct scsitgt__worker *w);
/*
 * The port's registered memory of @lp on @dev, @bytes registered on first use. 0, or the
 * error of scsitgt__rdma_mem_create() (nothing kept: the next call tries again). Loop: @lp's.
 */
int scsitgt__rdma_loop_mem_get(struct scsitgt__rdma_loop *lp, struct scsitgt__rdma_dev *dev,
			       uint64_t bytes, struct scsitgt__rdma_mem **out);
/* Drop @lp's memory and, with @unlink, its device list (the port goes; devices still held by
 * buffers out outlive the list head, so they are unlinked). Loop: @lp's. */
void scsitgt__rdma_loop_drop(struct scsitgt__rdma_loop *lp, bool unlink);
/*
 * Every loop drops (see scsitgt__rdma_loop_drop()): home now, each worker loop by message,
 * counted in s->xmsgs until it is back. A worker with a drop on its way gets none more: it
 * drops whatever it has when that one runs. Loop: home.
 */
void scsitgt__rdma_loops_drop(struct scsitgt__rdma_loops *s, bool unlink);
/*
 * The port goes: true once every loop has let go of its lists (the first call asks the
 * workers' with a final drop; s->back runs when each is back, so call it again then).
 * Loop: home.
 */
bool scsitgt__rdma_loops_release(struct scsitgt__rdma_loops *s);

/*
 * A connection of a port: the rdma_cm events of its id arrive on home (the port's event
 * channel). On home they go straight to the connection's handler; on a worker loop,
 * ESTABLISHED and the first disconnect-class event (DISCONNECTED, DEVICE_REMOVAL, ADDR_CHANGE,
 * CONNECT_ERROR, UNREACHABLE, REJECTED) go to the worker by message, embedded here so that
 * none is lost to memory. Later ones add nothing: the connection closes either way, and its
 * QP drains by counts. The rdma_cm id stays home's to the end: when the worker has released
 * everything else it sends RELEASE home, which destroys the id (no event can follow) and sends
 * FINAL back, after every event message it posted before, so FINAL frees the connection.
 */
struct scsitgt__rdma_xev {
	/* The connection's handler of an event, on its loop; none runs once it is released. */
	void (*here)(struct scsitgt__rdma_xev *x, enum rdma_cm_event_type type, int status);
	/*
	 * Teardown of a connection on a worker (scsitgt__rdma_xev_release()): on home, let go of
	 * the id (no event can follow) and of what else is home's, then
	 * scsitgt__rdma_xev_final(); on the worker, free the connection.
	 */
	void (*release)(struct scsitgt__rdma_xev *x);
	void (*final)(struct scsitgt__rdma_xev *x);
	struct scsitgt__msg est_msg, down_msg, release_msg, final_msg;
	bool x_est, x_down; /* home: handed over */
	int down_type;	    /* enum rdma_cm_event_type, with down_msg */
	int down_status;
	bool released; /* the worker: the connection's resources are released, RELEASE is sent */
};
/*
 * Deliver @ev to the connection on worker @w's loop (NULL: home, x->here() runs now): there
 * ESTABLISHED and the first disconnect-class event each run x->here() at most once, unless the
 * connection was released before; other events are dropped. Loop: home.
 */
void scsitgt__rdma_xev_deliver(struct scsitgt__rdma_xev *x, struct scsitgt__worker *w,
			       const struct scsitgt__rdma_cm_event *ev);
/*
 * The worker has released the connection's resources: RELEASE goes home, where x->release()
 * runs. Loop: the worker.
 */
void scsitgt__rdma_xev_release(struct scsitgt__rdma_xev *x, struct scsitgt_engine *engine);
/*
 * Home, at the end of x->release(): FINAL goes to worker @w, where x->final() runs after every
 * event message home posted there before, so it may free the connection. Nothing of it may be
 * touched on home after this call.
 */
void scsitgt__rdma_xev_final(struct scsitgt__rdma_xev *x, struct scsitgt__worker *w);

#endif /* SCSITGT_RDMA_H */
