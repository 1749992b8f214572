/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of scsitgtd's configuration parser (examples/scsitgtd_config.c on libinih): any
 * text must be parsed or refused with a "line N: ..." message, never crash or leak. The parser
 * lives with the example (it is not part of the library), so it is compiled into this target
 * directly; libinih comes from the system (tests/fuzz/meson.build).
 */
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../examples/scsitgtd_config.c"
#include "../../examples/scsitgtd_config_keys.c"
#include "../../examples/size_arg.c"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
				if (l->backend == SCSITGTD_BACKEND_FILE ||
				    l->backend == SCSITGTD_BACKEND_BLOCK)
					CHECK(l->path != NULL);
				else if (l->backend == SCSITGTD_BACKEND_RBD)
					CHECK(l->path != NULL && strchr(l->path, '/') &&
					      l->size == 0);
				else
					CHECK(l->size > 0 && l->path == NULL);
			}
			CHECK(cfg->targets[i].name != NULL);
			/* An RBD gateway's target: its one RBD LUN, no ALUA groups of its own. */
			if (cfg->targets[i].gw.group) {
				const struct scsitgtd_target *t = &cfg->targets[i];

				CHECK(t->nluns == 1 && t->luns[0].backend == SCSITGTD_BACKEND_RBD);
				CHECK(t->ngroups == 0 && t->alua_modes == 0);
				CHECK(t->gw.npeers <= SCSITGTD_MAX_GW_PEERS);
				for (size_t j = 0; j < t->gw.npeers; j++)
					CHECK(t->gw.peer_groups[j] != t->gw.group);
			}
			for (size_t j = 0; j < cfg->targets[i].ngroups; j++) {
				CHECK(cfg->targets[i].groups[j].id > 0);
				CHECK(cfg->targets[i].groups[j].nports <= SCSITGTD_MAX_ALUA_PORTS);
			}
		}
		scsitgtd_config_free(cfg);
	} else {
		CHECK(cfg == NULL);
		CHECK(rc == -ENOMEM || strncmp(err, "line ", 5) == 0);
	}
	return 0;
}
