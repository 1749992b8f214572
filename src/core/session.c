/* SPDX-License-Identifier: MIT */
/* I_T nexus objects created by fabrics. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fabric.h"
#include "core/pr.h"
#include "core/ua.h"
#include "core/xcopy.h"

int scsitgt__session_create(struct scsitgt__session **out, struct scsitgt_target *tgt,
			    const struct scsitgt__nexus_info *info,
			    const struct scsitgt__fabric_ops *ops, void *fabric_ctx)
{
	struct scsitgt__session *sess;

	if (out == NULL || tgt == NULL || info == NULL || ops == NULL ||
	    info->initiator_name == NULL || info->initiator_port == NULL ||
	    info->target_port == NULL)
		return -EINVAL;
	if (tgt->destroying)
		return -ESHUTDOWN;
	/* names, then source addresses (core/acl.c). */
	if (!scsitgt__acl_login_allowed(tgt, info->initiator_name, info->initiator_sa))
		return -EACCES;
	if (info->shard >= tgt->engine->nshards)
		return -EINVAL;
	sess = calloc(1, sizeof(*sess));
	if (sess == NULL)
		return -ENOMEM;
	if (uv_mutex_init(&sess->ua_lock) != 0) {
		free(sess);
		return -ENOMEM;
	}
	sess->initiator_name = strdup(info->initiator_name);
	sess->initiator_port = strdup(info->initiator_port);
	sess->target_port = strdup(info->target_port);
	if (!sess->initiator_name || !sess->initiator_port || !sess->target_port) {
		uv_mutex_destroy(&sess->ua_lock);
		free(sess->initiator_name);
		free(sess->initiator_port);
		free(sess->target_port);
		free(sess);
		return -ENOMEM;
	}
	sess->tgt = tgt;
	sess->protocol_id = info->protocol_id;
	sess->rel_port_id = info->rel_port_id;
	sess->tpg_id = info->tpg_id;
	sess->lend_data_in = info->lend_data_in;
	sess->ops = ops;
	sess->fabric_ctx = fabric_ctx;
	sess->shard = &tgt->engine->shards[info->shard];
	scsitgt__list_init(&sess->cmds);
	scsitgt__acl_session_attach(sess);
	scsitgt__list_add_tail(&tgt->sessions, &sess->node);
	*out = sess;
	return 0;
}

/* An internal nexus's commands never reach a fabric: they are not in any target's
 * session list (nothing aborts them) and end through scsitgt__cmd_end_internal(). */
static void internal_cmd_unexpected(struct scsitgt__cmd *cmd)
{
	(void)cmd;
	assert(!"a command of an internal nexus went to its fabric");
}

static const struct scsitgt__fabric_ops internal_ops = {
	.name = "internal",
	.cmd_done = internal_cmd_unexpected,
	.cmd_aborted = internal_cmd_unexpected,
};

struct scsitgt__session *scsitgt__session_create_internal(struct scsitgt_target *tgt)
{
	struct scsitgt__session *sess = calloc(1, sizeof(*sess));

	if (sess == NULL)
		return NULL;
	if (uv_mutex_init(&sess->ua_lock) != 0) {
		free(sess);
		return NULL;
	}
	sess->tgt = tgt;
	sess->shard = scsitgt__shard_home(tgt->engine);
	sess->ops = &internal_ops;
	scsitgt__list_init(&sess->cmds);
	return sess;
}

void scsitgt__session_destroy_internal(struct scsitgt__session *sess)
{
	if (sess == NULL)
		return;
	assert(scsitgt__list_empty(&sess->cmds));
	uv_mutex_destroy(&sess->ua_lock);
	free(sess);
}

/* Detach or free every command of the nexus. Loop: its shard (its commands' own). */
static void session_detach_cmds(struct scsitgt__session *sess)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &sess->cmds)
	{
		/* freed now, or detached until its backend gives it back (cmd.c). */
		scsitgt__cmd_nexus_gone(scsitgt__container_of(pos, struct scsitgt__cmd, sess_node));
	}
}

/* Home: the nexus has no command left; the rest of it goes. */
static void session_free(struct scsitgt__session *sess)
{
	struct scsitgt_target *tgt = sess->tgt;

	/* SPC-2 reservations end with the nexus (again: one its held-back RESERVE took after
	 * scsitgt__session_destroy()); its unit attentions go with it. */
	scsitgt__pr_session_gone(sess);
	scsitgt__ua_session_free(sess);
	/* its EXTENDED COPY list identifiers (SPC-4: discarded on I_T nexus loss). */
	scsitgt__xcopy_session_gone(sess);
	scsitgt__list_remove(&sess->node);
	free(sess->initiator_name);
	free(sess->initiator_port);
	free(sess->target_port);
	uv_mutex_destroy(&sess->ua_lock);
	free(sess);
	scsitgt__target_session_gone(tgt);
}

static void session_free_msg(struct scsitgt__msg *msg)
{
	session_free(scsitgt__container_of(msg, struct scsitgt__session, destroy_msg));
}

/* The nexus's worker shard: its commands are its loop's to detach, a backend may be
 * completing one right now. Then back home. */
static void session_detach_msg(struct scsitgt__msg *msg)
{
	struct scsitgt__session *sess =
		scsitgt__container_of(msg, struct scsitgt__session, destroy_msg);

	session_detach_cmds(sess);
	sess->destroy_msg.fn = session_free_msg;
	scsitgt__engine_post(sess->tgt->engine, &sess->destroy_msg);
}

void scsitgt__session_destroy(struct scsitgt__session *sess)
{
	/* From now on no request of home's reaches it (core/tmf_xshard.c). */
	atomic_store(&sess->leaving, true);
	/* The loss is recorded now, not when home frees a worker's nexus after that loop's
	 * detach: the same nexus logging in again meanwhile must find I_T NEXUS LOSS too. */
	scsitgt__ua_session_lost(sess);
	/* SPC-2 §5.5.1: its reservation ends with it, now too. Released at the free only, it
	 * was released after the same nexus logged in again and reserved (core/pr.c compares
	 * the nexus that took it, not its name). */
	scsitgt__pr_session_gone(sess);
	if (sess->shard->index == 0) {
		session_detach_cmds(sess);
		session_free(sess);
		return;
	}
	sess->destroy_msg.fn = session_detach_msg;
	scsitgt__shard_post(sess->shard, &sess->destroy_msg);
}
