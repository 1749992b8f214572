/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "cdb_build.h"
#include "core/scsi_spec.h"
#include "util/be.h"

size_t cdb_tur(uint8_t *cdb)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_TEST_UNIT_READY;
	return 6;
}

size_t cdb_inquiry(uint8_t *cdb, bool evpd, uint8_t page, uint16_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_INQUIRY;
	cdb[1] = evpd ? 0x01 : 0x00;
	cdb[2] = page;
	put_be16(&cdb[3], alloc);
	return 6;
}

size_t cdb_request_sense(uint8_t *cdb, bool desc, uint8_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_REQUEST_SENSE;
	cdb[1] = desc ? 0x01 : 0x00;
	cdb[4] = alloc;
	return 6;
}

size_t cdb_report_luns(uint8_t *cdb, uint8_t select, uint32_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_REPORT_LUNS;
	cdb[2] = select;
	put_be32(&cdb[6], alloc);
	return 12;
}

size_t cdb_read_capacity10(uint8_t *cdb, uint32_t lba, bool pmi)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_READ_CAPACITY_10;
	put_be32(&cdb[2], lba);
	cdb[8] = pmi ? 0x01 : 0x00;
	return 10;
}

size_t cdb_read_capacity16(uint8_t *cdb, uint32_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_SERVICE_ACTION_IN_16;
	cdb[1] = SBC_SAI_READ_CAPACITY_16;
	put_be32(&cdb[10], alloc);
	return 16;
}

size_t cdb_rw(uint8_t *cdb, uint8_t opcode, uint64_t lba, uint32_t nblocks, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = opcode;
	switch (opcode) {
	case SBC_READ_6:
	case SBC_WRITE_6:
		put_be24(&cdb[1], (uint32_t)lba & 0x1fffff);
		cdb[4] = (uint8_t)nblocks;
		return 6;
	case SBC_READ_10:
	case SBC_WRITE_10:
		cdb[1] = byte1;
		put_be32(&cdb[2], (uint32_t)lba);
		put_be16(&cdb[7], (uint16_t)nblocks);
		return 10;
	case SBC_READ_12:
	case SBC_WRITE_12:
		cdb[1] = byte1;
		put_be32(&cdb[2], (uint32_t)lba);
		put_be32(&cdb[6], nblocks);
		return 12;
	default:
		cdb[1] = byte1;
		put_be64(&cdb[2], lba);
		put_be32(&cdb[10], nblocks);
		return 16;
	}
}

size_t cdb_unmap(uint8_t *cdb, uint16_t len, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_UNMAP;
	cdb[1] = byte1;
	put_be16(&cdb[7], len);
	return 10;
}

size_t unmap_param_list(uint8_t *p, const uint64_t (*desc)[2], size_t n)
{
	memset(p, 0, 8 + 16 * n);
	put_be16(&p[0], (uint16_t)(6 + 16 * n));
	put_be16(&p[2], (uint16_t)(16 * n));
	for (size_t i = 0; i < n; i++) {
		put_be64(&p[8 + 16 * i], desc[i][0]);
		put_be32(&p[8 + 16 * i + 8], (uint32_t)desc[i][1]);
	}
	return 8 + 16 * n;
}

size_t cdb_sync_cache10(uint8_t *cdb, uint32_t lba, uint16_t nblocks, bool immed)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_SYNCHRONIZE_CACHE_10;
	cdb[1] = immed ? 0x02 : 0x00;
	put_be32(&cdb[2], lba);
	put_be16(&cdb[7], nblocks);
	return 10;
}

size_t cdb_sync_cache16(uint8_t *cdb, uint64_t lba, uint32_t nblocks, bool immed)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_SYNCHRONIZE_CACHE_16;
	cdb[1] = immed ? 0x02 : 0x00;
	put_be64(&cdb[2], lba);
	put_be32(&cdb[10], nblocks);
	return 16;
}

size_t cdb_mode_sense6(uint8_t *cdb, bool dbd, uint8_t pc, uint8_t page, uint8_t subpage,
		       uint8_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_MODE_SENSE_6;
	cdb[1] = dbd ? 0x08 : 0x00;
	cdb[2] = (uint8_t)(pc << 6 | (page & 0x3f));
	cdb[3] = subpage;
	cdb[4] = alloc;
	return 6;
}

size_t cdb_mode_sense10(uint8_t *cdb, bool llbaa, bool dbd, uint8_t pc, uint8_t page,
			uint8_t subpage, uint16_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_MODE_SENSE_10;
	cdb[1] = (uint8_t)((llbaa ? 0x10 : 0x00) | (dbd ? 0x08 : 0x00));
	cdb[2] = (uint8_t)(pc << 6 | (page & 0x3f));
	cdb[3] = subpage;
	put_be16(&cdb[7], alloc);
	return 10;
}

size_t cdb_mode_select6(uint8_t *cdb, bool pf, bool sp, uint8_t len)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_MODE_SELECT_6;
	cdb[1] = (uint8_t)((pf ? 0x10 : 0x00) | (sp ? 0x01 : 0x00));
	cdb[4] = len;
	return 6;
}

size_t cdb_mode_select10(uint8_t *cdb, bool pf, bool sp, uint16_t len)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_MODE_SELECT_10;
	cdb[1] = (uint8_t)((pf ? 0x10 : 0x00) | (sp ? 0x01 : 0x00));
	put_be16(&cdb[7], len);
	return 10;
}

size_t cdb_start_stop(uint8_t *cdb, uint8_t power_condition, bool loej, bool start)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_START_STOP_UNIT;
	cdb[4] = (uint8_t)(power_condition << 4 | (loej ? 0x02 : 0x00) | (start ? 0x01 : 0x00));
	return 6;
}

size_t cdb_prevent_allow(uint8_t *cdb, uint8_t prevent)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_PREVENT_ALLOW_MEDIUM_REMOVAL;
	cdb[4] = prevent;
	return 6;
}

size_t cdb_log_sense(uint8_t *cdb, uint8_t b1, uint8_t pc, uint8_t page, uint8_t sub, uint16_t ptr,
		     uint16_t alloc)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_LOG_SENSE;
	cdb[1] = b1;
	cdb[2] = (uint8_t)(pc << 6 | page);
	cdb[3] = sub;
	put_be16(&cdb[5], ptr);
	put_be16(&cdb[7], alloc);
	return 10;
}

size_t cdb_send_diag(uint8_t *cdb, uint8_t b1, uint16_t len)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SPC_SEND_DIAGNOSTIC;
	cdb[1] = b1;
	put_be16(&cdb[3], len);
	return 6;
}

size_t cdb_caw(uint8_t *cdb, uint64_t lba, uint8_t nblocks, uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_COMPARE_AND_WRITE;
	cdb[1] = byte1;
	put_be64(&cdb[2], lba);
	cdb[13] = nblocks;
	return 16;
}

size_t cdb_write_atomic16(uint8_t *cdb, uint64_t lba, uint16_t boundary, uint16_t nblocks,
			  uint8_t byte1)
{
	memset(cdb, 0, CDB_BUF);
	cdb[0] = SBC_WRITE_ATOMIC_16;
	cdb[1] = byte1;
	put_be64(&cdb[2], lba);
	put_be16(&cdb[10], boundary);
	put_be16(&cdb[12], nblocks);
	return 16;
}
