/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alua.h"
#include "core/core.h"
#include "core/fabric.h"

SCSITGT_EXPORT void scsitgt_target_opts_init(struct scsitgt_target_opts *opts, size_t size)
{
	struct scsitgt_target_opts def = {
		.size = sizeof(def),
		.max_sessions = 256,
		.max_lun_commands = 1024,
		.max_read_buffer_bytes = 256ull << 20,
	};

	if (opts == NULL || size == 0)
		return;
	if (size > sizeof(def)) {
		memset(opts, 0, size);
		size = sizeof(def);
	}
	def.size = size;
	memcpy(opts, &def, size);
}

/*
 * RFC 7143 §4.2.7.2: names use a-z, 0-9, '-', '.' and ':' (upper case folds to lower), at
 * most 223 bytes. 0 when @name is one, else -EINVAL and a log line saying why.
 */
static int target_name_check(const struct scsitgt__logger *lg, const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (name == NULL)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_target_create: name is NULL: a target needs "
					    "a name (iqn., eui. or naa.)");
	if (len == 0 || len > 223)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_target_create: name \"%.64s%s\": %zu bytes, "
					    "not 1..223 (RFC 7143 §4.2.7.2)",
					    name, len > 64 ? "..." : "", len);
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '.' || c == ':'))
			return scsitgt__log_refused(
				lg, "core", -EINVAL,
				"scsitgt_target_create: name \"%s\": byte %zu (0x%02x) is not one of "
				"a-z, 0-9, '-', '.', ':' (RFC 7143 §4.2.7.2)",
				name, i, (unsigned)(unsigned char)c);
	}
	return 0;
}

static bool name_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/*
 * Whether a name whose characters passed target_name_check() also has one of the three
 * formats of RFC 7143 §4.2.7.3-4.2.7.5 (compared case-insensitively, as names are): NULL if
 * so, else the rule it misses. Only warned about (scsitgt_target_create()).
 */
static const char *target_name_format(const char *name)
{
	size_t len = strlen(name);
	const char *p;

	if (strncasecmp(name, "eui.", 4) == 0)
		return len == 20 && name_hex(name + 4, 16) ?
			       NULL :
			       "\"eui.\" is followed by exactly 16 hex digits (RFC 7143 §4.2.7.4)";
	if (strncasecmp(name, "naa.", 4) == 0)
		return (len == 20 || len == 36) && name_hex(name + 4, len - 4) ?
			       NULL :
			       "\"naa.\" is followed by 16 or 32 hex digits (RFC 7143 §4.2.7.5)";
	if (strncasecmp(name, "iqn.", 4) != 0)
		return "it starts with none of \"iqn.\", \"eui.\", \"naa.\" (RFC 7143 §4.2.7.1)";
	/* iqn.yyyy-mm.reversed.domain[:anything] */
	p = name + 4;
	if (!(isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
	      isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) && p[4] == '-' &&
	      isdigit((unsigned char)p[5]) && isdigit((unsigned char)p[6]) &&
	      ((p[5] == '0' && p[6] != '0') || (p[5] == '1' && p[6] <= '2')) && p[7] == '.'))
		return "\"iqn.\" is followed by a date yyyy-mm and '.' (RFC 7143 §4.2.7.3)";
	p += 8;
	/* The naming authority: labels of a-z, 0-9 and '-', joined by '.', up to ':' or the end. */
	for (bool label = false;; p++) {
		if (*p == '\0' || *p == ':' || *p == '.') {
			if (!label)
				return "\"iqn.yyyy-mm.\" is followed by a reversed domain name, labels "
				       "joined by '.' (RFC 7143 §4.2.7.3)";
			if (*p != '.')
				break;
			label = false;
		} else {
			label = true;
		}
	}
	return NULL;
}

SCSITGT_EXPORT int scsitgt_target_create(struct scsitgt_target **out, struct scsitgt_engine *engine,
					 const struct scsitgt_target_opts *opts)
{
	struct scsitgt_target_opts o;
	struct scsitgt_target *tgt;
	const char *why;

	SCSITGT__ASSERT_HOME(engine);
	if (engine == NULL)
		return -EINVAL;
	if (out == NULL || opts == NULL)
		return scsitgt__log_refused(&engine->log, "core", -EINVAL,
					    "scsitgt_target_create: %s is NULL",
					    out == NULL ? "out" : "opts");
	if (opts->size == 0)
		return scsitgt__log_refused(&engine->log, "core", -EINVAL,
					    "scsitgt_target_create: opts size 0 (initialise the "
					    "options with scsitgt_target_opts_init())");
	if (engine->destroying)
		return scsitgt__log_refused(&engine->log, "core", -EINVAL,
					    "scsitgt_target_create: the engine is being destroyed");
	scsitgt_target_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	if (target_name_check(&engine->log, o.name) < 0)
		return -EINVAL;
	if (o.alias && strlen(o.alias) > 255)
		return scsitgt__log_refused(
			&engine->log, "core", -EINVAL,
			"scsitgt_target_create: %s: alias of %zu bytes, above 255", o.name,
			strlen(o.alias));
	if (scsitgt__engine_find_target(engine, o.name))
		return scsitgt__log_refused(
			&engine->log, "core", -EEXIST,
			"scsitgt_target_create: name \"%s\": the engine has a "
			"target of that name (names compare case-insensitively)",
			o.name);

	tgt = calloc(1, sizeof(*tgt));
	if (tgt == NULL)
		return -ENOMEM;
	if (uv_mutex_init(&tgt->alua_lock) != 0) {
		free(tgt);
		return -ENOMEM;
	}
	/* a new nexus caches generation 0: its first command looks up its group */
	atomic_init(&tgt->alua_gen, 1);
	tgt->engine = engine;
	tgt->gen = ++engine->targets_made;
	tgt->name = strdup(o.name);
	tgt->alias = o.alias ? strdup(o.alias) : NULL;
	if (tgt->name == NULL || (o.alias && tgt->alias == NULL)) {
		uv_mutex_destroy(&tgt->alua_lock);
		free(tgt->name);
		free(tgt->alias);
		free(tgt);
		return -ENOMEM;
	}
	scsitgt__list_init(&tgt->sessions);
	scsitgt__list_init(&tgt->acl);
	tgt->max_sessions = o.max_sessions;
	tgt->max_lun_commands = o.max_lun_commands;
	tgt->max_read_buffer_bytes = o.max_read_buffer_bytes;
	/* a login on a worker looks targets up (engine->cfg_lock). */
	scsitgt__cfg_wrlock(engine);
	scsitgt__list_add_tail(&engine->targets, &tgt->node);
	scsitgt__cfg_wrunlock(engine);
	/* Not refused: hosts use names such as "iqn.x" today, and initiators accept them. */
	why = target_name_format(tgt->name);
	if (why)
		scsitgt__log(&engine->log, SCSITGT_LOG_WARNING, "core",
			     "scsitgt_target_create: name \"%s\" is not an iSCSI name: %s; strict "
			     "initiators may refuse it",
			     tgt->name, why);
	*out = tgt;
	return 0;
}

static void target_destroy_step(struct scsitgt_target *tgt);

static void target_free(struct scsitgt__deferred *d)
{
	struct scsitgt_target *tgt = scsitgt__container_of(d, struct scsitgt_target, destroy_done);
	scsitgt_done_cb cb = tgt->destroy_cb;
	void *cb_arg = tgt->destroy_cb_arg;
	scsitgt_done_cb engine_cb = tgt->engine_cb;
	void *engine_cb_arg = tgt->engine_cb_arg;

	scsitgt__acl_free(tgt);
	for (int i = 0; i < SCSITGT__EXT_COUNT_; i++)
		if (tgt->ext[i].destroy)
			tgt->ext[i].destroy(tgt->ext[i].data);
	scsitgt__alua_free(tgt);
	uv_mutex_destroy(&tgt->alua_lock);
	free(tgt->luns);
	/* No session is left to read it. */
	free(atomic_load_explicit(&tgt->lun_table, memory_order_relaxed));
	free(tgt->name);
	free(tgt->alias);
	free(tgt);
	if (cb)
		cb(cb_arg, 0);
	if (engine_cb)
		engine_cb(engine_cb_arg, 0);
}

static void target_lun_done(void *arg, int status)
{
	struct scsitgt_target *tgt = arg;

	(void)status;
	if (--tgt->destroy_pending == 0)
		target_destroy_step(tgt);
}

/* Once the sessions are gone, destroy the LUNs, then free the target (deferred). */
static void target_destroy_step(struct scsitgt_target *tgt)
{
	if (!scsitgt__list_empty(&tgt->sessions) || tgt->xholds)
		return;
	if (tgt->nluns) {
		tgt->destroy_pending = (unsigned int)tgt->nluns;
		/* scsitgt_lun_destroy removes the LUN from the table; take from the end. */
		while (tgt->nluns)
			scsitgt_lun_destroy(tgt->luns[tgt->nluns - 1], target_lun_done, tgt);
		return;
	}
	/* Already scheduled: a session that ends inside scsitgt_target_destroy() gets here
	 * once from scsitgt__target_session_gone() and once more from the destroy itself. */
	if (tgt->destroy_pending || tgt->destroy_done.fn)
		return;
	/* An event a worker posted still names it: the last one delivered comes back here.
	 * Under the write lock: a worker that found the target under the read lock has taken
	 * its reference by now, and none finds it once it is out of the list. */
	scsitgt__cfg_wrlock(tgt->engine);
	if (atomic_load_explicit(&tgt->ev_refs, memory_order_acquire)) {
		scsitgt__cfg_wrunlock(tgt->engine);
		return;
	}
	scsitgt__list_remove(&tgt->node);
	scsitgt__cfg_wrunlock(tgt->engine);
	tgt->destroy_done.fn = target_free;
	scsitgt__engine_defer(tgt->engine, &tgt->destroy_done);
}

void scsitgt__target_session_gone(struct scsitgt_target *tgt)
{
	if (tgt->destroying && tgt->destroy_pending == 0)
		target_destroy_step(tgt);
}

void scsitgt__target_hold(struct scsitgt_target *tgt)
{
	tgt->xholds++;
}

void scsitgt__target_unhold(struct scsitgt_target *tgt)
{
	if (--tgt->xholds == 0)
		scsitgt__target_session_gone(tgt);
}

void scsitgt__target_event_ref(struct scsitgt_target *tgt)
{
	atomic_fetch_add_explicit(&tgt->ev_refs, 1, memory_order_relaxed);
}

void scsitgt__target_event_unref(struct scsitgt_target *tgt)
{
	if (atomic_fetch_sub_explicit(&tgt->ev_refs, 1, memory_order_acq_rel) == 1)
		scsitgt__target_session_gone(tgt);
}

SCSITGT_EXPORT void scsitgt_target_destroy(struct scsitgt_target *tgt, scsitgt_done_cb cb,
					   void *cb_arg)
{
	struct scsitgt__list *pos, *tmp;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL || tgt->destroying)
		return;
	scsitgt__cfg_wrlock(tgt->engine);
	tgt->destroying = true;
	scsitgt__cfg_wrunlock(tgt->engine);
	tgt->destroy_cb = cb;
	tgt->destroy_cb_arg = cb_arg;
	scsitgt__list_foreach_safe(pos, tmp, &tgt->sessions)
	{
		struct scsitgt__session *s =
			scsitgt__container_of(pos, struct scsitgt__session, node);

		/* one on its way out already is waited for as it is. */
		if (!atomic_load(&s->leaving))
			s->ops->session_shutdown(s);
	}
	target_destroy_step(tgt);
}

void scsitgt__target_destroy_engine(struct scsitgt_target *tgt, scsitgt_done_cb cb, void *arg)
{
	/* A host's destroy still waiting for sessions, LUNs or a gateway keeps the target in
	 * the engine's list; a second scsitgt_target_destroy() would return at once without a
	 * callback, and the engine would wait for ever. */
	if (tgt->destroying) {
		tgt->engine_cb = cb;
		tgt->engine_cb_arg = arg;
		return;
	}
	scsitgt_target_destroy(tgt, cb, arg);
}

SCSITGT_EXPORT const char *scsitgt_target_get_name(const struct scsitgt_target *tgt)
{
	return tgt ? tgt->name : NULL;
}

/* The initiator list, address ranges and LUN masking are in acl.c. */

/* Index of the first of the @n LUNs @luns (sorted by id) with id >= @id. */
static size_t lun_index(struct scsitgt_lun *const *luns, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (luns[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static size_t target_lun_index(const struct scsitgt_target *tgt, uint64_t id)
{
	return lun_index(tgt->luns, tgt->nluns, id);
}

struct scsitgt_lun *scsitgt__target_find_lun(const struct scsitgt_target *tgt, uint64_t id)
{
	/* acquire: the LUNs it names are initialised (published with release). */
	const struct scsitgt__lun_table *t =
		atomic_load_explicit(&tgt->lun_table, memory_order_acquire);
	size_t i = t ? lun_index(t->luns, t->n, id) : 0;

	return t && i < t->n && t->luns[i]->id == id ? t->luns[i] : NULL;
}

/*
 * Publish tgt->luns as it is now for lookups from every shard; the copy it replaces is freed
 * once no worker shard can still be reading it. Without memory for the copy, no LUN is
 * published until the next change (lookups find none) rather than a stale one.
 */
static void target_publish_luns(struct scsitgt_target *tgt)
{
	struct scsitgt__lun_table *t = malloc(sizeof(*t) + tgt->nluns * sizeof(t->luns[0]));
	struct scsitgt__lun_table *old;

	if (t) {
		t->n = tgt->nluns;
		memcpy(t->luns, tgt->luns, tgt->nluns * sizeof(t->luns[0]));
	}
	old = atomic_exchange_explicit(&tgt->lun_table, t, memory_order_acq_rel);
	if (old && !scsitgt__shards_sync(tgt->engine, free, old))
		scsitgt__log(&tgt->engine->log, SCSITGT_LOG_WARNING, "core",
			     "out of memory: a LUN table of %zu bytes is left behind",
			     sizeof(*old) + old->n * sizeof(old->luns[0]));
}

SCSITGT_EXPORT int scsitgt_target_foreach_lun(struct scsitgt_target *tgt, scsitgt_lun_visit_cb cb,
					      void *arg)
{
	size_t i;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (cb == NULL)
		return scsitgt__log_refused(&tgt->engine->log, "core", -EINVAL,
					    "scsitgt_target_foreach_lun: target %s: cb is NULL",
					    tgt->name);
	/* By LUN number, looked up again after each visit: the visitor may change the array. */
	for (i = 0; i < tgt->nluns;) {
		struct scsitgt_lun *lun = tgt->luns[i];
		uint64_t id = lun->id;
		int rc;

		if (!lun->drain.destroying) {
			rc = cb(arg, lun);
			if (rc != 0)
				return rc;
		}
		if (id == UINT64_MAX)
			break;
		i = target_lun_index(tgt, id + 1);
	}
	return 0;
}

int scsitgt__target_insert_lun(struct scsitgt_target *tgt, struct scsitgt_lun *lun)
{
	size_t i = target_lun_index(tgt, lun->id);

	if (i < tgt->nluns && tgt->luns[i]->id == lun->id)
		return -EEXIST;
	if (tgt->nluns == tgt->luns_cap) {
		size_t cap = tgt->luns_cap ? tgt->luns_cap * 2 : 8;
		struct scsitgt_lun **n = realloc(tgt->luns, cap * sizeof(*n));

		if (n == NULL)
			return -ENOMEM;
		tgt->luns = n;
		tgt->luns_cap = cap;
	}
	memmove(&tgt->luns[i + 1], &tgt->luns[i], (tgt->nluns - i) * sizeof(*tgt->luns));
	tgt->luns[i] = lun;
	tgt->nluns++;
	target_publish_luns(tgt);
	return 0;
}

void scsitgt__target_lun_removed(struct scsitgt_target *tgt, struct scsitgt_lun *lun)
{
	size_t i = target_lun_index(tgt, lun->id);

	if (i < tgt->nluns && tgt->luns[i] == lun) {
		memmove(&tgt->luns[i], &tgt->luns[i + 1],
			(tgt->nluns - i - 1) * sizeof(*tgt->luns));
		tgt->nluns--;
		target_publish_luns(tgt);
	}
}

SCSITGT_EXPORT void scsitgt_target_set_userdata(struct scsitgt_target *tgt, void *userdata)
{
	if (tgt)
		tgt->userdata = userdata;
}

SCSITGT_EXPORT void *scsitgt_target_get_userdata(const struct scsitgt_target *tgt)
{
	return tgt ? tgt->userdata : NULL;
}
