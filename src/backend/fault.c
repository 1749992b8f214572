/* SPDX-License-Identifier: MIT */
/*
 * The fault-injection backend (backend_fault.h): a wrapper that interposes on submit() of any
 * backend and, by rule, completes ios with an error, delays them on a loop timer, or holds
 * them until the host releases them. Everything else is the wrapped backend's, passed on
 * unchanged: open, close, supports, get_lba_status, abort (of an io it holds), reset,
 * reset_async, get_size, resize and detach. The table mirrors the wrapped one: an optional op
 * the wrapped backend lacks stays NULL here too, since a NULL op tells the core to emulate or
 * refuse (backend.h); only abort and reset are always set, for the wrapper's own abortable
 * holds and its reset counter, and do nothing more than a NULL op would for the wrapped
 * backend. Rules act on ios only: a reset, a size query or a resize always reaches the wrapped
 * backend. Like the aio backend it registers libuv handles (one timer per delayed io), on the
 * loop the host gave it.
 *
 * Held and delayed ios stay lent to this backend, so the library does not call close() while
 * any is outstanding; close() therefore never has to deal with them.
 *
 * Several loops: the wrapper has SCSITGT_BACKEND_MULTI_LOOP when the wrapped backend has it.
 * Its rules, counters and lists are then shared by the loops that submit, and by the host's
 * calls (add rules, release, stats) on the home loop: one mutex (fault.lock) covers them, held
 * only to decide and to count, never across a call into the wrapped backend or a completion.
 * A delay's timer runs on the io's own loop (scsitgt_io_get_loop()). An io held on another
 * loop than the one fault_create() was given gets a uv_async_t on its loop, through which
 * scsitgt_backend_fault_release() hands it back there; one held on that loop is released from
 * inside the call, as before.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "libscsitgt/backend.h"
#include "libscsitgt/backend_fault.h"
#include "util/list.h"

#define FAULT_MAX_RULES 64

struct fault_rule {
	struct scsitgt_fault_rule r;
	uint64_t seen;	/* matching ios so far */
	uint64_t fired; /* times it fired */
};

struct fault_held {
	struct scsitgt__list node;
	struct scsitgt_io *io;
	bool abortable;
	/* Held on a loop other than fault.loop: released through this handle on it. */
	bool remote;
	int status;
	struct fault *f;
	uv_async_t async;
};

/* A delayed io on its timer; also an aborted io waiting to be completed (never from inside
 * abort(), backend.h), on a zero timeout. */
struct fault_delay {
	uv_timer_t timer;
	struct scsitgt__list node; /* in fault.delays */
	struct fault *f;
	struct scsitgt_io *io;
	bool abortable;
	bool cancelled;
};

struct fault {
	struct scsitgt_backend_ops ops; /* what scsitgt_backend_fault_ops() returns */
	struct scsitgt_backend_ops inner;
	void *inner_ctx;
	uv_loop_t *loop;
	/* The rules, counters and lists below, with SCSITGT_BACKEND_MULTI_LOOP (see the top). */
	uv_mutex_t lock;
	struct fault_rule rules[FAULT_MAX_RULES];
	unsigned int nrules;
	int next_id;
	struct scsitgt__list held;
	struct scsitgt__list delays;
	struct scsitgt_fault_stats st;
	/* Completions from inside scsitgt_backend_fault_release() may close the LUN: the
	 * context is then freed when the release returns, not under it. */
	unsigned int in_release;
	bool free_pending;
	scsitgt_done_cb close_cb;
	void *close_arg;
};

SCSITGT_EXPORT void scsitgt_fault_rule_init(struct scsitgt_fault_rule *rule, size_t size)
{
	struct scsitgt_fault_rule def = {
		.size = sizeof(def),
		.action = SCSITGT_FAULT_ERROR,
		.io_types = SCSITGT_FAULT_IO_ALL,
		.every = 1,
		.error = -EIO,
		.delay_ms = 100,
	};

	if (rule == NULL || size == 0)
		return;
	if (size > sizeof(def)) {
		memset(rule, 0, size);
		size = sizeof(def);
	}
	def.size = size;
	memcpy(rule, &def, size);
}

static int fault_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	struct fault *f = bctx;

	return f->inner.open(f->inner_ctx, geo);
}

static bool fault_supports(void *bctx, enum scsitgt_io_type type)
{
	struct fault *f = bctx;

	return f->inner.supports(f->inner_ctx, type);
}

static int fault_get_lba_status(void *bctx, uint64_t lba, uint64_t *num_blocks_out,
				bool *mapped_out)
{
	struct fault *f = bctx;

	return f->inner.get_lba_status(f->inner_ctx, lba, num_blocks_out, mapped_out);
}

static void fault_free(struct fault *f)
{
	scsitgt_done_cb cb = f->close_cb;
	void *arg = f->close_arg;

	uv_mutex_destroy(&f->lock);
	free(f);
	if (cb)
		cb(arg, 0);
}

static void fault_inner_closed(void *arg, int status)
{
	struct fault *f = arg;

	(void)status;
	if (f->in_release) {
		f->free_pending = true;
		return;
	}
	fault_free(f);
}

static void fault_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct fault *f = bctx;

	f->close_cb = cb;
	f->close_arg = cb_arg;
	f->inner.close(f->inner_ctx, fault_inner_closed, f);
}

/* Whether @io overlaps the rule's block range (any io when the range is empty). */
static bool rule_range_match(const struct scsitgt_fault_rule *r, const struct scsitgt_io *io)
{
	uint64_t lba = scsitgt_io_get_lba(io);
	uint64_t n = scsitgt_io_get_num_blocks(io);

	if (r->lba_count == 0)
		return true;
	return n && lba < r->lba + r->lba_count && r->lba < lba + n;
}

/* The first rule that fires on @io, or NULL. Counts the matches of every rule it tries. */
static struct fault_rule *fault_match(struct fault *f, const struct scsitgt_io *io)
{
	uint32_t bit = SCSITGT_FAULT_IO(scsitgt_io_get_type(io));

	for (unsigned int i = 0; i < f->nrules; i++) {
		struct fault_rule *fr = &f->rules[i];
		const struct scsitgt_fault_rule *r = &fr->r;
		uint64_t k;

		if (!(r->io_types & bit) || !rule_range_match(r, io))
			continue;
		k = fr->seen++;
		if (k < r->skip || (k - r->skip) % (r->every ? r->every : 1) != 0)
			continue;
		if (r->count && fr->fired >= r->count)
			continue;
		fr->fired++;
		return fr;
	}
	return NULL;
}

static void delay_closed(uv_handle_t *h)
{
	free(h->data);
}

static void delay_fire(uv_timer_t *t)
{
	struct fault_delay *d = t->data;
	struct fault *f = d->f;
	struct scsitgt_io *io = d->io;
	bool cancelled;

	uv_mutex_lock(&f->lock);
	cancelled = d->cancelled;
	f->st.delaying--;
	scsitgt__list_remove(&d->node);
	uv_mutex_unlock(&f->lock);
	uv_close((uv_handle_t *)&d->timer, delay_closed);
	if (cancelled)
		scsitgt_io_complete(io, -ECANCELED);
	else
		f->inner.submit(f->inner_ctx, io);
}

/* Start @io's timer on its loop; false without memory. Under f->lock. */
static bool delay_start(struct fault *f, struct scsitgt_io *io, uint64_t ms, bool abortable,
			bool cancelled)
{
	struct fault_delay *d = malloc(sizeof(*d));

	if (d == NULL || uv_timer_init(scsitgt_io_get_loop(io), &d->timer) < 0) {
		free(d);
		return false;
	}
	d->f = f;
	d->io = io;
	d->abortable = abortable;
	d->cancelled = cancelled;
	d->timer.data = d;
	scsitgt__list_add_tail(&f->delays, &d->node);
	f->st.delaying++;
	uv_timer_start(&d->timer, delay_fire, ms, 0);
	return true;
}

static void held_closed(uv_handle_t *h)
{
	free(h->data);
}

/* Free a held io's record (its handle first, on the io's loop, for a remote one). */
static void held_free(struct fault_held *h)
{
	if (h->remote)
		uv_close((uv_handle_t *)&h->async, held_closed);
	else
		free(h);
}

/* The io's loop: scsitgt_backend_fault_release() let a remote held io go. */
static void held_async(uv_async_t *a)
{
	struct fault_held *h = a->data;
	struct fault *f = h->f;
	struct scsitgt_io *io = h->io;
	int status = h->status;

	held_free(h);
	if (status == 0)
		f->inner.submit(f->inner_ctx, io);
	else
		scsitgt_io_complete(io, status);
}

/* backend.h abort(): an abortable held or delayed io completes with -ECANCELED on the next
 * loop pass; any other io is the wrapped backend's to cancel, or not. */
static void fault_abort(void *bctx, struct scsitgt_io *io)
{
	struct fault *f = bctx;
	struct scsitgt__list *pos, *tmp;

	uv_mutex_lock(&f->lock);
	scsitgt__list_foreach_safe(pos, tmp, &f->held)
	{
		struct fault_held *h = scsitgt__container_of(pos, struct fault_held, node);

		if (h->io != io)
			continue;
		if (!h->abortable || !delay_start(f, io, 0, false, true)) {
			uv_mutex_unlock(&f->lock);
			return;
		}
		scsitgt__list_remove(&h->node);
		f->st.held--;
		f->st.cancelled++;
		uv_mutex_unlock(&f->lock);
		held_free(h);
		return;
	}
	scsitgt__list_foreach_safe(pos, tmp, &f->delays)
	{
		struct fault_delay *d = scsitgt__container_of(pos, struct fault_delay, node);

		if (d->io != io)
			continue;
		/* abort() runs on the io's loop, the timer's. */
		if (d->abortable && !d->cancelled) {
			d->cancelled = true;
			f->st.cancelled++;
			uv_timer_start(&d->timer, delay_fire, 0, 0);
		}
		uv_mutex_unlock(&f->lock);
		return;
	}
	uv_mutex_unlock(&f->lock);
	if (f->inner.abort)
		f->inner.abort(f->inner_ctx, io);
}

static void fault_count_reset(struct fault *f)
{
	uv_mutex_lock(&f->lock);
	f->st.resets++;
	uv_mutex_unlock(&f->lock);
}

static void fault_reset(void *bctx)
{
	struct fault *f = bctx;

	fault_count_reset(f);
	if (f->inner.reset)
		f->inner.reset(f->inner_ctx);
}

/* Set only when the wrapped backend has it: the core then calls it instead of reset(), and
 * the reset's answer waits for the wrapped backend (e.g. the RBD backend telling the other
 * gateways), whose callback goes straight to the core. */
static void fault_reset_async(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	struct fault *f = bctx;

	fault_count_reset(f);
	f->inner.reset_async(f->inner_ctx, cb, cb_arg);
}

static int fault_get_size(void *bctx, uint64_t *num_blocks_out)
{
	struct fault *f = bctx;

	return f->inner.get_size(f->inner_ctx, num_blocks_out);
}

static int fault_resize(void *bctx, uint64_t num_blocks)
{
	struct fault *f = bctx;

	return f->inner.resize(f->inner_ctx, num_blocks);
}

/* The LUN is being destroyed: the wrapped backend may keep its handle (backend.h). */
static void fault_detach(void *bctx, struct scsitgt_lun *lun)
{
	struct fault *f = bctx;

	f->inner.detach(f->inner_ctx, lun);
}

static void fault_submit(void *bctx, struct scsitgt_io *io)
{
	struct fault *f = bctx;
	struct fault_rule *fr;
	struct scsitgt_fault_rule r;

	uv_mutex_lock(&f->lock);
	f->st.submitted++;
	fr = fault_match(f, io);
	if (fr == NULL) {
		f->st.passed++;
		uv_mutex_unlock(&f->lock);
		f->inner.submit(f->inner_ctx, io);
		return;
	}
	r = fr->r;
	switch (r.action) {
	case SCSITGT_FAULT_ERROR:
		f->st.errors++;
		uv_mutex_unlock(&f->lock);
		scsitgt_io_complete(io, r.error);
		return;
	case SCSITGT_FAULT_MEDIUM: {
		uint64_t lba = scsitgt_io_get_lba(io);

		/* The first block of the rule's range inside the io (SBC-4 §4.18.1 INFORMATION). */
		if (r.lba_count && r.lba > lba)
			lba = r.lba;
		f->st.medium_errors++;
		uv_mutex_unlock(&f->lock);
		scsitgt_io_complete_at(io, -EIO, lba);
		return;
	}
	case SCSITGT_FAULT_DELAY:
		/* Without memory for the timer the io goes through undelayed. */
		if (!delay_start(f, io, r.delay_ms, r.abortable, false)) {
			f->st.passed++;
			uv_mutex_unlock(&f->lock);
			f->inner.submit(f->inner_ctx, io);
			return;
		}
		f->st.delayed++;
		uv_mutex_unlock(&f->lock);
		return;
	case SCSITGT_FAULT_HANG: {
		struct fault_held *h = calloc(1, sizeof(*h));
		uv_loop_t *loop = scsitgt_io_get_loop(io);

		/* On another loop than the host's: released through a handle on that loop. */
		if (h && loop != f->loop && uv_async_init(loop, &h->async, held_async) < 0) {
			free(h);
			h = NULL;
		}
		if (h == NULL) {
			uv_mutex_unlock(&f->lock);
			scsitgt_io_complete(io, -ENOMEM);
			return;
		}
		h->io = io;
		h->f = f;
		h->abortable = r.abortable;
		h->remote = loop != f->loop;
		h->async.data = h;
		scsitgt__list_add_tail(&f->held, &h->node);
		f->st.hung++;
		f->st.held++;
		uv_mutex_unlock(&f->lock);
		return;
	}
	}
	uv_mutex_unlock(&f->lock);
	f->inner.submit(f->inner_ctx, io);
}

SCSITGT_EXPORT int scsitgt_backend_fault_create(void **bctx_out, uv_loop_t *loop,
						const struct scsitgt_backend_ops *inner_ops,
						void *inner_ctx)
{
	struct fault *f;
	size_t n;

	if (bctx_out == NULL || loop == NULL || inner_ops == NULL || inner_ops->size == 0)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	n = inner_ops->size < sizeof(f->inner) ? inner_ops->size : sizeof(f->inner);
	memcpy(&f->inner, inner_ops, n);
	f->inner.size = sizeof(f->inner);
	if (f->inner.open == NULL || f->inner.close == NULL || f->inner.submit == NULL) {
		free(f);
		return -EINVAL;
	}
	if (uv_mutex_init(&f->lock) < 0) {
		free(f);
		return -ENOMEM;
	}
	f->inner_ctx = inner_ctx;
	f->loop = loop;
	scsitgt__list_init(&f->held);
	scsitgt__list_init(&f->delays);
	f->ops.size = sizeof(f->ops);
	f->ops.name = f->inner.name ? f->inner.name : "fault";
	f->ops.io_ctx_size = f->inner.io_ctx_size;
	f->ops.open = fault_open;
	f->ops.close = fault_close;
	f->ops.submit = fault_submit;
	/* The optional ops the wrapped backend lacks stay NULL (see the top). */
	f->ops.supports = f->inner.supports ? fault_supports : NULL;
	f->ops.get_lba_status = f->inner.get_lba_status ? fault_get_lba_status : NULL;
	f->ops.abort = fault_abort;
	f->ops.reset = fault_reset;
	f->ops.reset_async = f->inner.reset_async ? fault_reset_async : NULL;
	f->ops.get_size = f->inner.get_size ? fault_get_size : NULL;
	f->ops.resize = f->inner.resize ? fault_resize : NULL;
	f->ops.detach = f->inner.detach ? fault_detach : NULL;
	/* as able to run on several loops as what it wraps (see the top), and as atomic: a rule
	 * fails a write without passing any of it on, so it stays all or none. */
	f->ops.flags = f->inner.flags & (SCSITGT_BACKEND_MULTI_LOOP | SCSITGT_BACKEND_ATOMIC_WRITE);
	f->st.size = sizeof(f->st);
	*bctx_out = f;
	return 0;
}

SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_fault_ops(const void *bctx)
{
	const struct fault *f = bctx;

	return f ? &f->ops : NULL;
}

SCSITGT_EXPORT int scsitgt_backend_fault_destroy(void *bctx)
{
	struct fault *f = bctx;

	if (f == NULL)
		return 0;
	if (f->st.held || f->st.delaying)
		return -EBUSY;
	f->inner.close(f->inner_ctx, NULL, NULL);
	uv_mutex_destroy(&f->lock);
	free(f);
	return 0;
}

static int rule_check(struct scsitgt_fault_rule *out, const struct scsitgt_fault_rule *in)
{
	if (in == NULL || in->size == 0)
		return -EINVAL;
	scsitgt_fault_rule_init(out, sizeof(*out));
	memcpy(out, in, in->size < sizeof(*out) ? in->size : sizeof(*out));
	out->size = sizeof(*out);
	if ((unsigned)out->action > SCSITGT_FAULT_HANG ||
	    (out->io_types & SCSITGT_FAULT_IO_ALL) == 0 ||
	    (out->io_types & ~SCSITGT_FAULT_IO_ALL) || out->error >= 0)
		return -EINVAL;
	if (out->lba_count && out->lba + out->lba_count < out->lba)
		return -EINVAL;
	return 0;
}

static int fault_add(struct fault *f, const struct scsitgt_fault_rule *r)
{
	struct fault_rule *fr;

	int id;

	uv_mutex_lock(&f->lock);
	if (f->nrules == FAULT_MAX_RULES) {
		uv_mutex_unlock(&f->lock);
		return -ENOSPC;
	}
	fr = &f->rules[f->nrules];
	memset(fr, 0, sizeof(*fr));
	fr->r = *r;
	f->nrules++;
	id = f->next_id++;
	uv_mutex_unlock(&f->lock);
	return id;
}

SCSITGT_EXPORT int scsitgt_backend_fault_add_rule(void *bctx, const struct scsitgt_fault_rule *rule)
{
	struct scsitgt_fault_rule r;
	int rc;

	if (bctx == NULL)
		return -EINVAL;
	rc = rule_check(&r, rule);
	if (rc < 0)
		return rc;
	return fault_add(bctx, &r);
}

/* A decimal number filling [s, e) exactly, at most @max. */
static int parse_u64(const char *s, const char *e, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (s == e)
		return -EINVAL;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static bool word_is(const char *s, const char *e, const char *w)
{
	size_t n = strlen(w);

	return (size_t)(e - s) == n && strncasecmp(s, w, n) == 0;
}

static int parse_errno(const char *s, const char *e, int *out)
{
	static const struct {
		const char *name;
		int err;
	} names[] = {
		{ "EIO", EIO },	      { "ENOSPC", ENOSPC }, { "EROFS", EROFS },
		{ "ENOMEM", ENOMEM }, { "EAGAIN", EAGAIN }, { "ENOTSUP", ENOTSUP },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (word_is(s, e, names[i].name)) {
			*out = -names[i].err;
			return 0;
		}
	}
	if (s < e && *s == '-')
		s++;
	if (parse_u64(s, e, 4095, &v) < 0 || v == 0)
		return -EINVAL;
	*out = -(int)v;
	return 0;
}

static int parse_types(const char *s, const char *e, uint32_t *out)
{
	static const struct {
		const char *name;
		uint32_t mask;
	} types[] = {
		{ "all", SCSITGT_FAULT_IO_ALL },
		{ "read", SCSITGT_FAULT_IO(SCSITGT_IO_READ) },
		{ "write", SCSITGT_FAULT_IO(SCSITGT_IO_WRITE) },
		{ "flush", SCSITGT_FAULT_IO(SCSITGT_IO_FLUSH) },
		{ "unmap", SCSITGT_FAULT_IO(SCSITGT_IO_UNMAP) },
		{ "write_zeroes", SCSITGT_FAULT_IO(SCSITGT_IO_WRITE_ZEROES) },
	};
	uint32_t mask = 0;

	while (s < e) {
		const char *p = memchr(s, '+', (size_t)(e - s));
		const char *we = p ? p : e;
		size_t i;

		for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (word_is(s, we, types[i].name))
				break;
		if (i == sizeof(types) / sizeof(types[0]))
			return -EINVAL;
		mask |= types[i].mask;
		s = p ? p + 1 : e;
		if (p && s == e)
			return -EINVAL; /* a trailing '+' */
	}
	if (mask == 0)
		return -EINVAL;
	*out = mask;
	return 0;
}

/* One rule, `ACTION[=ARG]@TYPES[:KEY=VALUE...]`, in [s, e). */
static int parse_rule(const char *s, const char *e, struct scsitgt_fault_rule *r)
{
	const char *at = memchr(s, '@', (size_t)(e - s));
	const char *eq, *te, *p;
	uint64_t v;

	scsitgt_fault_rule_init(r, sizeof(*r));
	if (at == NULL)
		return -EINVAL;
	eq = memchr(s, '=', (size_t)(at - s));
	p = eq ? eq : at;
	if (word_is(s, p, "error")) {
		r->action = SCSITGT_FAULT_ERROR;
		if (eq && parse_errno(eq + 1, at, &r->error) < 0)
			return -EINVAL;
	} else if (word_is(s, p, "medium") && !eq) {
		r->action = SCSITGT_FAULT_MEDIUM;
	} else if (word_is(s, p, "delay")) {
		r->action = SCSITGT_FAULT_DELAY;
		if (eq) {
			if (parse_u64(eq + 1, at, 3600000, &v) < 0)
				return -EINVAL;
			r->delay_ms = (uint32_t)v;
		}
	} else if (word_is(s, p, "hang") && !eq) {
		r->action = SCSITGT_FAULT_HANG;
	} else {
		return -EINVAL;
	}
	s = at + 1;
	te = memchr(s, ':', (size_t)(e - s));
	if (parse_types(s, te ? te : e, &r->io_types) < 0)
		return -EINVAL;
	while (te) {
		const char *ke, *ve;

		s = te + 1;
		te = memchr(s, ':', (size_t)(e - s));
		ve = te ? te : e;
		ke = memchr(s, '=', (size_t)(ve - s));
		if (ke == NULL)
			return -EINVAL;
		if (word_is(s, ke, "lba")) {
			if (parse_u64(ke + 1, ve, UINT64_MAX / 2, &r->lba) < 0)
				return -EINVAL;
			if (r->lba_count == 0)
				r->lba_count = 1;
		} else if (word_is(s, ke, "len")) {
			if (parse_u64(ke + 1, ve, UINT64_MAX / 2, &r->lba_count) < 0 ||
			    r->lba_count == 0)
				return -EINVAL;
		} else if (word_is(s, ke, "abortable")) {
			if (parse_u64(ke + 1, ve, 1, &v) < 0)
				return -EINVAL;
			r->abortable = v != 0;
		} else if (word_is(s, ke, "skip") || word_is(s, ke, "every") ||
			   word_is(s, ke, "count")) {
			if (parse_u64(ke + 1, ve, UINT32_MAX, &v) < 0)
				return -EINVAL;
			if (word_is(s, ke, "skip"))
				r->skip = (uint32_t)v;
			else if (word_is(s, ke, "every"))
				r->every = v ? (uint32_t)v : 1;
			else
				r->count = (uint32_t)v;
		} else {
			return -EINVAL;
		}
	}
	/* `len` alone, without `lba`, means the first blocks of the medium. */
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_fault_add_spec(void *bctx, const char *spec)
{
	struct fault *f = bctx;
	struct scsitgt_fault_rule rules[FAULT_MAX_RULES];
	unsigned int n = 0;
	const char *s, *e;

	if (f == NULL || spec == NULL || spec[0] == '\0')
		return -EINVAL;
	/* Parse everything first: a bad rule adds none. */
	for (s = spec; *s; s = *e ? e + 1 : e) {
		e = strchr(s, ';');
		if (e == NULL)
			e = s + strlen(s);
		if (n == FAULT_MAX_RULES)
			return -ENOSPC;
		if (parse_rule(s, e, &rules[n]) < 0)
			return -EINVAL;
		n++;
		if (*e == ';' && e[1] == '\0')
			return -EINVAL; /* a trailing ';' */
	}
	uv_mutex_lock(&f->lock);
	if (f->nrules + n > FAULT_MAX_RULES) {
		uv_mutex_unlock(&f->lock);
		return -ENOSPC;
	}
	uv_mutex_unlock(&f->lock);
	for (unsigned int i = 0; i < n; i++)
		fault_add(f, &rules[i]);
	return (int)n;
}

SCSITGT_EXPORT int scsitgt_backend_fault_clear_rules(void *bctx)
{
	struct fault *f = bctx;

	if (f == NULL)
		return -EINVAL;
	uv_mutex_lock(&f->lock);
	f->nrules = 0;
	uv_mutex_unlock(&f->lock);
	return 0;
}

SCSITGT_EXPORT int scsitgt_backend_fault_release(void *bctx, unsigned int max, int status)
{
	struct fault *f = bctx;
	unsigned int n = 0;

	if (f == NULL || status > 0)
		return -EINVAL;
	f->in_release++;
	uv_mutex_lock(&f->lock);
	while (!scsitgt__list_empty(&f->held) && (max == 0 || n < max)) {
		struct fault_held *h = scsitgt__container_of(f->held.next, struct fault_held, node);
		struct scsitgt_io *io = h->io;

		scsitgt__list_remove(&h->node);
		f->st.held--;
		f->st.released++;
		n++;
		if (h->remote) {
			/* Its own loop submits or completes it (held_async()). */
			h->status = status;
			uv_async_send(&h->async);
			continue;
		}
		uv_mutex_unlock(&f->lock);
		free(h);
		if (status == 0)
			f->inner.submit(f->inner_ctx, io);
		else
			scsitgt_io_complete(io, status);
		uv_mutex_lock(&f->lock);
	}
	uv_mutex_unlock(&f->lock);
	if (--f->in_release == 0 && f->free_pending)
		fault_free(f);
	return (int)n;
}

SCSITGT_EXPORT int scsitgt_backend_fault_get_stats(const void *bctx,
						   struct scsitgt_fault_stats *stats)
{
	const struct fault *f = bctx;
	size_t n;

	if (f == NULL || stats == NULL || stats->size == 0)
		return -EINVAL;
	n = stats->size < sizeof(f->st) ? stats->size : sizeof(f->st);
	uv_mutex_lock((uv_mutex_t *)&f->lock);
	memcpy(stats, &f->st, n);
	uv_mutex_unlock((uv_mutex_t *)&f->lock);
	stats->size = n;
	return 0;
}
