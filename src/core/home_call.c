/* SPDX-License-Identifier: MIT */
#include "core/home_call.h"

#include <stdlib.h>

#include "core/cmd.h"
#include "core/shard.h"
#include "util/list.h"

struct scsitgt__home_call *scsitgt__home_call_new(struct scsitgt__cmd *cmd,
						  struct scsitgt__home_call *local, size_t size)
{
	struct scsitgt__home_call *hc = local;

	if (local == NULL || cmd->shard->index != 0) {
		hc = calloc(1, size);
		if (hc == NULL)
			return NULL;
		hc->heap = true;
	}
	hc->cmd = cmd;
	hc->sess = cmd->sess;
	return hc;
}

void scsitgt__home_call_free(struct scsitgt__home_call *hc)
{
	if (hc->heap)
		free(hc);
}

void scsitgt__home_call_back_here(struct scsitgt__home_call *hc)
{
	scsitgt__cmd_unhold(hc->cmd);
	hc->done(hc);
}

static void home_call_back_msg(struct scsitgt__msg *msg)
{
	scsitgt__home_call_back_here(scsitgt__container_of(msg, struct scsitgt__home_call, msg));
}

void scsitgt__home_call_back(struct scsitgt__home_call *hc)
{
	/* cmd->shard is set at creation and never changes. */
	if (hc->cmd->shard->index == 0) {
		home_call_back_msg(&hc->msg);
		return;
	}
	hc->msg.fn = home_call_back_msg;
	scsitgt__shard_post(hc->cmd->shard, &hc->msg);
}

/* Home: the step; one that does not end later ends here. */
static void home_call_run(struct scsitgt__home_call *hc)
{
	/* read first: a step that ends at once inside @run may free the record */
	bool later = hc->later;

	hc->run(hc);
	if (!later)
		scsitgt__home_call_back(hc);
}

static void home_call_run_msg(struct scsitgt__msg *msg)
{
	home_call_run(scsitgt__container_of(msg, struct scsitgt__home_call, msg));
}

static void home_call_start(struct scsitgt__home_call *hc, scsitgt__home_call_fn run,
			    scsitgt__home_call_fn done, bool later)
{
	struct scsitgt__cmd *cmd = hc->cmd;

	hc->run = run;
	hc->done = done;
	hc->later = later;
	/* Also on home: a step that ends later leaves the command waiting in between. */
	scsitgt__cmd_hold(cmd);
	if (cmd->shard->index == 0) {
		home_call_run(hc);
		return;
	}
	hc->msg.fn = home_call_run_msg;
	scsitgt__engine_post(cmd->shard->engine, &hc->msg);
}

void scsitgt__home_call(struct scsitgt__home_call *hc, scsitgt__home_call_fn run,
			scsitgt__home_call_fn done)
{
	home_call_start(hc, run, done, false);
}

void scsitgt__home_call_later(struct scsitgt__home_call *hc, scsitgt__home_call_fn run,
			      scsitgt__home_call_fn done)
{
	home_call_start(hc, run, done, true);
}

bool scsitgt__home_call_aborted(const struct scsitgt__home_call *hc)
{
	return hc->cmd->shard->index == 0 && scsitgt__cmd_aborted(hc->cmd);
}
