/* SPDX-License-Identifier: MIT */
/*
 * rbd_pr_hold - an LD_PRELOAD module for rbd_pr_sync.sh (section 4): a gateway whose worker
 * thread is descheduled between the attach's re-read of the reservation object and handing
 * the result to its loop, as on a loaded host (reviewh F3).
 *
 * With $RBD_PR_HOLD set to a file: the second synchronous read of a "scsitgt_pr." object (the
 * attach's re-read after its watch is up, src/backend/rbd_pr.c) returns only once that file is
 * gone, printing "rbd_pr_hold: attach re-read held" to stderr first. From then on every
 * asynchronous read of such an object fails with -EIO without being sent, so that the
 * periodic read (src/backend/rbd_pr_poll.c) cannot correct what the attach made of its copy.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rados/librados.h>

static int released;

static bool pr_object(const char *oid)
{
	return oid && strncmp(oid, "scsitgt_pr.", 11) == 0;
}

int rados_read_op_operate(rados_read_op_t op, rados_ioctx_t io, const char *oid, int flags)
{
	static int (*real)(rados_read_op_t, rados_ioctx_t, const char *, int);
	static int n;
	const char *hold = getenv("RBD_PR_HOLD");
	int r;

	if (real == NULL)
		real = (int (*)(rados_read_op_t, rados_ioctx_t, const char *, int))dlsym(
			RTLD_NEXT, "rados_read_op_operate");
	r = real(op, io, oid, flags);
	if (hold && pr_object(oid) && __atomic_add_fetch(&n, 1, __ATOMIC_SEQ_CST) == 2) {
		fprintf(stderr, "rbd_pr_hold: attach re-read held\n");
		while (access(hold, F_OK) == 0)
			usleep(10000);
		__atomic_store_n(&released, 1, __ATOMIC_SEQ_CST);
		fprintf(stderr, "rbd_pr_hold: attach re-read released\n");
	}
	return r;
}

int rados_aio_read_op_operate(rados_read_op_t op, rados_ioctx_t io, rados_completion_t c,
			      const char *oid, int flags)
{
	static int (*real)(rados_read_op_t, rados_ioctx_t, rados_completion_t, const char *, int);

	if (__atomic_load_n(&released, __ATOMIC_SEQ_CST) && pr_object(oid))
		return -EIO;
	if (real == NULL)
		real = (int (*)(rados_read_op_t, rados_ioctx_t, rados_completion_t, const char *,
				int))dlsym(RTLD_NEXT, "rados_aio_read_op_operate");
	return real(op, io, c, oid, flags);
}
