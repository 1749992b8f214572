/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of scsitgtd's configuration parser (examples/scsitgtd_config.c): any text must be
 * parsed or refused with a "line N: ..." message, never crash or leak. The parser lives with the
 * example (it is not part of the library), so it is compiled into this target directly.
 */
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../examples/scsitgtd_config.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checked in every build type (CHECK() vanishes under NDEBUG). */
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			abort();                                                                   \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgtd_config *cfg = NULL;
	char err[256];
	int rc;

	rc = scsitgtd_config_parse((const char *)data, size, &cfg, err, sizeof(err));
	if (rc == 0) {
		CHECK(cfg != NULL);
		/* Every accepted LUN satisfies the section checks. */
		for (size_t i = 0; i < cfg->ntargets; i++) {
			for (size_t j = 0; j < cfg->targets[i].nluns; j++) {
				const struct scsitgtd_lun *l = &cfg->targets[i].luns[j];

				CHECK(l->id <= SCSITGTD_MAX_LUN_ID);
				CHECK(l->backend == SCSITGTD_BACKEND_FILE ? l->path != NULL
									   : l->size > 0);
			}
		}
		scsitgtd_config_free(cfg);
	} else {
		CHECK(cfg == NULL);
		CHECK(rc == -ENOMEM || strncmp(err, "line ", 5) == 0);
	}
	return 0;
}
