/* SPDX-License-Identifier: MIT */
/*
 * The fault backend's text specification parser (scsitgt_backend_fault_add_spec(), used by
 * minitarget's fault= LUN flag): any bytes either add rules or are refused with -EINVAL or
 * -ENOSPC, never crash, never read past the string.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "libscsitgt/backend_fault.h"

static int nop_open(void *bctx, struct scsitgt_lun_geometry *geo)
{
	(void)bctx;
	(void)geo;
	return 0;
}

static void nop_close(void *bctx, scsitgt_done_cb cb, void *cb_arg)
{
	(void)bctx;
	if (cb)
		cb(cb_arg, 0);
}

static void nop_submit(void *bctx, struct scsitgt_io *io)
{
	(void)bctx;
	(void)io;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct scsitgt_backend_ops ops = {
		.size = sizeof(ops),
		.name = "nop",
		.open = nop_open,
		.close = nop_close,
		.submit = nop_submit,
	};
	static uv_loop_t loop; /* never run: the parser registers no handle */
	char *spec;
	void *f;
	int rc;

	if (size > 4096)
		return 0;
	/* The API takes a C string: an exact-size copy lets ASan see any overread. */
	spec = malloc(size + 1);
	if (spec == NULL)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	if (scsitgt_backend_fault_create(&f, &loop, &ops, NULL) == 0) {
		rc = scsitgt_backend_fault_add_spec(f, spec);
		if (rc < 0 && rc != -EINVAL && rc != -ENOSPC)
			abort();
		/* Again until the rule table is full: -ENOSPC must leave it consistent. */
		for (int i = 0; i < 70 && rc > 0; i++)
			rc = scsitgt_backend_fault_add_spec(f, spec);
		if (scsitgt_backend_fault_destroy(f) != 0)
			abort();
	}
	free(spec);
	return 0;
}
