/* SPDX-License-Identifier: MIT */
/*
 * Reservation state of a LUN, the reservation conflict check every command passes
 * (SPC-5 §5.13.1 Table 63, SBC-4 §4.17.1 Table 13), and SPC-2 RESERVE / RELEASE (SPC-2 §5.5,
 * §7.21-7.24).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/sbc.h"
#include "util/be.h"

struct scsitgt__pr *scsitgt__pr_get(struct scsitgt_lun *lun)
{
	if (lun->pr == NULL) {
		lun->pr = calloc(1, sizeof(*lun->pr));
		if (lun->pr == NULL)
			return NULL;
		scsitgt__list_init(&lun->pr->regs);
		scsitgt__list_init(&lun->pr->lost);
		scsitgt__list_init(&lun->pr->cl_queue);
		scsitgt__list_init(&lun->pr->hold_q);
	}
	return lun->pr;
}

void scsitgt__pr_free(struct scsitgt_lun *lun)
{
	struct scsitgt__list *pos, *tmp;

	if (lun->pr == NULL)
		return;
	scsitgt__pr_cluster_free(lun);
	scsitgt__list_foreach_safe(pos, tmp, &lun->pr->regs)
	{
		free(scsitgt__container_of(pos, struct scsitgt__pr_reg, node));
	}
	scsitgt__list_foreach_safe(pos, tmp, &lun->pr->lost)
	{
		free(scsitgt__container_of(pos, struct scsitgt__pr_lost, node));
	}
	free(lun->pr->file_path);
	free(lun->pr);
	lun->pr = NULL;
}

bool scsitgt__pr_reg_covers(const struct scsitgt__pr_reg *reg, const char *iport,
			    uint16_t rel_port_id)
{
	if (!reg->all_tg_pt && reg->rel_port_id != rel_port_id)
		return false;
	if (reg->any_isid) {
		/* TransportID format 00b names the initiator device: every ISID matches. */
		size_t n = strlen(reg->iport);

		return strncasecmp(iport, reg->iport, n) == 0 &&
		       strncasecmp(iport + n, ",i,0x", 5) == 0;
	}
	/* iSCSI names compare without case (RFC 7143 §4.2.7.2); so do the ISID hex digits. */
	return strcasecmp(iport, reg->iport) == 0;
}

bool scsitgt__pr_reg_matches(const struct scsitgt__pr_reg *reg, const struct scsitgt__session *sess)
{
	return scsitgt__pr_reg_covers(reg, sess->initiator_port, sess->rel_port_id);
}

struct scsitgt__pr_reg *scsitgt__pr_find_port(const struct scsitgt__pr *pr, const char *iport,
					      uint16_t rel_port_id)
{
	for (struct scsitgt__list *p = pr->regs.next; p != &pr->regs; p = p->next) {
		struct scsitgt__pr_reg *r = scsitgt__container_of(p, struct scsitgt__pr_reg, node);

		if (scsitgt__pr_reg_covers(r, iport, rel_port_id))
			return r;
	}
	return NULL;
}

struct scsitgt__pr_reg *scsitgt__pr_find(const struct scsitgt__pr *pr,
					 const struct scsitgt__session *sess)
{
	return scsitgt__pr_find_port(pr, sess->initiator_port, sess->rel_port_id);
}

bool scsitgt__pr_type_all_registrants(uint8_t type)
{
	return type == PR_TYPE_WE_AR || type == PR_TYPE_EA_AR;
}

bool scsitgt__pr_is_holder(const struct scsitgt__pr *pr, const struct scsitgt__pr_reg *reg)
{
	/* SPC-5 §5.13.10: under the all-registrants types every registrant holds it. */
	if (!pr->held || reg == NULL)
		return false;
	return scsitgt__pr_type_all_registrants(pr->type) || pr->holder == reg;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool scsitgt__pr_srp_port_id(const char *iport, uint8_t id[16])
{
	/* The SRP fabric names a port "0x" and its 32 hex digits (transport/srp/srp_nexus.c). */
	if (strncasecmp(iport, "0x", 2) == 0)
		iport += 2;
	if (strlen(iport) != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		int hi = hex_digit(iport[2 * i]), lo = hex_digit(iport[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		id[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

size_t scsitgt__pr_tid_encode(const struct scsitgt__pr_reg *reg, uint8_t *buf)
{
	/* SPC-5 §7.6.4.6 Table 512/513: format 01b names the port, 00b the device. The name is
	 * NUL-terminated and padded to a multiple of four, at least 20 bytes. */
	size_t n = strlen(reg->iport) + 1;
	size_t addl = (n + 3) & ~(size_t)3;

	/* SPC-5 §7.6.4.5 Table 510 (SCSI RDMA Protocol): 24 bytes, FORMAT CODE 00b, the
	 * 16-byte INITIATOR PORT IDENTIFIER in bytes 8..23. */
	if (reg->protocol_id == SCSITGT__PROTO_SRP) {
		memset(buf, 0, SCSITGT__PR_SRP_TID_LEN);
		buf[0] = SCSITGT__PROTO_SRP;
		if (!scsitgt__pr_srp_port_id(reg->iport, &buf[8]))
			memset(&buf[8], 0, 16);
		return SCSITGT__PR_SRP_TID_LEN;
	}
	if (addl < 20)
		addl = 20;
	memset(buf, 0, 4 + addl);
	buf[0] = (uint8_t)((reg->any_isid ? 0x00 : 0x40) | SCSITGT__PROTO_ISCSI);
	put_be16(&buf[2], (uint16_t)addl);
	memcpy(&buf[4], reg->iport, n);
	return 4 + addl;
}

static bool r2_mine(const struct scsitgt__pr *pr, const struct scsitgt__session *sess)
{
	return pr->r2_held && pr->r2_rel_port_id == sess->rel_port_id &&
	       strcasecmp(pr->r2_iport, sess->initiator_port) == 0;
}

void scsitgt__pr_sync_xflags(struct scsitgt_lun *lun)
{
	struct scsitgt__pr *pr = lun->pr;

	scsitgt__lun_xflags_set(lun, SCSITGT__LUN_XF_RESERVED, pr && (pr->held || pr->r2_held));
	/* After the flags: a check that loads the sequence first, then the flags, never pairs
	 * an older state's flags with this sequence (scsitgt__pr_check()). */
	if (pr)
		atomic_store_explicit(&pr->adm_seq, pr->seq, memory_order_release);
}

/*
 * SPC-5 §5.13.3 "Exceptions to SPC-2 RESERVE and RELEASE behavior" (what CRH=1 in REPORT
 * CAPABILITIES promises): a RESERVE (6)/(10) or RELEASE (6)/(10) from a persistent
 * reservation holder, or from a registrant while a registrants-only or all-registrants
 * reservation is present, completes with GOOD and changes no reservation. Under xlock.
 */
static bool pr_crh_exempt(const struct scsitgt__pr *pr, const struct scsitgt__session *sess)
{
	const struct scsitgt__pr_reg *reg;

	if (!pr->held)
		return false;
	reg = scsitgt__pr_find(pr, sess);
	if (scsitgt__pr_is_holder(pr, reg))
		return true;
	return reg != NULL && (pr->type == PR_TYPE_WE_RO || pr->type == PR_TYPE_EA_RO);
}

/* The class of @cmd (the .pr column, enum scsitgt__pr_class) with DEFAULT and MEDIUM
 * resolved. */
static uint8_t pr_class(const struct scsitgt__cmd *cmd)
{
	const struct scsitgt__cdb_def *row = cmd->def;
	uint8_t b4 = cmd->cdb[4];

	switch (row->pr) {
	case SCSITGT__PR_DEFAULT:
		return (row->flags & SCSITGT__CDB_F_WRITE) ? SCSITGT__PR_WRITE : SCSITGT__PR_READ;
	case SCSITGT__PR_MEDIUM:
		/* START STOP UNIT: POWER CONDITION is byte 4 bits 7..4, START bit 0 (SBC-4
		 * §5.25); PREVENT ALLOW MEDIUM REMOVAL: PREVENT is byte 4 bits 1..0 (SPC-5
		 * §6.15). Starting the unit or allowing removal takes nothing from the holder. */
		if (cmd->cdb[0] == SBC_START_STOP_UNIT)
			return (b4 & 0xf1) == 0x01 ? SCSITGT__PR_ALLOWED_SPC2 : SCSITGT__PR_WRITE;
		return (b4 & 0x03) == 0 ? SCSITGT__PR_ALLOWED_SPC2 : SCSITGT__PR_WRITE;
	default:
		return row->pr;
	}
}

/* The conflict check of a command of class @cls against @pr. Under xlock. */
static enum scsitgt__sense_reason pr_check_locked(const struct scsitgt__cmd *cmd,
						  const struct scsitgt__pr *pr, uint8_t cls)
{
	const struct scsitgt__cdb_def *row = cmd->def;
	const struct scsitgt__pr_reg *reg;

	if (pr == NULL)
		return SCSITGT__SR_OK;
	/* SPC-2 §5.5.1 and Annex B: under another nexus's RESERVE only the commands that need
	 * no logical unit (INQUIRY, REPORT LUNS, REQUEST SENSE), RELEASE (a no-op) and the
	 * PR_ALLOWED_SPC2 ones (READ CAPACITY, LOG SENSE, START STOP UNIT with START 1,
	 * PREVENT ALLOW MEDIUM REMOVAL with PREVENT 0) get through. Annex B predates REPORT
	 * TARGET PORT GROUPS (SPC-3); it is PR_ALLOWED_SPC2 too: it reports the target's ports,
	 * not the medium, SPC-5 §5.13.1 Table 63 allows it under every persistent reservation
	 * (Exclusive Access included), and Linux's ALUA handler fails a path whose RTPG fails
	 * (RESERVATION CONFLICT carries no sense: SCSI_DH_IO), so the node that lost a RESERVE
	 * race would lose its paths. REPORT SUPPORTED OPERATION CODES and TASK MANAGEMENT
	 * FUNCTIONS conflict, as Table 63 has them under Exclusive Access. */
	if (pr->r2_held && !r2_mine(pr, cmd->sess) && cls != SCSITGT__PR_RELEASE &&
	    cls != SCSITGT__PR_ALLOWED_SPC2 && !(row->flags & SCSITGT__CDB_F_NO_LUN))
		return SCSITGT__SR_RESERVATION_CONFLICT;
	/* SPC-2 §5.5.1: while any nexus is registered, RESERVE and RELEASE conflict, except as
	 * SPC-5 §5.13.3 says (pr_crh_exempt()). Not with a cluster store: there they are not
	 * supported at all (scsitgt__pr_parse_reserve()). */
	if (cls == SCSITGT__PR_RESERVE || cls == SCSITGT__PR_RELEASE) {
		if (!pr->nregs || pr->cl_on || pr_crh_exempt(pr, cmd->sess))
			return SCSITGT__SR_OK;
		return SCSITGT__SR_RESERVATION_CONFLICT;
	}
	if (!pr->held || cls == SCSITGT__PR_ALLOWED || cls == SCSITGT__PR_ALLOWED_SPC2 ||
	    cls == SCSITGT__PR_OUT)
		return SCSITGT__SR_OK;
	reg = scsitgt__pr_find(pr, cmd->sess);
	if (scsitgt__pr_is_holder(pr, reg))
		return SCSITGT__SR_OK;
	switch (pr->type) {
	case PR_TYPE_WE:
		return cls == SCSITGT__PR_WRITE ? SCSITGT__SR_RESERVATION_CONFLICT : SCSITGT__SR_OK;
	case PR_TYPE_WE_RO:
	case PR_TYPE_WE_AR:
		if (reg)
			return SCSITGT__SR_OK;
		return cls == SCSITGT__PR_WRITE ? SCSITGT__SR_RESERVATION_CONFLICT : SCSITGT__SR_OK;
	case PR_TYPE_EA_RO:
	case PR_TYPE_EA_AR:
		return reg ? SCSITGT__SR_OK : SCSITGT__SR_RESERVATION_CONFLICT;
	case PR_TYPE_EA:
	default:
		return SCSITGT__SR_RESERVATION_CONFLICT;
	}
}

/*
 * The cluster store said that this copy may miss a change committed through another engine
 * (libscsitgt/pr.h, scsitgt_lun_set_pr_sync()): a command that a reservation could refuse
 * (SPC-5 §5.13.1 Table 63: the read and write classes) is not decided on it. Resyncing: BUSY
 * (SAM-5 §5.3.1, the logical unit cannot accept it now): the initiator sends it again, by
 * when the store has read the state again; Linux requeues a BUSY command without counting a
 * retry or failing the path, Windows retries it after a delay. Unreachable: NOT READY,
 * BECOMING READY, as the I/O of a backend whose cluster does not answer, which Linux retries a
 * few times and then fails over. Fenced: the backend refuses it itself.
 */
static enum scsitgt__sense_reason pr_check_unsynced(struct scsitgt_lun *lun)
{
	enum scsitgt_pr_sync sync;

	uv_mutex_lock(&lun->xlock);
	sync = lun->pr ? lun->pr->cl_sync : SCSITGT_PR_SYNCED;
	uv_mutex_unlock(&lun->xlock);
	switch (sync) {
	case SCSITGT_PR_RESYNCING:
		return SCSITGT__SR_BUSY;
	case SCSITGT_PR_UNREACHABLE:
		return SCSITGT__SR_NOT_READY_IN_PROGRESS;
	case SCSITGT_PR_FENCED:
		/* What the backend answers every io of a fenced client (NOT READY, 04h/0Ah:
		 * retry through another port), here before the conflict check: a RESERVATION
		 * CONFLICT from a copy that may be stale could be wrong, and an initiator does
		 * not fail over on it. */
		return SCSITGT__SR_NOT_READY_TRANSITIONING;
	case SCSITGT_PR_SYNCED:
	default:
		return SCSITGT__SR_OK;
	}
}

/* The conflict check; @may_hold: a command the copy cannot decide yet waits (its exec
 * becomes scsitgt__pr_hold_exec()), else it gets BUSY. */
static enum scsitgt__sense_reason pr_admit(struct scsitgt__cmd *cmd, bool may_hold)
{
	const struct scsitgt__cdb_def *row = cmd->def;
	struct scsitgt_lun *lun = cmd->lun;
	enum scsitgt__sense_reason r;
	uint64_t lease = 0;
	uint32_t xf;
	uint8_t cls;

	if (lun == NULL || row == NULL)
		return SCSITGT__SR_OK;
	cls = pr_class(cmd);
	xf = cmd->xflags;
	/*
	 * Without a reservation (SCSITGT__LUN_XF_RESERVED clear when parse loaded the flags)
	 * nothing conflicts but RESERVE and RELEASE, which registrations refuse: every other
	 * command passes without the lock, also on a LUN with registered keys (issue 18).
	 */
	if (!(xf & (SCSITGT__LUN_XF_RESERVED | SCSITGT__LUN_XF_PR_UNSYNCED |
		    SCSITGT__LUN_XF_PR_SHARED)) &&
	    cls != SCSITGT__PR_RESERVE && cls != SCSITGT__PR_RELEASE)
		return SCSITGT__SR_OK;
	if (xf & SCSITGT__LUN_XF_PR_SHARED) {
		/* The sequence of the state this command is admitted under, then the flags of
		 * that state or a newer one (scsitgt__pr_sync_xflags() stores them in the other
		 * order): decided on the flags, it is never stamped newer than what it was
		 * checked against, so a PREEMPT AND ABORT it preceded aborts it. lun->pr exists
		 * while the flag is set. */
		cmd->pr_seq = atomic_load_explicit(&lun->pr->adm_seq, memory_order_acquire);
		/* the store's lease, on adm_seq's line (pr_hold.c) */
		lease = atomic_load_explicit(&lun->pr->lease_ms, memory_order_relaxed);
		xf = scsitgt__lun_xflags(lun);
	}
	if ((xf & SCSITGT__LUN_XF_PR_UNSYNCED) &&
	    (cls == SCSITGT__PR_READ || cls == SCSITGT__PR_WRITE)) {
		r = pr_check_unsynced(lun);
		if (r != SCSITGT__SR_OK)
			return r;
	}
	/* A delivery not applied yet, or the lease run out: the copy may be about to change
	 * (libscsitgt/pr.h). The command waits for it rather than fail (pr_hold.c). */
	if ((cls == SCSITGT__PR_READ || cls == SCSITGT__PR_WRITE) &&
	    scsitgt__pr_hold_due(xf, lease)) {
		if (!may_hold)
			return SCSITGT__SR_BUSY;
		cmd->exec = scsitgt__pr_hold_exec;
		return SCSITGT__SR_OK;
	}
	if (!(xf & SCSITGT__LUN_XF_RESERVED) && cls != SCSITGT__PR_RESERVE &&
	    cls != SCSITGT__PR_RELEASE)
		return SCSITGT__SR_OK;
	uv_mutex_lock(&lun->xlock);
	if ((xf & SCSITGT__LUN_XF_PR_SHARED) && lun->pr)
		cmd->pr_seq = lun->pr->seq; /* the state checked below, exactly */
	r = pr_check_locked(cmd, lun->pr, cls);
	uv_mutex_unlock(&lun->xlock);
	return r;
}

enum scsitgt__sense_reason scsitgt__pr_check(struct scsitgt__cmd *cmd)
{
	return pr_admit(cmd, true);
}

enum scsitgt__sense_reason scsitgt__pr_check_now(struct scsitgt__cmd *cmd)
{
	return pr_admit(cmd, false);
}

void scsitgt__pr_session_gone(struct scsitgt__session *sess)
{
	struct scsitgt_target *tgt = sess->tgt;

	/* Home's own array of the target's LUNs: a nexus is freed on home only, also one of a
	 * worker shard (session_free(), core/session.c), never while a worker walks it. */
	SCSITGT__ASSERT_HOME(tgt->engine);
	for (size_t i = 0; i < tgt->nluns; i++) {
		struct scsitgt_lun *lun = tgt->luns[i];

		uv_mutex_lock(&lun->xlock);
		if (lun->pr && lun->pr->r2_held && lun->pr->r2_sess == sess) {
			lun->pr->r2_held = false;
			scsitgt__pr_sync_xflags(lun);
		}
		uv_mutex_unlock(&lun->xlock);
	}
	/* SPC-5 §6.15: the lost nexus's medium removal prevention ends (sbc.c). */
	scsitgt__sbc_prevent_session_gone(sess);
}

void scsitgt__pr_reset(struct scsitgt_lun *lun)
{
	uv_mutex_lock(&lun->xlock);
	if (lun->pr) {
		lun->pr->r2_held = false;
		scsitgt__pr_sync_xflags(lun);
	}
	uv_mutex_unlock(&lun->xlock);
}

/*
 * SPC-2 §7.21 RESERVE (6) / §7.22 RESERVE (10), §7.23-7.24 RELEASE. Only logical unit
 * reservations: the third-party and extent forms are refused by the usage masks.
 *
 * A LUN whose persistent reservations live in a cluster store (scsitgt_lun_set_pr_cluster():
 * several engines, e.g. RBD gateways, export it) does not support them: an SPC-2 reservation
 * belongs to one I_T nexus and would be enforced by the one engine that has that nexus only,
 * so a RESERVE through one gateway would leave every other gateway's initiators free to write,
 * exclusion in name only. Sharing them would need the holder's nexus loss (its gateway's
 * death) to release them cluster-wide. SPC-3 and later made them obsolete; persistent
 * reservations, which are shared, replace them. Both commands are refused as unsupported
 * operation codes and not listed by REPORT SUPPORTED OPERATION CODES (scsitgt__pr_offers()).
 */
bool scsitgt__pr_offers(const struct scsitgt_lun *lun, const struct scsitgt__cdb_def *row)
{
	bool on;

	if (row->pr != SCSITGT__PR_RESERVE && row->pr != SCSITGT__PR_RELEASE)
		return true;
	if (lun == NULL)
		return true;
	/* lun->pr and its store are set on home under the LUN's lock, and this may run on a
	 * worker's loop (a parse, REPORT SUPPORTED OPERATION CODES): read them under it. */
	uv_mutex_lock((uv_mutex_t *)&lun->xlock);
	on = scsitgt__pr_cluster_on(lun);
	uv_mutex_unlock((uv_mutex_t *)&lun->xlock);
	return !on;
}

enum scsitgt__sense_reason scsitgt__pr_parse_reserve(struct scsitgt__cmd *cmd)
{
	if (!scsitgt__pr_offers(cmd->lun, cmd->def))
		return SCSITGT__SR_INVALID_OPCODE;
	return SCSITGT__SR_OK;
}

void scsitgt__pr_reserve(struct scsitgt__cmd *cmd)
{
	struct scsitgt_lun *lun = cmd->lun;
	enum scsitgt__sense_reason r;
	struct scsitgt__pr *pr;

	uv_mutex_lock(&lun->xlock);
	pr = scsitgt__pr_get(lun);
	/* The conflict check of parse ran under an earlier hold of the lock: another nexus
	 * (another loop, or one that went ahead while this task waited in the task set) may
	 * have reserved or registered since. Decided again on the state it changes. */
	r = pr ? pr_check_locked(cmd, pr, SCSITGT__PR_RESERVE) :
		 SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
	/* Free, or already ours (a no-op, SPC-2 §5.5.1). With registrations it passed as an
	 * exception of SPC-5 §5.13.3: "GOOD status, but no reservation shall be established". */
	if (r == SCSITGT__SR_OK && (!pr->nregs || pr->cl_on)) {
		pr->r2_held = true;
		snprintf(pr->r2_iport, sizeof(pr->r2_iport), "%s", cmd->sess->initiator_port);
		pr->r2_rel_port_id = cmd->sess->rel_port_id;
		pr->r2_sess = cmd->sess;
		scsitgt__pr_sync_xflags(lun);
	}
	uv_mutex_unlock(&lun->xlock);
	scsitgt__cmd_complete(cmd, r);
}

void scsitgt__pr_release(struct scsitgt__cmd *cmd)
{
	enum scsitgt__sense_reason r = SCSITGT__SR_OK;
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt__pr *pr;

	uv_mutex_lock(&lun->xlock);
	pr = lun->pr;
	/* Releasing a reservation held by another nexus, or none, is GOOD and changes nothing.
	 * With registrations only the SPC-5 §5.13.3 exceptions pass: GOOD, "the persistent
	 * reservation shall not be released" (checked again: the state may have changed). */
	if (pr && pr->nregs && !pr->cl_on && !pr_crh_exempt(pr, cmd->sess))
		r = SCSITGT__SR_RESERVATION_CONFLICT;
	else if (pr && r2_mine(pr, cmd->sess)) {
		pr->r2_held = false;
		scsitgt__pr_sync_xflags(lun);
	}
	uv_mutex_unlock(&lun->xlock);
	scsitgt__cmd_complete(cmd, r);
}
