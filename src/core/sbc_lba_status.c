/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 §5.17 GET LBA STATUS (SERVICE ACTION IN (16), service action 12h): the provisioning
 * status of the blocks from STARTING LOGICAL BLOCK ADDRESS on, as LBA status descriptors.
 * A fully provisioned LUN maps every block (SBC-4 §4.7.2); a thin one asks the backend's
 * get_lba_status() (every block mapped when the backend has none).
 *
 * Also SBC-4 §5.11/§5.12 PRE-FETCH (10)/(16): the range is checked and GOOD returned. The
 * core keeps no cache to load the blocks into, and backends get no pre-fetch io: SBC-4 says
 * GOOD (not CONDITION MET) when the blocks do not go to a cache, with IMMED 0 or 1 alike.
 */
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

#define LBAS_HDR_LEN 8
#define LBAS_DESC_LEN 16
/* Most descriptors in one answer; the client asks again from where it stopped. */
#define LBAS_MAX_DESC 256
/* SBC-4 Table 57 PROVISIONING STATUS. */
enum {
	LBAS_MAPPED = 0x0,
	LBAS_DEALLOCATED = 0x1
};

enum scsitgt__sense_reason scsitgt__sbc_parse_get_lba_status(struct scsitgt__cmd *cmd)
{
	uint64_t lba = get_be64(&cmd->cdb[2]);

	/* SBC-4 §5.17.1: a STARTING LOGICAL BLOCK ADDRESS past the last LBA is refused. */
	if (lba >= cmd->lun->geo.num_blocks)
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	cmd->lba = lba;
	return scsitgt__parse_alloc32(cmd, 10);
}

/* The status of the blocks from @lba on: how many share it (>= 1), and whether mapped. */
static int lbas_query(const struct scsitgt_lun *lun, uint64_t lba, uint64_t *n, bool *mapped)
{
	uint64_t rest = lun->geo.num_blocks - lba;
	int rc;

	if (!scsitgt__sbc_lbpme(lun) || lun->ops.get_lba_status == NULL) {
		*n = rest;
		*mapped = true;
		return 0;
	}
	rc = lun->ops.get_lba_status(lun->bctx, lba, n, mapped);
	if (rc < 0)
		return rc;
	/* Do not trust a broken answer to bound the loop. */
	if (*n == 0 || *n > rest)
		*n = *n ? rest : 1;
	return 0;
}

void scsitgt__sbc_get_lba_status(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	uint8_t d[LBAS_HDR_LEN + LBAS_MAX_DESC * LBAS_DESC_LEN];
	size_t max_desc = LBAS_MAX_DESC, ndesc = 0;
	uint64_t lba = cmd->lba;

	if (cmd->xfer_len > LBAS_HDR_LEN + LBAS_DESC_LEN &&
	    (cmd->xfer_len - LBAS_HDR_LEN) / LBAS_DESC_LEN < max_desc)
		max_desc = (cmd->xfer_len - LBAS_HDR_LEN) / LBAS_DESC_LEN;
	memset(d, 0, sizeof(d));
	while (ndesc < max_desc && lba < lun->geo.num_blocks) {
		uint8_t *p = &d[LBAS_HDR_LEN + ndesc * LBAS_DESC_LEN];
		uint64_t n, total = 0;
		bool mapped, first_mapped = true;

		/* Merge the backend's pieces of one status, up to the 32-bit field. */
		while (lba + total < lun->geo.num_blocks && total < UINT32_MAX) {
			if (lbas_query(lun, lba + total, &n, &mapped) < 0) {
				scsitgt__cmd_complete(cmd, SCSITGT__SR_INTERNAL_FAILURE);
				return;
			}
			if (total == 0)
				first_mapped = mapped;
			else if (mapped != first_mapped)
				break;
			total += n;
		}
		if (total > UINT32_MAX)
			total = UINT32_MAX;
		put_be64(&p[0], lba);
		put_be32(&p[8], (uint32_t)total);
		p[12] = first_mapped ? LBAS_MAPPED : LBAS_DEALLOCATED;
		lba += total;
		ndesc++;
	}
	/* PARAMETER DATA LENGTH: the bytes after itself. */
	put_be32(&d[0], (uint32_t)(4 + ndesc * LBAS_DESC_LEN));
	scsitgt__cmd_respond(cmd, d, LBAS_HDR_LEN + ndesc * LBAS_DESC_LEN);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

enum scsitgt__sense_reason scsitgt__sbc_parse_prefetch(struct scsitgt__cmd *cmd)
{
	const uint8_t *cdb = cmd->cdb;
	const struct scsitgt_lun *lun = cmd->lun;
	uint64_t lba;
	uint32_t n;

	if (cdb[0] == SBC_PRE_FETCH_10) {
		lba = get_be32(&cdb[2]);
		n = get_be16(&cdb[7]);
	} else {
		lba = get_be64(&cdb[2]);
		n = get_be32(&cdb[10]);
	}
	/* PREFETCH LENGTH 0 means "through the last LBA"; the LBA is checked regardless. */
	if (lba >= lun->geo.num_blocks || n > lun->geo.num_blocks - lba)
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	cmd->lba = lba;
	cmd->nblocks = n;
	return SCSITGT__SR_OK;
}

void scsitgt__sbc_prefetch(struct scsitgt__cmd *cmd)
{
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* The VPD B0 fields of the commands above and of sbc_write_same.c / sbc_atomic.c (SBC-4
 * §6.6.3), each advertised only when its command is in the CDB table. */
void scsitgt__sbc_block_limits(const struct scsitgt_lun *lun, uint8_t *b0)
{
	if (scsitgt__cdb_supported(SBC_COMPARE_AND_WRITE, 0))
		b0[5] = SCSITGT__SBC_MAX_CAW_BLOCKS;
	if (scsitgt__cdb_supported(SBC_WRITE_SAME_16, 0) ||
	    scsitgt__cdb_supported(SBC_WRITE_SAME_10, 0)) {
		/* Byte 4 bit 0 WSNZ stays zero: NUMBER OF LOGICAL BLOCKS 0 writes through the
		 * last LBA (sbc_write_same.c). */
		put_be64(&b0[36], SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS);
	}
	if (scsitgt__cdb_supported(SBC_WRITE_ATOMIC_16, 0)) {
		put_be32(&b0[44], SCSITGT__SBC_MAX_ATOMIC_BLOCKS);
		/* ATOMIC ALIGNMENT and ATOMIC TRANSFER LENGTH GRANULARITY: a physical block. */
		put_be32(&b0[48], scsitgt__sbc_atomic_granularity(lun));
		put_be32(&b0[52], scsitgt__sbc_atomic_granularity(lun));
		/* Bytes 56..63: no atomic boundary support (both 0). */
	}
}
