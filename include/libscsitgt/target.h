/* SPDX-License-Identifier: MIT */
/**
 * @file target.h
 * Targets: named SCSI target devices holding LUNs and an initiator access list.
 */
#ifndef LIBSCSITGT_TARGET_H
#define LIBSCSITGT_TARGET_H

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
	 * bytes. Required. Copied.
	 */
	const char *name;
	/** Human-readable alias (iSCSI TargetAlias). Optional, may be NULL. Copied. */
	const char *alias;
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
 *         has a target of that name; -ENOMEM.
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
