/* SPDX-License-Identifier: MIT */
/**
 * @file pr.h
 * Persistent reservation state of a LUN, for hosts that persist it (APTPL, SPC-5 §5.13.5) or
 * share it between engines.
 *
 * The state travels as a versioned byte string (all integers big-endian):
 *
 * | offset | size | field                                                             |
 * |--------|------|-------------------------------------------------------------------|
 * | 0      | 4    | magic "SGPR"                                                      |
 * | 4      | 2    | format version, 1                                                 |
 * | 6      | 2    | flags: bit 0 APTPL, bit 1 a reservation is held                   |
 * | 8      | 4    | PRgeneration                                                      |
 * | 12     | 1    | reservation type (SPC-5 Table 221), 0 when none                   |
 * | 13     | 1    | reservation scope, 0                                              |
 * | 14     | 2    | reserved, 0                                                       |
 * | 16     | 4    | index of the holder registration, 0xFFFFFFFF for none or all      |
 * | 20     | 4    | number of registrations N                                         |
 * | 24     | ...  | N registrations                                                   |
 *
 * A registration: reservation key (8 bytes), relative target port identifier (2), flags (1:
 * bit 0 the name is a device name that matches every ISID, bit 1 ALL_TG_PT), SCSI protocol
 * identifier (1), name length L (2), then L bytes of initiator port name ("<iSCSI name>,i,0x<ISID>")
 * without a terminating NUL. Readers refuse other versions, trailing bytes and bad fields.
 *
 * When APTPL is off the saved state carries no registrations: nothing survives a restart.
 *
 * Version 2 (SCSITGT_PR_STATE_VERSION_SHARED) is the state shared between engines through a
 * cluster store (scsitgt_lun_set_pr_cluster()). Its first 24 bytes and its registrations are
 * laid out as in version 1, with the version field 2, and the registrations are always present
 * (APTPL on or off: the engines share the state of one logical unit). A trailer follows them:
 *
 * | size | field                                                                        |
 * |------|------------------------------------------------------------------------------|
 * | 8    | change sequence: +1 with every committed PERSISTENT RESERVE OUT              |
 * | 2    | relative target port identifier of the I_T nexus that made the change        |
 * | 2    | its initiator port name length E (0: none), then E bytes of the name          |
 * | 4    | number of events M, then M events                                            |
 *
 * An event is what the change did to other I_T nexuses, so that every engine raises the same
 * unit attentions (SPC-5 §5.13.11) on its own nexuses: code (1), flags (1: bit 0 the name
 * matches every ISID, bit 1 every target port), relative target port identifier (2), name
 * length L (2), L bytes of initiator port name. Codes: 1 REGISTRATIONS PREEMPTED (2Ah/05h),
 * 2 RESERVATIONS PREEMPTED (2Ah/03h), 3 RESERVATIONS RELEASED (2Ah/04h), 4 abort the tasks of
 * the nexus on this logical unit (PREEMPT AND ABORT, SPC-5 §5.13.11.5). The nexus that made the
 * change never gets its own events. Readers of version 2 accept version 1 (no events).
 */
#ifndef LIBSCSITGT_PR_H
#define LIBSCSITGT_PR_H

#include "common.h"
#include "lun.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the state format given to a save callback and returned by
 * scsitgt_lun_save_pr_state(). */
#define SCSITGT_PR_STATE_VERSION 1
/** Version of the state a cluster store commits and delivers (the trailer above). */
#define SCSITGT_PR_STATE_VERSION_SHARED 2

/**
 * Called after every change of a LUN's persistent reservation state, with the new state.
 *
 * @param arg  The argument given to scsitgt_lun_set_pr_store().
 * @param lun  The LUN.
 * @param data The state (see the format above); valid during the call only.
 * @param len  Its length.
 *
 * Runs on the home loop, inside the PERSISTENT RESERVE OUT command: the command's status is
 * sent after the callback returns, so a synchronous write makes the change durable first.
 */
typedef void (*scsitgt_pr_save_cb)(void *arg, struct scsitgt_lun *lun, const void *data,
				   size_t len);

/**
 * Install a store for a LUN's reservation state. With a store the LUN reports PTPL_C (persist
 * through power loss capable) and accepts APTPL.
 *
 * @param lun  The LUN.
 * @param save The callback; NULL removes the store.
 * @param arg  Its argument.
 * @return 0; -EINVAL if @p lun is NULL; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_set_pr_store(struct scsitgt_lun *lun, scsitgt_pr_save_cb save,
					    void *arg);

/**
 * Replace a LUN's reservation state with @p data (as given to a save callback). A state saved
 * with APTPL off loads as "no registrations".
 *
 * @param lun  The LUN.
 * @param data The state.
 * @param len  Its length.
 * @return 0; -EINVAL for a NULL argument or malformed data (nothing changes); -ENOTSUP for
 *         another format version; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_load_pr_state(struct scsitgt_lun *lun, const void *data, size_t len);

/**
 * Serialise a LUN's current reservation state.
 *
 * @param lun The LUN.
 * @param buf Receives the state (may be NULL when @p cap is 0).
 * @param cap Size of @p buf.
 * @param len Receives the length of the state, also when @p buf is too small.
 * @return 0; -ENOSPC when @p cap is too small (then *@p len says how much is needed);
 *         -EINVAL for a NULL @p lun or @p len.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_save_pr_state(struct scsitgt_lun *lun, void *buf, size_t cap,
					     size_t *len);

/**
 * The default store: a file. Loads @p path if it exists (a missing file is an empty state),
 * then installs a store that rewrites the file atomically (write to "<path>.tmp", fsync,
 * rename, fsync of the directory) after every change. A PERSISTENT RESERVE OUT whose change cannot be written while
 * APTPL is on, or is being turned off, is undone and fails with HARDWARE ERROR, INTERNAL
 * TARGET FAILURE (a save callback of the host cannot fail: a host store that must refuse a
 * change is a cluster store, scsitgt_lun_set_pr_cluster()).
 *
 * @param lun  The LUN.
 * @param path The file. Copied.
 * @return 0; -EINVAL for a NULL argument or a malformed file; -ENOMEM; a negative errno of
 *         the read.
 *
 * Loop: home. The writes are synchronous.
 */
SCSITGT_EXPORT int scsitgt_lun_use_pr_file(struct scsitgt_lun *lun, const char *path);

/**
 * @defgroup pr_cluster Persistent reservations shared by several engines
 *
 * Several engines (gateways, usually on several machines) export one logical unit of a shared
 * store. Each keeps a copy of the reservation state and checks every command against it with
 * no round trip; a cluster store keeps the authoritative state (version 2 above) and a version
 * that changes with every commit (a RADOS object version, an etcd revision...).
 *
 * A PERSISTENT RESERVE OUT then runs as follows (one at a time per LUN and engine; others wait
 * in order):
 *
 * 1. the core calls @c fetch; the store answers with scsitgt_pr_req_complete_fetch(): the
 *    newest state and its version. The core applies it (as scsitgt_lun_apply_pr_state());
 * 2. the core executes the command against that state and, when it changes something, calls
 *    @c commit with the new state (sequence + 1, with the unit attentions the command
 *    raises as events) and the version fetched. Local state does not change yet;
 * 3. the store writes it only if its version is still the one fetched (compare and swap),
 *    delivers it to every other engine (which call scsitgt_lun_apply_pr_state()) and then
 *    answers scsitgt_pr_req_complete_commit() with 0. The core applies the state, raises the
 *    unit attentions on its own nexuses and sends the command's status: by then every engine
 *    that answered enforces the change;
 * 4. -ESTALE or -ECANCELED from the commit (another engine committed first): the core starts
 *    again at 1, up to SCSITGT_PR_CLUSTER_RETRIES times, then ends the command with BUSY. Any
 *    other error ends the command with HARDWARE ERROR, LOGICAL UNIT COMMUNICATION FAILURE
 *    (08h/00h) for -ETIMEDOUT, -ENOTCONN, -ESHUTDOWN, -ECONNREFUSED, -EHOSTUNREACH, INTERNAL
 *    TARGET FAILURE (44h/00h) otherwise, BUSY for -EBUSY and -EAGAIN; the local state stays
 *    as it was. A fetch error ends the command the same way.
 *
 * The store delivers a state (to any engine) only once it has stored it, and answers -ESTALE or
 * -ECANCELED only when it stored nothing. A store may deliver the committed state to the
 * committing engine too (a watch that sees its own notify): that delivery is proof that the
 * change is stored, so the command then ends as in 3 (GOOD, after its unit attentions and
 * aborts) whatever the answer says; an error answered after it is logged, never executed
 * again (the change would run twice: a PREEMPT would find its key gone).
 *
 * A PERSISTENT RESERVE OUT that changes nothing (a refused one, RESERVE by the holder) commits
 * nothing. PERSISTENT RESERVE IN and the reservation conflict checks use the local copy, as long
 * as the store has not said that the copy may be stale (scsitgt_lun_set_pr_sync()), has not
 * announced a delivery it has not applied yet (scsitgt_lun_start_pr_delivery()) and its lease
 * has not run out (scsitgt_lun_set_pr_lease()); in the last two cases the commands a
 * reservation could refuse wait (held, in order) rather than fail. A held command is in no
 * backend: a task management function or PREEMPT AND ABORT that aborts it, the LUN's removal
 * once its drain times out, and the loss of its I_T nexus end it at once (no response; the
 * function answers without waiting for the store), and it never runs afterwards.
 *
 * Threads: every call here is made on the LUN's home loop, except
 * scsitgt_lun_start_pr_delivery(), which a store calls from its own thread (where its
 * library delivers a notification) so that the mark is up before its loop could be late.
 * SPC-2 RESERVE/RELEASE are not supported on a LUN with a cluster store (INVALID COMMAND
 * OPERATION CODE): they belong to one engine's I_T nexus and could not exclude the others.
 * @{
 */

/** A fetch or commit the core asked a cluster store for. Opaque; owned by the core. */
struct scsitgt_pr_req;

/** Commits that found a newer version are retried this many times. */
#define SCSITGT_PR_CLUSTER_RETRIES 16

/**
 * A cluster store. Every callback runs on the LUN's home loop and must not complete its
 * request from inside the call: it answers later, on the home loop, exactly once per request
 * (also when the LUN is being removed: the command waits for it).
 */
struct scsitgt_pr_cluster_ops {
	/** sizeof(struct scsitgt_pr_cluster_ops). */
	size_t size;
	/**
	 * Read the newest state; answer with scsitgt_pr_req_complete_fetch().
	 *
	 * @param arg The argument given to scsitgt_lun_set_pr_cluster().
	 * @param lun The LUN.
	 * @param req The request.
	 */
	void (*fetch)(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req);
	/**
	 * Store @p data if the stored version is still @p version, deliver it to the other
	 * engines, answer with scsitgt_pr_req_complete_commit().
	 *
	 * @param arg     The argument given to scsitgt_lun_set_pr_cluster().
	 * @param lun     The LUN.
	 * @param req     The request.
	 * @param data    The new state (version 2), valid until the request is completed.
	 * @param len     Its length.
	 * @param version The version the fetch returned.
	 */
	void (*commit)(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
		       const void *data, size_t len, uint64_t version);
	/**
	 * The store is no longer used (replaced, or the LUN is freed); no request is pending.
	 * From its return the store calls nothing of this header with @p lun any more (the
	 * LUN may be freed right after), scsitgt_lun_complete_pr_delivery() of a delivery it
	 * announced before included (it is forgotten): a thread of its own that may be inside
	 * scsitgt_lun_start_pr_delivery() is waited for, and a store that outlives the LUN
	 * (kept by its backend, which an engine shutdown may close after the LUN's free:
	 * docs/threading.md, "Teardown") drops it here. May be NULL.
	 *
	 * @param arg The argument given to scsitgt_lun_set_pr_cluster().
	 * @param lun The LUN.
	 */
	void (*detach)(void *arg, struct scsitgt_lun *lun);
	/**
	 * A command was held because the lease ran out (scsitgt_lun_set_pr_lease()): confirm
	 * the channel now and answer later (not from inside the call) with a new lease, or with
	 * scsitgt_lun_set_pr_sync() when it is lost. Asked once per lapse, and once more
	 * after each change of scsitgt_lun_set_pr_sync()'s state. May be NULL (the
	 * store renews on its own schedule). Appended: a store compiled before it leaves it out
	 * of @c size.
	 *
	 * @param arg The argument given to scsitgt_lun_set_pr_cluster().
	 * @param lun The LUN.
	 */
	void (*recheck)(void *arg, struct scsitgt_lun *lun);
};

/**
 * Install a cluster store for a LUN's reservation state (it replaces a save callback's role:
 * with it the LUN reports PTPL_C). The host applies the current stored state first with
 * scsitgt_lun_apply_pr_state().
 *
 * @param lun  The LUN.
 * @param ops  The store; NULL removes it. Copied (@c size bytes).
 * @param arg  Its argument.
 * @return 0; -EINVAL for a NULL @p lun, a bad @c size or a missing callback; -EBUSY while a
 *         PERSISTENT RESERVE OUT waits for the store; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_set_pr_cluster(struct scsitgt_lun *lun,
					      const struct scsitgt_pr_cluster_ops *ops, void *arg);

/**
 * Answer a fetch.
 *
 * @param req     The request (dead after the call).
 * @param status  0, or a negative errno (the command fails, see above).
 * @param data    The stored state (version 1 or 2); NULL with @p len 0 when nothing is
 *                stored yet (an empty state). Valid during the call only.
 * @param len     Its length.
 * @param version The store's version of it, given back to @c commit.
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_pr_req_complete_fetch(struct scsitgt_pr_req *req, int status,
						  const void *data, size_t len, uint64_t version);

/**
 * Answer a commit.
 *
 * @param req    The request (dead after the call).
 * @param status 0 once stored and delivered; -ESTALE or -ECANCELED when the stored version
 *               had changed (nothing stored); another negative errno when the store failed
 *               (nothing stored, or the store cannot tell: the next fetch finds out). Ignored
 *               when the store delivered this very state to this engine first (the
 *               command ends as committed, see above).
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_pr_req_complete_commit(struct scsitgt_pr_req *req, int status);

/**
 * Apply a state committed by another engine (a cluster store delivers it). A version 2 state
 * whose change sequence is not newer than the applied one changes nothing (a duplicate or a
 * late delivery). A newer one replaces the registrations and the persistent reservation and
 * raises its events as unit attentions on this engine's I_T nexuses; when changes were missed
 * (the sequence jumped by more than one), the unit attentions are derived from the difference
 * instead: REGISTRATIONS PREEMPTED for the nexuses whose registration went, RESERVATIONS
 * RELEASED for the remaining registrants when a registrants-only or all-registrants
 * reservation went. A version 1 state replaces the state without unit attentions.
 *
 * @param lun  The LUN.
 * @param data The state.
 * @param len  Its length.
 * @return 0; -EINVAL for a NULL argument or malformed data (nothing changes); -ENOTSUP for an
 *         unknown version; -ENOMEM.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_apply_pr_state(struct scsitgt_lun *lun, const void *data,
					      size_t len);

/**
 * scsitgt_lun_apply_pr_state(), then @p cb once the tasks a PREEMPT AND ABORT in it aborted
 * on this engine have left their backends (SPC-5 §5.13.11.5: aborted before the command
 * completes): the moment a store acknowledges the delivery to the engine that committed it.
 * Bounded by the engine's TMF timeout (scsitgt_engine_set_tmf_timeout()): past it @p cb runs
 * anyway, the tasks stay aborted and end whenever their backend gives them back. @p cb runs on
 * home, always after the return, with status 0; a state that changes nothing calls back too.
 *
 * @param lun    The LUN.
 * @param data   The state.
 * @param len    Its length.
 * @param cb     Called once the aborts are over; not called when the call fails.
 * @param cb_arg Its argument.
 * @return As scsitgt_lun_apply_pr_state(); -EINVAL also for a NULL @p cb.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_apply_pr_state_async(struct scsitgt_lun *lun, const void *data,
						    size_t len, scsitgt_done_cb cb, void *cb_arg);

/**
 * How this engine's copy of the shared state stands (scsitgt_lun_set_pr_sync()). A store that
 * delivers states through a channel that can break (a RADOS watch the OSD dropped, a lost
 * connection) cannot know what it missed meanwhile, and another engine's commit completes
 * without this engine. In every state but SCSITGT_PR_SYNCED, PERSISTENT RESERVE IN fetches
 * (@c fetch) and applies the stored state before it answers (a fetch error ends it as a
 * PERSISTENT RESERVE OUT's does); PERSISTENT RESERVE OUT is unchanged (it always fetches
 * first); commands every reservation allows (INQUIRY, TEST UNIT READY, REPORT LUNS...) run.
 * The states differ in what a command that a persistent reservation could refuse (the read
 * and write classes of the conflict table, SPC-5 §5.13.1) gets, since the copy cannot tell
 * whether it is refused.
 */
enum scsitgt_pr_sync {
	/** Every state committed elsewhere is delivered: the copy decides. */
	SCSITGT_PR_SYNCED = 0,
	/** Deliveries may have been missed and the store is reading the state again (a broken
	 * channel it can restore at once): BUSY status, which initiators retry. */
	SCSITGT_PR_RESYNCING,
	/** The store cannot reach the state (no answer): CHECK CONDITION, NOT READY, LOGICAL UNIT
	 * IS IN PROCESS OF BECOMING READY (04h/01h), as a backend's I/O to an unreachable store
	 * ends, so that multipath initiators may fail over. */
	SCSITGT_PR_UNREACHABLE,
	/** This engine's client of the store is fenced (its access revoked, as a blocklisted Ceph
	 * client): CHECK CONDITION, NOT READY, LOGICAL UNIT NOT ACCESSIBLE, ASYMMETRIC ACCESS
	 * STATE TRANSITION (04h/0Ah), what a fenced backend answers its medium accesses, so that
	 * multipath initiators retry elsewhere; answered before the conflict check, since a
	 * RESERVATION CONFLICT from a copy that may be stale could be wrong. */
	SCSITGT_PR_FENCED,
};

/**
 * Tell the core how this engine's copy of the shared state stands: set a state other than
 * SCSITGT_PR_SYNCED as soon as the channel may have missed a delivery, and SCSITGT_PR_SYNCED
 * once it works again and a state read after that was applied (scsitgt_lun_apply_pr_state()).
 * A LUN starts synced when the store is installed (the host applied the current state), and
 * removing the store makes it synced. A LUN without a cluster store, or whose copy is synced,
 * pays nothing for it (one flag the conflict check loads anyway).
 *
 * @param lun   The LUN.
 * @param state The state.
 * @return 0; -EINVAL for a NULL @p lun or an unknown @p state; -ENOENT when the LUN has no
 *         cluster store.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_set_pr_sync(struct scsitgt_lun *lun, enum scsitgt_pr_sync state);

/**
 * A state committed elsewhere has reached this engine's store but is not applied yet (a RADOS
 * watch callback, on the library's own thread, that hands the notify to the home loop): from
 * now until the matching scsitgt_lun_complete_pr_delivery(), commands a persistent reservation
 * could refuse (as for scsitgt_lun_set_pr_sync()) are held, not failed, and PERSISTENT RESERVE
 * IN reads the store; once every announced delivery is complete they are checked against the
 * applied copy, in the order they arrived, and run or are refused. Without it, a command read
 * in the same loop iteration as the delivery, or after a loop stall that outlasted the other
 * engine's wait for this one, would be admitted on the copy the delivery replaces.
 *
 * Call it before the delivery can reach the loop; every call needs one
 * scsitgt_lun_complete_pr_delivery(), also for a delivery that turns out to carry no state.
 * Removing or installing the store forgets the deliveries announced before, and the count is
 * the LUN's, not the store's: a store must not complete a delivery it announced before it was
 * replaced (from its @c detach on; a store without one, from scsitgt_lun_set_pr_cluster()
 * on), or it ends one of the new store's and lets the commands held for that one go before
 * its state is applied. Drop such deliveries unapplied and uncompleted.
 *
 * @param lun The LUN.
 * @return 0; -EINVAL for a NULL @p lun; -ENOENT when the LUN has no cluster store (nothing
 *         is held).
 *
 * Thread: any (the store's own threads too); it takes the LUN's short lock and never calls
 * back. The LUN must be alive: a store stops its deliveries before its LUN is freed.
 */
SCSITGT_EXPORT int scsitgt_lun_start_pr_delivery(struct scsitgt_lun *lun);

/**
 * A delivery announced with scsitgt_lun_start_pr_delivery() was applied
 * (scsitgt_lun_apply_pr_state()) or dropped: when it was the last one, the commands held for
 * it are checked against the copy and run or are refused, in order.
 *
 * @param lun The LUN.
 * @return 0; -EINVAL for a NULL @p lun; -ENOENT without a cluster store; -EALREADY when no
 *         delivery is announced (the store was replaced meanwhile).
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_complete_pr_delivery(struct scsitgt_lun *lun);

/**
 * The store's lease on the copy: until @p until_ms (CLOCK_MONOTONIC, milliseconds) it knows
 * that every state committed elsewhere reaches it (a RADOS store: the send time of the last
 * ping its watch had answered plus the time the OSD keeps an unpinged watch, less a margin).
 * Commands a persistent reservation could refuse that arrive past it are held, never failed,
 * and the store's @c recheck is asked once; a later lease lets them run (checked against the
 * copy, in order), a scsitgt_lun_set_pr_sync() answers them as it says. The admission reads a
 * coarse clock (CLOCK_MONOTONIC_COARSE, one tick behind at most): keep a margin of more than
 * that. A store that sets a lease must renew it, or say the copy is stale, for as long as it
 * is installed. Installing or removing the store drops the lease.
 *
 * @param lun      The LUN.
 * @param until_ms The end of the lease; 0: no lease (nothing is held for time).
 * @return 0; -EINVAL for a NULL @p lun; -ENOENT without a cluster store.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_set_pr_lease(struct scsitgt_lun *lun, uint64_t until_ms);

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_PR_H */
