/* SPDX-License-Identifier: MIT */
/*
 * Zero-copy READs through librbd's C++ API (rbd_zc.cc), for the RBD backend (rbd.c, rbd_io.c),
 * which owns everything else: the image, the completions (created with the C API and drained
 * from each loop's eventfd as usual), the io and its errors.
 *
 * librbd's C API copies every READ's data from the OSD's reply into the caller's iovecs
 * (rbd_aio_readv()). Its C++ API returns the data in a ceph::bufferlist instead: the backend
 * lends that buffer to the transport (scsitgt_io_lend_data()) and frees the bufferlist when the
 * transport is done with it (docs/rbd.md, "Zero-copy I/O"). WRITEs need no C++: librbd's C API
 * writes without a copy by itself when nothing in librbd keeps written buffers (rbd.c).
 *
 * Built only with the meson feature rbd_zero_copy (a C++ compiler and librados' C++ headers,
 * Debian libradospp-dev); otherwise the functions below are stubs returning -ENOTSUP and the
 * backend copies as before. No C++ exception leaves these functions.
 */
#ifndef SCSITGT_BACKEND_RBD_ZC_H
#define SCSITGT_BACKEND_RBD_ZC_H

#include <errno.h>
#include <rbd/librbd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "scsitgt_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A READ's data as librbd returned it (a ceph::bufferlist). */
struct scsitgt__rbd_zc_data;

#if SCSITGT_HAVE_RBD_ZC

/*
 * Start reading @len bytes at @off of *@image into a new bufferlist; @c is a completion of
 * rbd_aio_create_completion(). Returns 0 and sets *@out (valid, and filled once @c completed
 * successfully, until scsitgt__rbd_zc_data_release()), or a negative errno: nothing started.
 */
int scsitgt__rbd_zc_read(rbd_image_t *image, uint64_t off, size_t len, rbd_completion_t c,
			 struct scsitgt__rbd_zc_data **out);

/* The data of a completed read as one contiguous range of @len bytes, or NULL when librbd
 * returned it in several buffers (or another length): then copy it out. */
const void *scsitgt__rbd_zc_data_contiguous(const struct scsitgt__rbd_zc_data *d, size_t len);

/* Copy the data into @iov (at most the data's length); returns the bytes copied. */
size_t scsitgt__rbd_zc_data_copy(const struct scsitgt__rbd_zc_data *d, const struct iovec *iov,
				 int iovcnt);

/* Free the data (a scsitgt_io_lend_data() release function; any thread). */
void scsitgt__rbd_zc_data_release(void *d);

#else

static inline int scsitgt__rbd_zc_read(rbd_image_t *image, uint64_t off, size_t len,
				       rbd_completion_t c, struct scsitgt__rbd_zc_data **out)
{
	(void)image, (void)off, (void)len, (void)c, (void)out;
	return -ENOTSUP;
}

static inline const void *scsitgt__rbd_zc_data_contiguous(const struct scsitgt__rbd_zc_data *d,
							  size_t len)
{
	(void)d, (void)len;
	return NULL;
}

static inline size_t scsitgt__rbd_zc_data_copy(const struct scsitgt__rbd_zc_data *d,
					       const struct iovec *iov, int iovcnt)
{
	(void)d, (void)iov, (void)iovcnt;
	return 0;
}

static inline void scsitgt__rbd_zc_data_release(void *d)
{
	(void)d;
}

#endif /* SCSITGT_HAVE_RBD_ZC */

#ifdef __cplusplus
}
#endif

#endif /* SCSITGT_BACKEND_RBD_ZC_H */
