/* SPDX-License-Identifier: MIT */
/*
 * SBC-4 §5.17 GET LBA STATUS (SERVICE ACTION IN (16), service action 12h): the provisioning
 * status of the blocks from STARTING LOGICAL BLOCK ADDRESS on, as LBA status descriptors.
 * A fully provisioned LUN maps every block (SBC-4 §4.7.2); a thin one asks the backend: its
 * asynchronous SCSITGT_IO_GET_LBA_STATUS io when it supports one (one io, its extents become
 * the descriptors), else its synchronous get_lba_status() op, else every block is mapped.
 *
 * Also SBC-4 §5.11/§5.12 PRE-FETCH (10)/(16): the range is checked and GOOD returned. The
 * core keeps no cache to load the blocks into, and backends get no pre-fetch io: SBC-4 says
 * GOOD (not CONDITION MET) when the blocks do not go to a cache, with IMMED 0 or 1 alike.
 */
#include <stdlib.h>
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

enum scsitgt__sense_reason scsitgt__sbc_parse_get_lba_status(struct scsitgt__cmd *cmd)
{
	uint64_t lba = get_be64(&cmd->cdb[2]);

	/* SBC-4 §5.17.1: a STARTING LOGICAL BLOCK ADDRESS past the last LBA is refused. */
	if (lba >= scsitgt__lun_blocks(cmd->lun))
		return SCSITGT__SR_LBA_OUT_OF_RANGE;
	cmd->lba = lba;
	return scsitgt__parse_alloc32(cmd, 10);
}

/* The answer being built: LBA status descriptors after the 8-byte header. */
struct lbas_answer {
	uint8_t d[LBAS_HDR_LEN + LBAS_MAX_DESC * LBAS_DESC_LEN];
	size_t max_desc, ndesc;
	uint64_t next; /* the LBA after the last descriptor */
};

static void lbas_answer_init(struct lbas_answer *a, const struct scsitgt__cmd *cmd)
{
	memset(a->d, 0, sizeof(a->d));
	a->max_desc = LBAS_MAX_DESC;
	if (cmd->xfer_len > LBAS_HDR_LEN + LBAS_DESC_LEN &&
	    (cmd->xfer_len - LBAS_HDR_LEN) / LBAS_DESC_LEN < a->max_desc)
		a->max_desc = (cmd->xfer_len - LBAS_HDR_LEN) / LBAS_DESC_LEN;
	a->ndesc = 0;
	a->next = cmd->lba;
}

/*
 * Append @n blocks of status @st from a->next on: merged into the last descriptor while it has
 * the same status and room in its 32-bit length, else into new ones. Returns how many blocks
 * it took (fewer than @n once the descriptors are used up).
 */
static uint64_t lbas_put(struct lbas_answer *a, uint64_t n, uint8_t st)
{
	uint64_t taken = 0;

	while (taken < n) {
		uint8_t *p = &a->d[LBAS_HDR_LEN + (a->ndesc ? a->ndesc - 1 : 0) * LBAS_DESC_LEN];
		uint64_t room = 0, k;

		if (a->ndesc && p[12] == st)
			room = UINT32_MAX - get_be32(&p[8]);
		if (room == 0) {
			if (a->ndesc == a->max_desc)
				break;
			p = &a->d[LBAS_HDR_LEN + a->ndesc++ * LBAS_DESC_LEN];
			put_be64(&p[0], a->next);
			p[12] = st;
			room = UINT32_MAX;
		}
		k = n - taken < room ? n - taken : room;
		put_be32(&p[8], (uint32_t)(get_be32(&p[8]) + k));
		a->next += k;
		taken += k;
	}
	return taken;
}

static void lbas_send(struct scsitgt__cmd *cmd, struct lbas_answer *a)
{
	/* PARAMETER DATA LENGTH: the bytes after itself. */
	put_be32(&a->d[0], (uint32_t)(4 + a->ndesc * LBAS_DESC_LEN));
	scsitgt__cmd_respond(cmd, a->d, LBAS_HDR_LEN + a->ndesc * LBAS_DESC_LEN);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* The backend's SCSITGT_IO_GET_LBA_STATUS answered: its extents become descriptors. */
static void lbas_io_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			 enum scsitgt__sense_reason reason)
{
	size_t count;
	struct scsitgt_lba_extent *ext = scsitgt_io_get_lba_extents(io, &count);
	uint64_t left = io->num_blocks;
	struct lbas_answer a;

	lbas_answer_init(&a, cmd);
	for (size_t i = 0; reason == SCSITGT__SR_OK && i < count && left; i++) {
		uint64_t n = ext[i].num_blocks < left ? ext[i].num_blocks : left;

		uint64_t took;

		if (n == 0)
			break;
		/* Anything but DEALLOCATED is reported mapped, which is never wrong. */
		took = lbas_put(&a, n,
				ext[i].status == SCSITGT_LBA_DEALLOCATED ? LBAS_DEALLOCATED :
									   LBAS_MAPPED);
		left -= took;
		if (took < n)
			break; /* the descriptors are used up */
	}
	/* An empty list: the range is mapped as far as the backend knows. */
	if (reason == SCSITGT__SR_OK && a.ndesc == 0)
		lbas_put(&a, io->num_blocks, LBAS_MAPPED);
	scsitgt__cmd_ctx_own(cmd, NULL);
	free(ext);
	if (reason != SCSITGT__SR_OK) {
		scsitgt__io_done_complete_cmd(cmd, io, reason);
		return;
	}
	lbas_send(cmd, &a);
}

/* A command given up with its io in the backend (core/drain.c): the extent array that io
 * fills goes with the command (cmd.h). */
static void lbas_extents_free(struct scsitgt__cmd *cmd)
{
	free(cmd->ctx.lba_extents);
	cmd->ctx.lba_extents = NULL;
}

static const struct scsitgt__cmd_ctx_ops lbas_ctx_ops = {
	.free = lbas_extents_free,
};

/* Ask the backend's asynchronous op; false when the io could not be submitted. The extent
 * array has room for LBAS_MAX_DESC extents whatever the allocation length: a backend's extents
 * may be finer than the descriptors they merge into. */
static bool lbas_submit(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	uint64_t rest = scsitgt__lun_blocks(lun) - cmd->lba;
	struct iovec iov;

	iov.iov_len = LBAS_MAX_DESC * sizeof(struct scsitgt_lba_extent);
	iov.iov_base = calloc(1, iov.iov_len);
	if (iov.iov_base == NULL)
		return false;
	cmd->ctx.lba_extents = iov.iov_base;
	scsitgt__cmd_ctx_own(cmd, &lbas_ctx_ops);
	if (scsitgt__io_submit(cmd, SCSITGT_IO_GET_LBA_STATUS, cmd->lba,
			       rest < UINT32_MAX ? (uint32_t)rest : UINT32_MAX, &iov, 1, 0,
			       lbas_io_done) < 0) {
		scsitgt__cmd_ctx_own(cmd, NULL);
		free(iov.iov_base);
		return false;
	}
	return true;
}

/* The synchronous op, asked piece by piece until the descriptors are used up; false when
 * the backend failed. On the loop where the backend may be called. */
static bool lbas_ask(const struct scsitgt_lun *lun, struct lbas_answer *a)
{
	const uint64_t cap = scsitgt__lun_blocks(lun);

	while (a->next < cap) {
		uint64_t rest = cap - a->next, n;
		bool mapped;

		if (lun->ops.get_lba_status(lun->bctx, a->next, &n, &mapped) < 0)
			return false;
		/* Do not trust a broken answer to bound the loop. */
		if (n == 0 || n > rest)
			n = n ? rest : 1;
		if (lbas_put(a, n, mapped ? LBAS_MAPPED : LBAS_DEALLOCATED) < n)
			break;
	}
	return true;
}

/*
 * A backend without SCSITGT_BACKEND_MULTI_LOOP is called on the home loop only (backend.h),
 * its synchronous get_lba_status() too: a command of another loop asks it there by message
 * and gets the answer back by message, held meanwhile (an abort waits for the answer).
 */
struct lbas_fwd {
	struct scsitgt__msg msg;
	struct scsitgt__cmd *cmd;
	const struct scsitgt_lun *lun;
	bool ok;
	struct lbas_answer a;
};

/* The command's loop: the answer is back. */
static void lbas_fwd_back(struct scsitgt__msg *msg)
{
	struct lbas_fwd *f = scsitgt__container_of(msg, struct lbas_fwd, msg);
	struct scsitgt__cmd *cmd = f->cmd;

	scsitgt__cmd_unhold(cmd);
	if (f->ok)
		lbas_send(cmd, &f->a);
	else
		scsitgt__cmd_complete(cmd, SCSITGT__SR_INTERNAL_FAILURE);
	free(f);
}

/* Home: ask the backend, send the answer back. */
static void lbas_fwd_home(struct scsitgt__msg *msg)
{
	struct lbas_fwd *f = scsitgt__container_of(msg, struct lbas_fwd, msg);

	f->ok = lbas_ask(f->lun, &f->a);
	f->msg.fn = lbas_fwd_back;
	scsitgt__shard_post(f->cmd->shard, &f->msg);
}

void scsitgt__sbc_get_lba_status(struct scsitgt__cmd *cmd)
{
	const struct scsitgt_lun *lun = cmd->lun;
	struct lbas_answer a;
	struct lbas_fwd *f;

	if (scsitgt__sbc_lbpme(lun) && scsitgt__lun_supports(lun, SCSITGT_IO_GET_LBA_STATUS)) {
		if (!lbas_submit(cmd))
			scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	if (!scsitgt__sbc_lbpme(lun) || lun->ops.get_lba_status == NULL) {
		/* SBC-4 §4.7.2: a fully provisioned LUN maps every block; and so does a thin one
		 * whose backend cannot tell. */
		lbas_answer_init(&a, cmd);
		lbas_put(&a, scsitgt__lun_blocks(lun) - cmd->lba, LBAS_MAPPED);
		lbas_send(cmd, &a);
		return;
	}
	if (cmd->shard->index != 0 && !(lun->ops.flags & SCSITGT_BACKEND_MULTI_LOOP)) {
		f = malloc(sizeof(*f));
		if (f == NULL) {
			scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
			return;
		}
		f->cmd = cmd;
		f->lun = lun;
		lbas_answer_init(&f->a, cmd);
		scsitgt__cmd_hold(cmd);
		f->msg.fn = lbas_fwd_home;
		scsitgt__engine_post(lun->engine, &f->msg);
		return;
	}
	lbas_answer_init(&a, cmd);
	if (!lbas_ask(lun, &a)) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_INTERNAL_FAILURE);
		return;
	}
	lbas_send(cmd, &a);
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
	if (scsitgt__sbc_range_bad(lun, lba, n))
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
 * §6.6.3), each advertised only when its command is in the CDB table; the atomic ones only
 * when the backend stores writes all or none (SCSITGT_BACKEND_ATOMIC_WRITE), 0 otherwise. */
void scsitgt__sbc_block_limits(const struct scsitgt_lun *lun, uint8_t *b0)
{
	if (scsitgt__cdb_supported(SBC_COMPARE_AND_WRITE, 0))
		b0[5] = (uint8_t)scsitgt__sbc_max_caw_blocks(lun);
	if (scsitgt__cdb_supported(SBC_WRITE_SAME_16, 0) ||
	    scsitgt__cdb_supported(SBC_WRITE_SAME_10, 0)) {
		/* Byte 4 bit 0 WSNZ stays zero: NUMBER OF LOGICAL BLOCKS 0 writes through the
		 * last LBA (sbc_write_same.c). */
		put_be64(&b0[36], lun->limits.max_write_same_blocks);
	}
	if (scsitgt__cdb_supported(SBC_WRITE_ATOMIC_16, 0) &&
	    (lun->ops.flags & SCSITGT_BACKEND_ATOMIC_WRITE)) {
		put_be32(&b0[44], scsitgt__sbc_max_atomic_blocks(lun));
		/* ATOMIC ALIGNMENT and ATOMIC TRANSFER LENGTH GRANULARITY: a physical block. */
		put_be32(&b0[48], scsitgt__sbc_atomic_granularity(lun));
		put_be32(&b0[52], scsitgt__sbc_atomic_granularity(lun));
		/* Bytes 56..63: no atomic boundary support (both 0). */
	}
}
