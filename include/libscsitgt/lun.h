/* SPDX-License-Identifier: MIT */
/**
 * @file lun.h
 * Logical units: a LUN number in a target, a backend behind it and the identity it reports.
 */
#ifndef LIBSCSITGT_LUN_H
#define LIBSCSITGT_LUN_H

#include <stdbool.h>

#include "backend.h"
#include "common.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A logical unit of a target. Opaque. */
struct scsitgt_lun;

/** LUN flag: refuse writes with DATA PROTECT, WRITE PROTECTED (WP bit set in MODE SENSE). */
#define SCSITGT_LUN_READ_ONLY (1u << 0)
/** LUN flag: thin provisioned (LBPME); needs a backend supporting SCSITGT_IO_UNMAP. */
#define SCSITGT_LUN_THIN (1u << 1)
/** LUN flag: removable medium (RMB in standard INQUIRY; START STOP UNIT ejects/loads). */
#define SCSITGT_LUN_REMOVABLE (1u << 2)
/** LUN flag: enable the write cache (WCE) when the backend has a volatile cache. */
#define SCSITGT_LUN_WRITE_CACHE (1u << 3)
/**
 * LUN flag: claim SPC-4 (standard INQUIRY VERSION 06h and the SPC-4 version descriptor)
 * instead of SPC-5 (07h), for initiators written before SPC-5 that refuse a VERSION they do
 * not know. The commands behave the same: what we implement of SPC-5 is SPC-4 plus additions.
 */
#define SCSITGT_LUN_CLAIM_SPC4 (1u << 4)

/** Options of scsitgt_lun_create(). Initialise with scsitgt_lun_opts_init(). */
struct scsitgt_lun_opts {
	/** sizeof(struct scsitgt_lun_opts), set by scsitgt_lun_opts_init(). */
	size_t size;
	/** LUN number, 0..16383 (SAM-5 flat and peripheral addressing). */
	uint64_t id;
	/** Logical block size, 512 or 4096; 0 lets the backend decide (default 512 if it does not). */
	uint32_t block_size;
	/** Capacity in logical blocks; 0 lets the backend decide. */
	uint64_t num_blocks;
	/** SCSITGT_LUN_* flags. */
	uint32_t flags;
	/** T10 vendor identification, up to 8 ASCII characters. Default "LIBSCSI". Copied. */
	const char *vendor;
	/** Product identification, up to 16 ASCII characters. Default by backend. Copied. */
	const char *product;
	/** Product revision level, up to 4 ASCII characters. Default the library version. Copied. */
	const char *revision;
	/** Unit serial number (VPD 80h), up to 32 ASCII characters. Default derived. Copied. */
	const char *serial;
	/**
	 * NAA IEEE Registered designator (VPD 83h, NAA type 5): the low 60 bits are used, the
	 * top nibble is forced to 5. 0 derives one from the target name and LUN number: a hash,
	 * not a registered company ID, kept unchanged because hosts key devices on it (set your
	 * own before a host first sees the LUN; docs/initiators.md).
	 */
	uint64_t naa;
	/** EUI-64 designator (VPD 83h); 0 means none. */
	uint64_t eui64;
	/** The backend. Required. Copied (min(size, sizeof) bytes). */
	const struct scsitgt_backend_ops *backend;
	/**
	 * The backend's context, passed to every backend call. Ownership: the LUN owns it once
	 * scsitgt_lun_create() returned 0; until then (on every failure, whether open() ran or
	 * not) it is the caller's, and the caller releases it with the backend's close().
	 */
	void *backend_ctx;
	/**
	 * LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT (SBC-4 §5.21.2): the medium has 2^N logical
	 * blocks per physical block, N from 0 to 8 (so that one physical block fits the
	 * MAXIMUM ATOMIC TRANSFER LENGTH of 256 blocks). READ CAPACITY (16) reports it, VPD B0
	 * derives OPTIMAL TRANSFER LENGTH GRANULARITY, OPTIMAL UNMAP GRANULARITY and the WRITE
	 * ATOMIC (16) alignment and granularity from it, and WRITE ATOMIC (16) must cover whole
	 * physical blocks. 0 keeps what the backend's open() reported.
	 */
	uint8_t physical_block_exponent;
	/*
	 * Appended after the first release. The first appended member is 8-byte aligned so that
	 * all of them lie past the padding of the older struct (112 bytes): a caller compiled
	 * against it passes size 112 and gets the defaults below, whatever its padding held.
	 * Every limit here is advertised in the Block Limits VPD page (SBC-4 §6.6.4, B0h) and
	 * enforced by the commands it governs; 0 keeps the default.
	 */
	/**
	 * MAXIMUM WRITE SAME LENGTH in logical blocks: WRITE SAME (10)/(16) over more blocks
	 * (NUMBER OF LOGICAL BLOCKS 0 counts the blocks through the last LBA) ends with ILLEGAL
	 * REQUEST, INVALID FIELD IN CDB. 1..4294967295; 0: 65535.
	 */
	uint64_t max_write_same_blocks;
	/**
	 * MAXIMUM TRANSFER LENGTH in logical blocks: READ, WRITE, VERIFY, WRITE AND VERIFY,
	 * ORWRITE and WRITE ATOMIC with a longer transfer end with ILLEGAL REQUEST, INVALID
	 * FIELD IN CDB. Below 128 it is the MAXIMUM COMPARE AND WRITE LENGTH too (otherwise
	 * 128), and the maximum atomic transfer never exceeds it. At most 8 MiB worth of blocks
	 * (the library's largest transfer); 0: that largest transfer.
	 */
	uint32_t max_transfer_blocks;
	/**
	 * OPTIMAL TRANSFER LENGTH in logical blocks, at most the maximum transfer length and, when
	 * @c optimal_transfer_granularity is given, a multiple of it. 0: the backend's
	 * (geometry optimal_transfer_blocks, cut to the maximum transfer length).
	 */
	uint32_t optimal_transfer_blocks;
	/**
	 * OPTIMAL TRANSFER LENGTH GRANULARITY in logical blocks, 1..65535 and at most the
	 * maximum transfer length. 0: one physical block (2^physical_block_exponent).
	 */
	uint32_t optimal_transfer_granularity;
	/**
	 * MAXIMUM UNMAP LBA COUNT: the blocks one UNMAP command may deallocate, all its
	 * descriptors together (SBC-4 §5.30.2); more ends with ILLEGAL REQUEST, INVALID FIELD IN
	 * PARAMETER LIST. 4294967295: no limit. Thin LUNs only (SCSITGT_LUN_THIN).
	 * 0: 1048576.
	 */
	uint32_t max_unmap_blocks;
	/**
	 * MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT: more descriptors in one UNMAP end with ILLEGAL
	 * REQUEST, INVALID FIELD IN PARAMETER LIST. 4294967295: no limit. Thin LUNs only.
	 * 0: 256.
	 */
	uint32_t max_unmap_descriptors;
	/**
	 * OPTIMAL UNMAP GRANULARITY in logical blocks, reported with UGAVALID set and
	 * @c unmap_granularity_alignment. Thin LUNs only. 0: the backend's deallocation unit
	 * (geometry unmap_granularity_blocks) when larger than a physical block, else a
	 * physical block with UGAVALID clear.
	 */
	uint32_t unmap_granularity;
	/**
	 * UNMAP GRANULARITY ALIGNMENT: the first LBA the granularity applies to (optimal unmap
	 * ranges start at n * granularity + alignment, SBC-4 §6.6.4). Below
	 * @c unmap_granularity, and only with it.
	 */
	uint32_t unmap_granularity_alignment;
	/**
	 * NAA IEEE Registered Extended designator (VPD 83h, NAA type 6, SPC-5 §7.7.6.6.6),
	 * reported besides the type 5 one: byte 0's top nibble must be 6, then the 24-bit IEEE
	 * COMPANY_ID, the 36-bit VENDOR SPECIFIC IDENTIFIER and the 64-bit extension, big
	 * endian. All zeros: none.
	 */
	uint8_t naa_extended[16];
	/**
	 * UUID designator (VPD 83h, designator type 0Ah, SPC-5 §7.7.6.12: a locally assigned
	 * UUID): the 16 bytes of an RFC 4122 UUID in network byte order; its variant must be
	 * RFC 4122's (10b) and its version 1..8 (RFC 9562). All zeros: none.
	 */
	uint8_t uuid[16];
};

/**
 * Visitor of scsitgt_target_foreach_lun().
 *
 * @param arg The argument given to scsitgt_target_foreach_lun().
 * @param lun One LUN.
 * @return 0 to continue, anything else to stop the walk.
 */
typedef int (*scsitgt_lun_visit_cb)(void *arg, struct scsitgt_lun *lun);

/**
 * Fill @p opts with the defaults.
 *
 * @param opts The options to fill.
 * @param size sizeof(*opts) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_lun_opts_init(struct scsitgt_lun_opts *opts, size_t size);

/**
 * Create a LUN in @p tgt and open its backend (synchronously, through ops->open). From then on
 * initiators see it in REPORT LUNS.
 *
 * Ownership, the same on every path: on success the LUN owns backend_ctx (and closes it at
 * scsitgt_lun_destroy()); on any failure, before or after ops->open() ran, the library has
 * not called ops->close() and the caller releases backend_ctx with ops->close().
 *
 * @param out  Receives the LUN.
 * @param tgt  The target.
 * @param opts Options (backend required).
 * @return 0 on success. On failure:
 *         -EINVAL for a NULL argument, an id above 16383, a block size other than 0, 512 or
 *         4096, a physical_block_exponent above 8, a backend table without
 *         open/close/submit, a geometry the backend leaves incomplete, block limits that
 *         contradict each other or the library's (a maximum transfer above 8 MiB or below
 *         the optimal transfer length or its granularity, an optimal transfer length that is
 *         not a multiple of the granularity given, a granularity above 65535, an unmap
 *         alignment not below its granularity, unmap limits on a LUN that is not thin, a
 *         maximum WRITE SAME length above 4294967295) or a malformed designator (NAA type
 *         other than 6, a UUID of another variant or version); -EEXIST if the
 *         target already has that LUN id; -ENOTSUP for SCSITGT_LUN_THIN on a backend
 *         without UNMAP; -ENOMEM; any error of ops->open.
 *
 * Loop: home of the target's engine.
 */
SCSITGT_EXPORT int scsitgt_lun_create(struct scsitgt_lun **out, struct scsitgt_target *tgt,
				      const struct scsitgt_lun_opts *opts);

/**
 * Remove a LUN: new commands to it fail with LOGICAL UNIT NOT SUPPORTED, in-flight ones
 * complete, then the backend is closed and the LUN freed. When they have not completed within
 * the engine's drain timeout (scsitgt_engine_set_drain_timeout()), the LUN's remaining
 * commands are aborted without a response, @p cb runs, and the ios the backend still holds
 * stay lent to it: the backend is closed when it has completed the last of them
 * (docs/threading.md, "Teardown"). The backend's detach() op, when it has one, is called
 * from inside this call, before anything else (backend.h).
 *
 * @param lun    The LUN. Dead after the call.
 * @param cb     Called once, from the loop, status 0: after the backend's close completed, or
 *               when the drain timeout expired. Optional, may be NULL.
 * @param cb_arg Argument of @p cb.
 *
 * Loop: home.
 */
SCSITGT_EXPORT void scsitgt_lun_destroy(struct scsitgt_lun *lun, scsitgt_done_cb cb, void *cb_arg);

/**
 * The LUN number.
 *
 * @param lun The LUN.
 * @return Its id. Loop: home.
 */
SCSITGT_EXPORT uint64_t scsitgt_lun_get_id(const struct scsitgt_lun *lun);

/**
 * Walk a target's LUNs in ascending LUN number. LUNs being destroyed are skipped. The visitor
 * may create or destroy LUNs, the one it is given included: the walk goes on with the next
 * LUN number above the last one visited.
 *
 * @param tgt The target.
 * @param cb  The visitor, called synchronously.
 * @param arg Its argument.
 * @return 0 after visiting every LUN; the visitor's non-zero return value if it stopped the
 *         walk; -EINVAL if @p tgt or @p cb is NULL.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_target_foreach_lun(struct scsitgt_target *tgt, scsitgt_lun_visit_cb cb,
					      void *arg);

/**
 * The LUN's geometry after open.
 *
 * @param lun The LUN.
 * @param geo Receives the geometry; set geo->size to sizeof(*geo) first.
 * @return 0; -EINVAL if an argument is NULL or geo->size is 0.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_get_geometry(const struct scsitgt_lun *lun,
					    struct scsitgt_lun_geometry *geo);

/**
 * The backend context given at creation.
 *
 * @param lun The LUN.
 * @return backend_ctx. Loop: home.
 */
SCSITGT_EXPORT void *scsitgt_lun_get_backend_ctx(const struct scsitgt_lun *lun);

/**
 * Tell the LUN that its medium changed size. The host resizes the backend's medium first
 * (e.g. scsitgt_backend_aio_resize()); from this call on READ CAPACITY reports @p num_blocks,
 * media commands are checked against it, and every I_T nexus finds the unit attention
 * CAPACITY DATA HAS CHANGED (SBC-4 §4.6, SPC-5 §5.14) on its next command to the LUN.
 *
 * @param lun        The LUN.
 * @param num_blocks The new capacity in logical blocks, > 0.
 * @return 0 (also when the size is unchanged: then no unit attention is raised);
 *         -EINVAL for a NULL @p lun or a zero @p num_blocks.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_resize(struct scsitgt_lun *lun, uint64_t num_blocks);

/**
 * Resize a LUN in one step, through its backend: the medium changes (or is read again), the
 * core adopts the new capacity, and every I_T nexus finds CAPACITY DATA HAS CHANGED (SBC-4
 * §4.6) on its next command to the LUN, as with scsitgt_lun_resize().
 *
 * With @p num_blocks > 0 the backend's resize() op changes the medium to that size (the aio
 * backend truncates or extends its file). With @p num_blocks 0 the backend's get_size() op
 * says what the medium holds now, after it changed outside the library (truncate(1) on the
 * file, a block device resized).
 *
 * A shrink below @p in_use_blocks is refused: the host names the blocks it knows to hold data
 * still in use (0: no floor). Asked for, the medium is left untouched; read back (a medium that
 * already shrank), the LUN keeps reporting its former capacity and the host decides (ios past
 * the medium's end then fail).
 *
 * @param lun            The LUN.
 * @param num_blocks     The new capacity in logical blocks, or 0 to ask the backend.
 * @param in_use_blocks  The smallest capacity allowed; 0 for none.
 * @param num_blocks_out Receives the LUN's capacity after the call (also on -EBUSY). May be
 *                       NULL.
 * @return 0 (also when the size is unchanged: then no unit attention is raised);
 *         -EINVAL for a NULL @p lun; -ENOTSUP when the backend has no resize() (for a size) or
 *         no get_size() (for 0); -EBUSY for a capacity below @p in_use_blocks; any error of the
 *         backend's op.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_resize_medium(struct scsitgt_lun *lun, uint64_t num_blocks,
					     uint64_t in_use_blocks, uint64_t *num_blocks_out);

/**
 * Take a LUN offline or bring it back. While offline the LUN stays in REPORT LUNS and answers
 * INQUIRY, REPORT LUNS, REQUEST SENSE and the other commands that need no medium, but every
 * command that needs the medium (TEST UNIT READY, reads, writes, READ CAPACITY, ...) ends in
 * CHECK CONDITION, NOT READY, LOGICAL UNIT NOT READY, OFFLINE (04h/12h, SPC-5 Annex F), so
 * initiators fail over or retry. Commands already running finish normally. The engine's event
 * callback gets ::SCSITGT_EVENT_LUN_OFFLINE / ::SCSITGT_EVENT_LUN_ONLINE on a change.
 *
 * @param lun     The LUN.
 * @param offline true to take it offline, false to bring it online.
 * @return 0 (also when nothing changes); -EINVAL for a NULL @p lun.
 *
 * Loop: home.
 */
SCSITGT_EXPORT int scsitgt_lun_set_offline(struct scsitgt_lun *lun, bool offline);

/**
 * Whether the LUN is offline.
 *
 * @param lun The LUN.
 * @return true if scsitgt_lun_set_offline() took it offline; false otherwise or for NULL.
 *
 * Loop: home.
 */
SCSITGT_EXPORT bool scsitgt_lun_get_offline(const struct scsitgt_lun *lun);

/**
 * A LOGICAL UNIT RESET of this logical unit happened through another engine that exports the
 * same logical unit (another gateway of one RBD image, told through the backend's
 * reset_async()): do what SAM-5 §6.3.3 asks of this engine's side of it. Every task of the LUN
 * on this engine's nexuses is aborted, the SPC-2 reservation held here ends, a PREVENT ALLOW
 * MEDIUM REMOVAL and a self-test end, and every nexus finds the unit attention BUS DEVICE
 * RESET FUNCTION OCCURRED (29h/03h), as after a local reset. The backend's reset() and
 * reset_async() are not called (the reset did not start here).
 *
 * @param lun The LUN.
 * @return 0; -EINVAL if @p lun is NULL. Loop: home of the LUN.
 */
SCSITGT_EXPORT int scsitgt_lun_apply_reset(struct scsitgt_lun *lun);

/**
 * scsitgt_lun_apply_reset() that says when it is done: @p cb runs once every task of the LUN
 * on this engine's nexuses is aborted and every nexus has the unit attention, so that a
 * command of any nexus, on any loop, finds it from then on. It always runs after the return
 * (from the loop, as every callback: common.h), even where the reset was complete inside the
 * call (no worker loop held a nexus of the target). A backend that acknowledges the reset to the gateway where it started
 * does it from @p cb (the RBD backend does): that gateway then answers its LOGICAL UNIT RESET
 * knowing that an initiator on another path will see the unit attention.
 *
 * @param lun    The LUN.
 * @param cb     Called once, on home, status 0.
 * @param cb_arg Argument of @p cb.
 * @return 0; -EINVAL if @p lun or @p cb is NULL; -ENOMEM (nothing was done, @p cb is not
 *         called). Loop: home of the LUN.
 */
SCSITGT_EXPORT int scsitgt_lun_apply_reset_async(struct scsitgt_lun *lun, scsitgt_done_cb cb,
						 void *cb_arg);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_LUN_H */
