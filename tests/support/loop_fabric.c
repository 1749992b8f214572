/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_fabric.h"

struct lf_priv {
	struct loop_fabric *lf;
	struct lf_result *res;
};

static void lf_cmd_done(struct scsitgt__cmd *cmd)
{
	struct lf_priv *p = scsitgt__cmd_fabric_priv(cmd);
	struct lf_result *res = p->res;

	res->status = cmd->status;
	res->sense_len = cmd->sense_len;
	memcpy(res->sense, cmd->sense, cmd->sense_len);
	res->data_len = cmd->data_len;
	if (cmd->data_len) {
		res->data = malloc(cmd->data_len);
		if (res->data == NULL)
			abort();
		memcpy(res->data, scsitgt__cmd_data_in(cmd), cmd->data_len);
	}
	res->done = true;
	res->cmd = NULL;
	p->lf->ndone++;
	/* Done may come from a timer callback: without uv_stop, UV_RUN_ONCE would go on to
	 * block in poll although the waiter's flag is now set. */
	uv_stop(&p->lf->loop);
	if (p->lf->keep_done) {
		res->cmd = cmd;
		return;
	}
	/* A fabric may destroy the command from inside cmd_done: exercise that. */
	scsitgt__cmd_destroy(cmd);
}

static void lf_cmd_aborted(struct scsitgt__cmd *cmd)
{
	struct lf_priv *p = scsitgt__cmd_fabric_priv(cmd);

	p->res->aborted = true;
	p->res->done = true;
	p->res->cmd = NULL;
	p->lf->naborted++;
	uv_stop(&p->lf->loop);
	scsitgt__cmd_destroy(cmd);
}

static void lf_session_shutdown(struct scsitgt__session *sess)
{
	struct loop_fabric *lf = sess->fabric_ctx;

	if (lf->sess == sess)
		lf->sess = NULL;
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops lf_ops = {
	.name = "loop",
	.cmd_done = lf_cmd_done,
	.cmd_aborted = lf_cmd_aborted,
	.session_shutdown = lf_session_shutdown,
};

int loop_fabric_create(struct loop_fabric **out, const char *target_name)
{
	struct scsitgt_engine_opts eo;
	struct scsitgt_target_opts to;
	struct scsitgt__nexus_info ni;
	struct loop_fabric *lf;
	char port[300];
	int rc;

	lf = calloc(1, sizeof(*lf));
	if (lf == NULL)
		return -ENOMEM;
	rc = uv_loop_init(&lf->loop);
	if (rc < 0) {
		free(lf);
		return rc;
	}
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	rc = scsitgt_engine_create(&lf->engine, &lf->loop, &eo);
	if (rc < 0)
		goto fail_loop;
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = target_name ? target_name : "iqn.2024-01.org.example:loop";
	rc = scsitgt_target_create(&lf->tgt, lf->engine, &to);
	if (rc < 0)
		goto fail_engine;
	snprintf(port, sizeof(port), "%s,t,0x0001", to.name);
	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = "iqn.2024-01.org.example:initiator";
	ni.initiator_port = "iqn.2024-01.org.example:initiator,i,0x23d000000001";
	ni.target_port = port;
	ni.rel_port_id = 1;
	ni.tpg_id = 1;
	rc = scsitgt__session_create(&lf->sess, lf->tgt, &ni, &lf_ops, lf);
	if (rc < 0)
		goto fail_engine;
	/* Tests of single commands would all begin with POWER ON otherwise; unit attention
	 * tests use sessions made by loop_fabric_add_session(), which do report it. */
	lf->sess->ua_no_power_on = true;
	*out = lf;
	return 0;

fail_engine:
	loop_fabric_destroy(lf);
	return rc;
fail_loop:
	uv_loop_close(&lf->loop);
	free(lf);
	return rc;
}

int loop_fabric_add_session(struct loop_fabric *lf, const char *initiator_port,
			    uint16_t rel_port_id, struct scsitgt__session **out)
{
	struct scsitgt__nexus_info ni;
	char name[300], tport[300];
	const char *sep = strstr(initiator_port, ",i,0x");
	size_t n = sep ? (size_t)(sep - initiator_port) : strlen(initiator_port);

	if (n >= sizeof(name))
		return -EINVAL;
	memcpy(name, initiator_port, n);
	name[n] = '\0';
	snprintf(tport, sizeof(tport), "%s,t,0x%04x", scsitgt_target_get_name(lf->tgt),
		 rel_port_id);
	memset(&ni, 0, sizeof(ni));
	ni.protocol_id = SCSITGT__PROTO_ISCSI;
	ni.initiator_name = name;
	ni.initiator_port = initiator_port;
	ni.target_port = tport;
	ni.rel_port_id = rel_port_id;
	ni.tpg_id = rel_port_id;
	ni.lend_data_in = lf->lend_data_in;
	return scsitgt__session_create(out, lf->tgt, &ni, &lf_ops, lf);
}

void loop_fabric_start_on(struct loop_fabric *lf, struct scsitgt__session *sess, uint64_t lun_id,
			  const uint8_t *cdb, size_t cdb_len, const void *dout, size_t dout_len,
			  struct lf_result *res)
{
	struct scsitgt__session *saved = lf->sess;

	lf->sess = sess;
	loop_fabric_start(lf, lun_id, cdb, cdb_len, dout, dout_len, res);
	lf->sess = saved;
}

void loop_fabric_run_on(struct loop_fabric *lf, struct scsitgt__session *sess, uint64_t lun_id,
			const uint8_t *cdb, size_t cdb_len, const void *dout, size_t dout_len,
			struct lf_result *res)
{
	loop_fabric_start_on(lf, sess, lun_id, cdb, cdb_len, dout, dout_len, res);
	loop_fabric_wait(lf, res);
}

static void lf_engine_gone(void *arg, int status)
{
	(void)status;
	*(bool *)arg = true;
}

void loop_fabric_destroy(struct loop_fabric *lf)
{
	bool gone = false;

	if (lf == NULL)
		return;
	if (lf->sess) {
		scsitgt__session_destroy(lf->sess);
		lf->sess = NULL;
	}
	if (lf->engine) {
		scsitgt_engine_destroy(lf->engine, lf_engine_gone, &gone);
		while (!gone)
			uv_run(&lf->loop, UV_RUN_ONCE);
	}
	/* Let the closing handles (engine async, backend timers) finish. */
	uv_run(&lf->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&lf->loop) != 0)
		abort(); /* a handle leaked: the test is wrong or the library is */
	free(lf);
}

void loop_fabric_run_until(struct loop_fabric *lf, const bool *flag)
{
	while (!*flag)
		uv_run(&lf->loop, UV_RUN_ONCE);
}

static void lf_start(struct loop_fabric *lf, const uint8_t lun[8], const uint8_t *cdb,
		     size_t cdb_len, const void *dout, size_t dout_len, struct lf_result *res)
{
	struct scsitgt__cmd *cmd;
	struct lf_priv *p;

	memset(res, 0, sizeof(*res));
	if (scsitgt__cmd_create(&cmd, lf->sess, sizeof(*p)) < 0)
		abort();
	p = scsitgt__cmd_fabric_priv(cmd);
	p->lf = lf;
	p->res = res;
	res->cmd = cmd;
	if (lf->arrival_ns)
		scsitgt__cmd_set_arrival(cmd, lf->arrival_ns);
	scsitgt__cmd_setup(cmd, lun, cdb, cdb_len, 0, 0x1000 + lf->ndone);
	/* A write of zero bytes (e.g. COMPARE AND WRITE of 0 blocks) has no buffer. */
	if (cmd->state == SCSITGT__CMD_NEED_DATA && cmd->xfer_len) {
		size_t n = dout_len < cmd->xfer_len ? dout_len : cmd->xfer_len;

		memset(cmd->buf, 0, cmd->xfer_len);
		if (n)
			memcpy(cmd->buf, dout, n);
	}
	scsitgt__cmd_execute(cmd);
}

void loop_fabric_start(struct loop_fabric *lf, uint64_t lun_id, const uint8_t *cdb, size_t cdb_len,
		       const void *dout, size_t dout_len, struct lf_result *res)
{
	uint8_t lun[8];

	scsitgt__lun_encode(lun_id, lun);
	lf_start(lf, lun, cdb, cdb_len, dout, dout_len, res);
}

void loop_fabric_wait(struct loop_fabric *lf, struct lf_result *res)
{
	loop_fabric_run_until(lf, &res->done);
}

void loop_fabric_run_raw_lun(struct loop_fabric *lf, const uint8_t lun[8], const uint8_t *cdb,
			     size_t cdb_len, const void *dout, size_t dout_len,
			     struct lf_result *res)
{
	lf_start(lf, lun, cdb, cdb_len, dout, dout_len, res);
	loop_fabric_wait(lf, res);
}

void loop_fabric_run(struct loop_fabric *lf, uint64_t lun_id, const uint8_t *cdb, size_t cdb_len,
		     const void *dout, size_t dout_len, struct lf_result *res)
{
	loop_fabric_start(lf, lun_id, cdb, cdb_len, dout, dout_len, res);
	loop_fabric_wait(lf, res);
}

void lf_result_clear(struct lf_result *res)
{
	free(res->data);
	res->data = NULL;
	res->data_len = 0;
}

bool lf_result_sane(const struct lf_result *res)
{
	if (res->sense_len > SCSITGT_SENSE_BUF_SIZE)
		return false;
	if ((res->status == 0x02) != (res->sense_len != 0))
		return false;
	return res->status == 0 || res->data_len == 0;
}
