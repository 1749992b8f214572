/* SPDX-License-Identifier: MIT */
/*
 * Counters of LUNs and sessions and their snapshot API (include/libscsitgt/stats.h). Every
 * counter lives on its object's home loop and is bumped with plain increments: readers call
 * the snapshot functions on that loop too, so no locks or atomics are needed.
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

static void stats_count(struct scsitgt_cmd_counters *c, const struct scsitgt__cmd *cmd,
			bool is_read, bool is_write, uint8_t key)
{
	if (is_read) {
		c->read_cmds++;
	} else if (is_write) {
		c->write_cmds++;
	} else {
		c->other_cmds++;
	}
	switch (cmd->status) {
	case SAM_STAT_GOOD:
	case SAM_STAT_CONDITION_MET:
		if (is_read)
			c->bytes_read += cmd->data_len;
		else if (is_write)
			c->bytes_written += cmd->xfer_len;
		break;
	case SAM_STAT_CHECK_CONDITION:
		c->check_conditions[key]++;
		break;
	case SAM_STAT_RESERVATION_CONFLICT:
		c->reservation_conflicts++;
		break;
	case SAM_STAT_BUSY:
	case SAM_STAT_TASK_SET_FULL:
		c->busy++;
		break;
	default:
		break;
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

		stats_count(&lun->stats.cmds, cmd, is_read, is_write, key);
		lun->stats.lat_us[scsitgt__stats_bucket(us)]++;
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
		cmd->sess->stats.aborted++;
	if (cmd->lun)
		cmd->lun->stats.cmds.aborted++;
}

void scsitgt__stats_tmf(struct scsitgt__session *sess, const uint8_t lun[8])
{
	struct scsitgt_lun *l;

	if (sess == NULL)
		return;
	sess->stats.tmfs++;
	l = lun ? scsitgt__target_find_lun(sess->tgt, scsitgt__lun_decode(lun)) : NULL;
	if (l)
		l->stats.cmds.tmfs++;
}

SCSITGT_EXPORT int scsitgt_lun_get_stats(const struct scsitgt_lun *lun,
					 struct scsitgt_lun_stats *stats)
{
	struct scsitgt_lun_stats s;
	size_t n;

	if (lun == NULL || stats == NULL || stats->size < sizeof(size_t))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.cmds = lun->stats.cmds;
	s.inflight = lun->inflight;
	s.offline = lun->offline;
	memcpy(s.latency_us, lun->stats.lat_us, sizeof(s.latency_us));
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
	memset(&lun->stats, 0, sizeof(lun->stats));
	return 0;
}

SCSITGT_EXPORT int scsitgt_target_foreach_session(struct scsitgt_target *tgt,
						  scsitgt_session_stats_cb cb, void *cb_arg)
{
	struct scsitgt__list *p, *next;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL || cb == NULL)
		return -EINVAL;
	for (p = tgt->sessions.next; p != &tgt->sessions; p = next) {
		struct scsitgt__session *sess =
			scsitgt__container_of(p, struct scsitgt__session, node);
		struct scsitgt_session_stats s;
		int rc;

		next = p->next;
		memset(&s, 0, sizeof(s));
		s.size = sizeof(s);
		s.initiator_name = sess->initiator_name;
		s.initiator_port = sess->initiator_port;
		s.initiator_addr = sess->initiator_addr;
		s.target_port = sess->target_port;
		s.cmds = sess->stats;
		s.inflight = sess->ncmds;
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
	if (sess->kicked || sess->tgt->destroying)
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
