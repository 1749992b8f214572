/* SPDX-License-Identifier: MIT */
/*
 * Internals of scsitgtd_apply() shared by its parts: scsitgtd_apply.c (the whole
 * configuration: engine settings, portals, which targets come and go; the change log lines),
 * scsitgtd_apply_target.c (one target's settings) and scsitgtd_apply_lun.c (LUNs, their
 * backends, RBD opens and gateways). Not used by the rest of the daemon (scsitgtd.h).
 */
#ifndef SCSITGTD_APPLY_H
#define SCSITGTD_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "scsitgtd.h"

/*
 * RBD gateways (rbd_gateway in [target]; backend_rbd_gateway.h): one per target, on its one
 * RBD LUN, created once the LUN is. A gateway must go before its LUN (it uses the backend
 * context) and its destruction ends on the loop, so removing the LUN or the target waits for
 * it: the entry says what to do then.
 */
struct scsitgtd_gw {
	struct scsitgtd_gw *next;
	struct scsitgtd *d;
	struct scsitgt_target *tgt;
	struct scsitgt_rbd_gateway *gw;
	/* The ALUA groups it made (its own first), destroyed with it. */
	uint16_t groups[1 + SCSITGTD_MAX_GW_PEERS];
	size_t ngroups;
	bool destroying;
	/* Once it is gone: destroy the target; or destroy its LUN (lun_id) and create it again
	 * if the configuration applied by then has it. */
	bool then_target;
	bool then_lun;
	uint64_t lun_id; /* the LUN it is the gateway of */
};

static inline bool str_eq(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a && b && !strcmp(a, b));
}

/* ---- scsitgtd_apply.c ---- */

/* Log one change applied (NOTICE on a reload, INFO at the first start). */
void scsitgtd_changed(struct scsitgtd *d, const char *fmt, ...) SCSITGT_PRINTF(2, 3);
/* Log a CHAP credential's change: the user, never the secret. */
void scsitgtd_cred_changed(struct scsitgtd *d, const char *who, const char *what, const char *ou,
			   const char *os, const char *nu, const char *ns);
/* The library's iSCSI parameters from the configuration's (defaults for what is not set). */
void scsitgtd_params_build(const struct scsitgtd_params *ps, struct scsitgt_iscsi_params *o);

/* ---- scsitgtd_apply_target.c ---- */

/* Create target @t of @nc in @slot->tgt and apply its settings (LUNs included); on failure
 * @slot->tgt is NULL and @slot->why says why (show lists the target as failed). */
int scsitgtd_target_create(struct scsitgtd *d, const struct scsitgtd_config *nc,
			   const struct scsitgtd_target *t, struct scsitgtd_tgt *slot);
/* Bring target @tgt from @old of @oc (both NULL: freshly created) to @nt of @nc; its iSCSI
 * parameters are @nc's [engine] keys overlaid by @nt's own (scsitgtd_params_merge()). */
void scsitgtd_target_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			   const struct scsitgtd_config *oc, const struct scsitgtd_target *old,
			   const struct scsitgtd_config *nc, const struct scsitgtd_target *nt);
/* Keep identical SRP ports, close the others, open the new ones: @out parallels nt->srps. */
void scsitgtd_srps_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			 const struct scsitgtd_target *old, struct scsitgt_srp_portal **old_ports,
			 const struct scsitgtd_target *nt, struct scsitgt_srp_portal **out);
/* Destroy a target the configuration no longer has (after its gateway, if it has one). */
void scsitgtd_target_destroy_removed(struct scsitgtd *d, struct scsitgt_target *tgt);

/* ---- scsitgtd_apply_lun.c ---- */

/* Create LUN @l of @tgt (an RBD LUN once its image is open); errors are logged. */
int scsitgtd_lun_create(struct scsitgtd *d, struct scsitgt_target *tgt,
			const struct scsitgtd_config *cfg, const struct scsitgtd_lun *l);
/* A LUN that stays: capacity, the offline state and fault rules change in place. */
void scsitgtd_lun_update(struct scsitgtd *d, const char *tname, struct scsitgt_lun *lun,
			 const struct scsitgtd_lun *ol, const struct scsitgtd_lun *nl);
/* The RBD gateway of target @tgt, or NULL. */
struct scsitgtd_gw *scsitgtd_gw_find(struct scsitgtd *d, struct scsitgt_target *tgt);
/* Start the destruction of the gateway @e (if not started yet); e->then_* say what follows. */
void scsitgtd_gw_destroy(struct scsitgtd_gw *e);
/* Forget the failed shared-reservation attaches of LUNs that are gone (@all: every entry, once
 * the engine is gone). */
void scsitgtd_pr_shares_prune(struct scsitgtd *d, bool all);

#endif /* SCSITGTD_APPLY_H */
