/* SPDX-License-Identifier: MIT */
/*
 * A step of a command that must run on the home loop (issue 18): the target's list of nexuses
 * and the host's hooks are home's ("Loop: home" in the public headers), while a command of a
 * session on a worker shard runs on that worker. The command is held (scsitgt__cmd_hold(): a
 * TMF or a session teardown marks it aborted but never frees it meanwhile), the step runs on
 * home, and the command gets its status back on its own shard. The step may read the
 * command's CDB, data buffer, session and target, and write its sense detail: its own shard
 * touches none of them while it is held, and the two messages order the accesses.
 */
#ifndef SCSITGT_CORE_HOME_CALL_H
#define SCSITGT_CORE_HOME_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/worker.h"

struct scsitgt__cmd;
struct scsitgt__home_call;

typedef void (*scsitgt__home_call_fn)(struct scsitgt__home_call *hc);

/* The first member of the caller's own record of the step (its inputs and outcome). */
struct scsitgt__home_call {
	struct scsitgt__msg msg;
	struct scsitgt__cmd *cmd;
	scsitgt__home_call_fn run;  /* on the home loop */
	scsitgt__home_call_fn done; /* then on the command's loop, the hold dropped */
	bool heap;		    /* allocated by scsitgt__home_call_new() */
};

/*
 * The record of @size bytes for @cmd: @local (the caller's, zeroed) for a command on home,
 * where both steps run inside the call; else a zeroed allocation, or NULL without memory (the
 * command then ends BUSY before anything changes). @done frees it with scsitgt__home_call_free().
 */
struct scsitgt__home_call *scsitgt__home_call_new(struct scsitgt__cmd *cmd,
						  struct scsitgt__home_call *local, size_t size);
void scsitgt__home_call_free(struct scsitgt__home_call *hc);

/*
 * Run @run(@hc) for @cmd on home, then @done(@hc) on @cmd's shard (which completes the
 * command). On home both run at once. Loop: @cmd's.
 */
void scsitgt__home_call(struct scsitgt__home_call *hc, struct scsitgt__cmd *cmd,
			scsitgt__home_call_fn run, scsitgt__home_call_fn done);

#endif
