/* SPDX-License-Identifier: MIT */
/*
 * The interface between fabrics (iSCSI, SRP) and the core: sessions (I_T nexuses) and the
 * command lifecycle.
 *
 * A command's life, seen from a fabric:
 *   scsitgt__cmd_create()       allocate, with private bytes for the fabric
 *   scsitgt__cmd_setup()        decode LUN, look up and parse the CDB; afterwards
 *                               cmd->state is SCSITGT__CMD_NEED_DATA (a write: fill
 *                               cmd->buf with cmd->xfer_len bytes), SCSITGT__CMD_READY, or
 *                               SCSITGT__CMD_DONE (the CDB was refused; status and sense set;
 *                               the fabric still drains any Data-Out it was promised)
 *   scsitgt__cmd_execute()      run it; ops->cmd_done(cmd) follows exactly once, possibly from
 *                               inside this call
 *   ops->cmd_done(cmd)          status, sense and cmd->data_len bytes of Data-In are ready;
 *                               the fabric sends them, then calls scsitgt__cmd_destroy()
 * A command aborted by a TMF or by session teardown gets ops->cmd_aborted() instead of
 * cmd_done(), and the fabric destroys it without sending a response; except one that another
 * nexus's task management or PREEMPT AND ABORT aborted while it executed, under its LUN's
 * TAS 1 (core/tmf.c): it gets cmd_done() with status TASK ABORTED, no sense, no data, and is
 * answered as any other.
 */
#ifndef SCSITGT_CORE_FABRIC_H
#define SCSITGT_CORE_FABRIC_H

#include "core/cmd.h"
#include "core/core.h"

struct scsitgt__session;

struct scsitgt__fabric_ops {
	const char *name;
	/* The command finished; send Data-In (cmd->data_len bytes at scsitgt__cmd_data_in())
	 * and status. */
	void (*cmd_done)(struct scsitgt__cmd *cmd);
	/* The command was aborted (TMF, nexus loss); free it without a response. */
	void (*cmd_aborted)(struct scsitgt__cmd *cmd);
	/*
	 * The target is going away: close the nexus (for iSCSI, log out or drop the connections)
	 * and call scsitgt__session_destroy() when done, from the loop.
	 */
	void (*session_shutdown)(struct scsitgt__session *sess);
	/*
	 * The host asked to end this nexus (scsitgt_session_kick()): ask the initiator to log
	 * out and close the nexus after a grace period if it does not; scsitgt__session_destroy()
	 * follows as for session_shutdown. Optional: without it session_shutdown is called.
	 */
	void (*session_kick)(struct scsitgt__session *sess);
	/*
	 * a unit attention was just queued for the nexus on LUN @lun_id (core/ua.c), so the
	 * fabric may announce it asynchronously (iSCSI Async Message). The condition stays
	 * pending and is reported on the next command all the same. Optional, may be NULL;
	 * called on the home loop or on the nexus's own shard (core/tmf_xshard.c), possibly from
	 * inside any core call, so it must not call back into the core. On the nexus's shard it
	 * may run just after home began scsitgt__session_destroy(): the fabric frees what it
	 * reads there only on that shard, after the messages home posted it before the destroy.
	 */
	void (*unit_attention)(struct scsitgt__session *sess, uint64_t lun_id,
			       enum scsitgt__sense_reason reason);
	/*
	 * Whether @cmd, of the nexus that issued the task management function scsitgt__tmf_execute()
	 * was given @tmf_arg for, comes after that function in the order the fabric delivers
	 * commands in (an iSCSI command held for its CmdSN turn behind a non-immediate TMF: RFC
	 * 7143 §11.5.1 has a TMF act on the commands before it): the function leaves it alone.
	 * Optional, may be NULL; asked on that nexus's shard, and only until the function's
	 * callback has run.
	 */
	bool (*cmd_after_tmf)(struct scsitgt__cmd *cmd, void *tmf_arg);
};

/* SPC-5 §7.6.4.1 PROTOCOL IDENTIFIER values. */
enum {
	SCSITGT__PROTO_SRP = 0x4,
	SCSITGT__PROTO_ISCSI = 0x5,
};

/* What a fabric says about a new I_T nexus. Strings are copied. */
struct scsitgt__nexus_info {
	uint8_t protocol_id;
	/* Initiator name (iSCSI InitiatorName), used for ACLs. */
	const char *initiator_name;
	/* Initiator port name (iSCSI: "<name>,i,0x<ISID>"), the I part of the nexus. */
	const char *initiator_port;
	/* Target port name (iSCSI: "<target>,t,0x<TPGT>"), for VPD 83h. */
	const char *target_port;
	/* Relative target port identifier (VPD 83h), 1-based. */
	uint16_t rel_port_id;
	/* Target port group (iSCSI TPGT). */
	uint16_t tpg_id;
	/* the initiator's transport address for address ACLs; NULL when it has none
	 * (address lists then refuse the nexus). */
	const struct sockaddr *initiator_sa;
	/* the fabric sends Data-In from any memory (scsitgt__cmd_data_in()), so plain READs may
	 * take memory the backend lends (SCSITGT_IO_FLAG_MAY_LEND). */
	bool lend_data_in;
	/*
	 * the shard the nexus lives on (core/shard.h): 0, home (the default), or i + 1 for the
	 * engine's worker i. The session is created and destroyed on home; the fabric creates,
	 * sets up, executes and destroys its commands on that shard's loop thread
	 * (scsitgt__shard_post() runs a function there), where their completions come too.
	 * Task management from any nexus reaches its commands on that shard
	 * (core/tmf_xshard.c); ORDERED tasks do not order them yet (issue 18).
	 */
	unsigned int shard;
};

struct scsitgt__session {
	struct scsitgt_target *tgt;
	struct scsitgt__list node; /* in tgt->sessions */
	uint8_t protocol_id;
	char *initiator_name;
	char *initiator_port;
	char *target_port;
	uint16_t rel_port_id;
	uint16_t tpg_id;
	const struct scsitgt__fabric_ops *ops;
	void *fabric_ctx;
	/* the shard (loop) the nexus lives on, its commands with it (core/shard.h); home
	 * unless the fabric bound it elsewhere. */
	struct scsitgt__shard *shard;
	struct scsitgt__list cmds; /* every live command of this nexus */
	unsigned int ncmds;
	/*
	 * Unit attention queues of this nexus (core/ua.c), allocated on first use. Other loops
	 * raise conditions here (a reservation change, a reset, MODE SELECT on another nexus:
	 * issue 18), so the queues are under ua_lock; ua_pending counts the queued conditions,
	 * and the check every command makes is one relaxed load of it while it is zero.
	 */
	_Atomic(struct scsitgt__ua_sess *) ua;
	uv_mutex_t ua_lock;
	_Atomic unsigned int ua_pending;
	/* No POWER ON on first access and no REPORTED LUNS DATA HAS CHANGED (in-process test
	 * fabrics, which build their LUNs after the nexus). */
	bool ua_no_power_on;
	/* counters of this nexus and the initiator's transport address (core/stats.c). */
	struct scsitgt_cmd_counters stats;
	char initiator_addr[64];
	/* this initiator's ACL entry (LUN mapping), NULL when the target has none for it
	 * (core/acl.c keeps it current). */
	struct scsitgt__acl_entry *acl;
	/* the EXTENDED COPY list identifiers of this nexus (core/xcopy_results.c),
	 * allocated on first use. */
	struct scsitgt__xcopy_sess *xcopy;
	/* bytes of Data-In buffers this nexus's commands hold (tgt->max_read_buffer_bytes). */
	uint64_t read_bytes;
	/* scsitgt__nexus_info.lend_data_in. */
	bool lend_data_in;
	/* scsitgt_session_kick() was called: the fabric is ending the nexus. */
	bool kicked;
	/*
	 * scsitgt__session_destroy() began (set on home): the nexus is on its way out, its
	 * shard detaching its commands (destroy_msg goes there and back). Walks of the target's
	 * sessions that reach other shards skip it (core/tmf_xshard.c).
	 */
	_Atomic bool leaving;
	struct scsitgt__msg destroy_msg;
	/* the access state of this nexus's target port group as of tgt->alua_gen == alua_gen
	 * (core/alua.c; 0xff: no group, or ALUA off). Its own loop's. */
	uint32_t alua_gen;
	uint8_t alua_state;
};

/*
 * Create an I_T nexus on @tgt. Fails with -EACCES if the target's ACL refuses the initiator,
 * -EINVAL on missing names, -ENOMEM.
 */
int scsitgt__session_create(struct scsitgt__session **out, struct scsitgt_target *tgt,
			    const struct scsitgt__nexus_info *info,
			    const struct scsitgt__fabric_ops *ops, void *fabric_ctx);

/*
 * End the nexus. Commands still running in a backend are detached: their completion frees them
 * without calling the fabric. Commands that never reached a backend are freed now without
 * callbacks. The fabric must forget every command of this session before calling this, and
 * must not use the session afterwards. Loop: home. A nexus of a worker shard ends in steps
 * (issue 18): its shard detaches its commands, then home frees it; its target waits for it.
 */
void scsitgt__session_destroy(struct scsitgt__session *sess);

/*
 * A nexus of the core's own (a LUN's background work, core/bg_walk.c): no initiator, no ACL,
 * not in tgt->sessions, so no TMF, reset or nexus loss reaches its commands. NULL without
 * memory. Destroy it once it has no command left.
 */
struct scsitgt__session *scsitgt__session_create_internal(struct scsitgt_target *tgt);
void scsitgt__session_destroy_internal(struct scsitgt__session *sess);

/*
 * whether LUN @lun_id exists for this nexus under LUN masking (core/acl.c). Commands to a
 * LUN it does not see behave as for a LUN that does not exist; REPORT LUNS leaves it out.
 */
bool scsitgt__session_lun_visible(const struct scsitgt__session *sess, uint64_t lun_id);
/* Whether LUN @lun_id is read-only for this nexus's initiator (scsitgt_target_set_lun_read_only). */
bool scsitgt__session_lun_read_only(const struct scsitgt__session *sess, uint64_t lun_id);
/*
 * Whether medium writes to @lun through @sess are refused as write-protected (SBC-4 §4.11): the
 * LUN's read-only flag, SWP of the control mode page (SPC-5 §7.5.8), or a read-only mapping
 * for the initiator. @sess may be NULL (no nexus: background work).
 */
bool scsitgt__lun_write_protected(const struct scsitgt_lun *lun,
				  const struct scsitgt__session *sess);
/* The LUN @lun_id if it exists, is not being destroyed and is visible to @sess; else NULL. */
struct scsitgt_lun *scsitgt__session_find_lun(const struct scsitgt__session *sess, uint64_t lun_id);

/* Command lifecycle, see the top of this file. */
int scsitgt__cmd_create(struct scsitgt__cmd **out, struct scsitgt__session *sess,
			size_t fabric_priv_size);
/*
 * Optional, before scsitgt__cmd_setup(): @ns is the uv_hrtime() at which the fabric read the
 * command's request (one clock read for every request of one read), and the LUN latency
 * histogram counts from there; without it, setup reads the clock itself.
 */
static inline void scsitgt__cmd_set_arrival(struct scsitgt__cmd *cmd, uint64_t ns)
{
	cmd->start_ns = ns;
}
void scsitgt__cmd_setup(struct scsitgt__cmd *cmd, const uint8_t lun[8], const uint8_t *cdb,
			size_t cdb_len, uint8_t task_attr, uint64_t tag);
void scsitgt__cmd_execute(struct scsitgt__cmd *cmd);
/*
 * Allocate the data buffer of a write set up with cmd->defer_buf (a no-op when it has one or
 * needs none). Returns 0 or -ENOMEM. Must run before execute for a write that gets data.
 */
int scsitgt__cmd_alloc_buf(struct scsitgt__cmd *cmd);
/* Refuse a command that has not executed yet (e.g. the transport saw a data length error). */
void scsitgt__cmd_fail(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason);
/*
 * fit a parsed write (cmd->dir OUT, not executed yet) to the @edtl bytes of Data-Out the
 * initiator announced, when that differs from the CDB's cmd->xfer_len (SAM-5 §5.4.3, RFC 7143
 * §11.4.5.2). A plain WRITE, WRITE AND VERIFY or ORWRITE keeps the CDB's length when more is
 * announced, and the whole blocks that arrive when less is (nblocks and xfer_len shrink;
 * none at all: GOOD without a transfer). Less than the CDB's length ending inside a block is
 * refused with INVALID FIELD IN COMMAND INFORMATION UNIT (0Eh/03h), any other write of a
 * length its CDB contradicts with INVALID FIELD IN CDB, before any data is written. Zero
 * announced for a CDB that moves no data matches.
 * Returns the CDB's own length (the SPDTL against which the fabric reports the residual).
 * Call it before soliciting data, so that a refused command is not sent R2Ts or RDMA READs.
 */
uint32_t scsitgt__cmd_fit_data_out(struct scsitgt__cmd *cmd, uint32_t edtl);
void scsitgt__cmd_destroy(struct scsitgt__cmd *cmd);

static inline void *scsitgt__cmd_fabric_priv(struct scsitgt__cmd *cmd)
{
	return cmd->fabric_priv;
}

/* Task management functions (SAM-5 §7). */
enum scsitgt__tmf_type {
	SCSITGT__TMF_ABORT_TASK,
	SCSITGT__TMF_ABORT_TASK_SET,
	SCSITGT__TMF_CLEAR_TASK_SET,
	SCSITGT__TMF_LUN_RESET,
	SCSITGT__TMF_TARGET_WARM_RESET,
	SCSITGT__TMF_TARGET_COLD_RESET,
	SCSITGT__TMF_CLEAR_ACA,
	SCSITGT__TMF_QUERY_TASK,
	SCSITGT__TMF_QUERY_TASK_SET,
	SCSITGT__TMF_QUERY_ASYNC_EVENT,
};

/* Service responses (SAM-5 §7.1). */
enum scsitgt__tmf_response {
	SCSITGT__TMF_COMPLETE,
	SCSITGT__TMF_SUCCEEDED,
	SCSITGT__TMF_TASK_NOT_FOUND,
	SCSITGT__TMF_LUN_NOT_FOUND,
	SCSITGT__TMF_NOT_SUPPORTED,
	SCSITGT__TMF_REJECTED,
};

typedef void (*scsitgt__tmf_cb)(void *cb_arg, enum scsitgt__tmf_response response);

/*
 * Run a TMF on a nexus. @ref_tag names the task for ABORT TASK / QUERY TASK. The affected
 * commands get ops->cmd_aborted() (each once; other nexuses' executing ones cmd_done() with
 * TASK ABORTED under TAS 1), and @cb follows when every one of them has left its backend.
 * @cb may be called from inside this call.
 */
void scsitgt__tmf_execute(struct scsitgt__session *sess, enum scsitgt__tmf_type type,
			  const uint8_t lun[8], uint64_t ref_tag, scsitgt__tmf_cb cb, void *cb_arg);

/*
 * An ABORT TASK whose task the fabric found does not exist (iSCSI: no task of the connection
 * has the Referenced Task Tag, or its response is out; RFC 7143 §11.6.1): the host's TMF event
 * as scsitgt__tmf_execute() raises it, nothing aborted, then @cb, from inside this call:
 * SCSITGT__TMF_LUN_NOT_FOUND for a LUN that does not exist for the nexus, else @absent (the
 * fabric's answer: "task does not exist", or "function complete" for a CmdSN it used up).
 */
void scsitgt__tmf_abort_absent(struct scsitgt__session *sess, const uint8_t lun[8],
			       enum scsitgt__tmf_response absent, scsitgt__tmf_cb cb, void *cb_arg);

/*
 * end every task of a nexus that is going away (iSCSI logout): each live command is aborted
 * (ops->cmd_aborted(), no response), always. @cb follows exactly once, on the nexus's shard,
 * maybe from inside this call: SCSITGT__TMF_COMPLETE when no command of the nexus is left in a
 * backend (those it aborted and those an earlier TMF aborted have all left), and otherwise
 * SCSITGT__TMF_REJECTED ("cleanup failed"): @timeout_ms passed first, or there was no memory to
 * wait (then it answers at once; those still in a backend are freed when it returns them). No
 * other response.
 */
void scsitgt__tmf_quiesce(struct scsitgt__session *sess, uint32_t timeout_ms, scsitgt__tmf_cb cb,
			  void *cb_arg);
/*
 * scsitgt__tmf_quiesce(), then @gone(@gone_arg) exactly once, on the same loop, when no
 * command it covers is held by a backend any more: right after @cb when they left in time;
 * after the timeout's @cb, when the last of them comes back from its backend or the engine's
 * destruction gives it up (core/drain.c; a LUN removal that times out does not: the backend
 * still holds it), which may be long after the nexus is gone (scsitgt__session_destroy()
 * detaches them). What outlives the nexus to fence it (iSCSI: a login of the same I_T nexus,
 * session.c) costs its commands nothing: they already list the quiescence's wait
 * (cmd->tmf_wait). Without memory for that list entry a
 * command is not waited for: @cb says SCSITGT__TMF_REJECTED, and @gone may come before it
 * has left.
 */
void scsitgt__tmf_quiesce_fence(struct scsitgt__session *sess, uint32_t timeout_ms,
				scsitgt__tmf_cb cb, void *cb_arg, void (*gone)(void *arg),
				void *gone_arg);

/* Decode a SAM-5 §4.7 LUN (peripheral or flat addressing); UINT64_MAX when unsupported. */
uint64_t scsitgt__lun_decode(const uint8_t lun[8]);
/* Encode a LUN id into SAM-5 form (peripheral below 256, flat otherwise). */
void scsitgt__lun_encode(uint64_t id, uint8_t lun[8]);

#endif /* SCSITGT_CORE_FABRIC_H */
