/* SPDX-License-Identifier: MIT */
/**
 * @file alua.h
 * Asymmetric logical unit access (ALUA, SPC-5 §5.16): target port groups of a target, their
 * access states, and the hook through which a cluster manager drives or vetoes changes.
 *
 * A target's ports are named by their relative target port identifier; for iSCSI that is the
 * portal group tag of the portal (scsitgt_portal_get_tpgt()). Each port belongs to at most one
 * target port group. Every LUN of the target shares the groups (SPC-5 §5.16.2.1: the access
 * state belongs to the target port group, not to the logical unit).
 *
 * Once ALUA is configured (scsitgt_alua_configure() with a non-zero mode), standard INQUIRY
 * reports TPGS, VPD page 83h carries the group of the port a command came through, REPORT
 * TARGET PORT GROUPS answers, and commands through a port in the standby, unavailable or
 * transitioning state are refused as SPC-5 §5.16.2.4 requires (NOT READY, 04h/0Bh, 04h/0Ch,
 * 04h/0Ah). Ports that belong to no group are reported in no group and run every command.
 *
 * Every state change, whether made through scsitgt_alua_set_state() (implicit) or by an
 * initiator's SET TARGET PORT GROUPS (explicit), establishes the unit attention ASYMMETRIC
 * ACCESS STATE CHANGED (2Ah/06h) on every LUN for every I_T nexus of the target, except the
 * nexus that sent the SET TARGET PORT GROUPS (SPC-5 §5.16.2.6).
 *
 * All calls: home loop of the target's engine.
 */
#ifndef LIBSCSITGT_ALUA_H
#define LIBSCSITGT_ALUA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Target port asymmetric access states (SPC-5 §6.36.2 Table 241), wire values. */
enum scsitgt_alua_state {
	SCSITGT_ALUA_ACTIVE_OPTIMIZED = 0x0,
	SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED = 0x1,
	SCSITGT_ALUA_STANDBY = 0x2,
	SCSITGT_ALUA_UNAVAILABLE = 0x3,
	SCSITGT_ALUA_TRANSITIONING = 0xf,
};

/** ALUA modes, the TPGS field of standard INQUIRY (SPC-5 §6.7.2). */
enum {
	/** The host changes states (scsitgt_alua_set_state()). */
	SCSITGT_ALUA_IMPLICIT = 1u << 0,
	/** Initiators change states with SET TARGET PORT GROUPS. */
	SCSITGT_ALUA_EXPLICIT = 1u << 1,
};

/** Most target port groups per target. */
#define SCSITGT_ALUA_MAX_GROUPS 32
/** Most target ports per group. */
#define SCSITGT_ALUA_MAX_PORTS 32

/** Return value of the SET TARGET PORT GROUPS hook: accepted; the host sets the state itself. */
#define SCSITGT_ALUA_REQUEST_DEFERRED 1

/**
 * Asked before an initiator's SET TARGET PORT GROUPS changes the state of a group.
 *
 * @param arg       The argument given in scsitgt_alua_opts.request_arg.
 * @param tgt       The target.
 * @param group_id  The target port group.
 * @param old_state Its current state.
 * @param new_state The state requested.
 * @return 0 to accept; SCSITGT_ALUA_REQUEST_DEFERRED to accept while the host drives the
 *         transition itself; a negative errno to veto: the command then fails with HARDWARE
 *         ERROR, SET TARGET PORT GROUPS COMMAND FAILED (67h/0Ah) and no group changes. When one
 *         command names several groups the hook is asked for each before any is changed, so
 *         it may have accepted some of them when it vetoes another.
 *
 * Runs on the home loop, inside the command. A transition that takes time (a cluster lock to
 * take first, say) is driven by the host: it either vetoes and calls scsitgt_alua_set_state()
 * later, or, so that the initiator's request succeeds, it moves the group to
 * SCSITGT_ALUA_TRANSITIONING with scsitgt_alua_set_state() inside the hook and returns
 * SCSITGT_ALUA_REQUEST_DEFERRED: the command then completes with GOOD once every group named
 * was accepted, the deferred group keeps the state the host gave it (the initiator sees
 * TRANSITIONING in REPORT TARGET PORT GROUPS, SPC-5 §5.16.2.5), and the host sets the final
 * state later (an implicit change, with its unit attention).
 */
typedef int (*scsitgt_alua_request_cb)(void *arg, struct scsitgt_target *tgt, uint16_t group_id,
				       enum scsitgt_alua_state old_state,
				       enum scsitgt_alua_state new_state);

/** Options of scsitgt_alua_configure(). Initialise with scsitgt_alua_opts_init(). */
struct scsitgt_alua_opts {
	/** sizeof(struct scsitgt_alua_opts), set by scsitgt_alua_opts_init(). */
	size_t size;
	/** SCSITGT_ALUA_IMPLICIT and/or SCSITGT_ALUA_EXPLICIT; 0 turns ALUA off (default). */
	uint32_t modes;
	/**
	 * IMPLICIT TRANSITION TIME of REPORT TARGET PORT GROUPS' extended header, in seconds
	 * (0: unspecified). Default 0.
	 */
	uint8_t implicit_transition_secs;
	/** Hook asked before explicit changes; NULL accepts every request. Default NULL. */
	scsitgt_alua_request_cb request_cb;
	/** Argument of @ref request_cb. */
	void *request_arg;
};

/**
 * Fill @p opts with the defaults (ALUA off).
 *
 * @param opts The options.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_alua_opts_init(struct scsitgt_alua_opts *opts, size_t size);

/**
 * Turn ALUA on or off for a target and set its modes and hook. Groups stay as they are.
 *
 * @param tgt  The target.
 * @param opts The modes and the hook. Copied.
 * @return 0; -EINVAL on NULL arguments or unknown mode bits; -ENOMEM.
 */
SCSITGT_EXPORT int scsitgt_alua_configure(struct scsitgt_target *tgt,
					  const struct scsitgt_alua_opts *opts);

/**
 * Create a target port group.
 *
 * @param tgt      The target.
 * @param group_id Its identifier, 1..65535 (reported by REPORT TARGET PORT GROUPS and VPD 83h).
 * @param state    Its initial state.
 * @return 0; -EINVAL on a bad argument or state; -EEXIST if the group exists; -ENOSPC beyond
 *         SCSITGT_ALUA_MAX_GROUPS; -ENOMEM.
 */
SCSITGT_EXPORT int scsitgt_alua_group_create(struct scsitgt_target *tgt, uint16_t group_id,
					     enum scsitgt_alua_state state);

/**
 * Destroy a target port group; its ports belong to no group afterwards.
 *
 * @param tgt      The target.
 * @param group_id The group.
 * @return 0; -EINVAL on NULL; -ENOENT if there is no such group.
 */
SCSITGT_EXPORT int scsitgt_alua_group_destroy(struct scsitgt_target *tgt, uint16_t group_id);

/**
 * Put a target port into a group.
 *
 * @param tgt         The target.
 * @param group_id    The group.
 * @param rel_port_id The relative target port identifier; for iSCSI the portal group tag of
 *                    the portal (scsitgt_portal_get_tpgt()), 1..65535.
 * @return 0; -EINVAL on a bad argument; -ENOENT if there is no such group; -EEXIST if the port
 *         is in a group already; -ENOSPC beyond SCSITGT_ALUA_MAX_PORTS.
 */
SCSITGT_EXPORT int scsitgt_alua_group_add_port(struct scsitgt_target *tgt, uint16_t group_id,
					       uint16_t rel_port_id);

/**
 * Take a target port out of its group.
 *
 * @param tgt         The target.
 * @param group_id    The group.
 * @param rel_port_id The relative target port identifier given to
 *                    scsitgt_alua_group_add_port().
 * @return 0; -EINVAL on NULL; -ENOENT if the port is not in @p group_id.
 */
SCSITGT_EXPORT int scsitgt_alua_group_remove_port(struct scsitgt_target *tgt, uint16_t group_id,
						  uint16_t rel_port_id);

/**
 * Change the state of a group (an implicit transition, SPC-5 §5.16.2.6). A change establishes
 * ASYMMETRIC ACCESS STATE CHANGED for every nexus; setting the current state again does not.
 *
 * @param tgt      The target.
 * @param group_id The group.
 * @param state    The new state.
 * @return 0; -EINVAL on a bad argument or state; -ENOENT if there is no such group.
 */
SCSITGT_EXPORT int scsitgt_alua_set_state(struct scsitgt_target *tgt, uint16_t group_id,
					  enum scsitgt_alua_state state);

/**
 * The state of a group.
 *
 * @param tgt      The target.
 * @param group_id The group.
 * @param state    Receives the state.
 * @return 0 and *@p state; -EINVAL on NULL; -ENOENT if there is no such group.
 */
SCSITGT_EXPORT int scsitgt_alua_get_state(const struct scsitgt_target *tgt, uint16_t group_id,
					  enum scsitgt_alua_state *state);

/**
 * Set or clear the PREF bit of a group (preferred target port group, SPC-5 §6.36.2).
 *
 * @param tgt       The target.
 * @param group_id  The group.
 * @param preferred Whether REPORT TARGET PORT GROUPS sets PREF for it.
 * @return 0; -EINVAL on NULL; -ENOENT if there is no such group.
 */
SCSITGT_EXPORT int scsitgt_alua_set_preferred(struct scsitgt_target *tgt, uint16_t group_id,
					      bool preferred);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_ALUA_H */
