/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 block commands (the sbc_*.c files): their parse and exec functions, which the CDB
 * table (cdb.c) names, and the helpers they share. SANITIZE has its own header,
 * sbc_sanitize.h, and the bounded range walk sbc_chunk.h.
 */
#ifndef SCSITGT_CORE_SBC_H
#define SCSITGT_CORE_SBC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cmd.h"
#include "core/sense.h"

struct scsitgt_lun;
struct scsitgt__session;

/* sbc.c: READ and WRITE, READ CAPACITY, SYNCHRONIZE CACHE, START STOP UNIT, PREVENT ALLOW
 * MEDIUM REMOVAL. */
enum scsitgt__sense_reason scsitgt__sbc_parse_rw(struct scsitgt__cmd *cmd);
void scsitgt__sbc_rw(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_read_capacity10(struct scsitgt__cmd *cmd);
void scsitgt__sbc_read_capacity10(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_read_capacity16(struct scsitgt__cmd *cmd);
void scsitgt__sbc_read_capacity16(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_sync_cache(struct scsitgt__cmd *cmd);
void scsitgt__sbc_sync_cache(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_start_stop(struct scsitgt__cmd *cmd);
void scsitgt__sbc_start_stop(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_prevent_allow(struct scsitgt__cmd *cmd);
void scsitgt__sbc_prevent_allow(struct scsitgt__cmd *cmd);
/* End the medium removal prevention of @sess on @lun, or of every nexus when @sess is NULL
 * (a reset); scsitgt__sbc_prevent_session_gone() does it on every LUN of the session's target
 * (I_T nexus loss). */
void scsitgt__sbc_prevent_release(struct scsitgt_lun *lun, const struct scsitgt__session *sess);
void scsitgt__sbc_prevent_session_gone(const struct scsitgt__session *sess);
/* LBA, NUMBER OF LOGICAL BLOCKS and that field's offset of a 10/12/16-byte media CDB. */
void scsitgt__sbc_decode_range(const uint8_t *cdb, size_t cdb_len, uint64_t *lba, uint32_t *nblocks,
			       uint16_t *len_off);
/* Transfer-length cap and LBA range check of a media command (SBC-4 §4.5, §6.6.3). */
enum scsitgt__sense_reason scsitgt__sbc_check_range(struct scsitgt__cmd *cmd, uint64_t lba,
						    uint32_t nblocks, uint16_t len_off);
bool scsitgt__sbc_has_cache(const struct scsitgt_lun *lun);
/* Whether the backend has a volatile cache (SCSITGT_GEOMETRY_WRITE_CACHE) and FLUSH to write
 * it back: SYNCHRONIZE CACHE, START STOP UNIT and a WCE turned off then send a FLUSH io. */
bool scsitgt__sbc_volatile_cache(const struct scsitgt_lun *lun);
/*
 * Whether the LUN's volatile cache is written through now (WCE 0). A write sent without FUA
 * while WCE was 1 whose io completes once it is 0 may have missed MODE SELECT's write-back
 * (spc_mode.c: its FLUSH covers the ios completed before it): its command sends a FLUSH
 * before its GOOD (SBC-4 §6.5.5), for Linux sends no SYNCHRONIZE CACHE to a write-through
 * disk. Inline: one plain load (WCE first) on a write's completion; no lock.
 */
static inline bool scsitgt__sbc_cache_written_through(const struct scsitgt_lun *lun)
{
	return !lun->mode.wce && scsitgt__sbc_volatile_cache(lun);
}
/* Whether @cmd's write @io, back with @reason, went to the cache under WCE 1 (no FUA) and is
 * back once the cache is written through: its command flushes before GOOD (above). */
bool scsitgt__sbc_write_back_late(struct scsitgt__cmd *cmd, const struct scsitgt_io *io,
				  enum scsitgt__sense_reason reason);
/* Submit a FLUSH of the whole medium for @cmd, which it completes with the flush's status;
 * BUSY when no io could be had. */
void scsitgt__sbc_flush_then_complete(struct scsitgt__cmd *cmd);
/* SBC-4 §4.5: whether @lba, or the range of @nblocks from it, runs past the capacity (a zero
 * length range is still checked at its LBA); the capacity read once. */
bool scsitgt__sbc_range_bad(const struct scsitgt_lun *lun, uint64_t lba, uint64_t nblocks);
/* The LBPME/LBPRZ answers shared by READ CAPACITY (16) and VPD B2 (SBC-4 §4.7). */
bool scsitgt__sbc_lbpme(const struct scsitgt_lun *lun);
bool scsitgt__sbc_lbprz(const struct scsitgt_lun *lun);

/* sbc_unmap.c: UNMAP. */
enum scsitgt__sense_reason scsitgt__sbc_parse_unmap(struct scsitgt__cmd *cmd);
void scsitgt__sbc_unmap(struct scsitgt__cmd *cmd);

/* sbc_verify.c: WRITE AND VERIFY (10)/(12)/(16) and VERIFY (10)/(12)/(16). */
enum scsitgt__sense_reason scsitgt__sbc_parse_write_verify(struct scsitgt__cmd *cmd);
void scsitgt__sbc_write_verify(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_verify(struct scsitgt__cmd *cmd);
void scsitgt__sbc_verify(struct scsitgt__cmd *cmd);

/* sbc_write_same.c: WRITE SAME (10)/(16). */
enum scsitgt__sense_reason scsitgt__sbc_parse_write_same(struct scsitgt__cmd *cmd);
void scsitgt__sbc_write_same(struct scsitgt__cmd *cmd);

/* sbc_atomic.c: COMPARE AND WRITE, ORWRITE (16), WRITE ATOMIC (16), under the range lock. */
enum scsitgt__sense_reason scsitgt__sbc_parse_caw(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_orwrite(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_write_atomic(struct scsitgt__cmd *cmd);
void scsitgt__sbc_atomic_exec(struct scsitgt__cmd *cmd);
/* ATOMIC ALIGNMENT and ATOMIC TRANSFER LENGTH GRANULARITY: one physical block (the
 * LUN's LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT). */
uint32_t scsitgt__sbc_atomic_granularity(const struct scsitgt_lun *lun);
/* MAXIMUM ATOMIC TRANSFER LENGTH of @lun (VPD B0), within its MAXIMUM TRANSFER LENGTH. */
uint32_t scsitgt__sbc_max_atomic_blocks(const struct scsitgt_lun *lun);
/* MAXIMUM COMPARE AND WRITE LENGTH of @lun (VPD B0), within its MAXIMUM TRANSFER LENGTH. */
uint32_t scsitgt__sbc_max_caw_blocks(const struct scsitgt_lun *lun);

/* sbc_lba_status.c: GET LBA STATUS, PRE-FETCH (10)/(16), and their VPD B0 limits. */
enum scsitgt__sense_reason scsitgt__sbc_parse_get_lba_status(struct scsitgt__cmd *cmd);
void scsitgt__sbc_get_lba_status(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_prefetch(struct scsitgt__cmd *cmd);
void scsitgt__sbc_prefetch(struct scsitgt__cmd *cmd);
/*
 * Fill the VPD B0 (SBC-4 §6.6.3) fields of the commands above into @b0 (a zeroed page of at
 * least 64 bytes): MAXIMUM COMPARE AND WRITE LENGTH, WSNZ, MAXIMUM WRITE SAME LENGTH and the
 * atomic write limits, each only when its command is in the table.
 */
void scsitgt__sbc_block_limits(const struct scsitgt_lun *lun, uint8_t *b0);
/* The limits advertised there (in logical blocks), unless a LUN's MAXIMUM TRANSFER LENGTH
 * is lower. */
#define SCSITGT__SBC_MAX_CAW_BLOCKS 128u
#define SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS 0xffffu
#define SCSITGT__SBC_MAX_ATOMIC_BLOCKS 256u

/* sbc_format.c: READ DEFECT DATA (10)/(12) and FORMAT UNIT (SBC-4). */
enum scsitgt__sense_reason scsitgt__sbc_parse_read_defect(struct scsitgt__cmd *cmd);
void scsitgt__sbc_read_defect(struct scsitgt__cmd *cmd);
enum scsitgt__sense_reason scsitgt__sbc_parse_format_unit(struct scsitgt__cmd *cmd);
void scsitgt__sbc_format_unit(struct scsitgt__cmd *cmd);

#endif /* SCSITGT_CORE_SBC_H */
