/* SPDX-License-Identifier: MIT */
/**
 * @file iscsi.h
 * iSCSI transport (RFC 7143 over TCP): portals, negotiation parameters, CHAP authentication
 * and login redirection.
 *
 * A portal is an address, a TCP port and a target portal group tag (TPGT) owned by the engine.
 * Every target of the engine is reachable through every portal, and discovery sessions
 * (SendTargets) list every portal of every target the initiator may see. Per-target settings
 * (negotiation parameters, CHAP credentials, a redirect hook) are kept with the target and
 * dropped when it is destroyed.
 */
#ifndef LIBSCSITGT_ISCSI_H
#define LIBSCSITGT_ISCSI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "engine.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A listening iSCSI portal of an engine. Opaque. */
struct scsitgt_portal;

/** Digest choice for HeaderDigest and DataDigest (RFC 7143 §13.1). */
enum scsitgt_iscsi_digest {
	/** Accept CRC32C or None, whichever the initiator lists first. The default. */
	SCSITGT_ISCSI_DIGEST_ANY = 0,
	/** Accept only None: digests off. */
	SCSITGT_ISCSI_DIGEST_NONE = 1,
	/**
	 * Require CRC32C: a login that does not list it for the key (or never offers the key)
	 * fails with status 0x0200, initiator error (RFC 7143 §6.2.1); never a session without.
	 */
	SCSITGT_ISCSI_DIGEST_CRC32C = 2,
};

/** CHAP algorithm bits for scsitgt_iscsi_params::chap_algorithms (RFC 7143 §12.1.3). */
#define SCSITGT_ISCSI_CHAP_MD5 (1u << 0)
/** CHAP with SHA-1. */
#define SCSITGT_ISCSI_CHAP_SHA1 (1u << 1)
/** CHAP with SHA-256. */
#define SCSITGT_ISCSI_CHAP_SHA256 (1u << 2)
/** CHAP with SHA3-256. */
#define SCSITGT_ISCSI_CHAP_SHA3_256 (1u << 3)
/** Every CHAP algorithm the library implements. */
#define SCSITGT_ISCSI_CHAP_ALL 0xfu

/** Options of scsitgt_portal_create(). Initialise with scsitgt_portal_opts_init(). */
struct scsitgt_portal_opts {
	/** sizeof(struct scsitgt_portal_opts), set by scsitgt_portal_opts_init(). */
	size_t size;
	/**
	 * Numeric IPv4 or IPv6 address to bind ("0.0.0.0", "::", "127.0.0.1", "::1"), without
	 * brackets. Default "0.0.0.0". Copied.
	 */
	const char *address;
	/** TCP port; 0 binds an ephemeral port (see scsitgt_portal_get_port()). Default 3260. */
	uint16_t port;
	/** Target portal group tag, 1..65535 (RFC 7143 §13.9). Default 1. */
	uint16_t tpgt;
	/** listen(2) backlog. Default 128. */
	int backlog;
	/**
	 * Connections the portal serves at once; further ones are accepted and closed at once.
	 * 0: no limit. Default 1024.
	 */
	uint32_t max_connections;
	/**
	 * Of those, connections that have not completed login (each holds a small buffer and a
	 * login timer, see scsitgt_iscsi_params::login_timeout_ms); further ones are closed at
	 * once. 0: no limit. Default 256.
	 */
	uint32_t max_login_connections;
	/**
	 * Connections one initiator (by InitiatorName, discovery sessions included) may hold on
	 * this portal at once; a login beyond that fails with "out of resources" (RFC 7143
	 * §11.13.5, 0x0302). 0: no limit. Default 64.
	 */
	uint32_t max_connections_per_initiator;
	/**
	 * iSER portals only (scsitgt_iser_portal_create()): bytes of command data buffers
	 * registered once per RDMA device (ibv_reg_mr), from which the commands of the portal's
	 * connections take their buffers, so that data moves by RDMA READ and WRITE without a
	 * registration or a copy per io. The memory is pinned (mind RLIMIT_MEMLOCK). Commands
	 * that find it exhausted fall back to unregistered buffers, copied through it or
	 * registered alone. 0: the default, 64 MiB. Ignored by TCP portals.
	 */
	uint64_t rdma_buffer_bytes;
};

/**
 * iSCSI negotiation and session parameters of a target. Initialise with
 * scsitgt_iscsi_params_init(); the defaults favour throughput.
 */
struct scsitgt_iscsi_params {
	/** sizeof(struct scsitgt_iscsi_params), set by scsitgt_iscsi_params_init(). */
	size_t size;
	/** MaxRecvDataSegmentLength we declare, 512..16777215. Default 262144. */
	uint32_t max_recv_data_segment_length;
	/** MaxBurstLength offered, 512..16777215. Default 16776192. */
	uint32_t max_burst_length;
	/** FirstBurstLength offered, 512..16777215. Default 262144. */
	uint32_t first_burst_length;
	/** ImmediateData offered. Default true. */
	bool immediate_data;
	/** InitialR2T offered. Default false. */
	bool initial_r2t;
	/** MaxOutstandingR2T offered, 1..65535. Default 16. */
	uint32_t max_outstanding_r2t;
	/** HeaderDigest accepted. Default ::SCSITGT_ISCSI_DIGEST_ANY. */
	enum scsitgt_iscsi_digest header_digest;
	/** DataDigest accepted. Default ::SCSITGT_ISCSI_DIGEST_ANY. */
	enum scsitgt_iscsi_digest data_digest;
	/** DefaultTime2Wait offered (seconds), 0..3600. Default 2. */
	uint32_t default_time2wait;
	/** DefaultTime2Retain offered (seconds), 0..3600. Default 20. */
	uint32_t default_time2retain;
	/** MaxConnections per session, 1..65535. Default 1 (only 1 is implemented). */
	uint32_t max_connections;
	/** ErrorRecoveryLevel offered. Only 0 is implemented. Default 0. */
	uint32_t error_recovery_level;
	/** Commands a session may have outstanding (the CmdSN window), 1..4096. Default 128. */
	uint32_t queue_depth;
	/** Send a NOP-In ping after this many ms without input; 0 disables. Default 5000. */
	uint32_t nop_interval_ms;
	/** Drop the connection when a ping is not answered within this time. Default 15000. */
	uint32_t nop_timeout_ms;
	/** Drop connections that have not completed login within this time. Default 15000. */
	uint32_t login_timeout_ms;
	/** CHAP algorithms accepted, SCSITGT_ISCSI_CHAP_* bits. Default ::SCSITGT_ISCSI_CHAP_ALL. */
	uint32_t chap_algorithms;
	/**
	 * Bytes of write data buffers a session may hold before further WRITEs wait for their
	 * first R2T (their buffers are allocated only when data can arrive; unsolicited data,
	 * at most FirstBurstLength per command, is always taken, and one WRITE may always
	 * proceed). 0: no limit. Default 33554432 (32 MiB).
	 */
	uint64_t max_write_buffer_bytes;
	/**
	 * How long a Logout Request that closes the session or connection waits for the
	 * session's commands still inside backends before the Logout Response goes out anyway
	 * (RFC 7143 §3.5.3.3: the response says that the cleanup is complete). The commands are
	 * aborted at once, without responses; those still in a backend when the limit expires
	 * are left to it (freed when it returns them). Milliseconds, > 0. Default 10000.
	 */
	uint32_t logout_timeout_ms;
	/**
	 * Which unit attentions are also sent as iSCSI Async Messages (RFC 7143 §11.9,
	 * AsyncEvent 0, "SCSI asynchronous event", the sense data in the data segment) on the
	 * connections of the nexuses that get them: SCSITGT_ISCSI_ASYNC_* bits. The unit
	 * attention stays pending either way and is reported on the next command as usual, so
	 * initiators that ignore these messages lose nothing (docs/iscsi.md, "Async messages").
	 * Default ::SCSITGT_ISCSI_ASYNC_LUNS_CHANGED | ::SCSITGT_ISCSI_ASYNC_CAPACITY_CHANGED;
	 * 0 sends none.
	 */
	uint32_t async_events;
};

/** scsitgt_iscsi_params::async_events: REPORTED LUNS DATA HAS CHANGED (3Fh/0Eh). */
#define SCSITGT_ISCSI_ASYNC_LUNS_CHANGED (1u << 0)
/** scsitgt_iscsi_params::async_events: CAPACITY DATA HAS CHANGED (2Ah/09h). */
#define SCSITGT_ISCSI_ASYNC_CAPACITY_CHANGED (1u << 1)
/** scsitgt_iscsi_params::async_events: every other unit attention of the nexus. */
#define SCSITGT_ISCSI_ASYNC_OTHER_UA (1u << 2)
/** scsitgt_iscsi_params::async_events: all of the above. */
#define SCSITGT_ISCSI_ASYNC_ALL 0x7u

/** Answer of a redirect hook (RFC 7143 §11.13.5, Status-Class 1). */
enum scsitgt_iscsi_redirect {
	/** Let the login proceed here. */
	SCSITGT_ISCSI_REDIRECT_NONE = 0,
	/** Answer "target moved temporarily" (0x0101) with the given address. */
	SCSITGT_ISCSI_REDIRECT_TEMPORARY = 1,
	/** Answer "target moved permanently" (0x0102) with the given address. */
	SCSITGT_ISCSI_REDIRECT_PERMANENT = 2,
};

/**
 * Login redirection hook, asked once per login of a normal session to the target, after the
 * initiator's name is known and before authentication.
 *
 * @param cb_arg         The argument given to scsitgt_iscsi_target_set_redirect().
 * @param tgt            The target logged in to.
 * @param initiator_name The initiator's InitiatorName.
 * @param address        Receives the TargetAddress value, "host[:port][,tpgt]" (IPv6 hosts
 *                       in brackets), NUL-terminated, when the answer redirects.
 * @param address_size   Size of @p address (at least 256 bytes).
 * @return Whether and how to redirect. Answers other than NONE need a non-empty address.
 *
 * Loop: home (called synchronously during login).
 */
typedef enum scsitgt_iscsi_redirect (*scsitgt_iscsi_redirect_cb)(void *cb_arg,
								 struct scsitgt_target *tgt,
								 const char *initiator_name,
								 char *address,
								 size_t address_size);

/**
 * Fill @p opts with the defaults.
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_portal_opts_init(struct scsitgt_portal_opts *opts, size_t size);

/**
 * Create a portal: bind the address and start listening. Connections are accepted on the
 * engine's loop. The engine destroys remaining portals in scsitgt_engine_destroy(), first
 * asking logged-in initiators to log out (Async Message) and then closing their connections.
 *
 * @param out    Receives the portal.
 * @param engine The engine.
 * @param opts   Options, or NULL for the defaults. Copied.
 * @return 0; -EINVAL for a NULL argument, a malformed opts (size 0, address not a numeric IP
 *         address, TPGT 0, backlog < 1) or an engine being destroyed; -ENOMEM; the error of
 *         bind/listen as a negative errno (e.g. -EADDRINUSE, -EADDRNOTAVAIL, -EACCES).
 *
 * Loop: home of @p engine.
 */
SCSITGT_EXPORT int scsitgt_portal_create(struct scsitgt_portal **out, struct scsitgt_engine *engine,
					 const struct scsitgt_portal_opts *opts);

/**
 * Create an iSER portal (RFC 7145: iSCSI over RDMA): listen with rdma_cm on the address and
 * port of @p opts (default 0.0.0.0:3260, an RDMA port space of its own, so it may share the
 * number with a TCP portal). Logins, keys (RDMAExtensions=Yes, TargetRecvDataSegmentLength;
 * digests forced to None), sessions and SCSI handling are those of the TCP portals; Data-In
 * is pushed with RDMA WRITE and solicited Data-Out pulled with RDMA READ. Destroy it with
 * scsitgt_portal_destroy(); SendTargets lists it like any portal.
 *
 * @param out    Receives the portal.
 * @param engine The engine.
 * @param opts   Options (backlog, tpgt and the connection limits as for TCP, a connection
 *               over max_connections or max_login_connections being rejected at its
 *               connect request; rdma_buffer_bytes), or NULL for the defaults.
 * @return 0; -ENOTSUP when the library was built without rdma-core; -ENODEV when no RDMA
 *         device owns the address (or the RDMA stack is not loaded); -EINVAL; -EADDRINUSE;
 *         for an address of one device, the error of registering its buffer memory (-ENOMEM;
 *         -EPERM or -ENOMEM from ibv_reg_mr() when RLIMIT_MEMLOCK is too low). On a wildcard
 *         address each device's memory is registered with its first connection; a failure
 *         there refuses that connection and is logged.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iser_portal_create(struct scsitgt_portal **out,
					      struct scsitgt_engine *engine,
					      const struct scsitgt_portal_opts *opts);

/**
 * Destroy a portal: stop listening and close the connections accepted through it (their
 * sessions end; running commands drain).
 *
 * @param portal The portal. Dead after the call.
 * @param cb     Called exactly once when the listener and every connection are closed, from
 *               the loop (never from inside this call), status 0. Optional, may be NULL.
 * @param cb_arg Argument of @p cb.
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_portal_destroy(struct scsitgt_portal *portal, scsitgt_done_cb cb,
					   void *cb_arg);

/**
 * The TCP port the portal listens on (the real one when created with port 0).
 *
 * @param portal The portal.
 * @return The port; 0 if @p portal is NULL. Loop: home.
 */
SCSITGT_EXPORT uint16_t scsitgt_portal_get_port(const struct scsitgt_portal *portal);

/**
 * The portal's target portal group tag.
 *
 * @param portal The portal.
 * @return The TPGT; 0 if @p portal is NULL. Loop: home.
 */
SCSITGT_EXPORT uint16_t scsitgt_portal_get_tpgt(const struct scsitgt_portal *portal);

/**
 * Fill @p params with the defaults.
 *
 * @param params The parameters to fill.
 * @param size   sizeof(*params) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_iscsi_params_init(struct scsitgt_iscsi_params *params, size_t size);

/**
 * Set a target's iSCSI parameters, used by logins that start after the call.
 *
 * @param tgt    The target.
 * @param params The parameters (read up to params->size bytes; defaults for the rest). Copied.
 * @return 0; -EINVAL for a NULL argument or a value out of its documented range; -ENOTSUP for
 *         an error_recovery_level above 0 or max_connections above 1; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_target_set_params(struct scsitgt_target *tgt,
						   const struct scsitgt_iscsi_params *params);

/**
 * Set the parameters of discovery sessions and of logins before their target is known
 * (login timeout, digests, data segment length).
 *
 * @param engine The engine.
 * @param params The parameters. Copied.
 * @return As scsitgt_iscsi_target_set_params().
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_engine_set_params(struct scsitgt_engine *engine,
						   const struct scsitgt_iscsi_params *params);

/**
 * Require CHAP: initiators logging in to @p tgt must authenticate (RFC 7143 §12.1.3) with this
 * user name and secret, unless scsitgt_iscsi_initiator_set_chap() gave them their own.
 *
 * @param tgt    The target.
 * @param user   CHAP_N the initiator must send, 1..255 bytes; NULL together with @p secret
 *               NULL turns the requirement off. Copied.
 * @param secret The shared secret, 12..256 bytes (RFC 7143 §12.1.3 asks for 96 bits). Copied.
 * @return 0; -EINVAL for a NULL target, only one of @p user / @p secret NULL, or a length out
 *         of range; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_target_set_chap(struct scsitgt_target *tgt, const char *user,
						 const char *secret);

/**
 * Set the target's own credentials for mutual CHAP: when an initiator challenges the target
 * (CHAP_I and CHAP_C), the target answers with this user name and secret. Without them such
 * a login fails with "authentication failure".
 *
 * @param tgt    The target.
 * @param user   CHAP_N the target sends, 1..255 bytes; NULL with @p secret NULL clears. Copied.
 * @param secret The target's secret, 12..256 bytes; it must differ from the initiators'
 *               secrets (RFC 7143 §12.1.3). Copied.
 * @return As scsitgt_iscsi_target_set_chap().
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_target_set_mutual_chap(struct scsitgt_target *tgt,
							const char *user, const char *secret);

/**
 * Require CHAP on discovery sessions (SessionType=Discovery, RFC 7143 §12.1.3): initiators
 * must authenticate with this user name and secret before SendTargets. Normal sessions are
 * not affected (see scsitgt_iscsi_target_set_chap()).
 *
 * @param engine The engine.
 * @param user   CHAP_N the initiator must send, 1..255 bytes; NULL together with @p secret
 *               NULL turns the requirement off. Copied.
 * @param secret The shared secret, 12..256 bytes. Copied.
 * @return 0; -EINVAL for a NULL engine, only one of @p user / @p secret NULL, or a length out
 *         of range; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_engine_set_discovery_chap(struct scsitgt_engine *engine,
							   const char *user, const char *secret);

/**
 * Set the target side's credentials for mutual CHAP in discovery sessions: an initiator that
 * challenges back (CHAP_I and CHAP_C) gets this user name and the response computed with this
 * secret. Without them such a discovery login fails with "authentication failure".
 *
 * @param engine The engine.
 * @param user   CHAP_N sent to the initiator, 1..255 bytes; NULL with @p secret NULL clears.
 *               Copied.
 * @param secret The secret, 12..256 bytes; it must differ from the initiators' secrets
 *               (RFC 7143 §12.1.3). Copied.
 * @return As scsitgt_iscsi_engine_set_discovery_chap().
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_engine_set_discovery_mutual_chap(struct scsitgt_engine *engine,
								  const char *user,
								  const char *secret);

/**
 * Give one initiator its own CHAP credentials for @p tgt, and require CHAP from it. They take
 * precedence over the target-wide ones of scsitgt_iscsi_target_set_chap().
 *
 * @param tgt            The target.
 * @param initiator_name The InitiatorName, compared case-insensitively. Copied.
 * @param user           CHAP_N this initiator must send; NULL with @p secret NULL removes the
 *                       entry. Copied.
 * @param secret         Its secret, 12..256 bytes. Copied.
 * @return 0; -EINVAL as for scsitgt_iscsi_target_set_chap() or for an empty initiator name;
 *         -ENOENT when removing an entry that does not exist; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_initiator_set_chap(struct scsitgt_target *tgt,
						    const char *initiator_name, const char *user,
						    const char *secret);

/**
 * Install a login redirection hook for @p tgt (see ::scsitgt_iscsi_redirect_cb).
 *
 * @param tgt    The target.
 * @param cb     The hook; NULL removes it.
 * @param cb_arg Argument of @p cb.
 * @return 0; -EINVAL if @p tgt is NULL; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_target_set_redirect(struct scsitgt_target *tgt,
						     scsitgt_iscsi_redirect_cb cb, void *cb_arg);

/**
 * Snapshot of one iSCSI connection, passed to a ::scsitgt_iscsi_conn_stats_cb. The struct and
 * its strings are valid only during the callback. Byte counts are wire bytes (headers, data,
 * padding and digests).
 */
struct scsitgt_iscsi_conn_stats {
	/** sizeof(struct scsitgt_iscsi_conn_stats) as the library fills it. */
	size_t size;
	/** The initiator's address, "ip:port". */
	const char *peer_addr;
	/** InitiatorName once the login said it, else "". */
	const char *initiator_name;
	/** The target's name for a normal session, "" for discovery or during login. */
	const char *target_name;
	/** Connection ID (CID) and the session's TSIH (0 during login). */
	uint16_t cid;
	/** See @c cid. */
	uint16_t tsih;
	/** Whether the connection is in full feature phase. */
	bool full_feature;
	/** Whether it belongs to a discovery session. */
	bool discovery;
	/** PDUs received and sent. */
	uint64_t rx_pdus;
	/** See @c rx_pdus. */
	uint64_t tx_pdus;
	/** Bytes received and sent. */
	uint64_t rx_bytes;
	/** See @c rx_bytes. */
	uint64_t tx_bytes;
};

/**
 * Visitor of scsitgt_iscsi_engine_foreach_conn().
 *
 * @param cb_arg The argument given to scsitgt_iscsi_engine_foreach_conn().
 * @param stats  One connection; valid only during the call.
 * @return 0 to continue, anything else to stop the walk.
 *
 * It must not create or destroy portals, targets or connections.
 */
typedef int (*scsitgt_iscsi_conn_stats_cb)(void *cb_arg,
					   const struct scsitgt_iscsi_conn_stats *stats);

/**
 * Walk the engine's iSCSI connections (logging in, logged in, closing), calling @p cb with a
 * snapshot of each.
 *
 * @param engine The engine.
 * @param cb     The visitor; called synchronously, once per connection.
 * @param cb_arg Argument of @p cb.
 * @return 0 after visiting every connection (also when the engine has no iSCSI portal yet);
 *         the visitor's non-zero return value if it stopped the walk; -EINVAL if @p engine or
 *         @p cb is NULL.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_iscsi_engine_foreach_conn(struct scsitgt_engine *engine,
						     scsitgt_iscsi_conn_stats_cb cb, void *cb_arg);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_ISCSI_H */
