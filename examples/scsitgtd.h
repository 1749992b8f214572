/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's daemon state, shared by scsitgtd.c (main loop, signals, stats) and
 * scsitgtd_apply.c with its parts (bringing the engine to a configuration, as a diff on
 * reload; scsitgtd_apply.h).
 */
#ifndef SCSITGTD_H
#define SCSITGTD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <uv.h>

#include <libscsitgt/scsitgt.h>

#include "scsitgtd_config.h"

/* A running target and the SRP ports of its configuration (parallel to its srps). */
struct scsitgtd_tgt {
	struct scsitgt_target *tgt; /* NULL: creation failed */
	struct scsitgt_srp_portal **srps;
	/* tgt NULL: why (scsitgtd_target_create(), for show); waiting when the name is held by a
	 * removed target still going away (created once it is gone). */
	char why[160];
	bool waiting;
};

struct scsitgtd {
	uv_loop_t *loop;
	const char *path;
	struct scsitgt_engine *engine;
	struct scsitgtd_config *cfg;	 /* the configuration applied; NULL before the first */
	struct scsitgtd_tgt *tgts;	 /* cfg->ntargets targets */
	struct scsitgt_portal **portals; /* cfg->nportals handles (NULL: creation failed) */
	/* Read by log_cb on whichever thread logs (worker loops, RBD image threads:
	 * docs/threading.md), set on the loop at start and reload. */
	atomic_int log_level;
	bool log_journal; /* stderr is journald's: "<N>" priority prefixes, no timestamps */
	uv_signal_t sig_hup, sig_term, sig_int, sig_usr1;
	bool stopping;
	int exit_code;
	/* Backends left unclosed at shutdown (scsitgtd_backends_orphaned()): librbd's threads
	 * still hold them, so the process ends with _exit(), running no destructor under them. */
	bool backends_left;
	/* RBD LUNs whose image is being opened off the loop (scsitgtd_apply_lun.c). */
	struct scsitgtd_rbd_open *rbd_opens;
	/* RBD LUNs whose shared reservations are not attached: the attach runs or failed; they
	 * stay offline meanwhile (scsitgtd_apply_lun.c). */
	struct scsitgtd_pr_share *pr_shares;
	/* The management socket (scsitgtd_control.c); NULL without one. */
	struct scsitgtd_control *control;
	/* The HTTP metrics listener (scsitgtd_metrics.c); NULL without one. */
	struct scsitgtd_metrics *metrics;
	/* The RBD gateways of targets with rbd_gateway (scsitgtd_apply_lun.c), and what to call
	 * once the last one is gone when stopping. */
	struct scsitgtd_gw *gws;
	void (*gws_stopped)(struct scsitgtd *d);
	/* Why the LUNs of the configuration that failed were not created (scsitgtd_lun_state.c). */
	struct scsitgtd_lun_fail *lun_fails;
	/* A reload's outcome is logged once the RBD images it opens are open, or after
	 * SCSITGTD_SETTLE_MS (scsitgtd_reload_settle()). */
	uv_timer_t settle_timer;
	bool settle_timer_made;
	bool settle_pending;
	/* Called on the loop when an RBD LUN's open ends (created or not; the control socket's
	 * deferred add_lun answers then). NULL: nobody waits. */
	void (*lun_settled)(struct scsitgtd *d, const char *tname, uint64_t id);
	/* Configuration files applied (start, reload): a LUN added by the control socket is the
	 * file's again after one. */
	unsigned int file_gen;
};

void scsitgtd_log(struct scsitgtd *d, enum scsitgt_log_level level, const char *fmt, ...)
	SCSITGT_PRINTF(3, 4);

/*
 * Make the engine serve @nc: a diff against d->cfg (NULL on the first call). d adopts @nc on
 * success. Failures of single objects are logged and the rest goes on, as an operator would
 * want. Returns 0 or -ENOMEM (then nothing changed and the caller still owns @nc).
 */
int scsitgtd_apply(struct scsitgtd *d, struct scsitgtd_config *nc);

/* Room for the errors of a configuration file (SCSITGTD_MAX_ERRORS lines of FILE:LINE: what). */
#define SCSITGTD_ERR_SIZE 8192

/*
 * Re-read the configuration file and apply it (SIGHUP, the control socket's "reload").
 * Returns 0, or -EINVAL (the file is wrong: @err has one "FILE:LINE: what" line per error,
 * each also logged; the running configuration stays) or -ENOMEM. @err_size: SCSITGTD_ERR_SIZE.
 */
int scsitgtd_reload(struct scsitgtd *d, char *err, size_t err_size);

/* Whether the library accepts a LUN's fault specification: 0 or its negative errno. */
int scsitgtd_fault_spec_check(const char *spec);

/* Whether RBD images are still being opened for LUNs of the configuration. */
bool scsitgtd_opening(const struct scsitgtd *d);
/* Whether LUN @id of target @tname is an RBD LUN whose image is being opened (the LUN comes). */
bool scsitgtd_lun_opening(struct scsitgtd *d, const char *tname, uint64_t id);

/* ---- scsitgtd_lun_state.c: which LUNs of the configuration run, why the others do not ---- */

/* How long a reload's answer (and its log line) waits for the RBD images it opens: as long as
 * an add_lun answer waits for its image (docs/scsitgtd.md). */
#define SCSITGTD_SETTLE_MS 10000

/* Record why LUN @id of @tname is not created (the first reason since its attempt began). */
void scsitgtd_lun_why(struct scsitgtd *d, const char *tname, uint64_t id, const char *fmt, ...)
	SCSITGT_PRINTF(4, 5);
/* A new attempt at LUN @id of @tname: its reason is forgotten. */
void scsitgtd_lun_why_reset(struct scsitgtd *d, const char *tname, uint64_t id);
/* Why LUN @id of @tname was not created, if its last attempt failed; else NULL. */
const char *scsitgtd_lun_failure(struct scsitgtd *d, const char *tname, uint64_t id);
/* Forget the reasons of LUNs the configuration applied no longer has (@all: every one). */
void scsitgtd_lun_fails_prune(struct scsitgtd *d, bool all);

/* What became of a LUN of the configuration applied. */
enum scsitgtd_lun_run {
	SCSITGTD_LUN_RUNNING, /* the library serves it */
	SCSITGTD_LUN_OPENING, /* its RBD image is being opened */
	SCSITGTD_LUN_FAILED,  /* not created: *why says why */
};

/* The state of LUN @id of target @t (one of d->cfg's), and for a failed one why (else NULL). */
enum scsitgtd_lun_run scsitgtd_lun_run(struct scsitgtd *d, const struct scsitgtd_target *t,
				       uint64_t id, const char **why);
typedef void (*scsitgtd_lun_visit_cb)(void *arg, const struct scsitgtd_target *t,
				      const struct scsitgtd_lun *l, enum scsitgtd_lun_run s,
				      const char *why);
/* Call @fn (may be NULL) for every LUN of the configuration applied that does not run, in the
 * file's order; returns how many there are. */
size_t scsitgtd_luns_not_running(struct scsitgtd *d, scsitgtd_lun_visit_cb fn, void *arg);
/* Whether an RBD image of a LUN of the configuration applied is being opened. */
bool scsitgtd_luns_opening(struct scsitgtd *d);
/* After a reload applied a file: log which of its LUNs were not created and why, once no image
 * of the file is opening any more, SCSITGTD_SETTLE_MS at most (then those still opening too). */
void scsitgtd_reload_settle(struct scsitgtd *d);
/* An RBD LUN's open ended (created or not): the waiting answers and log line (if any) go. */
void scsitgtd_lun_settled(struct scsitgtd *d, const char *tname, uint64_t id);
/* Stop waiting for a reload's outcome (the daemon stops). */
void scsitgtd_reload_settle_stop(struct scsitgtd *d);

/*
 * Stop every RBD gateway (each releases the image's lock if it holds it, so that another
 * gateway takes it over at once) and then call @cb: at once when there is none, else on the
 * loop. Before the engine goes (a gateway must not outlive its LUN's backend).
 */
void scsitgtd_gateways_stop(struct scsitgtd *d, void (*cb)(struct scsitgtd *d));

/*
 * Once the engine is gone: close the LUN backends it never closed because they still held ios
 * (docs/threading.md "Teardown" 3), each logged. Returns how many could not be closed (RBD
 * images whose io librbd still has): their handles keep the loop alive, so the caller stops it.
 */
unsigned int scsitgtd_backends_orphaned(struct scsitgtd *d);

/* Free what scsitgtd_apply() allocated (after the engine is gone). */
void scsitgtd_free(struct scsitgtd *d);

#endif /* SCSITGTD_H */
