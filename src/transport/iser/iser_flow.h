/* SPDX-License-Identifier: MIT */
/*
 * iSER flow control, pure (no verbs) so it is unit tested everywhere:
 *  - the RDMA READ queue: at most the negotiated read depth in flight (the initiator's
 *    responder resources), the excess waits in arrival order;
 *  - receive credits (RFC 7145 §8, iSER buffer requirements): every SEND the initiator may
 *    have outstanding needs a posted receive buffer, or the RC QP answers RNR. The target
 *    bounds them through the CmdSN window: each command costs its SCSI Command PDU plus the
 *    unsolicited Data-Out PDUs FirstBurstLength allows, and immediate and unexpected PDUs
 *    (NOP-Out, Text, Task Management, Logout) need a reserve besides;
 *  - unexpected PDUs we send (NOP-In pings, Async Messages), bounded by the initiator's
 *    MaxOutstandingUnexpectedPDUs: a ping is outstanding until its NOP-Out answer, an Async
 *    Message until ExpStatSN acknowledges its StatSN.
 */
#ifndef SCSITGT_ISER_FLOW_H
#define SCSITGT_ISER_FLOW_H

#include <stdbool.h>
#include <stdint.h>

/* ---- RDMA READ queue ---- */

struct scsitgt__iser_rdq_item {
	struct scsitgt__iser_rdq_item *next;
	uint32_t itt; /* the task whose solicited data it reads */
};

struct scsitgt__iser_rdq {
	struct scsitgt__iser_rdq_item *head, **tail;
	unsigned int depth;    /* READs allowed in flight (>= 1) */
	unsigned int busy;     /* READs in flight */
	unsigned int queued;   /* READs waiting */
	unsigned int max_busy; /* statistics: the most ever in flight */
};

/* An empty queue allowing @depth READs in flight (0 is taken as 1). */
void scsitgt__iser_rdq_init(struct scsitgt__iser_rdq *q, unsigned int depth);
/* Append a READ to post. */
void scsitgt__iser_rdq_push(struct scsitgt__iser_rdq *q, struct scsitgt__iser_rdq_item *it);
/* The oldest waiting READ if one more may be in flight (it then counts as in flight), or NULL. */
struct scsitgt__iser_rdq_item *scsitgt__iser_rdq_next(struct scsitgt__iser_rdq *q);
/* A READ taken by next() could not be posted after all: it goes back to the head. */
void scsitgt__iser_rdq_unget(struct scsitgt__iser_rdq *q, struct scsitgt__iser_rdq_item *it);
/* A READ in flight completed (or flushed). */
void scsitgt__iser_rdq_done(struct scsitgt__iser_rdq *q);
/* Take every waiting READ off the queue (teardown); returns the list. */
struct scsitgt__iser_rdq_item *scsitgt__iser_rdq_flush(struct scsitgt__iser_rdq *q);
/*
 * Take the waiting READs of task @itt off the queue (the task ended without a response: an
 * abort); returns them as a list in queue order. The others keep their order; READs in
 * flight are not counted here.
 */
struct scsitgt__iser_rdq_item *scsitgt__iser_rdq_take_itt(struct scsitgt__iser_rdq *q,
							  uint32_t itt);

/* ---- receive credits ---- */

struct scsitgt__iser_credit_params {
	uint32_t queue_depth; /* the CmdSN window we would like (commands) */
	uint32_t recv_dsl;    /* TargetRecvDataSegmentLength: data per received SEND */
	uint32_t first_burst; /* negotiated FirstBurstLength */
	bool initial_r2t;     /* negotiated InitialR2T */
	bool immediate_data;  /* negotiated ImmediateData */
	uint32_t unexpected;  /* reserve for immediate and unexpected PDUs (>= 1) */
};

struct scsitgt__iscsi_session_params;

/*
 * The credit parameters of a session as its login negotiated them (@p, the session's keys,
 * datamover.h login_complete), with a CmdSN window of @queue_depth: what the initiator may send
 * unsolicited, in SENDs of at most the negotiated TargetRecvDataSegmentLength (RFC 7145 §6.3:
 * a Minimum key, so an initiator may lower it below our 8192), and @reserve receive buffers for
 * immediate and unexpected PDUs when MaxOutstandingUnexpectedPDUs sets no limit of its own.
 */
void scsitgt__iser_credit_params_of(struct scsitgt__iser_credit_params *cp,
				    const struct scsitgt__iscsi_session_params *p,
				    uint32_t queue_depth, uint32_t reserve);
/* Receive buffers one command may consume at most: its PDU and its unsolicited Data-Outs. */
uint32_t scsitgt__iser_credit_per_cmd(const struct scsitgt__iser_credit_params *p);
/* Receive buffers to post so that a full window never finds none (saturates at UINT32_MAX). */
uint32_t scsitgt__iser_credit_recvs(const struct scsitgt__iser_credit_params *p);
/* The largest CmdSN window (1..queue_depth) that @posted receive buffers cover. */
uint32_t scsitgt__iser_credit_window(const struct scsitgt__iser_credit_params *p, uint32_t posted);

/* ---- unexpected PDUs we send ---- */

#define SCSITGT__ISER_UNEXP_TRACK 64u

struct scsitgt__iser_unexp {
	uint32_t limit; /* the initiator's MaxOutstandingUnexpectedPDUs; 0: no limit */
	uint32_t n;	/* outstanding, tracked below (at most TRACK) */
	struct {
		bool ping; /* NOP-In ping (value: its TTT) or Async Message (value: StatSN) */
		uint32_t value;
	} out[SCSITGT__ISER_UNEXP_TRACK];
};

void scsitgt__iser_unexp_init(struct scsitgt__iser_unexp *u, uint32_t limit);
/*
 * May one more unexpected PDU go out now? With no limit, yes (and nothing is tracked); else
 * while fewer than min(limit, TRACK) are outstanding.
 */
bool scsitgt__iser_unexp_can_send(const struct scsitgt__iser_unexp *u);
/*
 * The same for one more behind @queued unexpected PDUs not sent yet: could it go out without
 * waiting for an answer or an acknowledgement?
 */
bool scsitgt__iser_unexp_can_queue(const struct scsitgt__iser_unexp *u, uint32_t queued);
/* An unexpected PDU went out: a NOP-In ping with TTT @value, or an Async Message (StatSN). */
void scsitgt__iser_unexp_sent(struct scsitgt__iser_unexp *u, bool ping, uint32_t value);
/* A NOP-Out answered the ping with TTT @ttt. Returns true when it was outstanding. */
bool scsitgt__iser_unexp_pong(struct scsitgt__iser_unexp *u, uint32_t ttt);
/* The initiator acknowledged StatSNs below @exp_stat_sn (serial arithmetic, RFC 1982). */
void scsitgt__iser_unexp_ack(struct scsitgt__iser_unexp *u, uint32_t exp_stat_sn);

#endif /* SCSITGT_ISER_FLOW_H */
