/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous event reports (SRP r16a §6.10), with scsitgt_srp_portal_opts.aer (opt-in: Linux
 * ib_srp logs each one as an error and drops it, docs/srp.md): a unit attention the core queues
 * for an I_T nexus (fabric_ops.unit_attention) is also announced with an SRP_AER_REQ on one
 * channel of the nexus, carrying the sense data of the condition. The condition stays pending in the core and
 * is reported on the next command all the same: the report only tells the initiator early. At
 * most SRP_TGT_REQ_MAX of our requests are outstanding on a channel (each answer needs a
 * receive buffer kept for it); further events wait in a short queue, and duplicates are
 * dropped.
 *
 * The core calls the hook on home (a reset, a reservation change, a LUN added: core/ua.c) or
 * on the nexus's own loop (COMMANDS CLEARED BY ANOTHER INITIATOR, core/tmf_xshard.c). The
 * channels are their nexus's loop's (srp_nexus.c), so from home the report goes there by
 * message; the nexus is freed on its loop only after every message home posted there before,
 * and the core calls the hook only for a nexus not on its way out, so the pointer travels.
 * From any other loop (a third one) the report is posted to the nexus's loop as well, never
 * queued where it was raised (debug builds assert that it is queued on the nexus's loop); but
 * then nothing orders the message before the nexus's FINAL, so the core must raise none there
 * (it does not: only srp_nexus's unit test raises one on a third loop, with the nexus held).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/sense.h"
#include "core/shard.h"
#include "transport/srp/srp_int.h"

/* A unit attention on its way to the nexus's loop. */
struct srp_ua_msg {
	struct scsitgt__msg msg;
	struct srp_nexus *nx;
	uint64_t lun_id;
	enum scsitgt__sense_reason reason;
};

static void aer_flush(struct scsitgt__deferred *d)
{
	struct srp_ch *ch = scsitgt__container_of(d, struct srp_ch, aer_flush);

	ch->aer_flush_pending = false;
	ch->holds--;
	/* Out of any core call now: the pump sends what the queue holds. */
	ch->busy++;
	scsitgt__srp_ch_leave(ch);
}

/* Queue a report on a channel of @nx. Loop: @nx's (its channels are touched by it alone). */
static void nexus_ua_here(struct srp_nexus *nx, uint64_t lun_id, enum scsitgt__sense_reason reason)
{
	struct srp_ch *ch = NULL;

	assert(scsitgt__srp_nexus_here(nx));
	for (struct scsitgt__list *p = nx->chans.next; p != &nx->chans; p = p->next) {
		struct srp_ch *c = scsitgt__container_of(p, struct srp_ch, nx_node);

		if (c->connected && !c->closing) {
			ch = c;
			break;
		}
	}
	if (ch == NULL)
		return;
	for (unsigned int i = 0; i < ch->aer_n; i++) {
		if (ch->aerq[i].reason == reason && ch->aerq[i].lun_id == lun_id)
			return;
	}
	if (ch->aer_n == SRP_AER_QUEUE)
		return;
	ch->aerq[ch->aer_n].lun_id = lun_id;
	ch->aerq[ch->aer_n].reason = reason;
	ch->aer_n++;
	if (ch->aer_flush_pending)
		return;
	/* The core may be in the middle of anything: send from the loop, holding the channel. */
	ch->aer_flush_pending = true;
	ch->holds++;
	ch->aer_flush.fn = aer_flush;
	scsitgt__shard_defer(nx->shard, &ch->aer_flush);
}

static void ua_fn(struct scsitgt__msg *msg)
{
	struct srp_ua_msg *m = scsitgt__container_of(msg, struct srp_ua_msg, msg);

	nexus_ua_here(m->nx, m->lun_id, m->reason);
	free(m);
}

void scsitgt__srp_unit_attention(struct scsitgt__session *sess, uint64_t lun_id,
				 enum scsitgt__sense_reason reason)
{
	struct srp_nexus *nx = sess->fabric_ctx;
	struct srp_ua_msg *m;

	/* Opt-in (the port's options are read-only once it exists, so any loop may read them). */
	if (nx == NULL || !nx->port->opts.aer)
		return;
	if (scsitgt__srp_nexus_here(nx)) {
		nexus_ua_here(nx, lun_id, reason);
		return;
	}
	m = malloc(sizeof(*m));
	if (m == NULL) {
		/* Only the early report is lost: the condition stays pending in the core. */
		scsitgt__log(&nx->port->engine->log, SCSITGT_LOG_WARNING, SCSITGT__SRP_SUBSYS,
			     "I_T nexus %s: out of memory, an asynchronous event report is lost",
			     nx->name);
		return;
	}
	m->msg.fn = ua_fn;
	m->nx = nx;
	m->lun_id = lun_id;
	m->reason = reason;
	scsitgt__loop_post(nx->port->engine, nx->w, &m->msg);
}

void scsitgt__srp_ch_send_aers(struct srp_ch *ch)
{
	while (ch->aer_n && ch->tgt_reqs < SRP_TGT_REQ_MAX && !ch->closing) {
		const struct scsitgt__sense_info *si = scsitgt__sense_lookup(ch->aerq[0].reason);
		struct scsitgt__srp_credits saved = ch->cred;
		uint8_t sense[SCSITGT_SENSE_BUF_SIZE], lun[8];
		uint8_t iu[SRP_AER_REQ_LEN + SCSITGT_SENSE_BUF_SIZE];
		size_t slen, n;

		/* Fixed format (SPC-5 §4.4.3): what every initiator parses. */
		slen = scsitgt__sense_encode(sense, false, si->key, si->asc, si->ascq, NULL);
		scsitgt__lun_encode(ch->aerq[0].lun_id, lun);
		n = scsitgt__srp_aer_req_encode(
			iu, ch->ti_iu_len < sizeof(iu) ? ch->ti_iu_len : sizeof(iu), 0,
			scsitgt__srp_credits_grant(&ch->cred), ch->next_tag++, lun, sense, slen);
		if (n == 0 || scsitgt__srp_ch_send_own(ch, iu, n, false) < 0) {
			ch->cred = saved; /* retried on the next pump */
			return;
		}
		ch->tgt_reqs++;
		ch->aer_n--;
		memmove(&ch->aerq[0], &ch->aerq[1], ch->aer_n * sizeof(ch->aerq[0]));
	}
}
