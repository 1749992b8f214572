/* SPDX-License-Identifier: MIT */
/**
 * @file stats.h
 * Counters and latency histograms of LUNs, I_T nexuses (sessions) and, in iscsi.h, iSCSI
 * connections, read while the engine runs.
 *
 * The library counts with plain increments on the objects' home loop (no locks, no atomics),
 * so every snapshot call here is `Loop: home`: call it from the engine's loop thread, e.g. from
 * a uv_timer or a uv_async the host owns. Each snapshot fills a size-prefixed struct: set
 * `size` to `sizeof(struct)` first; the library fills min(size, its own size) bytes, so a host
 * built against an older header keeps working when members are appended.
 *
 * Counters are 64-bit and only ever grow (until the object dies); rates are the host's
 * business (take two snapshots).
 */
#ifndef LIBSCSITGT_STATS_H
#define LIBSCSITGT_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "lun.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Number of latency buckets. Bucket 0 counts commands that took less than 2 microseconds,
 * bucket i (1 <= i < last) those that took [2^i, 2^(i+1)) microseconds, and the last bucket
 * everything from 2^(SCSITGT_LATENCY_BUCKETS - 1) microseconds (about 36 minutes) up.
 */
#define SCSITGT_LATENCY_BUCKETS 32

/**
 * Command counters shared by LUNs and sessions. A command is counted once, when its status
 * is ready (GOOD or not); commands aborted by a task management function or by the loss of
 * their nexus count as @ref aborted only.
 *
 * This struct is embedded in others, so its layout is frozen (docs/ABI.md): later counters
 * are appended to the enclosing snapshot structs instead.
 */
struct scsitgt_cmd_counters {
	/** Media reads: READ (6), (10), (12) and (16). */
	uint64_t read_cmds;
	/** Media writes: every command that changes the medium (WRITE, WRITE SAME, UNMAP...). */
	uint64_t write_cmds;
	/** Every other command (INQUIRY, TEST UNIT READY, MODE SENSE, PR IN, ...). */
	uint64_t other_cmds;
	/** Data-In bytes of successful media reads. */
	uint64_t bytes_read;
	/** Data-Out bytes of successful media writes. */
	uint64_t bytes_written;
	/** CHECK CONDITION statuses, indexed by sense key (0h..Fh, SPC-5 §4.4.3 Table 50). */
	uint64_t check_conditions[16];
	/** RESERVATION CONFLICT statuses (SPC-5 §5.13). */
	uint64_t reservation_conflicts;
	/** BUSY and TASK SET FULL statuses. */
	uint64_t busy;
	/** Commands aborted (no status sent). */
	uint64_t aborted;
	/** Task management functions received (ABORT TASK, LUN RESET, ...). */
	uint64_t tmfs;
};

/** Snapshot of a LUN, filled by scsitgt_lun_get_stats(). */
struct scsitgt_lun_stats {
	/** sizeof(struct scsitgt_lun_stats), set by the caller. */
	size_t size;
	/** Command counters, all nexuses together. */
	struct scsitgt_cmd_counters cmds;
	/** Commands on the LUN right now (parsed and not yet finished). */
	uint64_t inflight;
	/** Whether the LUN is offline (scsitgt_lun_set_offline()). */
	bool offline;
	/**
	 * Latency of finished commands, from the moment the fabric handed the CDB to the core
	 * (iSCSI over TCP: the read of the socket that brought it, one clock read for all the
	 * commands of that read) to the moment the status was ready (including Data-Out
	 * transfer of writes), in log2
	 * buckets of microseconds; see ::SCSITGT_LATENCY_BUCKETS.
	 */
	uint64_t latency_us[SCSITGT_LATENCY_BUCKETS];
};

/** An I_T nexus (opaque), handed out by scsitgt_target_foreach_session(). */
struct scsitgt_session;

/**
 * Snapshot of one I_T nexus, passed to a ::scsitgt_session_stats_cb. The strings and the
 * struct are valid only during the callback.
 */
struct scsitgt_session_stats {
	/** sizeof(struct scsitgt_session_stats) as the library fills it. */
	size_t size;
	/** Initiator name (iSCSI InitiatorName). */
	const char *initiator_name;
	/** Initiator port name (iSCSI "<name>,i,0x<ISID>"). */
	const char *initiator_port;
	/** Transport address of the initiator ("ip:port"), "" when the fabric did not say. */
	const char *initiator_addr;
	/** Target port name (iSCSI "<target>,t,0x<TPGT>"). */
	const char *target_port;
	/** Command counters of this nexus, every LUN together. */
	struct scsitgt_cmd_counters cmds;
	/** Commands of this nexus in the core right now. */
	uint64_t inflight;
	/**
	 * The nexus itself, for scsitgt_session_kick(). Valid until the visitor returns; look
	 * it up again (visit the sessions) before a later call.
	 */
	struct scsitgt_session *session;
};

/**
 * Visitor of scsitgt_target_foreach_session().
 *
 * @param cb_arg The argument given to scsitgt_target_foreach_session().
 * @param stats  One session. Valid only during the call.
 * @return 0 to continue, anything else to stop the walk (scsitgt_target_foreach_session()
 *         then returns that value).
 *
 * It must not create or destroy targets, LUNs or sessions.
 */
typedef int (*scsitgt_session_stats_cb)(void *cb_arg, const struct scsitgt_session_stats *stats);

/**
 * Take a snapshot of a LUN's counters.
 *
 * @param lun   The LUN.
 * @param stats Receives the snapshot; set stats->size to sizeof(*stats) first. On return
 *              stats->size holds the number of bytes filled.
 * @return 0; -EINVAL if an argument is NULL or stats->size is smaller than sizeof(size_t).
 *
 * Loop: home. Cheap (a copy); never blocks the engine.
 */
SCSITGT_EXPORT int scsitgt_lun_get_stats(const struct scsitgt_lun *lun,
					 struct scsitgt_lun_stats *stats);

/**
 * Zero a LUN's counters and histogram (not @c inflight): later snapshots count from this call
 * on. A command that a worker loop counts during the call is counted either before it or
 * after it, never both and never lost. An initiator's LOG SELECT reset of the statistics log
 * page is separate: neither changes what the other reports.
 *
 * @param lun The LUN.
 * @return 0; -EINVAL for a NULL @p lun.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_reset_stats(struct scsitgt_lun *lun);

/**
 * End an I_T nexus ("kick" an initiator): the fabric asks the initiator to log out (iSCSI:
 * an Async Message, AsyncEvent 1 "target requests logout", RFC 7143 §11.9.1, with
 * DefaultTime2Wait clamped to 1..5 s as the time to do it; SRP: SRP_T_LOGOUT) and closes the
 * connections when the initiator has not logged out after that time plus one second. Its
 * commands then end as on any nexus loss, and the session-logout event follows. An initiator
 * that is still allowed may log in again at once: to keep it out, remove it from the ACL
 * (scsitgt_target_remove_initiator()) first.
 *
 * @param session The nexus, from scsitgt_session_stats::session during a
 *                scsitgt_target_foreach_session() walk (the call may be made from the visitor).
 * @return 0; -EINVAL if @p session is NULL; -EALREADY if the nexus is already being ended
 *         (kicked before, logged out or lost, or its target is being destroyed).
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_session_kick(struct scsitgt_session *session);

/**
 * Walk the target's I_T nexuses (logged-in sessions), calling @p cb with a snapshot of each.
 * A nexus that is ending (its ::SCSITGT_EVENT_SESSION_LOGOUT event delivered) is not visited,
 * although its commands may still be finishing.
 *
 * @param tgt    The target.
 * @param cb     The visitor; called synchronously, once per session, in login order.
 * @param cb_arg Argument of @p cb.
 * @return 0 after visiting every session; the visitor's non-zero return value if it stopped
 *         the walk; -EINVAL if @p tgt or @p cb is NULL.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_foreach_session(struct scsitgt_target *tgt,
						  scsitgt_session_stats_cb cb, void *cb_arg);

/**
 * A LUN by number.
 *
 * @param tgt The target.
 * @param id  The LUN number.
 * @return The LUN, or NULL if @p tgt is NULL or has no (live) LUN @p id.
 *
 * Loop: home.
 */
SCSITGT_EXPORT struct scsitgt_lun *scsitgt_target_get_lun(const struct scsitgt_target *tgt,
							  uint64_t id);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_STATS_H */
