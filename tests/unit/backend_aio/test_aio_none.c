/* SPDX-License-Identifier: MIT */
/* Without libaio the aio API exists and reports -ENOTSUP (src/backend/aio_none.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "libscsitgt/backend_aio.h"

static void test_enotsup(void **state)
{
	struct scsitgt_backend_aio_opts o;
	void *b = NULL;
	uint64_t nb;

	(void)state;
	scsitgt_backend_aio_opts_init(&o, sizeof(o));
	assert_int_equal(o.size, sizeof(o));
	assert_true(o.direct);
	assert_int_equal(o.queue_depth, 128);
	o.path = "/var/tmp/x";
	assert_null(scsitgt_backend_aio_ops());
	assert_int_equal(scsitgt_backend_aio_create(&b, &o), -ENOTSUP);
	assert_null(b);
	assert_int_equal(scsitgt_backend_aio_resize(&o, &nb), -ENOTSUP);
	assert_int_equal(scsitgt_backend_aio_is_direct(&o), -ENOTSUP);
	assert_int_equal(scsitgt_backend_aio_get_engine(&o), -ENOTSUP);
	assert_int_equal(o.engine, SCSITGT_BACKEND_AIO_ENGINE_AUTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enotsup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
