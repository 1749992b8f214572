/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/fabric.h"
#include "core/order.h"
#include "core/pr.h"
#include "core/stats.h"
#include "core/ua.h"
#include "core/sbc.h"
#include "core/spc.h"
#include "core/spc_selftest.h"
#include "util/be.h"

#define STR_(x) #x
#define STR(x) STR_(x)

SCSITGT_EXPORT void scsitgt_lun_opts_init(struct scsitgt_lun_opts *opts, size_t size)
{
	struct scsitgt_lun_opts def = { .size = sizeof(def) };

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
 * SPC-5 §6.7.2: identification fields are left-aligned ASCII padded with spaces. A refused
 * @field of LUN @id is logged through @lg.
 */
static int lun_copy_ascii(const struct scsitgt__logger *lg, uint64_t id, const char *field,
			  char *dst, size_t cap, const char *src, const char *def)
{
	const char *s = src ? src : def;
	size_t len = strlen(s);

	if (len + 1 > cap)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_lun_create: LUN %llu: %s \"%s\": %zu bytes, "
					    "above %zu (SPC-5 §6.7.2)",
					    (unsigned long long)id, field, s, len, cap - 1);
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return scsitgt__log_refused(lg, "core", -EINVAL,
						    "scsitgt_lun_create: LUN %llu: %s \"%s\": byte "
						    "%zu (0x%02x) is not printable ASCII (SPC-5 "
						    "§4.3.1)",
						    (unsigned long long)id, field, s, i,
						    (unsigned)(unsigned char)s[i]);
	memcpy(dst, s, len + 1);
	return 0;
}

/* FNV-1a, to derive stable default designators from the target name and LUN id. */
static uint64_t lun_hash(const char *name, uint64_t id)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *p = name; *p; p++) {
		h ^= (uint8_t)*p;
		h *= 0x100000001b3ull;
	}
	for (int i = 0; i < 8; i++) {
		h ^= (uint8_t)(id >> (8 * i));
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The LUN's parts, one per shard of @engine, each on its own cache lines. */
static void lun_part_limit(struct scsitgt__lun_part *part, uint32_t max, unsigned int nshards);

static struct scsitgt__lun_part *lun_parts_alloc(struct scsitgt_lun *lun,
						 const struct scsitgt_target *tgt)
{
	struct scsitgt_engine *engine = tgt->engine;
	size_t bytes = engine->nshards * sizeof(struct scsitgt__lun_part);
	struct scsitgt__lun_part *parts = aligned_alloc(_Alignof(struct scsitgt__lun_part), bytes);

	if (parts == NULL)
		return NULL;
	memset(parts, 0, bytes);
	for (unsigned int i = 0; i < engine->nshards; i++) {
		parts[i].lun = lun;
		parts[i].shard = &engine->shards[i];
		scsitgt__list_init(&parts[i].ios);
		lun_part_limit(&parts[i], tgt->max_lun_commands, engine->nshards);
		scsitgt__list_init(&parts[i].rl_ready);
	}
	return parts;
}

SCSITGT_EXPORT int scsitgt_lun_create(struct scsitgt_lun **out, struct scsitgt_target *tgt,
				      const struct scsitgt_lun_opts *opts)
{
	const struct scsitgt__logger *lg;
	struct scsitgt_lun_opts o;
	struct scsitgt_lun *lun;
	size_t ops_size;
	int rc;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	lg = &tgt->engine->log;
	if (out == NULL || opts == NULL)
		return scsitgt__log_refused(lg, "core", -EINVAL, "scsitgt_lun_create: %s is NULL",
					    out == NULL ? "out" : "opts");
	if (opts->size == 0)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_lun_create: opts size 0 (initialise the "
					    "options with scsitgt_lun_opts_init())");
	if (tgt->destroying)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_lun_create: target %s is being destroyed",
					    tgt->name);
	scsitgt_lun_opts_init(&o, sizeof(o));
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	if (o.id > 16383)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_lun_create: LUN %llu: id above 16383 (SAM-5 "
					    "peripheral device addressing)",
					    (unsigned long long)o.id);
	if (o.backend == NULL || o.backend->size == 0)
		return scsitgt__log_refused(
			lg, "core", -EINVAL, "scsitgt_lun_create: LUN %llu: backend %s",
			(unsigned long long)o.id,
			o.backend == NULL ? "is NULL: a LUN needs an ops table" :
					    "table has size 0");
	if (o.block_size != 0 && o.block_size != 512 && o.block_size != 4096)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_lun_create: LUN %llu: block_size %u: not 0 "
					    "(the backend's, else 512), 512 or 4096",
					    (unsigned long long)o.id, o.block_size);
	/* One physical block must fit a WRITE ATOMIC (16) (SCSITGT__SBC_MAX_ATOMIC_BLOCKS). */
	if (o.physical_block_exponent > SCSITGT__LUN_MAX_PBE)
		return scsitgt__log_refused(lg, "core", -EINVAL,
					    "scsitgt_lun_create: LUN %llu: physical_block_exponent "
					    "%u: above %u (a physical block must fit one WRITE "
					    "ATOMIC)",
					    (unsigned long long)o.id, o.physical_block_exponent,
					    (unsigned)SCSITGT__LUN_MAX_PBE);
	if (scsitgt__target_find_lun(tgt, o.id))
		return scsitgt__log_refused(
			lg, "core", -EEXIST,
			"scsitgt_lun_create: LUN %llu: target %s has a LUN %llu",
			(unsigned long long)o.id, tgt->name, (unsigned long long)o.id);

	lun = calloc(1, sizeof(*lun));
	if (lun == NULL)
		return -ENOMEM;
	lun->shard_part = lun_parts_alloc(lun, tgt);
	if (lun->shard_part == NULL) {
		free(lun);
		return -ENOMEM;
	}
	if (uv_mutex_init(&lun->xlock) != 0) {
		free(lun->shard_part);
		free(lun);
		return -ENOMEM;
	}
	ops_size = o.backend->size < sizeof(lun->ops) ? o.backend->size : sizeof(lun->ops);
	memcpy(&lun->ops, o.backend, ops_size);
	lun->ops.size = sizeof(lun->ops);
	rc = -EINVAL;
	if (lun->ops.open == NULL || lun->ops.close == NULL || lun->ops.submit == NULL) {
		scsitgt__log_refused(lg, "core", rc,
				     "scsitgt_lun_create: LUN %llu: backend \"%s\" has no %s() "
				     "(open, close and submit are required)",
				     (unsigned long long)o.id, lun->ops.name ? lun->ops.name : "",
				     lun->ops.open == NULL  ? "open" :
				     lun->ops.close == NULL ? "close" :
							      "submit");
		goto fail;
	}
	/* The default product is the backend's name, cut to the 16 bytes INQUIRY holds. */
	char def_product[17];
	snprintf(def_product, sizeof(def_product), "%s", lun->ops.name ? lun->ops.name : "DISK");
	if (lun_copy_ascii(lg, o.id, "vendor", lun->ident.vendor, sizeof(lun->ident.vendor),
			   o.vendor, "LIBSCSI") ||
	    lun_copy_ascii(lg, o.id, "product", lun->ident.product, sizeof(lun->ident.product),
			   o.product, def_product) ||
	    lun_copy_ascii(lg, o.id, "revision", lun->ident.revision, sizeof(lun->ident.revision),
			   o.revision, STR(SCSITGT_VERSION_MAJOR) "." STR(SCSITGT_VERSION_MINOR)) ||
	    (o.serial && lun_copy_ascii(lg, o.id, "serial", lun->ident.serial,
					sizeof(lun->ident.serial), o.serial, "")))
		goto fail;
	/* The default serial is derived so that it is stable across restarts. */
	if (o.serial == NULL)
		snprintf(lun->ident.serial, sizeof(lun->ident.serial), "%016llx",
			 (unsigned long long)lun_hash(tgt->name, o.id));

	lun->tgt = tgt;
	lun->tgt_gen = tgt->gen;
	lun->engine = tgt->engine;
	lun->id = o.id;
	lun->created_ns = uv_hrtime();
	lun->flags = o.flags;
	lun->bctx = o.backend_ctx;
	/* NAA IEEE Registered (type 5, SPC-5 §7.7.6.6.5): top nibble 5, then 60 bits. */
	lun->ident.naa = (5ull << 60) | ((o.naa ? o.naa : lun_hash(tgt->name, o.id) ^ 0x5a5a) &
					 0x0fffffffffffffffull);
	lun->ident.eui64 = o.eui64;
	if (scsitgt__lun_designators_set(lg, &lun->desig, &o) < 0)
		goto fail;
	lun->medium.present = true;

	lun->geo.size = sizeof(lun->geo);
	lun->geo.block_size = o.block_size;
	lun->geo.num_blocks = o.num_blocks;
	rc = lun->ops.open(lun->bctx, &lun->geo);
	if (rc < 0) {
		/* A backend without a logger (null, RAM, many hosts') says nothing of its own. */
		scsitgt__log_refused(
			lg, "core", rc,
			"scsitgt_lun_create: LUN %llu: backend \"%s\" refused to "
			"open: %s (block_size %u, num_blocks %llu%s)",
			(unsigned long long)o.id, lun->ops.name ? lun->ops.name : "",
			scsitgt_strerror(rc), o.block_size, (unsigned long long)o.num_blocks,
			rc == -EINVAL && o.num_blocks == 0 ? ": 0 asks the backend for its size, "
							     "which the null and RAM backends "
							     "cannot tell" :
							     "");
		goto fail;
	}
	lun->geo.size = sizeof(lun->geo);
	if (lun->geo.block_size == 0)
		lun->geo.block_size = 512;
	rc = -EINVAL;
	if ((lun->geo.block_size != 512 && lun->geo.block_size != 4096) ||
	    lun->geo.num_blocks == 0) {
		scsitgt__log_refused(lg, "core", rc,
				     "scsitgt_lun_create: LUN %llu: backend \"%s\" opened with "
				     "block_size %u, num_blocks %llu: the block size must be 512 "
				     "or 4096, the capacity at least one block",
				     (unsigned long long)o.id, lun->ops.name ? lun->ops.name : "",
				     lun->geo.block_size, (unsigned long long)lun->geo.num_blocks);
		goto fail_close;
	}
	/* The host's LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT wins over the backend's. */
	if (o.physical_block_exponent)
		lun->geo.physical_block_exponent = o.physical_block_exponent;
	for (int t = 0; t <= SCSITGT__IO_TYPE_LAST; t++)
		lun->supports[t] = t <= SCSITGT_IO_WRITE ||
				   (lun->ops.supports && lun->ops.supports(lun->bctx, t));
	rc = -ENOTSUP;
	if ((lun->flags & SCSITGT_LUN_THIN) && !lun->supports[SCSITGT_IO_UNMAP]) {
		scsitgt__log_refused(lg, "core", rc,
				     "scsitgt_lun_create: LUN %llu: flags SCSITGT_LUN_THIN: "
				     "backend \"%s\" does not support UNMAP",
				     (unsigned long long)o.id, lun->ops.name ? lun->ops.name : "");
		goto fail_close;
	}
	rc = scsitgt__lun_limits_settle(lun, &o);
	if (rc < 0)
		goto fail_close;
	/* The write cache is on only where the backend has one to flush (SBC-4 §6.5.4). */
	lun->mode.wce = (lun->flags & SCSITGT_LUN_WRITE_CACHE) &&
			(lun->geo.flags & SCSITGT_GEOMETRY_WRITE_CACHE);
	/* SPC-5 §7.5.10 TAS 1 by default (spc_mode.c): another nexus's reset answers ours. */
	lun->mode.tas = true;
	rc = scsitgt__target_insert_lun(tgt, lun);
	if (rc < 0)
		goto fail_close;
	/* SPC-5 §5.14: the nexuses learn of the new LUN by REPORTED LUNS DATA HAS CHANGED. */
	scsitgt__ua_luns_changed(tgt, lun->id, false);
	*out = lun;
	return 0;

fail_close:
	/* lun.h: on failure backend_ctx stays the caller's, also after open() ran; close()
	 * frees it, so the library must not call it: the caller does. */
	scsitgt__log(&tgt->engine->log, SCSITGT_LOG_WARNING, "core",
		     "LUN %llu: refused after the backend opened (%s); the caller closes it",
		     (unsigned long long)o.id, scsitgt_strerror(rc));
fail:
	uv_mutex_destroy(&lun->xlock);
	free(lun->shard_part);
	free(lun);
	return rc;
}

void scsitgt__lun_xflags_set(struct scsitgt_lun *lun, uint32_t mask, bool on)
{
	/* release: a command that sees the bit sees the state it announces (under xlock). */
	if (on)
		atomic_fetch_or_explicit(&lun->xflags, mask, memory_order_release);
	else
		atomic_fetch_and_explicit(&lun->xflags, ~mask, memory_order_release);
}

bool scsitgt__lun_supports(const struct scsitgt_lun *lun, enum scsitgt_io_type type)
{
	return (unsigned)type <= SCSITGT__IO_TYPE_LAST && lun->supports[type];
}

/*
 * Cross-shard LUN state (issue 18, docs/threading.md "Per-LUN state across shards"): the
 * quiescence rounds of the range lock (core/range_lock.c) and of the task set's barriers
 * (core/order.c), and the start of tasks parked on another loop, reach a shard's loop by its
 * part's message. It carries no news of its own: the owner looks at the state under xlock.
 */
static void lun_xcheck_locked(struct scsitgt_lun *lun, struct scsitgt__lun_part *part)
{
	bool wait = scsitgt__range_quiesce_locked(lun, part);

	if (scsitgt__order_quiesce_locked(lun, part))
		wait = true;
	part->xwait = wait;
}

void scsitgt__lun_xcheck(struct scsitgt_lun *lun, struct scsitgt__lun_part *part)
{
	uv_mutex_lock(&lun->xlock);
	lun_xcheck_locked(lun, part);
	uv_mutex_unlock(&lun->xlock);
	scsitgt__range_run_ready(part);
}

static void lun_xrun(struct scsitgt__lun_part *part)
{
	struct scsitgt_lun *lun = part->lun;

	uv_mutex_lock(&lun->xlock);
	part->xmsg_posted = false;
	lun_xcheck_locked(lun, part);
	uv_mutex_unlock(&lun->xlock);
	scsitgt__range_run_ready(part);
	scsitgt__order_start_ready(lun, part);
	/* The last touch of the LUN: lun_free() waits for it. */
	atomic_fetch_sub_explicit(&lun->xmsgs, 1, memory_order_release);
}

static void lun_xmsg(struct scsitgt__msg *msg)
{
	lun_xrun(scsitgt__container_of(msg, struct scsitgt__lun_part, xmsg));
}

static void lun_xdefer(struct scsitgt__deferred *d)
{
	lun_xrun(scsitgt__container_of(d, struct scsitgt__lun_part, xdefer));
}

void scsitgt__lun_xround(struct scsitgt_lun *lun, struct scsitgt__lun_part *self)
{
	for (unsigned int i = 0; i < lun->engine->nshards; i++)
		if (&lun->shard_part[i] != self)
			scsitgt__lun_xpoke(lun, &lun->shard_part[i]);
}

void scsitgt__lun_xpoke(struct scsitgt_lun *lun, struct scsitgt__lun_part *part)
{
	/* One at a time: the owner looks at the state as it is when the message runs. */
	if (part->xmsg_posted)
		return;
	part->xmsg_posted = true;
	atomic_fetch_add_explicit(&lun->xmsgs, 1, memory_order_relaxed);
	if (lun->engine->nshards == 1) {
		/* No other loop (and no inbox): home pokes itself, from a later iteration. */
		part->xdefer.fn = lun_xdefer;
		scsitgt__shard_defer(part->shard, &part->xdefer);
		return;
	}
	part->xmsg.fn = lun_xmsg;
	scsitgt__shard_post(part->shard, &part->xmsg);
}

static void lun_free(struct scsitgt__deferred *d)
{
	struct scsitgt_lun *lun = scsitgt__container_of(d, struct scsitgt_lun, drain.destroy_done);
	scsitgt_done_cb cb = lun->drain.destroy_cb;
	void *cb_arg = lun->drain.destroy_cb_arg;

	/* A cross-shard message still on its way (its sender's command was the LUN's last):
	 * look again from a later iteration; it runs on its loop meanwhile. */
	if (atomic_load_explicit(&lun->xmsgs, memory_order_acquire)) {
		scsitgt__engine_defer(lun->engine, &lun->drain.destroy_done);
		return;
	}

	/* a zombie's callback ran when its removal timed out (core/drain.c). */
	scsitgt__drain_lun_gone(lun);
	/* entries of commands an engine shutdown gave up, all back before the close */
	scsitgt__range_lock_free(lun);
	scsitgt__pr_free(lun);
	scsitgt__spc_log_free(lun);
	scsitgt__selftest_free(lun);
	for (unsigned int i = 0; i < lun->engine->nshards; i++)
		scsitgt__session_destroy_internal(lun->shard_part[i].bg_sess);
	free(lun->medium.prevent_by);
	uv_mutex_destroy(&lun->xlock);
	free(lun->shard_part);
	free(lun);
	if (cb)
		cb(cb_arg, 0);
}

static void lun_backend_closed(void *arg, int status)
{
	struct scsitgt_lun *lun = arg;

	(void)status;
	lun->drain.destroy_done.fn = lun_free;
	/* The engine, not the target: a zombie LUN outlives its target (core/drain.c). */
	scsitgt__engine_defer(lun->engine, &lun->drain.destroy_done);
}

void scsitgt__lun_close_backend(struct scsitgt_lun *lun)
{
	/* close() never runs while the backend holds ios (backend.h). */
	scsitgt__drain_lun_stop(lun);
	if (lun->drain.closing_started)
		return;
	lun->drain.closing_started = true;
	lun->ops.close(lun->bctx, lun_backend_closed, lun);
}

/* Whether a destroyed LUN has nothing left on any shard: home's part is empty and every
 * worker shard reported its own (lun_part_drain()). Loop: home. */
static bool lun_idle(struct scsitgt_lun *lun)
{
	return lun->drain.parts_pending == 0 &&
	       atomic_load_explicit(&lun->shard_part[0].inflight, memory_order_relaxed) == 0;
}

/* Home: a worker shard's part of a destroyed LUN is empty. */
static void lun_part_drained(struct scsitgt__msg *msg)
{
	struct scsitgt__lun_part *part =
		scsitgt__container_of(msg, struct scsitgt__lun_part, drain_msg);
	struct scsitgt_lun *lun = part->lun;

	lun->drain.parts_pending--;
	/* With ios given up (core/drain.c), the engine's shutdown decides. */
	if (lun_idle(lun) && !lun->drain.orphaning)
		scsitgt__lun_close_backend(lun);
}

static void lun_part_report(struct scsitgt__lun_part *part)
{
	part->draining = false;
	part->drain_msg.fn = lun_part_drained;
	scsitgt__engine_post(part->lun->engine, &part->drain_msg);
}

/*
 * A worker shard, asked by a LUN destroy: the LUN is out of its target's table, so no new
 * command of this shard finds it (a command looks it up and holds it in one loop callback,
 * before this message runs); report at once when the part is empty, else when its last
 * command leaves (scsitgt__lun_inflight_drop()).
 */
static void lun_part_drain(struct scsitgt__msg *msg)
{
	struct scsitgt__lun_part *part =
		scsitgt__container_of(msg, struct scsitgt__lun_part, drain_msg);

	part->draining = true;
	if (atomic_load_explicit(&part->inflight, memory_order_relaxed) == 0)
		lun_part_report(part);
}

/*
 * TASK SET FULL across shards (SAM-5 §5.3: the LUN refuses commands beyond its limit) without
 * reading every shard's part per command: a part is "over" while it holds more than its share
 * of the target's limit max_lun_commands, n * nshards > max, i.e. n >= over_at =
 * max / nshards + 1, and lun->over_shares counts such parts. While the count is zero every
 * part holds at most max / nshards, so the total is at most max and a command needs to look
 * at nothing but its own part. A part's flag follows its count on every hold and drop (a
 * core hold too), on the owner's loop; only a part that crosses its share writes the shared
 * count, which a LUN far from its limit never does. over_at is the part's own copy of the
 * limit (a LUN may outlive its target while its last ios drain), set at creation and
 * renewed by the check when the limit changed.
 * The loads are relaxed: commands arriving at the same instant on several loops may each miss
 * the others' last hold (a part below its share does not look, a part crossing it sums counts
 * another loop is storing), so the LUN may hold up to nshards - 1 commands above max for that
 * instant (reviewi N1). The limit is a protective bound, not an exact one; making it exact
 * would cost every command a full fence or a shared write (target.h documents the bound).
 */
static void lun_part_mark(struct scsitgt_lun *lun, struct scsitgt__lun_part *part, bool over)
{
	part->over = over;
	if (over)
		atomic_fetch_add_explicit(&lun->over_shares, 1, memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&lun->over_shares, 1, memory_order_relaxed);
}

static void lun_part_limit(struct scsitgt__lun_part *part, uint32_t max, unsigned int nshards)
{
	part->limit = max;
	part->over_at = max ? max / nshards + 1 : UINT_MAX;
}

void scsitgt__lun_hold(struct scsitgt_lun *lun, struct scsitgt__shard *shard)
{
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, shard);
	unsigned int n = atomic_load_explicit(&part->inflight, memory_order_relaxed) + 1;

	/* Written by this shard only: a store, not a locked add. */
	atomic_store_explicit(&part->inflight, n, memory_order_relaxed);
	if (n >= part->over_at && !part->over)
		lun_part_mark(lun, part, true);
}

bool scsitgt__lun_over_limit(struct scsitgt_lun *lun, const struct scsitgt__shard *shard,
			     uint32_t max)
{
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, shard);
	unsigned int own = atomic_load_explicit(&part->inflight, memory_order_relaxed);

	if (max != part->limit) {
		lun_part_limit(part, max, lun->engine->nshards);
		if (part->over != (own >= part->over_at))
			lun_part_mark(lun, part, own >= part->over_at);
	}
	if (max == 0)
		return false;
	/* No part above its share: the total is at most max (but for the arrivals of other
	 * loops at this instant, see above). */
	if (own < part->over_at &&
	    atomic_load_explicit(&lun->over_shares, memory_order_relaxed) == 0)
		return false;
	return scsitgt__lun_inflight(lun) > max;
}

void scsitgt__lun_inflight_drop(struct scsitgt_lun *lun, struct scsitgt__shard *shard)
{
	struct scsitgt__lun_part *part = scsitgt__lun_part(lun, shard);
	unsigned int n = atomic_load_explicit(&part->inflight, memory_order_relaxed) - 1;

	atomic_store_explicit(&part->inflight, n, memory_order_relaxed);
	if (part->over && n < part->over_at)
		lun_part_mark(lun, part, false);
	if (n != 0)
		return;
	if (shard->index != 0) {
		if (part->draining)
			lun_part_report(part);
		return;
	}
	if (lun->drain.destroying && lun_idle(lun))
		scsitgt__lun_close_backend(lun);
}

unsigned int scsitgt__lun_inflight(const struct scsitgt_lun *lun)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < lun->engine->nshards; i++)
		n += atomic_load_explicit(&lun->shard_part[i].inflight, memory_order_relaxed);
	return n;
}

SCSITGT_EXPORT void scsitgt_lun_destroy(struct scsitgt_lun *lun, scsitgt_done_cb cb, void *cb_arg)
{
	SCSITGT__ASSERT_HOME(lun ? lun->engine : NULL);
	if (lun == NULL || lun->drain.destroying)
		return;
	lun->drain.destroying = true;
	lun->drain.destroy_cb = cb;
	lun->drain.destroy_cb_arg = cb_arg;
	/* The LUN's handle is dead from here (lun.h): a backend that keeps it forgets it now,
	 * whether close() comes later or an engine shutdown gives up on it (backend.h). */
	if (lun->ops.detach)
		lun->ops.detach(lun->bctx, lun);
	scsitgt__target_lun_removed(lun->tgt, lun);
	scsitgt__ua_luns_changed(lun->tgt, lun->id, true);
	/* Every worker shard reports when its part is empty (lun_part_drain()). */
	lun->drain.parts_pending = lun->engine->nshards - 1;
	for (unsigned int i = 1; i < lun->engine->nshards; i++) {
		lun->shard_part[i].drain_msg.fn = lun_part_drain;
		scsitgt__worker_post(lun->engine->shards[i].worker, &lun->shard_part[i].drain_msg);
	}
	if (lun_idle(lun))
		scsitgt__lun_close_backend(lun);
	else
		scsitgt__drain_lun_start(lun);
}

/* Adopt @num_blocks (> 0) as the LUN's capacity. */
static void lun_apply_size(struct scsitgt_lun *lun, uint64_t num_blocks)
{
	struct scsitgt__list *p;

	if (lun->geo.num_blocks == num_blocks)
		return;
	scsitgt__log(&lun->engine->log, SCSITGT_LOG_NOTICE, "core",
		     "%s LUN %llu: capacity %llu -> %llu blocks", lun->tgt->name,
		     (unsigned long long)lun->id, (unsigned long long)lun->geo.num_blocks,
		     (unsigned long long)num_blocks);
	/* read by every shard's commands (scsitgt__lun_blocks()) */
	__atomic_store_n(&lun->geo.num_blocks, num_blocks, __ATOMIC_RELAXED);
	/* SBC-4 §4.6: every nexus learns of it by CAPACITY DATA HAS CHANGED. */
	for (p = lun->tgt->sessions.next; p != &lun->tgt->sessions; p = p->next)
		scsitgt__ua_establish(scsitgt__container_of(p, struct scsitgt__session, node),
				      lun->id, SCSITGT__SR_UA_CAPACITY_CHANGED);
}

SCSITGT_EXPORT int scsitgt_lun_resize(struct scsitgt_lun *lun, uint64_t num_blocks)
{
	SCSITGT__ASSERT_HOME(lun ? lun->engine : NULL);
	if (lun == NULL)
		return -EINVAL;
	if (num_blocks == 0)
		return scsitgt__log_refused(&lun->engine->log, "core", -EINVAL,
					    "scsitgt_lun_resize: %s LUN %llu: num_blocks 0: a LUN "
					    "has at least one block",
					    lun->tgt->name, (unsigned long long)lun->id);
	lun_apply_size(lun, num_blocks);
	return 0;
}

SCSITGT_EXPORT int scsitgt_lun_resize_medium(struct scsitgt_lun *lun, uint64_t num_blocks,
					     uint64_t in_use_blocks, uint64_t *num_blocks_out)
{
	uint64_t n = num_blocks;
	int rc;

	SCSITGT__ASSERT_HOME(lun ? lun->engine : NULL);
	if (lun == NULL)
		return -EINVAL;
	if (num_blocks) {
		/* Asked for: refuse before the medium is touched. */
		if (num_blocks < in_use_blocks)
			rc = -EBUSY;
		else if (lun->ops.resize == NULL)
			rc = -ENOTSUP;
		else
			rc = lun->ops.resize(lun->bctx, num_blocks);
	} else if (lun->ops.get_size == NULL) {
		rc = -ENOTSUP;
	} else {
		rc = lun->ops.get_size(lun->bctx, &n);
		if (rc == 0 && n == 0)
			rc = -EINVAL;
		if (rc == 0 && n < in_use_blocks) {
			scsitgt__log(&lun->engine->log, SCSITGT_LOG_WARNING, "core",
				     "%s LUN %llu: medium shrank to %llu blocks, below the %llu in "
				     "use; capacity kept at %llu",
				     lun->tgt->name, (unsigned long long)lun->id,
				     (unsigned long long)n, (unsigned long long)in_use_blocks,
				     (unsigned long long)lun->geo.num_blocks);
			rc = -EBUSY;
		}
	}
	if (rc == 0)
		lun_apply_size(lun, n);
	if (num_blocks_out)
		*num_blocks_out = lun->geo.num_blocks;
	return rc;
}

SCSITGT_EXPORT int scsitgt_lun_set_offline(struct scsitgt_lun *lun, bool offline)
{
	SCSITGT__ASSERT_HOME(lun ? lun->engine : NULL);
	if (lun == NULL)
		return -EINVAL;
	if (lun->offline == offline)
		return 0;
	lun->offline = offline;
	scsitgt__log(&lun->tgt->engine->log, SCSITGT_LOG_NOTICE, "core", "%s LUN %llu: %s",
		     lun->tgt->name, (unsigned long long)lun->id, offline ? "offline" : "online");
	scsitgt__event_lun_state(lun,
				 offline ? SCSITGT_EVENT_LUN_OFFLINE : SCSITGT_EVENT_LUN_ONLINE);
	return 0;
}

SCSITGT_EXPORT bool scsitgt_lun_get_offline(const struct scsitgt_lun *lun)
{
	return lun && lun->offline;
}

SCSITGT_EXPORT uint64_t scsitgt_lun_get_id(const struct scsitgt_lun *lun)
{
	return lun ? lun->id : UINT64_MAX;
}

SCSITGT_EXPORT int scsitgt_lun_get_geometry(const struct scsitgt_lun *lun,
					    struct scsitgt_lun_geometry *geo)
{
	size_t n;

	if (lun == NULL)
		return -EINVAL;
	if (geo == NULL || geo->size == 0)
		return scsitgt__log_refused(&lun->engine->log, "core", -EINVAL,
					    "scsitgt_lun_get_geometry: %s LUN %llu: %s",
					    lun->tgt->name, (unsigned long long)lun->id,
					    geo == NULL ? "geo is NULL" :
							  "geo size 0 (set it to sizeof(struct "
							  "scsitgt_lun_geometry))");
	n = geo->size < sizeof(lun->geo) ? geo->size : sizeof(lun->geo);
	memcpy(geo, &lun->geo, n);
	geo->size = n;
	return 0;
}

SCSITGT_EXPORT void *scsitgt_lun_get_backend_ctx(const struct scsitgt_lun *lun)
{
	return lun ? lun->bctx : NULL;
}

/* SAM-5 §4.7.7: peripheral device addressing (method 00b, bus 0) and flat space (01b). */
uint64_t scsitgt__lun_decode(const uint8_t lun[8])
{
	/* Only single-level LUNs: the second through fourth levels must be zero. */
	for (int i = 2; i < 8; i++)
		if (lun[i])
			return UINT64_MAX;
	switch (lun[0] >> 6) {
	case 0:
		return lun[0] == 0 ? lun[1] : UINT64_MAX; /* bus identifier must be 0 */
	case 1:
		return get_be16(lun) & 0x3fff;
	default:
		return UINT64_MAX;
	}
}

void scsitgt__lun_encode(uint64_t id, uint8_t lun[8])
{
	memset(lun, 0, 8);
	if (id < 256) {
		lun[1] = (uint8_t)id;
	} else {
		put_be16(lun, (uint16_t)(0x4000 | (id & 0x3fff)));
	}
}
