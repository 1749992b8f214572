/* SPDX-License-Identifier: MIT */
/*
 * iSER data mover (RFC 7145) for the iSCSI transport, over rdma_cm and verbs (rdma.h): the
 * portal (an rdma_cm listener), connection set-up and teardown, and receive credits. The data
 * path is in iser_io.c.
 *
 * A connection: CONNECT_REQUEST -> QP on the device's shared CQ, receive buffers for the login
 * posted, the iSCSI connection created, rdma_accept() with the iSER CM REP private data
 * (§9.1.2). When login completes, before the final Login Response is built, the receive
 * buffers the negotiated session needs are posted and the CmdSN window is cut to what they
 * cover (iser_flow.h, the login_complete hook of datamover.h). The
 * commands of the connection take their data buffers from registered memory (one region per
 * device and portal, registered once, sized by scsitgt_portal_opts::rdma_buffer_bytes).
 *
 * Teardown: rdma_disconnect() moves the QP to error, every WR still outstanding completes
 * (flushed); when no counted WR is left (and a refused chain's fence is back, iser_io.c) the
 * QP, id and buffers are destroyed and the iSCSI connection is told.
 * DEVICE_REMOVAL closes the connections of the device and drops its listener and memory;
 * ADDR_CHANGE closes connections and makes the listener bind again.
 *
 * Connections on workers (engine->conn_workers, docs/threading.md). The rdma_cm event channel
 * and the listener stay on home; each connection request is placed on the least-loaded worker
 * (scsitgt__iscsi_portal_place(), as a TCP connection) and set up there: its QP uses the CQ of
 * a device context of that loop (verbs.c: PD, CQ and completion channel polled by the
 * worker's loop, made on the first connection of the portal there) and the portal's
 * registered memory of that loop (rdma.h, loop_ctx.c). Completions, PDUs, the iSCSI connection, its
 * session and commands then run on the worker. The rdma_cm id stays home's: its events arrive
 * there and ESTABLISHED and the first disconnect-class event go to the worker by message
 * (embedded in the connection, so none is lost). When the worker has released everything, it
 * sends RELEASE home, which destroys the id (no event can follow) and sends FINAL back: after
 * every event message it posted before, so FINAL frees the connection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iser/iser_int.h"
#include "util/be.h"

static void ip_check_done(struct iser_portal *ip);

void scsitgt__iser_conn_leave(struct iser_conn *ic)
{
	if (--ic->busy)
		return;
	if (ic->dm_close)
		scsitgt__iser_conn_check_drained(ic);
	else
		scsitgt__iser_pump(ic);
}

void scsitgt__iser_conn_fail(struct iser_conn *ic, int err, const char *why)
{
	if (ic->conn == NULL || ic->dm_close)
		return;
	scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_WARNING, "iSER: %s", why);
	scsitgt__iscsi_conn_dm_error(ic->conn, err);
}

int scsitgt__iser_post_recv(struct iser_conn *ic, uint32_t idx)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uintptr_t)scsitgt__rdma_pool_buf(&ic->rxp, idx);
	sge.length = ic->rxp.buf_size;
	sge.lkey = ic->rxp.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&ic->recvs[idx].w;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_recv(ic->id->qp, &wr, &bad) != 0)
		return -EIO;
	ic->posted++;
	ic->recvs_posted++;
	return 0;
}

/* Post receive buffers not posted yet until @want are with the QP. */
static int ic_post_more(struct iser_conn *ic, uint32_t want)
{
	if (want > ISER_NRECV_MAX)
		want = ISER_NRECV_MAX;
	while (ic->recvs_posted < want && ic->recvs_used < ISER_NRECV_MAX) {
		int rc = scsitgt__iser_post_recv(ic, ic->recvs_used);

		if (rc < 0)
			return rc;
		ic->recvs_used++;
	}
	return 0;
}

/*
 * Login is complete (datamover.h login_complete), the final Login Response comes next. RFC 7145
 * §8 (the target's receive buffers): every command in the CmdSN window may arrive with its
 * unsolicited Data-Out, and immediate and unexpected PDUs come besides. Post what that takes
 * (RFC 7145 §7.3.1: before the final Login Response) and cut the window to what the buffers
 * we have cover.
 */
static int iser_login_complete(struct scsitgt__iscsi_conn *conn,
			       const struct scsitgt__iscsi_dm_login *login, uint32_t *window)
{
	struct iser_conn *ic = scsitgt__iscsi_conn_dm_ctx(conn);
	const struct scsitgt__iscsi_session_params *p = login->params;
	struct scsitgt__iser_credit_params cp;
	uint32_t want, w;

	scsitgt__iser_credit_params_of(&cp, p, login->queue_depth, ISER_UNEXP_RESERVE);
	want = scsitgt__iser_credit_recvs(&cp);
	if (ic_post_more(ic, want) < 0) {
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_WARNING,
					"iSER: cannot post receive buffers");
		return -EIO;
	}
	w = scsitgt__iser_credit_window(&cp, ic->recvs_posted);
	scsitgt__iser_unexp_init(&ic->unexp, p->max_outstanding_unexpected_pdus);
	if (w < *window)
		*window = w;
	scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_DEBUG,
				"iSER: %u receive buffers posted, CmdSN window %u (%u per command)",
				ic->recvs_posted, *window, scsitgt__iser_credit_per_cmd(&cp));
	return 0;
}

/* ---- teardown ---- */

/* Home: a worker's connection released its resources; the id goes, then the connection. */
static void ic_xev_release(struct scsitgt__rdma_xev *x)
{
	struct iser_conn *ic = scsitgt__container_of(x, struct iser_conn, xev);
	struct iser_portal *ip = ic->ip;

	scsitgt__list_remove(&ic->node);
	rdma_destroy_id(ic->id);
	scsitgt__rdma_xev_final(x, ic->w);
	ip_check_done(ip);
}

/* The worker: every event home handed over ran before this. */
static void ic_xev_final(struct scsitgt__rdma_xev *x)
{
	free(scsitgt__container_of(x, struct iser_conn, xev));
}

static void ic_free(struct iser_conn *ic)
{
	struct iser_portal *ip = ic->ip;
	struct scsitgt__iscsi_conn *conn = ic->conn;

	if (ic->qp_created)
		rdma_destroy_qp(ic->id);
	scsitgt__iser_fences_abandon(ic);
	if (ic->id && ic->w == NULL)
		rdma_destroy_id(ic->id);
	if (ic->pools) {
		scsitgt__rdma_pool_destroy(&ic->rxp);
		scsitgt__rdma_pool_destroy(&ic->txp);
	}
	if (ic->cq_reserved)
		scsitgt__rdma_dev_unreserve(ic->dev, ISER_NRECV_MAX + ISER_SQ_DEPTH);
	/* Commands still in backends keep their buffers (and so the memory) themselves. */
	scsitgt__rdma_mem_unuse(ic->mem);
	ic->mem = NULL;
	if (ic->dev)
		scsitgt__rdma_dev_put(ic->dev);
	scsitgt__iser_itt_clear(ic);
	free(ic->recvs);
	free(ic->slots);
	if (ic->w) {
		/* The id and the portal are home's: hand the rest over (see the top). */
		ic->conn = NULL;
		if (conn)
			scsitgt__iscsi_conn_dm_closed(conn);
		else if (ic->h)
			scsitgt__iscsi_handoff_drop(ic->h);
		scsitgt__rdma_xev_release(&ic->xev, scsitgt__iscsi_portal_engine(ip->portal));
		return;
	}
	scsitgt__list_remove(&ic->node);
	free(ic);
	if (conn)
		scsitgt__iscsi_conn_dm_closed(conn);
	ip_check_done(ip);
}

void scsitgt__iser_conn_check_drained(struct iser_conn *ic)
{
	if (!ic->dm_close || ic->busy)
		return;
	/* A refused chain's fence waits for room on the send queue (iser_io.c). */
	scsitgt__iser_fences_post(ic);
	if (ic->posted)
		return;
	ic_free(ic);
}

static void iser_close(struct scsitgt__iscsi_conn *conn)
{
	struct iser_conn *ic = scsitgt__iscsi_conn_dm_ctx(conn);

	if (ic->dm_close)
		return;
	ic->dm_close = true;
	scsitgt__iser_io_cancel(ic);
	/* The QP goes to error: every posted WR completes as flushed. */
	if (!ic->connected || rdma_disconnect(ic->id) != 0) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		if (ic->qp_created)
			ibv_modify_qp(ic->id->qp, &a, IBV_QP_STATE);
	}
	if (ic->st_direct || ic->st_bounce || ic->st_reg)
		scsitgt__iscsi_conn_log(conn, SCSITGT_LOG_DEBUG,
					"iSER: RDMA transfers: %llu in place, %llu copied, %llu "
					"registered per io",
					(unsigned long long)ic->st_direct,
					(unsigned long long)ic->st_bounce,
					(unsigned long long)ic->st_reg);
	scsitgt__iser_conn_check_drained(ic);
}

static const struct scsitgt__iscsi_dm_ops iser_dm_ops = {
	.name = "iser",
	.xmit = scsitgt__iser_xmit,
	.close = iser_close,
	.rdma = true,
	.max_recv_dsl = ISER_RECV_DSL,
	.max_send_dsl = ISER_SEND_SLOT - SCSITGT__ISER_HDR_LEN - ISCSI_BHS_LEN,
	.cmd_init = scsitgt__iser_cmd_init,
	.login_complete = iser_login_complete,
	.task_gone = scsitgt__iser_task_gone,
	.may_ping = scsitgt__iser_may_ping,
};

/* ---- registered memory of the portal, per device and loop ---- */

/* The portal's registered memory of @lp on @dev, registered on first use. Loop: @lp's. */
static int ip_mem_get(struct iser_portal *ip, struct scsitgt__rdma_loop *lp,
		      struct scsitgt__rdma_dev *dev, struct scsitgt__rdma_mem **out)
{
	int rc = scsitgt__rdma_loop_mem_get(lp, dev, ip->mem_bytes, out);

	if (rc < 0)
		scsitgt__iscsi_portal_log(ip->portal, SCSITGT_LOG_ERROR,
					  "cannot register %llu bytes of buffer memory on %s: %s",
					  (unsigned long long)ip->mem_bytes,
					  ibv_get_device_name(dev->verbs->device),
					  scsitgt_strerror(rc));
	return rc;
}

/* Home: a worker loop's drop is back. */
static void ip_drop_back(void *arg)
{
	ip_check_done(arg);
}

/* ---- connection set-up ---- */

static void ic_established(struct iser_conn *ic)
{
	char qpd[160];
	int rc;

	ic->connected = true;
	rc = scsitgt__rdma_qp_set_min_rnr(ic->id->qp);
	if (!ic->conn)
		return;
	if (rc < 0)
		scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_DEBUG,
					"iSER: cannot set the RNR timer (errno %d)", -rc);
	/* As SRP does: the ACK timeout and retry count come from the initiator's CM REQ. */
	if (scsitgt__rdma_qp_describe(ic->id->qp, qpd, sizeof(qpd)) == 0)
		scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_NOTICE, "iSER: QP: %s", qpd);
}

/* An rdma_cm event of the connection, on its loop. */
static void ic_cm_event_here(struct iser_conn *ic, enum rdma_cm_event_type type, int status)
{
	if (ic->conn)
		scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_DEBUG, "iSER: rdma_cm %s (status %d)",
					scsitgt__rdma_cm_event_name(type), status);
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		ic_established(ic);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		/*
		 * The device goes (its resources must be released: the QP, CQ, PD and memory
		 * follow as the connection drains), or the address moved to another port: the
		 * initiator logs in again over the new path.
		 */
		if (ic->conn)
			scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_WARNING,
						"iSER: %s: closing the connection",
						scsitgt__rdma_cm_event_name(type));
		/* fall through */
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (type != RDMA_CM_EVENT_ADDR_CHANGE)
			ic->connected = false;
		if (!ic->dm_close && ic->conn)
			scsitgt__iscsi_conn_dm_error(ic->conn, -ECONNRESET);
		break;
	default:
		break; /* TIMEWAIT_EXIT: nothing left to wait for, the QP is drained by counts */
	}
}

static void ic_xev_here(struct scsitgt__rdma_xev *x, enum rdma_cm_event_type type, int status)
{
	ic_cm_event_here(scsitgt__container_of(x, struct iser_conn, xev), type, status);
}

/* Home (every id's events arrive on the portal's channel): see scsitgt__rdma_xev_deliver(). */
static void ic_cm_event(struct scsitgt__rdma_cm_handler *h, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_conn *ic = scsitgt__container_of(h, struct iser_conn, cmh);

	scsitgt__rdma_xev_deliver(&ic->xev, ic->w, ev);
}

static int ic_setup(struct iser_conn *ic, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_portal *ip = ic->ip;
	struct scsitgt_portal *portal = ip->portal;
	struct scsitgt__iser_cm req;
	struct rdma_conn_param cp;
	struct ibv_port_attr pa;
	uint8_t rep[SCSITGT__ISER_CM_LEN];
	unsigned int rd_depth;
	int rc;

	rc = scsitgt__iser_cm_req_decode(ev->conn.private_data, ev->conn.private_data_len, &req);
	if (rc < 0)
		return rc;
	rc = scsitgt__rdma_dev_get(&ic->dev, &ic->lp->devs, ic->lp->loop, ic->id->verbs, NULL,
				   NULL);
	if (rc < 0)
		return rc;
	rc = ip_mem_get(ip, ic->lp, ic->dev, &ic->mem);
	if (rc < 0)
		return rc;
	scsitgt__rdma_mem_use(ic->mem);
	rc = scsitgt__rdma_dev_reserve(ic->dev, ISER_NRECV_MAX + ISER_SQ_DEPTH);
	if (rc < 0)
		return rc;
	ic->cq_reserved = true;
	/* Selective signaling: Data-In WRITEs complete with the SEND of their response. */
	rc = scsitgt__rdma_qp_create_sel(ic->id, ic->dev, ISER_SQ_DEPTH, ISER_NRECV_MAX, 2);
	if (rc < 0)
		return rc;
	ic->qp_created = true;
	ic->max_msg = 1u << 30;
	if (ibv_query_port(ic->id->verbs, ic->id->port_num, &pa) == 0 && pa.max_msg_sz &&
	    pa.max_msg_sz < ic->max_msg)
		ic->max_msg = pa.max_msg_sz;
	if (ic->max_msg < ISER_RECV_DSL)
		ic->max_msg = ISER_RECV_DSL;
	rc = scsitgt__rdma_pool_init(&ic->rxp, ic->dev->pd, ISER_NRECV_MAX, ISER_RECV_SLOT,
				     IBV_ACCESS_LOCAL_WRITE);
	if (rc == 0) {
		rc = scsitgt__rdma_pool_init(&ic->txp, ic->dev->pd, ISER_NSEND, ISER_SEND_SLOT, 0);
		if (rc < 0)
			scsitgt__rdma_pool_destroy(&ic->rxp);
	}
	if (rc < 0)
		return rc;
	ic->pools = true;
	ic->recvs = calloc(ISER_NRECV_MAX, sizeof(*ic->recvs));
	ic->slots = calloc(ISER_NSEND, sizeof(*ic->slots));
	if (ic->recvs == NULL || ic->slots == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < ISER_NSEND; i++) {
		ic->slots[i].w.done = scsitgt__iser_slot_done;
		ic->slots[i].ic = ic;
		ic->slots[i].idx = i;
	}
	for (uint32_t i = 0; i < ISER_NRECV_MAX; i++) {
		ic->recvs[i].w.done = scsitgt__iser_recv_done;
		ic->recvs[i].ic = ic;
		ic->recvs[i].idx = i;
	}
	/* RFC 7145 §5.1.3: receive buffers are posted before the connection is accepted. */
	rc = ic_post_more(ic, ISER_NRECV_LOGIN);
	if (rc < 0)
		return rc;
	ic->sq_free = ISER_SQ_DEPTH;
	/*
	 * Our RDMA READ depth: the responder resources the initiator offers. The IB CM hands a
	 * REQ's values over from the receiver's point of view (initiator_depth is what we may
	 * initiate), within what our device can keep outstanding.
	 */
	rd_depth = ev->conn.initiator_depth;
	if (rd_depth > (unsigned int)ic->dev->attr.max_qp_init_rd_atom)
		rd_depth = (unsigned int)ic->dev->attr.max_qp_init_rd_atom;
	if (rd_depth == 0)
		rd_depth = 1;
	scsitgt__iser_rdq_init(&ic->rdq, rd_depth);
	rc = scsitgt__iscsi_conn_create_on(&ic->conn, portal, ic->h, &iser_dm_ops, ic,
					   rdma_get_peer_addr(ic->id), rdma_get_local_addr(ic->id));
	if (rc < 0)
		return rc;
	scsitgt__iser_cm_rep_encode(rep);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = rep;
	cp.private_data_len = sizeof(rep);
	/* RDMA READs the initiator may issue to us (ib_iser issues none). */
	cp.responder_resources = ev->conn.responder_resources;
	if (cp.responder_resources > ic->dev->attr.max_qp_rd_atom)
		cp.responder_resources = (uint8_t)ic->dev->attr.max_qp_rd_atom;
	cp.initiator_depth = (uint8_t)rd_depth;
	cp.rnr_retry_count = 7;
	cp.flow_control = 1;
	if (rdma_accept(ic->id, &cp) != 0) {
		/* The iSCSI connection exists: it closes us through iser_close. */
		scsitgt__iscsi_conn_close(ic->conn, "rdma_accept failed");
		return 1;
	}
	if (ic->w)
		scsitgt__iscsi_conn_log(
			ic->conn, SCSITGT_LOG_DEBUG,
			"iSER connection placed on worker %u (all of it runs there)", ic->w->index);
	scsitgt__iscsi_conn_log(ic->conn, SCSITGT_LOG_DEBUG,
				"iSER connection accepted (RDMA READ depth %u, ZBVA %s)", rd_depth,
				req.zbva_not_sup ? "not supported" : "supported");
	return 0;
}

/* Set the connection up on its loop: accepted, or rejected and drained. */
static void ic_start(struct iser_conn *ic, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_portal *ip = ic->ip;
	int rc = ic_setup(ic, ev);

	if (rc == 0 || rc == 1)
		return;
	scsitgt__iscsi_portal_log(ip->portal, SCSITGT_LOG_WARNING, "cannot accept a connection: %s",
				  scsitgt_strerror(rc));
	rdma_reject(ic->id, NULL, 0);
	if (ic->conn) {
		scsitgt__iscsi_conn_close(ic->conn, "iSER setup failed");
		return;
	}
	/* Drain the receives we posted before freeing. */
	ic->dm_close = true;
	if (ic->qp_created && ic->posted) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(ic->id->qp, &a, IBV_QP_STATE);
	}
	scsitgt__iser_conn_check_drained(ic);
}

/* A connection request on its way to the worker that runs the connection. */
struct iser_setup {
	struct scsitgt__msg msg;
	struct iser_conn *ic;
	struct scsitgt__rdma_cm_event ev; /* its private data points into itself: fixed below */
};

static void ic_setup_fn(struct scsitgt__msg *msg)
{
	struct iser_setup *m = scsitgt__container_of(msg, struct iser_setup, msg);

	m->ev.conn.private_data = m->ev.priv;
	ic_start(m->ic, &m->ev);
	free(m);
}

static void ip_connect_request(struct iser_portal *ip, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_setup *m = NULL;
	struct iser_conn *ic = NULL;

	/* The portal's admission, as for TCP; a refused request is rejected. */
	if (!ip->stopping && scsitgt__iscsi_portal_admit(ip->portal) == 0)
		ic = calloc(1, sizeof(*ic));
	if (ic && scsitgt__iscsi_portal_place(ip->portal, &ic->h, &ic->w) < 0) {
		free(ic);
		ic = NULL;
	}
	if (ic && ic->w) {
		m = malloc(sizeof(*m));
		if (m == NULL) {
			scsitgt__iscsi_handoff_drop(ic->h);
			free(ic);
			ic = NULL;
		}
	}
	if (ic == NULL) {
		rdma_reject(ev->id, NULL, 0);
		rdma_destroy_id(ev->id);
		return;
	}
	ic->cmh.event = ic_cm_event;
	ic->xev.here = ic_xev_here;
	ic->xev.release = ic_xev_release;
	ic->xev.final = ic_xev_final;
	ic->ip = ip;
	ic->lp = scsitgt__rdma_loops_at(&ip->loops, ic->w);
	ic->id = ev->id;
	ic->id->context = &ic->cmh;
	ic->outq_tail = &ic->outq;
	scsitgt__iser_rdq_init(&ic->rdq, 1);
	scsitgt__list_init(&ic->rd_posted);
	scsitgt__list_add_tail(&ip->conns, &ic->node);
	if (m == NULL) {
		ic_start(ic, ev);
		return;
	}
	m->msg.fn = ic_setup_fn;
	m->ic = ic;
	m->ev = *ev;
	scsitgt__worker_post(ic->w, &m->msg);
}

/* ---- portal ---- */

static int ip_listen(struct iser_portal *ip)
{
	return scsitgt__rdma_cm_listen(&ip->cm, &ip->cmh, &ip->sa,
				       scsitgt__iscsi_portal_wildcard(ip->portal), ip->backlog,
				       &ip->listen);
}

static void ip_relisten_cb(uv_timer_t *t)
{
	struct iser_portal *ip = t->data;

	if (ip->stopping || ip->listen || ip_listen(ip) == 0) {
		uv_timer_stop(t);
		if (!ip->stopping && ip->listen)
			scsitgt__iscsi_portal_log(ip->portal, SCSITGT_LOG_NOTICE,
						  "listening again");
	}
}

static void ip_cm_event(struct scsitgt__rdma_cm_handler *h, const struct scsitgt__rdma_cm_event *ev)
{
	struct iser_portal *ip = scsitgt__container_of(h, struct iser_portal, cmh);
	int rc;

	switch (ev->type) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		/* The new id inherited the listener's context: it is ours until ic_setup. */
		ip_connect_request(ip, ev);
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		if (ev->id != ip->listen || ip->stopping)
			break;
		/*
		 * The listener's device goes away, or its address moved: let go of the id (the
		 * kernel waits for that before removing a device) and of the memory registered
		 * there, then listen again on the address wherever it lives now.
		 */
		if (ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL && ip->listen->verbs)
			scsitgt__rdma_loops_drop(&ip->loops, false);
		rdma_destroy_id(ip->listen);
		ip->listen = NULL;
		rc = ip_listen(ip);
		scsitgt__iscsi_portal_log(
			ip->portal, rc < 0 ? SCSITGT_LOG_ERROR : SCSITGT_LOG_WARNING,
			"%s; listening again: %s", scsitgt__rdma_cm_event_name(ev->type),
			rc < 0 ? scsitgt_strerror(rc) : "ok");
		if (rc < 0)
			uv_timer_start(&ip->relisten, ip_relisten_cb, 1000, 1000);
		return;
	default:
		break;
	}
	scsitgt__iscsi_portal_log(ip->portal, SCSITGT_LOG_DEBUG, "%s",
				  scsitgt__rdma_cm_event_name(ev->type));
}

static void ip_free(struct iser_portal *ip)
{
	/* The worker loops dropped theirs before (ip_check_done). */
	scsitgt__rdma_loops_fini(&ip->loops);
	free(ip);
}

static void ip_cm_closed(struct scsitgt__rdma_cm *cm)
{
	struct iser_portal *ip = cm->data;
	struct scsitgt_portal *portal = ip->portal;

	ip_free(ip);
	scsitgt__iscsi_portal_listener_gone(portal);
}

static void ip_check_done(struct iser_portal *ip)
{
	if (!ip->stopping || !ip->relisten_closed || !scsitgt__list_empty(&ip->conns) ||
	    ip->cm.ch == NULL || ip->cm.closed)
		return;
	/* Each worker loop lets go of its lists before they are freed. */
	if (!scsitgt__rdma_loops_release(&ip->loops))
		return;
	/* Devices close on their own once their last connection and buffer released them. */
	scsitgt__rdma_cm_close(&ip->cm, ip_cm_closed);
}

static void ip_relisten_closed(uv_handle_t *h)
{
	struct iser_portal *ip = h->data;

	ip->relisten_closed = true;
	ip_check_done(ip);
}

static void ip_stop(struct scsitgt_portal *portal)
{
	struct iser_portal *ip = scsitgt__iscsi_portal_listener_ctx(portal);

	ip->stopping = true;
	if (ip->listen) {
		rdma_destroy_id(ip->listen);
		ip->listen = NULL;
	}
	uv_close((uv_handle_t *)&ip->relisten, ip_relisten_closed);
}

static void ip_failed_cm_closed(struct scsitgt__rdma_cm *cm)
{
	struct iser_portal *ip = cm->data;

	scsitgt__iscsi_portal_discard(ip->portal);
	ip_free(ip);
}

static void ip_failed_timer_closed(uv_handle_t *h)
{
	struct iser_portal *ip = h->data;

	scsitgt__rdma_cm_close(&ip->cm, ip_failed_cm_closed);
}

SCSITGT_EXPORT int scsitgt_iser_portal_create(struct scsitgt_portal **out,
					      struct scsitgt_engine *engine,
					      const struct scsitgt_portal_opts *opts)
{
	struct scsitgt_portal_opts o;
	struct scsitgt_portal *portal;
	struct iser_portal *ip;
	struct sockaddr_storage sa;
	int rc;

	/* engine, TPGT, address and the connection limits, as for a TCP portal */
	/* A NULL @out is refused there (before, the portal was made and *out written). */
	rc = scsitgt__iscsi_portal_new(out ? &portal : NULL, engine, opts, &o, &sa,
				       "scsitgt_iser_portal_create");
	if (rc < 0)
		return rc;
	ip = calloc(1, sizeof(*ip));
	if (ip == NULL) {
		scsitgt__iscsi_portal_discard(portal);
		return -ENOMEM;
	}
	scsitgt__iscsi_portal_set_listener(portal, "iSER", ip_stop, ip);
	ip->portal = portal;
	ip->cmh.event = ip_cm_event;
	ip->cm.data = ip;
	ip->backlog = o.backlog;
	ip->mem_bytes = o.rdma_buffer_bytes ? o.rdma_buffer_bytes : ISER_MEM_DEFAULT;
	memcpy(&ip->sa, &sa, sizeof(sa));
	scsitgt__list_init(&ip->conns);
	/* Home's loop, and each worker's when connections run there. */
	if (scsitgt__rdma_loops_init(&ip->loops, engine, engine->conn_workers, ip_drop_back, ip) <
	    0) {
		scsitgt__iscsi_portal_discard(portal);
		free(ip);
		return -ENOMEM;
	}
	rc = scsitgt__rdma_cm_open(&ip->cm, engine->loop);
	if (rc < 0) {
		scsitgt__iscsi_portal_discard(portal);
		scsitgt__rdma_loops_fini(&ip->loops);
		free(ip);
		return rc == -ENOENT ? -ENODEV : rc;
	}
	uv_timer_init(engine->loop, &ip->relisten);
	ip->relisten.data = ip;
	rc = ip_listen(ip);
	if (rc == 0 && ip->listen->verbs) {
		/* Bound to one device: register its buffer memory now, failing cleanly here. */
		struct scsitgt__rdma_dev *dev;
		struct scsitgt__rdma_mem *mem;

		rc = scsitgt__rdma_dev_get(&dev, &ip->loops.v[0].devs, engine->loop,
					   ip->listen->verbs, NULL, NULL);
		if (rc == 0) {
			rc = ip_mem_get(ip, &ip->loops.v[0], dev, &mem);
			/* Connections on workers register theirs there: home's would lie idle. */
			if (rc == 0 && ip->loops.n > 1)
				scsitgt__rdma_loop_drop(&ip->loops.v[0], false);
			scsitgt__rdma_dev_put(dev);
		}
		if (rc < 0) {
			rdma_destroy_id(ip->listen);
			ip->listen = NULL;
		}
	}
	if (rc < 0) {
		uv_close((uv_handle_t *)&ip->relisten, ip_failed_timer_closed);
		return rc;
	}
	scsitgt__iscsi_portal_register(portal, ntohs(rdma_get_src_port(ip->listen)), &sa);
	*out = portal;
	return 0;
}
