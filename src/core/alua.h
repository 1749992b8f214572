/* SPDX-License-Identifier: MIT */
/*
 * Asymmetric logical unit access (SPC-5 §5.16) inside the core: the target's port groups
 * (public API in include/libscsitgt/alua.h), the access-state check of CDB parsing, REPORT
 * TARGET PORT GROUPS and SET TARGET PORT GROUPS.
 */
#ifndef SCSITGT_CORE_ALUA_H
#define SCSITGT_CORE_ALUA_H

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "libscsitgt/alua.h"

/* Free the ALUA state of a target being freed (target.c). */
void scsitgt__alua_free(struct scsitgt_target *tgt);

/* TPGS field of standard INQUIRY (SPC-5 §6.7.2), 0 when ALUA is off. */
uint8_t scsitgt__alua_tpgs(const struct scsitgt_target *tgt);

/*
 * The target port group VPD 83h reports for @sess (SPC-5 §7.7.6.8): with ALUA on, the group of
 * the nexus's port (false when it has none); with ALUA off, none (false): TPGS 00b.
 */
bool scsitgt__alua_port_group(const struct scsitgt__session *sess, uint16_t *group_id);
/* SPC-5 §6.7.2 MULTIP: ALUA is on and its groups list more than one target port (several
 * portal groups, or the ports of other gateways). Takes tgt->alua_lock. */
bool scsitgt__alua_multiport(const struct scsitgt_target *tgt);
/* Whether a target port group of @tgt lists relative target port @rel_port_id (the host's
 * ALUA configuration). Takes tgt->alua_lock. */
bool scsitgt__alua_port_listed(const struct scsitgt_target *tgt, uint16_t rel_port_id);
/* Whether a target port group of @tgt lists a relative target port for which @other(@arg,
 * port) is true; @other runs under tgt->alua_lock and must not take it. */
bool scsitgt__alua_port_any(const struct scsitgt_target *tgt,
			    bool (*other)(void *arg, uint16_t rel_port_id), void *arg);
/* Whether the target offers @row's command: REPORT TARGET PORT GROUPS only with ALUA (TPGS
 * not 00b), SET TARGET PORT GROUPS only with explicit ALUA; every other row. */
bool scsitgt__alua_offers(const struct scsitgt_target *tgt, const struct scsitgt__cdb_def *row);

/* The ALUA step of CDB parsing: refuse @row through a port in standby, unavailable or
 * transitioning state (SPC-5 §5.16.2.4). */
enum scsitgt__sense_reason scsitgt__alua_check(const struct scsitgt__cmd *cmd,
					       const struct scsitgt__cdb_def *row);

/* The initiator port (name and ISID) whose SET TARGET PORT GROUPS the request hook
 * (scsitgt_alua_opts.request_cb) running on this thread answers; NULL outside the hook. For
 * the hook's logs (src/backend/rbd_gateway.c). */
const char *scsitgt__alua_requester(void);

/* REPORT TARGET PORT GROUPS (SPC-5 §6.36) and SET TARGET PORT GROUPS (SPC-5 §6.50). */
enum scsitgt__sense_reason scsitgt__alua_parse_rtpg(struct scsitgt__cmd *cmd);
void scsitgt__alua_rtpg(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__alua_parse_stpg(struct scsitgt__cmd *cmd);
void scsitgt__alua_stpg(struct scsitgt__cmd *cmd);

#endif /* SCSITGT_CORE_ALUA_H */
