/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd: one target brought to its configuration (scsitgtd_apply.c walks the targets):
 * created, or changed in place on a reload as a diff of its old section against the new one:
 * the access list by name and address, CHAP, iSCSI parameters, ALUA groups, LUN masking, SRP
 * ports, and which LUNs go, come or change (scsitgtd_apply_lun.c makes them). A removed target
 * is destroyed; one a reload brought back meanwhile is created once its name is free.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsitgtd_apply.h"

static bool has_initiator(const struct scsitgtd_target *t, const char *name)
{
	for (size_t i = 0; t && i < t->ninitiators; i++)
		if (!strcmp(t->initiators[i], name))
			return true;
	return false;
}

static void acl_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
		      const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	int rc;

	/* Drop what went, add what came; sessions already logged in stay. */
	for (size_t i = 0; old && i < old->ninitiators; i++) {
		if (!has_initiator(nt, old->initiators[i])) {
			scsitgt_target_remove_initiator(tgt, old->initiators[i]);
			scsitgtd_changed(d, "%s: initiator %s removed from the access list",
					 nt->name, old->initiators[i]);
		}
	}
	for (size_t i = 0; i < nt->ninitiators; i++) {
		if (has_initiator(old, nt->initiators[i]))
			continue;
		rc = scsitgt_target_add_initiator(tgt, nt->initiators[i]);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: initiator %s: %s", nt->name,
				     nt->initiators[i], scsitgt_strerror(rc));
		else
			scsitgtd_changed(d, "%s: initiator %s added to the access list", nt->name,
					 nt->initiators[i]);
	}
}

static void chap_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
		       const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	int rc;

	/* CHAP applies to logins that start from now on. */
	scsitgtd_cred_changed(d, nt->name, "chap", old ? old->chap_user : NULL,
			      old ? old->chap_secret : NULL, nt->chap_user, nt->chap_secret);
	scsitgtd_cred_changed(d, nt->name, "mutual_chap", old ? old->mutual_user : NULL,
			      old ? old->mutual_secret : NULL, nt->mutual_user, nt->mutual_secret);
	if (!old || !str_eq(old->chap_user, nt->chap_user) ||
	    !str_eq(old->chap_secret, nt->chap_secret)) {
		rc = scsitgt_iscsi_target_set_chap(tgt, nt->chap_user, nt->chap_secret);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: chap: %s", nt->name,
				     scsitgt_strerror(rc));
	}
	if (!old || !str_eq(old->mutual_user, nt->mutual_user) ||
	    !str_eq(old->mutual_secret, nt->mutual_secret)) {
		rc = scsitgt_iscsi_target_set_mutual_chap(tgt, nt->mutual_user, nt->mutual_secret);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: mutual_chap: %s", nt->name,
				     scsitgt_strerror(rc));
	}
	for (size_t i = 0; old && i < old->nichap; i++) {
		const struct scsitgtd_initiator_chap *o = &old->ichap[i];
		char what[300];

		if (scsitgtd_config_find_ichap(nt, o->initiator))
			continue;
		scsitgt_iscsi_initiator_set_chap(tgt, o->initiator, NULL, NULL);
		snprintf(what, sizeof(what), "initiator_chap of %s", o->initiator);
		scsitgtd_cred_changed(d, nt->name, what, o->user, o->secret, NULL, NULL);
	}
	for (size_t i = 0; i < nt->nichap; i++) {
		const struct scsitgtd_initiator_chap *n = &nt->ichap[i];
		const struct scsitgtd_initiator_chap *o =
			scsitgtd_config_find_ichap(old, n->initiator);

		char what[300];

		if (o && str_eq(o->user, n->user) && str_eq(o->secret, n->secret))
			continue;
		rc = scsitgt_iscsi_initiator_set_chap(tgt, n->initiator, n->user, n->secret);
		if (rc < 0) {
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: initiator_chap %s: %s", nt->name,
				     n->initiator, scsitgt_strerror(rc));
			continue;
		}
		snprintf(what, sizeof(what), "initiator_chap of %s", n->initiator);
		scsitgtd_cred_changed(d, nt->name, what, o ? o->user : NULL, o ? o->secret : NULL,
				      n->user, n->secret);
	}
}

static void group_ports(struct scsitgtd *d, struct scsitgt_target *tgt, const char *tname,
			const struct scsitgtd_alua_group *og, const struct scsitgtd_alua_group *ng)
{
	int rc;

	/* (Ports that left were removed before, see alua_apply().) */
	for (size_t i = 0; i < ng->nports; i++) {
		if (scsitgtd_group_has_port(og, ng->ports[i]))
			continue;
		rc = scsitgt_alua_group_add_port(tgt, ng->id, ng->ports[i]);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: alua_group %u port %u: %s", tname,
				     ng->id, ng->ports[i], scsitgt_strerror(rc));
		else
			scsitgtd_changed(d, "%s: alua_group %u: port %u added", tname, ng->id,
					 ng->ports[i]);
	}
}

static void alua_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
		       const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	struct scsitgt_alua_opts ao;
	int rc;

	/* Groups that went first, so that their ports are free for the others. */
	for (size_t i = 0; old && i < old->ngroups; i++)
		if (!scsitgtd_config_find_group(nt, old->groups[i].id)) {
			scsitgt_alua_group_destroy(tgt, old->groups[i].id);
			scsitgtd_changed(d, "%s: alua_group %u removed", nt->name,
					 old->groups[i].id);
		}
	for (size_t i = 0; old && i < old->ngroups; i++) {
		const struct scsitgtd_alua_group *ng =
			scsitgtd_config_find_group(nt, old->groups[i].id);

		for (size_t j = 0; ng && j < old->groups[i].nports; j++)
			if (!scsitgtd_group_has_port(ng, old->groups[i].ports[j])) {
				scsitgt_alua_group_remove_port(tgt, ng->id,
							       old->groups[i].ports[j]);
				scsitgtd_changed(d, "%s: alua_group %u: port %u removed", nt->name,
						 ng->id, old->groups[i].ports[j]);
			}
	}
	for (size_t i = 0; i < nt->ngroups; i++) {
		const struct scsitgtd_alua_group *ng = &nt->groups[i];
		const struct scsitgtd_alua_group *og = scsitgtd_config_find_group(old, ng->id);

		if (og == NULL) {
			rc = scsitgt_alua_group_create(tgt, ng->id,
						       (enum scsitgt_alua_state)ng->state);
			if (rc < 0) {
				scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: alua_group %u: %s",
					     nt->name, ng->id, scsitgt_strerror(rc));
				continue;
			}
			scsitgtd_changed(d, "%s: alua_group %u created (state %#x)", nt->name,
					 ng->id, ng->state);
		} else if (og->state != ng->state) {
			/* An implicit transition: every nexus gets ASYMMETRIC ACCESS STATE
			 * CHANGED (SPC-5 §5.16.2.6). */
			scsitgtd_changed(d, "%s: alua_group %u: state %#x -> %#x", nt->name, ng->id,
					 og->state, ng->state);
			scsitgt_alua_set_state(tgt, ng->id, (enum scsitgt_alua_state)ng->state);
		}
		group_ports(d, tgt, nt->name, og, ng);
		if (!og || og->preferred != ng->preferred) {
			scsitgt_alua_set_preferred(tgt, ng->id, ng->preferred);
			if (og)
				scsitgtd_changed(d, "%s: alua_group %u: preferred %s", nt->name,
						 ng->id, ng->preferred ? "yes" : "no");
		}
	}
	if (!old || old->alua_modes != nt->alua_modes) {
		scsitgt_alua_opts_init(&ao, sizeof(ao));
		ao.modes = nt->alua_modes;
		rc = scsitgt_alua_configure(tgt, &ao);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: alua: %s", nt->name,
				     scsitgt_strerror(rc));
		else if (old)
			scsitgtd_changed(d, "%s: alua modes %#x -> %#x", nt->name, old->alua_modes,
					 nt->alua_modes);
	}
}

static void address_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			  const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	const struct scsitgtd_address *a;
	int rc;

	for (size_t i = 0; old && i < old->naddresses; i++) {
		a = &old->addresses[i];
		if (scsitgtd_config_find_address(nt, a->initiator, a->cidr))
			continue;
		if (a->initiator)
			scsitgt_target_remove_initiator_address(tgt, a->initiator, a->cidr);
		else
			scsitgt_target_remove_address(tgt, a->cidr);
		scsitgtd_changed(d, "%s: address %s%s%s removed", nt->name, a->cidr,
				 a->initiator ? " for " : "", a->initiator ? a->initiator : "");
	}
	for (size_t i = 0; i < nt->naddresses; i++) {
		a = &nt->addresses[i];
		if (scsitgtd_config_find_address(old, a->initiator, a->cidr))
			continue;
		rc = a->initiator ?
			     scsitgt_target_add_initiator_address(tgt, a->initiator, a->cidr) :
			     scsitgt_target_add_address(tgt, a->cidr);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: address %s%s%s: %s", nt->name,
				     a->initiator ? a->initiator : "", a->initiator ? " " : "",
				     a->cidr, scsitgt_strerror(rc));
		else
			scsitgtd_changed(d, "%s: address %s%s%s added", nt->name, a->cidr,
					 a->initiator ? " for " : "",
					 a->initiator ? a->initiator : "");
	}
}

/*
 * LUN masking as a set of (initiator or every initiator, LUN) mappings: a LUN with visible_to
 * lines is mapped to those initiators, one without to every initiator, and only while some LUN
 * of the target has visible_to. Whether (@ini, @id) is in @t's set:
 */
static bool mapped(const struct scsitgtd_target *t, const char *ini, uint64_t id)
{
	const struct scsitgtd_lun *l = scsitgtd_config_find_lun(t, id);

	if (l == NULL || !scsitgtd_target_masks_luns(t))
		return false;
	if (ini == NULL)
		return l->nvisible_to == 0;
	return l->nvisible_to && scsitgtd_lun_visible_to(l, ini);
}

/* Call @fn for every mapping of @t's set that @other's set lacks. */
static void mappings_missing(struct scsitgtd *d, struct scsitgt_target *tgt,
			     const struct scsitgtd_target *t, const struct scsitgtd_target *other,
			     int (*fn)(struct scsitgt_target *, const char *, uint64_t))
{
	int rc;

	if (!scsitgtd_target_masks_luns(t))
		return;
	for (size_t i = 0; i < t->nluns; i++) {
		const struct scsitgtd_lun *l = &t->luns[i];

		for (size_t j = 0; j < (l->nvisible_to ? l->nvisible_to : 1); j++) {
			const char *ini = l->nvisible_to ? l->visible_to[j] : NULL;

			if (other && mapped(other, ini, l->id))
				continue;
			rc = fn(tgt, ini, l->id);
			if (rc == 0)
				scsitgtd_changed(d, "%s LUN %llu: %s %s", t->name,
						 (unsigned long long)l->id,
						 fn == scsitgt_target_map_lun ? "mapped to" :
										"unmapped from",
						 ini ? ini : "every initiator");
			if (rc < 0 && rc != -ENOENT)
				scsitgtd_log(d, SCSITGT_LOG_ERROR,
					     "%s LUN %llu: masking for %s: %s", t->name,
					     (unsigned long long)l->id,
					     ini ? ini : "every initiator", scsitgt_strerror(rc));
		}
	}
}

/* The library raises REPORTED LUNS DATA HAS CHANGED for the nexuses whose view changes. */
static void masking_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			  const struct scsitgtd_target *old, const struct scsitgtd_target *nt)
{
	bool was = old && scsitgtd_target_masks_luns(old), is = scsitgtd_target_masks_luns(nt);

	/* Map before unmapping and before turning masking on, so no LUN blinks out. */
	mappings_missing(d, tgt, nt, old, scsitgt_target_map_lun);
	if (was && !is) {
		scsitgt_target_set_lun_masking(tgt, false);
		scsitgtd_changed(d, "%s: LUN masking off", nt->name);
	}
	if (old)
		mappings_missing(d, tgt, old, nt, scsitgt_target_unmap_lun);
	if (is && !was) {
		scsitgt_target_set_lun_masking(tgt, true);
		scsitgtd_changed(d, "%s: LUN masking on", nt->name);
	}
}

static struct scsitgt_srp_portal *srp_create(struct scsitgtd *d, struct scsitgt_target *tgt,
					     const char *tname, const struct scsitgtd_srp *s)
{
	struct scsitgt_srp_portal_opts o;
	struct scsitgt_srp_portal *port;
	int rc;

	scsitgt_srp_portal_opts_init(&o, sizeof(o));
	o.address = s->address;
	o.port = s->port;
	o.id_ext = s->id_ext;
	o.ioc_guid = s->ioc_guid;
	if (s->max_channels)
		o.max_channels = s->max_channels;
	if (s->queue_size)
		o.queue_size = s->queue_size;
	if (s->max_it_iu_len)
		o.max_it_iu_len = s->max_it_iu_len;
	if (s->max_ti_iu_len)
		o.max_ti_iu_len = s->max_ti_iu_len;
	if (s->immediate_data >= 0)
		o.immediate_data = s->immediate_data != 0;
	if (s->aer >= 0)
		o.aer = s->aer != 0;
	if (s->rel_port_id)
		o.rel_port_id = s->rel_port_id;
	if (s->backlog)
		o.backlog = (int)s->backlog;
	rc = scsitgt_srp_portal_create(&port, tgt, &o);
	if (rc < 0) {
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: srp %s port %u (line %u): %s", tname,
			     s->address, s->port, s->line, scsitgt_strerror(rc));
		return NULL;
	}
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "%s: listening (srp) on %s:%u, ioc_guid %#llx", tname,
		     s->address, scsitgt_srp_portal_get_port(port),
		     (unsigned long long)s->ioc_guid);
	return port;
}

/* Keep identical SRP ports, close the others, open the new ones: @out parallels nt->srps. */
void scsitgtd_srps_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			 const struct scsitgtd_target *old, struct scsitgt_srp_portal **old_ports,
			 const struct scsitgtd_target *nt, struct scsitgt_srp_portal **out)
{
	for (size_t j = 0; old && j < old->nsrps; j++) {
		bool kept = false;

		for (size_t i = 0; i < nt->nsrps && !kept; i++) {
			if (out[i] == NULL && old_ports[j] &&
			    scsitgtd_srp_equal(&old->srps[j], &nt->srps[i])) {
				out[i] = old_ports[j];
				kept = true;
			}
		}
		if (!kept && old_ports[j])
			scsitgt_srp_portal_destroy(old_ports[j], NULL, NULL);
	}
	for (size_t i = 0; i < nt->nsrps; i++)
		if (out[i] == NULL)
			out[i] = srp_create(d, tgt, nt->name, &nt->srps[i]);
}

/* Bring target @tgt from @old of @oc (both NULL: freshly created) to @nt of @nc. */
void scsitgtd_target_apply(struct scsitgtd *d, struct scsitgt_target *tgt,
			   const struct scsitgtd_config *oc, const struct scsitgtd_target *old,
			   const struct scsitgtd_config *nc, const struct scsitgtd_target *nt)
{
	struct scsitgtd_gw *gw;
	struct scsitgt_iscsi_params ip;
	struct scsitgtd_params op, np;
	int rc;

	if (old && (!str_eq(old->alias, nt->alias) || old->max_sessions != nt->max_sessions ||
		    old->max_lun_commands != nt->max_lun_commands))
		scsitgtd_log(d, SCSITGT_LOG_WARNING,
			     "%s: alias, max_sessions and max_lun_commands "
			     "take effect at the next start",
			     nt->name);
	acl_apply(d, tgt, old, nt);
	address_apply(d, tgt, old, nt);
	chap_apply(d, tgt, old, nt);
	/* [engine]'s keys are every target's defaults, its own keys win: a change of either
	 * reaches the target's next logins. */
	scsitgtd_params_merge(&np, &nc->params, &nt->params);
	if (old)
		scsitgtd_params_merge(&op, &oc->params, &old->params);
	if (!old || !scsitgtd_params_equal(&op, &np)) {
		scsitgtd_params_build(&np, &ip);
		rc = scsitgt_iscsi_target_set_params(tgt, &ip);
		if (rc < 0)
			scsitgtd_log(d, SCSITGT_LOG_ERROR, "%s: iSCSI parameters: %s", nt->name,
				     scsitgt_strerror(rc));
		else if (old)
			scsitgtd_changed(d, "%s: iSCSI parameters changed (for new logins)",
					 nt->name);
	}
	/* A gateway's target: the gateway drives the ALUA groups. */
	if (old && !scsitgtd_gateway_equal(&old->gw, &nt->gw))
		scsitgtd_log(d, SCSITGT_LOG_WARNING,
			     "%s: rbd_gateway settings take effect when the gateway's LUN is "
			     "created again (or at the next start)",
			     nt->name);
	gw = scsitgtd_gw_find(d, tgt);
	if (nt->gw.group == 0 && (!old || old->gw.group == 0))
		alua_apply(d, tgt, old, nt);
	/* LUNs that went, or that changed beyond what can change in place. Removing one raises
	 * REPORTED LUNS DATA HAS CHANGED for every nexus (the library does). */
	for (size_t i = 0; old && i < old->nluns; i++) {
		const struct scsitgtd_lun *ol = &old->luns[i];
		const struct scsitgtd_lun *nl = scsitgtd_config_find_lun(nt, ol->id);
		struct scsitgt_lun *lun = scsitgt_target_get_lun(tgt, ol->id);

		if (lun && (nl == NULL || scsitgtd_lun_needs_recreate(ol, nl))) {
			scsitgtd_changed(d, "%s LUN %llu: removed%s", nt->name,
					 (unsigned long long)ol->id,
					 nl ? " (to be re-created)" : "");
			if (gw && gw->lun_id == ol->id) {
				/* After its gateway, which re-creates it if still wanted. */
				gw->then_lun = true;
				scsitgtd_gw_destroy(gw);
			} else {
				scsitgt_lun_destroy(lun, NULL, NULL);
			}
		}
	}
	for (size_t i = 0; i < nt->nluns; i++) {
		const struct scsitgtd_lun *nl = &nt->luns[i];
		struct scsitgt_lun *lun = scsitgt_target_get_lun(tgt, nl->id);

		if (gw && gw->destroying)
			continue; /* re-created, if at all, when the gateway is gone */
		if (lun == NULL)
			scsitgtd_lun_create(d, tgt, nc, nl);
		else
			scsitgtd_lun_update(d, nt->name, lun, scsitgtd_config_find_lun(old, nl->id),
					    nl);
	}
	masking_apply(d, tgt, old, nt);
}

int scsitgtd_target_create(struct scsitgtd *d, const struct scsitgtd_config *nc,
			   const struct scsitgtd_target *t, struct scsitgtd_tgt *slot)
{
	struct scsitgt_target **out = &slot->tgt;
	struct scsitgt_target_opts o;
	struct scsitgt_target *other;
	int rc;

	scsitgt_target_opts_init(&o, sizeof(o));
	o.name = t->name;
	o.alias = t->alias;
	if (t->max_sessions >= 0)
		o.max_sessions = (uint32_t)t->max_sessions;
	if (t->max_lun_commands >= 0)
		o.max_lun_commands = (uint32_t)t->max_lun_commands;
	rc = scsitgt_target_create(out, d->engine, &o);
	/* Any failure below sets its reason (show's "error"). */
	slot->why[0] = '\0';
	slot->waiting = false;
	other = rc == -EEXIST ? scsitgt_engine_find_target(d->engine, t->name) : NULL;
	if (rc == -EEXIST && other == NULL) {
		/* The file's target names are unique, so the name is held by a target a reload
		 * removed and that is still going away (sessions, LUNs, a gateway closing):
		 * target_gone() creates this one once it is gone. */
		slot->waiting = true;
		snprintf(slot->why, sizeof(slot->why),
			 "the removed target of that name is still going away; created once it "
			 "is gone");
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "target %s: %s: %s", t->name,
			     scsitgt_strerror(rc), slot->why);
	} else if (rc == -EEXIST) {
		/* A target of the file whose name differs only in case (the library compares
		 * names without case, RFC 7143 §4.2.7.1). */
		snprintf(slot->why, sizeof(slot->why),
			 "%s: target %.64s has that name (names compare without case)",
			 scsitgt_strerror(rc), scsitgt_target_get_name(other));
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "target %s: %s", t->name, slot->why);
	} else if (rc < 0) {
		snprintf(slot->why, sizeof(slot->why), "%s (the log says why)",
			 scsitgt_strerror(rc));
		scsitgtd_log(d, SCSITGT_LOG_ERROR, "target %s: %s", t->name, scsitgt_strerror(rc));
	}
	if (rc < 0) {
		*out = NULL;
		return rc;
	}
	scsitgtd_changed(d, "target %s: created (line %u)", t->name, t->line);
	scsitgtd_target_apply(d, *out, NULL, NULL, nc, t);
	return 0;
}

/* A target a reload removed, on its way out (its name still taken). */
struct removed_target {
	struct scsitgtd *d;
	char name[];
};

/* The removed target is gone. A reload that brought it back meanwhile could not create it
 * (scsitgt_target_create: the name was still taken, "File exists"); the configuration
 * applied by now has the last word: create it as that says. */
static void target_gone(void *arg, int status)
{
	struct removed_target *r = arg;
	struct scsitgtd *d = r->d;
	const struct scsitgtd_target *t = NULL;
	struct scsitgtd_tgt *slot;

	(void)status;
	if (!d->stopping && d->cfg)
		t = scsitgtd_config_find_target(d->cfg, r->name);
	if (t) {
		slot = &d->tgts[t - d->cfg->targets];
		if (slot->tgt == NULL && scsitgtd_target_create(d, d->cfg, t, slot) == 0)
			scsitgtd_srps_apply(d, slot->tgt, NULL, NULL, t, slot->srps);
	}
	free(r);
}

/* Destroy a target the configuration no longer has (after its gateway, if it has one). */
void scsitgtd_target_destroy_removed(struct scsitgtd *d, struct scsitgt_target *tgt)
{
	const char *name = scsitgt_target_get_name(tgt);
	size_t len = strlen(name) + 1;
	struct removed_target *r = malloc(sizeof(*r) + len);

	if (r) {
		r->d = d;
		memcpy(r->name, name, len);
	} else {
		scsitgtd_log(d, SCSITGT_LOG_ERROR,
			     "target %s: out of memory: a reload that brings it back before it is "
			     "gone will not create it",
			     name);
	}
	scsitgt_target_destroy(tgt, r ? target_gone : NULL, r);
}
