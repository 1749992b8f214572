/* SPDX-License-Identifier: MIT */
/*
 * A cluster reservation store (libscsitgt/pr.h) for the tests of held admission
 * (core/pr_hold.c): READ and WRITE never ask it to fetch or commit (either fails the test), it
 * counts the rechecks it is asked (on home) and never answers them, and it notes its detach.
 * The test holds commands by running its lease out (scsitgt_lun_set_pr_lease(lun, 1)).
 */
#ifndef SCSITGT_TESTS_PR_HOLD_STORE_H
#define SCSITGT_TESTS_PR_HOLD_STORE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "libscsitgt/pr.h"

struct hold_store {
	_Atomic unsigned int nrecheck;
	_Atomic bool detached;
};

static inline void hs_fetch(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req)
{
	(void)arg;
	(void)lun;
	(void)req;
	fail_msg("no command of these tests reads the store");
}

static inline void hs_commit(void *arg, struct scsitgt_lun *lun, struct scsitgt_pr_req *req,
			     const void *data, size_t len, uint64_t version)
{
	(void)arg;
	(void)lun;
	(void)req;
	(void)data;
	(void)len;
	(void)version;
	fail_msg("no command of these tests changes the store");
}

static inline void hs_recheck(void *arg, struct scsitgt_lun *lun)
{
	(void)lun;
	atomic_fetch_add(&((struct hold_store *)arg)->nrecheck, 1);
}

static inline void hs_detach(void *arg, struct scsitgt_lun *lun)
{
	(void)lun;
	atomic_store(&((struct hold_store *)arg)->detached, true);
}

static const struct scsitgt_pr_cluster_ops hold_store_ops = {
	.size = sizeof(struct scsitgt_pr_cluster_ops),
	.fetch = hs_fetch,
	.commit = hs_commit,
	.detach = hs_detach,
	.recheck = hs_recheck,
};

#endif /* SCSITGT_TESTS_PR_HOLD_STORE_H */
