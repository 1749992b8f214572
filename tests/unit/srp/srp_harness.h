/* SPDX-License-Identifier: MIT */
/*
 * The world of the SRP unit tests that need no RDMA device (tests/unit/srp):
 *
 *  - struct srp_world: an engine, a target and an SRP target port that never listens (what
 *    scsitgt_srp_portal_create() sets up without its listener); logins are admitted with
 *    scsitgt__srp_nexus_admit() and channels attached by hand (test_srp_nexus.c, and below).
 *  - struct srp_cw: that world with one RAM LUN (0, 2048 blocks of 512 bytes) and one channel
 *    of a nexus on home whose rdma_cm id, QP, device and memory registrations are fakes
 *    (test_srp_cmd.c, test_srp_data.c). ibv_post_send() calls the fake QP's post_send, which
 *    records every work request (and each SEND's IU); nothing completes until the test says
 *    so, and then an RDMA READ copies from the initiator's memory (descriptors carry plain
 *    addresses of this process) into the local buffer and an RDMA WRITE the other way, as the
 *    HCA would. Every local buffer must be covered by the lkey it is posted with, and no more
 *    RDMA READs may be outstanding than the channel's read depth. The port's command memory is
 *    a buffer pool over plain memory under a fake MR. ibv_reg_mr(), ibv_dereg_mr(),
 *    rdma_disconnect() and rdma_destroy_id() are replaced by the harness's own (srp_harness.c,
 *    linked before libibverbs and librdmacm): they count, and a registration can be made to
 *    fail.
 */
#ifndef SCSITGT_TEST_SRP_HARNESS_H
#define SCSITGT_TEST_SRP_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "transport/srp/srp_int.h"

struct srp_world {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_srp_portal *port;
};

/*
 * An engine with @eo (NULL: the defaults), target @tgt_name and a port whose channels run on
 * the workers when @on_workers.
 */
void srp_world_create(struct srp_world *w, const struct scsitgt_engine_opts *eo,
		      const char *tgt_name, bool on_workers);
/* No channel, nexus or session is left. */
bool srp_world_idle(struct srp_world *w);
/* Run the home loop until @cond(@w) holds (whatever changes it is posted to this loop). */
void srp_world_wait(struct srp_world *w, bool (*cond)(struct srp_world *w));
/* Wait until the port is idle and its loops released, then destroy everything. */
void srp_world_destroy(struct srp_world *w);

/* ---- one channel on fakes ---- */

#define SRP_CW_NSEND 8u	      /* send buffers */
#define SRP_CW_SQ_DEPTH 64u   /* send queue entries */
#define SRP_CW_RD_DEPTH 4u    /* RDMA READs outstanding at most */
#define SRP_CW_MEM (1u << 20) /* the port's command memory */
#define SRP_CW_WR_MAX 512u    /* work requests recorded */
#define SRP_CW_SEND_MAX 128u  /* SENDs recorded */

/* A work request the fake QP was given (its lists lived on the poster's stack). */
struct srp_cw_wr {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	uint64_t local;	 /* the first SGE's address */
	uint32_t lkey;	 /* and its lkey */
	uint32_t len;	 /* and its length */
	uint64_t remote; /* RDMA READ, WRITE: the initiator's address */
	uint32_t rkey;
	bool done; /* completed (or flushed) by the test */
};

/* What the fakes saw (zeroed by srp_cw_create()). */
struct srp_cw_rec {
	struct {
		uint8_t iu[512];
		uint32_t len;
		bool solicited; /* posted with IBV_SEND_SOLICITED */
	} sends[SRP_CW_SEND_MAX];
	unsigned int nsends;
	struct srp_cw_wr wrs[SRP_CW_WR_MAX];
	unsigned int nwrs;
	unsigned int reads_open; /* RDMA READs posted and not completed */
	unsigned int mrs_live;	 /* ibv_reg_mr() not yet deregistered */
	unsigned int reg_fail;	 /* the next this many ibv_reg_mr() calls fail */
	/*
	 * Not 0: work request number post_fail (from 1) of the next ibv_post_send() fails, as a
	 * provider refuses one (bad_wr points at it): those before it in the list are posted.
	 */
	unsigned int post_fail;
	unsigned int disconnects, ids_destroyed;
	/* Requests delivered (SRP_CMD, SRP_TSK_MGMT); the REQUEST LIMIT DELTAs sent back. */
	uint64_t requests, credits_back;
};
extern struct srp_cw_rec srp_rec;

struct srp_cw {
	struct srp_world base;
	struct srp_nexus *nx;
	struct srp_ch *ch; /* valid while srp_cw_has_ch() */
	/* The fake verbs objects behind ch. */
	struct ibv_context vctx;
	struct ibv_qp qp;
	struct rdma_cm_id id;
	struct ibv_pd pd;
	struct scsitgt__rdma_dev dev;
	struct ibv_mr txmr, memmr;
	struct scsitgt__rdma_mem mem;
	uint8_t *txmem;
	uint32_t *txstack;
	struct scsitgt_lun *lun;
	uint64_t next_tag;
	uint64_t want_tag; /* srp_cw_answered() */
};

/* The world, its LUN, a nexus admitted on home and its channel as ch_accept() leaves it. */
void srp_cw_create(struct srp_cw *w, const char *tgt_name);
/*
 * Complete what is left, close the channel (when it is still there) and destroy the world;
 * checks that no request of a channel still there is unfinished and that every credit went
 * back to the initiator or is owed (§5.5.2), and that the channel gave back its device, its
 * memory and every registration.
 */
void srp_cw_destroy(struct srp_cw *w);
/* The channel is still there (not torn down and freed). */
bool srp_cw_has_ch(struct srp_cw *w);
/* Run the home loop's ready work a bounded number of times, until @cond(@w). */
bool srp_cw_settle(struct srp_cw *w, bool (*cond)(struct srp_cw *w));
/* Hand the channel one IU as its receive completion does; @rc is what the channel returns. */
void srp_cw_deliver_rc(struct srp_cw *w, const uint8_t *iu, size_t len, int rc);
/* An SRP_CMD of @cdb (16 bytes) on LUN 0 with the buffers of @s (its tag set here). */
uint64_t srp_cw_send_spec(struct srp_cw *w, struct scsitgt__srp_cmd_spec *s, const uint8_t *cdb);
/* The same without data. */
uint64_t srp_cw_send_cmd(struct srp_cw *w, const uint8_t *cdb);
/* The SRP_TSK_MGMT @tm (its tag set here); returns its tag. */
uint64_t srp_cw_send_tm(struct srp_cw *w, struct scsitgt__srp_tsk_mgmt *tm);
/* A TMF on LUN 0 (SRP_TSK_MGMT) of @func about @task_tag; returns its tag. */
uint64_t srp_cw_send_tmf(struct srp_cw *w, uint8_t func, uint64_t task_tag);
/* The recorded SRP_RSP of @tag, decoded; false when there is none. */
bool srp_cw_rsp_of(uint64_t tag, struct scsitgt__srp_rsp *r);
/* Where the SRP_RSP of @tag is among the recorded SENDs, or -1. */
int srp_cw_rsp_at(uint64_t tag);
/* The SRP_RSP of w->want_tag was sent. */
bool srp_cw_answered(struct srp_cw *w);
/* The first command of the nexus (its power-on unit attention) is answered and done with. */
void srp_cw_clear_ua(struct srp_cw *w);

/* Recorded work requests not completed yet, and of those the ones of @opcode. */
unsigned int srp_cw_open(void);
unsigned int srp_cw_open_of(enum ibv_wr_opcode opcode);
/* The index of the @n-th (from 0) open work request of @opcode, or -1. */
int srp_cw_nth_open(enum ibv_wr_opcode opcode, unsigned int n);
/*
 * Complete recorded work request @i with @status: a successful RDMA READ or WRITE moves its
 * data first. The channel may be gone afterwards.
 */
void srp_cw_complete(struct srp_cw *w, unsigned int i, enum ibv_wc_status status);
/*
 * Complete every open work request successfully, in order, also those posted meanwhile; then
 * the record of work requests starts again from index 0.
 */
void srp_cw_complete_all(struct srp_cw *w);
/* The QP went to error: every open work request completes as flushed. */
void srp_cw_flush_all(struct srp_cw *w);

#endif /* SCSITGT_TEST_SRP_HARNESS_H */
