/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd: which LUNs of the configuration applied run, and why the others do not. A LUN the
 * configuration asks for that the library does not serve is either opening (its RBD image,
 * off the loop) or failed. A failure is recorded with its reason when it happens (the first
 * reason since the attempt began, the most precise one), and kept until the next attempt at
 * that LUN (every apply tries a failed LUN again) or until the configuration no longer has it.
 * The control socket's show, add_lun and reload answers say it; a reload's outcome is logged
 * once the images it opens are open (SCSITGTD_SETTLE_MS at most).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsitgtd.h"

/* Why one LUN was not created. */
struct scsitgtd_lun_fail {
	struct scsitgtd_lun_fail *next;
	uint64_t id;
	char tname[224];
	char why[512];
};

static struct scsitgtd_lun_fail **fail_find(struct scsitgtd *d, const char *tname, uint64_t id)
{
	struct scsitgtd_lun_fail **pp;

	for (pp = &d->lun_fails; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id && !strcmp((*pp)->tname, tname))
			break;
	return pp;
}

void scsitgtd_lun_why(struct scsitgtd *d, const char *tname, uint64_t id, const char *fmt, ...)
{
	struct scsitgtd_lun_fail *f;
	va_list ap;

	if (*fail_find(d, tname, id))
		return; /* the first reason stays */
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return; /* the LUN shows as failed, its reason as unknown (the log has it) */
	f->id = id;
	snprintf(f->tname, sizeof(f->tname), "%s", tname);
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	f->next = d->lun_fails;
	d->lun_fails = f;
}

void scsitgtd_lun_why_reset(struct scsitgtd *d, const char *tname, uint64_t id)
{
	struct scsitgtd_lun_fail **pp = fail_find(d, tname, id), *f = *pp;

	if (f) {
		*pp = f->next;
		free(f);
	}
}

const char *scsitgtd_lun_failure(struct scsitgtd *d, const char *tname, uint64_t id)
{
	struct scsitgtd_lun_fail *f = *fail_find(d, tname, id);

	return f ? f->why : NULL;
}

void scsitgtd_lun_fails_prune(struct scsitgtd *d, bool all)
{
	struct scsitgtd_lun_fail **pp = &d->lun_fails, *f;
	const struct scsitgtd_target *t;

	while ((f = *pp) != NULL) {
		t = all || d->cfg == NULL ? NULL : scsitgtd_config_find_target(d->cfg, f->tname);
		if (t && scsitgtd_config_find_lun(t, f->id)) {
			pp = &f->next;
		} else {
			*pp = f->next;
			free(f);
		}
	}
}

enum scsitgtd_lun_run scsitgtd_lun_run(struct scsitgtd *d, const struct scsitgtd_target *t,
				       uint64_t id, const char **why)
{
	struct scsitgt_target *tgt = d->tgts[t - d->cfg->targets].tgt;

	*why = NULL;
	if (tgt == NULL) {
		*why = "its target was not created (the log says why)";
		return SCSITGTD_LUN_FAILED;
	}
	if (scsitgt_target_get_lun(tgt, id))
		return SCSITGTD_LUN_RUNNING;
	if (scsitgtd_lun_opening(d, t->name, id))
		return SCSITGTD_LUN_OPENING;
	*why = scsitgtd_lun_failure(d, t->name, id);
	if (*why == NULL)
		*why = "not created (the log says why)";
	return SCSITGTD_LUN_FAILED;
}

size_t scsitgtd_luns_not_running(struct scsitgtd *d, scsitgtd_lun_visit_cb fn, void *arg)
{
	size_t n = 0;

	for (size_t i = 0; d->cfg && i < d->cfg->ntargets; i++) {
		const struct scsitgtd_target *t = &d->cfg->targets[i];

		for (size_t j = 0; j < t->nluns; j++) {
			const char *why;
			enum scsitgtd_lun_run s = scsitgtd_lun_run(d, t, t->luns[j].id, &why);

			if (s == SCSITGTD_LUN_RUNNING)
				continue;
			n++;
			if (fn)
				fn(arg, t, &t->luns[j], s, why);
		}
	}
	return n;
}

static void count_opening(void *arg, const struct scsitgtd_target *t, const struct scsitgtd_lun *l,
			  enum scsitgtd_lun_run s, const char *why)
{
	(void)t;
	(void)l;
	(void)why;
	*(size_t *)arg += s == SCSITGTD_LUN_OPENING;
}

bool scsitgtd_luns_opening(struct scsitgtd *d)
{
	size_t n = 0;

	scsitgtd_luns_not_running(d, count_opening, &n);
	return n > 0;
}

/* ---- a reload's outcome in the log ---- */

struct report {
	char *buf;
	size_t size, len;
	size_t nfailed, nopening;
};

static void report_lun(void *arg, const struct scsitgtd_target *t, const struct scsitgtd_lun *l,
		       enum scsitgtd_lun_run s, const char *why)
{
	struct report *r = arg;
	int n;

	if (s == SCSITGTD_LUN_OPENING)
		r->nopening++;
	else
		r->nfailed++;
	if (r->len >= r->size)
		return;
	n = snprintf(r->buf + r->len, r->size - r->len, "%s%s LUN %llu: %s", r->len ? "; " : "",
		     t->name, (unsigned long long)l->id,
		     s == SCSITGTD_LUN_OPENING ? "still opening" : why);
	if (n > 0)
		r->len += (size_t)n;
}

/* Log which LUNs of the file the reload could not create (or still opens): one line. */
static void settle_report(struct scsitgtd *d)
{
	char buf[2048];
	struct report r = { .buf = buf, .size = sizeof(buf) };

	d->settle_pending = false;
	if (d->settle_timer_made)
		uv_timer_stop(&d->settle_timer);
	buf[0] = '\0';
	if (scsitgtd_luns_not_running(d, report_lun, &r) == 0) {
		scsitgtd_log(d, SCSITGT_LOG_NOTICE, "reload: every LUN of %s runs", d->path);
		return;
	}
	scsitgtd_log(d, SCSITGT_LOG_WARNING,
		     "reload: %zu LUN(s) of %s not created, %zu still opening: %s%s", r.nfailed,
		     d->path, r.nopening, buf, r.len >= sizeof(buf) ? "..." : "");
}

static void settle_fire(uv_timer_t *timer)
{
	settle_report(timer->data);
}

void scsitgtd_reload_settle(struct scsitgtd *d)
{
	if (!scsitgtd_luns_opening(d)) {
		settle_report(d);
		return;
	}
	if (!d->settle_timer_made) {
		if (uv_timer_init(d->loop, &d->settle_timer) < 0) {
			settle_report(d);
			return;
		}
		d->settle_timer.data = d;
		d->settle_timer_made = true;
	}
	d->settle_pending = true;
	uv_timer_start(&d->settle_timer, settle_fire, SCSITGTD_SETTLE_MS, 0);
}

void scsitgtd_lun_settled(struct scsitgtd *d, const char *tname, uint64_t id)
{
	if (d->lun_settled)
		d->lun_settled(d, tname, id);
	if (d->settle_pending && !scsitgtd_luns_opening(d))
		settle_report(d);
}

void scsitgtd_reload_settle_stop(struct scsitgtd *d)
{
	d->settle_pending = false;
	if (d->settle_timer_made) {
		d->settle_timer_made = false;
		uv_close((uv_handle_t *)&d->settle_timer, NULL);
	}
}
