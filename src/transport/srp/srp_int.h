/* SPDX-License-Identifier: MIT */
/*
 * SRP target fabric internals, shared by srp_portal.c (ports, logins, channel life cycle)
 * and srp_cmd.c (information units, data movement, responses, task management).
 *
 * Objects: a port (struct scsitgt_srp_portal) listens through RDMA/CM; each initiator port
 * identifier that logs in gets a nexus (one core session, the I_T nexus); each RDMA/CM
 * connection is a channel of a nexus. A command (struct srp_task in the core command's fabric
 * bytes) lives on the channel it arrived on and is answered there.
 *
 * Loops (srp_nexus.c "Nexuses on workers", docs/threading.md): the port, its rdma_cm event
 * channel, its lists of channels and nexuses and the login decisions are the home loop's. A
 * nexus runs on one loop with all its channels (a worker's with connections on workers, else
 * home): their QPs, buffers, completions, commands and responses. Fields below say whose they
 * are: "home", "its loop" (the nexus's), or set before the nexus or channel is handed over and
 * read-only afterwards.
 */
#ifndef SCSITGT_SRP_INT_H
#define SCSITGT_SRP_INT_H

#include "core/fabric.h"
#include "core/worker.h"
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
/*
 * Send queue depth of a channel with request limit @q: a command's Data-In may take one RDMA
 * WRITE per descriptor, then its response (before the device's max_qp_wr caps it; a longer
 * chain than the depth then goes in pieces, srp_cmd.c task_post_rsp()).
 */
#define SRP_CH_SQ_DEPTH(q) \
	(((q)*4u < SRP_MAX_DESCRIPTORS + 8u ? SRP_MAX_DESCRIPTORS + 8u : (q)*4u) + SRP_SEND_EXTRA)
/* Entries of its device's shared CQ a channel with request limit @q reserves. */
#define SRP_CH_CQ_ENTRIES(q) ((q) + SRP_RECV_EXTRA + SRP_CH_SQ_DEPTH(q))
/*
 * The largest queue_size (request limit) whose channel fits the shared CQ at all (review32
 * N12): scsitgt_srp_portal_create() refuses more, since no login could ever be accepted.
 */
#define SRP_QUEUE_SIZE_MAX 3275u
_Static_assert(SRP_CH_CQ_ENTRIES(SRP_QUEUE_SIZE_MAX) <= SCSITGT__RDMA_CQ_SIZE &&
		       SRP_CH_CQ_ENTRIES(SRP_QUEUE_SIZE_MAX + 1u) > SCSITGT__RDMA_CQ_SIZE,
	       "SRP_QUEUE_SIZE_MAX is the largest request limit whose channel fits the CQ");

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
	struct rdma_cm_id *listen;  /* NULL while it waits to listen again */
	struct sockaddr_storage sa; /* the bound address, to listen again */
	bool wildcard;		    /* 0.0.0.0 or :: */
	/* After DEVICE_REMOVAL or ADDR_CHANGE took the listener and binding again failed (the
	 * device is not back yet): try again every second (as iSER, docs/srp.md). */
	uv_timer_t relisten;
	bool relisten_closed;
	/* The devices and registered command buffers of each loop (rdma.h, loop_ctx.c). */
	struct scsitgt__rdma_loops loops;
	/* Home's: every channel until home let go of its id, connected or not; the nexuses. */
	struct scsitgt__list chans;
	struct scsitgt__list nexuses;
	uint32_t nchans_up;
	bool stopping;
	scsitgt_done_cb done_cb;
	void *done_arg;
	struct scsitgt__deferred done_d;
};

struct srp_nexus {
	/* Set at creation (home). */
	struct scsitgt_srp_portal *port;
	struct scsitgt__session *core;
	struct scsitgt__worker *w;    /* the loop of the nexus and its channels; NULL: home */
	struct scsitgt__shard *shard; /* its shard (core/shard.h) */
	uint8_t iport[16];
	char name[40];
	/* Home's. */
	struct scsitgt__list node;     /* port->nexuses */
	unsigned int nchans;	       /* channels admitted and not let go of by home yet */
	bool closing;		       /* no channel may join (SINGLE login, shutdown) */
	struct scsitgt__msg close_msg; /* close every channel, on its loop (at most once) */
	int close_reason;	       /* SRP_T_LOGOUT reason, with close_msg */
	const char *close_why;	       /* a string literal, with close_msg */
	struct scsitgt__msg free_msg;  /* a nexus that never had a channel goes (on its loop) */
	/* Its loop's. */
	struct scsitgt__list chans;
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
	struct scsitgt__list node;    /* port->chans (home's) */
	struct scsitgt__list nx_node; /* nexus->chans (its loop's) */
	struct scsitgt_srp_portal *port;
	struct srp_nexus *nx;
	struct rdma_cm_id *id; /* its events arrive on home (port->cm) */
	/*
	 * The channel's loop is its nexus's (nx->w, NULL: home; lp is that loop's context), and
	 * the messages between home, which owns the id, and that loop, which runs the rest
	 * (srp_portal.c "Channels on workers"). Each is in flight at most once.
	 */
	struct scsitgt__rdma_loop *lp;
	struct scsitgt__rdma_xev xev; /* ESTABLISHED, a disconnect event, RELEASE and FINAL */
	bool home_up;		      /* home: counted in port->nchans_up */
	bool free_nx;		      /* with FINAL: the nexus ended, free it too */
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
	bool qp_created, pools, cq_reserved, accepted, connected;
	bool closing;	 /* no new work; logging out or disconnecting */
	bool disconnect; /* the QP is (being) moved to error: waiting for the flush */
	unsigned int posted, busy, holds;
	unsigned int sq_depth, sq_free, rd_depth, rd_busy;
	struct scsitgt__list tasks; /* every task of this channel */
	struct scsitgt__list rdq;   /* tasks with RDMA READs to post */
	struct scsitgt__list sendq; /* tasks whose response waits for send resources */
	struct scsitgt__list tmfq;  /* TMF responses waiting for send resources */
	uint32_t rsp_seq;	    /* task responses queued so far: orders sendq and tmfq */
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
	uint32_t in_desc, in_off;		/* Data-In RDMA WRITE posting progress */
	unsigned int rd_out;			/* RDMA READs outstanding */
	struct ibv_mr *mr; /* over cmd->buf when it is not in registered memory */
	uint32_t lkey;	   /* of cmd->buf, once keyed */
	bool keyed;
	unsigned int pending; /* work requests posted, not completed */
	int slot;	      /* send buffer of the response, -1 */
	uint32_t seq;	      /* its response's place in ch->rsp_seq, once done */
};

/* srp_nexus.c (home's side of nexuses, and what crosses to a nexus's loop) */
/*
 * The nexus a login of @req with multi-channel action @multi (§6.2.2) from @peer joins or
 * starts, and the LOGIN_RSP flags in *@mc_result: 0 with *@out counted for one more channel
 * (a new nexus is placed on the least-loaded worker with connections on workers), else the
 * SRP_LOGIN_REJ reason. SINGLE closes the channels of the nexus it replaces. Loop: home.
 */
uint32_t scsitgt__srp_nexus_admit(struct srp_nexus **out, struct scsitgt_srp_portal *port,
				  const struct scsitgt__srp_login_req *req, bool multi,
				  const char *peer, uint8_t *mc_result);
/*
 * No channel may join @nx any more, and each of its channels closes on its loop with
 * SRP_T_LOGOUT @tlo_reason (< 0: none), @why a string literal. Loop: home.
 */
void scsitgt__srp_nexus_close(struct srp_nexus *nx, int tlo_reason, const char *why);
/*
 * Home has let go of a channel of @nx: the last one ends the nexus (the core session). Returns
 * true when @nx is to be freed, on its loop, after every message home posted there before
 * (scsitgt__srp_nexus_free()). Loop: home.
 */
bool scsitgt__srp_nexus_leave(struct srp_nexus *nx);
void scsitgt__srp_nexus_free(struct srp_nexus *nx);
/* Whether the calling thread runs @nx's loop. */
bool scsitgt__srp_nexus_here(const struct srp_nexus *nx);

/* srp_portal.c */
/*
 * Set up the zeroed channel @ch of the rdma_cm @id (NULL in unit tests), attached to @nx
 * (admitted: home's count holds it) and to the port's list: it runs on the nexus's loop.
 * Loop: home.
 */
void scsitgt__srp_ch_attach(struct srp_ch *ch, struct scsitgt_srp_portal *port,
			    struct rdma_cm_id *id, struct srp_nexus *nx);
/* A channel on its loop joins its nexus's list (before it is accepted). */
void scsitgt__srp_ch_join(struct srp_ch *ch);
void scsitgt__srp_ch_close(struct srp_ch *ch, int tlo_reason, const char *why);
void scsitgt__srp_ch_check_drained(struct srp_ch *ch);
/* End of a handler (ch->busy was raised): free when drained after a close, else pump. */
void scsitgt__srp_ch_leave(struct srp_ch *ch);
void scsitgt__srp_ch_log(const struct srp_ch *ch, enum scsitgt_log_level level, const char *fmt,
			 ...) SCSITGT_PRINTF(3, 4);
/*
 * Post a 16..ti_iu_len byte target IU of our own (a solicited event when its SOLNT bit is set);
 * @logout disconnects after delivery. -EAGAIN: no send queue entry or buffer free now.
 */
int scsitgt__srp_ch_send_own(struct srp_ch *ch, const uint8_t *iu, size_t len, bool logout);
/*
 * The completion of a send buffer of our own (struct srp_slot, the handler every slot's
 * work request has): the buffer and its send queue entry come back; after an SRP_T_LOGOUT
 * the channel disconnects.
 */
void scsitgt__srp_slot_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc);

/* srp_aer.c */
/* The core's hook (fabric.h): on home or on the nexus's loop; the report is queued there. */
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
