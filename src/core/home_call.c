/* SPDX-License-Identifier: MIT */
#include "core/home_call.h"

#include <stdlib.h>

#include "core/cmd.h"
#include "core/shard.h"
#include "util/list.h"

struct scsitgt__home_call *scsitgt__home_call_new(struct scsitgt__cmd *cmd,
						  struct scsitgt__home_call *local, size_t size)
{
	struct scsitgt__home_call *hc;

	if (cmd->shard->index == 0)
		return local;
	hc = calloc(1, size);
	if (hc)
		hc->heap = true;
	return hc;
}

void scsitgt__home_call_free(struct scsitgt__home_call *hc)
{
	if (hc->heap)
		free(hc);
}

static void home_call_back(struct scsitgt__msg *msg)
{
	struct scsitgt__home_call *hc = scsitgt__container_of(msg, struct scsitgt__home_call, msg);

	scsitgt__cmd_unhold(hc->cmd);
	hc->done(hc);
}

static void home_call_run(struct scsitgt__msg *msg)
{
	struct scsitgt__home_call *hc = scsitgt__container_of(msg, struct scsitgt__home_call, msg);

	hc->run(hc);
	/* cmd->shard is set at creation and never changes. */
	hc->msg.fn = home_call_back;
	scsitgt__shard_post(hc->cmd->shard, &hc->msg);
}

void scsitgt__home_call(struct scsitgt__home_call *hc, struct scsitgt__cmd *cmd,
			scsitgt__home_call_fn run, scsitgt__home_call_fn done)
{
	hc->cmd = cmd;
	hc->run = run;
	hc->done = done;
	if (cmd->shard->index == 0) {
		run(hc);
		done(hc);
		return;
	}
	scsitgt__cmd_hold(cmd);
	hc->msg.fn = home_call_run;
	scsitgt__engine_post(cmd->shard->engine, &hc->msg);
}
