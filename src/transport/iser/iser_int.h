/* SPDX-License-Identifier: MIT */
/*
 * Internals of the iSER data mover, shared by iser.c (portal, rdma_cm, connection set-up and
 * teardown, receive credits) and iser_io.c (the data path: received SENDs, Data-In by RDMA
 * WRITE, solicited data by RDMA READ, SENDs).
 */
#ifndef SCSITGT_ISER_INT_H
#define SCSITGT_ISER_INT_H

#include "core/fabric.h"
#include "core/worker.h"
#include "libscsitgt/iscsi.h"
#include "transport/iscsi/datamover.h"
#include "transport/iser/iser_flow.h"
#include "transport/iser/iser_map.h"
#include "transport/iser/iser_proto.h"
#include "transport/rdma/rdma.h"

/* Our receive data segment limit: TargetRecvDataSegmentLength and MaxRecvDataSegmentLength. */
#define ISER_RECV_DSL 8192u
#define ISER_RECV_SLOT (SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN + ISCSI_AHS_MAX + ISER_RECV_DSL + 4u)
/* Login responses carry up to 8192 bytes (RFC 7143 §6.2). */
#define ISER_SEND_SLOT (SCSITGT__ISER_HDR_LEN + ISCSI_BHS_LEN + 8192u)
/* Receive buffers: allocated per connection, posted as the credits require. */
#define ISER_NRECV_MAX 512u
/* Posted before accept: enough for the login phase (one request at a time) and a margin. */
#define ISER_NRECV_LOGIN 16u
/* Reserve for immediate and unexpected PDUs (NOP-Out, TMF, Text, Logout) when the initiator
 * declared no MaxOutstandingUnexpectedPDUs. */
#define ISER_UNEXP_RESERVE 16u
#define ISER_NSEND 128u
#define ISER_SQ_DEPTH 512u
#define ISER_ITT_BUCKETS 256u
/* Commands with advertised STags tracked at once before we call it abuse. */
#define ISER_ITT_MAX 4096u
/* Registered buffer memory per device and portal when the options leave it at 0. */
#define ISER_MEM_DEFAULT ((uint64_t)64 << 20)

struct iser_portal;
struct iser_conn;

struct iser_itt {
	struct iser_itt *next;
	uint32_t itt;
	bool wsv, rsv;
	bool sol_base_set;
	uint32_t sol_base; /* buffer offset of the first solicited byte (first R2T) */
	uint32_t write_stag, read_stag;
	uint64_t write_va, read_va;
};

struct iser_recv {
	struct scsitgt__rdma_wr w;
	struct iser_conn *ic;
	uint32_t idx;
};

struct iser_slot {
	struct scsitgt__rdma_wr w;
	struct iser_conn *ic;
	struct iser_txop *op;
	uint32_t idx;
};

/* What one batch became: its WRs and what its Data-In needed besides registered memory. */
struct iser_txop {
	/* A signaled WRITE (when the batch has no SEND, or a refused chain's fence). */
	struct scsitgt__rdma_wr w;
	struct scsitgt__rdma_wr wu; /* unsignaled WRITEs: complete only failed or flushed */
	unsigned int unsig;	    /* unsignaled WRs: their SQ slots return with the batch */
	/*
	 * A refused chain's fence (iser_io.c tx_chain_partial()) the provider refused too: owed,
	 * counted in pending but not in ic->posted, on ic->fences until it is posted, to this
	 * STag and address.
	 */
	uint32_t fence_rkey;
	uint64_t fence_raddr;
	struct iser_txop *fence_next;
	struct scsitgt__rdma_parked park; /* no fence could ever be posted: kept by the device */
	struct iser_conn *ic;
	struct scsitgt__iscsi_tx *tx;
	struct scsitgt__rdma_mem *mem; /* bounce buffers below came from it */
	unsigned int pending;
	int status;
	unsigned int nmr, nbounce;
	struct ibv_mr **mrs; /* per-io registrations (no registered memory to be had) */
	void **bounces;	     /* copies of unregistered Data-In in registered memory */
};

/* One RDMA READ of solicited data (an R2T, or a piece of one longer than a message). */
struct iser_read {
	struct scsitgt__rdma_wr w;
	struct scsitgt__iser_rdq_item q; /* waiting in ic->rdq (q.itt: its task) */
	struct scsitgt__list posted;	 /* in flight: on ic->rd_posted */
	bool gone;			 /* its task ended meanwhile: the data goes nowhere */
	struct iser_conn *ic;
	uint8_t lun[8];
	uint32_t itt, ttt, offset, len;
	uint32_t datasn; /* DataSN of its first Data-Out (pieces of one R2T continue) */
	bool final;	 /* the last piece of its R2T */
	uint32_t rkey;
	uint64_t raddr;
	uint8_t *buf; /* where the data lands */
	uint32_t lkey;
	bool inplace;		       /* buf is the command's own (held) registered buffer */
	struct scsitgt__rdma_mem *mem; /* inplace hold or bounce block from here */
	bool bounce;
	struct ibv_mr *mr; /* per-io registration of a malloc'ed buf */
};

struct iser_conn {
	struct scsitgt__rdma_cm_handler cmh;
	struct scsitgt__list node; /* ip->conns (home loop only) */
	struct iser_portal *ip;
	struct scsitgt__rdma_loop *lp; /* the loop the connection runs on */
	struct rdma_cm_id *id;	       /* its events arrive on home (ip->cm) */
	/*
	 * A connection on a worker (iser.c "Connections on workers"): its placement, and the
	 * messages between home, which owns the rdma_cm id, and the worker, which runs the rest.
	 * Each message is in flight at most once.
	 */
	struct scsitgt__worker *w; /* NULL: on home */
	struct scsitgt__iscsi_handoff *h;
	struct scsitgt__rdma_xev xev; /* ESTABLISHED, a disconnect event, RELEASE and FINAL */
	struct scsitgt__rdma_dev *dev;
	struct scsitgt__rdma_mem *mem; /* registered command buffers (NULL: none to be had) */
	struct scsitgt__iscsi_conn *conn;
	struct scsitgt__rdma_pool rxp, txp;
	struct iser_recv *recvs;
	struct iser_slot *slots;
	bool qp_created, pools, cq_reserved;
	bool connected, dm_close;
	unsigned int posted;	   /* WRs not completed yet (receives + sends) */
	unsigned int recvs_posted; /* receive buffers handed to the QP (credits) */
	unsigned int recvs_used;   /* slots 0..recvs_used-1 have been posted (reposted as used) */
	unsigned int busy;	   /* handlers running: no freeing under them */
	unsigned int sq_free;
	struct iser_txop *fences; /* batches owed a fence (iser_io.c tx_chain_partial()) */
	uint32_t max_msg;	  /* the port's largest message */
	struct scsitgt__iser_rdq rdq;
	struct scsitgt__list rd_posted; /* RDMA READs in flight */
	struct scsitgt__iser_unexp unexp;
	struct scsitgt__iscsi_tx *outq, **outq_tail;
	struct iser_itt *itt[ISER_ITT_BUCKETS];
	unsigned int nitt;
	/* Statistics: how Data-In and solicited data moved. */
	uint64_t st_direct, st_bounce, st_reg;
};

struct iser_portal {
	struct scsitgt__rdma_cm_handler cmh;
	struct scsitgt_portal *portal;
	struct scsitgt__rdma_cm cm;
	struct rdma_cm_id *listen;
	struct sockaddr_storage sa; /* the bound address, to listen again after ADDR_CHANGE */
	int backlog;
	uint64_t mem_bytes;
	struct scsitgt__rdma_loops loops; /* home's, and each worker's (rdma.h) */
	struct scsitgt__list conns;
	bool stopping;
	/* After DEVICE_REMOVAL or ADDR_CHANGE took the listener and binding again failed (the
	 * device is not back yet): try again every second. */
	uv_timer_t relisten;
	bool relisten_closed;
};

/* iser.c */
/* End of a handler (busy--): free when drained after a close, else post what became possible. */
void scsitgt__iser_conn_leave(struct iser_conn *ic);
/* Free the connection once closed, with no WR posted and no handler running. */
void scsitgt__iser_conn_check_drained(struct iser_conn *ic);
void scsitgt__iser_conn_fail(struct iser_conn *ic, int err, const char *why);
int scsitgt__iser_post_recv(struct iser_conn *ic, uint32_t idx);

/* iser_io.c */
void scsitgt__iser_recv_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc);
void scsitgt__iser_slot_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc);
void scsitgt__iser_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx);
/* Post what resources allow: queued batches in order, then RDMA READs within the depth. */
void scsitgt__iser_pump(struct iser_conn *ic);
/* Teardown: drop queued batches and READs. */
void scsitgt__iser_io_cancel(struct iser_conn *ic);
/* Closed, no handler running: post the fences owed (ic->fences) as the send queue allows. */
void scsitgt__iser_fences_post(struct iser_conn *ic);
/* The QP is destroyed with fences still owed: their batches end, their memory is parked. */
void scsitgt__iser_fences_abandon(struct iser_conn *ic);
void scsitgt__iser_itt_clear(struct iser_conn *ic);
void scsitgt__iser_cmd_init(struct scsitgt__iscsi_conn *conn, struct scsitgt__cmd *cmd);
void scsitgt__iser_task_gone(struct scsitgt__iscsi_conn *conn, uint32_t itt);
/* The keepalive's question (datamover.h may_ping): would a NOP-In ping go out now? */
bool scsitgt__iser_may_ping(struct scsitgt__iscsi_conn *conn);

#endif /* SCSITGT_ISER_INT_H */
