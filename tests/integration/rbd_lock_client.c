/* SPDX-License-Identifier: MIT */
/*
 * rbd_lock_client - another Ceph client taking an image's exclusive lock, for the RBD fault
 * tests (rbd_fault.sh): what a second gateway does.
 *
 * Usage: rbd_lock_client POOL/IMAGE hold|break
 *   hold   rbd_lock_acquire(EXCLUSIVE): the current owner hands the lock over (librbd's
 *          cooperative transfer); the owner's later writes fail with -EROFS.
 *   break  rbd_lock_break() of the current owner, then rbd_lock_acquire(): the owner is
 *          blocklisted (fenced); its later writes fail with -ESHUTDOWN.
 * Prints "locked" once it owns the lock, then waits for a line (or EOF) on stdin, releases
 * the lock and exits 0. The cluster comes from $CEPH_CONF, the client is client.admin.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

static int fail(const char *what, int r)
{
	fprintf(stderr, "rbd_lock_client: %s: %s\n", what, strerror(-r));
	return 1;
}

int main(int argc, char **argv)
{
	rados_t cluster;
	rados_ioctx_t io;
	rbd_image_t img;
	char pool[256], line[64];
	const char *slash;
	int r;

	if (argc != 3 || (slash = strchr(argv[1], '/')) == NULL ||
	    (size_t)(slash - argv[1]) >= sizeof(pool) ||
	    (strcmp(argv[2], "hold") != 0 && strcmp(argv[2], "break") != 0)) {
		fprintf(stderr, "usage: rbd_lock_client POOL/IMAGE hold|break\n");
		return 2;
	}
	memcpy(pool, argv[1], (size_t)(slash - argv[1]));
	pool[slash - argv[1]] = '\0';
	if ((r = rados_create2(&cluster, "ceph", "client.admin", 0)) < 0)
		return fail("rados_create2", r);
	if ((r = rados_conf_read_file(cluster, NULL)) < 0)
		return fail("rados_conf_read_file", r);
	rados_conf_set(cluster, "client_mount_timeout", "30");
	if ((r = rados_connect(cluster)) < 0)
		return fail("rados_connect", r);
	if ((r = rados_ioctx_create(cluster, pool, &io)) < 0)
		return fail("rados_ioctx_create", r);
	if ((r = rbd_open(io, slash + 1, &img, NULL)) < 0)
		return fail("rbd_open", r);
	if (strcmp(argv[2], "break") == 0) {
		rbd_lock_mode_t mode;
		char *owners[4];
		size_t n = 4;

		if ((r = rbd_lock_get_owners(img, &mode, owners, &n)) < 0)
			return fail("rbd_lock_get_owners", r);
		if (n == 0)
			return fail("rbd_lock_get_owners (no owner)", -ENOENT);
		r = rbd_lock_break(img, RBD_LOCK_MODE_EXCLUSIVE, owners[0]);
		rbd_lock_get_owners_cleanup(owners, n);
		if (r < 0)
			return fail("rbd_lock_break", r);
	}
	if ((r = rbd_lock_acquire(img, RBD_LOCK_MODE_EXCLUSIVE)) < 0)
		return fail("rbd_lock_acquire", r);
	printf("locked\n");
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL) {
		/* EOF: release as well */
	}
	rbd_lock_release(img);
	rbd_close(img);
	rados_ioctx_destroy(io);
	rados_shutdown(cluster);
	return 0;
}
