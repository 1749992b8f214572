/* SPDX-License-Identifier: MIT */
/*
 * The environment that overrides scsitgt_engine_opts.conn_workers (SCSITGT_CONN_WORKERS and
 * its older name SCSITGT_EXPERIMENTAL_CONN_WORKERS, include/libscsitgt/engine.h), put aside
 * while a group of unit tests runs: they test the default and the option, not the environment
 * they were started in (a developer's shell or a CI job may export it). cmocka group fixtures:
 *
 *	return cmocka_run_group_tests(tests, cw_env_setup, cw_env_teardown);
 *
 * Header only, so that tests outside tests/unit/core include it by its path without a
 * dependency of their own. The group's state is left alone (each test keeps its own).
 */
#ifndef SCSITGT_TESTS_CONN_WORKERS_ENV_H
#define SCSITGT_TESTS_CONN_WORKERS_ENV_H

#include <stdlib.h>
#include <string.h>

static const char *const cw_env_names[] = { "SCSITGT_CONN_WORKERS",
					    "SCSITGT_EXPERIMENTAL_CONN_WORKERS" };
/* The values the group found (NULL: unset), given back at its end. */
static char *cw_env_saved[sizeof(cw_env_names) / sizeof(cw_env_names[0])];

/* Group setup: keep and unset the variables. */
static inline int cw_env_setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cw_env_names) / sizeof(cw_env_names[0]); i++) {
		const char *v = getenv(cw_env_names[i]);

		cw_env_saved[i] = v ? strdup(v) : NULL;
		if ((v && cw_env_saved[i] == NULL) || unsetenv(cw_env_names[i]) != 0)
			return -1;
	}
	return 0;
}

/* Group teardown: the variables as the group found them. */
static inline int cw_env_teardown(void **state)
{
	int rc = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cw_env_names) / sizeof(cw_env_names[0]); i++) {
		if (cw_env_saved[i] ? setenv(cw_env_names[i], cw_env_saved[i], 1) != 0 :
				      unsetenv(cw_env_names[i]) != 0)
			rc = -1;
		free(cw_env_saved[i]);
		cw_env_saved[i] = NULL;
	}
	return rc;
}

#endif /* SCSITGT_TESTS_CONN_WORKERS_ENV_H */
