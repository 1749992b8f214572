/* SPDX-License-Identifier: MIT */
/**
 * @file srp.h
 * SRP target ports: the SCSI RDMA Protocol (T10 SRP r16a with the SRP-2 immediate data
 * extension) over RDMA/CM, the mode Linux's ib_srp initiator uses with `dest=IP:PORT`.
 *
 * An SRP target port exports the LUNs of one target (the same LUNs may be exported over iSCSI
 * at the same time). Initiators name it by its 128-bit target port identifier, the 64-bit
 * identifier extension followed by the 64-bit I/O controller GUID (ib_srp's `id_ext` and
 * `ioc_guid`). Each initiator port (its 128-bit initiator port identifier) gets one I_T nexus,
 * which may use several RDMA channels (connections). See docs/srp.md.
 *
 * Built only with rdma-core (meson -Drdma=enabled or auto with librdmacm and libibverbs
 * found); otherwise scsitgt_srp_portal_create() returns -ENOTSUP.
 */
#ifndef LIBSCSITGT_SRP_H
#define LIBSCSITGT_SRP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A listening SRP target port. Opaque. */
struct scsitgt_srp_portal;

/** Options of scsitgt_srp_portal_create(). Initialise with scsitgt_srp_portal_opts_init(). */
struct scsitgt_srp_portal_opts {
	/** sizeof(struct scsitgt_srp_portal_opts), set by scsitgt_srp_portal_opts_init(). */
	size_t size;
	/**
	 * Numeric IPv4 or IPv6 address of an RDMA device to listen on through RDMA/CM
	 * ("0.0.0.0" or "::" for every device). Default "0.0.0.0". Copied.
	 */
	const char *address;
	/** RDMA/CM port (the port of ib_srp's `dest=`); 0 binds an ephemeral one. Default 5555. */
	uint16_t port;
	/** IDENTIFIER EXTENSION: the first half of the target port identifier. Default 0. */
	uint64_t id_ext;
	/** I/O controller GUID: the second half of the target port identifier. Must not be 0. */
	uint64_t ioc_guid;
	/** RDMA channels one I_T nexus may use at once, 1..64. Default 8. */
	uint32_t max_channels;
	/**
	 * Request limit of a channel: commands and task management requests the initiator may
	 * have outstanding on it (the login's initial REQUEST LIMIT DELTA), 2..3275: a channel
	 * reserves 5 x queue_size + 7 entries of its device's completion queue (16384 entries),
	 * so no channel of a larger one could ever log in. Default 128.
	 */
	uint32_t queue_size;
	/**
	 * Largest initiator-to-target IU accepted, 64..1048576 bytes; a login asking for more is
	 * rejected. Immediate data rides inside these IUs. Default 65536.
	 */
	uint32_t max_it_iu_len;
	/** Largest target-to-initiator IU sent (responses with sense data), 64..65536. Default 512. */
	uint32_t max_ti_iu_len;
	/** Accept SRP-2 immediate data when the initiator asks for it. Default true. */
	bool immediate_data;
	/**
	 * Relative target port identifier of this port (VPD page 83h, persistent reservations,
	 * ALUA port groups); keep it distinct from the iSCSI portal group tags. 1..65535.
	 * Default 256.
	 */
	uint16_t rel_port_id;
	/** rdma_listen() backlog. Default 128. */
	int backlog;
	/**
	 * Bytes of command data buffers registered once per RDMA device (RDMA READ and WRITE go
	 * to and from them without a registration per command; the locked-memory limit must
	 * allow it). Commands that find it full, or all commands with 0, register their buffer
	 * each time. Default 67108864 (64 MiB).
	 */
	uint64_t buffer_bytes;
	/**
	 * Also announce each unit attention with an SRP_AER_REQ (SRP r16a §6.10, optional) on a
	 * channel of the nexus; the condition is reported on the next command either way. Linux
	 * ib_srp logs every one as an error and drops it, and LIO's and SCST's SRP targets send
	 * none (docs/srp.md). Default false.
	 */
	bool aer;
};

/**
 * Fill @p opts with the defaults.
 *
 * @param opts The options to initialise.
 * @param size sizeof(*opts) as the caller knows it.
 *
 * Loop: any. Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_srp_portal_opts_init(struct scsitgt_srp_portal_opts *opts, size_t size);

/**
 * Start an SRP target port for @p tgt: listen through RDMA/CM on opts->address and
 * opts->port, accept SRP logins addressed to (id_ext, ioc_guid) and serve the target's LUNs.
 *
 * @param out Receives the port.
 * @param tgt The target whose LUNs the port exports (its engine's loop runs the port).
 * @param opts Options; NULL for the defaults (which need ioc_guid, so NULL fails).
 * @return 0 on success;
 *         -EINVAL on a bad argument or option (ioc_guid 0, limits out of range, bad address);
 *         -ENOTSUP when the library was built without rdma-core;
 *         -ENODEV when no RDMA device serves the address;
 *         -EADDRINUSE when the RDMA/CM port is taken;
 *         -ENOMEM.
 *
 * Loop: the target's engine loop.
 */
SCSITGT_EXPORT int scsitgt_srp_portal_create(struct scsitgt_srp_portal **out,
					     struct scsitgt_target *tgt,
					     const struct scsitgt_srp_portal_opts *opts);

/**
 * Stop listening, log out every channel (SRP_T_LOGOUT, then disconnect) and free the port.
 * Commands in flight are aborted. The port is dead after this call; @p cb runs once every
 * channel is gone, never from inside this call. The engine also destroys its SRP ports when it
 * is destroyed.
 *
 * @param portal The port; NULL is ignored.
 * @param cb Called with status 0 when done; may be NULL.
 * @param cb_arg Passed to @p cb.
 *
 * Loop: the target's engine loop.
 */
SCSITGT_EXPORT void scsitgt_srp_portal_destroy(struct scsitgt_srp_portal *portal,
					       scsitgt_done_cb cb, void *cb_arg);

/**
 * The RDMA/CM port the SRP target port listens on (useful after binding port 0).
 *
 * @param portal The port.
 * @return The port number, 0 for NULL.
 *
 * Loop: any.
 */
SCSITGT_EXPORT uint16_t scsitgt_srp_portal_get_port(const struct scsitgt_srp_portal *portal);

/**
 * RDMA channels and I_T nexuses the port currently serves.
 *
 * @param portal The port.
 * @param channels Receives the number of established channels; may be NULL.
 * @param nexuses Receives the number of I_T nexuses; may be NULL.
 *
 * Loop: the target's engine loop.
 */
SCSITGT_EXPORT void scsitgt_srp_portal_get_counts(const struct scsitgt_srp_portal *portal,
						  uint32_t *channels, uint32_t *nexuses);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_SRP_H */
