/* SPDX-License-Identifier: MIT */
/*
 * A minimal harness that drives backend ios through the core without a fabric: an engine and a
 * target on a private uv loop, one I_T nexus, and commands that exist only to own ios submitted
 * with scsitgt__io_submit(). The tests control the io type, range and iovec shapes exactly.
 */
#ifndef TESTS_UNIT_BACKEND_IO_HARNESS_H
#define TESTS_UNIT_BACKEND_IO_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uv.h>

#include "core/cmd.h"
#include "core/fabric.h"
#include "libscsitgt/scsitgt.h"

struct harness {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt__session *sess;
};

/* What became of one io. */
struct harness_result {
	enum scsitgt__sense_reason reason;
	/* Raw sense of a SCSITGT__SR_RAW reason. */
	struct scsitgt__sense_info raw;
	/* Thread on which the core delivered the completion. */
	uv_thread_t thread;
	unsigned int done;
};

/* Set up loop, engine, target "iqn.2024-01.test:h" and a nexus. Aborts the test on failure. */
void harness_init(struct harness *h);
/* Destroy the nexus and the engine (with every LUN), run the loop dry and close it. */
void harness_fini(struct harness *h);

/* Create LUN @id over @ops/@bctx; returns scsitgt_lun_create()'s code. */
int harness_lun(struct harness *h, struct scsitgt_lun **out, uint64_t id,
		const struct scsitgt_backend_ops *ops, void *bctx, uint32_t block_size,
		uint64_t num_blocks, uint32_t flags);

/*
 * Create a command on LUN @lun_id (it holds the LUN in flight until harness_cmd_end()).
 */
struct scsitgt__cmd *harness_cmd_begin(struct harness *h, uint64_t lun_id);
void harness_cmd_end(struct scsitgt__cmd *cmd);

/*
 * Submit an io of @cmd; @res is filled when it completes (res->done counts completions). Every
 * io of one command reports to the @res of the latest submit: use one command per result.
 */
int harness_submit(struct scsitgt__cmd *cmd, struct harness_result *res, enum scsitgt_io_type type,
		   uint64_t lba, uint32_t num_blocks, const struct iovec *iov, int iovcnt,
		   uint32_t flags);

/* Run the loop until @res->done reaches @n. */
void harness_wait(struct harness *h, const struct harness_result *res, unsigned int n);

/* Submit one io on a fresh command of LUN @lun_id, wait for it and return its reason. */
enum scsitgt__sense_reason harness_io(struct harness *h, uint64_t lun_id, enum scsitgt_io_type type,
				      uint64_t lba, uint32_t num_blocks, const struct iovec *iov,
				      int iovcnt, struct harness_result *res_out);

/* xorshift64*: a deterministic generator, so any failure replays exactly. */
static inline uint64_t harness_rng(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dull;
}

#endif /* TESTS_UNIT_BACKEND_IO_HARNESS_H */
