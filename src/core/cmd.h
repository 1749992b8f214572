/* SPDX-License-Identifier: MIT */
/* A SCSI command inside the core, and the io objects it hands to a backend. */
#ifndef SCSITGT_CORE_CMD_H
#define SCSITGT_CORE_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/core.h"
#include "core/range_lock.h"
#include "core/sbc_ctx.h"
#include "core/sense.h"
#include "core/shard.h"
#include "core/spc_ctx.h"

struct scsitgt__session;
struct scsitgt__cdb_def;
struct scsitgt__cmd;
struct scsitgt__buf_ops;

/*
 * The life of a command. cmd.c alone moves it (cmd_move() asserts every move against this
 * drawing, kept as a table there: scsitgt__cmd_transition_allowed()), and
 * tests/unit/core/test_cmd_states.c checks the moves real commands make against its own copy.
 *
 *   NEW --setup: a write------> NEED_DATA --+
 *    |                                      +--execute--> EXEC --last io back,---> DONE
 *    +--setup: no Data-Out----> READY ------+               ^    emulation ends      |
 *                                           |               | its turn came       destroy
 *                                           +--execute,     | (core/order.c)         |
 *                                              held back--> PARKED                   v
 *                                              by an older ORDERED or              FREED
 *                                              HEAD OF QUEUE task
 *
 *   a command of the core's own (core/bg_walk.c, on a LUN's internal nexus):
 *     NEW --start_internal--> EXEC --end_internal--> DONE --destroy--> FREED
 *   setup refused, fail() before execute (status and sense set):
 *     NEW, NEED_DATA, READY --> DONE
 *   abort (TMF, LUN drain): no response; ops->cmd_aborted at once, or when its ios are back:
 *     NEED_DATA, READY, PARKED, EXEC --> ABORTED --destroy--> FREED
 *   aborted by another nexus under TAS 1 (cmd->tas): TASK ABORTED once its ios are back:
 *     PARKED, EXEC --> ABORTED --> DONE
 *   nexus lost while a backend holds it (ios or a hold: core/range_lock.c, pr_cluster.c):
 *     NEED_DATA, READY, EXEC, ABORTED --> ORPHANED --last io back--> FREED
 *   engine shutdown gives it up inside a backend (core/drain.c):
 *     NEED_DATA, READY, EXEC, ABORTED, ORPHANED --> ABANDONED --last io back, any thread--> FREED
 *   destroy (the fabric; session end with nothing in a backend):
 *     NEW, NEED_DATA, READY, PARKED, EXEC, DONE, ABORTED --> FREED
 *
 * (NEED_DATA and READY reach ORPHANED and ABANDONED only with ios a test submitted by hand.)
 */
enum scsitgt__cmd_state {
	SCSITGT__CMD_NEW,	/* created, CDB not seen yet */
	SCSITGT__CMD_NEED_DATA, /* parsed; waiting for the fabric to deliver Data-Out */
	SCSITGT__CMD_READY,	/* parsed; may execute */
	SCSITGT__CMD_PARKED,	/* executed, held back in the LUN's task set (core/order.c) */
	SCSITGT__CMD_EXEC,	/* executing (emulation or backend io in flight) */
	SCSITGT__CMD_DONE,	/* status set; the fabric owns the response */
	SCSITGT__CMD_ABORTED,	/* aborted (no response); freed when its ios return */
	SCSITGT__CMD_ORPHANED,	/* its nexus is gone (sess NULL); its last io frees it */
	SCSITGT__CMD_ABANDONED, /* given up by an engine shutdown (core/drain.c): in no engine
				 * structure any more; its last io frees it, on any thread */
	SCSITGT__CMD_FREED,	/* destroyed (the memory goes back to the cache) */
	SCSITGT__CMD_NSTATES
};

enum scsitgt__data_dir {
	SCSITGT__DIR_NONE,
	SCSITGT__DIR_IN,  /* target to initiator (READ) */
	SCSITGT__DIR_OUT, /* initiator to target (WRITE) */
};

/* The largest CDB we accept (SPC-5 variable-length CDBs go up to 260, none is supported). */
#define SCSITGT__CDB_MAX 32

typedef void (*scsitgt__exec_fn)(struct scsitgt__cmd *cmd);

struct scsitgt__sbc_chunker;
struct scsitgt__xcopy_op;
struct scsitgt__bg_walk;
struct scsitgt__mode_select_op;
struct scsitgt__pr_hold;

/*
 * What a command keeps between the steps of its execution (parse, exec, the callbacks of its
 * ios and of the range lock): one member per command family, declared by the family and
 * used only by the files named. A command belongs to one family, the one of its exec function
 * (ua.c's REQUEST SENSE replaces the exec), so the members overlap. Nothing is zeroed for
 * them: a family sets what it reads. VERIFY and WRITE SAME share the walk of sbc_chunk.c:
 * what each needs besides the walk is in the walk (its issue and check functions), so the
 * walk alone is their context.
 */
union scsitgt__cmd_ctx {
	/* sbc.c READ, WRITE: the plain-path hold of the range lock. */
	struct scsitgt__range_token rw;
	/* sbc_unmap.c UNMAP: the plain-path hold of the span of its ranges. */
	struct scsitgt__range_token unmap;
	/* sbc_verify.c WRITE AND VERIFY (sbc_ctx.h). */
	struct scsitgt__sbc_write_verify_ctx write_verify;
	/* sbc_chunk.c: the range walk of VERIFY (sbc_verify.c) and WRITE SAME
	 * (sbc_write_same.c), found here by the walk's io and grant callbacks. */
	struct scsitgt__sbc_chunker *chunker;
	/* sbc_atomic.c COMPARE AND WRITE, ORWRITE, WRITE ATOMIC (sbc_ctx.h). */
	struct scsitgt__sbc_atomic_ctx atomic;
	/* spc_diag.c the default self-test of SEND DIAGNOSTIC (spc_ctx.h). */
	struct scsitgt__spc_diag_ctx diag;
	/* xcopy.c EXTENDED COPY: the copy in progress. */
	struct scsitgt__xcopy_op *xcopy;
	/* bg_walk.c the LUN's own command of a background walk: the walk. */
	struct scsitgt__bg_walk *bg_walk;
	/* spc_mode.c MODE SELECT while its write-back of the cache runs. */
	struct scsitgt__mode_select_op *mode_select;
	/* sbc_lba_status.c GET LBA STATUS: the extent array its backend io fills. */
	void *lba_extents;
};
/* Every command carries the union: a family that needs more keeps a pointer to an allocation
 * of its own (as xcopy and the range walk do), so that commands do not grow for it. */
_Static_assert(sizeof(union scsitgt__cmd_ctx) <= 32, "the per-command context stays small");

/*
 * The owner of a family's heap state of a command (reached through ctx: a record, a walk, a
 * buffer an io reads or fills) on the one end its own callbacks never see. Completion, abort
 * and a lost nexus all come back through the family's io callbacks (an io or a hold keeps
 * the command until then), and the family frees its state there. A command given up inside a
 * backend by an engine shutdown (ABANDONED, core/drain.c) gets no callback again: its last io
 * frees the command, on any thread. So a family sets cmd->ctx_ops while it has such state
 * (scsitgt__cmd_ctx_own()) and clears it when it frees the state itself; cmd.c gives up and
 * frees through it what is still owned when the command is abandoned.
 */
struct scsitgt__cmd_ctx_ops {
	/* In scsitgt__cmd_abandon(), on the command's loop with the engine alive: let go of what
	 * the state holds in engine structures (not its memory: an io may still point into it).
	 * May be NULL. */
	void (*abandon)(struct scsitgt__cmd *cmd);
	/* Free the state's memory: at scsitgt__cmd_abandoned_free() (any thread, no engine:
	 * free() only), once the backend gave back the ios. */
	void (*free)(struct scsitgt__cmd *cmd);
};

struct scsitgt__cmd {
	struct scsitgt__session *sess;
	/* in sess->cmds; ORPHANED: in shard->orphans (core/tmf_xshard.c waits for it) */
	struct scsitgt__list sess_node;
	struct scsitgt_lun *lun; /* NULL when the addressed LUN does not exist */
	/* lun->xflags as parse loaded it (SCSITGT__LUN_XF_*: the slow paths armed then). */
	uint32_t xflags;
	/* On a LUN with shared reservations (SCSITGT__LUN_XF_PR_SHARED): the change sequence of
	 * the state its reservation check read (core/pr.c); a PREEMPT AND ABORT aborts only the
	 * commands admitted before its own sequence. 0 elsewhere. */
	uint64_t pr_seq;
	uint64_t lun_id;
	uint64_t tag;
	enum scsitgt__cmd_state state;
	uint8_t task_attr;
	uint8_t cdb_len;
	uint8_t cdb[SCSITGT__CDB_MAX];
	const struct scsitgt__cdb_def *def;
	scsitgt__exec_fn exec;

	/* Data transfer, set by parse: direction and length the CDB implies. */
	enum scsitgt__data_dir dir;
	uint32_t xfer_len;
	uint8_t *buf;	   /* xfer_len bytes, allocated by setup */
	uint32_t data_len; /* Data-In bytes valid in buf after execution (<= xfer_len) */
	/* Data-In bytes sent with a CHECK CONDITION: the good blocks before a medium error
	 * (scsitgt_io_complete_partial(), sbc.c); 0 for every other failure. */
	uint32_t partial_len;

	/* Decoded block range of media commands. */
	uint64_t lba;
	uint32_t nblocks;
	uint32_t io_flags; /* SCSITGT_IO_FLAG_* */

	/* Sense details gathered by parse/exec (field pointer, INFORMATION). */
	struct scsitgt__sense_detail detail;

	/* Outcome. */
	uint8_t status;
	uint8_t sense_len;
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];

	/* Backend ios of this command still in flight. */
	unsigned int ios_inflight;
	/* Holds on it (scsitgt__cmd_hold()): waits of the core's own that will end it. */
	unsigned int holds;
	/* First failure among the ios of a multi-io command. */
	enum scsitgt__sense_reason io_reason;
	struct scsitgt__sense_info io_raw;

	/* The command family's own state between execution steps (see the union). */
	union scsitgt__cmd_ctx ctx;
	/* who frees the family's heap state in ctx on an end it does not see; NULL: none. */
	const struct scsitgt__cmd_ctx_ops *ctx_ops;

	/* the shard (loop) this command runs on, its session's (core/shard.h): the command,
	 * its ios and its buf come from the shard's cache; buf is owned by cmd.c. */
	struct scsitgt__shard *shard;
	uint32_t alloc_size; /* bytes of this object as allocated */
	uint32_t buf_cap;    /* capacity of buf as allocated */

	/* the TMFs waiting for this aborted command to leave its backend (core/tmf.c); NULL:
	 * none, the case of every command no TMF touched. */
	struct scsitgt__tmf_wait *tmf_wait;
	/* its record while its admission is held for the cluster store (core/pr_hold.c): an
	 * abort or a lost nexus takes it out of its LUN's queue. NULL: not held there. */
	struct scsitgt__pr_hold *pr_hold;

	/* uv_hrtime() at setup (or when the fabric read it), for the LUN latency histogram. */
	uint64_t start_ns;

	/* place in the LUN's task set (core/order.c); PARKED is the state of one waiting there. */
	struct scsitgt__list order_node;

	/* ios still to come back from the backend of an ABANDONED command (core/drain.c). */
	_Atomic unsigned int orphan_ios;

	/* where buf comes from when a fabric supplies it (an RDMA-registered pool, set
	 * before setup); NULL: the engine cache. */
	const struct scsitgt__buf_ops *buf_ops;
	void *buf_ctx;

	/*
	 * Bookkeeping beside the state, none of it a state of its own:
	 *   stats_done   the command was counted (core/stats.c: done or aborted), once.
	 *   defer_buf    set by the fabric before setup: leave buf to scsitgt__cmd_alloc_buf()
	 *                for a write, so that no data buffer is pinned before its data can
	 *                arrive (a setup option).
	 *   in_task_set  in its LUN's task set, from an accepted CDB until it completes or leaves
	 *                its backend: counted in its shard's part, or on lun->order's list through
	 *                order_node while a barrier is armed (core/order.c); 0 when not.
	 *   order_parked listed and found unable to start (core/order.c); under lun->xlock.
	 *   buf_ext      who owns buf: buf_ops (a fabric's registered pool), else the cache.
	 *   tas          aborted by another nexus's task management or PREEMPT AND ABORT while
	 *                its LUN's TAS was 1 (SPC-5 §7.5.10), once executing (PARKED, EXEC):
	 *                it ends with TASK ABORTED through ops->cmd_done, not ops->cmd_aborted.
	 */
	bool stats_done;
	bool defer_buf;
	uint8_t in_task_set;
	bool order_parked;
	bool buf_ext;
	bool tas;

	/* bytes of this Data-In buffer counted in sess->read_bytes (cmd.c). */
	uint32_t read_charged;

	/* Data-In lent by the backend instead of filling buf (scsitgt_io_lend_data()): the
	 * fabric sends data_len bytes from here; lent_release runs when buf is given back. */
	const uint8_t *lent_data;
	void (*lent_release)(void *arg);
	void *lent_arg;

	_Alignas(16) uint8_t fabric_priv[];
};

/*
 * a fabric's data buffer allocator (iSER and SRP: buffers from registered memory, so the
 * data moves without a per-io registration). alloc() may return NULL: the core then takes the
 * buffer from its cache, and the fabric copes with an unregistered buffer. Loop: home.
 */
struct scsitgt__buf_ops {
	void *(*alloc)(void *ctx, size_t size, size_t *cap);
	void (*free)(void *ctx, void *p, size_t cap);
};

struct scsitgt__tmf_op;

/* The family's heap state in ctx is owned by @ops from now (NULL: freed by the family). */
static inline void scsitgt__cmd_ctx_own(struct scsitgt__cmd *cmd,
					const struct scsitgt__cmd_ctx_ops *ops)
{
	cmd->ctx_ops = ops;
}

/* Whether the command may still run or is running: what a TMF aborts (SAM-5 §7). */
bool scsitgt__cmd_is_live(const struct scsitgt__cmd *cmd);

/* Whether the command was aborted, lost its nexus or was given up: its work stops and no
 * response is sent (what a multi-step exec checks before its next step). */
static inline bool scsitgt__cmd_aborted(const struct scsitgt__cmd *cmd)
{
	return cmd->state == SCSITGT__CMD_ABORTED || cmd->state == SCSITGT__CMD_ORPHANED ||
	       cmd->state == SCSITGT__CMD_ABANDONED;
}

/*
 * Something of the core's own will end this executing command later (a range lock or the PR
 * store it waits for, a background walk it waits on, a loop of submissions): like an io in
 * its backend, a hold keeps an abort or a lost nexus from freeing it; the holder drops the
 * hold, then completes it (an aborted one goes its aborted way). Loop: the command's (a plain
 * count, like its state: a step on home holds it before the message and drops it after the
 * message back, core/home_call.c).
 */
void scsitgt__cmd_hold(struct scsitgt__cmd *cmd);
void scsitgt__cmd_unhold(struct scsitgt__cmd *cmd);

/*
 * A command of the core's own (core/bg_walk.c), created with scsitgt__cmd_create() on an
 * internal nexus: start it on @lun with a copy of @cdb (NEW to EXEC, no parse, never counted),
 * and end it (EXEC to DONE, destroyed; no fabric is told). Loop: home.
 */
void scsitgt__cmd_start_internal(struct scsitgt__cmd *cmd, struct scsitgt_lun *lun,
				 const uint8_t *cdb, size_t cdb_len);
void scsitgt__cmd_end_internal(struct scsitgt__cmd *cmd);

/* A PARKED command's turn came (core/order.c): its access checks are taken again on the
 * state of now (scsitgt__cdb_recheck()), then it executes, or ends with their sense. */
void scsitgt__cmd_unpark(struct scsitgt__cmd *cmd);

/*
 * Abort a live command (TMF, LUN drain; no response is ever sent). One in its backend stays
 * ABORTED until its ios return, then goes to ops->cmd_aborted; @op (may be NULL) is the TMF
 * that waits for that, and with @cancel_ios the backend is asked to cancel them (backend.h
 * abort()). One whose admission waits for the cluster store leaves that wait and goes to
 * ops->cmd_aborted now (core/pr_hold.c), as any other does. The fabric may free @cmd there.
 * With cmd->tas set by the caller (core/tmf.c), it is answered TASK ABORTED instead, through
 * ops->cmd_done, at the same moment.
 */
void scsitgt__cmd_abort(struct scsitgt__cmd *cmd, struct scsitgt__tmf_op *op, bool cancel_ios);
/* Whether @cmd is ABORTED and still in its backend (an io out, or a hold): a TMF that covers it
 * waits for it (core/tmf.c). */
bool scsitgt__cmd_aborted_held(const struct scsitgt__cmd *cmd);

/*
 * Its I_T nexus is gone (scsitgt__session_destroy()): the command is freed now, or, when a
 * backend still holds it, detached from the session and freed when its last io returns (one
 * held for the cluster store is freed now too, core/pr_hold.c).
 */
void scsitgt__cmd_nexus_gone(struct scsitgt__cmd *cmd);

/*
 * An engine shutdown gives up on the command, in a backend that never returned it
 * (core/drain.c): it leaves every engine structure and its last io frees it, on any thread.
 * False when it was given up already.
 */
bool scsitgt__cmd_abandon(struct scsitgt__cmd *cmd);
/* The last io of an ABANDONED command came back: free it (any thread, no engine needed). */
void scsitgt__cmd_abandoned_free(struct scsitgt__cmd *cmd);

/* Whether the diagram above allows a command to move from @from to @to. */
bool scsitgt__cmd_transition_allowed(enum scsitgt__cmd_state from, enum scsitgt__cmd_state to);

#ifndef NDEBUG
/* Debug and test builds: called on each transition, before it happens (a test's observer). */
extern void (*scsitgt__cmd_transition_hook)(const struct scsitgt__cmd *cmd,
					    enum scsitgt__cmd_state from,
					    enum scsitgt__cmd_state to);
#endif

/* give back cmd->buf to where it came from (the engine cache or cmd->buf_ops), and lent
 * Data-In to its backend; on the home loop. */
void scsitgt__cmd_free_buf(struct scsitgt__cmd *cmd);

/* Where a finished command's Data-In bytes are: memory the backend lent, or buf. */
static inline const uint8_t *scsitgt__cmd_data_in(const struct scsitgt__cmd *cmd)
{
	return cmd->lent_data ? cmd->lent_data : cmd->buf;
}

/*
 * Finish a command with a reason. For CHECK CONDITION reasons the sense data is encoded here
 * (fixed or descriptor format per the LUN's D_SENSE), with @detail when not NULL.
 */
void scsitgt__cmd_complete(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason);
void scsitgt__cmd_complete_detail(struct scsitgt__cmd *cmd, enum scsitgt__sense_reason reason,
				  const struct scsitgt__sense_detail *detail);
/* Finish with raw sense (from a backend). */
void scsitgt__cmd_complete_raw(struct scsitgt__cmd *cmd, uint8_t key, uint8_t asc, uint8_t ascq);

/* finish with @status and @sense_len bytes of sense data the command built itself. */
void scsitgt__cmd_complete_sense(struct scsitgt__cmd *cmd, uint8_t status, const uint8_t *sense,
				 size_t sense_len);

/* Parse helpers returning INVALID FIELD IN CDB with the field pointer set on the command. */
enum scsitgt__sense_reason scsitgt__cmd_bad_cdb_field(struct scsitgt__cmd *cmd, uint16_t byte,
						      int bit);
enum scsitgt__sense_reason scsitgt__cmd_bad_param_field(struct scsitgt__cmd *cmd, uint16_t byte,
							int bit);

/*
 * Backend ios. An exec function submits one or more; each completion calls @done on the home
 * loop with the io's outcome (SCSITGT__SR_OK or a reason), then the io is freed.
 */
typedef void (*scsitgt__io_done_fn)(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				    enum scsitgt__sense_reason reason);

struct scsitgt_io {
	/* for scsitgt_io_complete_threadsafe(): a node of home's queue, or a message to a
	 * worker shard's inbox (core/shard.c). */
	struct scsitgt__msg tsq_msg;
	struct scsitgt__cmd *cmd;
	/* the command's shard: the io is submitted and completed on its loop, unless @fwd: a
	 * backend without SCSITGT_BACKEND_MULTI_LOOP and a command off home, whose io is
	 * submitted on home and whose completion comes back to the shard with @fwd_reason. */
	struct scsitgt__shard *shard;
	bool fwd;
	enum scsitgt__sense_reason fwd_reason;
	struct scsitgt_lun *lun;
	scsitgt__io_done_fn done;
	enum scsitgt_io_type type;
	uint32_t flags;
	uint64_t lba;
	uint32_t num_blocks;
	int iovcnt;
	int status;
	struct scsitgt__sense_info raw; /* set by scsitgt_io_complete_sense */
	/* Set by scsitgt_io_complete_at(): the first block in error, for INFORMATION. */
	bool error_lba_valid;
	uint64_t error_lba;
	/* Set by scsitgt_io_complete_partial(): the blocks before error_lba were transferred. */
	bool partial;
	struct iovec iov_inline[2];
	const struct iovec *iov;
	uint32_t alloc_size; /* bytes of this object as allocated (engine cache) */
	/* place in lun->drain.ios while lent to the backend, and who completes it (enum
	 * scsitgt__io_tstate): a thread-safe completion moves LENT to QUEUED, an engine shutdown
	 * that gives up on the io moves LENT to ORPHAN (core/drain.c). */
	struct scsitgt__list lun_node;
	_Atomic int tstate;
	/* a READ's data lent by the backend (scsitgt_io_lend_data()), handed to the command at
	 * completion. */
	const void *lent_data;
	void (*lent_release)(void *arg);
	void *lent_arg;
	_Alignas(16) uint8_t ctx[];
};

/*
 * Submit a backend io for @cmd. @iov may be NULL for types without data; it must stay valid
 * until completion (it is copied when iovcnt <= 2). Returns 0 or -ENOMEM (nothing submitted).
 */
int scsitgt__io_submit(struct scsitgt__cmd *cmd, enum scsitgt_io_type type, uint64_t lba,
		       uint32_t num_blocks, const struct iovec *iov, int iovcnt, uint32_t flags,
		       scsitgt__io_done_fn done);

/* The default done function: complete the command when its last io returns. */
void scsitgt__io_done_complete_cmd(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				   enum scsitgt__sense_reason reason);

/* states of scsitgt_io.tstate. */
enum scsitgt__io_tstate {
	SCSITGT__IO_LENT = 0,	/* with the backend */
	SCSITGT__IO_QUEUED = 1, /* completed through the thread-safe queue, not drained yet */
	SCSITGT__IO_ORPHAN = 2, /* given up by an engine shutdown: its completion only frees */
};

/* Tell the backend about each io of an aborted command it still holds (backend.h abort()). */
void scsitgt__io_abort_cmd(struct scsitgt__cmd *cmd);

/* A thread-safe completion reached the io's shard: finish it there (core/shard.c). */
void scsitgt__io_complete_here(struct scsitgt_io *io);

/* Drain the home shard's thread-safe completion queue (engine.c calls it from its async). */
void scsitgt__io_drain_threadsafe(struct scsitgt_engine *engine);

#endif /* SCSITGT_CORE_CMD_H */
