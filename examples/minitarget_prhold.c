/* SPDX-License-Identifier: MIT */
/*
 * minitarget's prhold LUN flag, for tests only (tests/integration/pr_hold.sh): the LUN's
 * persistent reservations live in a cluster store (libscsitgt/pr.h) whose lease has run out
 * and which never renews it, as a gateway whose watch of the shared object stopped answering
 * would. Every command a reservation could refuse (the read and write classes) is held for
 * it (docs/rbd.md, "A loop that runs late") until a task management function, a logout or the
 * LUN's end cuts it short. The store itself answers every fetch and commit with -EIO (a
 * PERSISTENT RESERVE OUT fails), from the loop, never inside the call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <libscsitgt/scsitgt.h>

#include "minitarget_prhold.h"

struct prhold {
	uv_timer_t timer;
	/* the request to answer (the core sends one at a time per LUN), and whether a commit */
	struct scsitgt_pr_req *req;
	bool commit;
};

static void ph_answer(uv_timer_t *t)
{
	struct prhold *ph = t->data;
	struct scsitgt_pr_req *req = ph->req;

	ph->req = NULL;
	if (req == NULL)
		return;
	if (ph->commit)
		scsitgt_pr_req_complete_commit(req, -EIO);
	else
		scsitgt_pr_req_complete_fetch(req, -EIO, NULL, 0, 0);
}

static void ph_ask(struct prhold *ph, struct scsitgt_pr_req *req, bool commit)
{
	ph->req = req;
	ph->commit = commit;
	uv_timer_start(&ph->timer, ph_answer, 0, 0);
}

static void ph_fetch(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req)
{
	(void)lun;
	ph_ask(arg, req, false);
}

static void ph_commit(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
		      const void *data, size_t len, uint64_t version)
{
	(void)lun;
	(void)data;
	(void)len;
	(void)version;
	ph_ask(arg, req, true);
}

static void ph_closed(uv_handle_t *h)
{
	free(h->data);
}

static void ph_detach(void *arg, struct scsitgt_lun *lun)
{
	struct prhold *ph = arg;

	(void)lun;
	uv_close((uv_handle_t *)&ph->timer, ph_closed);
}

/* Asked once per lapse: it never answers (the lease stays run out). */
static void ph_recheck(void *arg, struct scsitgt_lun *lun)
{
	(void)arg;
	(void)lun;
}

static const struct scsitgt_pr_cluster_ops ph_ops = {
	.size = sizeof(struct scsitgt_pr_cluster_ops),
	.fetch = ph_fetch,
	.commit = ph_commit,
	.detach = ph_detach,
	.recheck = ph_recheck,
};

int minitarget_prhold_setup(uv_loop_t *loop, struct scsitgt_lun *lun)
{
	struct prhold *ph = calloc(1, sizeof(*ph));
	int rc;

	if (ph == NULL)
		return -ENOMEM;
	rc = uv_timer_init(loop, &ph->timer);
	if (rc < 0) {
		free(ph);
		return rc;
	}
	ph->timer.data = ph;
	rc = scsitgt_lun_set_pr_cluster(lun, &ph_ops, ph);
	if (rc < 0) {
		uv_close((uv_handle_t *)&ph->timer, ph_closed);
		return rc;
	}
	/* CLOCK_MONOTONIC 1 ms: long past */
	return scsitgt_lun_set_pr_lease(lun, 1);
}
