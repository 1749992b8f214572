/* SPDX-License-Identifier: MIT */
/*
 * Reservations of a LUN: persistent reservations (SPC-5 §5.13) and the SPC-2 RESERVE/RELEASE
 * reservation (SPC-2 §5.5). Registrations belong to an I_T nexus: the initiator port name
 * (iSCSI: "<name>,i,0x<ISID>") and the relative target port, so they survive reconnects.
 */
#ifndef SCSITGT_CORE_PR_H
#define SCSITGT_CORE_PR_H

#include <time.h>

#include "core/cdb.h"
#include "core/fabric.h"
#include "core/home_call.h"
#include "core/scsi_spec.h"
#include "libscsitgt/pr.h"

/* Registrations a LUN accepts; more get INSUFFICIENT REGISTRATION RESOURCES. */
#define SCSITGT__PR_MAX_REGS 256
/* Longest PERSISTENT RESERVE OUT parameter list accepted (room for many TransportIDs). */
#define SCSITGT__PR_MAX_PARAM (64u * 1024)
/* Initiator port names: a 223-byte iSCSI name, ",i,0x" and 12 hex digits. */
#define SCSITGT__PR_PORT_MAX 256

struct scsitgt__pr_reg {
	struct scsitgt__list node;
	uint64_t key;
	/* "<name>,i,0x<isid>", or "<name>" alone when any_isid (TransportID format 00b). */
	char iport[SCSITGT__PR_PORT_MAX];
	bool any_isid;
	/* Registered through every target port (ALL_TG_PT); otherwise only rel_port_id. */
	bool all_tg_pt;
	uint16_t rel_port_id;
	uint8_t protocol_id;
};

/*
 * What a PERSISTENT RESERVE OUT did to other nexuses, carried in a shared (version 2) state
 * so that every engine raises the same unit attentions (include/libscsitgt/pr.h).
 */
enum {
	SCSITGT__PR_EV_REGS_PREEMPTED = 1, /* 2Ah/05h */
	SCSITGT__PR_EV_RESV_PREEMPTED = 2, /* 2Ah/03h */
	SCSITGT__PR_EV_RESV_RELEASED = 3,  /* 2Ah/04h */
	SCSITGT__PR_EV_ABORT = 4,	   /* PREEMPT AND ABORT: abort the nexus's tasks */
};

struct scsitgt__pr_event {
	struct scsitgt__list node;
	uint8_t code;
	/* The nexuses concerned: those scsitgt__pr_reg_matches() accepts (iport, any_isid,
	 * all_tg_pt, rel_port_id). */
	struct scsitgt__pr_reg who;
};

/* The trailer of a version 2 state: the change sequence, who made it, its events. */
struct scsitgt__pr_change {
	uint64_t seq;
	uint16_t by_rel_port_id;
	char by_port[SCSITGT__PR_PORT_MAX]; /* "" for none */
	struct scsitgt__list events;
	unsigned int nevents;
	bool failed; /* an event could not be recorded (no memory) */
};

/*
 * A PERSISTENT RESERVE OUT on its way through home: the reservation store's queue and hooks
 * are home's, the command its shard's (core/home_call.h). It is also the request a cluster
 * store answers (libscsitgt/pr.h, pr_cluster.c).
 */
struct scsitgt_pr_req {
	struct scsitgt__home_call hc; /* first */
	struct scsitgt_lun *lun;
	/* the command's I_T nexus, copied on its shard (scsitgt__pr_nexus()) */
	struct scsitgt__pr_reg self;
	/* how it ends: a store's failure (< 0), else @reason */
	int status;
	enum scsitgt__sense_reason reason;
	/* pr_cluster.c: its place in pr->cl_queue, its tries, where it is at the store */
	struct scsitgt__list node;
	unsigned int tries;
	bool busy; /* at the store (fetch or commit) */
	/* a PERSISTENT RESERVE IN on an unsynced copy: fetch and apply, execute nothing */
	bool in;
	bool commit; /* the store has our commit */
	/* it delivered that commit back to us before answering (pr_cluster.c) */
	bool delivered;
	/* the state committed (version 2), kept until the commit is answered */
	uint8_t *data;
	size_t len;
};

struct scsitgt__pr {
	struct scsitgt__list regs;
	unsigned int nregs;
	uint32_t generation;
	/* The persistent reservation. holder is NULL for the all-registrants types. */
	bool held;
	uint8_t type;
	uint8_t scope;
	struct scsitgt__pr_reg *holder;
	/* Activate persist through power loss (SPC-5 §5.13.5). */
	bool aptpl;
	/* The SPC-2 reservation (RESERVE (6)/(10)), held by one I_T nexus, named by its ports;
	 * r2_sess is the nexus that took it last, which alone releases it when it ends (a
	 * nexus of the same names may log in before the ended one is gone). Compared only,
	 * never followed. */
	bool r2_held;
	char r2_iport[SCSITGT__PR_PORT_MAX];
	uint16_t r2_rel_port_id;
	const struct scsitgt__session *r2_sess;
	/* The host's store (include/libscsitgt/pr.h); file_path for the default file store. */
	scsitgt_pr_save_cb save;
	void *save_arg;
	char *file_path;
	/* The cluster store (pr_cluster.c): its ops, the change sequence of the applied shared
	 * state, the PERSISTENT RESERVE OUT commands in its protocol (the first one runs). While
	 * one executes, @capture records the unit attentions instead of raising them. */
	bool cl_on;
	struct scsitgt_pr_cluster_ops cl;
	void *cl_arg;
	uint64_t seq;
	/* @seq as published for the conflict check's stamp without the lock: stored (release)
	 * after the xflags of the state it numbers (scsitgt__pr_sync_xflags()). */
	_Alignas(16) _Atomic uint64_t adm_seq;
	/* The store's lease (scsitgt_lun_set_pr_lease()): CLOCK_MONOTONIC ms, 0 for none. Next
	 * to adm_seq, which the admission loads too, in one 16-byte aligned pair (malloc's
	 * alignment): never on another cache line (core/pr_hold.c). */
	_Atomic uint64_t lease_ms;
	/* Deliveries announced and not yet applied (scsitgt_lun_start_pr_delivery()), mirrored
	 * in SCSITGT__LUN_XF_PR_PENDING; the commands held meanwhile or past the lease, in
	 * arrival order (struct scsitgt__pr_hold); whether @c recheck was asked for this lapse. */
	unsigned int cl_pending;
	struct scsitgt__list hold_q;
	bool recheck_asked;
	/* The store's word on the copy (scsitgt_lun_set_pr_sync(); any state but synced is
	 * mirrored in SCSITGT__LUN_XF_PR_UNSYNCED). */
	enum scsitgt_pr_sync cl_sync;
	struct scsitgt__list cl_queue;
	struct scsitgt__pr_change *capture;
	/* I_T nexuses that ended after they had seen this LUN (core/ua.c, struct
	 * scsitgt__pr_lost), oldest first: one that comes back finds I_T NEXUS LOSS OCCURRED
	 * instead of POWER ON (SAM-5 §6.3.4). */
	struct scsitgt__list lost;
	unsigned int nlost;
};

/* A lost nexus of a LUN: "<initiator port>\n<target port>". */
struct scsitgt__pr_lost {
	struct scsitgt__list node;
	char nexus[];
};
/* Lost nexuses remembered per LUN; older ones are forgotten (and get POWER ON). */
#define SCSITGT__PR_MAX_LOST 64

/*
 * The reservation conflict step of CDB parsing (.pr column of the CDB table). It reads the
 * state (under lun->xlock) only when parse found SCSITGT__LUN_XF_RESERVED set, or for RESERVE
 * and RELEASE.
 */
enum scsitgt__sense_reason scsitgt__pr_check(struct scsitgt__cmd *cmd);
/* Set SCSITGT__LUN_XF_RESERVED as the state says (a reservation held). Under lun->xlock,
 * after every change of lun->pr. */
void scsitgt__pr_sync_xflags(struct scsitgt_lun *lun);
/*
 * Raise the unit attentions and task aborts a reservation change recorded in @ch (its
 * nexus ch->by_port excepted; @by_cmd, the command that made it, is not aborted). Outside
 * lun->xlock: it reaches sessions and their fabrics (pr_cluster.c).
 */
void scsitgt__pr_raise_events(struct scsitgt_lun *lun, struct scsitgt__pr_change *ch,
			      const struct scsitgt__cmd *by_cmd);

/* The LUN's state, allocated on first use; NULL on allocation failure. Under lun->xlock. */
struct scsitgt__pr *scsitgt__pr_get(struct scsitgt_lun *lun);
/* Free a LUN's state (LUN destruction). */
void scsitgt__pr_free(struct scsitgt_lun *lun);

/* The registration of nexus @sess, or NULL. */
struct scsitgt__pr_reg *scsitgt__pr_find(const struct scsitgt__pr *pr,
					 const struct scsitgt__session *sess);
bool scsitgt__pr_reg_matches(const struct scsitgt__pr_reg *reg,
			     const struct scsitgt__session *sess);
/* The same for the nexus of initiator port @iport through relative target port @rel_port_id
 * (a copy of a session's, for a loop that may not read the session, core/home_call.h). */
struct scsitgt__pr_reg *scsitgt__pr_find_port(const struct scsitgt__pr *pr, const char *iport,
					      uint16_t rel_port_id);
bool scsitgt__pr_reg_covers(const struct scsitgt__pr_reg *reg, const char *iport,
			    uint16_t rel_port_id);
bool scsitgt__pr_is_holder(const struct scsitgt__pr *pr, const struct scsitgt__pr_reg *reg);
bool scsitgt__pr_type_all_registrants(uint8_t type);

/*
 * Encode @reg's TransportID (SPC-5 §7.6.4.6 for iSCSI, §7.6.4.5 for SRP) into @buf (SCSITGT__PR_PORT_MAX + 8
 * bytes at least); returns its length.
 */
size_t scsitgt__pr_tid_encode(const struct scsitgt__pr_reg *reg, uint8_t *buf);
/* An SRP TransportID's length (SPC-5 §7.6.4.5). */
#define SCSITGT__PR_SRP_TID_LEN 24
/* The 16-byte SRP port identifier of SRP port name @iport ("0x" and 32 hex digits, as the SRP
 * fabric names ports); false if @iport is not one. */
bool scsitgt__pr_srp_port_id(const char *iport, uint8_t id[16]);

/* Events. */
/* The nexus ended: the SPC-2 reservations it took go (SPC-2 §5.5.1), so does PREVENT ALLOW
 * (SBC-4 §5.16); registrations stay. Home, at scsitgt__session_destroy() and again when the
 * nexus is freed (a task of it held back on its worker may have reserved in between). */
void scsitgt__pr_session_gone(struct scsitgt__session *sess);
/* LUN reset, target reset: the SPC-2 reservation goes (SAM-5 §6.3). */
void scsitgt__pr_reset(struct scsitgt_lun *lun);
/* The state changed: hand it to the store (pr_store.c). 0, or -errno when it could not be
 * saved (no memory; the library's file store could not write it: a host's callback cannot
 * fail). Under lun->xlock. */
int scsitgt__pr_changed(struct scsitgt_lun *lun);
/* Whether the LUN can persist through power loss (a store is set). */
bool scsitgt__pr_ptpl_capable(const struct scsitgt_lun *lun);

/* The state format (pr_store.c). @ch NULL: version 1 (registrations only with APTPL);
 * otherwise version 2 with @ch as trailer. @b NULL only measures. */
size_t scsitgt__pr_encode(const struct scsitgt__pr *pr, uint8_t *b,
			  const struct scsitgt__pr_change *ch);
/* Decode into @out (registrations in a fresh list) and, for version 2, @ch (events in a fresh
 * list; its seq is 0 for version 1); *@version receives the version. On error the lists may
 * hold entries: free them with scsitgt__pr_regs_free() and scsitgt__pr_change_clear(). */
int scsitgt__pr_decode(const uint8_t *b, size_t len, struct scsitgt__pr *out,
		       struct scsitgt__pr_change *ch, uint16_t *version);
/*
 * A public reservation call refuses an argument: one ERROR line through the engine's logger,
 * "@call: TARGET LUN n: " then @fmt (scsitgt(3), "Conventions"). Returns @rc.
 */
int scsitgt__pr_refused(const struct scsitgt_lun *lun, int rc, const char *call, const char *fmt,
			...) SCSITGT_PRINTF(4, 5);
/* scsitgt__pr_decode() refused @len bytes of state with @rc: the refusal's line for @call. */
int scsitgt__pr_refused_data(const struct scsitgt_lun *lun, int rc, const char *call, size_t len);
/* Replace @pr's registrations and persistent reservation with @from's (moved; @from's list is
 * left empty). */
void scsitgt__pr_replace(struct scsitgt__pr *pr, struct scsitgt__pr *from);
void scsitgt__pr_regs_free(struct scsitgt__list *regs);
void scsitgt__pr_change_init(struct scsitgt__pr_change *ch);
void scsitgt__pr_change_clear(struct scsitgt__pr_change *ch);
/* Record event @code for the nexuses of @reg in @ch. */
void scsitgt__pr_change_add(struct scsitgt__pr_change *ch, uint8_t code,
			    const struct scsitgt__pr_reg *reg);

/* The copy's change sequence of a LUN with shared reservations (0: none yet). Loop: home. */
uint64_t scsitgt__lun_pr_seq(struct scsitgt_lun *lun);
/*
 * A shared state (@len 0: empty) read from the store by a read started when the copy's
 * sequence was @issued_seq (a store's resync: its periodic check, a re-watch, an attach).
 * Newer than the copy: applied as a notify's (scsitgt_lun_apply_pr_state()). Older than
 * @issued_seq: the store went back under the copy (the object deleted or replaced by an older
 * one): it replaces the copy, unit attentions derived from the difference. Otherwise (a
 * notify applied since the read started is as new or newer): nothing. Returns 1 when the copy
 * changed, 0 when not, -errno (an unreadable state) otherwise. Loop: home.
 */
int scsitgt__lun_resync_pr_state(struct scsitgt_lun *lun, const void *data, size_t len,
				 uint64_t issued_seq);

/* Held admission on a LUN with shared reservations (pr_hold.c). */
/* The clock of the store's lease (libscsitgt/pr.h): CLOCK_MONOTONIC in ms, read coarse (the
 * vDSO's last tick, no system call) where the system has it. */
static inline uint64_t scsitgt__pr_clock_ms(void)
{
	struct timespec ts;

#ifdef CLOCK_MONOTONIC_COARSE
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
	clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
/* Whether a command a reservation could refuse must wait: a delivery is pending (in @xf,
 * loaded after @lease), or the lease (0: none) has run out. */
static inline bool scsitgt__pr_hold_due(uint32_t xf, uint64_t lease)
{
	if (xf & SCSITGT__LUN_XF_PR_PENDING)
		return true;
	return lease != 0 && scsitgt__pr_clock_ms() >= lease;
}
/* The exec of a held command: to home, into the LUN's queue until scsitgt__pr_hold_release();
 * then checked again on its own loop and executed (cmd->def->exec) or refused. */
void scsitgt__pr_hold_exec(struct scsitgt__cmd *cmd);
/* Home: let the held commands go if nothing holds them any more (@all: whatever holds). */
void scsitgt__pr_hold_release(struct scsitgt_lun *lun, bool all);
/* @cmd, held (cmd->pr_hold), was aborted or lost its nexus: it leaves the LUN's queue and ends
 * now, on this loop (or, still on its way to home, as soon as home sees it); a release that
 * took it first sends it back anyway, aborted. The fabric may free @cmd inside the call.
 * Loop: the command's. */
void scsitgt__pr_hold_cut(struct scsitgt__cmd *cmd);
/* The conflict check of scsitgt__pr_check() for a caller that cannot wait (EXTENDED COPY's
 * look at a copy target): BUSY where the admission would hold. */
enum scsitgt__sense_reason scsitgt__pr_check_now(struct scsitgt__cmd *cmd);

/* The cluster protocol (pr_cluster.c). */
bool scsitgt__pr_cluster_on(const struct scsitgt_lun *lun);
/* Run PERSISTENT RESERVE OUT @req (or the fetch of an IN, req->in) through the cluster store;
 * scsitgt__home_call_back() once it has its outcome. Loop: home. */
void scsitgt__pr_cluster_out(struct scsitgt_pr_req *req);
/* Start @cmd's step on home with a struct scsitgt_pr_req as its record (lun and nexus set;
 * core/home_call.h, a step that ends later); without memory @cmd ends BUSY. Loop: @cmd's. */
void scsitgt__pr_req_home(struct scsitgt__cmd *cmd, scsitgt__home_call_fn run,
			  scsitgt__home_call_fn done);
/* PERSISTENT RESERVE IN @cmd on a copy the store called stale (cmd->xflags has
 * SCSITGT__LUN_XF_PR_UNSYNCED): fetch and apply the stored state on home, then answer
 * (scsitgt__pr_in_answer()) on @cmd's shard. Loop: @cmd's. */
void scsitgt__pr_cluster_in(struct scsitgt__cmd *cmd);
/* End @cmd with the sense of store failure @status (libscsitgt/pr.h). Loop: @cmd's. */
void scsitgt__pr_cluster_fail(struct scsitgt__cmd *cmd, int status);
void scsitgt__pr_cluster_free(struct scsitgt_lun *lun);

/* Commands: PERSISTENT RESERVE OUT (pr_out.c) and IN (pr_in.c), SPC-2 RESERVE and RELEASE
 * (pr.c). */
enum scsitgt__sense_reason scsitgt__pr_parse_out(struct scsitgt__cmd *cmd);
void scsitgt__pr_out(struct scsitgt__cmd *cmd);
/* @sess's I_T nexus as a registration names it: its initiator port, through its relative
 * target port, its protocol. Loop: @sess's. */
void scsitgt__pr_nexus(struct scsitgt__pr_reg *out, const struct scsitgt__session *sess);
/*
 * Execute PERSISTENT RESERVE OUT @cmd, from I_T nexus @nexus (scsitgt__pr_nexus(): @cmd's
 * session is not read), against the LUN's state. Under lun->xlock, with lun->pr->capture set:
 * the unit attentions and aborts it causes are recorded there, for the caller to raise.
 */
enum scsitgt__sense_reason scsitgt__pr_out_exec(struct scsitgt__cmd *cmd,
						const struct scsitgt__pr_reg *nexus);
enum scsitgt__sense_reason scsitgt__pr_parse_in(struct scsitgt__cmd *cmd);
void scsitgt__pr_in(struct scsitgt__cmd *cmd);
/* PERSISTENT RESERVE IN from the local copy as it is. Loop: @cmd's. */
void scsitgt__pr_in_answer(struct scsitgt__cmd *cmd);
/* RESERVE and RELEASE parse (both): refused on a LUN with a cluster store. */
enum scsitgt__sense_reason scsitgt__pr_parse_reserve(struct scsitgt__cmd *cmd);
/* Whether the LUN offers @row: false for SPC-2 RESERVE/RELEASE with a cluster store. */
bool scsitgt__pr_offers(const struct scsitgt_lun *lun, const struct scsitgt__cdb_def *row);
void scsitgt__pr_reserve(struct scsitgt__cmd *cmd);
void scsitgt__pr_release(struct scsitgt__cmd *cmd);

#endif /* SCSITGT_CORE_PR_H */
