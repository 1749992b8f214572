/* SPDX-License-Identifier: MIT */
/*
 * SRP target ports over RDMA/CM: listening, logins (SRP r16a §6.2), nexuses and channels.
 *
 * A login is an RDMA/CM CONNECT_REQUEST whose private data is the 56-byte compact
 * SRP_LOGIN_REQ. It is checked (scsitgt__srp_login_check), then its multi-channel action is
 * applied (§6.2.2): SINGLE logs out every channel of the same I_T nexus (SRP_T_LOGOUT with
 * reason "multi-channel action SINGLE") and starts a new nexus; MULTI adds the channel to the
 * live nexus of the same initiator port, within max_channels. The channel gets its QP on the
 * device's shared CQ, receive buffers for the request limit plus room for the answers to our
 * own requests, and is accepted with the SRP_LOGIN_RSP as CM private data; a refusal is
 * rdma_reject() with an SRP_LOGIN_REJ.
 *
 * Teardown: a channel is closed by the initiator (disconnect, SRP_I_LOGOUT) or by us
 * (SRP_T_LOGOUT, delivered before we disconnect). The QP goes to error and every posted work
 * request completes; once none is left, the tasks are released, and the last channel of a
 * nexus ends the nexus (the core session).
 *
 * Channels on workers (srp_nexus.c: a nexus and all its channels run on one loop). The
 * rdma_cm event channel and the listener stay on home, and so do the login's checks and its
 * multi-channel action (scsitgt__srp_nexus_admit()). The admitted channel then goes to its
 * nexus's loop by message: its QP uses the CQ of a device context of that loop (rdma.h,
 * loop_ctx.c: PD, CQ and completion channel polled there, and the port's registered command
 * buffers of that loop), it joins the nexus and is accepted (or rejected) there; its
 * completions, IUs, commands and responses run there. The rdma_cm id stays home's: its events
 * arrive there, and ESTABLISHED and the first disconnect-class event go to the channel's loop
 * by message (embedded in the channel, so none is lost). When that loop has released the
 * channel's resources, it sends RELEASE home, which destroys the id (no event can follow),
 * lets go of the channel's place in its nexus (the last one ends the nexus) and sends FINAL
 * back: after every message home posted there before, so FINAL frees the channel (and an
 * ended nexus).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "transport/srp/srp_int.h"
#include "util/be.h"

/* ---- logging ---- */

void scsitgt__srp_ch_log(const struct srp_ch *ch, enum scsitgt_log_level level, const char *fmt,
			 ...)
{
	const struct scsitgt__logger *lg = &ch->port->engine->log;
	char msg[256];
	va_list ap;

	if (!scsitgt__log_enabled(lg, level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	scsitgt__log(lg, level, SCSITGT__SRP_SUBSYS, "channel %s%s%s: %s", ch->peer,
		     ch->nx ? " of " : "", ch->nx ? ch->nx->name : "", msg);
}

/* ---- receive buffers and our own sends ---- */

static int ch_post_recv(struct srp_ch *ch, uint32_t idx)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)scsitgt__rdma_pool_buf(&ch->rxp, idx);
	sge.length = ch->rxp.buf_size;
	sge.lkey = ch->rxp.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&ch->recvs[idx].w;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(ch->id->qp, &wr, &bad) != 0)
		return -EIO;
	ch->posted++;
	return 0;
}

/* End of a handler: free when drained after a close, else post what became possible. */
void scsitgt__srp_ch_leave(struct srp_ch *ch)
{
	if (--ch->busy)
		return;
	if (ch->disconnect)
		scsitgt__srp_ch_check_drained(ch);
	else
		scsitgt__srp_ch_pump(ch);
}

static void ch_recv_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct srp_recv *r = scsitgt__container_of(w, struct srp_recv, w);
	struct srp_ch *ch = r->ch;

	ch->posted--;
	ch->busy++;
	if (wc->status != IBV_WC_SUCCESS || ch->disconnect) {
		if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
			scsitgt__srp_ch_close(ch, -1, ibv_wc_status_str(wc->status));
		scsitgt__srp_ch_leave(ch);
		return;
	}
	/* The IU is consumed (copied or acted on) before its buffer is posted again. */
	if (scsitgt__srp_ch_recv(ch, scsitgt__rdma_pool_buf(&ch->rxp, r->idx), wc->byte_len) == 0 &&
	    !ch->disconnect && ch_post_recv(ch, r->idx) < 0)
		scsitgt__srp_ch_close(ch, -1, "cannot repost a receive buffer");
	scsitgt__srp_ch_leave(ch);
}

static void ch_disconnect(struct srp_ch *ch);

void scsitgt__srp_slot_done(struct scsitgt__rdma_wr *w, const struct ibv_wc *wc)
{
	struct srp_slot *s = scsitgt__container_of(w, struct srp_slot, w);
	struct srp_ch *ch = s->ch;
	bool logout = s->logout;

	ch->posted--;
	ch->sq_free++;
	ch->busy++;
	s->logout = false;
	scsitgt__rdma_pool_put(&ch->txp, s->idx);
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		scsitgt__srp_ch_close(ch, -1, ibv_wc_status_str(wc->status));
	/* SRP_T_LOGOUT reached the initiator (or failed): now the channel goes. */
	if (logout)
		ch_disconnect(ch);
	scsitgt__srp_ch_leave(ch);
}

int scsitgt__srp_ch_send_own(struct srp_ch *ch, const uint8_t *iu, size_t len, bool logout)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint8_t *buf;
	int idx;

	if (ch->disconnect || !ch->accepted || len > ch->ti_iu_len)
		return -ENOTCONN;
	if (ch->sq_free == 0)
		return -EAGAIN;
	idx = scsitgt__rdma_pool_get(&ch->txp);
	if (idx < 0)
		return -EAGAIN;
	buf = scsitgt__rdma_pool_buf(&ch->txp, (uint32_t)idx);
	memcpy(buf, iu, len);
	sge.addr = (uintptr_t)buf;
	sge.length = (uint32_t)len;
	sge.lkey = ch->txp.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&ch->slots[idx].w;
	wr.opcode = IBV_WR_SEND;
	/* The SOLNT bit of a target IU (byte 1 bit 0 of SRP_RSP, SRP_CRED_REQ, SRP_AER_REQ,
	 * SRP_T_LOGOUT) asks for a solicited event: the SEND carries it (§5.6). */
	wr.send_flags = len > 1 && (iu[1] & 1u) ? IBV_SEND_SOLICITED : 0;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_send(ch->id->qp, &wr, &bad) != 0) {
		scsitgt__rdma_pool_put(&ch->txp, (uint32_t)idx);
		return -EIO;
	}
	ch->slots[idx].logout = logout;
	ch->posted++;
	ch->sq_free--;
	return 0;
}

/* ---- teardown ---- */

static void port_check_done(struct scsitgt_srp_portal *port);

/*
 * Home: let go of the channel's rdma_cm id (no event can follow) and of its place in its
 * nexus. Returns true when the nexus ended and is to be freed on its loop.
 */
static bool ch_forget(struct srp_ch *ch)
{
	struct scsitgt_srp_portal *port = ch->port;

	scsitgt__list_remove(&ch->node);
	if (ch->home_up)
		port->nchans_up--;
	if (ch->id)
		rdma_destroy_id(ch->id);
	return ch->nx && scsitgt__srp_nexus_leave(ch->nx);
}

/* The channel's loop: every message home posted there before this one ran. */
static void ch_xev_final(struct scsitgt__rdma_xev *x)
{
	struct srp_ch *ch = scsitgt__container_of(x, struct srp_ch, xev);

	if (ch->free_nx)
		scsitgt__srp_nexus_free(ch->nx);
	free(ch);
}

/* Home: a worker's channel released its resources; the id goes, then the channel. */
static void ch_xev_release(struct scsitgt__rdma_xev *x)
{
	struct srp_ch *ch = scsitgt__container_of(x, struct srp_ch, xev);
	struct scsitgt_srp_portal *port = ch->port;

	ch->free_nx = ch_forget(ch);
	scsitgt__rdma_xev_final(x, ch->nx->w);
	port_check_done(port);
}

static void ch_free(struct srp_ch *ch)
{
	struct scsitgt_srp_portal *port = ch->port;

	scsitgt__srp_ch_release_tasks(ch);
	/* Commands still in backends keep their buffers (and so the memory) themselves. */
	scsitgt__rdma_mem_unuse(ch->mem);
	ch->mem = NULL;
	if (ch->qp_created)
		rdma_destroy_qp(ch->id);
	if (ch->pools) {
		scsitgt__rdma_pool_destroy(&ch->rxp);
		scsitgt__rdma_pool_destroy(&ch->txp);
	}
	if (ch->cq_reserved)
		scsitgt__rdma_dev_unreserve(ch->dev, (int)(ch->nrecv + ch->sq_depth));
	if (ch->dev)
		scsitgt__rdma_dev_put(ch->dev);
	free(ch->recvs);
	free(ch->slots);
	ch->recvs = NULL;
	ch->slots = NULL;
	scsitgt__list_remove(&ch->nx_node);
	scsitgt__list_init(&ch->nx_node);
	if (ch->nx->w) {
		/* The id, the port and the nexus's count are home's: hand over (see the top). */
		scsitgt__rdma_xev_release(&ch->xev, port->engine);
		return;
	}
	if (ch_forget(ch))
		scsitgt__srp_nexus_free(ch->nx);
	free(ch);
	port_check_done(port);
}

void scsitgt__srp_ch_check_drained(struct srp_ch *ch)
{
	if (!ch->disconnect || ch->posted || ch->busy || ch->holds || ch->xev.released)
		return;
	ch_free(ch);
}

static void ch_disconnect(struct srp_ch *ch)
{
	if (ch->disconnect)
		return;
	ch->closing = true;
	ch->disconnect = true;
	scsitgt__srp_ch_drop_queued(ch);
	/* The QP goes to error: every posted work request completes as flushed. */
	if (!ch->accepted || ch->id == NULL || rdma_disconnect(ch->id) != 0) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		if (ch->qp_created)
			ibv_modify_qp(ch->id->qp, &a, IBV_QP_STATE);
	}
	ch->busy++;
	scsitgt__srp_ch_leave(ch);
}

void scsitgt__srp_ch_close(struct srp_ch *ch, int tlo_reason, const char *why)
{
	uint8_t iu[SRP_T_LOGOUT_LEN];

	if (ch->closing)
		return;
	ch->closing = true;
	scsitgt__srp_ch_log(ch, tlo_reason >= 0 ? SCSITGT_LOG_NOTICE : SCSITGT_LOG_INFO,
			    "closing: %s", why);
	/* §6.4: a target logout is an SRP_T_LOGOUT, then the channel goes. */
	if (tlo_reason >= 0 && ch->connected && !ch->disconnect) {
		scsitgt__srp_t_logout_encode(iu, 0, (uint32_t)tlo_reason, ch->next_tag++);
		if (scsitgt__srp_ch_send_own(ch, iu, sizeof(iu), true) == 0) {
			scsitgt__srp_ch_drop_queued(ch);
			return;
		}
	}
	ch_disconnect(ch);
}

/* ---- channel events ---- */

/* An rdma_cm event of the channel, on its loop. */
static void ch_cm_event_here(struct srp_ch *ch, enum rdma_cm_event_type type, int status)
{
	char qpd[160];

	scsitgt__srp_ch_log(ch, SCSITGT_LOG_DEBUG, "rdma_cm %s (status %d)",
			    scsitgt__rdma_cm_event_name(type), status);
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		ch->connected = true;
		if (scsitgt__rdma_qp_set_min_rnr(ch->id->qp) < 0)
			scsitgt__srp_ch_log(ch, SCSITGT_LOG_DEBUG, "cannot set the RNR timer");
		if (scsitgt__rdma_qp_describe(ch->id->qp, qpd, sizeof(qpd)) == 0)
			scsitgt__srp_ch_log(ch, SCSITGT_LOG_NOTICE, "QP: %s", qpd);
		ch->busy++;
		scsitgt__srp_ch_leave(ch);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		ch->connected = false;
		ch->closing = true;
		ch_disconnect(ch);
		break;
	default:
		break; /* TIMEWAIT_EXIT: the QP is drained by counting completions */
	}
}

static void ch_xev_here(struct scsitgt__rdma_xev *x, enum rdma_cm_event_type type, int status)
{
	ch_cm_event_here(scsitgt__container_of(x, struct srp_ch, xev), type, status);
}

/* Home (every id's events arrive on the port's channel): see scsitgt__rdma_xev_deliver(). */
static void ch_cm_event(struct scsitgt__rdma_cm_handler *h, const struct scsitgt__rdma_cm_event *ev)
{
	struct srp_ch *ch = scsitgt__container_of(h, struct srp_ch, cmh);

	if (ev->type == RDMA_CM_EVENT_ESTABLISHED && !ch->home_up) {
		ch->home_up = true;
		ch->port->nchans_up++;
	}
	scsitgt__rdma_xev_deliver(&ch->xev, ch->nx->w, ev);
}

/* ---- login ---- */

static void login_reject(struct scsitgt_srp_portal *port, struct rdma_cm_id *id, const char *peer,
			 uint32_t reason, uint64_t tag)
{
	uint8_t rej[SRP_LOGIN_REJ_LEN];

	scsitgt__log(&port->engine->log, SCSITGT_LOG_WARNING, SCSITGT__SRP_SUBSYS,
		     "login from %s rejected: %s (0x%08x)", peer,
		     scsitgt__srp_rej_reason_name(reason), reason);
	scsitgt__srp_login_rej_encode(rej, reason, tag, SRP_BUF_FMT_DIRECT | SRP_BUF_FMT_INDIRECT);
	rdma_reject(id, rej, sizeof(rej));
}

/* The port's registered command buffers on the channel's device and loop, or NULL without. */
static struct scsitgt__rdma_mem *ch_mem_get(struct srp_ch *ch)
{
	struct scsitgt_srp_portal *port = ch->port;
	struct scsitgt__rdma_mem *mem;
	int rc;

	if (port->opts.buffer_bytes == 0)
		return NULL;
	rc = scsitgt__rdma_loop_mem_get(ch->lp, ch->dev, port->opts.buffer_bytes, &mem);
	if (rc < 0) {
		scsitgt__log(&port->engine->log, SCSITGT_LOG_WARNING, SCSITGT__SRP_SUBSYS,
			     "cannot register %llu bytes of command buffers (%s): each command "
			     "registers its own",
			     (unsigned long long)port->opts.buffer_bytes, scsitgt_strerror(rc));
		return NULL;
	}
	return mem;
}

/* The channel's loop: QP, buffers and receives of an admitted login. */
static int ch_resources(struct srp_ch *ch)
{
	struct scsitgt_srp_portal *port = ch->port;
	uint32_t q = port->opts.queue_size;
	int rc;

	rc = scsitgt__rdma_dev_get(&ch->dev, &ch->lp->devs, ch->lp->loop, ch->id->verbs, NULL,
				   NULL);
	if (rc < 0)
		return rc;
	ch->mem = ch_mem_get(ch);
	scsitgt__rdma_mem_use(ch->mem);
	ch->nrecv = q + SRP_RECV_EXTRA;
	ch->nsend = q + SRP_SEND_EXTRA;
	ch->sq_depth = SRP_CH_SQ_DEPTH(q);
	if (ch->sq_depth > (unsigned int)ch->dev->attr.max_qp_wr)
		ch->sq_depth = (unsigned int)ch->dev->attr.max_qp_wr;
	if (ch->nrecv > (uint32_t)ch->dev->attr.max_qp_wr || ch->sq_depth < ch->nsend)
		return -ENOSPC;
	rc = scsitgt__rdma_dev_reserve(ch->dev, (int)(ch->nrecv + ch->sq_depth));
	if (rc < 0)
		return rc;
	ch->cq_reserved = true;
	rc = scsitgt__rdma_qp_create(ch->id, ch->dev, ch->sq_depth, ch->nrecv, 1);
	if (rc < 0)
		return rc;
	ch->qp_created = true;
	rc = scsitgt__rdma_pool_init(&ch->rxp, ch->dev->pd, ch->nrecv, ch->it_iu_len,
				     IBV_ACCESS_LOCAL_WRITE);
	if (rc == 0) {
		rc = scsitgt__rdma_pool_init(&ch->txp, ch->dev->pd, ch->nsend, ch->ti_iu_len, 0);
		if (rc < 0)
			scsitgt__rdma_pool_destroy(&ch->rxp);
	}
	if (rc < 0)
		return rc;
	ch->pools = true;
	ch->recvs = calloc(ch->nrecv, sizeof(*ch->recvs));
	ch->slots = calloc(ch->nsend, sizeof(*ch->slots));
	if (ch->recvs == NULL || ch->slots == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < ch->nsend; i++) {
		ch->slots[i].w.done = scsitgt__srp_slot_done;
		ch->slots[i].ch = ch;
		ch->slots[i].idx = i;
	}
	/* Receives are posted before the login is accepted: the initiator may send at once. */
	for (uint32_t i = 0; i < ch->nrecv; i++) {
		ch->recvs[i].w.done = ch_recv_done;
		ch->recvs[i].ch = ch;
		ch->recvs[i].idx = i;
		rc = ch_post_recv(ch, i);
		if (rc < 0)
			return rc;
	}
	ch->sq_free = ch->sq_depth;
	return 0;
}

/* What a login admitted on home hands to the channel's loop. */
struct srp_setup {
	struct scsitgt__msg msg;
	struct srp_ch *ch;
	uint64_t tag;
	uint8_t mc_result;
	uint8_t initiator_depth, responder_resources;
	unsigned int nchans; /* of the nexus, this one included, when it was admitted */
};

/*
 * The channel's loop: set up and accept an admitted login. Returns 0, or the SRP_LOGIN_REJ
 * reason (the caller rejects and drains the channel).
 */
static uint32_t ch_accept(struct srp_ch *ch, const struct srp_setup *s)
{
	const struct scsitgt_srp_portal_opts *o = &ch->port->opts;
	struct scsitgt__srp_login_rsp rsp;
	struct rdma_conn_param cp;
	uint8_t rbuf[SRP_LOGIN_RSP_LEN];

	if (ch_resources(ch) < 0)
		return SRP_REJ_INSUFFICIENT_RESOURCES;
	scsitgt__srp_ch_join(ch);
	memset(&rsp, 0, sizeof(rsp));
	rsp.req_lim_delta = scsitgt__srp_credits_init(&ch->cred, o->queue_size);
	rsp.tag = s->tag;
	rsp.max_it_iu_len = ch->it_iu_len;
	rsp.max_ti_iu_len = ch->ti_iu_len;
	rsp.buf_fmt = SRP_BUF_FMT_DIRECT | SRP_BUF_FMT_INDIRECT;
	rsp.flags = s->mc_result | (ch->imm_off ? SRP_LOGIN_RSP_IMMED_SUPP : 0);
	scsitgt__srp_login_rsp_encode(rbuf, &rsp);
	/*
	 * Our RDMA READ depth: the initiator's responder resources, which the passive side's
	 * CONNECT_REQUEST reports as initiator_depth (ib_srp offers 4), within the device.
	 */
	ch->rd_depth = s->initiator_depth;
	if (ch->rd_depth > (unsigned int)ch->dev->attr.max_qp_init_rd_atom)
		ch->rd_depth = (unsigned int)ch->dev->attr.max_qp_init_rd_atom;
	if (ch->rd_depth == 0)
		ch->rd_depth = 1;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = rbuf;
	cp.private_data_len = sizeof(rbuf);
	cp.responder_resources = s->responder_resources;
	if (cp.responder_resources > ch->dev->attr.max_qp_rd_atom)
		cp.responder_resources = (uint8_t)ch->dev->attr.max_qp_rd_atom;
	cp.initiator_depth = (uint8_t)ch->rd_depth;
	cp.rnr_retry_count = 7;
	cp.flow_control = 1;
	if (rdma_accept(ch->id, &cp) != 0)
		return SRP_REJ_INSUFFICIENT_RESOURCES;
	ch->accepted = true;
	scsitgt__srp_ch_log(
		ch, SCSITGT_LOG_NOTICE,
		"login accepted: %s, IU %u/%u bytes, request limit %u, immediate data "
		"offset %u, RDMA READ depth %u, %u channel(s)%s",
		s->mc_result == SRP_LOGIN_RSP_MAINTAINED ? "MULTI" :
		s->mc_result == SRP_LOGIN_RSP_TERMINATED ? "SINGLE (old channels ended)" :
							   "new nexus",
		ch->it_iu_len, ch->ti_iu_len, o->queue_size, ch->imm_off, ch->rd_depth, s->nchans,
		ch->nx->w ? ", on its nexus's worker" : "");
	return 0;
}

/* The channel's loop: accepted, or rejected and drained. */
static void ch_start(struct srp_ch *ch, const struct srp_setup *s)
{
	uint32_t reason = ch_accept(ch, s);

	if (reason == 0)
		return;
	login_reject(ch->port, ch->id, ch->peer, reason, s->tag);
	ch->closing = true;
	ch->disconnect = true;
	if (ch->qp_created && ch->posted) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(ch->id->qp, &a, IBV_QP_STATE);
	}
	scsitgt__srp_ch_check_drained(ch);
}

static void ch_setup_fn(struct scsitgt__msg *msg)
{
	struct srp_setup *s = scsitgt__container_of(msg, struct srp_setup, msg);

	ch_start(s->ch, s);
	free(s);
}

/* Home: decode and check a login (§6.2); 0, or the SRP_LOGIN_REJ reason. */
static uint32_t login_check(struct scsitgt_srp_portal *port,
			    const struct scsitgt__rdma_cm_event *ev,
			    struct scsitgt__srp_login_req *req,
			    struct scsitgt__srp_login_verdict *v)
{
	const struct scsitgt_srp_portal_opts *o = &port->opts;
	struct scsitgt__srp_login_limits lim;
	uint32_t reason;

	if (scsitgt__srp_login_req_decode(ev->conn.private_data, ev->conn.private_data_len, true,
					  req) < 0)
		return SRP_REJ_UNABLE_ESTABLISH;
	memset(&lim, 0, sizeof(lim));
	lim.id_ext = o->id_ext;
	lim.ioc_guid = o->ioc_guid;
	lim.max_it_iu_len = o->max_it_iu_len;
	lim.min_it_iu_len = SRP_CMD_LEN + SRP_DIRECT_DESC_LEN;
	lim.buf_fmt = SRP_BUF_FMT_DIRECT | SRP_BUF_FMT_INDIRECT;
	lim.immediate_data = o->immediate_data;
	reason = scsitgt__srp_login_check(req, &lim, v);
	if (reason)
		return reason;
	if (port->tgt == NULL || port->tgt->destroying)
		return SRP_REJ_UNABLE_ESTABLISH;
	return 0;
}

static void peer_name(struct rdma_cm_id *id, char *out, size_t size)
{
	const struct sockaddr *sa = id ? rdma_get_peer_addr(id) : NULL;

	snprintf(out, size, "?");
	if (sa && sa->sa_family == AF_INET)
		uv_ip4_name((const struct sockaddr_in *)(const void *)sa, out, size);
	else if (sa && sa->sa_family == AF_INET6)
		uv_ip6_name((const struct sockaddr_in6 *)(const void *)sa, out, size);
}

void scsitgt__srp_ch_attach(struct srp_ch *ch, struct scsitgt_srp_portal *port,
			    struct rdma_cm_id *id, struct srp_nexus *nx)
{
	ch->cmh.event = ch_cm_event;
	ch->xev.here = ch_xev_here;
	ch->xev.release = ch_xev_release;
	ch->xev.final = ch_xev_final;
	ch->port = port;
	ch->nx = nx;
	ch->lp = scsitgt__rdma_loops_at(&port->loops, nx->w);
	ch->id = id;
	if (id)
		id->context = &ch->cmh;
	ch->next_tag = 1;
	scsitgt__list_init(&ch->tasks);
	scsitgt__list_init(&ch->rdq);
	scsitgt__list_init(&ch->sendq);
	scsitgt__list_init(&ch->tmfq);
	scsitgt__list_init(&ch->nx_node);
	peer_name(id, ch->peer, sizeof(ch->peer));
	scsitgt__list_add_tail(&port->chans, &ch->node);
}

void scsitgt__srp_ch_join(struct srp_ch *ch)
{
	scsitgt__list_add_tail(&ch->nx->chans, &ch->nx_node);
}

/*
 * Home: a login. It is checked and admitted here (its nexus joined or started, placed on its
 * loop), then the channel is set up and accepted on the nexus's loop (srp_nexus.c).
 */
static void port_connect_request(struct scsitgt_srp_portal *port,
				 const struct scsitgt__rdma_cm_event *ev)
{
	struct scsitgt__srp_login_verdict v;
	struct scsitgt__srp_login_req req;
	struct srp_setup *s = NULL;
	struct srp_nexus *nx = NULL;
	struct srp_ch *ch = NULL;
	char peer[64];
	uint32_t reason;

	if (port->stopping) {
		rdma_reject(ev->id, NULL, 0);
		rdma_destroy_id(ev->id);
		return;
	}
	peer_name(ev->id, peer, sizeof(peer));
	memset(&req, 0, sizeof(req));
	reason = login_check(port, ev, &req, &v);
	if (reason == 0) {
		/* Allocated before the nexus counts the channel: nothing to undo there. */
		ch = calloc(1, sizeof(*ch));
		s = calloc(1, sizeof(*s));
		if (ch == NULL || s == NULL)
			reason = SRP_REJ_INSUFFICIENT_RESOURCES;
	}
	if (reason == 0)
		reason = scsitgt__srp_nexus_admit(&nx, port, &req, v.multi, peer, &s->mc_result);
	if (reason) {
		login_reject(port, ev->id, peer, reason, req.tag);
		rdma_destroy_id(ev->id);
		free(ch);
		free(s);
		return;
	}
	scsitgt__srp_ch_attach(ch, port, ev->id, nx);
	ch->it_iu_len = v.it_iu_len;
	ch->ti_iu_len = port->opts.max_ti_iu_len;
	ch->imm_off = v.imm_data_offset;
	s->ch = ch;
	s->tag = req.tag;
	s->initiator_depth = ev->conn.initiator_depth;
	s->responder_resources = ev->conn.responder_resources;
	s->nchans = nx->nchans;
	if (nx->w == NULL) {
		ch_start(ch, s);
		free(s);
		return;
	}
	s->msg.fn = ch_setup_fn;
	scsitgt__worker_post(nx->w, &s->msg);
}

static int port_listen(struct scsitgt_srp_portal *port)
{
	return scsitgt__rdma_cm_listen(&port->cm, &port->cmh, &port->sa, port->wildcard,
				       port->opts.backlog, &port->listen);
}

static void port_relisten_cb(uv_timer_t *t)
{
	struct scsitgt_srp_portal *port = t->data;

	if (port->stopping || port->listen || port_listen(port) == 0) {
		uv_timer_stop(t);
		if (!port->stopping && port->listen)
			scsitgt__log(&port->engine->log, SCSITGT_LOG_NOTICE, SCSITGT__SRP_SUBSYS,
				     "SRP port %s:%u: listening again", port->address, port->port);
	}
}

/*
 * The listener's device goes away, or its address moved: let go of the id (rdma_cm wants it
 * destroyed on DEVICE_REMOVAL; the kernel waits for that before removing a device) and of
 * the command memory registered there, then listen again on the address wherever it lives
 * now, every second until it is back. The channels get the same events on their own ids.
 */
static void port_listener_gone(struct scsitgt_srp_portal *port,
			       const struct scsitgt__rdma_cm_event *ev)
{
	int rc;

	if (ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL && port->listen->verbs)
		scsitgt__rdma_loops_drop(&port->loops, false);
	rdma_destroy_id(port->listen);
	port->listen = NULL;
	rc = port_listen(port);
	scsitgt__log(&port->engine->log, rc < 0 ? SCSITGT_LOG_ERROR : SCSITGT_LOG_WARNING,
		     SCSITGT__SRP_SUBSYS, "SRP port %s:%u: %s; listening again: %s", port->address,
		     port->port, scsitgt__rdma_cm_event_name(ev->type),
		     rc < 0 ? scsitgt_strerror(rc) : "ok");
	if (rc < 0)
		uv_timer_start(&port->relisten, port_relisten_cb, 1000, 1000);
}

static void port_cm_event(struct scsitgt__rdma_cm_handler *h,
			  const struct scsitgt__rdma_cm_event *ev)
{
	struct scsitgt_srp_portal *port = scsitgt__container_of(h, struct scsitgt_srp_portal, cmh);

	if (ev->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* The new id inherited the listener's context: it is ours until the login. */
		port_connect_request(port, ev);
		return;
	}
	if ((ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL || ev->type == RDMA_CM_EVENT_ADDR_CHANGE) &&
	    ev->id == port->listen && !port->stopping) {
		port_listener_gone(port, ev);
		return;
	}
	scsitgt__log(&port->engine->log, SCSITGT_LOG_DEBUG, SCSITGT__SRP_SUBSYS, "port: %s",
		     scsitgt__rdma_cm_event_name(ev->type));
}

/* ---- the target's list of ports ---- */

struct srp_tgt_ext {
	struct scsitgt__list ports;
};

static void tgt_ext_destroy(void *data)
{
	struct srp_tgt_ext *x = data;

	/* The target is freed: its ports stay up but refuse logins. */
	while (!scsitgt__list_empty(&x->ports)) {
		struct scsitgt_srp_portal *p =
			scsitgt__container_of(x->ports.next, struct scsitgt_srp_portal, tgt_node);

		scsitgt__list_remove(&p->tgt_node);
		scsitgt__list_init(&p->tgt_node);
		p->tgt = NULL;
		/* no longer a port of any target (core/pr_out.c) */
		p->svc.protocol_id = 0;
		p->svc.tgt = NULL;
	}
	free(x);
}

static int tgt_attach(struct scsitgt_srp_portal *port, struct scsitgt_target *tgt)
{
	struct srp_tgt_ext *x = tgt->ext[SCSITGT__EXT_SRP].data;

	if (x == NULL) {
		x = calloc(1, sizeof(*x));
		if (x == NULL)
			return -ENOMEM;
		scsitgt__list_init(&x->ports);
		tgt->ext[SCSITGT__EXT_SRP].data = x;
		tgt->ext[SCSITGT__EXT_SRP].destroy = tgt_ext_destroy;
	}
	port->tgt = tgt;
	scsitgt__list_add_tail(&x->ports, &port->tgt_node);
	return 0;
}

/* ---- port life cycle ---- */

static void port_done_deferred(struct scsitgt__deferred *d)
{
	struct scsitgt_srp_portal *port =
		scsitgt__container_of(d, struct scsitgt_srp_portal, done_d);
	scsitgt_done_cb cb = port->done_cb;
	void *arg = port->done_arg;

	scsitgt__rdma_loops_fini(&port->loops);
	free(port);
	if (cb)
		cb(arg, 0);
}

static void port_cm_closed(struct scsitgt__rdma_cm *cm)
{
	struct scsitgt_srp_portal *port = cm->data;

	port->done_d.fn = port_done_deferred;
	scsitgt__engine_defer(port->engine, &port->done_d);
}

static void port_check_done(struct scsitgt_srp_portal *port)
{
	if (!port->stopping || !port->relisten_closed || !scsitgt__list_empty(&port->chans) ||
	    port->cm.ch == NULL || port->cm.closed)
		return;
	/*
	 * Every loop drops the port's memory and device list first (a worker's by message).
	 * Devices close on their own once their last channel and buffer released them.
	 */
	if (!scsitgt__rdma_loops_release(&port->loops))
		return;
	scsitgt__rdma_cm_close(&port->cm, port_cm_closed);
}

/* Home: a worker loop's drop is back. */
static void port_drop_back(void *arg)
{
	port_check_done(arg);
}

static void port_relisten_closed(uv_handle_t *h)
{
	struct scsitgt_srp_portal *port = h->data;

	port->relisten_closed = true;
	port_check_done(port);
}

static void port_stop(struct scsitgt_srp_portal *port, scsitgt_done_cb cb, void *cb_arg)
{
	struct scsitgt__list *pos, *tmp;

	port->stopping = true;
	port->done_cb = cb;
	port->done_arg = cb_arg;
	scsitgt__engine_remove_service(port->engine, &port->svc);
	scsitgt__list_remove(&port->tgt_node);
	scsitgt__list_init(&port->tgt_node);
	scsitgt__log(&port->engine->log, SCSITGT_LOG_INFO, SCSITGT__SRP_SUBSYS,
		     "SRP port %s:%u stopping (%u channels)", port->address, port->port,
		     port->nchans_up);
	if (port->listen) {
		rdma_destroy_id(port->listen);
		port->listen = NULL;
	}
	uv_close((uv_handle_t *)&port->relisten, port_relisten_closed);
	/* Every channel is in a nexus: each closes them on its loop. */
	scsitgt__list_foreach_safe(pos, tmp, &port->nexuses)
	{
		struct srp_nexus *nx = scsitgt__container_of(pos, struct srp_nexus, node);

		scsitgt__srp_nexus_close(nx, SRP_TLO_NO_REASON, "SRP target port stopping");
	}
	port_check_done(port);
}

static void port_svc_shutdown(struct scsitgt__service *svc, scsitgt_done_cb cb, void *cb_arg)
{
	port_stop(scsitgt__container_of(svc, struct scsitgt_srp_portal, svc), cb, cb_arg);
}

/* A refused option of scsitgt_srp_portal_create(): logged (scsitgt__log_refused()), -EINVAL. */
#define SRP_REFUSE(lg, ...)                                    \
	scsitgt__log_refused(lg, SCSITGT__SRP_SUBSYS, -EINVAL, \
			     "scsitgt_srp_portal_create: " __VA_ARGS__)

static int opts_range(const struct scsitgt__logger *lg, const char *name, unsigned long long v,
		      unsigned long long lo, unsigned long long hi)
{
	if (v >= lo && v <= hi)
		return 0;
	return SRP_REFUSE(lg, "%s %llu: not %llu..%llu", name, v, lo, hi);
}

static int opts_check(const struct scsitgt__logger *lg, struct scsitgt_srp_portal_opts *o,
		      struct sockaddr_storage *sa, const struct scsitgt_srp_portal_opts *opts)
{
	scsitgt_srp_portal_opts_init(o, sizeof(*o));
	if (opts == NULL || opts->size == 0)
		return SRP_REFUSE(lg, "opts %s",
				  opts == NULL ? "is NULL" :
						 "size 0 (initialise the options with "
						 "scsitgt_srp_portal_opts_init())");
	memcpy(o, opts, opts->size < sizeof(*o) ? opts->size : sizeof(*o));
	o->size = sizeof(*o);
	if (o->address == NULL || strlen(o->address) >= 64)
		return SRP_REFUSE(lg, "address %s: %s", o->address ? o->address : "NULL",
				  o->address ? "63 bytes at most" : "required");
	if (o->ioc_guid == 0)
		return SRP_REFUSE(lg, "ioc_guid 0: required");
	if (o->rel_port_id == 0)
		return SRP_REFUSE(lg, "rel_port_id 0: not 1..65535");
	if (opts_range(lg, "max_channels", o->max_channels, 1, 64) ||
	    opts_range(lg, "queue_size", o->queue_size, 2, SRP_QUEUE_SIZE_MAX) ||
	    opts_range(lg, "max_it_iu_len", o->max_it_iu_len, 64, 1u << 20) ||
	    opts_range(lg, "max_ti_iu_len", o->max_ti_iu_len, 64, 65536))
		return -EINVAL;
	if (o->backlog < 1)
		return SRP_REFUSE(lg, "backlog %d: at least 1", o->backlog);
	memset(sa, 0, sizeof(*sa));
	if (uv_ip4_addr(o->address, o->port, (struct sockaddr_in *)sa) != 0 &&
	    uv_ip6_addr(o->address, o->port, (struct sockaddr_in6 *)sa) != 0)
		return SRP_REFUSE(lg,
				  "address \"%s\": not a numeric IPv4 or IPv6 address (host names "
				  "are not resolved)",
				  o->address);
	return 0;
}

static void port_failed_cm_closed(struct scsitgt__rdma_cm *cm)
{
	struct scsitgt_srp_portal *port = cm->data;

	scsitgt__rdma_loops_fini(&port->loops);
	free(port);
}

SCSITGT_EXPORT int scsitgt_srp_portal_create(struct scsitgt_srp_portal **out,
					     struct scsitgt_target *tgt,
					     const struct scsitgt_srp_portal_opts *opts)
{
	struct scsitgt_srp_portal *port;
	struct sockaddr_storage sa;
	struct scsitgt_srp_portal_opts o;
	struct scsitgt_engine *engine;
	int rc;

	if (tgt == NULL)
		return -EINVAL;
	if (out == NULL || tgt->destroying || tgt->engine->destroying)
		return SRP_REFUSE(&tgt->engine->log, "%s",
				  out == NULL	  ? "out is NULL" :
				  tgt->destroying ? "the target is being destroyed" :
						    "the engine is being destroyed");
	*out = NULL;
	engine = tgt->engine;
	rc = opts_check(&engine->log, &o, &sa, opts);
	if (rc < 0)
		return rc;
	port = calloc(1, sizeof(*port));
	if (port == NULL)
		return -ENOMEM;
	port->engine = engine;
	port->opts = o;
	snprintf(port->address, sizeof(port->address), "%s", o.address);
	port->opts.address = port->address;
	port->cmh.event = port_cm_event;
	port->cm.data = port;
	scsitgt__list_init(&port->chans);
	scsitgt__list_init(&port->nexuses);
	scsitgt__list_init(&port->tgt_node);
	/* Home's loop, and each worker's when nexuses run there (srp_nexus.c). */
	if (scsitgt__rdma_loops_init(&port->loops, engine, engine->conn_workers, port_drop_back,
				     port) < 0) {
		free(port);
		return -ENOMEM;
	}
	rc = scsitgt__rdma_cm_open(&port->cm, engine->loop);
	if (rc < 0) {
		scsitgt__rdma_loops_fini(&port->loops);
		free(port);
		return rc == -ENOENT ? -ENODEV : rc;
	}
	memcpy(&port->sa, &sa, sizeof(sa));
	port->wildcard = strcmp(o.address, "0.0.0.0") == 0 || strcmp(o.address, "::") == 0;
	rc = port_listen(port);
	if (rc == 0)
		rc = tgt_attach(port, tgt);
	if (rc < 0) {
		if (port->listen)
			rdma_destroy_id(port->listen);
		port->listen = NULL;
		scsitgt__rdma_cm_close(&port->cm, port_failed_cm_closed);
		return rc == -EADDRNOTAVAIL ? -ENODEV : rc;
	}
	port->port = ntohs(rdma_get_src_port(port->listen));
	uv_timer_init(engine->loop, &port->relisten);
	port->relisten.data = port;
	port->svc.shutdown = port_svc_shutdown;
	port->svc.protocol_id = SCSITGT__PROTO_SRP;
	port->svc.rel_port_id = port->opts.rel_port_id;
	port->svc.tgt = tgt;
	scsitgt__engine_add_service(engine, &port->svc);
	scsitgt__log(&engine->log, SCSITGT_LOG_INFO, SCSITGT__SRP_SUBSYS,
		     "SRP port %s:%u listening for target port 0x%016" PRIx64 "%016" PRIx64
		     " (target %s)",
		     port->address, port->port, o.id_ext, o.ioc_guid, tgt->name);
	*out = port;
	return 0;
}

SCSITGT_EXPORT void scsitgt_srp_portal_destroy(struct scsitgt_srp_portal *portal,
					       scsitgt_done_cb cb, void *cb_arg)
{
	if (portal == NULL || portal->stopping)
		return;
	port_stop(portal, cb, cb_arg);
}

SCSITGT_EXPORT uint16_t scsitgt_srp_portal_get_port(const struct scsitgt_srp_portal *portal)
{
	return portal ? portal->port : 0;
}

SCSITGT_EXPORT void scsitgt_srp_portal_get_counts(const struct scsitgt_srp_portal *portal,
						  uint32_t *channels, uint32_t *nexuses)
{
	uint32_t n = 0;

	if (portal) {
		for (struct scsitgt__list *p = portal->nexuses.next; p != &portal->nexuses;
		     p = p->next)
			n++;
	}
	if (channels)
		*channels = portal ? portal->nchans_up : 0;
	if (nexuses)
		*nexuses = n;
}
