/* SPDX-License-Identifier: MIT */
/*
 * Core objects: engine, target, LUN, session (I_T nexus). Internal to the library; fabrics reach
 * the core through core/fabric.h, backends through the public backend.h.
 */
#ifndef SCSITGT_CORE_CORE_H
#define SCSITGT_CORE_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/range_lock.h"
#include "libscsitgt/scsitgt.h"
#include "util/list.h"
#include "util/log.h"
#include "util/mpsc.h"

/* Transport extension slots on engines and targets (state the core does not interpret). */
enum scsitgt__ext_id {
	SCSITGT__EXT_ISCSI = 0,
	SCSITGT__EXT_SRP = 1,
	/* H15: the target's ALUA port groups (core/alua.c). */
	SCSITGT__EXT_ALUA = 2,
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
};

/* Work deferred to the next loop iteration, so callbacks never run inside the initiating call. */
struct scsitgt__deferred {
	struct scsitgt__list node;
	void (*fn)(struct scsitgt__deferred *d);
};

struct scsitgt_engine {
	uv_loop_t *loop;
	struct scsitgt__logger log;
	void *userdata;
	struct scsitgt__list targets;
	struct scsitgt__list services;
	/* Thread-safe io completions arrive here and are drained by tsq_async. */
	struct scsitgt__mpsc tsq;
	uv_async_t tsq_async;
	/* struct scsitgt__deferred items, run from tsq_async. */
	struct scsitgt__list deferred;
	struct scsitgt__ext ext[SCSITGT__EXT_COUNT_];
	bool destroying;
	int destroy_phase;
	unsigned int destroy_pending;
	scsitgt_done_cb destroy_cb;
	void *destroy_cb_arg;
	/* H13: free lists for commands, backend ios and data buffers (core/cache.h). */
	struct scsitgt__cache *cache;
	/* How long a TMF waits for aborted commands to leave their backends (core/tmf.c);
	 * 0 means the default. */
	uint32_t tmf_timeout_ms;
	/* H16: the host's event callback (core/events.c). */
	scsitgt_event_cb event_cb;
	void *event_arg;
};

struct scsitgt__acl_entry {
	struct scsitgt__list node;
	char *name;
};

struct scsitgt_target {
	struct scsitgt_engine *engine;
	struct scsitgt__list node; /* in engine->targets */
	char *name;
	char *alias;
	void *userdata;
	/* LUNs sorted by id, for lookup by binary search and REPORT LUNS in order. */
	struct scsitgt_lun **luns;
	size_t nluns;
	size_t luns_cap;
	struct scsitgt__list sessions;
	struct scsitgt__list acl;
	struct scsitgt__ext ext[SCSITGT__EXT_COUNT_];
	bool destroying;
	unsigned int destroy_pending;
	scsitgt_done_cb destroy_cb;
	void *destroy_cb_arg;
	struct scsitgt__deferred destroy_done;
};

/* Mode parameters a LUN keeps (SPC-5 §7.5, SBC-4 §6.5). */
struct scsitgt__mode_state {
	bool wce;	/* caching page: write cache enable */
	bool rcd;	/* caching page: read cache disable */
	bool d_sense;	/* control page: descriptor-format sense */
	bool swp;	/* control page: software write protect */
	uint8_t qerr;	/* control page: queue error management */
	uint8_t mrie;	/* informational exceptions page: method of reporting */
	bool dexcpt;	/* informational exceptions page: disable exception control */
};

struct scsitgt_lun {
	struct scsitgt_target *tgt;
	uint64_t id;
	struct scsitgt_backend_ops ops;
	void *bctx;
	struct scsitgt_lun_geometry geo;
	uint32_t flags; /* SCSITGT_LUN_* */
	/* Cached answers of ops.supports(), indexed by enum scsitgt_io_type. */
	bool supports[SCSITGT_IO_WRITE_ZEROES + 1];
	char vendor[9];
	char product[17];
	char revision[5];
	char serial[33];
	uint64_t naa;
	uint64_t eui64;
	struct scsitgt__mode_state mode;
	/* Removable-medium state (SBC-4 START STOP UNIT, PREVENT ALLOW MEDIUM REMOVAL). */
	bool medium_present;
	bool stopped;
	bool prevent_removal;
	/* Commands in flight on this LUN; destroy waits for zero. */
	unsigned int inflight;
	bool destroying;
	scsitgt_done_cb destroy_cb;
	void *destroy_cb_arg;
	struct scsitgt__deferred destroy_done;
	/* LBA range lock of COMPARE AND WRITE, ORWRITE, WRITE ATOMIC (range_lock.h). */
	struct scsitgt__range_lock rlock;
	/* Reservations (SPC-2 and persistent, core/pr.c), allocated on first use. */
	struct scsitgt__pr *pr;
	/* SANITIZE state (SBC-4 §4.33, spc_sanitize.c): in progress (progress in 1/65536ths for
	 * REQUEST SENSE), or failed until a successful SANITIZE or EXIT FAILURE MODE; AUSE of the
	 * failed command. */
	uint8_t sanitize_state;
	bool sanitize_ause;
	uint16_t sanitize_progress;
	/* H16: counters and latency histogram (core/stats.c); offline: media commands get
	 * NOT READY, LOGICAL UNIT NOT READY, OFFLINE (scsitgt_lun_set_offline()). */
	struct scsitgt_cmd_counters stats;
	uint64_t lat_us[SCSITGT_LATENCY_BUCKETS];
	bool offline;	/* H15: the task set's ordering (SAM-5 §8.6, core/order.c): commands in arrival order,
	 * how many of them are ORDERED or HEAD OF QUEUE, and the pass that starts the commands
	 * they held back. */
	struct scsitgt__list task_set;
	unsigned int task_barriers;
	bool order_kick_pending;
	struct scsitgt__deferred order_kick;
};

/* Largest data transfer of one command (VPD B0 MAXIMUM TRANSFER LENGTH in bytes). */
#define SCSITGT__MAX_XFER_BYTES (8u << 20)
/* UNMAP limits of thin LUNs (VPD B0 MAXIMUM UNMAP LBA COUNT / BLOCK DESCRIPTOR COUNT). 1 Mi
 * blocks: libiscsi's conformance suite takes a larger explicit limit for a bogus value. */
#define SCSITGT__MAX_UNMAP_LBA_COUNT (1u << 20)
#define SCSITGT__MAX_UNMAP_DESCRIPTORS 256u

/* engine.c */
void scsitgt__engine_add_service(struct scsitgt_engine *engine, struct scsitgt__service *svc);
void scsitgt__engine_remove_service(struct scsitgt_engine *engine, struct scsitgt__service *svc);
/* Run d->fn(d) from the engine's loop soon (never from inside this call). */
void scsitgt__engine_defer(struct scsitgt_engine *engine, struct scsitgt__deferred *d);
struct scsitgt_target *scsitgt__engine_find_target(struct scsitgt_engine *engine,
						   const char *name);

/* target.c */
struct scsitgt_lun *scsitgt__target_find_lun(const struct scsitgt_target *tgt, uint64_t id);
bool scsitgt__target_initiator_allowed(const struct scsitgt_target *tgt, const char *initiator);
int scsitgt__target_insert_lun(struct scsitgt_target *tgt, struct scsitgt_lun *lun);
void scsitgt__target_lun_removed(struct scsitgt_target *tgt, struct scsitgt_lun *lun);
/* A session of a destroying target went away (session.c calls it). */
void scsitgt__target_session_gone(struct scsitgt_target *tgt);

/* lun.c */
bool scsitgt__lun_supports(const struct scsitgt_lun *lun, enum scsitgt_io_type type);
/* Drop a command's hold on its LUN; the last one lets a pending destroy proceed. */
void scsitgt__lun_inflight_drop(struct scsitgt_lun *lun);

#endif /* SCSITGT_CORE_CORE_H */
