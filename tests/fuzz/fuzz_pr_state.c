/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the reservation state format (include/libscsitgt/pr.h, versions 1 and 2): the bytes a
 * cluster store delivers from another engine (a RADOS object, a notify payload) or a save file
 * holds. Input: the state. It is applied (scsitgt_lun_apply_pr_state: a version 2 state raises
 * its events on the LUN's nexuses), read back with PERSISTENT RESERVE IN and a write of the
 * other nexus, loaded (scsitgt_lun_load_pr_state), and saved: whatever was accepted must save
 * and load again.
 */
#include "fuzz_common.h"
#include "libscsitgt/pr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t in[10] = { 0x5e, 0x03 }, rw[10] = { 0x2a }, tur[6] = { 0 };
	struct scsitgt__session *other;
	struct fuzz_env env;
	uint8_t *saved;
	size_t len = 0;

	fuzz_env_init(&env, FUZZ_LUN_STORE);
	other = fuzz_add_other(&env);
	fuzz_put_be16(&in[7], 8192);
	rw[8] = 1;
	if (scsitgt_lun_apply_pr_state(env.lun, data, size) == 0) {
		fuzz_run(&env, in, sizeof(in), NULL, 0);
		fuzz_run_on(&env, other, tur, sizeof(tur), NULL, 0);
		fuzz_run_on(&env, other, rw, sizeof(rw), NULL, 0);
	}
	if (scsitgt_lun_load_pr_state(env.lun, data, size) == 0) {
		fuzz_run(&env, in, sizeof(in), NULL, 0);
		if (scsitgt_lun_save_pr_state(env.lun, NULL, 0, &len) != -ENOSPC)
			abort();
		saved = malloc(len);
		if (saved && scsitgt_lun_save_pr_state(env.lun, saved, len, &len) == 0) {
			int rc = scsitgt_lun_load_pr_state(env.lun, saved, len);

			/* What was saved loads again (memory may run out on the OOM replay). */
			if (rc != 0 && rc != -ENOMEM)
				abort();
		}
		free(saved);
	}
	fuzz_env_fini(&env);
	return 0;
}
