/* SPDX-License-Identifier: MIT */
/* CDB builders for tests: each fills @cdb (16 bytes available) and returns the CDB length. */
#ifndef SCSITGT_TESTS_CDB_BUILD_H
#define SCSITGT_TESTS_CDB_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CDB_BUF 16

size_t cdb_tur(uint8_t *cdb);
size_t cdb_inquiry(uint8_t *cdb, bool evpd, uint8_t page, uint16_t alloc);
size_t cdb_request_sense(uint8_t *cdb, bool desc, uint8_t alloc);
size_t cdb_report_luns(uint8_t *cdb, uint8_t select, uint32_t alloc);
size_t cdb_read_capacity10(uint8_t *cdb, uint32_t lba, bool pmi);
size_t cdb_read_capacity16(uint8_t *cdb, uint32_t alloc);
/* READ/WRITE of any size: @opcode picks it; @byte1 holds DPO/FUA/xxPROTECT. For the 6-byte
 * forms the LBA is truncated to 21 bits and @nblocks to 8 bits (0 means 256). */
size_t cdb_rw(uint8_t *cdb, uint8_t opcode, uint64_t lba, uint32_t nblocks, uint8_t byte1);
/* UNMAP (SBC-4 §5.30) with PARAMETER LIST LENGTH @len and byte 1 (ANCHOR) @byte1. */
size_t cdb_unmap(uint8_t *cdb, uint16_t len, uint8_t byte1);
/* An UNMAP parameter list of @n (lba, count) descriptors into @p; returns its length. */
size_t unmap_param_list(uint8_t *p, const uint64_t (*desc)[2], size_t n);
size_t cdb_sync_cache10(uint8_t *cdb, uint32_t lba, uint16_t nblocks, bool immed);
size_t cdb_sync_cache16(uint8_t *cdb, uint64_t lba, uint32_t nblocks, bool immed);
size_t cdb_mode_sense6(uint8_t *cdb, bool dbd, uint8_t pc, uint8_t page, uint8_t subpage,
		       uint8_t alloc);
size_t cdb_mode_sense10(uint8_t *cdb, bool llbaa, bool dbd, uint8_t pc, uint8_t page,
			uint8_t subpage, uint16_t alloc);
size_t cdb_mode_select6(uint8_t *cdb, bool pf, bool sp, uint8_t len);
size_t cdb_mode_select10(uint8_t *cdb, bool pf, bool sp, uint16_t len);
size_t cdb_start_stop(uint8_t *cdb, uint8_t power_condition, bool loej, bool start);
size_t cdb_prevent_allow(uint8_t *cdb, uint8_t prevent);
size_t cdb_log_sense(uint8_t *cdb, uint8_t b1, uint8_t pc, uint8_t page, uint8_t sub, uint16_t ptr,
		     uint16_t alloc);
/* SEND DIAGNOSTIC: @b1 holds SELF-TEST CODE, PF, SELFTEST, DEVOFFL, UNITOFFL. */
size_t cdb_send_diag(uint8_t *cdb, uint8_t b1, uint16_t len);
/* COMPARE AND WRITE (SBC-4 §5.3) of @nblocks at @lba; @byte1 holds WRPROTECT, DPO, FUA. */
size_t cdb_caw(uint8_t *cdb, uint64_t lba, uint8_t nblocks, uint8_t byte1);
/* WRITE ATOMIC (16) (SBC-4 §5.48) of @nblocks at @lba with ATOMIC BOUNDARY @boundary; @byte1
 * holds WRPROTECT, DPO, FUA. */
size_t cdb_write_atomic16(uint8_t *cdb, uint64_t lba, uint16_t boundary, uint16_t nblocks,
			  uint8_t byte1);

#endif /* SCSITGT_TESTS_CDB_BUILD_H */
