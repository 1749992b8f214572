/* SPDX-License-Identifier: MIT */
/*
 * SRP I_T nexuses (SRP r16a §3.1: all the RDMA channels of one initiator port to one target
 * port) and how they reach their loop.
 *
 * Nexuses on workers (issue 18; engine->conn_workers, docs/threading.md). A nexus runs on one
 * loop with every channel of it, so that its commands, its task management (which looks
 * tasks up across its channels, §6.7) and its asynchronous event reports never cross loops:
 * the least-loaded worker when its first channel logs in (scsitgt__worker_pick(), counted as
 * one connection), else home. Home keeps what every login reads and changes: the port's list
 * of nexuses, each nexus's count of channels (max_channels, MULTI and SINGLE, §6.2.2) and
 * whether it still takes channels, the core session (created and destroyed on home, its
 * commands bound to the nexus's shard) and the host's events. A channel is admitted on home,
 * counted in its nexus there, and handed to the nexus's loop, which sets it up and accepts it
 * (srp_portal.c). Home reaches the channels of a nexus only by messages to its loop: close
 * them all (SINGLE, target removal, port shutdown: close_msg, posted once) and announce a unit
 * attention (srp_aer.c). When the loop has released a channel, home lets go of its rdma_cm id
 * and of its place in the nexus (scsitgt__srp_nexus_leave()); the last one ends the nexus on
 * home and the nexus is freed on its loop with the channel's FINAL message, after every
 * message home posted there before (each loop's messages run in posting order).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/shard.h"
#include "core/stats.h"
#include "transport/srp/srp_int.h"

static void hex16(char *out, const uint8_t id[16])
{
	out[0] = '0';
	out[1] = 'x';
	for (int i = 0; i < 16; i++)
		snprintf(&out[2 + 2 * i], 3, "%02x", id[i]);
}

bool scsitgt__srp_nexus_here(const struct srp_nexus *nx)
{
	return scsitgt__worker_is_self(nx->port->engine, nx->w);
}

static struct srp_nexus *nexus_find(struct scsitgt_srp_portal *port, const uint8_t iport[16])
{
	for (struct scsitgt__list *p = port->nexuses.next; p != &port->nexuses; p = p->next) {
		struct srp_nexus *nx = scsitgt__container_of(p, struct srp_nexus, node);

		if (!nx->closing && memcmp(nx->iport, iport, 16) == 0)
			return nx;
	}
	return NULL;
}

static int nexus_create(struct srp_nexus **out, struct scsitgt_srp_portal *port,
			const struct scsitgt__srp_login_req *req)
{
	struct scsitgt_engine *engine = port->engine;
	struct scsitgt__nexus_info info;
	struct srp_nexus *nx;
	char iname[40], tname[40];
	int rc;

	nx = calloc(1, sizeof(*nx));
	if (nx == NULL)
		return -ENOMEM;
	nx->port = port;
	memcpy(nx->iport, req->initiator_port_id, 16);
	scsitgt__list_init(&nx->chans);
	/* SPC-5 §7.6.4.5 (SCSI RDMA Protocol): ports are named by their 128-bit identifiers. */
	hex16(iname, req->initiator_port_id);
	hex16(tname, req->target_port_id);
	snprintf(nx->name, sizeof(nx->name), "%s", iname);
	memset(&info, 0, sizeof(info));
	info.protocol_id = SCSITGT__PROTO_SRP;
	info.initiator_name = iname;
	info.initiator_port = iname;
	info.target_port = tname;
	info.rel_port_id = port->opts.rel_port_id;
	info.tpg_id = port->opts.rel_port_id;
	/* Its channels and commands run where it is placed (core/shard.h). */
	nx->w = engine->conn_workers ? scsitgt__worker_pick(engine) : NULL;
	info.shard = nx->w ? nx->w->index + 1 : 0;
	nx->shard = &engine->shards[info.shard];
	rc = scsitgt__session_create(&nx->core, port->tgt, &info, &scsitgt__srp_fabric_ops, nx);
	if (rc < 0) {
		if (nx->w)
			scsitgt__worker_unpick(nx->w);
		free(nx);
		return rc;
	}
	scsitgt__list_add_tail(&port->nexuses, &nx->node);
	if (nx->w)
		scsitgt__log(&engine->log, SCSITGT_LOG_DEBUG, SCSITGT__SRP_SUBSYS,
			     "I_T nexus %s placed on worker %u (its channels run there)", nx->name,
			     nx->w->index);
	*out = nx;
	return 0;
}

static void nexus_free_fn(struct scsitgt__msg *msg)
{
	scsitgt__srp_nexus_free(scsitgt__container_of(msg, struct srp_nexus, free_msg));
}

/* Free a nexus without channels on its loop, after every message home posted there before. */
static void nexus_free_on_loop(struct srp_nexus *nx)
{
	if (nx->w == NULL) {
		scsitgt__srp_nexus_free(nx);
		return;
	}
	nx->free_msg.fn = nexus_free_fn;
	scsitgt__worker_post(nx->w, &nx->free_msg);
}

uint32_t scsitgt__srp_nexus_admit(struct srp_nexus **out, struct scsitgt_srp_portal *port,
				  const struct scsitgt__srp_login_req *req, bool multi,
				  const char *peer, uint8_t *mc_result)
{
	enum scsitgt__srp_mc_action action;
	struct srp_nexus *nx;
	uint32_t reason;
	int rc;

	nx = nexus_find(port, req->initiator_port_id);
	reason = scsitgt__srp_multichannel(multi, nx ? nx->nchans : 0, port->opts.max_channels,
					   &action, mc_result);
	if (reason)
		return reason;
	if (action != SRP_MC_JOIN) {
		/* §6.2.2 MULTI-CHANNEL ACTION: SINGLE ends the other channels of the nexus. */
		if (action == SRP_MC_NEW_TERMINATE)
			scsitgt__srp_nexus_close(nx, SRP_TLO_MULTICHAN_SINGLE,
						 "a new login with multi-channel action SINGLE");
		rc = nexus_create(&nx, port, req);
		if (rc == -ENOMEM)
			return SRP_REJ_INSUFFICIENT_RESOURCES;
		if (rc < 0) {
			scsitgt__log(&port->engine->log, SCSITGT_LOG_WARNING, SCSITGT__SRP_SUBSYS,
				     "no I_T nexus for %s: %s", peer, scsitgt_strerror(rc));
			return SRP_REJ_UNABLE_ESTABLISH;
		}
		scsitgt__event_session(nx->core, SCSITGT_EVENT_SESSION_LOGIN, peer);
	}
	nx->nchans++;
	if (port->stopping || nx->closing) {
		/*
		 * The host's SESSION_LOGIN callback destroyed the port or kicked the session, which
		 * events.h allows: the channel would be set up on a port that is gone, or join a
		 * nexus nobody closes again. Refuse the login; the nexus ends with it.
		 */
		if (scsitgt__srp_nexus_leave(nx))
			nexus_free_on_loop(nx);
		return SRP_REJ_UNABLE_ESTABLISH;
	}
	*out = nx;
	return 0;
}

/*
 * The nexus's loop: close every channel it has. Closing the last one can free the nexus (on
 * home, a channel without a worker is freed at once and takes its ended nexus along), so
 * nothing of @nx is read after that close: not even the list head a foreach would read next.
 */
static void nexus_close_here(struct srp_nexus *nx, int tlo_reason, const char *why)
{
	struct scsitgt__list *head = &nx->chans;
	struct scsitgt__list *pos = head->next;

	while (pos != head) {
		struct srp_ch *c = scsitgt__container_of(pos, struct srp_ch, nx_node);
		struct scsitgt__list *next = pos->next;
		bool last = next == head;

		scsitgt__srp_ch_close(c, tlo_reason, why);
		if (last)
			break;
		pos = next;
	}
}

static void nexus_close_fn(struct scsitgt__msg *msg)
{
	struct srp_nexus *nx = scsitgt__container_of(msg, struct srp_nexus, close_msg);

	nexus_close_here(nx, nx->close_reason, nx->close_why);
}

void scsitgt__srp_nexus_close(struct srp_nexus *nx, int tlo_reason, const char *why)
{
	if (nx->closing)
		return;
	nx->closing = true;
	if (nx->w == NULL) {
		nexus_close_here(nx, tlo_reason, why);
		return;
	}
	/* Written before the post, read there after it: the message carries them. */
	nx->close_reason = tlo_reason;
	nx->close_why = why;
	nx->close_msg.fn = nexus_close_fn;
	scsitgt__worker_post(nx->w, &nx->close_msg);
}

bool scsitgt__srp_nexus_leave(struct srp_nexus *nx)
{
	struct scsitgt_srp_portal *port = nx->port;

	if (--nx->nchans)
		return false;
	/* The last channel: I_T nexus loss. */
	scsitgt__list_remove(&nx->node);
	scsitgt__log(&port->engine->log, SCSITGT_LOG_NOTICE, SCSITGT__SRP_SUBSYS,
		     "I_T nexus %s ended", nx->name);
	scsitgt__event_session(nx->core, SCSITGT_EVENT_SESSION_LOGOUT, NULL);
	scsitgt__session_destroy(nx->core);
	if (nx->w)
		scsitgt__worker_unpick(nx->w);
	return true;
}

void scsitgt__srp_nexus_free(struct srp_nexus *nx)
{
	free(nx);
}
