/* SPDX-License-Identifier: MIT */
/*
 * PERSISTENT RESERVE OUT (SPC-5 §6.17) and the service actions of SPC-5 §5.13.
 * Every outcome is decided before anything changes, so a refused command leaves the state as
 * it was; PRgeneration counts the successful REGISTER, REGISTER AND IGNORE EXISTING KEY,
 * CLEAR, PREEMPT, PREEMPT AND ABORT and REGISTER AND MOVE (SPC-5 §6.16.2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alua.h"
#include "core/pr.h"
#include "core/scsi_spec.h"
#include "core/tmf.h"
#include "core/ua.h"
#include "util/be.h"

/* SPC-5 §6.17.3 Table 232: the basic parameter list. */
#define PR_PARAM_LEN 24
enum {
	PRP_KEY = 0,
	PRP_SA_KEY = 8,
	PRP_FLAGS = 20,
	PRP_TID_LEN = 24,
	PRP_TIDS = 28,
};
/* SPC-5 §6.17.4 Table 234: REGISTER AND MOVE. */
enum {
	PRM_FLAGS = 17, /* UNREG bit 1, APTPL bit 0 */
	PRM_REL_PORT = 18,
	PRM_TID_LEN = 20,
	PRM_TID = 24,
};
_Static_assert(PRP_TIDS == PR_PARAM_LEN + 4, "SPC-5 Table 232 layout");

static bool pr_type_valid(uint8_t type)
{
	switch (type) {
	case PR_TYPE_WE:
	case PR_TYPE_EA:
	case PR_TYPE_WE_RO:
	case PR_TYPE_EA_RO:
	case PR_TYPE_WE_AR:
	case PR_TYPE_EA_AR:
		return true;
	default:
		return false;
	}
}

enum scsitgt__sense_reason scsitgt__pr_parse_out(struct scsitgt__cmd *cmd)
{
	uint8_t sa = cmd->cdb[1] & 0x1f, scope = cmd->cdb[2] >> 4, type = cmd->cdb[2] & 0x0f;
	uint32_t len = get_be32(&cmd->cdb[5]);

	/* SPC-5 §6.17.2: SCOPE and TYPE matter to the actions that create or end a
	 * reservation; only LU_SCOPE (0h) exists. */
	if (sa == PR_OUT_RESERVE || sa == PR_OUT_RELEASE || sa == PR_OUT_PREEMPT ||
	    sa == PR_OUT_PREEMPT_AND_ABORT || sa == PR_OUT_REPLACE_LOST) {
		if (scope != 0)
			return scsitgt__cmd_bad_cdb_field(cmd, 2, 7);
		if (!pr_type_valid(type))
			return scsitgt__cmd_bad_cdb_field(cmd, 2, 3);
	}
	/* SPC-5 §5.13.11.3: "If the device server has not detected that persistent reservation
	 * information has been lost (see 5.13.5.3), then the device server shall terminate" a
	 * REPLACE LOST RESERVATION with INVALID RELEASE OF PERSISTENT RESERVATION. The library
	 * has no lost state (it never reports PERSISTENT RESERVATION INFORMATION LOST; a state
	 * that cannot be loaded is the host's error, scsitgt_lun_load_pr_state()), so every one
	 * is refused, and REPORT CAPABILITIES says RLR_C 0. */
	if (sa == PR_OUT_REPLACE_LOST)
		return SCSITGT__SR_INVALID_RELEASE_OF_PR;
	/* SPC-5 §6.17.1: at least the 24 fixed bytes; longer lists carry TransportIDs. */
	if (len < PR_PARAM_LEN || len > SCSITGT__PR_MAX_PARAM)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	cmd->dir = SCSITGT__DIR_OUT;
	cmd->xfer_len = len;
	return SCSITGT__SR_OK;
}

/* iSCSI names use printable ASCII without spaces (RFC 3722); a port name adds ",i,0x<ISID>". */
static bool tid_name_valid(const char *s, size_t n, bool port)
{
	const char *sep;

	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] > 0x7e)
			return false;
	if (!port)
		return n >= 1 && n <= 223 && memchr(s, ',', n) == NULL;
	/* SPC-5 §7.6.4.6 Table 513: NAME, SEPARATOR ",i,0x", 12 hex digits of ISID. */
	if (n < 1 + 5 + 12)
		return false;
	sep = s + n - 17;
	if (strncasecmp(sep, ",i,0x", 5) != 0 || sep - s > 223)
		return false;
	for (int i = 5; i < 17; i++) {
		char c = sep[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return memchr(s, ',', (size_t)(sep - s)) == NULL;
}

/*
 * The SRP TransportID at @p (SPC-5 §7.6.4.5 Table 510: PROTOCOL IDENTIFIER 4h, FORMAT CODE
 * 00b, bytes 1..7 reserved, the 16-byte INITIATOR PORT IDENTIFIER in bytes 8..23) as the SRP
 * fabric names the port: "0x" and 32 hex digits (transport/srp/srp_nexus.c).
 */
static size_t tid_parse_srp(const uint8_t *p, struct scsitgt__pr_reg *out)
{
	static const char hex[] = "0123456789abcdef";

	if (p[0] != SCSITGT__PROTO_SRP)
		return 0;
	for (int i = 1; i < 8; i++)
		if (p[i] != 0)
			return 0;
	out->iport[0] = '0';
	out->iport[1] = 'x';
	for (int i = 0; i < 16; i++) {
		out->iport[2 + 2 * i] = hex[p[8 + i] >> 4];
		out->iport[3 + 2 * i] = hex[p[8 + i] & 0xf];
	}
	out->iport[34] = '\0';
	out->any_isid = false;
	out->protocol_id = SCSITGT__PROTO_SRP;
	return SCSITGT__PR_SRP_TID_LEN;
}

/*
 * Decode the TransportID at @p (@avail bytes) into @out's name fields: iSCSI (SPC-5
 * §7.6.4.6) or SRP (§7.6.4.5). Returns its length, or 0 when it is malformed or of another
 * protocol.
 */
static size_t tid_parse(const uint8_t *p, size_t avail, struct scsitgt__pr_reg *out)
{
	uint8_t fmt, proto;
	uint16_t addl;
	const uint8_t *nul;
	size_t n;

	if (avail < 24)
		return 0;
	fmt = p[0] >> 6;
	proto = p[0] & 0x0f;
	if (proto == SCSITGT__PROTO_SRP)
		return tid_parse_srp(p, out);
	addl = get_be16(&p[2]);
	if (proto != SCSITGT__PROTO_ISCSI || fmt > 1 || (p[0] & 0x30) || addl < 20 || addl % 4 ||
	    (size_t)addl + 4 > avail)
		return 0;
	nul = memchr(&p[4], 0, addl);
	if (nul == NULL)
		return 0;
	n = (size_t)(nul - &p[4]);
	if (n >= SCSITGT__PR_PORT_MAX || !tid_name_valid((const char *)&p[4], n, fmt == 1))
		return 0;
	memcpy(out->iport, &p[4], n);
	out->iport[n] = '\0';
	out->any_isid = fmt == 0;
	out->protocol_id = proto;
	return 4u + addl;
}

/* The name part of an iSCSI port name (up to ",i,0x"), or the whole device name or SRP port
 * identifier. */
static size_t reg_name_len(const struct scsitgt__pr_reg *r)
{
	size_t n = strlen(r->iport);

	return r->any_isid || r->protocol_id == SCSITGT__PROTO_SRP ? n : n - 17;
}

/* Whether two registrations would cover a common I_T nexus. */
static bool reg_overlap(const struct scsitgt__pr_reg *a, const struct scsitgt__pr_reg *b)
{
	size_t na = reg_name_len(a), nb = reg_name_len(b);

	if (!a->all_tg_pt && !b->all_tg_pt && a->rel_port_id != b->rel_port_id)
		return false;
	if (a->protocol_id && b->protocol_id && a->protocol_id != b->protocol_id)
		return false;
	if (na != nb || strncasecmp(a->iport, b->iport, na) != 0)
		return false;
	return a->any_isid || b->any_isid || strcasecmp(a->iport, b->iport) == 0;
}

static struct scsitgt__pr_reg *reg_alloc(const char *iport, bool any_isid, bool all_tg_pt,
					 uint16_t rel_port_id, uint8_t protocol_id, uint64_t key)
{
	struct scsitgt__pr_reg *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	snprintf(r->iport, sizeof(r->iport), "%s", iport);
	r->any_isid = any_isid;
	r->all_tg_pt = all_tg_pt;
	r->rel_port_id = rel_port_id;
	r->protocol_id = protocol_id;
	r->key = key;
	return r;
}

static void reg_insert(struct scsitgt__pr *pr, struct scsitgt__pr_reg *r)
{
	scsitgt__list_add_tail(&pr->regs, &r->node);
	pr->nregs++;
}

/*
 * Unit attention @reason for the connected nexuses of @reg, recorded in the change
 * (pr->capture): the nexuses are found on home once the change is made, the one that made it
 * excepted (core/tmf_xshard.c; a cluster store also carries them to the other engines).
 */
static void ua_reg(struct scsitgt_lun *lun, const struct scsitgt__pr_reg *reg,
		   enum scsitgt__sense_reason reason)
{
	scsitgt__pr_change_add(
		lun->pr->capture,
		reason == SCSITGT__SR_UA_REGISTRATIONS_PREEMPTED ? SCSITGT__PR_EV_REGS_PREEMPTED :
		reason == SCSITGT__SR_UA_RESERVATIONS_PREEMPTED	 ? SCSITGT__PR_EV_RESV_PREEMPTED :
								   SCSITGT__PR_EV_RESV_RELEASED,
		reg);
}

/* Unit attention @reason for every registered nexus (but the one that made the change). */
static void ua_registrants(struct scsitgt_lun *lun, enum scsitgt__sense_reason reason)
{
	for (struct scsitgt__list *p = lun->pr->regs.next; p != &lun->pr->regs; p = p->next)
		ua_reg(lun, scsitgt__container_of(p, struct scsitgt__pr_reg, node), reason);
}

/* End the reservation; SPC-5 §5.13.11.2.2: releasing the registrants-only and
 * all-registrants types tells the other registrants. */
static void pr_release_reservation(struct scsitgt_lun *lun, bool notify)
{
	struct scsitgt__pr *pr = lun->pr;
	uint8_t type = pr->type;

	pr->held = false;
	pr->holder = NULL;
	pr->type = 0;
	pr->scope = 0;
	if (notify && type != PR_TYPE_WE && type != PR_TYPE_EA)
		ua_registrants(lun, SCSITGT__SR_UA_RESERVATIONS_RELEASED);
}

/*
 * Remove a registration. SPC-5 §5.13.11.2.3: the reservation goes with its holder, and under
 * the all-registrants types with the last registrant.
 */
static void reg_remove(struct scsitgt_lun *lun, struct scsitgt__pr_reg *r, bool notify_release)
{
	struct scsitgt__pr *pr = lun->pr;

	scsitgt__list_remove(&r->node);
	pr->nregs--;
	if (pr->held &&
	    (pr->holder == r || (scsitgt__pr_type_all_registrants(pr->type) && pr->nregs == 0)))
		pr_release_reservation(lun, notify_release);
	free(r);
}

/*
 * PREEMPT: remove every registration with @key except @keep, with REGISTRATIONS PREEMPTED for
 * their nexuses and, for PREEMPT AND ABORT, their tasks on this LUN aborted (SPC-5 §5.13.11.4).
 * @key_any removes every registration but @keep. Returns how many went.
 */
static unsigned int preempt_regs(struct scsitgt__cmd *cmd, uint64_t key, bool key_any,
				 const struct scsitgt__pr_reg *keep, bool abort)
{
	struct scsitgt_lun *lun = cmd->lun;
	struct scsitgt__list *pos, *tmp;
	unsigned int n = 0;

	scsitgt__list_foreach_safe(pos, tmp, &lun->pr->regs)
	{
		struct scsitgt__pr_reg *r =
			scsitgt__container_of(pos, struct scsitgt__pr_reg, node);

		if (r == keep || (!key_any && r->key != key))
			continue;
		n++;
		ua_reg(lun, r, SCSITGT__SR_UA_REGISTRATIONS_PREEMPTED);
		/* the tasks are aborted on their own shards, through home (core/tmf_xshard.c) */
		if (abort)
			scsitgt__pr_change_add(lun->pr->capture, SCSITGT__PR_EV_ABORT, r);
		reg_remove(lun, r, false);
	}
	return n;
}

static enum scsitgt__sense_reason check_aptpl(struct scsitgt__cmd *cmd, bool aptpl, uint16_t byte)
{
	/* SPC-5 §6.17.3: APTPL without the capability is an invalid parameter. */
	if (aptpl && !scsitgt__pr_ptpl_capable(cmd->lun))
		return scsitgt__cmd_bad_param_field(cmd, byte, 0);
	return SCSITGT__SR_OK;
}

/*
 * The protocol of relative target port @rel of the LUN's target, from what this engine knows of
 * it: a fabric's port (an engine service: an iSCSI portal group is a port of every target, an
 * SRP port one of its own target's), the port of a connected nexus, or of a registration.
 * -1: none of these. The core keeps no other list of ports. Loop: home (the services and the
 * target's nexuses are home's), under lun->xlock.
 */
static int port_protocol_here(struct scsitgt_lun *lun, uint16_t rel)
{
	struct scsitgt_target *tgt = lun->tgt;
	const struct scsitgt_engine *engine = tgt->engine;
	const struct scsitgt__pr *pr = lun->pr;

	SCSITGT__ASSERT_HOME(engine);
	for (const struct scsitgt__list *p = engine->services.next; p != &engine->services;
	     p = p->next) {
		const struct scsitgt__service *svc =
			scsitgt__container_of(p, struct scsitgt__service, node);

		if (svc->protocol_id != 0 && (svc->tgt == NULL || svc->tgt == tgt) &&
		    svc->rel_port_id == rel)
			return svc->protocol_id;
	}
	for (const struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions; p = p->next) {
		const struct scsitgt__session *s =
			scsitgt__container_of(p, struct scsitgt__session, node);

		if (s->rel_port_id == rel)
			return s->protocol_id;
	}
	for (const struct scsitgt__list *p = pr->regs.next; p != &pr->regs; p = p->next) {
		const struct scsitgt__pr_reg *r =
			scsitgt__container_of(p, struct scsitgt__pr_reg, node);

		if (!r->all_tg_pt && r->rel_port_id == rel)
			return r->protocol_id;
	}
	return -1;
}

/*
 * As port_protocol_here(), and 0 for a port only the host's ALUA configuration lists: another
 * engine's (several engines exporting one LUN list each other's ports in their target port
 * groups, libscsitgt/alua.h), whose protocol this one cannot know.
 */
static int port_protocol(struct scsitgt_lun *lun, uint16_t rel)
{
	int proto = port_protocol_here(lun, rel);

	if (proto < 0 && scsitgt__alua_port_listed(lun->tgt, rel))
		return 0;
	return proto;
}

/* A port the ALUA configuration lists that is none of this engine's (scsitgt__alua_port_any()). */
static bool port_other_engine(void *arg, uint16_t rel)
{
	return port_protocol_here(arg, rel) < 0;
}

/*
 * Whether the target may have a port of protocol @proto (SPC-5 §7.6.4.1): one this engine
 * knows (port_protocol_here()'s sources), or a port of another engine, of unknown protocol.
 * When not, a TransportID of that protocol names no I_T nexus of the target. Home, under
 * lun->xlock.
 */
static bool target_has_protocol(struct scsitgt_lun *lun, uint8_t proto)
{
	struct scsitgt_target *tgt = lun->tgt;
	const struct scsitgt_engine *engine = tgt->engine;
	const struct scsitgt__pr *pr = lun->pr;

	for (const struct scsitgt__list *p = engine->services.next; p != &engine->services;
	     p = p->next) {
		const struct scsitgt__service *svc =
			scsitgt__container_of(p, struct scsitgt__service, node);

		if (svc->protocol_id == proto && (svc->tgt == NULL || svc->tgt == tgt))
			return true;
	}
	for (const struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions; p = p->next)
		if (scsitgt__container_of(p, struct scsitgt__session, node)->protocol_id == proto)
			return true;
	for (const struct scsitgt__list *p = pr->regs.next; p != &pr->regs; p = p->next) {
		const struct scsitgt__pr_reg *r =
			scsitgt__container_of(p, struct scsitgt__pr_reg, node);

		if (!r->all_tg_pt && r->protocol_id == proto)
			return true;
	}
	return scsitgt__alua_port_any(tgt, port_other_engine, lun);
}

/*
 * SPEC_I_PT (SPC-5 §5.13.7): decode the TransportIDs into a private list first, so that one bad
 * or already registered nexus refuses the whole command.
 */
static enum scsitgt__sense_reason spec_i_pt_collect(struct scsitgt__cmd *cmd,
						    const struct scsitgt__pr_reg *nexus,
						    struct scsitgt__list *out, unsigned int *count,
						    uint64_t key, bool all_tg_pt)
{
	const uint8_t *d = cmd->buf;
	struct scsitgt__pr *pr = cmd->lun->pr;
	uint32_t len = cmd->xfer_len, tlen, off;
	struct scsitgt__pr_reg self;

	if (len < PRP_TIDS)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	tlen = get_be32(&d[PRP_TID_LEN]);
	if (tlen > len - PRP_TIDS)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	self = *nexus;
	self.all_tg_pt = all_tg_pt;
	for (off = PRP_TIDS; off < PRP_TIDS + tlen;) {
		struct scsitgt__pr_reg cand, *r;
		size_t n;
		bool dup = false;

		memset(&cand, 0, sizeof(cand));
		n = tid_parse(&d[off], PRP_TIDS + tlen - off, &cand);
		if (n == 0)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, -1);
		/* Without ALL_TG_PT the nexus is registered through the receiving port, which
		 * carries only its own protocol's nexuses (as LIO refuses the others); with it,
		 * through every port of the target (SPC-5 §6.17.3), so one of them must be of
		 * its protocol. Else the TransportID names no I_T nexus of the target, and "no
		 * registrations shall be made": the field in error is its PROTOCOL IDENTIFIER
		 * (byte 0 bits 3..0, SPC-5 §7.6.4.1). */
		if (all_tg_pt ? !target_has_protocol(cmd->lun, cand.protocol_id) :
				cand.protocol_id != nexus->protocol_id)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 3);
		cand.all_tg_pt = all_tg_pt;
		cand.rel_port_id = nexus->rel_port_id;
		dup = reg_overlap(&cand, &self);
		for (struct scsitgt__list *p = pr->regs.next; !dup && p != &pr->regs; p = p->next)
			dup = reg_overlap(&cand,
					  scsitgt__container_of(p, struct scsitgt__pr_reg, node));
		for (struct scsitgt__list *p = out->next; !dup && p != out; p = p->next)
			dup = reg_overlap(&cand,
					  scsitgt__container_of(p, struct scsitgt__pr_reg, node));
		if (dup)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, -1);
		if (pr->nregs + *count + 1 >= SCSITGT__PR_MAX_REGS)
			return SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
		r = reg_alloc(cand.iport, cand.any_isid, all_tg_pt, cand.rel_port_id,
			      cand.protocol_id, key);
		if (r == NULL)
			return SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
		scsitgt__list_add_tail(out, &r->node);
		(*count)++;
		off += (uint32_t)n;
	}
	return SCSITGT__SR_OK;
}

static void free_list(struct scsitgt__list *l)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, l)
	{
		free(scsitgt__container_of(pos, struct scsitgt__pr_reg, node));
	}
}

/* SPC-5 §5.13.7 REGISTER, REGISTER AND IGNORE EXISTING KEY. */
static enum scsitgt__sense_reason pr_register(struct scsitgt__cmd *cmd,
					      const struct scsitgt__pr_reg *nexus,
					      struct scsitgt__pr_reg *reg, bool ignore_key)
{
	struct scsitgt__pr *pr = cmd->lun->pr;
	const uint8_t *d = cmd->buf;
	uint64_t key = get_be64(&d[PRP_KEY]), sa_key = get_be64(&d[PRP_SA_KEY]);
	bool spec_i_pt = d[PRP_FLAGS] & PRP_SPEC_I_PT;
	bool all_tg_pt = d[PRP_FLAGS] & PRP_ALL_TG_PT;
	bool aptpl = d[PRP_FLAGS] & PRP_APTPL;
	enum scsitgt__sense_reason r;

	if (spec_i_pt && (ignore_key || reg != NULL))
		return scsitgt__cmd_bad_param_field(cmd, PRP_FLAGS, 3);
	if (reg == NULL) {
		struct scsitgt__list extra;
		unsigned int nextra = 0;
		struct scsitgt__pr_reg *self;

		if (!ignore_key && key != 0)
			return SCSITGT__SR_RESERVATION_CONFLICT;
		if (sa_key == 0)
			return SCSITGT__SR_OK; /* unregistering an unregistered nexus: no-op */
		r = check_aptpl(cmd, aptpl, PRP_FLAGS);
		if (r != SCSITGT__SR_OK)
			return r;
		if (pr->nregs >= SCSITGT__PR_MAX_REGS)
			return SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
		scsitgt__list_init(&extra);
		if (spec_i_pt) {
			r = spec_i_pt_collect(cmd, nexus, &extra, &nextra, sa_key, all_tg_pt);
			if (r != SCSITGT__SR_OK) {
				free_list(&extra);
				return r;
			}
		}
		self = reg_alloc(nexus->iport, false, all_tg_pt, nexus->rel_port_id,
				 nexus->protocol_id, sa_key);
		if (self == NULL) {
			free_list(&extra);
			return SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
		}
		reg_insert(pr, self);
		while (!scsitgt__list_empty(&extra)) {
			struct scsitgt__pr_reg *x =
				scsitgt__container_of(extra.next, struct scsitgt__pr_reg, node);

			scsitgt__list_remove(&x->node);
			reg_insert(pr, x);
		}
	} else {
		if (!ignore_key && key != reg->key)
			return SCSITGT__SR_RESERVATION_CONFLICT;
		r = check_aptpl(cmd, aptpl, PRP_FLAGS);
		if (r != SCSITGT__SR_OK)
			return r;
		if (sa_key == 0)
			reg_remove(cmd->lun, reg, true);
		else
			reg->key = sa_key;
	}
	pr->aptpl = aptpl;
	pr->generation++;
	return SCSITGT__SR_OK;
}

/* SPC-5 §5.13.9 RESERVE. */
static enum scsitgt__sense_reason pr_reserve(struct scsitgt__cmd *cmd, struct scsitgt__pr_reg *reg,
					     uint8_t type, uint8_t scope)
{
	struct scsitgt__pr *pr = cmd->lun->pr;

	if (pr->held) {
		/* The holder may repeat itself; anything else conflicts (SPC-5 §5.13.9). */
		if (scsitgt__pr_is_holder(pr, reg) && pr->type == type && pr->scope == scope)
			return SCSITGT__SR_OK;
		return SCSITGT__SR_RESERVATION_CONFLICT;
	}
	pr->held = true;
	pr->type = type;
	pr->scope = scope;
	pr->holder = scsitgt__pr_type_all_registrants(type) ? NULL : reg;
	return SCSITGT__SR_OK;
}

/* SPC-5 §5.13.11.2 RELEASE. */
static enum scsitgt__sense_reason pr_release(struct scsitgt__cmd *cmd, struct scsitgt__pr_reg *reg,
					     uint8_t type, uint8_t scope)
{
	struct scsitgt__pr *pr = cmd->lun->pr;

	if (!pr->held || !scsitgt__pr_is_holder(pr, reg))
		return SCSITGT__SR_OK;
	if (pr->type != type || pr->scope != scope)
		return SCSITGT__SR_INVALID_RELEASE_OF_PR;
	pr_release_reservation(cmd->lun, true);
	return SCSITGT__SR_OK;
}

/* SPC-5 §5.13.11.3 CLEAR. */
static enum scsitgt__sense_reason pr_clear(struct scsitgt__cmd *cmd)
{
	struct scsitgt__pr *pr = cmd->lun->pr;
	struct scsitgt__list *pos, *tmp;

	ua_registrants(cmd->lun, SCSITGT__SR_UA_RESERVATIONS_PREEMPTED);
	pr->held = false;
	pr->holder = NULL;
	pr->type = 0;
	pr->scope = 0;
	scsitgt__list_foreach_safe(pos, tmp, &pr->regs)
	{
		scsitgt__list_remove(pos);
		free(scsitgt__container_of(pos, struct scsitgt__pr_reg, node));
	}
	pr->nregs = 0;
	pr->generation++;
	return SCSITGT__SR_OK;
}

/* SPC-5 §5.13.11.4 PREEMPT and §5.13.11.5 PREEMPT AND ABORT. */
static enum scsitgt__sense_reason pr_preempt(struct scsitgt__cmd *cmd, struct scsitgt__pr_reg *reg,
					     uint8_t type, uint8_t scope, bool abort)
{
	struct scsitgt__pr *pr = cmd->lun->pr;
	uint64_t sa_key = get_be64(&((const uint8_t *)cmd->buf)[PRP_SA_KEY]);

	if (!pr->held ||
	    (!scsitgt__pr_type_all_registrants(pr->type) && pr->holder->key != sa_key)) {
		/* No reservation, or the key names non-holders: only registrations go. */
		if (sa_key == 0)
			return scsitgt__cmd_bad_param_field(cmd, PRP_SA_KEY, -1);
		if (preempt_regs(cmd, sa_key, false, NULL, abort) == 0)
			return SCSITGT__SR_RESERVATION_CONFLICT;
	} else if (scsitgt__pr_type_all_registrants(pr->type) && sa_key != 0) {
		/* §5.13.11.4.4: a non-zero key under all-registrants removes registrations. */
		if (preempt_regs(cmd, sa_key, false, NULL, abort) == 0)
			return SCSITGT__SR_RESERVATION_CONFLICT;
	} else {
		/* The holder is preempted (or, under all-registrants, key 0 = everyone): its
		 * registrations go, and the preempting nexus holds a new reservation. */
		bool changed = pr->type != type || pr->scope != scope;

		preempt_regs(cmd, sa_key, scsitgt__pr_type_all_registrants(pr->type), reg, abort);
		pr->held = true;
		pr->type = type;
		pr->scope = scope;
		pr->holder = scsitgt__pr_type_all_registrants(type) ? NULL : reg;
		if (changed)
			ua_registrants(cmd->lun, SCSITGT__SR_UA_RESERVATIONS_RELEASED);
	}
	pr->generation++;
	return SCSITGT__SR_OK;
}

/* SPC-5 §5.13.8 REGISTER AND MOVE. */
static enum scsitgt__sense_reason pr_register_and_move(struct scsitgt__cmd *cmd,
						       const struct scsitgt__pr_reg *nexus,
						       struct scsitgt__pr_reg *reg)
{
	struct scsitgt__pr *pr = cmd->lun->pr;
	const uint8_t *d = cmd->buf;
	uint64_t key = get_be64(&d[PRP_KEY]), sa_key = get_be64(&d[PRP_SA_KEY]);
	bool unreg = d[PRM_FLAGS] & 0x02, aptpl = d[PRM_FLAGS] & 0x01;
	uint16_t rel = get_be16(&d[PRM_REL_PORT]);
	uint32_t tlen = get_be32(&d[PRM_TID_LEN]);
	struct scsitgt__pr_reg cand, *dest = NULL;
	enum scsitgt__sense_reason r;
	int proto;

	if (tlen > cmd->xfer_len - PRM_TID)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	if (reg == NULL || key != reg->key)
		return SCSITGT__SR_RESERVATION_CONFLICT;
	/* SPC-5 §5.13.8: "there is no persistent reservation established": ILLEGAL REQUEST,
	 * INVALID FIELD IN CDB (the service action). */
	if (!pr->held)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 4);
	/* Only the holder of a single-holder reservation can move it. */
	if (scsitgt__pr_type_all_registrants(pr->type) || pr->holder != reg)
		return SCSITGT__SR_RESERVATION_CONFLICT;
	if (sa_key == 0)
		return scsitgt__cmd_bad_param_field(cmd, PRP_SA_KEY, -1);
	memset(&cand, 0, sizeof(cand));
	if (tid_parse(&d[PRM_TID], tlen, &cand) == 0)
		return scsitgt__cmd_bad_param_field(cmd, PRM_TID, -1);
	/* The RELATIVE TARGET PORT IDENTIFIER names the target port of the nexus the
	 * reservation moves to (SPC-5 §6.17.4): one no port has would hand it to a nexus that
	 * can never exist. */
	/* A TransportID of a protocol no port of the target has names no I_T nexus of it:
	 * the field in error is its PROTOCOL IDENTIFIER (byte 0 bits 3..0, SPC-5 §7.6.4.1). A
	 * port of that protocol exists, but the one named carries another: the RELATIVE
	 * TARGET PORT IDENTIFIER is. */
	if (!target_has_protocol(cmd->lun, cand.protocol_id))
		return scsitgt__cmd_bad_param_field(cmd, PRM_TID, 3);
	proto = rel == 0 ? -1 : port_protocol(cmd->lun, rel);
	if (proto < 0 || (proto > 0 && proto != cand.protocol_id))
		return scsitgt__cmd_bad_param_field(cmd, PRM_REL_PORT, -1);
	/* SPC-5 §5.13.8: "a TransportID that is the same as the initiator port of the I_T
	 * nexus on which the command received" is refused, whatever target port is named (a
	 * format 00b one naming its initiator device too, as LIO). */
	cand.rel_port_id = nexus->rel_port_id;
	if (scsitgt__pr_reg_covers(&cand, nexus->iport, nexus->rel_port_id))
		return scsitgt__cmd_bad_param_field(cmd, PRM_TID, -1);
	cand.rel_port_id = rel;
	r = check_aptpl(cmd, aptpl, PRM_FLAGS);
	if (r != SCSITGT__SR_OK)
		return r;
	for (struct scsitgt__list *p = pr->regs.next; p != &pr->regs; p = p->next) {
		struct scsitgt__pr_reg *x = scsitgt__container_of(p, struct scsitgt__pr_reg, node);

		if (x != reg && reg_overlap(&cand, x)) {
			dest = x;
			break;
		}
	}
	if (dest == NULL) {
		if (pr->nregs >= SCSITGT__PR_MAX_REGS)
			return SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
		dest = reg_alloc(cand.iport, cand.any_isid, false, rel, cand.protocol_id, sa_key);
		if (dest == NULL)
			return SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
		reg_insert(pr, dest);
	}
	dest->key = sa_key;
	pr->holder = dest;
	if (unreg)
		reg_remove(cmd->lun, reg, false);
	pr->aptpl = aptpl;
	pr->generation++;
	return SCSITGT__SR_OK;
}

void scsitgt__pr_nexus(struct scsitgt__pr_reg *out, const struct scsitgt__session *sess)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->iport, sizeof(out->iport), "%s", sess->initiator_port);
	out->rel_port_id = sess->rel_port_id;
	out->protocol_id = sess->protocol_id;
}

enum scsitgt__sense_reason scsitgt__pr_out_exec(struct scsitgt__cmd *cmd,
						const struct scsitgt__pr_reg *nexus)
{
	struct scsitgt__pr *pr = cmd->lun->pr;
	const uint8_t *d = cmd->buf;
	uint8_t sa = cmd->cdb[1] & 0x1f, scope = cmd->cdb[2] >> 4, type = cmd->cdb[2] & 0x0f;
	struct scsitgt__pr_reg *reg;

	/* Under another nexus's SPC-2 reservation a PERSISTENT RESERVE OUT conflicts (SPC-2
	 * §5.5.1, docs/scsi.md "Reservations"). The check of parse ran under an earlier hold
	 * of the lock: a RESERVE (6)/(10) of another nexus may have been granted since (a task
	 * parked behind an ORDERED one, or parsed on a worker loop and sent home). Decided
	 * again here, as scsitgt__pr_reserve() does, so that no registration or persistent
	 * reservation is added beside an SPC-2 reservation (reviewi B1). */
	if (pr->r2_held && (pr->r2_rel_port_id != nexus->rel_port_id ||
			    strcasecmp(pr->r2_iport, nexus->iport) != 0))
		return SCSITGT__SR_RESERVATION_CONFLICT;
	reg = scsitgt__pr_find_port(pr, nexus->iport, nexus->rel_port_id);
	if (sa == PR_OUT_REGISTER_AND_MOVE)
		return pr_register_and_move(cmd, nexus, reg);
	/* SPC-5 §6.17.3: exactly 24 bytes unless SPEC_I_PT adds TransportIDs. */
	if (!(d[PRP_FLAGS] & PRP_SPEC_I_PT) && cmd->xfer_len != PR_PARAM_LEN)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	if (sa == PR_OUT_REGISTER || sa == PR_OUT_REGISTER_AND_IGNORE)
		return pr_register(cmd, nexus, reg, sa == PR_OUT_REGISTER_AND_IGNORE);
	/* SPC-5 §6.17.3: SPEC_I_PT set for any service action but REGISTER is an invalid
	 * field; ALL_TG_PT "shall be ignored for all other service actions" (Table 216). */
	if (d[PRP_FLAGS] & PRP_SPEC_I_PT)
		return scsitgt__cmd_bad_param_field(cmd, PRP_FLAGS, 3);
	/* Every other action needs a registered nexus presenting its key (SPC-5 §5.13.9). */
	if (reg == NULL || get_be64(&d[PRP_KEY]) != reg->key)
		return SCSITGT__SR_RESERVATION_CONFLICT;
	switch (sa) {
	case PR_OUT_RESERVE:
		return pr_reserve(cmd, reg, type, scope);
	case PR_OUT_RELEASE:
		return pr_release(cmd, reg, type, scope);
	case PR_OUT_CLEAR:
		return pr_clear(cmd);
	case PR_OUT_PREEMPT:
	case PR_OUT_PREEMPT_AND_ABORT:
		return pr_preempt(cmd, reg, type, scope, sa == PR_OUT_PREEMPT_AND_ABORT);
	default:
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 4);
	}
}

/* The command's shard, the hold dropped (core/home_call.h): its status. */
static void pr_out_done(struct scsitgt__home_call *hc)
{
	struct scsitgt_pr_req *req = scsitgt__container_of(hc, struct scsitgt_pr_req, hc);

	if (req->status < 0)
		scsitgt__pr_cluster_fail(hc->cmd, req->status);
	else
		scsitgt__cmd_complete(hc->cmd, req->reason);
	scsitgt__home_call_free(hc);
}

/* Home: every shard has made the aborts of the change. */
static void pr_out_events_done(void *arg)
{
	struct scsitgt_pr_req *req = arg;

	scsitgt__home_call_back(&req->hc);
}

/* The state before a PERSISTENT RESERVE OUT, kept while a store may refuse its result. */
struct pr_before {
	struct scsitgt__pr pr; /* aptpl always; registrations and reservation with a store */
};

/* Under lun->xlock. Keeps a copy only where a store is set (a change could fail to save).
 * 0, or -ENOMEM. */
static int pr_before_take(const struct scsitgt__pr *pr, struct pr_before *b)
{
	struct scsitgt__pr_change none;
	uint16_t ver;
	uint8_t *buf;
	size_t n;
	int rc;

	memset(b, 0, sizeof(*b));
	scsitgt__list_init(&b->pr.regs);
	b->pr.aptpl = pr->aptpl;
	if (pr->save == NULL)
		return 0;
	/* The shared format (version 2) carries every registration, APTPL or not. */
	scsitgt__pr_change_init(&none);
	n = scsitgt__pr_encode(pr, NULL, &none);
	buf = malloc(n);
	if (buf == NULL)
		return -ENOMEM;
	scsitgt__pr_encode(pr, buf, &none);
	rc = scsitgt__pr_decode(buf, n, &b->pr, &none, &ver);
	scsitgt__pr_change_clear(&none);
	free(buf);
	if (rc < 0)
		scsitgt__pr_regs_free(&b->pr.regs);
	return rc;
}

static void pr_before_free(struct pr_before *b)
{
	scsitgt__pr_regs_free(&b->pr.regs);
}

/*
 * Home: the change, the host's store, the other nexuses. The state is changed under the LUN's
 * lock with its unit attentions and task aborts captured (pr->capture, as for a cluster store);
 * the save callback runs here (libscsitgt/pr.h: on the home loop, inside the command, under
 * the lock so that saves are ordered); the other nexuses, whichever shard they are on, get
 * their unit attentions from home's walk of the target's nexuses once the lock is dropped
 * (nothing under xlock calls a fabric), and PREEMPT AND ABORT's aborts by message to their
 * shards (core/tmf_xshard.c).
 *
 * Only then does the command end: its GOOD must not reach the initiator before every other
 * nexus concerned has its RESERVATIONS PREEMPTED / RELEASED or REGISTRATIONS PREEMPTED
 * established (SPC-5 §5.13.11). A cluster's software acts on the GOOD (it tells the preempted
 * node it lost the reservation, or starts writing through the new holder); a command of the
 * preempted nexus that arrives after that must find the unit attention, not run as if it
 * were still registered. The status follows the aborts too, as when they were synchronous.
 */
static void pr_out_home(struct scsitgt__home_call *hc)
{
	struct scsitgt_pr_req *req = scsitgt__container_of(hc, struct scsitgt_pr_req, hc);
	struct scsitgt_lun *lun = req->lun;
	struct scsitgt__pr_change ch;
	enum scsitgt__sense_reason r;
	struct pr_before before;
	struct scsitgt__pr *pr;

	uv_mutex_lock(&lun->xlock);
	/* Decided here: a store installed (on home) after the command was sent is used. */
	if (scsitgt__pr_cluster_on(lun)) {
		uv_mutex_unlock(&lun->xlock);
		scsitgt__pr_cluster_out(req);
		return;
	}
	scsitgt__pr_change_init(&ch);
	ch.by_rel_port_id = req->self.rel_port_id;
	memcpy(ch.by_port, req->self.iport, sizeof(ch.by_port));
	pr = scsitgt__pr_get(lun);
	r = SCSITGT__SR_INSUFFICIENT_REG_RESOURCES;
	if (pr && pr_before_take(pr, &before) == 0) {
		pr->capture = &ch;
		r = scsitgt__pr_out_exec(hc->cmd, &req->self);
		pr->capture = NULL;
		if (r == SCSITGT__SR_OK && scsitgt__pr_changed(lun) < 0 &&
		    (before.pr.aptpl || pr->aptpl)) {
			/* SPC-5 §5.13.5: with APTPL the state must survive a power loss; a change
			 * that could not be saved is undone and fails, so that the initiator is
			 * not told GOOD for a registration or reservation a restart would lose.
			 * Nothing of it reaches another nexus either. */
			scsitgt__pr_replace(pr, &before.pr);
			scsitgt__pr_change_clear(&ch);
			scsitgt__pr_change_init(&ch);
			r = SCSITGT__SR_INTERNAL_FAILURE;
		}
		pr_before_free(&before);
	}
	scsitgt__pr_sync_xflags(lun);
	uv_mutex_unlock(&lun->xlock);
	req->reason = r;
	/* (the command may end inside: nothing of @req is used after) */
	scsitgt__tmf_pr_events(lun, &ch, hc->cmd, pr_out_events_done, req);
	scsitgt__pr_change_clear(&ch);
}

void scsitgt__pr_out(struct scsitgt__cmd *cmd)
{
	scsitgt__pr_req_home(cmd, pr_out_home, pr_out_done);
}
