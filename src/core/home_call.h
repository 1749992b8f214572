/* SPDX-License-Identifier: MIT */
/*
 * A step of a command that must run on the home loop (issue 18): the target's list of nexuses
 * and the host's hooks are home's ("Loop: home" in the public headers), while a command of a
 * session on a worker shard runs on that worker. The command is held (scsitgt__cmd_hold(): a
 * TMF or a session teardown marks it aborted but never frees it meanwhile), the step runs on
 * home, and the command gets its status back on its own shard.
 *
 * What home may touch of a held command of another shard: its CDB, lun, lun_id, data buffer
 * and transfer length (nobody writes them while it is held: the buffer goes only with the
 * command, freed on its shard after the hold is dropped), and its sense detail (written by the
 * step, read by its shard after the message back). Not its state nor its session pointer:
 * its shard writes both when it is aborted or its nexus ends (core/cmd.c). Home uses instead
 * the record's copy of the session pointer, taken on the command's shard, and only while
 * @run runs: a nexus is freed on home only after its shard has detached its commands, which
 * that shard does after it posted the step, so the nexus outlives the message (core/session.c;
 * messages from one loop run in the order it posted them). A step that ends later keeps what
 * it needs of the nexus in its own record (pr_cluster.c copies the initiator port).
 */
#ifndef SCSITGT_CORE_HOME_CALL_H
#define SCSITGT_CORE_HOME_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/worker.h"

struct scsitgt__cmd;
struct scsitgt__session;
struct scsitgt__home_call;

typedef void (*scsitgt__home_call_fn)(struct scsitgt__home_call *hc);

/* The first member of the caller's own record of the step (its inputs and outcome). */
struct scsitgt__home_call {
	struct scsitgt__msg msg;
	struct scsitgt__cmd *cmd;
	/* cmd->sess, taken on the command's shard: see above for when home may use it. */
	struct scsitgt__session *sess;
	scsitgt__home_call_fn run;  /* on the home loop */
	scsitgt__home_call_fn done; /* then on the command's loop, the hold dropped */
	bool heap;		    /* allocated by scsitgt__home_call_new() */
	bool later;		    /* @run ends the step with scsitgt__home_call_back() */
};

/*
 * The record of @size bytes for @cmd, its cmd and sess set: @local (the caller's, zeroed) for
 * a command on home, where both steps run inside the call; else (or with @local NULL, which a
 * step that ends later needs) a zeroed allocation, or NULL without memory (the command then
 * ends BUSY before anything changes). @done frees it with scsitgt__home_call_free().
 * Loop: @cmd's.
 */
struct scsitgt__home_call *scsitgt__home_call_new(struct scsitgt__cmd *cmd,
						  struct scsitgt__home_call *local, size_t size);
void scsitgt__home_call_free(struct scsitgt__home_call *hc);

/*
 * Run @run(@hc) on home, then @done(@hc) on the command's shard (which completes the
 * command). On home both run at once. Loop: the command's.
 */
void scsitgt__home_call(struct scsitgt__home_call *hc, scsitgt__home_call_fn run,
			scsitgt__home_call_fn done);

/*
 * The same for a step that ends later (it waits for a host's store, or for other shards):
 * @run starts it on home, and the step ends when scsitgt__home_call_back(@hc) is called, on
 * home, exactly once (from inside @run too). The record is then an allocated one
 * (scsitgt__home_call_new() with @local NULL). Loop: the command's.
 */
void scsitgt__home_call_later(struct scsitgt__home_call *hc, scsitgt__home_call_fn run,
			      scsitgt__home_call_fn done);
/* The step that ends later is over: @done runs on the command's shard. Loop: home. */
void scsitgt__home_call_back(struct scsitgt__home_call *hc);
/*
 * The same from the command's own shard, for a step that ends later and that shard took back
 * before home called back (under the step's own lock: core/pr_hold.c, an aborted command
 * leaving its LUN's queue): @done runs now, inside the call. Loop: the command's.
 */
void scsitgt__home_call_back_here(struct scsitgt__home_call *hc);

/*
 * Whether the command is known to be aborted (or its nexus gone), for a step that ends later
 * and may stop early. Only the command's own loop may read its state: for a command of another
 * shard the answer is false, and its step runs to the end (as an io in a backend that cannot
 * cancel; its shard sends no status for an aborted command and the TMF waits for it).
 * Loop: home.
 */
bool scsitgt__home_call_aborted(const struct scsitgt__home_call *hc);

#endif
