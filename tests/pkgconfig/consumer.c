/* SPDX-License-Identifier: MIT */
/*
 * consumer - the smallest host program, built against an installed libscsitgt with nothing but
 * `pkg-config --cflags --libs libscsitgt`. Creates an engine on a uv loop, destroys it, and
 * prints what it saw so that the test can check it.
 */
#include <stdio.h>
#include <string.h>

#include <libscsitgt/scsitgt.h>

static int destroyed;

static void on_destroyed(void *cb_arg, int status)
{
	int *flag = cb_arg;

	*flag = status == 0 ? 1 : -1;
}

int main(void)
{
	uv_loop_t loop;
	struct scsitgt_engine *engine = NULL;
	struct scsitgt_engine_opts opts;

	printf("version %s\n", scsitgt_version_string());
	if (scsitgt_version() >> 16 != SCSITGT_VERSION_MAJOR) {
		fprintf(stderr, "consumer: header major %d, library %u\n", SCSITGT_VERSION_MAJOR,
			scsitgt_version() >> 16);
		return 1;
	}
	if (uv_loop_init(&loop) != 0) {
		return 1;
	}
	scsitgt_engine_opts_init(&opts, sizeof(opts));
	int ret = scsitgt_engine_create(&engine, &loop, &opts);
	if (ret < 0) {
		fprintf(stderr, "consumer: scsitgt_engine_create: %s\n", scsitgt_strerror(ret));
		return 1;
	}
	if (scsitgt_engine_get_loop(engine) != &loop) {
		fprintf(stderr, "consumer: the engine reports another loop\n");
		return 1;
	}
	scsitgt_engine_destroy(engine, on_destroyed, &destroyed);
	if (destroyed != 0) {
		fprintf(stderr, "consumer: destroy callback ran inside the call\n");
		return 1;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	if (destroyed != 1) {
		fprintf(stderr, "consumer: destroy callback %s\n",
			destroyed == 0 ? "never ran" : "reported an error");
		return 1;
	}
	if (uv_loop_close(&loop) != 0) {
		fprintf(stderr, "consumer: handles left open on the loop\n");
		return 1;
	}
	printf("engine created and destroyed\n");
	return 0;
}
