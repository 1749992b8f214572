// SPDX-License-Identifier: MIT
//
// Zero-copy READs through librbd's C++ API (rbd_zc.h says what and why). The only C++ file of
// the library: everything else of the RBD backend is C (rbd.c, rbd_io.c).
//
// The image. rbd.c opens it through the C API, and the C++ calls need a librbd::Image. Both are
// handles over the same librbd::ImageCtx: librbd.cc casts rbd_image_t to ImageCtx *, and
// librbd::Image's only member is that pointer (image_ctx_t ctx, a void *; no virtual function,
// no base). Its size is part of librbd's ABI, since programs hold Images by value. So the C
// handle, seen through a librbd::Image lvalue, is that Image: image_view() does this without
// ever constructing, copying or destroying an Image (whose destructor would close the image).
//
// Completions. rbd_completion_t is a librbd::RBD::AioCompletion * (rbd_aio_create_completion()
// allocates one), so the completions rbd_io.c creates and drains serve the C++ calls unchanged.
#include <rados/buffer.h>
#include <rbd/librbd.hpp>

#include <cerrno>
#include <new>
#include <type_traits>

#include "backend/rbd_zc.h"

static_assert(sizeof(librbd::Image) == sizeof(rbd_image_t),
	      "librbd::Image is a handle over the C API's rbd_image_t");
static_assert(std::is_standard_layout<librbd::Image>::value,
	      "librbd::Image is a plain handle over the C API's rbd_image_t");

static librbd::Image *image_view(rbd_image_t *image)
{
	return reinterpret_cast<librbd::Image *>(image);
}

static librbd::RBD::AioCompletion *completion_of(rbd_completion_t c)
{
	return static_cast<librbd::RBD::AioCompletion *>(c);
}

int scsitgt__rbd_zc_read(rbd_image_t *image, uint64_t off, size_t len, rbd_completion_t c,
			 struct scsitgt__rbd_zc_data **out)
{
	ceph::bufferlist *bl = new (std::nothrow) ceph::bufferlist();

	if (bl == nullptr)
		return -ENOMEM;
	try {
		int r = image_view(image)->aio_read(off, len, *bl, completion_of(c));

		if (r < 0) {
			delete bl;
			return r;
		}
	} catch (const std::bad_alloc &) {
		delete bl;
		return -ENOMEM;
	} catch (...) {
		delete bl;
		return -EIO;
	}
	*out = reinterpret_cast<struct scsitgt__rbd_zc_data *>(bl);
	return 0;
}

static const ceph::bufferlist &data_bl(const struct scsitgt__rbd_zc_data *d)
{
	return *reinterpret_cast<const ceph::bufferlist *>(d);
}

const void *scsitgt__rbd_zc_data_contiguous(const struct scsitgt__rbd_zc_data *d, size_t len)
{
	const ceph::bufferlist &bl = data_bl(d);

	if (bl.length() != len || bl.get_num_buffers() != 1)
		return nullptr;
	return bl.front().c_str();
}

size_t scsitgt__rbd_zc_data_copy(const struct scsitgt__rbd_zc_data *d, const struct iovec *iov,
				 int iovcnt)
{
	const ceph::bufferlist &bl = data_bl(d);
	size_t done = 0;

	try {
		auto it = bl.cbegin();

		for (int i = 0; i < iovcnt && done < bl.length(); i++) {
			size_t n = iov[i].iov_len;

			if (n > bl.length() - done)
				n = bl.length() - done;
			it.copy(static_cast<unsigned>(n), static_cast<char *>(iov[i].iov_base));
			done += n;
		}
	} catch (...) {
		// Cannot happen (the lengths are checked); the caller sees a short copy.
	}
	return done;
}

void scsitgt__rbd_zc_data_release(void *d)
{
	delete reinterpret_cast<ceph::bufferlist *>(d);
}
