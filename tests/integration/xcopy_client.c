/* SPDX-License-Identifier: MIT */
/*
 * xcopy_client - EXTENDED COPY between two LUNs of one target, over iSCSI, the way VMware's
 * VAAI clone does it: designators from VPD 83h, limits from RECEIVE COPY RESULTS (OPERATING
 * PARAMETERS), one EXTENDED COPY(LID1), the data read back and compared, COPY STATUS.
 * libiscsi builds the CDBs and parses the answers (VPD 83h, copy results).
 *
 * Usage: xcopy_client URL-LUN-A URL-LUN-B   (two LUNs of the same target, 512-byte blocks)
 * Exit 0 when everything matched, 1 with a message otherwise.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#define INITIATOR "iqn.2026-11.org.libscsitgt:xcopy"
#define BS 512u
#define NBLK 4096u /* 2 MiB: more than one piece of the copy manager */

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "xcopy_client: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void put_be(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

/* The identification CSCD descriptor (E4h) of @lun from its NAA designator (VPD 83h). */
static void cscd_of(struct iscsi_context *iscsi, int lun, unsigned char *d)
{
	struct scsi_task *t = iscsi_inquiry_sync(iscsi, lun, 1, 0x83, 255);
	struct scsi_inquiry_device_identification *di;
	struct scsi_inquiry_device_designator *des;

	if (t == NULL || t->status != SCSI_STATUS_GOOD)
		fail("INQUIRY VPD 83h of LUN %d: %s", lun, iscsi_get_error(iscsi));
	di = scsi_datain_unmarshall(t);
	if (di == NULL)
		fail("VPD 83h of LUN %d does not parse", lun);
	for (des = di->designators; des; des = des->next) {
		if (des->designator_type == SCSI_DESIGNATOR_TYPE_NAA && des->association == 0)
			break;
	}
	if (des == NULL || des->designator_length > 20)
		fail("LUN %d has no NAA designator", lun);
	memset(d, 0, 32);
	d[0] = 0xe4;
	d[4] = (unsigned char)des->code_set;
	d[5] = (unsigned char)des->designator_type;
	d[7] = (unsigned char)des->designator_length;
	memcpy(&d[8], des->designator, des->designator_length);
	put_be(&d[29], BS, 3);
	scsi_free_scsi_task(t);
}

static void seg(unsigned char *d, int src, int dst, int n, uint64_t slba, uint64_t dlba)
{
	memset(d, 0, 28);
	d[0] = 0x02;
	put_be(&d[2], 0x18, 2);
	put_be(&d[4], (uint64_t)src, 2);
	put_be(&d[6], (uint64_t)dst, 2);
	put_be(&d[10], (uint64_t)n, 2);
	put_be(&d[12], slba, 8);
	put_be(&d[20], dlba, 8);
}

static void rw(struct iscsi_context *iscsi, int lun, uint64_t lba, unsigned char *buf, uint32_t len,
	       int write)
{
	struct scsi_task *t =
		write ? iscsi_write16_sync(iscsi, lun, lba, buf, len, BS, 0, 0, 0, 0, 0) :
			iscsi_read16_sync(iscsi, lun, lba, len, BS, 0, 0, 0, 0, 0);

	if (t == NULL || t->status != SCSI_STATUS_GOOD)
		fail("%s LUN %d LBA %llu: %s", write ? "WRITE" : "READ", lun,
		     (unsigned long long)lba, iscsi_get_error(iscsi));
	if (!write) {
		if (t->datain.size != (int)len)
			fail("READ LUN %d: %d bytes", lun, t->datain.size);
		memcpy(buf, t->datain.data, len);
	}
	scsi_free_scsi_task(t);
}

/* RECEIVE COPY RESULTS COPY STATUS of @list_id: COPY MANAGER STATUS, segments, bytes. */
static void copy_status(struct iscsi_context *iscsi, int lun, int list_id, int want_status,
			int want_segs, uint64_t want_bytes)
{
	struct scsi_task *t = iscsi_receive_copy_results_sync(
		iscsi, lun, SCSI_COPY_RESULTS_COPY_STATUS, list_id, 64);
	struct scsi_copy_results_copy_status *cs;
	uint64_t bytes;

	if (t == NULL || t->status != SCSI_STATUS_GOOD)
		fail("COPY STATUS of list %d: %s", list_id, iscsi_get_error(iscsi));
	cs = scsi_datain_unmarshall(t);
	if (cs == NULL)
		fail("COPY STATUS does not parse");
	bytes = (uint64_t)cs->transfer_count << (10 * cs->transfer_count_units);
	if (cs->copy_manager_status != want_status || cs->segments_processed != want_segs ||
	    bytes != want_bytes)
		fail("COPY STATUS of list %d: status %d segments %d bytes %llu", list_id,
		     cs->copy_manager_status, cs->segments_processed, (unsigned long long)bytes);
	scsi_free_scsi_task(t);
}

int main(int argc, char **argv)
{
	struct iscsi_context *iscsi;
	struct iscsi_url *ua, *ub;
	struct scsi_task *t;
	struct scsi_copy_results_op_params *op;
	struct scsi_inquiry_standard *inq;
	unsigned char list[16 + 2 * 32 + 2 * 28], *a, *b;
	struct iscsi_data data = { .size = sizeof(list), .data = list };
	int la, lb;

	if (argc != 3)
		fail("usage: xcopy_client URL-LUN-A URL-LUN-B");
	iscsi = iscsi_create_context(INITIATOR);
	if (iscsi == NULL)
		fail("no context");
	ua = iscsi_parse_full_url(iscsi, argv[1]);
	ub = iscsi_parse_full_url(iscsi, argv[2]);
	if (ua == NULL || ub == NULL || strcmp(ua->target, ub->target) != 0)
		fail("two LUN URLs of one target expected");
	la = ua->lun;
	lb = ub->lun;
	iscsi_set_targetname(iscsi, ua->target);
	iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
	if (iscsi_full_connect_sync(iscsi, ua->portal, la) != 0)
		fail("login: %s", iscsi_get_error(iscsi));

	/* The login consumed LUN A's power-on unit attention; take LUN B's. */
	for (int i = 0; i < 4; i++) {
		t = iscsi_testunitready_sync(iscsi, lb);
		if (t && t->status == SCSI_STATUS_GOOD) {
			scsi_free_scsi_task(t);
			break;
		}
		if (t)
			scsi_free_scsi_task(t);
	}

	/* The copy manager: 3PC in the standard INQUIRY data, the limits. */
	t = iscsi_inquiry_sync(iscsi, la, 0, 0, 96);
	inq = t ? scsi_datain_unmarshall(t) : NULL;
	if (inq == NULL || !inq->threepc)
		fail("LUN %d does not claim 3PC", la);
	scsi_free_scsi_task(t);
	t = iscsi_receive_copy_results_sync(iscsi, la, SCSI_COPY_RESULTS_OP_PARAMS, 0, 1024);
	op = t && t->status == SCSI_STATUS_GOOD ? scsi_datain_unmarshall(t) : NULL;
	if (op == NULL || op->max_target_desc_count < 2 || op->max_segment_desc_count < 2)
		fail("operating parameters: %s", iscsi_get_error(iscsi));
	scsi_free_scsi_task(t);

	/* Data on A, old data on B. */
	a = malloc(NBLK * BS);
	b = malloc(NBLK * BS);
	if (a == NULL || b == NULL)
		fail("no memory");
	for (size_t i = 0; i < NBLK * BS; i++)
		a[i] = (unsigned char)(i * 13 + i / BS);
	memset(b, 0xee, NBLK * BS);
	rw(iscsi, la, 0, a, NBLK * BS, 1);
	rw(iscsi, lb, 0, b, 200 * BS, 1);

	/* One list, sent to A: A[0..NBLK) -> B[100..), then B[100..108) -> A[NBLK..). */
	memset(list, 0, 16);
	list[0] = 5;		 /* LIST IDENTIFIER, LIST ID USAGE 00b */
	put_be(&list[2], 64, 2); /* CSCD DESCRIPTOR LIST LENGTH */
	put_be(&list[8], 56, 4); /* SEGMENT DESCRIPTOR LIST LENGTH */
	cscd_of(iscsi, la, &list[16]);
	cscd_of(iscsi, lb, &list[48]);
	seg(&list[80], 0, 1, NBLK, 0, 100);
	seg(&list[108], 1, 0, 8, 100, NBLK);
	t = iscsi_extended_copy_sync(iscsi, la, &data);
	if (t == NULL || t->status != SCSI_STATUS_GOOD)
		fail("EXTENDED COPY: %s", iscsi_get_error(iscsi));
	scsi_free_scsi_task(t);
	copy_status(iscsi, la, 5, 1, 2, (uint64_t)(NBLK + 8) * BS);

	rw(iscsi, lb, 100, b, NBLK * BS, 0);
	if (memcmp(a, b, NBLK * BS) != 0)
		fail("LUN %d does not hold the copied blocks", lb);
	rw(iscsi, la, NBLK, b, 8 * BS, 0);
	if (memcmp(a, b, 8 * BS) != 0)
		fail("LUN %d does not hold the blocks copied back", la);

	/* Past the end of B: COPY ABORTED, the status says so. */
	list[0] = 6;
	put_be(&list[80 + 20], (uint64_t)1 << 40, 8);
	t = iscsi_extended_copy_sync(iscsi, la, &data);
	if (t == NULL || t->status != SCSI_STATUS_CHECK_CONDITION ||
	    t->sense.key != SCSI_SENSE_COPY_ABORTED)
		fail("EXTENDED COPY past the end was not COPY ABORTED");
	scsi_free_scsi_task(t);
	copy_status(iscsi, la, 6, 2, 1, 0);

	printf("xcopy_client: copied %u blocks LUN %d -> LUN %d and 8 back, verified\n", NBLK, la,
	       lb);
	free(a);
	free(b);
	iscsi_destroy_url(ua);
	iscsi_destroy_url(ub);
	iscsi_logout_sync(iscsi);
	iscsi_destroy_context(iscsi);
	return 0;
}
