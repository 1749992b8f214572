/* SPDX-License-Identifier: MIT */
/*
 * Unit attention conditions (SAM-5 §5.14, SPC-5 §5.14): one queue per I_T nexus per LUN.
 * A nexus's first command to a LUN finds POWER ON, RESET, OR BUS DEVICE RESET OCCURRED.
 */
#ifndef SCSITGT_CORE_UA_H
#define SCSITGT_CORE_UA_H

#include "core/fabric.h"

/* Conditions kept per nexus and LUN; more are merged per the precedence rules in ua.c. */
#define SCSITGT__UA_QUEUE_MAX 8

/*
 * The unit attention step of CDB parsing, once the row is known. Returns the unit attention to
 * report (and clears it), or SCSITGT__SR_OK. For REQUEST SENSE the pending condition becomes
 * the command's sense data instead, and REPORT LUNS clears REPORTED LUNS DATA HAS CHANGED:
 * cmd->exec is replaced, and the queue is touched only when the command runs, once its CDB
 * passed the later checks.
 */
enum scsitgt__sense_reason scsitgt__ua_check(struct scsitgt__cmd *cmd);

/* Establish @reason for nexus @sess on LUN @lun_id. */
void scsitgt__ua_establish(struct scsitgt__session *sess, uint64_t lun_id,
			   enum scsitgt__sense_reason reason);
/* Establish @reason on LUN @lun_id for every nexus of @tgt except @except (may be NULL). */
void scsitgt__ua_establish_all(struct scsitgt_target *tgt, uint64_t lun_id,
			       const struct scsitgt__session *except,
			       enum scsitgt__sense_reason reason);
/* Whether @sess has a condition pending on @lun_id (QUERY ASYNCHRONOUS EVENT, tests). */
bool scsitgt__ua_pending(const struct scsitgt__session *sess, uint64_t lun_id,
			 enum scsitgt__sense_reason *first);

/* Hooks. */
/* A LUN was added to or removed from @tgt: REPORTED LUNS DATA HAS CHANGED on the others. */
void scsitgt__ua_luns_changed(struct scsitgt_target *tgt, uint64_t lun_id, bool removed);
/* The inventory nexus @s sees changed: REPORTED LUNS DATA HAS CHANGED on every LUN it has
 * seen and still sees, queued under one hold of its lock (LUICLR, ua.c). Loop: home. */
void scsitgt__ua_nexus_luns_changed(struct scsitgt__session *s);
/* MODE SELECT on nexus @by changed LUN @lun_id's parameters: MODE PARAMETERS CHANGED for the
 * others. Loop: home (the walk of the target's nexuses). */
void scsitgt__ua_mode_params_changed(struct scsitgt__session *by, uint64_t lun_id);
/* The nexus ends (scsitgt__session_destroy()): every LUN it saw remembers it, so that the same
 * nexus back finds I_T NEXUS LOSS OCCURRED (SAM-5 §6.3.4). Loop: home. */
void scsitgt__ua_session_lost(struct scsitgt__session *sess);
/* The nexus is going away: free its state. */
void scsitgt__ua_session_free(struct scsitgt__session *sess);

#endif /* SCSITGT_CORE_UA_H */
