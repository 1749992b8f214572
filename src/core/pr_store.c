/* SPDX-License-Identifier: MIT */
/*
 * Persistence of reservation state (APTPL, SPC-5 §5.13.5) through host hooks, in the byte
 * format documented in include/libscsitgt/pr.h, and the default file store.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pr.h"
#include "util/be.h"
#include "util/log.h"

#define ST_HDR_LEN 24
#define ST_REG_LEN 14 /* before the name */
#define ST_EV_LEN 6   /* before the name */
/* Events of one change: at most three per registration (UA, abort, release), and a few. */
#define ST_MAX_EVENTS (3 * SCSITGT__PR_MAX_REGS + 8)
#define ST_NO_HOLDER 0xffffffffu
/* The largest state: every registration with the longest name. */
#define ST_MAX_LEN (ST_HDR_LEN + SCSITGT__PR_MAX_REGS * (ST_REG_LEN + SCSITGT__PR_PORT_MAX))

static const uint8_t st_magic[4] = { 'S', 'G', 'P', 'R' };

bool scsitgt__pr_ptpl_capable(const struct scsitgt_lun *lun)
{
	return lun->pr && (lun->pr->save || lun->pr->cl_on);
}

void scsitgt__pr_change_init(struct scsitgt__pr_change *ch)
{
	memset(ch, 0, sizeof(*ch));
	scsitgt__list_init(&ch->events);
}

void scsitgt__pr_change_clear(struct scsitgt__pr_change *ch)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &ch->events)
	{
		free(scsitgt__container_of(pos, struct scsitgt__pr_event, node));
	}
	scsitgt__list_init(&ch->events);
	ch->nevents = 0;
}

void scsitgt__pr_change_add(struct scsitgt__pr_change *ch, uint8_t code,
			    const struct scsitgt__pr_reg *reg)
{
	struct scsitgt__pr_event *ev;

	if (ch->nevents >= ST_MAX_EVENTS) {
		ch->failed = true;
		return;
	}
	ev = calloc(1, sizeof(*ev));
	if (ev == NULL) {
		ch->failed = true;
		return;
	}
	ev->code = code;
	memcpy(ev->who.iport, reg->iport, sizeof(ev->who.iport));
	ev->who.any_isid = reg->any_isid;
	ev->who.all_tg_pt = reg->all_tg_pt;
	ev->who.rel_port_id = reg->rel_port_id;
	ev->who.protocol_id = reg->protocol_id;
	scsitgt__list_add_tail(&ch->events, &ev->node);
	ch->nevents++;
}

/* Version 2 trailer (include/libscsitgt/pr.h). */
static size_t st_encode_change(const struct scsitgt__pr_change *ch, uint8_t *b)
{
	size_t bl = strlen(ch->by_port), n = 16 + bl;

	if (b) {
		put_be64(&b[0], ch->seq);
		put_be16(&b[8], ch->by_rel_port_id);
		put_be16(&b[10], (uint16_t)bl);
		memcpy(&b[12], ch->by_port, bl);
		put_be32(&b[12 + bl], ch->nevents);
	}
	for (struct scsitgt__list *p = ch->events.next; p != &ch->events; p = p->next) {
		const struct scsitgt__pr_event *ev =
			scsitgt__container_of(p, struct scsitgt__pr_event, node);
		size_t nl = strlen(ev->who.iport);

		if (b) {
			b[n] = ev->code;
			b[n + 1] =
				(uint8_t)((ev->who.any_isid ? 1 : 0) | (ev->who.all_tg_pt ? 2 : 0));
			put_be16(&b[n + 2], ev->who.rel_port_id);
			put_be16(&b[n + 4], (uint16_t)nl);
			memcpy(&b[n + ST_EV_LEN], ev->who.iport, nl);
		}
		n += ST_EV_LEN + nl;
	}
	return n;
}

/* Serialise into @b (NULL: only measure). Version 1 (@ch NULL) with APTPL off saves no
 * registrations; version 2 always does. */
size_t scsitgt__pr_encode(const struct scsitgt__pr *pr, uint8_t *b,
			  const struct scsitgt__pr_change *ch)
{
	bool keep = pr && (pr->aptpl || ch);
	size_t n = ST_HDR_LEN;
	uint32_t i = 0, holder = ST_NO_HOLDER;

	if (b) {
		memset(b, 0, ST_HDR_LEN);
		memcpy(b, st_magic, 4);
		put_be16(&b[4], ch ? SCSITGT_PR_STATE_VERSION_SHARED : SCSITGT_PR_STATE_VERSION);
		put_be32(&b[16], ST_NO_HOLDER);
	}
	for (struct scsitgt__list *p = keep ? pr->regs.next : NULL; keep && p != &pr->regs;
	     p = p->next, i++) {
		const struct scsitgt__pr_reg *r =
			scsitgt__container_of(p, struct scsitgt__pr_reg, node);
		size_t nl = strlen(r->iport);

		if (pr->held && pr->holder == r)
			holder = i;
		if (b) {
			put_be64(&b[n], r->key);
			put_be16(&b[n + 8], r->rel_port_id);
			b[n + 10] = (uint8_t)((r->any_isid ? 1 : 0) | (r->all_tg_pt ? 2 : 0));
			b[n + 11] = r->protocol_id;
			put_be16(&b[n + 12], (uint16_t)nl);
			memcpy(&b[n + ST_REG_LEN], r->iport, nl);
		}
		n += ST_REG_LEN + nl;
	}
	if (b && keep) {
		put_be16(&b[6], (uint16_t)((pr->aptpl ? 1 : 0) | (pr->held ? 2 : 0)));
		put_be32(&b[8], pr->generation);
		b[12] = pr->held ? pr->type : 0;
		b[13] = pr->held ? pr->scope : 0;
		put_be32(&b[16], holder);
		put_be32(&b[20], i);
	}
	if (ch)
		n += st_encode_change(ch, b ? &b[n] : NULL);
	return n;
}

static int file_write(const char *path, const void *data, size_t len);
static void file_save(void *arg, struct scsitgt_lun *lun, const void *data, size_t len);

int scsitgt__pr_changed(struct scsitgt_lun *lun)
{
	struct scsitgt__pr *pr = lun->pr;
	size_t n;
	uint8_t *b;
	int rc = 0;

	if (pr == NULL || pr->save == NULL)
		return 0;
	n = scsitgt__pr_encode(pr, NULL, NULL);
	b = malloc(n);
	if (b == NULL) {
		scsitgt__log(&lun->tgt->engine->log, SCSITGT_LOG_ERROR, "core",
			     "LUN %llu: no memory to save the reservation state",
			     (unsigned long long)lun->id);
		return -ENOMEM;
	}
	scsitgt__pr_encode(pr, b, NULL);
	/* The library's own file store says whether the state reached the disk; a host's
	 * callback cannot (libscsitgt/pr.h). */
	if (pr->save == file_save) {
		rc = file_write(pr->file_path, b, n);
		if (rc < 0)
			scsitgt__log(&lun->tgt->engine->log, SCSITGT_LOG_ERROR, "core",
				     "LUN %llu: cannot save the reservation state to %s: %s",
				     (unsigned long long)lun->id, pr->file_path, strerror(-rc));
	} else {
		pr->save(pr->save_arg, lun, b, n);
	}
	free(b);
	return rc;
}

int scsitgt__pr_refused(const struct scsitgt_lun *lun, int rc, const char *call, const char *fmt,
			...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return scsitgt__log_refused(&lun->tgt->engine->log, "core", rc, "%s: %s LUN %llu: %s", call,
				    lun->tgt->name, (unsigned long long)lun->id, why);
}

int scsitgt__pr_refused_data(const struct scsitgt_lun *lun, int rc, const char *call, size_t len)
{
	if (rc == -ENOTSUP)
		return scsitgt__pr_refused(lun, rc, call,
					   "data of %zu bytes: a format version this library "
					   "does not read",
					   len);
	if (rc == -EINVAL)
		return scsitgt__pr_refused(lun, rc, call,
					   "data of %zu bytes: malformed, not a state "
					   "scsitgt_lun_save_pr_state() or a cluster store wrote",
					   len);
	return rc;
}

SCSITGT_EXPORT int scsitgt_lun_set_pr_store(struct scsitgt_lun *lun, scsitgt_pr_save_cb save,
					    void *arg)
{
	struct scsitgt__pr *pr;

	if (lun == NULL)
		return -EINVAL;
	uv_mutex_lock(&lun->xlock);
	pr = scsitgt__pr_get(lun);
	if (pr) {
		pr->save = save;
		pr->save_arg = arg;
	}
	uv_mutex_unlock(&lun->xlock);
	return pr ? 0 : -ENOMEM;
}

SCSITGT_EXPORT int scsitgt_lun_save_pr_state(struct scsitgt_lun *lun, void *buf, size_t cap,
					     size_t *len)
{
	int rc = 0;

	if (lun == NULL)
		return -EINVAL;
	if (len == NULL)
		return scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_save_pr_state",
					   "len is NULL");
	uv_mutex_lock(&lun->xlock);
	*len = scsitgt__pr_encode(lun->pr, NULL, NULL);
	if (cap < *len || buf == NULL)
		rc = -ENOSPC;
	else
		scsitgt__pr_encode(lun->pr, buf, NULL);
	uv_mutex_unlock(&lun->xlock);
	return rc;
}

static bool st_name_valid(const uint8_t *s, size_t n)
{
	if (n == 0 || n >= SCSITGT__PR_PORT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static int st_decode_change(const uint8_t *b, size_t len, struct scsitgt__pr_change *ch)
{
	size_t off, bl;
	uint32_t nev;

	if (len < 16)
		return -EINVAL;
	ch->seq = get_be64(&b[0]);
	ch->by_rel_port_id = get_be16(&b[8]);
	bl = get_be16(&b[10]);
	if (len - 16 < bl || (bl && !st_name_valid(&b[12], bl)))
		return -EINVAL;
	memcpy(ch->by_port, &b[12], bl);
	ch->by_port[bl] = '\0';
	nev = get_be32(&b[12 + bl]);
	if (nev > ST_MAX_EVENTS)
		return -EINVAL;
	off = 16 + bl;
	for (uint32_t i = 0; i < nev; i++) {
		struct scsitgt__pr_reg who;
		uint16_t nl;

		if (len - off < ST_EV_LEN)
			return -EINVAL;
		nl = get_be16(&b[off + 4]);
		if (b[off] < SCSITGT__PR_EV_REGS_PREEMPTED || b[off] > SCSITGT__PR_EV_ABORT ||
		    (b[off + 1] & ~3u) || len - off - ST_EV_LEN < nl ||
		    !st_name_valid(&b[off + ST_EV_LEN], nl))
			return -EINVAL;
		memset(&who, 0, sizeof(who));
		memcpy(who.iport, &b[off + ST_EV_LEN], nl);
		who.any_isid = b[off + 1] & 1;
		who.all_tg_pt = b[off + 1] & 2;
		who.rel_port_id = get_be16(&b[off + 2]);
		scsitgt__pr_change_add(ch, b[off], &who);
		if (ch->failed)
			return -ENOMEM;
		off += ST_EV_LEN + nl;
	}
	return off == len ? 0 : -EINVAL;
}

/* Decode into a fresh list; nothing of the LUN changes until the whole input is valid. */
int scsitgt__pr_decode(const uint8_t *b, size_t len, struct scsitgt__pr *out,
		       struct scsitgt__pr_change *ch, uint16_t *version)
{
	uint16_t flags, ver;
	uint32_t nregs, holder;
	size_t off = ST_HDR_LEN;

	if (len < ST_HDR_LEN || memcmp(b, st_magic, 4) != 0)
		return -EINVAL;
	ver = get_be16(&b[4]);
	if (ver != SCSITGT_PR_STATE_VERSION && ver != SCSITGT_PR_STATE_VERSION_SHARED)
		return -ENOTSUP;
	*version = ver;
	flags = get_be16(&b[6]);
	holder = get_be32(&b[16]);
	nregs = get_be32(&b[20]);
	if ((flags & ~3u) || b[13] != 0 || b[14] || b[15] || nregs > SCSITGT__PR_MAX_REGS)
		return -EINVAL;
	out->aptpl = flags & 1;
	out->held = flags & 2;
	out->generation = get_be32(&b[8]);
	out->type = b[12];
	if (out->held != (out->type != 0) || (out->held && nregs == 0))
		return -EINVAL;
	if (out->held && !(out->type == 1 || out->type == 3 || (out->type >= 5 && out->type <= 8)))
		return -EINVAL;
	/* Single-holder types name their holder; all-registrants types do not. */
	if (out->held && scsitgt__pr_type_all_registrants(out->type) != (holder == ST_NO_HOLDER))
		return -EINVAL;
	if (holder != ST_NO_HOLDER && holder >= nregs)
		return -EINVAL;
	for (uint32_t i = 0; i < nregs; i++) {
		struct scsitgt__pr_reg *r;
		uint16_t nl;

		if (len - off < ST_REG_LEN)
			return -EINVAL;
		nl = get_be16(&b[off + 12]);
		if (b[off + 10] & ~3u || len - off - ST_REG_LEN < nl ||
		    !st_name_valid(&b[off + ST_REG_LEN], nl))
			return -EINVAL;
		r = calloc(1, sizeof(*r));
		if (r == NULL)
			return -ENOMEM;
		r->key = get_be64(&b[off]);
		r->rel_port_id = get_be16(&b[off + 8]);
		r->any_isid = b[off + 10] & 1;
		r->all_tg_pt = b[off + 10] & 2;
		r->protocol_id = b[off + 11];
		memcpy(r->iport, &b[off + ST_REG_LEN], nl);
		scsitgt__list_add_tail(&out->regs, &r->node);
		out->nregs++;
		if (i == holder)
			out->holder = r;
		off += ST_REG_LEN + nl;
	}
	if (ver == SCSITGT_PR_STATE_VERSION)
		return off == len ? 0 : -EINVAL;
	return st_decode_change(&b[off], len - off, ch);
}

void scsitgt__pr_regs_free(struct scsitgt__list *regs)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, regs)
	{
		free(scsitgt__container_of(pos, struct scsitgt__pr_reg, node));
	}
	scsitgt__list_init(regs);
}

void scsitgt__pr_replace(struct scsitgt__pr *pr, struct scsitgt__pr *from)
{
	/* Registrations and the persistent reservation are replaced; the SPC-2 reservation and
	 * the store stay. */
	scsitgt__pr_regs_free(&pr->regs);
	pr->nregs = 0;
	while (!scsitgt__list_empty(&from->regs)) {
		struct scsitgt__list *n = from->regs.next;

		scsitgt__list_remove(n);
		scsitgt__list_add_tail(&pr->regs, n);
		pr->nregs++;
	}
	from->nregs = 0;
	pr->generation = from->generation;
	pr->aptpl = from->aptpl;
	pr->held = from->held;
	pr->type = from->type;
	pr->scope = 0;
	pr->holder = from->holder;
}

/* scsitgt_lun_load_pr_state() without its checks and log lines. */
static int pr_load(struct scsitgt_lun *lun, const void *data, size_t len)
{
	struct scsitgt__pr tmp, *pr;
	struct scsitgt__pr_change ch;
	uint16_t ver = 0;
	int rc;

	memset(&tmp, 0, sizeof(tmp));
	scsitgt__list_init(&tmp.regs);
	scsitgt__pr_change_init(&ch);
	rc = scsitgt__pr_decode(data, len, &tmp, &ch, &ver);
	scsitgt__pr_change_clear(&ch);
	if (rc < 0) {
		scsitgt__pr_regs_free(&tmp.regs);
		return rc;
	}
	uv_mutex_lock(&lun->xlock);
	pr = scsitgt__pr_get(lun);
	if (pr) {
		scsitgt__pr_replace(pr, &tmp);
		if (ver == SCSITGT_PR_STATE_VERSION_SHARED)
			pr->seq = ch.seq;
		scsitgt__pr_sync_xflags(lun);
	}
	uv_mutex_unlock(&lun->xlock);
	scsitgt__pr_regs_free(&tmp.regs);
	return pr ? 0 : -ENOMEM;
}

SCSITGT_EXPORT int scsitgt_lun_load_pr_state(struct scsitgt_lun *lun, const void *data, size_t len)
{
	if (lun == NULL)
		return -EINVAL;
	if (data == NULL)
		return scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_load_pr_state",
					   "data is NULL");
	return scsitgt__pr_refused_data(lun, pr_load(lun, data, len), "scsitgt_lun_load_pr_state",
					len);
}

/* fsync the directory of @path: the rename is durable only then (rename(2) alone may be
 * lost with a power failure, and the old state come back). 0 or -errno. */
static int dir_sync(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int fd, rc = 0;

	if (slash == NULL) {
		dir[0] = '.';
		dir[1] = '\0';
	} else if (slash == path) {
		dir[0] = '/';
		dir[1] = '\0';
	} else if ((size_t)(slash - path) < sizeof(dir)) {
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	} else {
		return -ENAMETOOLONG;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Write @data to @path atomically and durably (a temporary file, fsync, rename, fsync of the
 * directory). 0 or -errno. */
static int file_write(const char *path, const void *data, size_t len)
{
	char tmp[4096];
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		rc = -ENAMETOOLONG;
	fd = rc ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = rc ? rc : -errno;
	} else {
		const uint8_t *p = data;
		size_t left = len;

		while (left && rc == 0) {
			ssize_t w = write(fd, p, left);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				rc = w < 0 ? -errno : -EIO;
			else {
				p += w;
				left -= (size_t)w;
			}
		}
		if (rc == 0 && fsync(fd) < 0)
			rc = -errno;
		close(fd);
		if (rc == 0 && rename(tmp, path) < 0)
			rc = -errno;
		if (rc == 0)
			rc = dir_sync(path);
	}
	return rc;
}

/* The file store's save callback: scsitgt__pr_changed() recognises it and calls file_write()
 * itself, so that a failed save fails the command that made the change. */
static void file_save(void *arg, struct scsitgt_lun *lun, const void *data, size_t len)
{
	(void)lun;
	(void)file_write(arg, data, len);
}

SCSITGT_EXPORT int scsitgt_lun_use_pr_file(struct scsitgt_lun *lun, const char *path)
{
	struct scsitgt__pr *pr;
	char *copy;
	int fd, rc = 0;

	if (lun == NULL)
		return -EINVAL;
	if (path == NULL || path[0] == '\0')
		return scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_use_pr_file", "path is %s",
					   path == NULL ? "NULL" : "empty");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		uint8_t *b = malloc(ST_MAX_LEN + 1);
		size_t n = 0;

		if (b == NULL) {
			close(fd);
			return -ENOMEM;
		}
		while (n <= ST_MAX_LEN) {
			ssize_t r = read(fd, b + n, ST_MAX_LEN + 1 - n);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				rc = -errno;
				break;
			}
			if (r == 0)
				break;
			n += (size_t)r;
		}
		close(fd);
		if (rc == 0 && n > ST_MAX_LEN)
			rc = scsitgt__pr_refused(lun, -EINVAL, "scsitgt_lun_use_pr_file",
						 "path \"%s\": above %u bytes, not a saved state",
						 path, (unsigned)ST_MAX_LEN);
		else if (rc == 0 && (rc = pr_load(lun, b, n)) < 0 && rc != -ENOMEM)
			rc = scsitgt__pr_refused(lun, rc, "scsitgt_lun_use_pr_file",
						 "path \"%s\": %s", path,
						 rc == -ENOTSUP ? "a format version this library "
								  "does not read" :
								  "malformed, not a state this "
								  "library saved");
		free(b);
		if (rc < 0)
			return rc;
	} else if (errno != ENOENT) {
		return -errno;
	}
	copy = strdup(path);
	if (copy == NULL)
		return -ENOMEM;
	uv_mutex_lock(&lun->xlock);
	pr = scsitgt__pr_get(lun);
	if (pr) {
		free(pr->file_path);
		pr->file_path = copy;
		pr->save = file_save;
		pr->save_arg = copy;
	}
	uv_mutex_unlock(&lun->xlock);
	if (pr == NULL)
		free(copy);
	return pr ? 0 : -ENOMEM;
}
