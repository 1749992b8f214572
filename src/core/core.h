/* SPDX-License-Identifier: MIT */
/*
 * Core objects: engine, target, LUN, session (I_T nexus). Internal to the library; fabrics reach
 * the core through core/fabric.h, backends through the public backend.h.
 */
#ifndef SCSITGT_CORE_CORE_H
#define SCSITGT_CORE_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/range_lock.h"
#include "core/worker.h"
#include "libscsitgt/scsitgt.h"
#include "util/list.h"
#include "util/log.h"
#include "util/mpsc.h"

/* Transport extension slots on engines and targets (state the core does not interpret). */
enum scsitgt__ext_id {
	SCSITGT__EXT_ISCSI = 0,
	SCSITGT__EXT_SRP = 1,
	SCSITGT__EXT_COUNT_
};

struct scsitgt__ext {
	void *data;
	/* Frees data when the owner dies. */
	void (*destroy)(void *data);
};

/*
 * A service is something a transport runs on the engine (an iSCSI portal, an SRP listener).
 * The engine shuts every service down before it destroys targets.
 */
struct scsitgt__service {
	struct scsitgt__list node;
	/* Stop listening, close connections; call cb(cb_arg, 0) once done (deferred). */
	void (*shutdown)(struct scsitgt__service *svc, scsitgt_done_cb cb, void *cb_arg);
	/* The target port it is, for the TransportIDs and relative target ports persistent
	 * reservations name (core/pr_out.c): its SPC-5 §7.6.4.1 PROTOCOL IDENTIFIER (0: not a
	 * target port) and relative target port identifier, of @tgt only, or of every target
	 * of the engine when NULL (an iSCSI portal group). Set before it is added; home only. */
	uint8_t protocol_id;
	uint16_t rel_port_id;
	const struct scsitgt_target *tgt;
};

/* Work deferred to the next loop iteration, so callbacks never run inside the initiating call. */
struct scsitgt__deferred {
	struct scsitgt__list node;
	void (*fn)(struct scsitgt__deferred *d);
};

struct scsitgt_engine {
	uv_loop_t *loop;
	/* The thread that created the engine, which runs its loop: SCSITGT__ASSERT_HOME. */
	uv_thread_t home_thread;
	struct scsitgt__logger log;
	void *userdata;
	struct scsitgt__list targets;
	/* Targets made so far (home only): each target's gen. */
	uint64_t targets_made;
	struct scsitgt__list services;
	/* Wakes the home loop for the home shard's thread-safe io completions and deferred
	 * items (core/shard.h) and for posted functions. */
	uv_async_t tsq_async;
	/* functions posted by scsitgt_engine_post() from any thread, run from tsq_async. */
	struct scsitgt__mpsc posts;
	/* the loops' per-loop state (core/shard.h): shards[0] is home, shards[i + 1] worker i. */
	struct scsitgt__shard *shards;
	unsigned int nshards;
	struct scsitgt__ext ext[SCSITGT__EXT_COUNT_];
	bool destroying;
	int destroy_phase;
	unsigned int destroy_pending;
	scsitgt_done_cb destroy_cb;
	void *destroy_cb_arg;
	/* How long a TMF waits for aborted commands to leave their backends (core/tmf.c);
	 * 0 means the default. Set on home, read by the TMFs of every loop: a relaxed atomic. */
	_Atomic uint32_t tmf_timeout_ms;
	/* the host's event callback (core/events.c). */
	scsitgt_event_cb event_cb;
	void *event_arg;
	/* worker loops (core/worker.c), none with opts.workers == 0; messages from them to
	 * the home loop arrive in home_inbox (set up only with workers). */
	struct scsitgt__worker *workers;
	unsigned int nworkers;
	unsigned int workers_running;
	struct scsitgt__inbox *home_inbox;
	void (*workers_stop_cb)(void *cb_arg, int status);
	void *workers_stop_arg;
	/*
	 * With workers (the default there, issue 18), an iSCSI/TCP connection runs on its
	 * worker end to end (login, CmdSN, the core, responses), not only its socket. Set at
	 * creation from scsitgt_engine_opts.conn_workers, which the environment variable
	 * SCSITGT_CONN_WORKERS overrides (false: socket workers only, docs/threading.md);
	 * read-only afterwards.
	 */
	bool conn_workers;
	/*
	 * Engine-wide configuration (targets, ACLs, CHAP secrets, iSCSI parameters, redirect
	 * hooks) as login on a worker reads it (conn_workers only): management calls, which
	 * run on the home loop, change it under the write lock; readers on a worker take the
	 * read lock (readers on home need none: writers are home). scsitgt__cfg_*().
	 */
	uv_rwlock_t cfg_lock;
	/* how long a LUN removal waits for its backend's ios (0: the default), the LUNs
	 * whose removal timed out with ios still in the backend, thread-safe completions being
	 * pushed right now and orphaned ios still in the queue (core/drain.c). */
	uint32_t drain_timeout_ms;
	struct scsitgt__list zombies;
	_Atomic unsigned int tsq_senders;
	unsigned int orphan_queued;
	unsigned int drain_retries;
	/* scsitgt__engine_check_sigpipe() ran. */
	bool sigpipe_checked;
};

/* a source address range of an ACL (core/acl.c); IPv4 is kept as IPv4-mapped IPv6. */
struct scsitgt__acl_net {
	uint8_t addr[16];
	uint8_t prefix; /* 0..128, counted on the 128-bit form */
};

/* Number of LUN ids a mapping bitmap covers (SAM-5 flat space: 0..16383). */
#define SCSITGT__ACL_LUN_IDS 16384u

/*
 * what the target knows about one initiator name (core/acl.c): whether it is on the login
 * list, the addresses it may come from, and the LUNs mapped to it. The entry with name NULL
 * (tgt->acl_any) holds the LUNs mapped to every initiator.
 */
struct scsitgt__acl_entry {
	struct scsitgt__list node;
	char *name;
	bool allowed;		       /* listed by scsitgt_target_add_initiator() */
	struct scsitgt__acl_net *nets; /* scsitgt_target_add_initiator_address() */
	size_t nnets;
	uint64_t *lun_map; /* SCSITGT__ACL_LUN_IDS bits, NULL while none is mapped */
	size_t nmapped;
	uint64_t *ro_map; /* LUNs read-only for it, same layout, NULL while none */
	size_t nro;
};

struct scsitgt_target {
	struct scsitgt_engine *engine;
	struct scsitgt__list node; /* in engine->targets */
	/* Never the same for two targets of the engine, unlike the address, which a target made
	 * after this one is freed may get: what an orphaned command's LUN is matched by
	 * (lun->tgt_gen, core/tmf_xshard.c). */
	uint64_t gen;
	char *name;
	char *alias;
	void *userdata;
	/* LUNs sorted by id, for lookup by binary search and REPORT LUNS in order. */
	struct scsitgt_lun **luns;
	size_t nluns;
	size_t luns_cap;
	/* The same LUNs as published for lookups from any shard (scsitgt__target_find_lun()):
	 * a copy made on home at each change, replaced atomically; an old copy is freed once
	 * every worker shard has passed a loop callback boundary (scsitgt__shards_sync()). */
	_Atomic(struct scsitgt__lun_table *) lun_table;
	struct scsitgt__list sessions;
	struct scsitgt__list acl;
	struct scsitgt__ext ext[SCSITGT__EXT_COUNT_];
	/* Asymmetric logical unit access (core/alua.c): the modes, the host's request hook and
	 * the target port groups; NULL until the host first configures ALUA. Under alua_lock
	 * (commands of several loops read it, SET TARGET PORT GROUPS changes it: issue 18);
	 * alua_gen counts its changes, so that a command's access check is one acquire load
	 * compared with the generation its nexus cached with its group's state. */
	struct scsitgt__alua *alua;
	uv_mutex_t alua_lock;
	_Atomic uint32_t alua_gen;
	bool destroying;
	unsigned int destroy_pending;
	scsitgt_done_cb destroy_cb;
	void *destroy_cb_arg;
	/* The engine's destruction, when it found this target already on its way out: called
	 * after destroy_cb once the target is freed (scsitgt__target_destroy_engine()). */
	scsitgt_done_cb engine_cb;
	void *engine_cb_arg;
	struct scsitgt__deferred destroy_done;
	/* task management requests crossing shards in flight (core/tmf_xshard.c): the target's
	 * destruction waits for them (scsitgt__target_hold()). Home only. */
	unsigned int xholds;
	/* Events naming the target that a worker loop posted to home and home has not delivered
	 * yet (core/events.c): the target is freed only once none is left, so that ev.target is
	 * alive when the host's event callback gets it. Taken by the posting loop while the target
	 * is known to be alive (a nexus of it, or under engine->cfg_lock), dropped on home;
	 * checked by the destruction under cfg_lock's write side. */
	_Atomic unsigned int ev_refs;
	/* access control and limits (core/acl.c). Initiator names on the login list, the
	 * target-wide source address list, LUN masking and the wildcard mapping entry. */
	unsigned int nallowed;
	struct scsitgt__acl_net *nets;
	size_t nnets;
	bool lun_masking;
	struct scsitgt__acl_entry *acl_any;
	/* Sessions the target takes (0: no limit) and commands each LUN holds at once beyond
	 * which new ones get TASK SET FULL (0: no limit). */
	uint32_t max_sessions;
	uint32_t max_lun_commands;
	/* Bytes of Data-In buffers one session may hold (0: no limit), see cmd.c. */
	uint64_t max_read_buffer_bytes;
};

/* A target's LUNs sorted by id, as published to every shard (tgt->lun_table). */
struct scsitgt__lun_table {
	size_t n;
	struct scsitgt_lun *luns[];
};

/*
 * Mode parameters a LUN keeps (SPC-5 §7.5, SBC-4 §6.5). Commands of every loop read them
 * (WCE and SWP on each write, D_SENSE on each CHECK CONDITION), MODE SELECT changes them on
 * any loop: each is an atomic read without a lock (a plain load on x86), and MODE SELECT
 * changes them under lun->xlock (issue 18).
 */
struct scsitgt__mode_state {
	_Atomic bool wce;     /* caching page: write cache enable */
	_Atomic bool rcd;     /* caching page: read cache disable */
	_Atomic bool d_sense; /* control page: descriptor-format sense */
	_Atomic bool swp;     /* control page: software write protect */
	_Atomic bool tas;     /* control page: task aborted status (core/tmf.c) */
	_Atomic uint8_t qerr; /* control page: queue error management */
	_Atomic uint8_t mrie; /* informational exceptions page: method of reporting */
	_Atomic bool dexcpt;  /* informational exceptions page: disable exception control */
};

/* The last enum scsitgt_io_type value the core knows. */
#define SCSITGT__IO_TYPE_LAST SCSITGT_IO_GET_LBA_STATUS

/*
 * A LUN's Block Limits (SBC-4 §6.6.4, VPD B0h) as scsitgt_lun_create() settled them from the
 * LUN options, the backend's geometry and the library's own limits: what spc_vpd.c advertises and
 * what the commands enforce (sbc.c, sbc_unmap.c, sbc_write_same.c).
 */
struct scsitgt__lun_limits {
	uint32_t max_transfer_blocks;
	uint32_t opt_transfer_blocks;
	uint16_t opt_granularity;
	/* UINT32_MAX: no limit (the page's FFFFFFFFh). */
	uint32_t max_unmap_blocks;
	uint32_t max_unmap_descriptors;
	/* OPTIMAL UNMAP GRANULARITY; ugavalid: UGAVALID and UNMAP GRANULARITY ALIGNMENT apply. */
	uint32_t unmap_granularity;
	uint32_t unmap_alignment;
	bool ugavalid;
	uint64_t max_write_same_blocks;
};

/* The optional LU designators of the Device Identification VPD page (SPC-5 §7.7.6). */
struct scsitgt__lun_designators {
	bool has_naa_extended;
	bool has_uuid;
	uint8_t naa_extended[16];
	uint8_t uuid[16];
};

/*
 * The slow paths of a LUN that are armed (lun->xflags): each bit says that some rare state
 * shared by the LUN's loops exists, so that a command which finds its bit clear skips the
 * state (and its lock) entirely (docs/threading.md, "Per-LUN state across shards").
 *   RESERVED  a persistent reservation or an SPC-2 reservation is held: the reservation
 *             conflict check of every command reads lun->pr under lun->xlock. Registered
 *             keys without a reservation leave it clear, as does a LUN without any.
 */
enum {
	SCSITGT__LUN_XF_RESERVED = 1u << 0,
	/*
	 * EXCL      an exclusive range lock entry is held or waits (core/range_lock.c): plain
	 *           commands take a shared entry under lun->xlock instead of counting themselves
	 *           untracked in their shard's part.
	 * BARRIER   an ORDERED or HEAD OF QUEUE task is in the task set (core/order.c): every
	 *           new task joins the LUN's list under lun->xlock instead of counting itself in
	 *           its shard's part.
	 */
	SCSITGT__LUN_XF_EXCL = 1u << 1,
	SCSITGT__LUN_XF_BARRIER = 1u << 2,
	/* SELFTEST  a self-test of SEND DIAGNOSTIC runs (core/spc_selftest.c): commands check
	 *           it under lun->xlock. */
	SCSITGT__LUN_XF_SELFTEST = 1u << 3,
	/* PR_UNSYNCED  the cluster store said that this engine's copy of the shared reservation
	 *           state may be stale (core/pr_cluster.c, scsitgt_lun_set_pr_sync()): the
	 *           conflict check reads the store's state under lun->xlock, PERSISTENT RESERVE
	 *           IN reads the store first. */
	SCSITGT__LUN_XF_PR_UNSYNCED = 1u << 4,
	/* PR_SHARED    the reservations live in a cluster store (core/pr_cluster.c): the
	 *           conflict check stamps each command with the change sequence it was admitted
	 *           under (cmd->pr_seq), which PREEMPT AND ABORT compares. */
	SCSITGT__LUN_XF_PR_SHARED = 1u << 5,
	/* PR_PENDING   a state committed elsewhere reached the store and is not applied yet
	 *           (scsitgt_lun_start_pr_delivery(), from any thread): commands a reservation
	 *           could refuse are held until it is (core/pr_hold.c). */
	SCSITGT__LUN_XF_PR_PENDING = 1u << 6,
};

/* A LUN's command counters and latency histogram (core/stats.c). */
struct scsitgt__lun_counts {
	struct scsitgt_cmd_counters cmds;
	uint64_t lat_us[SCSITGT_LATENCY_BUCKETS];
};

/*
 * A LUN's part on one shard (lun->shard_part[shard->index], issue 18): what a plain READ or
 * WRITE changes on its LUN, kept per shard so that two loops never write one cache line.
 * Written only by the shard's own loop; the counters others read (inflight, stats: the
 * snapshots of core/stats.c sum the parts) are relaxed atomics, loaded and stored, never a
 * locked read-modify-write. The rest is the owner's alone.
 *   inflight   the shard's commands on the LUN (and holds of the core's own); LUN destroy
 *              waits for every part's to reach zero (core/lun.c).
 *   stats      counters and latency histogram of the shard's commands (core/stats.c).
 *   untracked  plain commands in flight without a range lock entry (core/range_lock.c).
 *   ios        the backend ios of the shard's commands (scsitgt_io.lun_node): what drain.c
 *              gives up on (home's part) and what abort() is offered (core/io.c).
 *   over, limit, over_at
 *              inflight is above the part's share of the target's command limit (limit,
 *              copied from the target), and the part is counted in lun->over_shares
 *              (owner only, core/lun.c).
 *   draining, drain_msg
 *              a LUN destroy asked this worker shard to report when its inflight is zero
 *              (owner only); the message goes there and back (core/lun.c).
 *   tasks      the shard's tasks in the task set that did not join the LUN's list (no
 *              barrier was armed when they entered, core/order.c). Owner only.
 *   xwait      a quiescence round (an exclusive range entry, an ORDERED task) waits for this
 *              part's untracked or tasks to reach zero: the owner then reports under xlock
 *              (scsitgt__lun_xcheck()). Owner only.
 *   xmsg, xmsg_posted
 *              the message that asks the owner to look at the LUN's cross-shard state
 *              (report its quiescence, start its tasks that may run now): posted under xlock
 *              at most once at a time (scsitgt__lun_xpoke()).
 *   rl_quiesced, order_quiesced
 *              this part reported for the current quiescence round of the range lock / the
 *              task set. Under xlock.
 *   rl_ready, rl_running
 *              range lock grants of this shard's commands to run once xlock is dropped, and
 *              the guard that runs them one after the other (core/range_lock.c). Owner only.
 */
struct scsitgt__lun_part {
	_Alignas(64) _Atomic unsigned int inflight;
	_Atomic unsigned int untracked;
	unsigned int tasks;
	bool xwait;
	bool draining;
	bool over;	      /* inflight >= over_at: counted in lun->over_shares */
	uint32_t limit;	      /* the target's max_lun_commands as last seen (0: none) */
	unsigned int over_at; /* limit / nshards + 1 (UINT_MAX without a limit) */
	struct scsitgt_lun *lun;
	struct scsitgt__shard *shard;
	struct scsitgt__list ios;
	struct scsitgt__msg drain_msg;
	/* the LUN's own nexus on this shard, for the commands of its background work started
	 * by a command of this shard (core/bg_walk.c): in no target's session list, so task
	 * management and nexus loss never reach them. Created on first use, by the owner. */
	struct scsitgt__session *bg_sess;
	struct scsitgt__msg xmsg;
	struct scsitgt__deferred xdefer; /* xmsg's stand-in on an engine without workers */
	bool xmsg_posted;
	bool rl_quiesced, order_quiesced;
	bool rl_running;
	struct scsitgt__list rl_ready;
	/* Counted since the LUN was created, never reset (each reset keeps its own base). */
	struct scsitgt__lun_counts stats;
};

struct scsitgt_lun {
	struct scsitgt_target *tgt;
	/* tgt->gen: a LUN that outlives its target (a removal that timed out, core/drain.c)
	 * keeps a dangling tgt, which another target may come to have; this it keeps apart. */
	uint64_t tgt_gen;
	uint64_t id;
	struct scsitgt_backend_ops ops;
	void *bctx;
	struct scsitgt_lun_geometry geo;
	uint32_t flags; /* SCSITGT_LUN_* */
	/* Cached answers of ops.supports(), indexed by enum scsitgt_io_type. */
	bool supports[SCSITGT__IO_TYPE_LAST + 1];
	/* Identification: standard INQUIRY (SPC-5 §6.7.2) and VPD 80h/83h (spc_vpd.c). */
	struct {
		char vendor[9];
		char product[17];
		char revision[5];
		char serial[33];
		uint64_t naa;
		uint64_t eui64;
	} ident;
	/* Optional LU designators of VPD 83h and the Block Limits of VPD B0h, settled at
	 * create from the LUN options (lun_limits.c). */
	struct scsitgt__lun_designators desig;
	struct scsitgt__lun_limits limits;
	struct scsitgt__mode_state mode;
	/* Under xlock (spc_mode.c): the number of the last MODE SELECT that changed anything,
	 * and per parameter of struct scsitgt__mode_state (in its order) the number of the one
	 * that changed it last: a failed write-back undoes only what is still its own. */
	uint32_t mode_seq;
	uint32_t mode_by[7];
	/*
	 * Medium state (SBC-4 START STOP UNIT, PREVENT ALLOW MEDIUM REMOVAL; sbc.c): the medium
	 * is present, the unit stopped; the I_T nexuses that prevent medium removal (SPC-5
	 * §6.15), which is prevented (prevent_removal) while there is at least one. Every
	 * media command of any loop reads present and stopped (atomics); the commands that
	 * change them, and the prevent_by list, are under xlock (issue 18).
	 */
	struct {
		_Atomic bool present;
		_Atomic bool stopped;
		_Atomic bool prevent_removal;
		struct scsitgt__session **prevent_by;
		uint32_t nprevent;
		uint32_t prevent_cap;
	} medium;
	/* The LUN's part on each shard (engine->nshards of them, see struct
	 * scsitgt__lun_part): commands in flight, counters, untracked count, backend ios. */
	struct scsitgt__lun_part *shard_part;
	/* LBA range lock of COMPARE AND WRITE, ORWRITE, WRITE ATOMIC (range_lock.h). */
	struct scsitgt__range_lock rlock;
	/* Reservations (SPC-2 and persistent, core/pr.c), allocated on first use; under xlock. */
	struct scsitgt__pr *pr;
	/*
	 * State several loops share (issue 18): xlock, a short mutex, guards the rare
	 * cross-shard state (the reservations of lun->pr); xflags (SCSITGT__LUN_XF_*) says which
	 * of it exists. A command loads xflags once, with acquire, at parse
	 * (scsitgt__lun_xflags()); writers change a bit under xlock, after the state it
	 * announces (scsitgt__lun_xflags_set()). Nothing under xlock calls a fabric, a
	 * backend or another LUN.
	 */
	uv_mutex_t xlock;
	_Atomic uint32_t xflags;
	/*
	 * How many shard parts hold more than their share of the target's max_lun_commands
	 * (inflight * nshards > max, scsitgt__lun_part.over): while none does, the LUN's total
	 * cannot exceed the limit, and the TASK SET FULL check of a command reads no other
	 * shard's part (scsitgt__lun_over_limit()). Changed only when a part crosses its share,
	 * so it stays in every loop's cache like the rest of this read-mostly line.
	 */
	_Atomic unsigned int over_shares;
	/* Messages of the LUN's cross-shard state (part->xmsg) in flight: the LUN is freed only
	 * once none is (core/lun.c). */
	_Atomic unsigned int xmsgs;
	/* SANITIZE state (SBC-4 §4.33, sbc_sanitize.c): in progress (progress in 1/65536ths for
	 * REQUEST SENSE), or failed until a successful SANITIZE or EXIT FAILURE MODE; AUSE of the
	 * failed command. */
	struct {
		_Atomic uint8_t state; /* SCSITGT__SANITIZE_* (sbc_sanitize.h) */
		_Atomic bool ause;
		_Atomic uint16_t progress;
	} sanitize;
	/* offline: media commands get NOT READY, LOGICAL UNIT NOT READY, OFFLINE
	 * (scsitgt_lun_set_offline()); read by every command's setup on any loop, an atomic
	 * (issue 18). The counters are in the shard parts. */
	_Atomic bool offline;
	/* The task set's ordering (SAM-5 §8.6, core/order.c), under xlock: while a barrier is
	 * armed (SCSITGT__LUN_XF_BARRIER) the tasks that entered since, in arrival order, how
	 * many of them are ORDERED or HEAD OF QUEUE, and the shards whose older tasks (counted
	 * in their parts) are not all gone yet. */
	struct {
		struct scsitgt__list tasks;
		unsigned int barriers;
		unsigned int quiesce_pending;
	} order;
	/* The engine, which outlives the target. */
	struct scsitgt_engine *engine;
	/*
	 * Destroy and bounded removal (core/lun.c, core/drain.c). destroying from
	 * scsitgt_lun_destroy() on, with its callback, and the deferred free; the worker
	 * shards whose part has not reported empty yet (parts_pending). The backend ios in
	 * flight are in the shard parts; the timer of a destroy waiting for ios. A destroyed LUN
	 * with commands left is in engine->zombies (zombie) until freed; once its drain timeout
	 * expired (its callback ran) it waits there for its backend to return the last io; an
	 * engine shutdown turns the rest into orphans, counted in orphan_cmds (plus one while
	 * the engine still holds the LUN). destroying is written on home only and read there,
	 * and by the background walks (SANITIZE, self-test: bg_walk.h) of worker shards between
	 * two pieces, hence an atomic (relaxed: it carries no data, the walk only stops).
	 */
	struct {
		_Atomic bool destroying;
		scsitgt_done_cb destroy_cb;
		void *destroy_cb_arg;
		struct scsitgt__deferred destroy_done;
		unsigned int parts_pending;
		uv_timer_t *timer;
		bool zombie;
		bool expired;
		bool orphaning;
		bool closing_started;
		struct scsitgt__list zombie_node;
		_Atomic unsigned int orphan_cmds;
	} drain;
	/* The sum of the shard parts' counts at the last scsitgt_lun_reset_stats(): the stats
	 * snapshots report the counts since (core/stats.c). On home only. */
	struct scsitgt__lun_counts stats_base;
	/* log page state (core/spc_log.c), allocated on first use; freed with the LUN. */
	struct scsitgt__log *log;
	/* self-tests (core/spc_selftest.c): the Self-Test Results log and the test running,
	 * allocated on first use, under xlock (SCSITGT__LUN_XF_SELFTEST while a test runs);
	 * uv_hrtime() at creation, for the log's power-on hours. */
	struct scsitgt__selftest *selftest;
	uint64_t created_ns;
};

/* Largest data transfer of one command (VPD B0 MAXIMUM TRANSFER LENGTH in bytes). */
#define SCSITGT__MAX_XFER_BYTES (8u << 20)
/* Default UNMAP limits of thin LUNs (VPD B0 MAXIMUM UNMAP LBA COUNT / BLOCK DESCRIPTOR COUNT).
 * 1 Mi blocks: libiscsi's conformance suite takes a larger explicit limit for a bogus value. */
#define SCSITGT__MAX_UNMAP_LBA_COUNT (1u << 20)
#define SCSITGT__MAX_UNMAP_DESCRIPTORS 256u
/* the largest LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT of scsitgt_lun_opts (lun.h). */
#define SCSITGT__LUN_MAX_PBE 8u

/*
 * `Loop: home` entry points check their calling thread in debug builds (NDEBUG unset): a call
 * from another thread aborts at once with the function's name, rather than racing the loop
 * (docs/threading.md). Release builds compile it out.
 */
#ifndef NDEBUG
#define SCSITGT__ASSERT_HOME(engine) scsitgt__assert_home((engine), __func__)
#else
#define SCSITGT__ASSERT_HOME(engine) ((void)0)
#endif
void scsitgt__assert_home(const struct scsitgt_engine *engine, const char *fn);
/* Log a warning, once per engine, if SIGPIPE would end the process (a socket portal starts).
 * Loop: home. */
void scsitgt__engine_check_sigpipe(struct scsitgt_engine *engine);
/* Whether the calling thread runs @engine's home loop. Thread-safe. */
bool scsitgt__engine_on_home(const struct scsitgt_engine *engine);
/*
 * engine->cfg_lock (with conn_workers only; no-ops otherwise). A `Loop: home` call that
 * changes what a login reads (targets, ACLs, credentials, iSCSI parameters, redirect hooks,
 * portals) holds the write lock around the change; code on a worker that reads it holds the
 * read lock (scsitgt__cfg_rdlock() returns whether it took it: pass that to the unlock).
 * Order: the read lock before any transport lock, never the other way round.
 */
void scsitgt__cfg_wrlock(struct scsitgt_engine *engine);
void scsitgt__cfg_wrunlock(struct scsitgt_engine *engine);
bool scsitgt__cfg_rdlock(struct scsitgt_engine *engine);
void scsitgt__cfg_rdunlock(struct scsitgt_engine *engine, bool locked);

/* engine.c */
void scsitgt__engine_add_service(struct scsitgt_engine *engine, struct scsitgt__service *svc);
void scsitgt__engine_remove_service(struct scsitgt_engine *engine, struct scsitgt__service *svc);
/* Run d->fn(d) from the engine's home loop soon (never from inside this call); the home
 * shard's scsitgt__shard_defer(). */
void scsitgt__engine_defer(struct scsitgt_engine *engine, struct scsitgt__deferred *d);
struct scsitgt_target *scsitgt__engine_find_target(struct scsitgt_engine *engine, const char *name);
/* Whether @tgt (compared, never read: it may be freed) is still one of the engine's targets
 * (destroying or not). Home, or a worker holding engine->cfg_lock for read (targets leave
 * the list under its write side). */
bool scsitgt__engine_has_target(const struct scsitgt_engine *engine,
				const struct scsitgt_target *tgt);

/* target.c */
struct scsitgt_lun *scsitgt__target_find_lun(const struct scsitgt_target *tgt, uint64_t id);
bool scsitgt__target_initiator_allowed(const struct scsitgt_target *tgt, const char *initiator);
int scsitgt__target_insert_lun(struct scsitgt_target *tgt, struct scsitgt_lun *lun);
void scsitgt__target_lun_removed(struct scsitgt_target *tgt, struct scsitgt_lun *lun);
/* A session of a destroying target went away (session.c calls it). */
void scsitgt__target_session_gone(struct scsitgt_target *tgt);
/* Keep @tgt from being freed while work of the core's own uses it (a destroy waits). Loop:
 * home. */
/* The engine's destruction of @tgt: scsitgt_target_destroy(), or, when the host's destroy is
 * already under way, a wait for that one: @cb is called once the target is freed either way.
 * Home only. */
void scsitgt__target_destroy_engine(struct scsitgt_target *tgt, scsitgt_done_cb cb, void *arg);
void scsitgt__target_hold(struct scsitgt_target *tgt);
void scsitgt__target_unhold(struct scsitgt_target *tgt);
/* An event naming @tgt posted from a worker loop (tgt->ev_refs): ref on that loop while @tgt is
 * known to be alive, unref on home once the event was delivered. */
void scsitgt__target_event_ref(struct scsitgt_target *tgt);
void scsitgt__target_event_unref(struct scsitgt_target *tgt);

/* acl.c */
/* Whether @initiator may log in to @tgt from @sa (NULL: no address known, e.g. SRP or an
 * in-process fabric; it passes only when no address list applies). */
bool scsitgt__acl_login_allowed(const struct scsitgt_target *tgt, const char *initiator,
				const struct sockaddr *sa);
/* The entry of @initiator (NULL when the target knows nothing about that name). */
struct scsitgt__acl_entry *scsitgt__acl_find(const struct scsitgt_target *tgt,
					     const char *initiator);
/* Free every ACL entry and address list of a dying target. */
void scsitgt__acl_free(struct scsitgt_target *tgt);
struct scsitgt__session;
/* Point a new nexus at its initiator's entry (session.c calls it). */
void scsitgt__acl_session_attach(struct scsitgt__session *sess);

/* lun.c */
/* The armed slow paths of @lun (SCSITGT__LUN_XF_*); acquire: the state they announce is
 * visible once under lun->xlock. */
static inline uint32_t scsitgt__lun_xflags(const struct scsitgt_lun *lun)
{
	return atomic_load_explicit(&lun->xflags, memory_order_acquire);
}
/* @lun's capacity in blocks. A resize changes it on home (scsitgt_lun_resize()) while commands
 * of every shard check their ranges against it (issue 18): one relaxed load; a check reads it
 * once. Home, its only writer, may also read lun->geo.num_blocks directly. */
static inline uint64_t scsitgt__lun_blocks(const struct scsitgt_lun *lun)
{
	return __atomic_load_n(&lun->geo.num_blocks, __ATOMIC_RELAXED);
}
/* Set (@on) or clear the bits @mask of lun->xflags. Under lun->xlock. */
void scsitgt__lun_xflags_set(struct scsitgt_lun *lun, uint32_t mask, bool on);
bool scsitgt__lun_supports(const struct scsitgt_lun *lun, enum scsitgt_io_type type);
/* lun_limits.c: settle a LUN's designators (before open) and its Block Limits (after open,
 * with the geometry and flags final) from its options; -EINVAL for contradictory values. */
int scsitgt__lun_designators_set(const struct scsitgt__logger *lg,
				 struct scsitgt__lun_designators *d,
				 const struct scsitgt_lun_opts *o);
int scsitgt__lun_limits_settle(struct scsitgt_lun *lun, const struct scsitgt_lun_opts *o);
/* @lun's part on @shard (struct scsitgt__lun_part). */
static inline struct scsitgt__lun_part *scsitgt__lun_part(struct scsitgt_lun *lun,
							  const struct scsitgt__shard *shard);
/* Count a command (or a hold of the core's own) on @lun from @shard's loop. */
void scsitgt__lun_hold(struct scsitgt_lun *lun, struct scsitgt__shard *shard);
/* Drop it, on the same shard; the last one lets a pending destroy proceed. */
void scsitgt__lun_inflight_drop(struct scsitgt_lun *lun, struct scsitgt__shard *shard);
/*
 * Cross-shard state of @lun (core/lun.c): ask @part's owner to look at it (report its
 * quiescence, start the tasks that may run now) by its part's message. Under lun->xlock.
 */
void scsitgt__lun_xpoke(struct scsitgt_lun *lun, struct scsitgt__lun_part *part);
/* A quiescence round starts on @self's loop (under lun->xlock): poke every other part. */
void scsitgt__lun_xround(struct scsitgt_lun *lun, struct scsitgt__lun_part *self);
/* @part's owner: report its quiescence (its untracked commands or tasks reached zero). */
void scsitgt__lun_xcheck(struct scsitgt_lun *lun, struct scsitgt__lun_part *part);
/* Commands in flight on @lun, every shard's (relaxed: a snapshot). */
unsigned int scsitgt__lun_inflight(const struct scsitgt_lun *lun);
/*
 * Whether @lun holds more than @max commands (every shard's, as they last wrote them), for a
 * command just held from @shard: reads only @shard's part while no part is above its share
 * of @max (lun->over_shares). @max 0: no limit. Loop: @shard's.
 */
bool scsitgt__lun_over_limit(struct scsitgt_lun *lun, const struct scsitgt__shard *shard,
			     uint32_t max);
/* close the backend of a destroyed LUN that has no command left (lun.c). */
void scsitgt__lun_close_backend(struct scsitgt_lun *lun);

/* drain.c: bounded LUN removal and engine shutdown when backends do not complete. */
/* Default of scsitgt_engine_set_drain_timeout(). */
#define SCSITGT__DRAIN_TIMEOUT_MS_DEFAULT 30000u
/* A destroy found commands on the LUN: start its drain timer. */
void scsitgt__drain_lun_start(struct scsitgt_lun *lun);
/* The destroyed LUN has no command left: stop its drain timer. */
void scsitgt__drain_lun_stop(struct scsitgt_lun *lun);
/* The destroyed LUN is being freed: leave the engine's zombie list. */
void scsitgt__drain_lun_gone(struct scsitgt_lun *lun);
/* The engine is about to close its handles: give up on the ios zombies still hold. Returns
 * false while it must wait (a thread-safe completion in progress, a backend closing); it
 * then calls @again(engine) from the loop a little later. */
bool scsitgt__drain_engine_ready(struct scsitgt_engine *engine,
				 void (*again)(struct scsitgt_engine *engine));
/* Before the worker loops stop (engine shutdown): each worker shard gives up the ios it holds
 * for LUNs whose removal timed out; @done(engine) runs on home once all have. */
void scsitgt__drain_engine_shards(struct scsitgt_engine *engine,
				  void (*done)(struct scsitgt_engine *engine));
/* An io that was given up (ORPHAN) or belongs to an orphaned command came back. */
void scsitgt__drain_io_orphan_done(struct scsitgt_io *io);

#include "core/shard.h"

static inline struct scsitgt__lun_part *scsitgt__lun_part(struct scsitgt_lun *lun,
							  const struct scsitgt__shard *shard)
{
	return &lun->shard_part[shard->index];
}

#endif /* SCSITGT_CORE_CORE_H */
