/* SPDX-License-Identifier: MIT */
/*
 * Observability hooks of the core (core/stats.c, core/events.c): command counters and latency
 * of LUNs and sessions, and the engine's event callback. Counting is plain increments on the
 * home loop, so the hooks are cheap and need no locks.
 */
#ifndef SCSITGT_CORE_STATS_H
#define SCSITGT_CORE_STATS_H

#include <stdint.h>
#include <uv.h>

#include "core/cmd.h"
#include "core/core.h"

struct scsitgt__session;

/*
 * A command entered the core (setup): stamp it for the latency histogram, unless its fabric
 * already gave the time its request was read (scsitgt__cmd_set_arrival(), core/fabric.h).
 */
static inline void scsitgt__stats_cmd_start(struct scsitgt__cmd *cmd)
{
	if (cmd->start_ns == 0)
		cmd->start_ns = uv_hrtime();
}

/* A command's status is ready and goes to the fabric: count it on its LUN and session. */
void scsitgt__stats_cmd_done(struct scsitgt__cmd *cmd);
/* A command is destroyed without having been delivered (aborted, nexus lost). */
void scsitgt__stats_cmd_aborted(struct scsitgt__cmd *cmd);
/* @lun's counters and latency histogram (@lat_us: SCSITGT_LATENCY_BUCKETS, may be NULL) since
 * it was created: the sum of its shard parts, each loaded relaxed while they may change. Never
 * reset: a reader that restarts from zero keeps its own base (scsitgt_lun_reset_stats(), LOG
 * SELECT). */
void scsitgt__stats_lun_counters(const struct scsitgt_lun *lun, struct scsitgt_cmd_counters *out,
				 uint64_t *lat_us);
/* A task management function arrived on @sess for the SAM-5 LUN field @lun (may be NULL). */
void scsitgt__stats_tmf(struct scsitgt__session *sess, const uint8_t lun[8]);
/* The latency bucket of @us microseconds (exposed for tests). */
unsigned int scsitgt__stats_bucket(uint64_t us);

/* events.c: emit an event to the engine's callback, if any. @ev->size is set here. */
void scsitgt__event_emit(struct scsitgt_engine *engine, struct scsitgt_event *ev);
/* Session events: @type is SCSITGT_EVENT_SESSION_LOGIN or _LOGOUT. @addr may be NULL (keeps
 * what an earlier login event recorded on the session). */
void scsitgt__event_session(struct scsitgt__session *sess, enum scsitgt_event_type type,
			    const char *addr);
/* A TMF arrived on @sess for LUN @lun_id (@lun when it exists); @function is an enum
 * scsitgt_tmf_function code. */
void scsitgt__event_tmf(struct scsitgt__session *sess, struct scsitgt_lun *lun, uint64_t lun_id,
			uint8_t function);
/* A fabric refused a login: names as sent, already escaped (NULL when none), @addr the peer. */
void scsitgt__event_login_failed(struct scsitgt_engine *engine, struct scsitgt_target *tgt,
				 const char *initiator_name, const char *target_name,
				 const char *addr, uint16_t status, const char *reason);
/* A fabric closes a connection on an error (enum scsitgt_conn_error @kind): @sess its nexus
 * (NULL during login or discovery), else @tgt the target the login named (or NULL). */
void scsitgt__event_conn_error(struct scsitgt_engine *engine, struct scsitgt__session *sess,
			       struct scsitgt_target *tgt, const char *addr, uint8_t kind,
			       const char *reason);
/* LUN state events (offline/online), no nexus. */
void scsitgt__event_lun_state(struct scsitgt_lun *lun, enum scsitgt_event_type type);
/*
 * ALUA: target port group @group of @lun went from access state @old_state to @new_state
 * (SPC-5 Table 149 codes). For core/alua.c; @lun may be NULL for a target-wide group change,
 * then @tgt names the target.
 */
void scsitgt__event_alua_changed(struct scsitgt_target *tgt, struct scsitgt_lun *lun,
				 uint16_t group, uint8_t old_state, uint8_t new_state);

#endif /* SCSITGT_CORE_STATS_H */
