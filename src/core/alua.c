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
 *
 * Commands of several loops read the state, SET TARGET PORT GROUPS (any loop) and the host
 * (home) change it (issue 18): it is under tgt->alua_lock, and each change bumps
 * tgt->alua_gen. A nexus caches its group's access state with the generation it read it
 * at (sess->alua_state), so that the check every command makes is one acquire load of the
 * generation while nothing changes (docs/threading.md). The host's request hook and the
 * unit attentions run outside the lock.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alua.h"
#include "core/home_call.h"
#include "core/scsi_spec.h"
#include "core/ua.h"
#include "core/spc.h"
#include "util/be.h"
#include "util/log.h"

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

/* No target port group for the nexus, or ALUA off (sess->alua_state). */
#define ALUA_NO_GROUP 0xff

static void alua_lock(const struct scsitgt_target *tgt)
{
	uv_mutex_lock((uv_mutex_t *)&tgt->alua_lock);
}

static void alua_unlock(const struct scsitgt_target *tgt)
{
	uv_mutex_unlock((uv_mutex_t *)&tgt->alua_lock);
}

/* The state changed (modes, groups, ports, access states): nexuses look their group up again
 * on their next command. Under alua_lock. */
static void alua_changed(struct scsitgt_target *tgt)
{
	atomic_fetch_add_explicit(&tgt->alua_gen, 1, memory_order_release);
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

bool scsitgt__alua_port_listed(const struct scsitgt_target *tgt, uint16_t rel_port_id)
{
	bool listed;

	alua_lock(tgt);
	listed = group_of_port(tgt->alua, rel_port_id) != NULL;
	alua_unlock(tgt);
	return listed;
}

bool scsitgt__alua_port_any(const struct scsitgt_target *tgt,
			    bool (*other)(void *arg, uint16_t rel_port_id), void *arg)
{
	const struct scsitgt__alua *a;
	bool found = false;

	alua_lock(tgt);
	a = tgt->alua;
	for (unsigned int i = 0; a != NULL && !found && i < a->ngroups; i++)
		for (unsigned int j = 0; !found && j < a->groups[i].nports; j++)
			found = other(arg, a->groups[i].ports[j]);
	alua_unlock(tgt);
	return found;
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

/*
 * A set call refuses an argument: one ERROR line through the target's engine logger naming
 * the call, the target, the argument and the rule (scsitgt(3), "Conventions"); returns @rc.
 */
static int alua_refused(const struct scsitgt_target *tgt, int rc, const char *call, const char *fmt,
			...) SCSITGT_PRINTF(4, 5);
static int alua_refused(const struct scsitgt_target *tgt, int rc, const char *call, const char *fmt,
			...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return scsitgt__log_refused(&tgt->engine->log, "core", rc, "%s: target %s: %s", call,
				    tgt->name, why);
}

/* A state the calls accept: the enum's names, for the refusal's rule. */
#define ALUA_STATES                                                                           \
	"one of SCSITGT_ALUA_ACTIVE_OPTIMIZED (0), _ACTIVE_NON_OPTIMIZED (1), _STANDBY (2), " \
	"_UNAVAILABLE (3), _TRANSITIONING (15)"

/* No group @id on the target (-ENOENT), logged for @call. */
static int alua_no_group(const struct scsitgt_target *tgt, const char *call, uint16_t id)
{
	return alua_refused(tgt, -ENOENT, call,
			    "group_id %u: the target has no such group "
			    "(scsitgt_alua_group_create())",
			    (unsigned)id);
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

	if (tgt == NULL)
		return -EINVAL;
	if (opts == NULL)
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_configure", "opts is NULL");
	if (opts->size == 0)
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_configure",
				    "opts size 0 (initialise the options with "
				    "scsitgt_alua_opts_init())");
	scsitgt_alua_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	if (o.modes & ~(uint32_t)(SCSITGT_ALUA_IMPLICIT | SCSITGT_ALUA_EXPLICIT))
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_configure",
				    "modes 0x%x: bits other than SCSITGT_ALUA_IMPLICIT (0x%x) and "
				    "SCSITGT_ALUA_EXPLICIT (0x%x)",
				    (unsigned)o.modes, (unsigned)SCSITGT_ALUA_IMPLICIT,
				    (unsigned)SCSITGT_ALUA_EXPLICIT);
	alua_lock(tgt);
	a = alua_get_or_create(tgt);
	if (a) {
		a->modes = o.modes;
		a->itt = o.implicit_transition_secs;
		a->request_cb = o.request_cb;
		a->request_arg = o.request_arg;
		alua_changed(tgt);
	}
	alua_unlock(tgt);
	return a ? 0 : -ENOMEM;
}

SCSITGT_EXPORT int scsitgt_alua_group_create(struct scsitgt_target *tgt, uint16_t group_id,
					     enum scsitgt_alua_state state)
{
	struct alua_group *g;
	struct scsitgt__alua *a;

	int rc = 0;

	if (tgt == NULL)
		return -EINVAL;
	if (group_id == 0)
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_group_create",
				    "group_id 0: not 1..65535");
	if (!state_valid(state))
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_group_create",
				    "group_id %u: state %d: not " ALUA_STATES, (unsigned)group_id,
				    (int)state);
	alua_lock(tgt);
	a = alua_get_or_create(tgt);
	if (a == NULL)
		rc = -ENOMEM;
	else if (group_find(a, group_id))
		rc = -EEXIST;
	else if (a->ngroups == SCSITGT_ALUA_MAX_GROUPS)
		rc = -ENOSPC;
	if (rc == 0) {
		g = &a->groups[a->ngroups++];
		memset(g, 0, sizeof(*g));
		g->id = group_id;
		g->state = (uint8_t)state;
		alua_changed(tgt);
	}
	alua_unlock(tgt);
	if (rc == -EEXIST)
		return alua_refused(tgt, rc, "scsitgt_alua_group_create",
				    "group_id %u: the target has a group of that id",
				    (unsigned)group_id);
	if (rc == -ENOSPC)
		return alua_refused(tgt, rc, "scsitgt_alua_group_create",
				    "group_id %u: the target has SCSITGT_ALUA_MAX_GROUPS (%d) "
				    "groups already",
				    (unsigned)group_id, SCSITGT_ALUA_MAX_GROUPS);
	return rc;
}

SCSITGT_EXPORT int scsitgt_alua_group_destroy(struct scsitgt_target *tgt, uint16_t group_id)
{
	struct alua_group *g;
	struct scsitgt__alua *a;

	if (tgt == NULL)
		return -EINVAL;
	alua_lock(tgt);
	a = alua_get(tgt);
	g = group_find(a, group_id);
	if (g) {
		/* Keep the array dense and in creation order (REPORT TARGET PORT GROUPS order). */
		memmove(g, g + 1, (size_t)(&a->groups[a->ngroups] - (g + 1)) * sizeof(*g));
		a->ngroups--;
		alua_changed(tgt);
	}
	alua_unlock(tgt);
	return g ? 0 : alua_no_group(tgt, "scsitgt_alua_group_destroy", group_id);
}

SCSITGT_EXPORT int scsitgt_alua_group_add_port(struct scsitgt_target *tgt, uint16_t group_id,
					       uint16_t rel_port_id)
{
	struct alua_group *g;
	struct scsitgt__alua *a;

	int rc = 0;

	const struct alua_group *og = NULL;
	uint16_t other = 0;

	if (tgt == NULL)
		return -EINVAL;
	if (rel_port_id == 0)
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_group_add_port",
				    "group_id %u: rel_port_id 0: not 1..65535", (unsigned)group_id);
	alua_lock(tgt);
	a = alua_get(tgt);
	g = group_find(a, group_id);
	if (g == NULL)
		rc = -ENOENT;
	else if ((og = group_of_port(a, rel_port_id)) != NULL)
		rc = -EEXIST;
	else if (g->nports == SCSITGT_ALUA_MAX_PORTS)
		rc = -ENOSPC;
	if (rc == 0) {
		g->ports[g->nports++] = rel_port_id;
		alua_changed(tgt);
	}
	if (og)
		other = og->id;
	alua_unlock(tgt);
	if (rc == -ENOENT)
		return alua_no_group(tgt, "scsitgt_alua_group_add_port", group_id);
	if (rc == -EEXIST)
		return alua_refused(tgt, rc, "scsitgt_alua_group_add_port",
				    "group_id %u: rel_port_id %u: the port is in group %u already "
				    "(a port belongs to one group)",
				    (unsigned)group_id, (unsigned)rel_port_id, (unsigned)other);
	if (rc == -ENOSPC)
		return alua_refused(tgt, rc, "scsitgt_alua_group_add_port",
				    "group_id %u: rel_port_id %u: the group has "
				    "SCSITGT_ALUA_MAX_PORTS (%d) ports already",
				    (unsigned)group_id, (unsigned)rel_port_id,
				    SCSITGT_ALUA_MAX_PORTS);
	return rc;
}

SCSITGT_EXPORT int scsitgt_alua_group_remove_port(struct scsitgt_target *tgt, uint16_t group_id,
						  uint16_t rel_port_id)
{
	struct alua_group *g;

	int rc = -ENOENT;

	if (tgt == NULL)
		return -EINVAL;
	alua_lock(tgt);
	g = group_find(alua_get(tgt), group_id);
	for (unsigned int i = 0; g && i < g->nports; i++) {
		if (g->ports[i] != rel_port_id)
			continue;
		memmove(&g->ports[i], &g->ports[i + 1], (g->nports - i - 1) * sizeof(g->ports[0]));
		g->nports--;
		alua_changed(tgt);
		rc = 0;
		break;
	}
	alua_unlock(tgt);
	if (rc == -ENOENT && g == NULL)
		return alua_no_group(tgt, "scsitgt_alua_group_remove_port", group_id);
	if (rc == -ENOENT)
		return alua_refused(tgt, rc, "scsitgt_alua_group_remove_port",
				    "group_id %u: rel_port_id %u: not a port of this group",
				    (unsigned)group_id, (unsigned)rel_port_id);
	return rc;
}

SCSITGT_EXPORT int scsitgt_alua_set_state(struct scsitgt_target *tgt, uint16_t group_id,
					  enum scsitgt_alua_state state)
{
	struct alua_group *g;

	bool announce = false;

	if (tgt == NULL)
		return -EINVAL;
	if (!state_valid(state))
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_set_state",
				    "group_id %u: state %d: not " ALUA_STATES, (unsigned)group_id,
				    (int)state);
	alua_lock(tgt);
	g = group_find(alua_get(tgt), group_id);
	if (g && g->state != state) {
		g->state = (uint8_t)state;
		g->status = ALUA_STATUS_IMPLICIT;
		announce = alua_on(alua_get(tgt));
		alua_changed(tgt);
	}
	alua_unlock(tgt);
	if (g == NULL)
		return alua_no_group(tgt, "scsitgt_alua_set_state", group_id);
	if (announce)
		alua_announce(tgt, NULL);
	return 0;
}

SCSITGT_EXPORT int scsitgt_alua_get_state(const struct scsitgt_target *tgt, uint16_t group_id,
					  enum scsitgt_alua_state *state)
{
	const struct alua_group *g;

	if (tgt == NULL)
		return -EINVAL;
	if (state == NULL)
		return alua_refused(tgt, -EINVAL, "scsitgt_alua_get_state",
				    "group_id %u: state is NULL", (unsigned)group_id);
	alua_lock(tgt);
	g = group_find(alua_get(tgt), group_id);
	if (g)
		*state = (enum scsitgt_alua_state)g->state;
	alua_unlock(tgt);
	return g ? 0 : -ENOENT;
}

SCSITGT_EXPORT int scsitgt_alua_set_preferred(struct scsitgt_target *tgt, uint16_t group_id,
					      bool preferred)
{
	struct alua_group *g;

	if (tgt == NULL)
		return -EINVAL;
	alua_lock(tgt);
	g = group_find(alua_get(tgt), group_id);
	if (g)
		g->pref = preferred;
	alua_unlock(tgt);
	return g ? 0 : alua_no_group(tgt, "scsitgt_alua_set_preferred", group_id);
}

uint8_t scsitgt__alua_tpgs(const struct scsitgt_target *tgt)
{
	const struct scsitgt__alua *a;
	uint8_t tpgs;

	alua_lock(tgt);
	a = alua_get(tgt);
	/* SPC-5 §6.7.2 Table 150: 01b implicit only, 10b explicit only, 11b both. */
	tpgs = a ? (uint8_t)(a->modes & 0x3) : 0;
	alua_unlock(tgt);
	return tpgs;
}

bool scsitgt__alua_multiport(const struct scsitgt_target *tgt)
{
	const struct scsitgt__alua *a;
	unsigned int n = 0;

	alua_lock(tgt);
	a = alua_get(tgt);
	for (unsigned int i = 0; a && (a->modes & 0x3) && i < a->ngroups; i++)
		n += a->groups[i].nports;
	alua_unlock(tgt);
	return n > 1;
}

bool scsitgt__alua_port_group(const struct scsitgt__session *sess, uint16_t *group_id)
{
	const struct scsitgt__alua *a;
	const struct alua_group *g = NULL;

	alua_lock(sess->tgt);
	a = alua_get(sess->tgt);
	/* Without ALUA there are no target port groups to name: INQUIRY says TPGS 00b and
	 * REPORT TARGET PORT GROUPS is refused, so VPD 83h lists no such designator either. */
	if (alua_on(a))
		g = group_of_port(a, sess->rel_port_id);
	if (g)
		*group_id = g->id;
	alua_unlock(sess->tgt);
	return g != NULL;
}

bool scsitgt__alua_offers(const struct scsitgt_target *tgt, const struct scsitgt__cdb_def *row)
{
	const struct scsitgt__alua *a;
	bool offers = true;

	if (row->exec != scsitgt__alua_rtpg && row->exec != scsitgt__alua_stpg)
		return true;
	alua_lock(tgt);
	a = alua_get(tgt);
	if (row->exec == scsitgt__alua_rtpg)
		offers = alua_on(a);
	else
		offers = alua_on(a) && (a->modes & SCSITGT_ALUA_EXPLICIT);
	alua_unlock(tgt);
	return offers;
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
	struct scsitgt__session *sess = cmd->sess;
	struct scsitgt_target *tgt = sess->tgt;

	if (cmd->lun == NULL)
		return SCSITGT__SR_OK;
	/* The nexus's cached state, looked up again only after a change (see the top). */
	if (atomic_load_explicit(&tgt->alua_gen, memory_order_acquire) != sess->alua_gen) {
		const struct scsitgt__alua *a;
		const struct alua_group *g = NULL;

		alua_lock(tgt);
		a = alua_get(tgt);
		if (alua_on(a))
			g = group_of_port(a, sess->rel_port_id);
		sess->alua_state = g ? g->state : ALUA_NO_GROUP;
		sess->alua_gen = atomic_load_explicit(&tgt->alua_gen, memory_order_relaxed);
		alua_unlock(tgt);
	}
	switch (sess->alua_state) {
	case ALUA_NO_GROUP:
		return SCSITGT__SR_OK;
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
	bool on;

	alua_lock(cmd->sess->tgt);
	on = alua_on(alua_get(cmd->sess->tgt));
	alua_unlock(cmd->sess->tgt);
	/* Without ALUA the device server does not support the command (TPGS 00b). */
	if (!on)
		return SCSITGT__SR_INVALID_OPCODE;
	if ((cmd->cdb[1] >> 5) > RTPG_FMT_EXTENDED)
		return scsitgt__cmd_bad_cdb_field(cmd, 1, 7);
	return scsitgt__parse_alloc32(cmd, 6);
}

void scsitgt__alua_rtpg(struct scsitgt__cmd *cmd)
{
	struct scsitgt_target *tgt = cmd->sess->tgt;
	const struct scsitgt__alua *a;
	bool ext = (cmd->cdb[1] >> 5) == RTPG_FMT_EXTENDED;
	size_t hdr = ext ? RTPG_EXT_HDR_LEN : RTPG_HDR_LEN;
	size_t len = hdr, n;
	uint8_t *d;

	alua_lock(tgt);
	a = alua_get(tgt);
	for (unsigned int i = 0; a && i < a->ngroups; i++)
		len += RTPG_DESC_LEN + (size_t)a->groups[i].nports * RTPG_PORT_LEN;
	d = calloc(1, len);
	if (d == NULL) {
		alua_unlock(tgt);
		scsitgt__cmd_complete(cmd, SCSITGT__SR_TASK_SET_FULL);
		return;
	}
	/* SPC-5 §6.36.1: RETURN DATA LENGTH counts the bytes after itself, whatever the
	 * allocation length. */
	put_be32(&d[0], (uint32_t)(len - 4));
	if (ext) {
		d[4] = RTPG_FMT_EXTENDED << 4;
		d[5] = a ? a->itt : 0;
	}
	n = hdr;
	for (unsigned int i = 0; a && i < a->ngroups; i++) {
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
	alua_unlock(tgt);
	scsitgt__cmd_respond(cmd, d, len);
	free(d);
	scsitgt__cmd_complete(cmd, SCSITGT__SR_OK);
}

enum scsitgt__sense_reason scsitgt__alua_parse_stpg(struct scsitgt__cmd *cmd)
{
	uint32_t len = get_be32(&cmd->cdb[6]);

	/* SPC-5 §6.50: only where TPGS says explicit ALUA is supported. */
	if (!scsitgt__alua_offers(cmd->sess->tgt, cmd->def))
		return SCSITGT__SR_INVALID_OPCODE;
	if (len == 0)
		return SCSITGT__SR_OK;
	if (len < STPG_HDR_LEN || (len - STPG_HDR_LEN) % STPG_DESC_LEN || len > STPG_MAX_LEN)
		return SCSITGT__SR_PARAM_LIST_LENGTH_ERROR;
	cmd->dir = SCSITGT__DIR_OUT;
	cmd->xfer_len = len;
	return SCSITGT__SR_OK;
}

/* Check every descriptor of SET TARGET PORT GROUPS before anything changes (SPC-5 §6.50: the
 * command fails as a whole). Bytes 0..3 are reserved; byte 0 bits 7..4 and byte 1 of a
 * descriptor too. Under alua_lock. */
static enum scsitgt__sense_reason stpg_validate(struct scsitgt__cmd *cmd,
						const struct scsitgt__alua *a, size_t ndesc)
{
	const uint8_t *d = cmd->buf;

	for (size_t i = 0; i < ndesc; i++) {
		size_t off = STPG_HDR_LEN + i * STPG_DESC_LEN;
		const uint8_t *p = &d[off];
		uint8_t state = p[0] & 0x0f;
		const struct alua_group *g = group_find(a, get_be16(&p[2]));

		if (p[0] & 0xf0)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 7);
		if (state != SCSITGT_ALUA_ACTIVE_OPTIMIZED &&
		    state != SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED && state != SCSITGT_ALUA_STANDBY &&
		    state != SCSITGT_ALUA_UNAVAILABLE)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)off, 3);
		if (p[1])
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 1), -1);
		if (g == NULL)
			return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 2), -1);
		for (size_t j = 0; j < i; j++)
			if (get_be16(&d[STPG_HDR_LEN + j * STPG_DESC_LEN + 2]) == g->id)
				return scsitgt__cmd_bad_param_field(cmd, (uint16_t)(off + 2), -1);
	}
	return SCSITGT__SR_OK;
}

/* What SET TARGET PORT GROUPS ends with (stpg_run() runs on home, the command ends on its own
 * loop). */
struct stpg_call {
	struct scsitgt__home_call hc; /* first */
	enum scsitgt__sense_reason r;
	bool failed; /* SET TARGET PORT GROUPS COMMAND FAILED */
};

/* The nexus whose SET TARGET PORT GROUPS the hook answers (scsitgt__alua_requester()). */
static _Thread_local const struct scsitgt__session *stpg_requester;

const char *scsitgt__alua_requester(void)
{
	const struct scsitgt__session *s = stpg_requester;

	if (s == NULL)
		return NULL;
	return s->initiator_port ? s->initiator_port : s->initiator_name;
}

/* Loop: home (the ALUA hook's and the nexus walk's, alua.h). */
static void stpg_run(struct scsitgt__home_call *hc)
{
	struct stpg_call *c = scsitgt__container_of(hc, struct stpg_call, hc);
	struct scsitgt__cmd *cmd = hc->cmd;
	struct scsitgt_target *tgt = hc->sess->tgt;
	struct scsitgt__alua *a;
	const uint8_t *d = cmd->buf;
	size_t ndesc = cmd->xfer_len ? (cmd->xfer_len - STPG_HDR_LEN) / STPG_DESC_LEN : 0;
	uint16_t deferred[SCSITGT_ALUA_MAX_GROUPS];
	size_t ndeferred = 0;
	scsitgt_alua_request_cb request_cb;
	void *request_arg;
	enum scsitgt__sense_reason r;
	bool changed = false;

	alua_lock(tgt);
	a = alua_get(tgt);
	/* The ALUA state may have been turned off between parse and execution. */
	r = !alua_on(a) || !(a->modes & SCSITGT_ALUA_EXPLICIT) ? SCSITGT__SR_INVALID_OPCODE :
								 stpg_validate(cmd, a, ndesc);
	request_cb = a ? a->request_cb : NULL;
	request_arg = a ? a->request_arg : NULL;
	alua_unlock(tgt);
	c->r = r;
	if (r != SCSITGT__SR_OK)
		return;
	/* The cluster manager may veto; nothing has changed yet. A group whose change the host
	 * defers keeps the state the host gives it (alua.h). The hook runs outside the lock. */
	for (size_t i = 0; i < ndesc && request_cb; i++) {
		const uint8_t *p = &d[STPG_HDR_LEN + i * STPG_DESC_LEN];
		uint16_t id = get_be16(&p[2]);
		const struct alua_group *g;
		uint8_t cur = 0;
		bool on;
		int rc;

		alua_lock(tgt);
		g = group_find(alua_get(tgt), id);
		if (g)
			cur = g->state;
		alua_unlock(tgt);
		/* A group an earlier call of the hook removed is skipped. */
		if (g == NULL)
			continue;
		stpg_requester = hc->sess;
		rc = request_cb(request_arg, tgt, id, (enum scsitgt_alua_state)cur,
				(enum scsitgt_alua_state)(p[0] & 0x0f));
		stpg_requester = NULL;
		if (rc < 0) {
			/* SPC-5 §6.50: SET TARGET PORT GROUPS COMMAND FAILED. */
			c->failed = true;
			return;
		}
		/* Descriptors name distinct existing groups: at most SCSITGT_ALUA_MAX_GROUPS. */
		if (rc == SCSITGT_ALUA_REQUEST_DEFERRED && ndeferred < SCSITGT_ALUA_MAX_GROUPS)
			deferred[ndeferred++] = id;
		/* The hook may have reconfigured the target. */
		alua_lock(tgt);
		on = alua_on(alua_get(tgt));
		alua_unlock(tgt);
		if (!on) {
			c->failed = true;
			return;
		}
	}
	alua_lock(tgt);
	a = alua_get(tgt);
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
		alua_changed(tgt);
	alua_unlock(tgt);
	if (changed)
		alua_announce(tgt, hc->sess);
}

static void stpg_done(struct scsitgt__home_call *hc)
{
	struct stpg_call *c = scsitgt__container_of(hc, struct stpg_call, hc);

	if (c->failed)
		scsitgt__cmd_complete_raw(hc->cmd, SENSE_HARDWARE_ERROR, 0x67, 0x0a);
	else
		scsitgt__cmd_complete(hc->cmd, c->r);
	scsitgt__home_call_free(hc);
}

void scsitgt__alua_stpg(struct scsitgt__cmd *cmd)
{
	struct stpg_call local = { 0 };
	/* A command of a worker shard (issue 18) hands its execution to home and waits. */
	struct scsitgt__home_call *hc = scsitgt__home_call_new(cmd, &local.hc, sizeof(local));

	if (hc == NULL) {
		scsitgt__cmd_complete(cmd, SCSITGT__SR_BUSY);
		return;
	}
	scsitgt__home_call(hc, stpg_run, stpg_done);
}
