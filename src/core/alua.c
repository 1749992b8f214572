/* SPDX-License-Identifier: MIT */
/*
 * Asymmetric logical unit access (SPC-5 §5.16).
 *
 * The state lives in the target (tgt->alua, struct scsitgt__alua), created on first use: the
 * modes (the INQUIRY TPGS field), the host's request hook and up to SCSITGT_ALUA_MAX_GROUPS
 * target port groups, each with its access state and its relative target port identifiers. A nexus is in
 * the group that lists its rel_port_id; iSCSI sets rel_port_id to the portal group tag.
 *
 * States and transitions: any of active/optimized, active/non-optimized, standby, unavailable
 * and transitioning may follow any other through scsitgt_alua_set_state() (implicit);
 * SET TARGET PORT GROUPS (explicit) may ask for the first four (SPC-5 §6.50: transitioning
 * and the others are not requestable). Every change of state establishes ASYMMETRIC ACCESS
 * STATE CHANGED (SPC-5 §5.16.2.6).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/alua.h"
#include "core/scsi_spec.h"
#include "core/ua.h"
#include "core/spc.h"
#include "util/be.h"

#define RTPG_HDR_LEN 4
#define RTPG_EXT_HDR_LEN 8
#define RTPG_DESC_LEN 8
#define RTPG_PORT_LEN 4
#define STPG_HDR_LEN 4
#define STPG_DESC_LEN 4
_Static_assert(RTPG_EXT_HDR_LEN + SCSITGT_ALUA_MAX_GROUPS *
					  (RTPG_DESC_LEN + SCSITGT_ALUA_MAX_PORTS * RTPG_PORT_LEN) <
		       SCSITGT__MAX_XFER_BYTES,
	       "REPORT TARGET PORT GROUPS data fits one transfer");
/* A SET TARGET PORT GROUPS list naming every group twice over is already invalid. */
#define STPG_MAX_LEN (STPG_HDR_LEN + 2 * SCSITGT_ALUA_MAX_GROUPS * STPG_DESC_LEN)

struct alua_group {
	uint16_t id;
	uint8_t state;
	uint8_t status;
	bool pref;
	uint16_t nports;
	uint16_t ports[SCSITGT_ALUA_MAX_PORTS];
};

struct scsitgt__alua {
	uint32_t modes;
	uint8_t itt;
	scsitgt_alua_request_cb request_cb;
	void *request_arg;
	unsigned int ngroups;
	struct alua_group groups[SCSITGT_ALUA_MAX_GROUPS];
};

void scsitgt__alua_free(struct scsitgt_target *tgt)
{
	free(tgt->alua);
	tgt->alua = NULL;
}

static struct scsitgt__alua *alua_get(const struct scsitgt_target *tgt)
{
	return tgt->alua;
}

static struct scsitgt__alua *alua_get_or_create(struct scsitgt_target *tgt)
{
	struct scsitgt__alua *a = alua_get(tgt);

	if (a == NULL) {
		a = calloc(1, sizeof(*a));
		if (a == NULL)
			return NULL;
		tgt->alua = a;
	}
	return a;
}

static bool alua_on(const struct scsitgt__alua *a)
{
	return a != NULL && a->modes != 0;
}

static bool state_valid(unsigned int s)
{
	return s == SCSITGT_ALUA_ACTIVE_OPTIMIZED || s == SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED ||
	       s == SCSITGT_ALUA_STANDBY || s == SCSITGT_ALUA_UNAVAILABLE ||
	       s == SCSITGT_ALUA_TRANSITIONING;
}

static struct alua_group *group_find(const struct scsitgt__alua *a, uint16_t id)
{
	if (a == NULL)
		return NULL;
	for (unsigned int i = 0; i < a->ngroups; i++)
		if (a->groups[i].id == id)
			return (struct alua_group *)&a->groups[i];
	return NULL;
}

static struct alua_group *group_of_port(const struct scsitgt__alua *a, uint16_t port)
{
	if (a == NULL)
		return NULL;
	for (unsigned int i = 0; i < a->ngroups; i++)
		for (unsigned int j = 0; j < a->groups[i].nports; j++)
			if (a->groups[i].ports[j] == port)
				return (struct alua_group *)&a->groups[i];
	return NULL;
}

/* SPC-5 §5.16.2.6: every I_T nexus learns of the change on every LUN, except the one whose
 * SET TARGET PORT GROUPS made it. */
static void alua_announce(struct scsitgt_target *tgt, const struct scsitgt__session *except)
{
	for (size_t i = 0; i < tgt->nluns; i++)
		if (!tgt->luns[i]->drain.destroying)
			scsitgt__ua_establish_all(tgt, tgt->luns[i]->id, except,
						  SCSITGT__SR_UA_ASYMMETRIC_ACCESS_CHANGED);
}

SCSITGT_EXPORT void scsitgt_alua_opts_init(struct scsitgt_alua_opts *opts, size_t size)
{
	struct scsitgt_alua_opts def = { .size = sizeof(def) };

	if (opts == NULL || size == 0)
		return;
	if (size > sizeof(def))
		size = sizeof(def);
	memset(opts, 0, size);
	def.size = size;
	memcpy(opts, &def, size);
}

SCSITGT_EXPORT int scsitgt_alua_configure(struct scsitgt_target *tgt,
					  const struct scsitgt_alua_opts *opts)
{
	struct scsitgt_alua_opts o;
	struct scsitgt__alua *a;

	if (tgt == NULL || opts == NULL || opts->size == 0)
		return -EINVAL;
	scsitgt_alua_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	if (o.modes & ~(uint32_t)(SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT))
		return -EINVAL;
	a = alua_get_or_create(tgt);
	if (a == NULL)
		return -ENOMEM;
	a->modes = o.modes;
	a->itt = o.implicit_transition_secs;
	a->request_cb = o.request_cb;
	a->request_arg = o.request_arg;
	return 0;
}

SCSITGT_EXPORT int scsitgt_alua_group_create(struct scsitgt_target *tgt, uint16_t group_id,
					     enum scsitgt_alua_state state)
{
	struct alua_group *g;
	struct scsitgt__alua *a;

	if (tgt == NULL || group_id == 0 || !state_valid(state))
		return -EINVAL;
	a = alua_get_or_create(tgt);
	if (a == NULL)
		return -ENOMEM;
	if (group_find(a, group_id))
		return -EEXIST;
	if (a->ngroups == SCSITGT_ALUA_MAX_GROUPS)
		return -ENOSPC;
	g = &a->groups[a->ngroups++];
	memset(g, 0, sizeof(*g));
	g->id = group_id;
	g->state = (uint8_t)state;
	return 0;
}

SCSITGT_EXPORT int scsitgt_alua_group_destroy(struct scsitgt_target *tgt, uint16_t group_id)
{
	struct alua_group *g;
	struct scsitgt__alua *a;

	if (tgt == NULL)
		return -EINVAL;
	a = alua_get(tgt);
	g = group_find(a, group_id);
	if (g == NULL)
		return -ENOENT;
	/* Keep the array dense and in creation order (REPORT TARGET PORT GROUPS order). */
	memmove(g, g + 1, (size_t)(&a->groups[a->ngroups] - (g + 1)) * sizeof(*g));
	a->ngroups--;
	return 0;
}

SCSITGT_EXPORT int scsitgt_alua_group_add_port(struct scsitgt_target *tgt, uint16_t group_id,
					       uint16_t rel_port_id)
{
	struct alua_group *g;
	struct scsitgt__alua *a;

	if (tgt == NULL || rel_port_id == 0)
		return -EINVAL;
	a = alua_get(tgt);
	g = group_find(a, group_id);
	if (g == NULL)
		return -ENOENT;
	if (group_of_port(a, rel_port_id))
		return -EEXIST;
	if (g->nports == SCSITGT_ALUA_MAX_PORTS)
		return -ENOSPC;
	g->ports[g->nports++] = rel_port_id;
	return 0;
}

SCSITGT_EXPORT int scsitgt_alua_group_remove_port(struct scsitgt_target *tgt, uint16_t group_id,
						  uint16_t rel_port_id)
{
	struct alua_group *g;

	if (tgt == NULL)
		return -EINVAL;
	g = group_find(alua_get(tgt), group_id);
	if (g == NULL)
		return -ENOENT;
	for (unsigned int i = 0; i < g->nports; i++) {
		if (g->ports[i] != rel_port_id)
			continue;
		memmove(&g->ports[i], &g->ports[i + 1], (g->nports - i - 1) * sizeof(g->ports[0]));
		g->nports--;
		return 0;
	}
	return -ENOENT;
}

SCSITGT_EXPORT int scsitgt_alua_set_state(struct scsitgt_target *tgt, uint16_t group_id,
					  enum scsitgt_alua_state state)
{
	struct alua_group *g;

	if (tgt == NULL || !state_valid(state))
		return -EINVAL;
	g = group_find(alua_get(tgt), group_id);
	if (g == NULL)
		return -ENOENT;
	if (g->state == state)
		return 0;
	g->state = (uint8_t)state;
	g->status = ALUA_STATUS_IMPLICIT;
	if (alua_on(alua_get(tgt)))
		alua_announce(tgt, NULL);
	return 0;
}

SCSITGT_EXPORT int scsitgt_alua_get_state(const struct scsitgt_target *tgt, uint16_t group_id,
					  enum scsitgt_alua_state *state)
{
	const struct alua_group *g;

	if (tgt == NULL || state == NULL)
		return -EINVAL;
	g = group_find(alua_get(tgt), group_id);
	if (g == NULL)
		return -ENOENT;
	*state = (enum scsitgt_alua_state)g->state;
	return 0;
}

SCSITGT_EXPORT int scsitgt_alua_set_preferred(struct scsitgt_target *tgt, uint16_t group_id,
					      bool preferred)
{
	struct alua_group *g;

	if (tgt == NULL)
		return -EINVAL;
	g = group_find(alua_get(tgt), group_id);
	if (g == NULL)
		return -ENOENT;
	g->pref = preferred;
	return 0;
}

uint8_t scsitgt__alua_tpgs(const struct scsitgt_target *tgt)
{
	const struct scsitgt__alua *a = alua_get(tgt);

	/* SPC-5 §6.7.2 Table 150: 01b implicit only, 10b explicit only, 11b both. */
	return a ? (uint8_t)(a->modes & 0x3) : 0;
}

bool scsitgt__alua_port_group(const struct scsitgt__session *sess, uint16_t *group_id)
{
	const struct scsitgt__alua *a = alua_get(sess->tgt);
	const struct alua_group *g;

	/* Without ALUA there are no target port groups to name: INQUIRY says TPGS 00b and
	 * REPORT TARGET PORT GROUPS is refused, so VPD 83h lists no such designator either. */
	if (!alua_on(a))
		return false;
	g = group_of_port(a, sess->rel_port_id);
	if (g == NULL)
		return false;
	*group_id = g->id;
	return true;
}

bool scsitgt__alua_offers(const struct scsitgt_target *tgt, const struct scsitgt__cdb_def *row)
{
	const struct scsitgt__alua *a = alua_get(tgt);

	if (row->exec == scsitgt__alua_rtpg)
		return alua_on(a);
	if (row->exec == scsitgt__alua_stpg)
		return alua_on(a) && (a->modes & SCSITGT_ALUA_EXPLICIT);
	return true;
}

/* Commands every state runs (SPC-5 §5.16.2.4.4-§5.16.2.4.6 lists, in common). */
static bool alua_always_allowed(const struct scsitgt__cdb_def *row)
{
	return row->exec == scsitgt__spc_inquiry || row->exec == scsitgt__spc_report_luns ||
	       row->exec == scsitgt__spc_request_sense || row->exec == scsitgt__alua_rtpg;
}

enum scsitgt__sense_reason scsitgt__alua_check(const struct scsitgt__cmd *cmd,
					       const struct scsitgt__cdb_def *row)
{
	const struct scsitgt__alua *a = alua_get(cmd->sess->tgt);
	const struct alua_group *g;

	if (!alua_on(a) || cmd->lun == NULL)
		return SCSITGT__SR_OK;
	g = group_of_port(a, cmd->sess->rel_port_id);
	if (g == NULL)
		return SCSITGT__SR_OK;
	switch (g->state) {
	case SCSITGT_ALUA_ACTIVE_OPTIMIZED:
	case SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED:
		return SCSITGT__SR_OK;
	case SCSITGT_ALUA_STANDBY:
		/* SPC-5 §5.16.2.4.4: INQUIRY, LOG and MODE SENSE/SELECT, REPORT LUNS, REPORT and
		 * SET TARGET PORT GROUPS, REQUEST SENSE, PERSISTENT RESERVE IN/OUT and diagnostics
		 * (the rows flagged ALLOW_STANDBY; READ CAPACITY too, which hosts read on every
		 * path). TEST UNIT READY is not in the list: path checkers rely on its NOT READY
		 * to see a standby path. */
		if (row->exec == scsitgt__spc_test_unit_ready)
			return SCSITGT__SR_NOT_READY_STANDBY;
		if ((row->flags & SCSITGT__CDB_F_ALLOW_STANDBY) || alua_always_allowed(row) ||
		    row->exec == scsitgt__alua_stpg || row->exec == scsitgt__spc_mode_select ||
		    row->pr == SCSITGT__PR_OUT)
			return SCSITGT__SR_OK;
		return SCSITGT__SR_NOT_READY_STANDBY;
	case SCSITGT_ALUA_UNAVAILABLE:
		/* SPC-5 §5.16.2.4.5: SET TARGET PORT GROUPS may bring the group back. */
		if (alua_always_allowed(row) || row->exec == scsitgt__alua_stpg)
			return SCSITGT__SR_OK;
		return SCSITGT__SR_NOT_READY_UNAVAILABLE;
	default:
		/* SPC-5 §5.16.2.5: while transitioning, only the reporting commands. */
		if (alua_always_allowed(row))
			return SCSITGT__SR_OK;
		return SCSITGT__SR_NOT_READY_TRANSITIONING;
	}
}

enum scsitgt__sense_reason scsitgt__alua_parse_rtpg(struct scsitgt__cmd *cmd)
{
	/* Without ALUA the device server does not support the command (TPGS 00b). */
	if (!alua_on(alua_get(cmd->sess->tgt)))
		return SCSITGT__SR_INVALID_OPCODE;
	if ((cmd->cdb[1] >> 5) > RTPG_FMT_EXTENDED)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 7);
	return scsitgt__parse_alloc32(cmd, 6);
}

void scsitgt__alua_rtpg(struct scsitgt__cmd *cmd)
{
	const struct scsitgt__alua *a = alua_get(cmd->sess->tgt);
	bool ext = (cmd->cdb[1] >> 5) == RTPG_FMT_EXTENDED;
	size_t hdr = ext ? RTPG_EXT_HDR_LEN : RTPG_HDR_LEN;
	size_t len = hdr, n;
	uint8_t *d;

	for (unsigned int i = 0; i < a->ngroups; i++)
		len += RTPG_DESC_LEN + (size_t)a->groups[i].nports * RTPG_PORT_LEN;
	d = calloc(1, len);
	if (d == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_TASK_SET_FULL);
		return;
	}
	/* SPC-5 §6.36.1: RETURN DATA LENGTH counts the bytes after itself, whatever the
	 * allocation length. */
	put_be32(&d[0], (uint32_t)(len - 4));
	if (ext) {
		d[4] = RTPG_FMT_EXTENDED << 4;
		d[5] = a->itt;
	}
	n = hdr;
	for (unsigned int i = 0; i < a->ngroups; i++) {
		const struct alua_group *g = &a->groups[i];
		uint8_t *p = &d[n];

		/* SPC-5 §6.36.2 Table 240: PREF and state; T_SUP, U_SUP, S_SUP, AN_SUP and AO_SUP
		 * (no offline or logical block dependent state). */
		p[0] = (uint8_t)((g->pref ? 0x80 : 0x00) | (g->state & 0x0f));
		p[1] = 0x80 | 0x08 | 0x04 | 0x02 | 0x01;
		put_be16(&p[2], g->id);
		p[5] = g->status;
		p[7] = (uint8_t)g->nports;
		n += RTPG_DESC_LEN;
		for (unsigned int j = 0; j < g->nports; j++) {
			put_be16(&d[n + 2], g->ports[j]);
			n += RTPG_PORT_LEN;
		}
	}
	scsitgt__cmd_respond(cmd, d, len);
	free(d);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

enum scsitgt__sense_reason scsitgt__alua_parse_stpg(struct scsitgt__cmd *cmd)
{
	const struct scsitgt__alua *a = alua_get(cmd->sess->tgt);
	uint32_t len = get_be32(&cmd->cdb[6]);

	/* SPC-5 §6.50: only where TPGS says explicit ALUA is supported. */
	if (!alua_on(a) || !(a->modes & SCSITGT_ALUA_EXPLICIT))
		return SCSITGT__SR_INVALID_OPCODE;
	if (len == 0)
		return SCSITGT__SR_OK;
	if (len < STPG_HDR_LEN || (len - STPG_HDR_LEN) % STPG_DESC_LEN || len > STPG_MAX_LEN)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	cmd->dir = SCSITGT__DIR_OUT;
	cmd->xfer_len = len;
	return SCSITGT__SR_OK;
}

void scsitgt__alua_stpg(struct scsitgt__cmd *cmd)
{
	struct scsitgt_target *tgt = cmd->sess->tgt;
	struct scsitgt__alua *a = alua_get(tgt);
	const uint8_t *d = cmd->buf;
	size_t ndesc = cmd->xfer_len ? (cmd->xfer_len - STPG_HDR_LEN) / STPG_DESC_LEN : 0;
	uint16_t deferred[SCSITGT_ALUA_MAX_GROUPS];
	size_t ndeferred = 0;
	bool changed = false;

	/* The ALUA state may have been turned off between parse and execution. */
	if (!alua_on(a) || !(a->modes & SCSITGT_ALUA_EXPLICIT)) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_INVALID_OPCODE);
		return;
	}
	/* Check every descriptor before anything changes (SPC-5 §6.50: the command fails as a
	 * whole). Bytes 0..3 are reserved; byte 0 bits 7..4 and byte 1 of a descriptor too. */
	for (size_t i = 0; i < ndesc; i++) {
		size_t off = STPG_HDR_LEN + i * STPG_DESC_LEN;
		const uint8_t *p = &d[off];
		uint8_t state = p[0] & 0x0f;
		struct alua_group *g = group_find(a, get_be16(&p[2]));

		if (p[0] & 0xf0) {
			scsitgt__cmd_complete(cmd,
					      scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 7));
			return;
		}
		if (state != SCSITGT_ALUA_ACTIVE_OPTIMIZED &&
		    state != SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED && state != SCSITGT_ALUA_STANDBY &&
		    state != SCSITGT_ALUA_UNAVAILABLE) {
			scsitgt__cmd_complete(cmd,
					      scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 3));
			return;
		}
		if (p[1]) {
			scsitgt__cmd_complete(
				cmd, scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 1), -1));
			return;
		}
		if (g == NULL) {
			scsitgt__cmd_complete(
				cmd, scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 2), -1));
			return;
		}
		for (size_t j = 0; j < i; j++) {
			if (get_be16(&d[STPG_HDR_LEN + j * STPG_DESC_LEN + 2]) == g->id) {
				scsitgt__cmd_complete(cmd, scsitgt__cmd_bad_param_field(
								   cmd, (uint16_t)(off + 2), -1));
				return;
			}
		}
	}
	/* The cluster manager may veto; nothing has changed yet. A group whose change the host
	 * defers keeps the state the host gives it (alua.h). */
	for (size_t i = 0; i < ndesc && a->request_cb; i++) {
		const uint8_t *p = &d[STPG_HDR_LEN + i * STPG_DESC_LEN];
		const struct alua_group *g = group_find(a, get_be16(&p[2]));
		int r;

		r = a->request_cb(a->request_arg, tgt, g->id, (enum scsitgt_alua_state)g->state,
				  (enum scsitgt_alua_state)(p[0] & 0x0f));
		if (r < 0) {
			/* SPC-5 §6.50: SET TARGET PORT GROUPS COMMAND FAILED. */
			scsitgt__cmd_complete_raw(cmd, SENSE_HARDWARE_ERROR, 0x67, 0x0a);
			return;
		}
		/* Descriptors name distinct existing groups: at most SCSITGT_ALUA_MAX_GROUPS. */
		if (r == SCSITGT_ALUA_REQUEST_DEFERRED && ndeferred < SCSITGT_ALUA_MAX_GROUPS)
			deferred[ndeferred++] = g->id;
		/* The hook may have reconfigured the target. */
		a = alua_get(tgt);
		if (!alua_on(a)) {
			scsitgt__cmd_complete_raw(cmd, SENSE_HARDWARE_ERROR, 0x67, 0x0a);
			return;
		}
	}
	for (size_t i = 0; i < ndesc; i++) {
		const uint8_t *p = &d[STPG_HDR_LEN + i * STPG_DESC_LEN];
		struct alua_group *g = group_find(a, get_be16(&p[2]));

		bool skip = false;

		for (size_t j = 0; g != NULL && j < ndeferred; j++)
			skip = skip || deferred[j] == g->id;
		/* A group the hook removed meanwhile is skipped, and one the host moves itself. */
		if (g == NULL || skip || g->state == (p[0] & 0x0f))
			continue;
		g->state = p[0] & 0x0f;
		g->status = ALUA_STATUS_BY_STPG;
		changed = true;
	}
	if (changed)
		alua_announce(tgt, cmd->sess);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}
