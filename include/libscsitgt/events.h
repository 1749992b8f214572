/* SPDX-License-Identifier: MIT */
/**
 * @file events.h
 * Event callbacks: the engine tells the host about logins, logouts, reservation and ALUA
 * changes, LUN errors and LUN state changes as they happen.
 */
#ifndef LIBSCSITGT_EVENTS_H
#define LIBSCSITGT_EVENTS_H

#include <stdint.h>

#include "common.h"
#include "engine.h"
#include "lun.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What happened. New types are appended; a host ignores types it does not know. */
enum scsitgt_event_type {
	/** An I_T nexus entered full feature phase (iSCSI: a normal session logged in). */
	SCSITGT_EVENT_SESSION_LOGIN = 1,
	/** An I_T nexus ended (logout, connection loss, reinstatement, target removal). */
	SCSITGT_EVENT_SESSION_LOGOUT = 2,
	/**
	 * A command changed the LUN's reservations: PERSISTENT RESERVE OUT (any service
	 * action, @c service_action says which), RESERVE or RELEASE, completed with GOOD.
	 */
	SCSITGT_EVENT_RESERVATION_CHANGED = 3,
	/** A target port group of the LUN changed its asymmetric access state (SPC-5 §5.16). */
	SCSITGT_EVENT_ALUA_STATE_CHANGED = 4,
	/**
	 * A command on the LUN failed with MEDIUM ERROR or HARDWARE ERROR (the backend or the
	 * medium failed, not the initiator's request); sense_key/asc/ascq say how.
	 */
	SCSITGT_EVENT_LUN_ERROR = 5,
	/** The LUN went offline (scsitgt_lun_set_offline(lun, true)). */
	SCSITGT_EVENT_LUN_OFFLINE = 6,
	/** The LUN came back online. */
	SCSITGT_EVENT_LUN_ONLINE = 7,
	/**
	 * A login was refused (not redirected): @c login_status is the iSCSI status class and
	 * detail (RFC 7143 §11.13.5, e.g. 0x0201 authentication failure, 0x0202 authorization
	 * failure, 0x0203 target not found, 0x0206 too many connections), @c reason its text
	 * (for a refused CHAP login followed by what went wrong, e.g. "authentication failure:
	 * wrong response (secret mismatch) for user \"u\"", which the initiator is not told:
	 * docs/iscsi.md, "CHAP"),
	 * @c initiator_addr the peer, @c initiator_name and @c target_name the names as sent
	 * (escaped: control characters and invalid UTF-8 as "\xNN"; NULL when not sent),
	 * @c target the target when one by that name exists.
	 */
	SCSITGT_EVENT_LOGIN_FAILED = 8,
	/**
	 * A task management function arrived, before it runs: @c tmf_function says which,
	 * @c lun_id the LUN it names (@c lun when it exists), initiator_* the nexus.
	 */
	SCSITGT_EVENT_TMF = 9,
	/**
	 * An iSCSI connection (TCP or iSER) is being closed because of an error, before its
	 * session hears of it: @c conn_error says which kind (enum scsitgt_conn_error),
	 * @c reason the detail in words ("header digest error", "NOP-In ping timeout", ...),
	 * @c initiator_addr the peer ("ip:port"). When the connection belongs to a normal
	 * session, @c target, @c initiator_name and @c initiator_port name its nexus; during
	 * login or in a discovery session they are NULL. An orderly close by the initiator (TCP
	 * FIN) is no error: the session's end is reported by ::SCSITGT_EVENT_SESSION_LOGOUT.
	 */
	SCSITGT_EVENT_CONNECTION_ERROR = 10,
};

/** Kinds of connection errors in ::SCSITGT_EVENT_CONNECTION_ERROR. */
enum scsitgt_conn_error {
	/** A header or data digest did not match (RFC 7143 §7.8). */
	SCSITGT_CONN_ERROR_DIGEST = 1,
	/**
	 * The initiator broke the protocol: a malformed PDU, a data segment above
	 * MaxRecvDataSegmentLength, a non-login PDU during login (RFC 7143 §7.1).
	 */
	SCSITGT_CONN_ERROR_PROTOCOL = 2,
	/** The transport failed under the connection: a TCP reset or another socket error. */
	SCSITGT_CONN_ERROR_RESET = 3,
	/**
	 * The initiator did not answer in time: the login timeout, a NOP-In ping unanswered, a
	 * requested logout (scsitgt_session_kick()) that did not come.
	 */
	SCSITGT_CONN_ERROR_TIMEOUT = 4,
};

/** Task management functions in ::SCSITGT_EVENT_TMF (RFC 7143 §11.5.1 codes; SAM-5 §7). */
enum scsitgt_tmf_function {
	SCSITGT_TMF_ABORT_TASK = 1,
	SCSITGT_TMF_ABORT_TASK_SET = 2,
	SCSITGT_TMF_CLEAR_ACA = 3,
	SCSITGT_TMF_CLEAR_TASK_SET = 4,
	SCSITGT_TMF_LOGICAL_UNIT_RESET = 5,
	SCSITGT_TMF_TARGET_WARM_RESET = 6,
	SCSITGT_TMF_TARGET_COLD_RESET = 7,
	/** SAM-5 §7.8 (SRP; iSCSI has no code for it). */
	SCSITGT_TMF_QUERY_TASK = 0x80,
	/** SAM-5 §7.9. */
	SCSITGT_TMF_QUERY_TASK_SET = 0x81,
	/** SAM-5 §7.10. */
	SCSITGT_TMF_QUERY_ASYNC_EVENT = 0x82,
};

/**
 * One event. Members that do not apply to the type are 0 or NULL. The struct and the strings
 * it points to are valid only during the callback; copy what you keep. New members are
 * appended; @c size says how many bytes are valid.
 */
struct scsitgt_event {
	/** sizeof(struct scsitgt_event) as the library fills it. */
	size_t size;
	/** What happened. */
	enum scsitgt_event_type type;
	/** The target, NULL when none applies. */
	struct scsitgt_target *target;
	/** The LUN (reservation, ALUA, LUN error and state events), else NULL. */
	struct scsitgt_lun *lun;
	/** The LUN number when @c lun is set. */
	uint64_t lun_id;
	/** Initiator name of the nexus (session and reservation events, LUN errors). */
	const char *initiator_name;
	/** Initiator port name of the nexus ("<name>,i,0x<ISID>" for iSCSI). */
	const char *initiator_port;
	/**
	 * Initiator transport address ("ip:port") of session, login, TMF and connection error
	 * events, "" when the fabric did not say; NULL for events without a nexus (LUN state,
	 * ALUA).
	 */
	const char *initiator_addr;
	/** LUN errors: the operation code; reservation events: RESERVE/RELEASE/PR OUT opcode. */
	uint8_t opcode;
	/** Reservation events from PERSISTENT RESERVE OUT: its SERVICE ACTION (SPC-5 §6.17). */
	uint8_t service_action;
	/** LUN errors: the sense key, ASC and ASCQ. */
	uint8_t sense_key;
	/** See @c sense_key. */
	uint8_t asc;
	/** See @c sense_key. */
	uint8_t ascq;
	/** ALUA events: the target port group. */
	uint16_t alua_group;
	/** ALUA events: previous asymmetric access state (SPC-5 Table 149 code). */
	uint8_t alua_old_state;
	/** ALUA events: new asymmetric access state. */
	uint8_t alua_new_state;
	/* Appended after the first release. */
	/** ::SCSITGT_EVENT_LOGIN_FAILED: the login status (class << 8 | detail). */
	uint16_t login_status;
	/** ::SCSITGT_EVENT_TMF: the function (enum scsitgt_tmf_function). */
	uint8_t tmf_function;
	/** ::SCSITGT_EVENT_LOGIN_FAILED and ::SCSITGT_EVENT_CONNECTION_ERROR: why, in words. */
	const char *reason;
	/** ::SCSITGT_EVENT_LOGIN_FAILED: the TargetName sent (escaped), NULL for none. */
	const char *target_name;
	/** ::SCSITGT_EVENT_CONNECTION_ERROR: the kind (enum scsitgt_conn_error). */
	uint8_t conn_error;
};

/**
 * Event callback.
 *
 * @param cb_arg The argument given to scsitgt_engine_set_event_cb().
 * @param event  The event; valid only during the call.
 *
 * Thread: called on the engine's home loop, from inside the library's processing (never from a
 * host call that changed nothing). It must not destroy the engine, the target or the LUN named
 * in the event; deferring such work to the loop is fine.
 */
typedef void (*scsitgt_event_cb)(void *cb_arg, const struct scsitgt_event *event);

/**
 * Install (or with NULL remove) the engine's event callback. There is one per engine; a new
 * call replaces the previous one.
 *
 * @param engine The engine.
 * @param cb     The callback, or NULL for none.
 * @param cb_arg Argument of @p cb.
 * @return 0; -EINVAL for a NULL @p engine.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_engine_set_event_cb(struct scsitgt_engine *engine, scsitgt_event_cb cb,
					       void *cb_arg);

/**
 * A short English name of an event type ("session-login", ...), for logs.
 *
 * @param type The type.
 * @return A static string; "unknown" for an unknown type. Thread-safe.
 */
SCSITGT_EXPORT const char *scsitgt_event_type_name(enum scsitgt_event_type type);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_EVENTS_H */
