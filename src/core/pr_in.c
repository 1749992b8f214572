/* SPDX-License-Identifier: MIT */
/* PERSISTENT RESERVE IN (SPC-5 §6.16): READ KEYS, READ RESERVATION, REPORT CAPABILITIES,
 * READ FULL STATUS. */
#include <stdlib.h>
#include <string.h>

#include "core/pr.h"
#include "core/scsi_spec.h"
#include "util/be.h"

/* SPC-5 §6.16.3.2 Table 218: the 16-byte reservation descriptor after an 8-byte header. */
#define PR_RESV_DESC_LEN 16
/* SPC-5 §6.16.5.2 Table 227: a full status descriptor before its TransportID. */
#define PR_FULL_DESC_LEN 24

enum scsitgt__sense_reason scsitgt__pr_parse_in(struct scsitgt__cmd *cmd)
{
	/* SPC-5 §6.16.1: ALLOCATION LENGTH is bytes 7-8. */
	return scsitgt__parse_alloc16(cmd, 7);
}

/*
 * Room for the largest answer: READ FULL STATUS with every registration carrying a full
 * TransportID (24 + 4 + SCSITGT__PR_PORT_MAX bytes each), plus the header.
 */
static size_t pr_in_max(const struct scsitgt__pr *pr)
{
	return 8 + (size_t)(pr ? pr->nregs : 0) * (PR_FULL_DESC_LEN + 4 + SCSITGT__PR_PORT_MAX);
}

static size_t read_keys(const struct scsitgt__pr *pr, uint8_t *b)
{
	size_t n = 8;

	put_be32(&b[0], pr ? pr->generation : 0);
	for (struct scsitgt__list *p = pr ? pr->regs.next : NULL; pr && p != &pr->regs;
	     p = p->next) {
		put_be64(&b[n], scsitgt__container_of(p, struct scsitgt__pr_reg, node)->key);
		n += 8;
	}
	put_be32(&b[4], (uint32_t)(n - 8));
	return n;
}

static size_t read_reservation(const struct scsitgt__pr *pr, uint8_t *b)
{
	put_be32(&b[0], pr ? pr->generation : 0);
	put_be32(&b[4], 0);
	if (pr == NULL || !pr->held)
		return 8;
	memset(&b[8], 0, PR_RESV_DESC_LEN);
	/* SPC-5 §6.16.3.2: all-registrants reservations report key zero. */
	put_be64(&b[8], pr->holder ? pr->holder->key : 0);
	b[8 + 13] = (uint8_t)(pr->scope << 4 | pr->type);
	put_be32(&b[4], PR_RESV_DESC_LEN);
	return 8 + PR_RESV_DESC_LEN;
}

static size_t report_capabilities(const struct scsitgt_lun *lun, const struct scsitgt__pr *pr,
				  uint8_t *b)
{
	/* SPC-5 §6.16.4 Table 222. */
	memset(b, 0, 8);
	put_be16(&b[0], 8);
	/* CRH (the SPC-5 §5.13.3 exceptions to SPC-2 RESERVE and RELEASE, core/pr.c), SIP_C,
	 * ATP_C, PTPL_C; RLR_C 0 (REPLACE LOST RESERVATION is refused, pr_out.c). */
	b[2] = 0x10 | 0x08 | 0x04 | (scsitgt__pr_ptpl_capable(lun) ? 0x01 : 0);
	/* TMV: the type mask is valid; PTPL_A. ALLOW COMMANDS 100b (SPC-5 Table 223): TEST UNIT
	 * READY and RECEIVE COPY RESULTS pass Write Exclusive and Exclusive Access, MODE SENSE,
	 * RECEIVE DIAGNOSTIC RESULTS, REPORT SUPPORTED OPERATION CODES and TASK MANAGEMENT
	 * FUNCTIONS and READ DEFECT DATA pass Write Exclusive: their .pr classes in core/cdb.c
	 * (READ ATTRIBUTE and READ BUFFER are not implemented). */
	b[3] = 0x80 | 0x40 | (pr && pr->aptpl ? 0x01 : 0);
	/* WR_EX_AR, EX_AC_RO, WR_EX_RO, EX_AC, WR_EX; then EX_AC_AR. */
	b[4] = 0x80 | 0x40 | 0x20 | 0x08 | 0x02;
	b[5] = 0x01;
	return 8;
}

static size_t read_full_status(const struct scsitgt__pr *pr, uint8_t *b)
{
	size_t n = 8;

	put_be32(&b[0], pr ? pr->generation : 0);
	for (struct scsitgt__list *p = pr ? pr->regs.next : NULL; pr && p != &pr->regs;
	     p = p->next) {
		const struct scsitgt__pr_reg *r =
			scsitgt__container_of(p, struct scsitgt__pr_reg, node);
		uint8_t *d = &b[n];
		size_t tl;

		memset(d, 0, PR_FULL_DESC_LEN);
		put_be64(&d[0], r->key);
		d[12] = (uint8_t)((r->all_tg_pt ? 0x02 : 0) |
				  (scsitgt__pr_is_holder(pr, r) ? 0x01 : 0));
		if (scsitgt__pr_is_holder(pr, r))
			d[13] = (uint8_t)(pr->scope << 4 | pr->type);
		/* With ALL_TG_PT the port field is not meaningful (SPC-5 §6.16.5.2). */
		put_be16(&d[18], r->all_tg_pt ? 0 : r->rel_port_id);
		tl = scsitgt__pr_tid_encode(r, &d[PR_FULL_DESC_LEN]);
		put_be32(&d[20], (uint32_t)tl);
		n += PR_FULL_DESC_LEN + tl;
	}
	put_be32(&b[4], (uint32_t)(n - 8));
	return n;
}

void scsitgt__pr_in(struct scsitgt__cmd *cmd)
{
	/* A copy the cluster store called stale is never answered from (pr_cluster.c), nor one
	 * with a delivery not yet applied or past the store's lease (pr_hold.c): the store is
	 * read first. */
	if ((cmd->xflags & (SCSITGT__LUN_XF_PR_UNSYNCED | SCSITGT__LUN_XF_PR_PENDING)) ||
	    ((cmd->xflags & SCSITGT__LUN_XF_PR_SHARED) &&
	     scsitgt__pr_hold_due(
		     0, atomic_load_explicit(&cmd->lun->pr->lease_ms, memory_order_relaxed)))) {
		scsitgt__pr_cluster_in(cmd);
		return;
	}
	scsitgt__pr_in_answer(cmd);
}

void scsitgt__pr_in_answer(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	const struct scsitgt__pr *pr;
	uint8_t *b;
	size_t n;

	/* A consistent picture of a state other loops may change (issue 18). */
	uv_mutex_lock(&lun->xlock);
	pr = lun->pr;
	b = malloc(pr_in_max(pr) < 64 ? 64 : pr_in_max(pr));
	if (b == NULL) {
		uv_mutex_unlock(&lun->xlock);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_INTERNAL_FAILURE);
		return;
	}
	switch (cmd->cdb[1] & 0x1f) {
	case PR_IN_READ_KEYS:
		n = read_keys(pr, b);
		break;
	case PR_IN_READ_RESERVATION:
		n = read_reservation(pr, b);
		break;
	case PR_IN_REPORT_CAPABILITIES:
		n = report_capabilities(cmd->lun, pr, b);
		break;
	case PR_IN_READ_FULL_STATUS:
	default:
		n = read_full_status(pr, b);
		break;
	}
	uv_mutex_unlock(&lun->xlock);
	scsitgt__cmd_respond(cmd, b, n);
	free(b);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}
