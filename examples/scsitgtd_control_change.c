/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's control methods that change the daemon's state (scsitgtd_control.c serves them):
 * kick, reload, and the runtime changes (add/remove a LUN, an initiator, an address), each
 * made on a copy of the configuration applied as a reload; and save, which writes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "scsitgtd_control_int.h"

/* ---- kick ---- */

struct kick_walk {
	const char *port;
	int rc;
	bool found;
};

static int kick_visit(void *arg, const struct scsitgt_session_stats *s)
{
	struct kick_walk *w = arg;

	/* iSCSI names compare case-insensitively (RFC 7143 §4.2.7.1); so do their ports. */
	if (strcasecmp(s->initiator_port, w->port) != 0)
		return 0;
	w->found = true;
	w->rc = scsitgt_session_kick(s->session);
	return 1;
}

void ctl_kick(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	const struct scsitgtd_target *t;
	struct scsitgt_target *tgt = param_target(d, params, &t, r);
	struct kick_walk w = { 0 };

	if (tgt == NULL || (w.port = param_str(params, "initiator_port", r)) == NULL)
		return;
	scsitgt_target_foreach_session(tgt, kick_visit, &w);
	if (!w.found) {
		rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "no session of %s on %s", w.port,
			  scsitgt_target_get_name(tgt));
		return;
	}
	if (w.rc < 0) {
		rpc_error(r, SCSITGTD_RPC_FAILED, "kick %s: %s", w.port, scsitgt_strerror(w.rc));
		return;
	}
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: kicked %s from %s", w.port,
		     scsitgt_target_get_name(tgt));
	r->result = json_object_new_object();
	json_object_object_add(r->result, "kicked", jstr(w.port));
}

/* ---- reload ---- */

void ctl_reload(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	char err[SCSITGTD_ERR_SIZE];
	int rc;

	(void)params;
	rc = scsitgtd_reload(d, err, sizeof(err));
	if (rc < 0) {
		rpc_error(r,
			  rc == -EINVAL ? SCSITGTD_RPC_CONFIG_INVALID : SCSITGTD_RPC_INTERNAL_ERROR,
			  "%s", err);
		return;
	}
	if (r->conn && scsitgtd_luns_opening(d)) {
		/* Its RBD images open off the loop: answer once they have (lun_settled()). */
		r->deferred = true;
		r->wait_reload = true;
		return;
	}
	ctl_reload_answer(d, r);
}

/* A LUN of the file that does not run, into arg[0] (failed, with why) or arg[1] (opening). */
static void unserved_lun(void *arg, const struct scsitgtd_target *t, const struct scsitgtd_lun *l,
			 enum scsitgtd_lun_run s, const char *why)
{
	json_object **a = arg, *o = json_object_new_object();

	json_object_object_add(o, "target", jstr(t->name));
	json_object_object_add(o, "id", ju64(l->id));
	if (why)
		json_object_object_add(o, "error", jstr(why));
	json_object_array_add(a[s == SCSITGTD_LUN_OPENING], o);
}

void ctl_reload_answer(struct scsitgtd *d, struct rpc_reply *r)
{
	json_object *a[2] = { json_object_new_array(), json_object_new_array() };

	r->result = json_object_new_object();
	json_object_object_add(r->result, "reloaded", jstr(d->path));
	scsitgtd_luns_not_running(d, unserved_lun, a);
	json_object_object_add(r->result, "failed", a[0]);
	if (json_object_array_length(a[1]))
		json_object_object_add(r->result, "opening", a[1]);
	else
		json_object_put(a[1]);
}

/* ---- runtime changes: a copy of the configuration, changed, applied as a reload ---- */

/*
 * Parse "[target]" with @body after it (the file's syntax and checks, scsitgtd_config.c), so
 * that what a request adds is validated exactly as the same lines in the file would be.
 */
static struct scsitgtd_config *parse_snippet(const char *body, struct rpc_reply *r)
{
	struct scsitgtd_config *cfg = NULL;
	char text[SCSITGTD_CONTROL_MAX_REQUEST + 64], err[512];
	const char *msg = err;
	int n = snprintf(text, sizeof(text), "[target]\nname = iqn.2000-01.invalid:request\n%s",
			 body);

	if (n < 0 || (size_t)n >= sizeof(text)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "request too long");
		return NULL;
	}
	if (scsitgtd_config_parse(text, (size_t)n, &cfg, err, sizeof(err)) < 0) {
		/* "line N: what": the line numbers are of the snippet, not useful here. */
		if (!strncmp(err, "line ", 5) && strstr(err, ": "))
			msg = strstr(err, ": ") + 2;
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "%s", msg);
		return NULL;
	}
	return cfg;
}

/* Append "KEY = VALUE\n" to @buf; values are strings, numbers or booleans on one line. */
static bool add_line(char *buf, size_t size, const char *key, json_object *v, struct rpc_reply *r)
{
	size_t len = strlen(buf);
	const char *val;
	int n;

	if (!json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_boolean)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.%s: a string, integer or boolean",
			  key);
		return false;
	}
	val = json_object_is_type(v, json_type_boolean) ?
		      (json_object_get_boolean(v) ? "yes" : "no") :
		      json_object_get_string(v);
	if (strpbrk(key, "\r\n=[]#;") || strpbrk(val, "\r\n") || *key == '\0') {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.%s: one line, no section syntax",
			  key);
		return false;
	}
	n = snprintf(buf + len, size - len, "%s = %s\n", key, val);
	if (n < 0 || (size_t)n >= size - len) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "request too long");
		return false;
	}
	return true;
}

/*
 * Apply @nc (a changed copy of d->cfg; consumed) the way a reload does, once it passes the
 * file's checks across sections (scsitgtd_config_check()): a change the file would refuse (a
 * second LUN on an rbd_gateway target) is refused here too, else the daemon would serve it and
 * `save` would write a file the next start refuses.
 */
static bool apply_copy(struct scsitgtd *d, struct scsitgtd_config *nc, struct rpc_reply *r)
{
	char err[512];
	const char *msg = err;

	if (scsitgtd_config_check(nc, err, sizeof(err)) < 0) {
		scsitgtd_config_free(nc);
		/* "line N: what": the first error, without a line of a file nobody edited. */
		if (!strncmp(err, "line ", 5) && strstr(err, ": "))
			msg = strstr(err, ": ") + 2;
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "%.*s", (int)strcspn(msg, "\n"), msg);
		return false;
	}
	if (scsitgtd_apply(d, nc) < 0) {
		scsitgtd_config_free(nc);
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		return false;
	}
	return true;
}

/* A copy of d->cfg and, in it, the target of params.target. */
static struct scsitgtd_config *copy_for(struct scsitgtd *d, json_object *params,
					struct scsitgtd_target **t, struct rpc_reply *r)
{
	const struct scsitgtd_target *conf;
	struct scsitgtd_config *nc;

	if (param_target(d, params, &conf, r) == NULL)
		return NULL;
	nc = scsitgtd_config_dup(d->cfg);
	if (nc == NULL) {
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		return NULL;
	}
	*t = &nc->targets[conf - d->cfg->targets];
	return nc;
}

static bool param_lun_id(json_object *params, uint64_t *id, struct rpc_reply *r)
{
	json_object *v;

	if (!json_object_object_get_ex(params, "id", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
	    json_object_get_int64(v) > SCSITGTD_MAX_LUN_ID) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.id: a LUN number 0..%d",
			  SCSITGTD_MAX_LUN_ID);
		return false;
	}
	*id = (uint64_t)json_object_get_int64(v);
	return true;
}

static void changed(struct rpc_reply *r, const char *what, const char *target)
{
	r->result = json_object_new_object();
	json_object_object_add(r->result, "changed", jstr(what));
	json_object_object_add(r->result, "target", jstr(target));
}

/* Remove LUN @id of target @tname from a copy of the configuration and apply it. */
bool ctl_lun_drop(struct scsitgtd *d, const char *tname, uint64_t id, struct rpc_reply *r)
{
	struct scsitgtd_config *nc = scsitgtd_config_dup(d->cfg);
	struct scsitgtd_target *t;
	struct scsitgtd_lun *l;

	if (nc == NULL) {
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		return false;
	}
	t = (struct scsitgtd_target *)scsitgtd_config_find_target(nc, tname);
	l = t ? (struct scsitgtd_lun *)scsitgtd_config_find_lun(t, id) : NULL;
	if (l == NULL) {
		scsitgtd_config_free(nc);
		rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "%s has no LUN %llu", tname,
			  (unsigned long long)id);
		return false;
	}
	scsitgtd_lun_clear(l);
	memmove(l, l + 1, (size_t)(t->luns + t->nluns - (l + 1)) * sizeof(*l));
	t->nluns--;
	return apply_copy(d, nc, r);
}

void ctl_remove_lun(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	const struct scsitgtd_target *conf;
	char what[64], tname[256];
	uint64_t id;

	if (!param_lun_id(params, &id, r) || param_target(d, params, &conf, r) == NULL)
		return;
	snprintf(tname, sizeof(tname), "%s", conf->name);
	if (!ctl_lun_drop(d, tname, id, r))
		return;
	snprintf(what, sizeof(what), "lun %llu removed", (unsigned long long)id);
	changed(r, what, tname);
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: %s: LUN %llu removed", tname,
		     (unsigned long long)id);
}

/*
 * add_initiator / remove_initiator / add_address / remove_address: the target's "initiator =",
 * "address =" and "initiator_address =" lines, checked by the parser as in the file.
 */
static void acl_change(struct scsitgtd *d, json_object *params, struct rpc_reply *r, bool add,
		       bool address)
{
	struct scsitgtd_config *nc, *snip = NULL;
	struct scsitgtd_target *t, *st;
	json_object *ini = NULL, *cidr = NULL;
	char body[1024], what[600];
	bool ok;

	if (address) {
		if (!json_object_object_get_ex(params, "cidr", &cidr) ||
		    (json_object_object_get_ex(params, "initiator", &ini) && ini == NULL)) {
			rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.cidr: required");
			return;
		}
	} else if (!json_object_object_get_ex(params, "initiator", &ini)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.initiator: required");
		return;
	}
	if ((nc = copy_for(d, params, &t, r)) == NULL)
		return;
	body[0] = '\0';
	if (address && ini) {
		char v[600];

		if (!json_object_is_type(ini, json_type_string) ||
		    !json_object_is_type(cidr, json_type_string)) {
			rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params: strings required");
			goto out;
		}
		snprintf(v, sizeof(v), "%.250s %.250s", json_object_get_string(ini),
			 json_object_get_string(cidr));
		json_object *jv = json_object_new_string(v);

		ok = add_line(body, sizeof(body), "initiator_address", jv, r);
		json_object_put(jv);
	} else {
		ok = add_line(body, sizeof(body), address ? "address" : "initiator",
			      address ? cidr : ini, r);
	}
	if (!ok || (snip = parse_snippet(body, r)) == NULL)
		goto out;
	st = &snip->targets[0];
	if (!address) {
		const char *name = st->initiators[0];
		size_t i;

		for (i = 0; i < t->ninitiators && strcasecmp(t->initiators[i], name); i++)
			;
		if (add && i < t->ninitiators) {
			rpc_error(r, SCSITGTD_RPC_EXISTS, "%s is in the list already", name);
			goto out;
		}
		if (!add && i == t->ninitiators) {
			rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "%s is not in the list", name);
			goto out;
		}
		if (add) {
			char **a = realloc(t->initiators, (t->ninitiators + 1) * sizeof(*a));

			if (a == NULL)
				goto nomem;
			t->initiators = a;
			a[t->ninitiators++] = st->initiators[0];
			st->ninitiators = 0;
		} else {
			free(t->initiators[i]);
			memmove(&t->initiators[i], &t->initiators[i + 1],
				(t->ninitiators - i - 1) * sizeof(*t->initiators));
			t->ninitiators--;
		}
		snprintf(what, sizeof(what), "initiator %s %s", name, add ? "added" : "removed");
	} else {
		const struct scsitgtd_address *sa = &st->addresses[0];
		const struct scsitgtd_address *have =
			scsitgtd_config_find_address(t, sa->initiator, sa->cidr);

		if (add && have) {
			rpc_error(r, SCSITGTD_RPC_EXISTS, "address %s is in the list already",
				  sa->cidr);
			goto out;
		}
		if (!add && have == NULL) {
			rpc_error(r, SCSITGTD_RPC_NOT_FOUND, "address %s is not in the list",
				  sa->cidr);
			goto out;
		}
		snprintf(what, sizeof(what), "address %s%s%s %s",
			 sa->initiator ? sa->initiator : "", sa->initiator ? " " : "", sa->cidr,
			 add ? "added" : "removed");
		if (add) {
			struct scsitgtd_address *a =
				realloc(t->addresses, (t->naddresses + 1) * sizeof(*a));

			if (a == NULL)
				goto nomem;
			t->addresses = a;
			a[t->naddresses++] = st->addresses[0];
			st->naddresses = 0;
		} else {
			size_t i = (size_t)(have - t->addresses);

			free(t->addresses[i].initiator);
			free(t->addresses[i].cidr);
			memmove(&t->addresses[i], &t->addresses[i + 1],
				(t->naddresses - i - 1) * sizeof(*t->addresses));
			t->naddresses--;
		}
	}
	{
		char tname[256];

		snprintf(tname, sizeof(tname), "%s", t->name);
		ok = apply_copy(d, nc, r);
		nc = NULL;
		if (ok) {
			changed(r, what, tname);
			scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: %s: %s", tname, what);
		}
	}
	goto out;
nomem:
	rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
out:
	scsitgtd_config_free(snip);
	scsitgtd_config_free(nc);
}

void ctl_add_initiator(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, true, false);
}

void ctl_remove_initiator(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, false, false);
}

void ctl_add_address(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, true, true);
}

void ctl_remove_address(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	acl_change(d, params, r, false, true);
}

/* Whether the running configuration has LUN @id of @tname. */
bool ctl_lun_configured(struct scsitgtd *d, const char *tname, uint64_t id)
{
	const struct scsitgtd_target *t = scsitgtd_config_find_target(d->cfg, tname);

	return t && scsitgtd_config_find_lun(t, id);
}

/*
 * The answer to add_lun of LUN @id of @tname once it was applied: added, still opening (its
 * RBD image), or not created (then taken out again if @drop, as if never asked, with the
 * reason).
 */
void ctl_add_lun_answer(struct scsitgtd *d, const char *tname, uint64_t id, bool drop,
			struct rpc_reply *r)
{
	struct scsitgt_target *tgt = scsitgt_engine_find_target(d->engine, tname);
	const char *why = scsitgtd_lun_failure(d, tname, id);
	char what[96], reason[600];

	if (tgt && scsitgt_target_get_lun(tgt, id)) {
		snprintf(what, sizeof(what), "lun %llu added", (unsigned long long)id);
		changed(r, what, tname);
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: %s: LUN %llu added", tname,
			     (unsigned long long)id);
	} else if (scsitgtd_lun_opening(d, tname, id)) {
		snprintf(what, sizeof(what), "lun %llu added, its image still opening",
			 (unsigned long long)id);
		changed(r, what, tname);
		json_object_object_add(r->result, "opening", json_object_new_boolean(1));
		scsitgtd_log(d, SCSITGT_LOG_NOTICE,
			     "control: %s: LUN %llu added, its image still opening", tname,
			     (unsigned long long)id);
	} else {
		/* The reason before ctl_lun_drop(), which applies a configuration again. */
		snprintf(reason, sizeof(reason), "%s",
			 why ? why : "the configuration changed while its image opened");
		if (drop && ctl_lun_configured(d, tname, id))
			ctl_lun_drop(d, tname, id, r);
		rpc_error(r, SCSITGTD_RPC_FAILED, "LUN %llu: not created: %s",
			  (unsigned long long)id, reason);
		json_object_put(r->result);
		r->result = NULL;
	}
}

void ctl_add_lun(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	static char body[SCSITGTD_CONTROL_MAX_REQUEST];
	struct scsitgtd_config *nc, *snip;
	struct scsitgtd_target *t;
	struct scsitgtd_lun *l;
	struct scsitgt_target *tgt;
	uint64_t id;

	if (!param_lun_id(params, &id, r) || (nc = copy_for(d, params, &t, r)) == NULL)
		return;
	if (scsitgtd_config_find_lun(t, id)) {
		rpc_error(r, SCSITGTD_RPC_EXISTS, "%s has a LUN %llu", t->name,
			  (unsigned long long)id);
		scsitgtd_config_free(nc);
		return;
	}
	/* Every other member is a key of [lun N]. */
	snprintf(body, sizeof(body), "[lun %llu]\n", (unsigned long long)id);
	json_object_object_foreach(params, key, v)
	{
		if (strcmp(key, "target") && strcmp(key, "id") &&
		    !add_line(body, sizeof(body), key, v, r)) {
			scsitgtd_config_free(nc);
			return;
		}
	}
	snip = parse_snippet(body, r);
	if (snip == NULL) {
		scsitgtd_config_free(nc);
		return;
	}
	l = &snip->targets[0].luns[0];
	if (l->fault && scsitgtd_fault_spec_check(l->fault) < 0) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS,
			  "fault: \"%s\" is not a fault specification", l->fault);
		goto out;
	}
	l = realloc(t->luns, (t->nluns + 1) * sizeof(*t->luns));
	if (l == NULL) {
		rpc_error(r, SCSITGTD_RPC_INTERNAL_ERROR, "out of memory");
		goto out;
	}
	/* The LUN moves from the snippet to the copy. */
	t->luns = l;
	t->luns[t->nluns++] = snip->targets[0].luns[0];
	snip->targets[0].nluns = 0;
	if (!apply_copy(d, nc, r)) {
		nc = NULL;
		goto out;
	}
	nc = NULL;
	tgt = scsitgt_engine_find_target(d->engine, t->name);
	if (tgt && !scsitgt_target_get_lun(tgt, id) && scsitgtd_lun_opening(d, t->name, id) &&
	    r->conn) {
		/* Its RBD image opens off the loop: answer once it has (lun_settled()). */
		r->deferred = true;
		r->wait_lun = id;
		snprintf(r->wait_tname, sizeof(r->wait_tname), "%s", t->name);
		goto out;
	}
	ctl_add_lun_answer(d, t->name, id, true, r);
out:
	scsitgtd_config_free(snip);
	scsitgtd_config_free(nc);
}
/* ---- save ---- */
#ifndef SCSITGTD_CONTROL_NO_SAVE

/*
 * Write the running configuration (with the runtime changes) to params.file, as INI that
 * scsitgtd reads back to the same state. The file may hold CHAP secrets: it is made 0600,
 * written beside and renamed over, so a reader never sees half of it.
 */
void ctl_save(struct scsitgtd *d, json_object *params, struct rpc_reply *r)
{
	const char *file = param_str(params, "file", r);
	char tmp[4096];
	FILE *f;
	int fd, rc;

	if (file == NULL)
		return;
	if (file[0] != '/') {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS,
			  "params.file: an absolute path (the "
			  "daemon's working directory is not the client's)");
		return;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", file) >= sizeof(tmp)) {
		rpc_error(r, SCSITGTD_RPC_INVALID_PARAMS, "params.file: too long");
		return;
	}
	fd = mkstemp(tmp); /* mode 0600 */
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		rpc_error(r, SCSITGTD_RPC_FAILED, "%s: %s", file, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return;
	}
	rc = scsitgtd_config_write(d->cfg, f);
	if (fflush(f) != 0 || fsync(fd) != 0)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	if (rc < 0 || rename(tmp, file) < 0) {
		rpc_error(r, SCSITGTD_RPC_FAILED, "%s: %s", file, strerror(errno));
		unlink(tmp);
		return;
	}
	scsitgtd_log(d, SCSITGT_LOG_NOTICE, "control: configuration saved to %s", file);
	r->result = json_object_new_object();
	json_object_object_add(r->result, "saved", jstr(file));
}
#endif
