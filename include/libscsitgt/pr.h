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
 */
#ifndef LIBSCSITGT_PR_H
#define LIBSCSITGT_PR_H

#include "common.h"
#include "lun.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Current version of the state format described above. */
#define SCSITGT_PR_STATE_VERSION 1

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
SCSITGT_EXPORT int scsitgt_lun_load_pr_state(struct scsitgt_lun *lun, const void *data,
					     size_t len);

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
 * rename) after every change.
 *
 * @param lun  The LUN.
 * @param path The file. Copied.
 * @return 0; -EINVAL for a NULL argument or a malformed file; -ENOMEM; a negative errno of
 *         the read.
 *
 * Loop: home. The writes are synchronous.
 */
SCSITGT_EXPORT int scsitgt_lun_use_pr_file(struct scsitgt_lun *lun, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_PR_H */
