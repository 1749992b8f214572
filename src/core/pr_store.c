/* SPDX-License-Identifier: MIT */
/*
 * Persistence of reservation state (APTPL, SPC-5 §5.13.5) through host hooks, in the byte
 * format documented in include/libscsitgt/pr.h, and the default file store.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pr.h"
#include "util/be.h"

#define ST_HDR_LEN 24
#define ST_REG_LEN 14 /* before the name */
#define ST_NO_HOLDER 0xffffffffu
/* The largest state: every registration with the longest name. */
#define ST_MAX_LEN (ST_HDR_LEN + SCSITGT__PR_MAX_REGS * (ST_REG_LEN + SCSITGT__PR_PORT_MAX))

static const uint8_t st_magic[4] = { 'S', 'G', 'P', 'R' };

bool scsitgt__pr_ptpl_capable(const struct scsitgt_lun *lun)
{
	return lun->pr && lun->pr->save;
}

/* Serialise into @b (NULL: only measure). APTPL off saves no registrations. */
static size_t st_encode(const struct scsitgt__pr *pr, uint8_t *b)
{
	bool keep = pr && pr->aptpl;
	size_t n = ST_HDR_LEN;
	uint32_t i = 0, holder = ST_NO_HOLDER;

	if (b) {
		memset(b, 0, ST_HDR_LEN);
		memcpy(b, st_magic, 4);
		put_be16(&b[4], SCSITGT_PR_STATE_VERSION);
		put_be32(&b[16], ST_NO_HOLDER);
	}
	if (!keep)
		return n;
	for (struct scsitgt__list *p = pr->regs.next; p != &pr->regs; p = p->next, i++) {
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
	if (b) {
		put_be16(&b[6], (uint16_t)(1 | (pr->held ? 2 : 0)));
		put_be32(&b[8], pr->generation);
		b[12] = pr->held ? pr->type : 0;
		b[13] = pr->held ? pr->scope : 0;
		put_be32(&b[16], holder);
		put_be32(&b[20], i);
	}
	return n;
}

void scsitgt__pr_changed(struct scsitgt_lun *lun)
{
	struct scsitgt__pr *pr = lun->pr;
	size_t n;
	uint8_t *b;

	if (pr == NULL || pr->save == NULL)
		return;
	n = st_encode(pr, NULL);
	b = malloc(n);
	if (b == NULL) {
		scsitgt__log(&lun->tgt->engine->log, SCSITGT_LOG_ERROR, "core",
			     "LUN %llu: no memory to save the reservation state",
			     (unsigned long long)lun->id);
		return;
	}
	st_encode(pr, b);
	pr->save(pr->save_arg, lun, b, n);
	free(b);
}

SCSITGT_EXPORT int scsitgt_lun_set_pr_store(struct scsitgt_lun *lun, scsitgt_pr_save_cb save,
					    void *arg)
{
	struct scsitgt__pr *pr;

	if (lun == NULL)
		return -EINVAL;
	pr = scsitgt__pr_get(lun);
	if (pr == NULL)
		return -ENOMEM;
	pr->save = save;
	pr->save_arg = arg;
	return 0;
}

SCSITGT_EXPORT int scsitgt_lun_save_pr_state(struct scsitgt_lun *lun, void *buf, size_t cap,
					     size_t *len)
{
	if (lun == NULL || len == NULL)
		return -EINVAL;
	*len = st_encode(lun->pr, NULL);
	if (cap < *len || buf == NULL)
		return -ENOSPC;
	st_encode(lun->pr, buf);
	return 0;
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

/* Decode into a fresh list; nothing of the LUN changes until the whole input is valid. */
static int st_decode(const uint8_t *b, size_t len, struct scsitgt__pr *out)
{
	uint16_t flags;
	uint32_t nregs, holder;
	size_t off = ST_HDR_LEN;

	if (len < ST_HDR_LEN || memcmp(b, st_magic, 4) != 0)
		return -EINVAL;
	if (get_be16(&b[4]) != SCSITGT_PR_STATE_VERSION)
		return -ENOTSUP;
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
	return off == len ? 0 : -EINVAL;
}

static void st_free_regs(struct scsitgt__list *regs)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, regs)
	{
		free(scsitgt__container_of(pos, struct scsitgt__pr_reg, node));
	}
	scsitgt__list_init(regs);
}

SCSITGT_EXPORT int scsitgt_lun_load_pr_state(struct scsitgt_lun *lun, const void *data,
					     size_t len)
{
	struct scsitgt__pr tmp, *pr;
	int rc;

	if (lun == NULL || data == NULL)
		return -EINVAL;
	memset(&tmp, 0, sizeof(tmp));
	scsitgt__list_init(&tmp.regs);
	rc = st_decode(data, len, &tmp);
	if (rc < 0) {
		st_free_regs(&tmp.regs);
		return rc;
	}
	pr = scsitgt__pr_get(lun);
	if (pr == NULL) {
		st_free_regs(&tmp.regs);
		return -ENOMEM;
	}
	/* Registrations and the persistent reservation are replaced; the SPC-2 reservation and
	 * the store stay. */
	st_free_regs(&pr->regs);
	pr->nregs = 0;
	while (!scsitgt__list_empty(&tmp.regs)) {
		struct scsitgt__list *n = tmp.regs.next;

		scsitgt__list_remove(n);
		scsitgt__list_add_tail(&pr->regs, n);
		pr->nregs++;
	}
	pr->generation = tmp.generation;
	pr->aptpl = tmp.aptpl;
	pr->held = tmp.held;
	pr->type = tmp.type;
	pr->scope = 0;
	pr->holder = tmp.holder;
	return 0;
}

static void file_save(void *arg, struct scsitgt_lun *lun, const void *data, size_t len)
{
	const char *path = arg;
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
	}
	if (rc)
		scsitgt__log(&lun->tgt->engine->log, SCSITGT_LOG_ERROR, "core",
			     "LUN %llu: cannot save the reservation state to %s: %s",
			     (unsigned long long)lun->id, path, strerror(-rc));
}

SCSITGT_EXPORT int scsitgt_lun_use_pr_file(struct scsitgt_lun *lun, const char *path)
{
	struct scsitgt__pr *pr;
	char *copy;
	int fd, rc = 0;

	if (lun == NULL || path == NULL || path[0] == '\0')
		return -EINVAL;
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
		if (rc == 0)
			rc = n > ST_MAX_LEN ? -EINVAL : scsitgt_lun_load_pr_state(lun, b, n);
		free(b);
		if (rc < 0)
			return rc;
	} else if (errno != ENOENT) {
		return -errno;
	}
	copy = strdup(path);
	if (copy == NULL)
		return -ENOMEM;
	pr = scsitgt__pr_get(lun);
	if (pr == NULL) {
		free(copy);
		return -ENOMEM;
	}
	free(pr->file_path);
	pr->file_path = copy;
	pr->save = file_save;
	pr->save_arg = copy;
	return 0;
}
