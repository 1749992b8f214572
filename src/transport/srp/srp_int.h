/* SPDX-License-Identifier: MIT */
/*
 * SRP target fabric internals, shared by srp_portal.c (ports, logins, channel life cycle)
 * and srp_cmd.c (information units, data movement, responses, task management).
 *
 * Objects: a port (struct scsitgt_srp_portal) listens through RDMA/CM; each initiator port
 * identifier that logs in gets a nexus (one core session, the I_T nexus); each RDMA/CM
 * connection is a channel of a nexus. A command (struct srp_task in the core command's fabric
 * bytes) lives on the channel it arrived on and is answered there.
 */
#ifndef SCSITGT_SRP_INT_H
#define SCSITGT_SRP_INT_H

#include "core/fabric.h"
#include "libscsitgt/srp.h"
#include "transport/rdma/rdma.h"
#include "transport/srp/srp_proto.h"

#define SCSITGT__SRP_SUBSYS "srp"
/* Requests the target itself may have outstanding on a channel (SRP_CRED_REQ, SRP_AER_REQ):
 * the initiator answers them without credit, so receive buffers are kept for the answers. */
#define SRP_TGT_REQ_MAX 2u
/* Receive buffers beyond the request limit: answers to our requests, and SRP_I_LOGOUT. */
#define SRP_RECV_EXTRA (SRP_TGT_REQ_MAX + 1u)
/* Asynchronous events a channel queues while its requests are outstanding. */
#define SRP_AER_QUEUE 8u
/* Send buffers beyond the request limit: our requests and SRP_T_LOGOUT. */
#define SRP_SEND_EXTRA (SRP_TGT_REQ_MAX + 2u)

struct srp_nexus;
struct srp_ch;

struct scsitgt_srp_portal {
	struct scsitgt__rdma_cm_handler cmh;
	struct scsitgt__service svc;
	struct scsitgt__list tgt_node; /* in the target's SRP extension */
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt; /* NULL once the target is gone */
	struct scsitgt_srp_portal_opts opts;
	char address[64];
	uint16_t port;
	struct scsitgt__rdma_cm cm;
	struct rdma_cm_id *listen;
	struct scsitgt__list devs;
	struct scsitgt__list chans; /* every channel, connected or not */
	struct scsitgt__list nexuses;
	struct scsitgt__list mems; /* struct srp_mem: registered buffers per device */
	uint32_t nchans_up;
	bool stopping;
	scsitgt_done_cb done_cb;
	void *done_arg;
	struct scsitgt__deferred done_d;
};

/* Command buffers registered on one device for this port (opts.buffer_bytes). */
struct srp_mem {
	struct scsitgt__list node;
	struct scsitgt__rdma_dev *dev;
	struct scsitgt__rdma_mem *mem;
};

struct srp_nexus {
	struct scsitgt__list node; /* port->nexuses */
	struct scsitgt_srp_portal *port;
	struct scsitgt__session *core;
	uint8_t iport[16];
	struct scsitgt__list chans;
	unsigned int nchans;
	bool closing; /* no channel may join (SINGLE login, shutdown) */
	char name[40];
};

struct srp_recv {
	struct scsitgt__rdma_wr w;
	struct srp_ch *ch;
	uint32_t idx;
};

/* A send buffer that carries a target IU of its own (not a command's response). */
struct srp_slot {
	struct scsitgt__rdma_wr w;
	struct srp_ch *ch;
	uint32_t idx;
	bool logout; /* disconnect once it is delivered */
};

struct srp_ch {
	struct scsitgt__rdma_cm_handler cmh;
	struct scsitgt__list node;    /* port->chans */
	struct scsitgt__list nx_node; /* nexus->chans */
	struct scsitgt_srp_portal *port;
	struct srp_nexus *nx;
	struct rdma_cm_id *id;
	struct scsitgt__rdma_dev *dev;
	struct scsitgt__rdma_pool rxp, txp;
	struct scsitgt__rdma_mem *mem; /* the port's registered buffers on this device, or NULL */
	struct srp_recv *recvs;
	struct srp_slot *slots;
	uint32_t nrecv, nsend;
	uint32_t it_iu_len, ti_iu_len;
	uint16_t imm_off;
	struct scsitgt__srp_credits cred;
	unsigned int tgt_reqs; /* our requests awaiting the initiator's answer */
	uint64_t next_tag;
	bool qp_created, pools, cq_reserved, accepted, connected, up_counted;
	bool closing;	 /* no new work; logging out or disconnecting */
	bool disconnect; /* the QP is (being) moved to error: waiting for the flush */
	unsigned int posted, busy, holds;
	unsigned int sq_depth, sq_free, rd_depth, rd_busy;
	struct scsitgt__list tasks; /* every task of this channel */
	struct scsitgt__list rdq;   /* tasks with RDMA READs to post */
	struct scsitgt__list sendq; /* tasks whose response waits for send resources */
	struct scsitgt__list tmfq;  /* TMF responses waiting for send resources */
	struct {
		uint64_t lun_id;
		enum scsitgt__sense_reason reason;
	} aerq[SRP_AER_QUEUE]; /* unit attentions to report (srp_aer.c) */
	unsigned int aer_n;
	bool aer_flush_pending;
	struct scsitgt__deferred aer_flush;
	char peer[64];
};

enum srp_task_state {
	SRP_TASK_FETCH,	   /* reading the descriptor table from the initiator */
	SRP_TASK_DATA_OUT, /* reading write data */
	SRP_TASK_EXEC,	   /* in the core */
	SRP_TASK_SENDING,  /* Data-In and the response on the wire */
	SRP_TASK_DEAD,	   /* aborted or orphaned: freed when its work requests are back */
};

struct srp_task {
	struct scsitgt__rdma_wr w; /* every work request of the task */
	struct scsitgt__cmd *cmd;
	struct srp_ch *ch;
	struct scsitgt__list node;  /* ch->tasks */
	struct scsitgt__list qnode; /* ch->rdq or ch->sendq, else self-linked */
	enum srp_task_state state;
	uint64_t tag;
	uint8_t sol_not;
	bool out;	  /* descriptors describe data-out */
	bool counted;	  /* holds a credit */
	bool failed_data; /* the write data could not be read */
	uint8_t rflags;	  /* residual flags known before execution (data-out) */
	uint32_t do_res;
	uint32_t edtl;	/* bytes of the initiator's buffer */
	uint32_t want;	/* bytes of write data to read */
	uint32_t spdtl; /* the CDB's own write length, when fitted to the buffer */
	bool spdtl_set;
	struct scsitgt__srp_desc one;
	struct scsitgt__srp_desc *descs; /* &one, or allocated */
	uint32_t ndesc;
	struct scsitgt__srp_desc table; /* indirect table still to fetch */
	uint8_t *tbl;
	struct ibv_mr *tbl_mr;
	uint32_t next_desc, next_off, desc_off; /* RDMA READ posting progress */
	unsigned int rd_out;			/* RDMA READs outstanding */
	struct ibv_mr *mr; /* over cmd->buf when it is not in registered memory */
	uint32_t lkey;	   /* of cmd->buf, once keyed */
	bool keyed;
	unsigned int pending; /* work requests posted, not completed */
	int slot;	      /* send buffer of the response, -1 */
};

/* srp_portal.c */
void scsitgt__srp_ch_close(struct srp_ch *ch, int tlo_reason, const char *why);
void scsitgt__srp_ch_check_drained(struct srp_ch *ch);
/* End of a handler (ch->busy was raised): free when drained after a close, else pump. */
void scsitgt__srp_ch_leave(struct srp_ch *ch);
void scsitgt__srp_ch_log(const struct srp_ch *ch, enum scsitgt_log_level level, const char *fmt,
			 ...) SCSITGT_PRINTF(3, 4);
/* Post a 16..ti_iu_len byte target IU of our own; @logout disconnects after delivery. */
int scsitgt__srp_ch_send_own(struct srp_ch *ch, const uint8_t *iu, size_t len, bool logout);

/* srp_aer.c */
void scsitgt__srp_unit_attention(struct scsitgt__session *sess, uint64_t lun_id,
				 enum scsitgt__sense_reason reason);
/* Send queued asynchronous event reports within the limit of our outstanding requests. */
void scsitgt__srp_ch_send_aers(struct srp_ch *ch);

/* srp_cmd.c */
extern const struct scsitgt__fabric_ops scsitgt__srp_fabric_ops;
/* One received IU; returns 0, or -EPROTO after it closed the channel. */
int scsitgt__srp_ch_recv(struct srp_ch *ch, const uint8_t *iu, size_t len);
/* Post what resources allow: responses, then RDMA READs within the read depth. */
void scsitgt__srp_ch_pump(struct srp_ch *ch);
/* The QP is flushed: free or detach every task of the channel. */
void scsitgt__srp_ch_release_tasks(struct srp_ch *ch);
/* Drop tasks waiting for resources (the channel is closing). */
void scsitgt__srp_ch_drop_queued(struct srp_ch *ch);

#endif /* SCSITGT_SRP_INT_H */
