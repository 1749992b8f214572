/* SPDX-License-Identifier: MIT */
/**
 * @file backend.h
 * The storage interface: what a host backend implements, the io object it receives, how it
 * completes it, and the built-in null and RAM backends (implemented on this same interface).
 */
#ifndef LIBSCSITGT_BACKEND_H
#define LIBSCSITGT_BACKEND_H

#include <stdbool.h>
#include <sys/uio.h>
#include <uv.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

struct scsitgt_lun;

/** One backend I/O. Owned by the library; lent to the backend from submit() until completed. */
struct scsitgt_io;

/** What an io asks of the backend. The core emulates every other SCSI command on these. */
enum scsitgt_io_type {
	/** Read num_blocks blocks at lba into the iovecs. Required. */
	SCSITGT_IO_READ = 0,
	/** Write num_blocks blocks at lba from the iovecs. Required unless the LUN is read-only. */
	SCSITGT_IO_WRITE = 1,
	/**
	 * Make every completed write durable (WRITE ZEROES and UNMAP included). Optional:
	 * without it a FLUSH is a no-op. With SCSITGT_GEOMETRY_WRITE_CACHE the core sends it
	 * for SYNCHRONIZE CACHE and START STOP UNIT whatever the current WCE is (writes cached
	 * while it was 1 may still be dirty, SBC-4 §5.27), when MODE SELECT turns WCE off,
	 * after a write sent without FUA that completes once WCE is off, after a WRITE ZEROES
	 * or UNMAP that must be durable (WCE off; UNMAP of a LUN that reports LBPRZ), before
	 * the READ io of a READ with FUA (SBC-4: cached blocks go to the medium before they are
	 * read; the READ io itself carries no FUA), and at the end of a SANITIZE.
	 */
	SCSITGT_IO_FLUSH = 2,
	/**
	 * Deallocate the range; later reads return zeros if the geometry says LBPRZ. Optional:
	 * without it a LUN cannot be thin (SCSITGT_LUN_THIN is refused), and WRITE SAME with
	 * UNMAP on a fully provisioned LUN writes the data instead (SBC-4 §5.48: the device
	 * server may write rather than unmap).
	 */
	SCSITGT_IO_UNMAP = 3,
	/**
	 * Write zeros to the range without a data buffer. Optional: when the backend does not
	 * support it, the core emulates it (WRITE SAME of a zero block, and unmapping requests
	 * it cannot pass on) with WRITE ios of at most 1 MiB each, issued one after another
	 * from one bounded zeroed buffer.
	 */
	SCSITGT_IO_WRITE_ZEROES = 4,
	/**
	 * Write the one block the iovecs hold (block_size bytes) to each of the num_blocks
	 * blocks from lba (SBC-4 §5.50 WRITE SAME), honouring SCSITGT_IO_FLAG_FUA. Optional:
	 * without it the core writes the block repeated with WRITE ios of at most 1 MiB each,
	 * one after another. A zero block still goes to SCSITGT_IO_WRITE_ZEROES (or UNMAP) when
	 * the backend has it. Appended after the first release.
	 */
	SCSITGT_IO_WRITE_SAME = 5,
	/**
	 * Report the provisioning status (SBC-4 §5.17 GET LBA STATUS) of the blocks from lba on,
	 * at most num_blocks of them, as extents in the array scsitgt_io_get_lba_extents()
	 * returns; no data buffer. The asynchronous counterpart of the get_lba_status() op, for
	 * backends whose answer needs a slow query (a remote allocation map): the core prefers
	 * it when the backend supports both. Only asked on thin LUNs (SCSITGT_LUN_THIN).
	 * Optional. Appended after the first release.
	 */
	SCSITGT_IO_GET_LBA_STATUS = 6,
};

/** Provisioning status of an extent (SBC-4 Table 57 PROVISIONING STATUS). */
enum scsitgt_lba_status {
	/** Mapped, or not known to be deallocated: always a correct answer. */
	SCSITGT_LBA_MAPPED = 0,
	/** Deallocated: the blocks hold no storage (unmapped, or never written). */
	SCSITGT_LBA_DEALLOCATED = 1,
};

/**
 * One extent of a SCSITGT_IO_GET_LBA_STATUS answer. Extents follow each other without gaps:
 * the first one starts at the io's LBA, each next one where the previous one ended.
 */
struct scsitgt_lba_extent {
	/** Blocks in the extent; 0 ends the list before the array's end. */
	uint64_t num_blocks;
	/** enum scsitgt_lba_status; unknown values count as SCSITGT_LBA_MAPPED. */
	uint32_t status;
	/** Zero. */
	uint32_t reserved;
};

/**
 * io flag: Force Unit Access; the write must be durable before the io completes. Set only on
 * SCSITGT_IO_WRITE and SCSITGT_IO_WRITE_SAME. WRITE ZEROES and UNMAP never carry it: when a
 * command needs them durable (WRITE SAME with the write cache disabled, SBC-4 §6.5.5) the
 * core follows them with a SCSITGT_IO_FLUSH before the status, so a backend with a volatile
 * cache (SCSITGT_GEOMETRY_WRITE_CACHE) supports FLUSH, and its FLUSH makes the completed
 * WRITE ZEROES and UNMAP durable too (on a file: fdatasync() after fallocate()).
 */
#define SCSITGT_IO_FLAG_FUA (1u << 0)
/**
 * io flag (READ only): the data goes to the initiator as it is, so the backend may lend its
 * own memory with scsitgt_io_lend_data() instead of copying into the io's iovecs. Set on plain
 * READ commands of transports that send from any memory (iSCSI over TCP); never on reads the
 * core inspects (COMPARE AND WRITE, VERIFY, EXTENDED COPY, ...).
 */
#define SCSITGT_IO_FLAG_MAY_LEND (1u << 1)

/**
 * Backend flag (scsitgt_backend_ops.flags): the backend may be called on any of the engine's
 * loops (docs/threading.md, section 3). submit() and abort() are then called on the loop of
 * the command the io belongs to, scsitgt_io_get_loop(), which is the home loop or one of the
 * engine's worker loops, and several loops may call them at once for ios of the same LUN;
 * get_lba_status() likewise, on the loop of the command that asks. The backend completes each
 * io on that loop (scsitgt_io_complete() and friends) or from a thread of its own with
 * scsitgt_io_complete_threadsafe(), which wakes that loop; the io's accessors are for that
 * loop. Whatever the backend keeps per loop (timers, queues, rings) it keeps per loop, and
 * state it shares between loops is its own to make thread-safe. open(), close(), supports(),
 * reset(), reset_async(), get_size() and resize() stay on the home loop.
 *
 * Without the flag (every backend written before it) nothing changes for the backend: every
 * call is on the home loop. A command that runs on another loop has its io posted to the home
 * loop, submit() is called there, and the completion (on the home loop, or thread-safe) is
 * posted back to the command's loop by the library; such an io is not offered to abort() and
 * does not carry SCSITGT_IO_FLAG_MAY_LEND (lent memory is released on the command's loop).
 */
#define SCSITGT_BACKEND_MULTI_LOOP (1u << 0)

/**
 * Backend flag (scsitgt_backend_ops.flags): every WRITE io the backend completes with an error
 * leaves the whole range as it was, and no failure of the medium or of the host (crash, power
 * loss) can leave part of a write's range old and part new: each write is stored all or none.
 * Only with this flag does the library offer WRITE ATOMIC (16) on the backend's LUNs (SBC-4
 * §4.29: REPORT SUPPORTED OPERATION CODES lists it, VPD B0 has non-zero atomic limits); on the
 * others the command is an INVALID COMMAND OPERATION CODE and the VPD B0 atomic fields are 0.
 * The library itself makes an atomic write atomic against the LUN's other commands (a range
 * lock), and sends it as an ordinary SCSITGT_IO_WRITE of at most VPD B0's MAXIMUM ATOMIC
 * TRANSFER LENGTH blocks. Set by the RAM and null backends, not by the file or RBD backends.
 * Appended after the first release: older tables leave it 0 (no atomic writes).
 */
#define SCSITGT_BACKEND_ATOMIC_WRITE (1u << 1)

/** Geometry flag: the backend has a volatile write cache (FLUSH is meaningful). */
#define SCSITGT_GEOMETRY_WRITE_CACHE (1u << 0)
/** Geometry flag: deallocated (unmapped) blocks read back as zeros (SBC-4 LBPRZ). */
#define SCSITGT_GEOMETRY_LBPRZ (1u << 1)
/** Geometry flag: the medium does not rotate (VPD B1 MEDIUM ROTATION RATE 1). */
#define SCSITGT_GEOMETRY_NON_ROTATIONAL (1u << 2)

/**
 * The shape of a LUN's medium. The library fills it with the LUN options' values (0 when
 * unset) and sets size before calling open(); the backend checks or completes it.
 */
struct scsitgt_lun_geometry {
	/** sizeof(struct scsitgt_lun_geometry) as the library was compiled. */
	size_t size;
	/** Logical block size in bytes: 512 or 4096 (others are refused). */
	uint32_t block_size;
	/** Number of logical blocks (capacity), at least 1. */
	uint64_t num_blocks;
	/** Physical blocks per logical block exponent (SBC-4 READ CAPACITY 16), 0 by default. */
	uint8_t physical_block_exponent;
	/** Optimal transfer length in blocks (VPD B0), 0 if unknown. */
	uint32_t optimal_transfer_blocks;
	/** SCSITGT_GEOMETRY_* flags. */
	uint32_t flags;
	/**
	 * Smallest unit, in logical blocks, in which the backend really deallocates (VPD B0
	 * OPTIMAL UNMAP GRANULARITY, with UGAVALID and alignment 0): unmapping less, or off
	 * that alignment, may leave the data in place. 0: one physical block. Appended after
	 * the first release; the library keeps 0 for backends that do not set it.
	 */
	uint32_t unmap_granularity_blocks;
};

/**
 * A backend: the table of operations a storage provider implements. The library copies
 * min(size, sizeof) bytes at scsitgt_lun_create(), so the table may live on the stack. Every
 * callback is called on the LUN's home loop (submit(), abort() and get_lba_status() on the io's
 * loop with SCSITGT_BACKEND_MULTI_LOOP), with @p bctx the backend_ctx of the LUN options.
 */
struct scsitgt_backend_ops {
	/** sizeof(struct scsitgt_backend_ops) as the backend was compiled. */
	size_t size;
	/** Short name for logs, e.g. "ram". */
	const char *name;
	/** Private bytes allocated with each io, reachable through scsitgt_io_get_ctx(). */
	size_t io_ctx_size;
	/**
	 * Open the medium and complete @p geo. Required.
	 *
	 * @param bctx The backend context.
	 * @param geo  Pre-filled from the LUN options; block_size or num_blocks 0 means "tell me".
	 * @return 0, or a negative errno that fails scsitgt_lun_create() with it. Even after
	 *         open() returned 0, scsitgt_lun_create() may still fail (the geometry or the
	 *         LUN flags are refused); the context is then the caller's again, who
	 *         releases it with close() (lun.h).
	 */
	int (*open)(void *bctx, struct scsitgt_lun_geometry *geo);
	/**
	 * Close the medium and free @p bctx. Required. Ownership rule: the library calls it
	 * only for a LUN that scsitgt_lun_create() created; when scsitgt_lun_create() fails the
	 * caller calls it instead, on a context whose open() may have succeeded, failed or never
	 * run, so close() must release whatever the context holds in each of these states.
	 * Called at most once, on the home loop, never while the backend holds an io: after
	 * every io it was given was completed. If the engine is destroyed while the backend
	 * still holds ios (scsitgt_engine_set_drain_timeout() expired), close() is never called:
	 * the host owns @p bctx again and frees it once its backend has completed every io it
	 * held (docs/threading.md, "Teardown").
	 *
	 * @param bctx   The backend context.
	 * @param cb     Call it once when closed (may be from inside close()). May be NULL.
	 * @param cb_arg Argument of @p cb.
	 */
	void (*close)(void *bctx, scsitgt_done_cb cb, void *cb_arg);
	/**
	 * Start an io. Required. Complete it later (or now) with scsitgt_io_complete(),
	 * scsitgt_io_complete_sense() or, from another thread, scsitgt_io_complete_threadsafe().
	 *
	 * @param bctx The backend context.
	 * @param io   The io; lent until completed.
	 */
	void (*submit)(void *bctx, struct scsitgt_io *io);
	/**
	 * Whether the backend handles an io type. Optional, may be NULL: then only READ and
	 * WRITE are used, FLUSH becomes a no-op and UNMAP is not advertised.
	 *
	 * @param bctx The backend context.
	 * @param type The io type.
	 * @return true if submit() handles @p type.
	 */
	bool (*supports)(void *bctx, enum scsitgt_io_type type);
	/**
	 * The provisioning status of the blocks from @p lba on (SBC-4 §5.17 GET LBA STATUS).
	 * Optional, may be NULL: then every block counts as mapped. Appended to the table after
	 * the first release; backends compiled with the older, shorter table leave it NULL.
	 *
	 * Synchronous: it is called on the home loop (with SCSITGT_BACKEND_MULTI_LOOP: on the
	 * loop of the command that asks) and must answer from what the backend knows
	 * at once (an allocation map, SEEK_DATA/SEEK_HOLE); a backend whose answer needs a slow
	 * query leaves it NULL and supports SCSITGT_IO_GET_LBA_STATUS instead, which the core
	 * prefers when a backend has both.
	 *
	 * @param bctx           The backend context.
	 * @param lba            First block asked about (below the capacity).
	 * @param num_blocks_out Receives how many blocks from @p lba on (at least 1) share one
	 *                       status; the backend may stop early, the core asks again.
	 * @param mapped_out     Receives true for mapped blocks, false for deallocated ones.
	 * @return 0, or a negative errno mapped as for scsitgt_io_complete().
	 */
	int (*get_lba_status)(void *bctx, uint64_t lba, uint64_t *num_blocks_out, bool *mapped_out);
	/**
	 * The command an io belongs to was aborted (ABORT TASK, ABORT TASK SET, CLEAR TASK SET,
	 * a reset, the nexus ending). Optional, may be NULL: the library then waits for the io
	 * as usual, a task management function at most the engine's TMF timeout
	 * (scsitgt_engine_set_tmf_timeout()). A backend that can cancel the io does so and
	 * completes it soon, with any status (the initiator never sees it; -ECANCELED is
	 * customary), but never from inside abort() itself. A backend that cannot cancel it
	 * ignores the call and completes the io whenever it finishes: the io stays lent to it
	 * either way. Called at most once per io, on the home loop (with
	 * SCSITGT_BACKEND_MULTI_LOOP: on the io's loop, scsitgt_io_get_loop()), possibly for an io the
	 * backend has just completed through scsitgt_io_complete_threadsafe() whose completion
	 * has not reached the loop yet: then there is nothing to cancel. Appended after the
	 * first release; older tables leave it NULL.
	 *
	 * @param bctx The backend context.
	 * @param io   The io, still lent to the backend.
	 */
	void (*abort)(void *bctx, struct scsitgt_io *io);
	/**
	 * The logical unit was reset (LOGICAL UNIT RESET, TARGET WARM or COLD RESET, SAM-5
	 * §6.3.2): called once per reset, after abort() was called for each of the LUN's ios.
	 * A backend with state of its own to reset (a pass-through device, a session with a
	 * remote volume) resets it here; the library does not wait for it. Optional, may be
	 * NULL. Appended after the first release; older tables leave it NULL.
	 *
	 * @param bctx The backend context.
	 */
	void (*reset)(void *bctx);
	/**
	 * As reset(), for a backend that must finish something before the reset is answered:
	 * one logical unit exported by several engines (gateways) tells the others, so that
	 * their nexuses show the reset's unit attention (they call scsitgt_lun_apply_reset())
	 * before the initiator learns that the reset is done (SAM-5 §6.3.3: the reset is the
	 * logical unit's, every I_T nexus sees it). The task management function's response waits
	 * until @p cb runs, at most the engine's TMF timeout. Called instead of reset() when
	 * both are set, at the same point. @p cb may be called from inside, from the home loop
	 * only, exactly once, with 0 or a negative errno (the reset is answered either way).
	 * Optional, may be NULL. Appended after the first release; older tables leave it NULL.
	 *
	 * @param bctx   The backend context.
	 * @param cb     Call it once when done.
	 * @param cb_arg Argument of @p cb.
	 */
	void (*reset_async)(void *bctx, scsitgt_done_cb cb, void *cb_arg);
	/**
	 * Read the medium's current capacity again (a file grown with truncate(1), a block
	 * device resized by lvextend or the storage array) and adopt it for the backend's own
	 * range checks. Optional, may be NULL: then scsitgt_lun_resize_medium() cannot ask and
	 * the host passes the size itself (scsitgt_lun_resize()). Synchronous, on the home loop.
	 * Appended after the first release; older tables leave it NULL.
	 *
	 * @param bctx           The backend context.
	 * @param num_blocks_out Receives the capacity in logical blocks of the LUN's block size.
	 * @return 0, or a negative errno (scsitgt_lun_resize_medium() returns it).
	 */
	int (*get_size)(void *bctx, uint64_t *num_blocks_out);
	/**
	 * Change the medium's capacity to @p num_blocks (grow or shrink a file) and adopt it.
	 * Optional, may be NULL: then scsitgt_lun_resize_medium() with a size answers -ENOTSUP.
	 * Synchronous, on the home loop; called only while the new size passed the host's
	 * in-use floor. Appended after the first release; older tables leave it NULL.
	 *
	 * @param bctx       The backend context.
	 * @param num_blocks The new capacity in logical blocks, > 0.
	 * @return 0, or a negative errno (-ENOTSUP where the medium cannot be resized from
	 *         here, e.g. a block device); the medium then keeps its size.
	 */
	int (*resize)(void *bctx, uint64_t num_blocks);
	/**
	 * SCSITGT_BACKEND_* flags: SCSITGT_BACKEND_MULTI_LOOP, the backend may be called on any
	 * of the engine's loops; SCSITGT_BACKEND_ATOMIC_WRITE, its writes are all or none (WRITE
	 * ATOMIC (16) is offered). 0 by default. Appended after the first release; older tables
	 * leave it 0 (every call on the home loop).
	 */
	uint32_t flags;
	/**
	 * The LUN is going away: scsitgt_lun_destroy() was called for it (by the host, or by
	 * the destroy of its target or engine). A backend that keeps the LUN's handle (given by
	 * its host, as scsitgt_backend_rbd_set_lun() does, or taken from scsitgt_io_get_lun())
	 * forgets it here: from this call on it calls nothing with @p lun (scsitgt_lun_resize(),
	 * scsitgt_lun_set_offline(), ...) for events of its own, such as a medium that changed
	 * size, because the LUN's target may be freed before close() is called, and the LUN
	 * itself without close() ever being called (an engine destroyed while the backend held
	 * ios past the drain timeout; docs/threading.md, "Teardown"). ios still lent to the
	 * backend stay lent and are completed as usual; close() follows once they are all back
	 * unless the engine gave up on them. A cluster store of persistent reservations it
	 * installed on the LUN (pr.h) keeps its own contract, until its detach.
	 *
	 * Called exactly once per LUN that scsitgt_lun_create() created, on the home loop, at
	 * the start of scsitgt_lun_destroy(), before close() and before the LUN is freed; never
	 * for a LUN whose creation failed. Optional, may be NULL. Appended after the first
	 * release; older tables leave it NULL.
	 *
	 * @param bctx The backend context.
	 * @param lun  The LUN, still valid during the call.
	 */
	void (*detach)(void *bctx, struct scsitgt_lun *lun);
};

/**
 * The loop the io is submitted and completed on: the loop whose thread runs submit() for it
 * and on which the backend completes it with scsitgt_io_complete() (a thread-safe completion
 * wakes this loop). The home loop (scsitgt_engine_get_loop()) for a backend without
 * SCSITGT_BACKEND_MULTI_LOOP; with the flag, the loop of the io's command: home or one of the
 * engine's workers. A backend that keeps per-loop state (a timer, a ring, an eventfd poll)
 * picks it by this loop.
 *
 * @param io The io.
 * @return Its loop. Thread-safe while the io is lent to the backend.
 */
SCSITGT_EXPORT uv_loop_t *scsitgt_io_get_loop(const struct scsitgt_io *io);

/**
 * The io's type.
 *
 * @param io The io.
 * @return Its type. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT enum scsitgt_io_type scsitgt_io_get_type(const struct scsitgt_io *io);

/**
 * First logical block of the io.
 *
 * @param io The io.
 * @return The LBA. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT uint64_t scsitgt_io_get_lba(const struct scsitgt_io *io);

/**
 * Number of logical blocks of the io (0 for FLUSH of the whole medium).
 *
 * @param io The io.
 * @return The block count. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT uint32_t scsitgt_io_get_num_blocks(const struct scsitgt_io *io);

/**
 * Logical block size of the io's LUN, in bytes.
 *
 * @param io The io.
 * @return The block size. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT uint32_t scsitgt_io_get_block_size(const struct scsitgt_io *io);

/**
 * The io's data buffers (READ and WRITE: they hold num_blocks * block_size bytes; WRITE SAME:
 * they hold one block).
 *
 * @param io     The io.
 * @param iovcnt Receives the number of iovecs (0 for types without data).
 * @return The iovec array, lent like the io. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT const struct iovec *scsitgt_io_get_iov(const struct scsitgt_io *io, int *iovcnt);

/**
 * Where a SCSITGT_IO_GET_LBA_STATUS io's answer goes: an array the backend fills with the
 * extents from the io's LBA on, in order, before it completes the io with status 0. The array
 * is zeroed at submit, belongs to the io, and may be written from any thread until the io is
 * completed (e.g. by a worker that queries the medium, then scsitgt_io_complete_threadsafe()).
 * The backend may describe fewer blocks than the io's num_blocks (the initiator asks again
 * from where the answer ended) and may stop before the array's end (an extent of 0 blocks
 * ends the list); blocks past num_blocks are ignored. An empty list answers the io's whole
 * range as mapped.
 *
 * @param io        A SCSITGT_IO_GET_LBA_STATUS io.
 * @param count_out Receives the number of extents the array holds (at least 1).
 * @return The array; NULL (and 0 in @p count_out) for other io types. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT struct scsitgt_lba_extent *scsitgt_io_get_lba_extents(struct scsitgt_io *io,
								     size_t *count_out);

/**
 * The io's SCSITGT_IO_FLAG_* flags.
 *
 * @param io The io.
 * @return The flags. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT uint32_t scsitgt_io_get_flags(const struct scsitgt_io *io);

/**
 * The backend's private bytes of this io (io_ctx_size of the ops table, zeroed at submit).
 *
 * @param io The io.
 * @return The private area, NULL when io_ctx_size is 0. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT void *scsitgt_io_get_ctx(struct scsitgt_io *io);

/**
 * The LUN the io belongs to.
 *
 * @param io The io.
 * @return The LUN. Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT struct scsitgt_lun *scsitgt_io_get_lun(const struct scsitgt_io *io);

/**
 * Lend the backend's own memory as a READ's data instead of filling the io's iovecs: the
 * transport sends straight from @p data, so the only copy left is the kernel's (no memcpy or
 * memset of a RAM-like medium into a bounce buffer). Allowed only when the io carries
 * SCSITGT_IO_FLAG_MAY_LEND; call it before completing the io with status 0.
 *
 * The memory must stay valid and unchanged until @p release runs: the medium's later writes
 * must go elsewhere (copy on write), or a read could send data newer than its own completion
 * and break SAM-5 ordering (an ORDERED write after it) and COMPARE AND WRITE atomicity.
 *
 * @param io      A READ io with SCSITGT_IO_FLAG_MAY_LEND.
 * @param data    num_blocks * block_size bytes of the io's data.
 * @param len     Must equal num_blocks * block_size.
 * @param release Called exactly once when the library no longer reads @p data: after the
 *                transport handed the last byte to the kernel, or the command ended
 *                otherwise (failed io, abort, lost connection). On the io's loop; for an
 *                io its engine gave up on (an orphan), from inside the completion call. May be
 *                NULL for memory that never changes (a static zero region).
 * @param arg     Passed to @p release.
 * @return 0, or -EINVAL (not a READ with the flag, wrong length, lent already); then nothing
 *         was lent and the backend fills the iovecs as usual.
 *
 * Loop: the io's (scsitgt_io_get_loop()), before the completion call.
 */
SCSITGT_EXPORT int scsitgt_io_lend_data(struct scsitgt_io *io, const void *data, size_t len,
					void (*release)(void *arg), void *arg);

/**
 * Complete an io. The backend must not touch the io or its buffers afterwards.
 *
 * An io the library gave up on when its engine was destroyed (an orphan, docs/threading.md)
 * may be completed with this function, or any other completion call, from any thread, also
 * after the engine and its loop are gone; that only frees the io and its buffers.
 *
 * @param io     The io.
 * @param status 0 on success, or a negative errno the core maps to sense data: -EIO ->
 *               MEDIUM ERROR (UNRECOVERED READ ERROR / WRITE ERROR), -ENOSPC -> DATA PROTECT
 *               SPACE ALLOCATION FAILED WRITE PROTECT, -EROFS -> DATA PROTECT WRITE
 *               PROTECTED, -ENOMEM and -EAGAIN -> BUSY status, -ENOTSUP -> INVALID COMMAND
 *               OPERATION CODE, anything else -> HARDWARE ERROR INTERNAL TARGET FAILURE.
 *
 * Loop: the io's (scsitgt_io_get_loop()); may be called from inside submit().
 */
SCSITGT_EXPORT void scsitgt_io_complete(struct scsitgt_io *io, int status);

/**
 * Complete a failed io and say where it failed: as scsitgt_io_complete(), and the sense data's
 * INFORMATION field reports @p lba, the first logical block in error (SBC-4 §4.18.1), which
 * initiators use to retry or remap around a bad block.
 *
 * @param io     The io.
 * @param status As for scsitgt_io_complete(); with 0 @p lba is ignored.
 * @param lba    The first failing logical block, within the io's range.
 *
 * Loop: the io's (scsitgt_io_get_loop()); may be called from inside submit().
 */
SCSITGT_EXPORT void scsitgt_io_complete_at(struct scsitgt_io *io, int status, uint64_t lba);

/**
 * Complete an io that failed part way, and say how far it got: the blocks from the io's first
 * LBA up to @p lba (excluded) were transferred, the block at @p lba failed. A READ's iovecs
 * hold the data of those blocks (a lent buffer, scsitgt_io_lend_data(), is not used for a
 * failed io), a WRITE wrote them to the medium. The initiator receives the good blocks of a
 * READ with the CHECK CONDITION and a residual for the rest, and the sense data's INFORMATION
 * field reports @p lba (SBC-4 §4.18.1), so that it completes the blocks before it, as Linux
 * does with the INFORMATION field and the residual (sd_completed_bytes()).
 *
 * A backend that knows only where the error is calls scsitgt_io_complete_at() instead: for a
 * plain READ or WRITE command the core then transfers the blocks before @p lba again with an
 * io of their own, so that the answer is the same.
 *
 * @param io     A READ or WRITE io (for other types this is scsitgt_io_complete_at()).
 * @param status A negative errno, mapped as for scsitgt_io_complete(); 0 completes the whole
 *               io successfully and ignores @p lba.
 * @param lba    The first failing block, within the io's range (at its first block: nothing
 *               was transferred).
 *
 * Loop: the io's (scsitgt_io_get_loop()); may be called from inside submit().
 */
SCSITGT_EXPORT void scsitgt_io_complete_partial(struct scsitgt_io *io, int status, uint64_t lba);

/**
 * Complete an io with exact sense data (CHECK CONDITION).
 *
 * @param io   The io.
 * @param key  Sense key (SPC-5 Table 52), 1..0xf.
 * @param asc  Additional sense code.
 * @param ascq Additional sense code qualifier.
 *
 * Loop: the io's (scsitgt_io_get_loop()).
 */
SCSITGT_EXPORT void scsitgt_io_complete_sense(struct scsitgt_io *io, uint8_t key, uint8_t asc,
					      uint8_t ascq);

/**
 * Complete an io from any thread. The completion is handed to the io's loop
 * (scsitgt_io_get_loop(): the home loop unless the backend has SCSITGT_BACKEND_MULTI_LOOP),
 * which it wakes, and proceeds there as with scsitgt_io_complete(). Lock-free.
 *
 * @param io     The io.
 * @param status As for scsitgt_io_complete().
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_io_complete_threadsafe(struct scsitgt_io *io, int status);

/**
 * The built-in null backend: writes are discarded, reads return zeros, any capacity.
 * Supports READ, WRITE, FLUSH, UNMAP and WRITE ZEROES; reports LBPRZ.
 *
 * @return The ops table (static). Thread-safe.
 */
SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_null_ops(void);

/**
 * Create a context for the null backend, to pass as backend_ctx with scsitgt_backend_null_ops().
 * The LUN options must give the block size and block count.
 *
 * @param bctx_out Receives the context. The LUN frees it through close(); if
 *                 scsitgt_lun_create() fails, free it with the ops' close(bctx, NULL, NULL).
 * @return 0; -EINVAL if @p bctx_out is NULL; -ENOMEM.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT int scsitgt_backend_null_create(void **bctx_out);

/**
 * Options of scsitgt_backend_null_create_opts(): today its logger, as the aio and RBD backends
 * take theirs (docs/backends.md, "Logging"). Initialise with scsitgt_backend_null_opts_init();
 * fields are only ever appended.
 */
struct scsitgt_backend_null_opts {
	/** sizeof(struct scsitgt_backend_null_opts), set by scsitgt_backend_null_opts_init(). */
	size_t size;
	/**
	 * Where the backend's messages go (subsystem "null"): an open() it refuses and why, the
	 * LUN's size at open() (INFO). May be called from any loop that submits to the LUN. NULL
	 * (the default): nothing is logged. Give the engine's callback.
	 */
	scsitgt_log_cb log_cb;
	/** Argument of @ref log_cb. */
	void *log_arg;
	/**
	 * Most verbose level passed to @ref log_cb, as the engine's log_level. Default
	 * ::SCSITGT_LOG_DEBUG. ::SCSITGT_LOG_ERROR .. ::SCSITGT_LOG_DEBUG; others fail create()
	 * with -EINVAL, logged.
	 */
	enum scsitgt_log_level log_level;
};

/**
 * Fill @p opts with the defaults (no logger, log_level SCSITGT_LOG_DEBUG).
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_backend_null_opts_init(struct scsitgt_backend_null_opts *opts,
						   size_t size);

/**
 * scsitgt_backend_null_create() with a logger.
 *
 * @param bctx_out Receives the context (ownership as for scsitgt_backend_null_create()).
 * @param opts     The options; copied. NULL, or size 0: as scsitgt_backend_null_create().
 * @return 0; -EINVAL if @p bctx_out is NULL or log_level is out of range (logged through
 *         @p opts' logger); -ENOMEM.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT int scsitgt_backend_null_create_opts(void **bctx_out,
						    const struct scsitgt_backend_null_opts *opts);

/**
 * The built-in RAM backend: memory allocated lazily in chunks on first write, so a large
 * sparse LUN costs nothing until written; unwritten and unmapped blocks read as zeros.
 * Supports READ, WRITE, FLUSH (no-op, no volatile cache), UNMAP (frees whole chunks, zeroes
 * partial ones) and WRITE ZEROES; reports LBPRZ.
 *
 * @return The ops table (static). Thread-safe.
 */
SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_ram_ops(void);

/**
 * Create a context for the RAM backend, to pass as backend_ctx with scsitgt_backend_ram_ops().
 * The LUN options must give the block size and block count.
 *
 * @param bctx_out Receives the context. Ownership as for scsitgt_backend_null_create().
 * @return 0; -EINVAL if @p bctx_out is NULL; -ENOMEM.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT int scsitgt_backend_ram_create(void **bctx_out);

/**
 * Options of scsitgt_backend_ram_create_opts(): today its logger, as the aio and RBD backends
 * take theirs (docs/backends.md, "Logging"). Initialise with scsitgt_backend_ram_opts_init();
 * fields are only ever appended.
 */
struct scsitgt_backend_ram_opts {
	/** sizeof(struct scsitgt_backend_ram_opts), set by scsitgt_backend_ram_opts_init(). */
	size_t size;
	/**
	 * Where the backend's messages go (subsystem "ram"): an open() it refuses and why, the
	 * LUN's size at open() (INFO), a write that finds no memory (ERROR, once until a write
	 * succeeds again, then a NOTICE). May be called from any loop that submits to the LUN.
	 * NULL (the default): nothing is logged. Give the engine's callback.
	 */
	scsitgt_log_cb log_cb;
	/** Argument of @ref log_cb. */
	void *log_arg;
	/**
	 * Most verbose level passed to @ref log_cb, as the engine's log_level. Default
	 * ::SCSITGT_LOG_DEBUG. ::SCSITGT_LOG_ERROR .. ::SCSITGT_LOG_DEBUG; others fail create()
	 * with -EINVAL, logged.
	 */
	enum scsitgt_log_level log_level;
};

/**
 * Fill @p opts with the defaults (no logger, log_level SCSITGT_LOG_DEBUG).
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_backend_ram_opts_init(struct scsitgt_backend_ram_opts *opts,
						  size_t size);

/**
 * scsitgt_backend_ram_create() with a logger.
 *
 * @param bctx_out Receives the context (ownership as for scsitgt_backend_null_create()).
 * @param opts     The options; copied. NULL, or size 0: as scsitgt_backend_ram_create().
 * @return 0; -EINVAL if @p bctx_out is NULL or log_level is out of range (logged through
 *         @p opts' logger); -ENOMEM.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT int scsitgt_backend_ram_create_opts(void **bctx_out,
						   const struct scsitgt_backend_ram_opts *opts);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_BACKEND_H */
