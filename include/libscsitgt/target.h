/* SPDX-License-Identifier: MIT */
/**
 * @file target.h
 * Targets: named SCSI target devices holding LUNs and an initiator access list.
 */
#ifndef LIBSCSITGT_TARGET_H
#define LIBSCSITGT_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A SCSI target (for iSCSI: one target node, named by its IQN/EUI/NAA name). Opaque. */
struct scsitgt_target;

/** Options of scsitgt_target_create(). Initialise with scsitgt_target_opts_init(). */
struct scsitgt_target_opts {
	/** sizeof(struct scsitgt_target_opts), set by scsitgt_target_opts_init(). */
	size_t size;
	/**
	 * Target name (for iSCSI an "iqn.", "eui." or "naa." name, RFC 7143 §4.2.7), 1..223
	 * bytes of a-z, A-Z, 0-9, '-', '.', ':'. Required. Copied. A name of those characters
	 * without one of the formats (iqn.yyyy-mm.reversed.domain[:any], eui. and 16 hex
	 * digits, naa. and 16 or 32) is created with one SCSITGT_LOG_WARNING line naming the
	 * rule it misses; it is not refused, as hosts name targets "iqn.x" today.
	 */
	const char *name;
	/** Human-readable alias (iSCSI TargetAlias). Optional, may be NULL. Copied. */
	const char *alias;
	/**
	 * Sessions (I_T nexuses) the target serves at once, over every portal and initiator;
	 * further logins fail (iSCSI: "out of resources"). A login that reinstates one of the
	 * initiator's own sessions is not refused. 0: no limit. Default 256.
	 */
	uint32_t max_sessions;
	/**
	 * Commands each LUN of the target holds at once, all nexuses together; a new command
	 * beyond that ends with TASK SET FULL status (SAM-5 §5.3) without running. 0: no limit.
	 * Default 1024. With worker loops the count is not locked: commands arriving at the same
	 * instant on several loops may exceed it by up to one per other loop.
	 */
	uint32_t max_lun_commands;
	/**
	 * Bytes of Data-In buffers the commands of one session (I_T nexus) may hold at once:
	 * READs and other commands returning data allocate their buffer when they arrive and keep
	 * it until the initiator has taken the data, so an initiator that stops reading would
	 * otherwise pin its whole command window of large transfers. A command that would exceed
	 * the limit ends with TASK SET FULL status without running; one command always proceeds.
	 * 0: no limit. Default 268435456 (256 MiB).
	 */
	uint64_t max_read_buffer_bytes;
};

/**
 * Fill @p opts with the defaults.
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_target_opts_init(struct scsitgt_target_opts *opts, size_t size);

/**
 * Create a target in @p engine. It becomes visible on every portal of the engine.
 *
 * @param out    Receives the target.
 * @param engine The engine.
 * @param opts   Options (name required).
 * @return 0 on success; -EINVAL if an argument is NULL, the name is empty, longer than 223
 *         bytes or has characters outside RFC 7143 §4.2.7.2; -EEXIST if the engine already
 *         has a target of that name, also one whose scsitgt_target_destroy() has not called
 *         back yet (its LUNs may still hold their storage: an RBD image's lock, an open
 *         file), so a host that replaces a target by one of the same name creates it from
 *         the destroy callback (examples/scsitgtd_apply_target.c does); -ENOMEM.
 *
 * Loop: home of @p engine.
 */
SCSITGT_EXPORT int scsitgt_target_create(struct scsitgt_target **out, struct scsitgt_engine *engine,
					 const struct scsitgt_target_opts *opts);

/**
 * Destroy a target: log out its sessions, drain their commands, destroy its LUNs.
 *
 * @param tgt    The target. Dead after the call.
 * @param cb     Called once when done, from the loop, status 0. Optional, may be NULL.
 * @param cb_arg Argument of @p cb.
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_target_destroy(struct scsitgt_target *tgt, scsitgt_done_cb cb,
					   void *cb_arg);

/**
 * Visitor of scsitgt_engine_foreach_target().
 *
 * @param arg The argument given to scsitgt_engine_foreach_target().
 * @param tgt One target.
 * @return 0 to continue, anything else to stop the walk.
 */
typedef int (*scsitgt_target_visit_cb)(void *arg, struct scsitgt_target *tgt);

/**
 * Walk the engine's targets in creation order. Targets being destroyed are skipped. The
 * visitor may destroy the target it is given (the walk continues with the next one), and may
 * create targets (they may or may not be visited).
 *
 * @param engine The engine.
 * @param cb     The visitor, called synchronously.
 * @param arg    Its argument.
 * @return 0 after visiting every target; the visitor's non-zero return value if it stopped the
 *         walk; -EINVAL if @p engine or @p cb is NULL.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_engine_foreach_target(struct scsitgt_engine *engine,
						 scsitgt_target_visit_cb cb, void *arg);

/**
 * Find a target by name. iSCSI names compare case-insensitively (RFC 7143 §4.2.7.1).
 *
 * @param engine The engine.
 * @param name   The target name.
 * @return The target; NULL if there is none by that name (or it is being destroyed) or an
 *         argument is NULL.
 *
 * Loop: home.
 */
SCSITGT_EXPORT struct scsitgt_target *scsitgt_engine_find_target(struct scsitgt_engine *engine,
								 const char *name);

/**
 * The target's name.
 *
 * @param tgt The target.
 * @return The name given at creation; valid while the target lives. Loop: home.
 */
SCSITGT_EXPORT const char *scsitgt_target_get_name(const struct scsitgt_target *tgt);

/**
 * Allow an initiator to log in. While the list is empty every initiator may log in; once it
 * holds a name, only listed initiators may (others get "authorization failure").
 *
 * @param tgt            The target.
 * @param initiator_name The initiator name (iSCSI InitiatorName), compared exactly. Copied.
 * @return 0; -EINVAL on a NULL or empty name; -EEXIST if already listed; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_add_initiator(struct scsitgt_target *tgt,
						const char *initiator_name);

/**
 * Remove an initiator from the access list. Existing sessions stay up.
 *
 * @param tgt            The target.
 * @param initiator_name The name given to scsitgt_target_add_initiator().
 * @return 0; -EINVAL on NULL; -ENOENT if not listed.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_remove_initiator(struct scsitgt_target *tgt,
						   const char *initiator_name);

/**
 * Restrict the source addresses logins to @p tgt may come from. While the target's address
 * list is empty any address may log in; once it holds a range, only connections from an
 * address inside one of its ranges may (others get "authorization failure"). This applies to
 * every initiator, in addition to the name list (scsitgt_target_add_initiator()) and to the
 * initiator's own ranges (scsitgt_target_add_initiator_address()). Nexuses without a network
 * address (SRP) are refused while an address list applies. SendTargets leaves out targets a
 * discovery session's initiator may not log in to from its address.
 *
 * @param tgt  The target.
 * @param cidr A numeric IPv4 or IPv6 address with an optional prefix length, e.g.
 *             "192.0.2.0/24", "127.0.0.2", "2001:db8::/32", "::1". Host bits beyond the
 *             prefix are ignored. IPv4 ranges also match IPv4-mapped IPv6 peers.
 * @return 0; -EINVAL for a NULL argument or a malformed range; -EEXIST if the same range is
 *         listed already; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_add_address(struct scsitgt_target *tgt, const char *cidr);

/**
 * Remove a range from the target's address list. Existing sessions stay up.
 *
 * @param tgt  The target.
 * @param cidr The range as given to scsitgt_target_add_address() (compared after parsing).
 * @return 0; -EINVAL for a NULL argument or a malformed range; -ENOENT if not listed.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_remove_address(struct scsitgt_target *tgt, const char *cidr);

/**
 * Restrict the source addresses one initiator may log in to @p tgt from. While the
 * initiator has no range of its own it may come from any address the target allows; once it
 * has one, only from inside its ranges. This does not put the name on the login list.
 *
 * @param tgt            The target.
 * @param initiator_name The initiator name, compared case-insensitively. Copied.
 * @param cidr           A range as for scsitgt_target_add_address().
 * @return 0; -EINVAL for a NULL or empty argument or a malformed range; -EEXIST if that range
 *         is listed already for the initiator; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_add_initiator_address(struct scsitgt_target *tgt,
							const char *initiator_name,
							const char *cidr);

/**
 * Remove a range from an initiator's own address list. Existing sessions stay up.
 *
 * @param tgt            The target.
 * @param initiator_name The initiator name.
 * @param cidr           The range.
 * @return 0; -EINVAL for a NULL argument or a malformed range; -ENOENT if not listed.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_remove_initiator_address(struct scsitgt_target *tgt,
							   const char *initiator_name,
							   const char *cidr);

/**
 * Map LUN @p lun_id of @p tgt to an initiator (LUN masking). The first mapping turns masking
 * on for the target (see scsitgt_target_set_lun_masking()): from then on each initiator sees
 * only the LUNs mapped to it or to every initiator. A LUN it does not see is absent from its
 * REPORT LUNS data, its standard INQUIRY reports peripheral qualifier 011b, every other
 * command to it ends with ILLEGAL REQUEST, LOGICAL UNIT NOT SUPPORTED, and task management
 * functions addressed to it answer "LUN does not exist". The LUN need not exist yet. The
 * initiator's nexuses get REPORTED LUNS DATA HAS CHANGED (SPC-5 §5.14).
 *
 * @param tgt            The target.
 * @param initiator_name The initiator name (compared case-insensitively; copied), or NULL to
 *                       map the LUN to every initiator.
 * @param lun_id         The LUN number, 0..16383. The LUN keeps this number.
 * @return 0; -EINVAL for a NULL target, an empty name or a LUN number above 16383; -EEXIST if
 *         the LUN is mapped to that initiator already; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_map_lun(struct scsitgt_target *tgt, const char *initiator_name,
					  uint64_t lun_id);

/**
 * Undo scsitgt_target_map_lun(). Commands the initiator already sent to the LUN finish;
 * new ones are refused. Masking stays on. The initiator's nexuses get REPORTED LUNS DATA HAS
 * CHANGED on the LUNs they still see.
 *
 * @param tgt            The target.
 * @param initiator_name The initiator name, or NULL for the every-initiator mapping.
 * @param lun_id         The LUN number.
 * @return 0; -EINVAL for a NULL target or an empty name; -ENOENT if the LUN is not mapped
 *         that way.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_unmap_lun(struct scsitgt_target *tgt, const char *initiator_name,
					    uint64_t lun_id);

/**
 * Make LUN @p lun_id read-only for one initiator, or for every initiator (a read-only mapping,
 * as LIO's write-protected mapped LUNs): its medium-write commands (WRITE, WRITE SAME, UNMAP,
 * COMPARE AND WRITE, FORMAT UNIT, EXTENDED COPY into the LUN, ...) end with DATA PROTECT,
 * WRITE PROTECTED (07h/27h/00h) before any field is checked, and MODE SENSE reports WP; other
 * initiators write as usual. Independent of LUN masking; the LUN need not exist yet. Applies
 * to commands received from then on; no unit attention is raised.
 *
 * @param tgt            The target.
 * @param initiator_name The initiator name (compared case-insensitively; copied), or NULL for
 *                       every initiator.
 * @param lun_id         The LUN number, 0..16383.
 * @param read_only      true to make it read-only, false to lift a read-only mapping made
 *                       with the same name (or NULL).
 * @return 0 (also when nothing changes); -EINVAL for a NULL target, an invalid name or a LUN
 *         number above 16383; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_set_lun_read_only(struct scsitgt_target *tgt,
						    const char *initiator_name, uint64_t lun_id,
						    bool read_only);

/**
 * Turn LUN masking on or off. Off (the default until the first scsitgt_target_map_lun()),
 * every initiator that may log in sees every LUN. On, an initiator sees only the LUNs mapped
 * to it or to every initiator, and none while nothing is mapped. Mappings are kept either
 * way. Every nexus of the target gets REPORTED LUNS DATA HAS CHANGED when the setting changes.
 *
 * @param tgt     The target.
 * @param enabled Whether masking applies.
 * @return 0; -EINVAL for a NULL target.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_set_lun_masking(struct scsitgt_target *tgt, bool enabled);

/**
 * Attach a host pointer to the target.
 *
 * @param tgt      The target.
 * @param userdata Any pointer.
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_target_set_userdata(struct scsitgt_target *tgt, void *userdata);

/**
 * The pointer set with scsitgt_target_set_userdata().
 *
 * @param tgt The target.
 * @return The pointer, NULL if never set. Loop: home.
 */
SCSITGT_EXPORT void *scsitgt_target_get_userdata(const struct scsitgt_target *tgt);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_TARGET_H */
