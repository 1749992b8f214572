/* SPDX-License-Identifier: MIT */
/* SPC-5 commands every logical unit supports. */
#include <stdlib.h>
#include <string.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/scsi_spec.h"
#include "core/spc.h"
#include "util/be.h"

/* SPC-5 §6.37 TEST UNIT READY: medium state was checked by the table flags. */
void scsitgt__spc_test_unit_ready(struct scsitgt__cmd *cmd)
{
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

/* SPC-5 §6.33 REPORT LUNS: SELECT REPORT 00h, 01h (none well known), 02h; ALLOCATION LENGTH
 * at least 16 bytes. */
enum scsitgt__sense_reason scsitgt__spc_parse_report_luns(struct scsitgt__cmd *cmd)
{
	uint8_t select = cmd->cdb[2];

	if (select != 0x00 && select != 0x01 && select != 0x02 && select != 0x10 &&
	    select != 0x11 && select != 0x12)
		return scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
	if (get_be32(&cmd->cdb[6]) < 16)
		return scsitgt__cmd_bad_cdb_field(cmd, 6, -1);
	return scsitgt__parse_alloc32(cmd, 6);
}

void scsitgt__spc_report_luns(struct scsitgt__cmd *cmd)
{
	/*
	 * The LUN table as published to every shard (core.h), not home's array, which home
	 * changes meanwhile when this command runs on a worker; the table stays valid until this
	 * loop callback returns (scsitgt__shards_sync()). Acquire: its LUNs are initialised.
	 * One pass over that one table lists the LUNs and counts them together: home may change
	 * the masking or the LUNs meanwhile, and a count made before a change and a list made
	 * after it would disagree (SPC-5 §6.33: LUN LIST LENGTH is the length of the list).
	 */
	const struct scsitgt__lun_table *t =
		atomic_load_explicit(&cmd->sess->tgt->lun_table, memory_order_acquire);
	size_t nluns = t ? t->n : 0;
	uint8_t select = cmd->cdb[2];
	size_t n = 0;
	uint8_t *p;

	p = calloc(1, 8 + 8 * nluns);
	if (p == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	/* only the LUNs this nexus sees (LUN masking, core/acl.c); the table holds none being
	 * destroyed (a LUN leaves it when its destroy begins, core/lun.c). */
	if (select != 0x01 && select != 0x11)
		for (size_t i = 0; i < nluns; i++)
			if (scsitgt__session_lun_visible(cmd->sess, t->luns[i]->id))
				scsitgt__lun_encode(t->luns[i]->id, &p[8 + 8 * n++]);
	put_be32(p, (uint32_t)(8 * n));
	scsitgt__cmd_respond(cmd, p, 8 + 8 * n);
	free(p);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}
