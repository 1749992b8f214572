/* SPDX-License-Identifier: MIT */
/**
 * @file backend_rbd_gateway.h
 * Several gateways, one RBD image: each gateway (an engine in its own process, on its own
 * machine in a product) exports the same image as the same logical unit (the RBD backend
 * derives the device identification from the image), through a target whose ports form one
 * target port group per gateway. The gateway that owns the image's exclusive lock is
 * active/optimized; the others are standby, so that multipath initiators (Linux dm-multipath
 * with its ALUA handler, libiscsi-based hosts) send their I/O to the owner. docs/rbd.md,
 * "Several gateways: the HA model", describes the states, the transitions and the timings.
 *
 *  - Only the lock owner writes: librbd refuses other clients' writes (-EROFS) while a client
 *    holds the lock taken with rbd_lock_acquire(), and taking the lock over breaks the old
 *    owner's lock, which blocklists (fences) its client: its in-flight writes fail and are
 *    never acknowledged.
 *  - Each gateway watches a RADOS object next to the image ("rbd_gateway.<image id>") and
 *    answers the others' probes (watch/notify) from its loop; a standby probes every
 *    probe_interval_ms and takes the lock over when the owner missed probe_misses probes in a
 *    row (implicit transition), without waiting for Ceph's watch timeout.
 *  - SET TARGET PORT GROUPS naming a standby gateway's group as active asks that gateway to
 *    take over (explicit transition): the command completes with GOOD while the group is
 *    TRANSITIONING, and the group becomes active/optimized once the lock is taken.
 *  - No gateway takes the lock from a live owner except on such a request, and not within
 *    holddown_ms of the owner taking it (doubled per such takeover in a row): no lock
 *    ping-pong.
 *  - A fenced gateway reports its group unavailable, replaces its blocklisted client with a
 *    fresh connection, reopens the image and rejoins as standby.
 *
 * Built only with the RBD backend; otherwise the functions return -ENOTSUP. A test hook that
 * breaks a gateway's watch is in testing.h, outside the ABI promise.
 */
#ifndef LIBSCSITGT_BACKEND_RBD_GATEWAY_H
#define LIBSCSITGT_BACKEND_RBD_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

struct scsitgt_rbd_gateway;

/** Another gateway of the image: its target port group and the port that group holds. */
struct scsitgt_rbd_gateway_peer {
	/** Its target port group, 1..65535. */
	uint16_t group_id;
	/** The relative target port identifier of its port (its iSCSI portal group tag); 0:
	 *  the group is reported without ports. */
	uint16_t rel_port_id;
};

/** Options of scsitgt_rbd_gateway_create(). Initialise with scsitgt_rbd_gateway_opts_init(). */
struct scsitgt_rbd_gateway_opts {
	/** sizeof(struct scsitgt_rbd_gateway_opts), set by scsitgt_rbd_gateway_opts_init(). */
	size_t size;
	/** This gateway's target port group, 1..65535, different on every gateway. Required. */
	uint16_t group_id;
	/** The relative target port identifiers of this gateway's ports (iSCSI: the portal
	 *  group tags of its portals), put in @ref group_id. Copied. */
	const uint16_t *rel_port_ids;
	/** Number of @ref rel_port_ids. */
	size_t nrel_port_ids;
	/** The other gateways of the image, reported by REPORT TARGET PORT GROUPS too. Copied;
	 *  at most 15. */
	const struct scsitgt_rbd_gateway_peer *peers;
	/** Number of @ref peers. */
	size_t npeers;
	/** When nobody owns the lock, a preferred gateway takes it first (else the lowest
	 *  group); REPORT TARGET PORT GROUPS sets PREF for its group. Default false. */
	bool preferred;
	/** How often the gateway probes the lock and the other gateways. Default 500 ms. */
	uint32_t probe_interval_ms;
	/** How long a probe waits for the others' answers (a SIGKILLed owner's watch lingers at the
	 *  OSD, so a probe of a dead owner lasts this long). RADOS counts it in whole seconds:
	 *  values under 1000 count as 1000. Default 1000 ms. */
	uint32_t probe_timeout_ms;
	/** Probes in a row the owner misses before a standby takes over (each lasts
	 *  probe_timeout_ms when the owner is dead: two make two seconds of silence). Default 2. */
	uint32_t probe_misses;
	/** A live owner keeps the lock at least this long against SET TARGET PORT GROUPS
	 *  through another gateway, twice as long per such takeover in a row (at most 128
	 *  times; docs/rbd-ha-checks.md). Default 5000 ms. */
	uint32_t holddown_ms;
};

/**
 * Fill @p opts with the defaults.
 *
 * @param opts The options.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_rbd_gateway_opts_init(struct scsitgt_rbd_gateway_opts *opts,
						  size_t size);

/**
 * Make @p tgt one gateway of the RBD image behind @p bctx: configure ALUA on the target
 * (implicit and explicit, with the gateway's request hook), create this gateway's target port
 * group (standby until the first probe says otherwise) and the peers' groups, and start
 * watching and probing. The target should serve this one RBD LUN (the ALUA state belongs to
 * the target's port groups, hence to all its LUNs).
 *
 * @param gw_out Receives the gateway.
 * @param tgt    The target; its ALUA configuration becomes the gateway's.
 * @param bctx   The RBD backend context of the LUN (scsitgt_backend_rbd_create()), opened by
 *               scsitgt_lun_create() already. It must outlive the gateway: destroy the
 *               gateway before the LUN or the engine.
 * @param opts   The options. Copied.
 * @return 0; -EINVAL (NULL argument, group 0, a peer in the gateway's own group, too many
 *         peers, a context with librbd's client cache on: open it with write_through);
 *         -EBUSY (the context already has a gateway, or is not opened); -ENOMEM;
 *         -EEXIST (a group or port configured twice); -ENOTSUP without the RBD backend. On
 *         failure the target's ALUA configuration is as it was: the groups the call made are
 *         destroyed again and the request hook is installed only once everything else worked.
 *
 * Loop: home of the target.
 */
SCSITGT_EXPORT int scsitgt_rbd_gateway_create(struct scsitgt_rbd_gateway **gw_out,
					      struct scsitgt_target *tgt, void *bctx,
					      const struct scsitgt_rbd_gateway_opts *opts);

/**
 * Stop being a gateway: stop probing, release the lock if this gateway owns it (so that a
 * standby takes it at its next probe rather than after a takeover), stop watching. The
 * target's ALUA groups stay as they are; its ALUA becomes implicit only, without the
 * gateway's request hook, at once: SET TARGET PORT GROUPS is then refused (ILLEGAL REQUEST,
 * INVALID COMMAND OPERATION CODE) until the host configures ALUA again (a new gateway).
 *
 * @param gw     The gateway; dead after the call.
 * @param cb     Called on the loop once the lock is released and the watch removed, never
 *               from inside this call. Optional.
 * @param cb_arg Its argument.
 *
 * Loop: home of the target.
 */
SCSITGT_EXPORT void scsitgt_rbd_gateway_destroy(struct scsitgt_rbd_gateway *gw, scsitgt_done_cb cb,
						void *cb_arg);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_BACKEND_RBD_GATEWAY_H */
