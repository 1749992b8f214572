/* SPDX-License-Identifier: MIT */
/* iSER flow control: RDMA READ queue, receive credits, unexpected PDUs. See iser_flow.h. */
#include <stddef.h>
#include <string.h>

#include "transport/iscsi/datamover.h"
#include "transport/iser/iser_flow.h"

/* ---- RDMA READ queue ---- */

void scsitgt__iser_rdq_init(struct scsitgt__iser_rdq *q, unsigned int depth)
{
	q->head = NULL;
	q->tail = &q->head;
	q->depth = depth ? depth : 1;
	q->busy = 0;
	q->queued = 0;
	q->max_busy = 0;
}

void scsitgt__iser_rdq_push(struct scsitgt__iser_rdq *q, struct scsitgt__iser_rdq_item *it)
{
	it->next = NULL;
	*q->tail = it;
	q->tail = &it->next;
	q->queued++;
}

struct scsitgt__iser_rdq_item *scsitgt__iser_rdq_next(struct scsitgt__iser_rdq *q)
{
	struct scsitgt__iser_rdq_item *it = q->head;

	if (it == NULL || q->busy >= q->depth)
		return NULL;
	q->head = it->next;
	if (q->head == NULL)
		q->tail = &q->head;
	it->next = NULL;
	q->queued--;
	if (++q->busy > q->max_busy)
		q->max_busy = q->busy;
	return it;
}

void scsitgt__iser_rdq_unget(struct scsitgt__iser_rdq *q, struct scsitgt__iser_rdq_item *it)
{
	it->next = q->head;
	q->head = it;
	if (q->tail == &q->head)
		q->tail = &it->next;
	q->queued++;
	if (q->busy)
		q->busy--;
}

void scsitgt__iser_rdq_done(struct scsitgt__iser_rdq *q)
{
	if (q->busy)
		q->busy--;
}

struct scsitgt__iser_rdq_item *scsitgt__iser_rdq_flush(struct scsitgt__iser_rdq *q)
{
	struct scsitgt__iser_rdq_item *l = q->head;

	q->head = NULL;
	q->tail = &q->head;
	q->queued = 0;
	return l;
}

struct scsitgt__iser_rdq_item *scsitgt__iser_rdq_take_itt(struct scsitgt__iser_rdq *q, uint32_t itt)
{
	struct scsitgt__iser_rdq_item *taken = NULL, **ttail = &taken;
	struct scsitgt__iser_rdq_item **pp = &q->head;

	while (*pp) {
		struct scsitgt__iser_rdq_item *it = *pp;

		if (it->itt != itt) {
			pp = &it->next;
			continue;
		}
		*pp = it->next;
		it->next = NULL;
		*ttail = it;
		ttail = &it->next;
		q->queued--;
	}
	q->tail = pp;
	return taken;
}

/* ---- receive credits ---- */

void scsitgt__iser_credit_params_of(struct scsitgt__iser_credit_params *cp,
				    const struct scsitgt__iscsi_session_params *p,
				    uint32_t queue_depth, uint32_t reserve)
{
	uint32_t unexp = p->max_outstanding_unexpected_pdus;

	memset(cp, 0, sizeof(*cp));
	cp->queue_depth = queue_depth;
	/* The negotiated value, not our offer (reviewe D3): each unsolicited Data-Out of the
	 * first burst is at most this long, so a smaller one means more SENDs per command. */
	cp->recv_dsl = p->target_recv_dsl;
	cp->first_burst = p->first_burst;
	cp->initial_r2t = p->initial_r2t;
	cp->immediate_data = p->immediate_data;
	cp->unexpected = unexp ? unexp : reserve;
}

uint32_t scsitgt__iser_credit_per_cmd(const struct scsitgt__iser_credit_params *p)
{
	uint32_t dsl = p->recv_dsl ? p->recv_dsl : 1;
	uint64_t n;

	/*
	 * RFC 7143 §13.11/§13.14: with InitialR2T=No up to FirstBurstLength bytes come
	 * unsolicited; immediate data may be as short as one byte, so in the worst case all of
	 * the first burst arrives in Data-Out PDUs of at most TargetRecvDataSegmentLength each
	 * (RFC 7145 §6.2). Solicited data never costs a receive: it is pulled by RDMA READ.
	 */
	if (p->initial_r2t || p->first_burst == 0)
		return 1;
	n = 1 + ((uint64_t)p->first_burst + dsl - 1) / dsl;
	/* Capped, never wrapped: a wrap to 0 would divide by zero in the window below. */
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t scsitgt__iser_credit_recvs(const struct scsitgt__iser_credit_params *p)
{
	uint64_t n = (uint64_t)p->queue_depth * scsitgt__iser_credit_per_cmd(p) +
		     (p->unexpected ? p->unexpected : 1);

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t scsitgt__iser_credit_window(const struct scsitgt__iser_credit_params *p, uint32_t posted)
{
	uint32_t reserve = p->unexpected ? p->unexpected : 1;
	uint32_t w;

	if (posted <= reserve)
		return 1;
	w = (posted - reserve) / scsitgt__iser_credit_per_cmd(p);
	if (w > p->queue_depth)
		w = p->queue_depth;
	return w ? w : 1;
}

/* ---- unexpected PDUs ---- */

void scsitgt__iser_unexp_init(struct scsitgt__iser_unexp *u, uint32_t limit)
{
	u->limit = limit;
	u->n = 0;
}

bool scsitgt__iser_unexp_can_send(const struct scsitgt__iser_unexp *u)
{
	return scsitgt__iser_unexp_can_queue(u, 0);
}

bool scsitgt__iser_unexp_can_queue(const struct scsitgt__iser_unexp *u, uint32_t queued)
{
	uint32_t cap = u->limit < SCSITGT__ISER_UNEXP_TRACK ? u->limit : SCSITGT__ISER_UNEXP_TRACK;

	return u->limit == 0 || (uint64_t)u->n + queued < cap;
}

void scsitgt__iser_unexp_sent(struct scsitgt__iser_unexp *u, bool ping, uint32_t value)
{
	if (u->limit == 0 || u->n >= SCSITGT__ISER_UNEXP_TRACK)
		return;
	u->out[u->n].ping = ping;
	u->out[u->n].value = value;
	u->n++;
}

static void unexp_drop(struct scsitgt__iser_unexp *u, uint32_t i)
{
	u->out[i] = u->out[--u->n];
}

bool scsitgt__iser_unexp_pong(struct scsitgt__iser_unexp *u, uint32_t ttt)
{
	for (uint32_t i = 0; i < u->n; i++) {
		if (u->out[i].ping && u->out[i].value == ttt) {
			unexp_drop(u, i);
			return true;
		}
	}
	return false;
}

void scsitgt__iser_unexp_ack(struct scsitgt__iser_unexp *u, uint32_t exp_stat_sn)
{
	for (uint32_t i = 0; i < u->n;) {
		/* RFC 1982: value < exp_stat_sn within half the number space. */
		int32_t d = (int32_t)(exp_stat_sn - u->out[i].value);

		if (!u->out[i].ping && d > 0)
			unexp_drop(u, i);
		else
			i++;
	}
}
