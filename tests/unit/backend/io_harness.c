/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io_harness.h"

static void harness_cmd_done(struct scsitgt__cmd *cmd)
{
	(void)cmd;
	fail_msg("harness commands are never executed");
}

static void harness_cmd_aborted(struct scsitgt__cmd *cmd)
{
	(void)cmd;
}

static void harness_session_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops harness_fabric = {
	.name = "harness",
	.cmd_done = harness_cmd_done,
	.cmd_aborted = harness_cmd_aborted,
	.session_shutdown = harness_session_shutdown,
};

void harness_init(struct harness *h)
{
	struct scsitgt_target_opts to;
	struct scsitgt__nexus_info info = {
		.protocol_id = SCSITGT__PROTO_ISCSI,
		.initiator_name = "iqn.2024-01.test:init",
		.initiator_port = "iqn.2024-01.test:init,i,0x000000000001",
		.target_port = "iqn.2024-01.test:h,t,0x0001",
		.rel_port_id = 1,
		.tpg_id = 1,
	};

	memset(h, 0, sizeof(*h));
	assert_int_equal(uv_loop_init(&h->loop), 0);
	assert_int_equal(scsitgt_engine_create(&h->engine, &h->loop, NULL), 0);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.test:h";
	assert_int_equal(scsitgt_target_create(&h->tgt, h->engine, &to), 0);
	assert_int_equal(scsitgt__session_create(&h->sess, h->tgt, &info, &harness_fabric, h), 0);
	/* no POWER ON unit attention before the first command (core/ua.c). */
	h->sess->ua_no_power_on = true;
}

static void harness_engine_gone(void *arg, int status)
{
	bool *gone = arg;

	assert_int_equal(status, 0);
	*gone = true;
}

void harness_fini(struct harness *h)
{
	bool gone = false;

	if (h->sess) {
		scsitgt__session_destroy(h->sess);
		h->sess = NULL;
	}
	scsitgt_engine_destroy(h->engine, harness_engine_gone, &gone);
	assert_false(gone);
	while (!gone) {
		uv_run(&h->loop, UV_RUN_ONCE);
	}
	assert_int_equal(uv_run(&h->loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&h->loop), 0);
}

int harness_lun(struct harness *h, struct scsitgt_lun **out, uint64_t id,
		const struct scsitgt_backend_ops *ops, void *bctx, uint32_t block_size,
		uint64_t num_blocks, uint32_t flags)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;

	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.backend = ops;
	lo.backend_ctx = bctx;
	lo.block_size = block_size;
	lo.num_blocks = num_blocks;
	lo.flags = flags;
	return scsitgt_lun_create(out ? out : &lun, h->tgt, &lo);
}

struct scsitgt__cmd *harness_cmd_begin(struct harness *h, uint64_t lun_id)
{
	/* TEST UNIT READY: a command that binds the LUN and moves no data. */
	static const uint8_t tur[6] = { 0 };
	struct scsitgt__cmd *cmd;
	uint8_t lun[8];

	assert_int_equal(scsitgt__cmd_create(&cmd, h->sess, sizeof(struct harness_result *)), 0);
	scsitgt__lun_encode(lun_id, lun);
	scsitgt__cmd_setup(cmd, lun, tur, sizeof(tur), 0, 1);
	assert_int_equal(cmd->state, SCSITGT__CMD_READY);
	assert_non_null(cmd->lun);
	return cmd;
}

void harness_cmd_end(struct scsitgt__cmd *cmd)
{
	assert_int_equal(cmd->ios_inflight, 0);
	scsitgt__cmd_destroy(cmd);
}

static void harness_io_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
			    enum scsitgt__sense_reason reason)
{
	struct harness_result *res;

	(void)io;
	/* Every io of a harness command reports to the command's one result. */
	memcpy(&res, scsitgt__cmd_fabric_priv(cmd), sizeof(res));
	res->reason = reason;
	if (reason == SCSITGT__SR_RAW) {
		res->raw = cmd->io_raw;
	}
	res->thread = uv_thread_self();
	res->done++;
	/* A command whose nexus went away while its ios ran (session destroy detaches it) is
	 * freed by its last io, as the core's own done function does. */
	if (cmd->sess == NULL && cmd->ios_inflight == 0) {
		scsitgt__cmd_destroy(cmd);
	}
}

int harness_submit(struct scsitgt__cmd *cmd, struct harness_result *res, enum scsitgt_io_type type,
		   uint64_t lba, uint32_t num_blocks, const struct iovec *iov, int iovcnt,
		   uint32_t flags)
{
	memcpy(scsitgt__cmd_fabric_priv(cmd), &res, sizeof(res));
	return scsitgt__io_submit(cmd, type, lba, num_blocks, iov, iovcnt, flags, harness_io_done);
}

void harness_wait(struct harness *h, const struct harness_result *res, unsigned int n)
{
	while (res->done < n) {
		uv_run(&h->loop, UV_RUN_ONCE);
	}
}

enum scsitgt__sense_reason harness_io(struct harness *h, uint64_t lun_id, enum scsitgt_io_type type,
				      uint64_t lba, uint32_t num_blocks, const struct iovec *iov,
				      int iovcnt, struct harness_result *res_out)
{
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd = harness_cmd_begin(h, lun_id);

	assert_int_equal(harness_submit(cmd, &res, type, lba, num_blocks, iov, iovcnt, 0), 0);
	harness_wait(h, &res, 1);
	assert_int_equal(res.done, 1);
	harness_cmd_end(cmd);
	if (res_out) {
		*res_out = res;
	}
	return res.reason;
}
