/* SPDX-License-Identifier: MIT */
/*
 * Counters of LUNs and sessions and their snapshot API (include/libscsitgt/stats.h). A
 * session's counters are written by its shard's loop, a LUN's by each shard in its own part
 * (struct scsitgt__lun_part): one writer per counter, which bumps it with a relaxed atomic
 * load and store (no locked read-modify-write, no lock), so that the snapshots, on the home
 * loop, load them (relaxed) while commands run on other loops and sum a LUN's parts. A
 * snapshot is therefore a sum of each counter's latest value, not an instant of all of them.
 *
 * Nothing but its shard ever writes a counter, not even a reset: a store of zero from home
 * between a shard's load and store would be undone by that store (the counts before the reset
 * would come back) or lose that count. A reset instead records what the parts add up to then
 * (lun->stats_base, on home) and a snapshot reports the sum less that base: every count is in
 * the base or after it, never both, and a counter a snapshot loads is never below what the
 * reset loaded of it before (one location's loads on one thread never go back). LOG SELECT's
 * reset of the General Statistics page keeps its own base the same way (spc_log.c), so neither
 * reset moves the other's view.
 */
#include <errno.h>
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/stats.h"

unsigned int scsitgt__stats_bucket(uint64_t us)
{
	unsigned int b = 0;

	/* floor(log2(us)), with 0 and 1 both in bucket 0. */
	while (us > 1 && b < SCSITGT_LATENCY_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

/* The sense key of fixed (70h/71h) or descriptor (72h/73h) sense data (SPC-5 §4.4). */
static uint8_t stats_sense_key(const struct scsitgt__cmd *cmd)
{
	uint8_t code;

	if (cmd->sense_len < 3)
		return 0;
	code = cmd->sense[0] & 0x7f;
	if (code == 0x72 || code == 0x73)
		return cmd->sense[1] & 0x0f;
	return cmd->sense[2] & 0x0f;
}

/* Bump a counter only its shard writes: relaxed load and store, readable by snapshots. */
static inline void ctr_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* The counters of @from added to @to, each loaded relaxed (the struct is all uint64_t). */
static void ctr_sum(struct scsitgt_cmd_counters *to, const struct scsitgt_cmd_counters *from)
{
	const uint64_t *f = (const uint64_t *)(const void *)from;
	uint64_t *t = (uint64_t *)(void *)to;

	for (size_t i = 0; i < sizeof(*from) / sizeof(uint64_t); i++)
		t[i] += __atomic_load_n(&f[i], __ATOMIC_RELAXED);
}

_Static_assert(sizeof(struct scsitgt_cmd_counters) % sizeof(uint64_t) == 0,
	       "the counters are uint64_t");

static void stats_count(struct scsitgt_cmd_counters *c, const struct scsitgt__cmd *cmd,
			bool is_read, bool is_write, uint8_t key)
{
	if (is_read) {
		ctr_add(&c->read_cmds, 1);
	} else if (is_write) {
		ctr_add(&c->write_cmds, 1);
	} else {
		ctr_add(&c->other_cmds, 1);
	}
	switch (cmd->status) {
	case SAM_STAT_GOOD:
	case SAM_STAT_CONDITION_MET:
		if (is_read)
			ctr_add(&c->bytes_read, cmd->data_len);
		else if (is_write)
			ctr_add(&c->bytes_written, cmd->xfer_len);
		break;
	case SAM_STAT_CHECK_CONDITION:
		ctr_add(&c->check_conditions[key], 1);
		break;
	case SAM_STAT_RESERVATION_CONFLICT:
		ctr_add(&c->reservation_conflicts, 1);
		break;
	case SAM_STAT_BUSY:
	case SAM_STAT_TASK_SET_FULL:
		ctr_add(&c->busy, 1);
		break;
	default:
		break;
	}
}

/* @n counts of @from less those of @base. */
static void ctr_less(uint64_t *to, const uint64_t *from, const uint64_t *base, size_t n)
{
	for (size_t i = 0; i < n; i++)
		to[i] = from[i] - base[i];
}

void scsitgt__stats_lun_counters(const struct scsitgt_lun *lun, struct scsitgt_cmd_counters *out,
				 uint64_t *lat_us)
{
	memset(out, 0, sizeof(*out));
	if (lat_us)
		memset(lat_us, 0, SCSITGT_LATENCY_BUCKETS * sizeof(*lat_us));
	for (unsigned int i = 0; i < lun->engine->nshards; i++) {
		const struct scsitgt__lun_part *part = &lun->shard_part[i];

		ctr_sum(out, &part->stats.cmds);
		for (unsigned int b = 0; lat_us && b < SCSITGT_LATENCY_BUCKETS; b++)
			lat_us[b] += __atomic_load_n(&part->stats.lat_us[b], __ATOMIC_RELAXED);
	}
}

/* SBC-4 §5.11-§5.16: the READ commands (the rest of the table is "other" or a write). */
static bool stats_is_read(uint8_t opcode)
{
	return opcode == SBC_READ_6 || opcode == SBC_READ_10 || opcode == SBC_READ_12 ||
	       opcode == SBC_READ_16;
}

static bool stats_changes_reservation(uint8_t opcode)
{
	switch (opcode) {
	case SPC_PERSISTENT_RESERVE_OUT:
	case SPC_RESERVE_6:
	case SPC_RELEASE_6:
	case SPC_RESERVE_10:
	case SPC_RELEASE_10:
		return true;
	default:
		return false;
	}
}

static void stats_cmd_events(struct scsitgt__cmd *cmd, uint8_t key)
{
	struct scsitgt_event ev;
	bool resv = cmd->status == SAM_STAT_GOOD && cmd->cdb_len &&
		    stats_changes_reservation(cmd->cdb[0]);
	bool err = cmd->status == SAM_STAT_CHECK_CONDITION &&
		   (key == SENSE_MEDIUM_ERROR || key == SENSE_HARDWARE_ERROR);

	if (!resv && !err)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.type = resv ? SCSITGT_EVENT_RESERVATION_CHANGED : SCSITGT_EVENT_LUN_ERROR;
	ev.target = cmd->sess->tgt;
	ev.lun = cmd->lun;
	ev.lun_id = cmd->lun_id;
	ev.initiator_name = cmd->sess->initiator_name;
	ev.initiator_port = cmd->sess->initiator_port;
	ev.initiator_addr = cmd->sess->initiator_addr;
	ev.opcode = cmd->cdb[0];
	if (resv && cmd->cdb[0] == SPC_PERSISTENT_RESERVE_OUT)
		ev.service_action = cmd->cdb[1] & 0x1f;
	if (err) {
		uint8_t code = cmd->sense[0] & 0x7f;
		bool desc = code == 0x72 || code == 0x73;

		ev.sense_key = key;
		/* ASC/ASCQ: bytes 2-3 of descriptor format, 12-13 of fixed format. */
		if (desc && cmd->sense_len >= 4) {
			ev.asc = cmd->sense[2];
			ev.ascq = cmd->sense[3];
		} else if (!desc && cmd->sense_len >= 14) {
			ev.asc = cmd->sense[12];
			ev.ascq = cmd->sense[13];
		}
	}
	scsitgt__event_emit(cmd->sess->tgt->engine, &ev);
}

void scsitgt__stats_cmd_done(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	uint32_t flags = cmd->def ? cmd->def->flags : 0;
	bool is_write = (flags & SCSITGT__CDB_F_WRITE) != 0;
	bool is_read = !is_write && cmd->cdb_len && stats_is_read(cmd->cdb[0]);
	uint8_t key = cmd->status == SAM_STAT_CHECK_CONDITION ? stats_sense_key(cmd) : 0;

	cmd->stats_done = true;
	if (cmd->sess)
		stats_count(&cmd->sess->stats, cmd, is_read, is_write, key);
	if (lun) {
		uint64_t us = (uv_hrtime() - cmd->start_ns) / 1000u;
		struct scsitgt__lun_part *part = scsitgt__lun_part(lun, cmd->shard);

		stats_count(&part->stats.cmds, cmd, is_read, is_write, key);
		ctr_add(&part->stats.lat_us[scsitgt__stats_bucket(us)], 1);
	}
	if (cmd->sess && lun && lun->tgt->engine->event_cb)
		stats_cmd_events(cmd, key);
}

void scsitgt__stats_cmd_aborted(struct scsitgt__cmd *cmd)
{
	if (cmd->stats_done || cmd->state == SCSITGT__CMD_NEW)
		return;
	cmd->stats_done = true;
	if (cmd->sess)
		ctr_add(&cmd->sess->stats.aborted, 1);
	if (cmd->lun)
		ctr_add(&scsitgt__lun_part(cmd->lun, cmd->shard)->stats.cmds.aborted, 1);
}

void scsitgt__stats_tmf(struct scsitgt__session *sess, const uint8_t lun[8])
{
	struct scsitgt_lun *l;

	if (sess == NULL)
		return;
	ctr_add(&sess->stats.tmfs, 1);
	l = lun ? scsitgt__target_find_lun(sess->tgt, scsitgt__lun_decode(lun)) : NULL;
	if (l)
		ctr_add(&scsitgt__lun_part(l, sess->shard)->stats.cmds.tmfs, 1);
}

SCSITGT_EXPORT int scsitgt_lun_get_stats(const struct scsitgt_lun *lun,
					 struct scsitgt_lun_stats *stats)
{
	struct scsitgt_lun_stats s;
	size_t n;

	if (lun == NULL)
		return -EINVAL;
	if (stats == NULL || stats->size < sizeof(size_t))
		return scsitgt__log_refused(&lun->tgt->engine->log, "core", -EINVAL,
					    "scsitgt_lun_get_stats: %s LUN %llu: %s",
					    lun->tgt->name, (unsigned long long)lun->id,
					    stats == NULL ?
						    "stats is NULL" :
						    "stats size below sizeof(size_t) (set "
						    "it to sizeof(struct scsitgt_lun_stats))");
	memset(&s, 0, sizeof(s));
	scsitgt__stats_lun_counters(lun, &s.cmds, s.latency_us);
	/* Since the last reset (see the top of the file). */
	ctr_less((uint64_t *)(void *)&s.cmds, (const uint64_t *)(const void *)&s.cmds,
		 (const uint64_t *)(const void *)&lun->stats_base.cmds,
		 sizeof(s.cmds) / sizeof(uint64_t));
	ctr_less(s.latency_us, s.latency_us, lun->stats_base.lat_us, SCSITGT_LATENCY_BUCKETS);
	s.inflight = scsitgt__lun_inflight(lun);
	s.offline = lun->offline;
	n = stats->size < sizeof(s) ? stats->size : sizeof(s);
	s.size = n;
	memcpy(stats, &s, n);
	return 0;
}

SCSITGT_EXPORT int scsitgt_lun_reset_stats(struct scsitgt_lun *lun)
{
	SCSITGT__ASSERT_HOME(lun ? lun->engine : NULL);
	if (lun == NULL)
		return -EINVAL;
	/* The shards' counters are theirs: the snapshots subtract what they count now. */
	scsitgt__stats_lun_counters(lun, &lun->stats_base.cmds, lun->stats_base.lat_us);
	return 0;
}

SCSITGT_EXPORT int scsitgt_target_foreach_session(struct scsitgt_target *tgt,
						  scsitgt_session_stats_cb cb, void *cb_arg)
{
	struct scsitgt__list *p, *next;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (cb == NULL)
		return scsitgt__log_refused(&tgt->engine->log, "core", -EINVAL,
					    "scsitgt_target_foreach_session: target %s: cb is NULL",
					    tgt->name);
	for (p = tgt->sessions.next; p != &tgt->sessions; p = next) {
		struct scsitgt__session *sess =
			scsitgt__container_of(p, struct scsitgt__session, node);
		struct scsitgt_session_stats s;
		int rc;

		next = p->next;
		/* An ending nexus is gone for the host (its LOGOUT event is out) and its fabric's
		 * session may be freed already on its worker: not handed out (review30 F1). */
		if (atomic_load(&sess->leaving))
			continue;
		memset(&s, 0, sizeof(s));
		s.size = sizeof(s);
		s.initiator_name = sess->initiator_name;
		s.initiator_port = sess->initiator_port;
		s.initiator_addr = sess->initiator_addr;
		s.target_port = sess->target_port;
		ctr_sum(&s.cmds, &sess->stats);
		s.inflight = __atomic_load_n(&sess->ncmds, __ATOMIC_RELAXED);
		s.session = (struct scsitgt_session *)sess;
		rc = cb(cb_arg, &s);
		if (rc != 0)
			return rc;
	}
	return 0;
}

SCSITGT_EXPORT int scsitgt_session_kick(struct scsitgt_session *session)
{
	struct scsitgt__session *sess = (struct scsitgt__session *)session;

	if (sess == NULL)
		return -EINVAL;
	if (sess->kicked || sess->tgt->destroying || atomic_load(&sess->leaving))
		return -EALREADY;
	sess->kicked = true;
	scsitgt__log(&sess->tgt->engine->log, SCSITGT_LOG_NOTICE, "core",
		     "ending the session of %s on host request", sess->initiator_port);
	if (sess->ops->session_kick)
		sess->ops->session_kick(sess);
	else
		sess->ops->session_shutdown(sess);
	return 0;
}

SCSITGT_EXPORT struct scsitgt_lun *scsitgt_target_get_lun(const struct scsitgt_target *tgt,
							  uint64_t id)
{
	struct scsitgt_lun *lun;

	if (tgt == NULL)
		return NULL;
	lun = scsitgt__target_find_lun(tgt, id);
	return lun && !lun->drain.destroying ? lun : NULL;
}
