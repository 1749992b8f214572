/* SPDX-License-Identifier: MIT */
/*
 * Internal objects of the iSCSI transport: per-engine and per-target state, portals,
 * connections, sessions and tasks, and the functions the iSCSI source files share.
 */
#ifndef SCSITGT_ISCSI_CONN_H
#define SCSITGT_ISCSI_CONN_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "core/fabric.h"
#include "core/worker.h"
#include "libscsitgt/iscsi.h"
#include "transport/iscsi/chap.h"
#include "transport/iscsi/datamover.h"
#include "transport/iscsi/pdu.h"
#include "transport/iscsi/text/keys.h"

struct scsitgt__iscsi_cred {
	struct scsitgt__list node;
	char *initiator; /* NULL for the target-wide entry */
	char *user;
	char *secret;
};

/* Per-engine iSCSI state (engine->ext[SCSITGT__EXT_ISCSI]). */
struct scsitgt__iscsi_engine {
	struct scsitgt_engine *engine;
	struct scsitgt_iscsi_params defaults;
	struct scsitgt__list portals;
	/*
	 * Guards what the connections of every loop share (conns and sessions with their
	 * iname/listed_closing/tsih/id fields, next_tsih, next_sess_id, next_conn_id, the
	 * portals' nconns, nlogin and refused) when connections run on workers
	 * (engine->conn_workers). Taken briefly, after the engine's cfg_lock if both; nothing
	 * that takes another lock runs under it.
	 */
	uv_mutex_t lock;
	struct scsitgt__list conns;
	struct scsitgt__list sessions;
	/* I_T nexuses of ended sessions whose commands may still be in a backend (session.c). */
	struct scsitgt__list fences;
	uint16_t next_tsih;
	uint64_t next_sess_id;
	uint64_t next_conn_id;
	/* Random source for CHAP challenges (tests replace it). */
	scsitgt__chap_random_cb rnd;
	void *rnd_arg;
	/* discovery session CHAP (user NULL: none required) and the target's own
	 * credentials for mutual CHAP in discovery sessions. */
	struct scsitgt__iscsi_cred disc_chap;
	struct scsitgt__iscsi_cred disc_mutual;
};

/* Per-target iSCSI state (tgt->ext[SCSITGT__EXT_ISCSI]). */
struct scsitgt__iscsi_target {
	struct scsitgt_iscsi_params params;
	struct scsitgt__iscsi_cred chap;   /* user NULL: no target-wide CHAP */
	struct scsitgt__iscsi_cred mutual; /* user NULL: no mutual credentials */
	struct scsitgt__list creds;	   /* per-initiator credentials */
	scsitgt_iscsi_redirect_cb redirect_cb;
	void *redirect_arg;
};

struct scsitgt_portal {
	struct scsitgt__service svc;
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt__list node; /* in ie->portals */
	uv_tcp_t listener;
	struct sockaddr_storage sa;
	char address[64]; /* numeric, without brackets */
	bool ipv6;
	bool wildcard;
	uint16_t port;
	uint16_t tpgt;
	unsigned int nconns;
	bool closing;
	bool listener_closed;
	/* limits (scsitgt_portal_opts) and connections still in login. */
	uint32_t max_conns;
	uint32_t max_login_conns;
	unsigned int nlogin;
	uint64_t refused; /* connections closed at accept for a limit (under ie->lock) */
	scsitgt_done_cb done_cb;
	void *done_arg;
	struct scsitgt__deferred done_d;
	/*
	 * A listener other than `listener` (iSER over rdma_cm): portal_stop() calls this instead
	 * of closing the TCP handle; it calls scsitgt__iscsi_portal_listener_gone() when done.
	 */
	void (*stop_listener)(struct scsitgt_portal *portal);
	void *listener_ctx;
	const char *kind; /* "iSER" for logs; NULL: a TCP portal */
	/* connections one initiator name may hold on this portal (0: no limit). */
	uint32_t max_conns_per_initiator;
};

/* unit attentions one connection keeps to announce (async.c); more are dropped. */
#define SCSITGT__ISCSI_ASYNC_QUEUE 8
struct scsitgt__iscsi_async_ev {
	uint64_t lun_id;
	uint16_t reason; /* enum scsitgt__sense_reason */
};

/*
 * Task management requests one connection may have in flight (tmf.c: received, not answered
 * yet); an immediate one past them is refused with Reject 0x06 (RFC 7143 §3.2.2.1, §11.17.1
 * "Immediate command reject - too many immediate commands"). Each may wait on every command a
 * backend holds: this bounds that memory. (A non-immediate one keeps ExpCmdSN until it has
 * acted, so at most one of those is in flight.)
 */
#define SCSITGT__ISCSI_TMFS_MAX 64u

/* Buckets of a connection's ITT index (a power of two). */
#define SCSITGT__ISCSI_ITT_BUCKETS 256u

/* The largest CmdSN window (queue_depth; portal.c refuses more), a power of two: the size of
 * a session's record of the CmdSNs in its window already taken (sn_taken). */
#define SCSITGT__ISCSI_WINDOW_MAX 4096u

enum scsitgt__iscsi_conn_state {
	SCSITGT__CONN_LOGIN,
	SCSITGT__CONN_FFP,
	SCSITGT__CONN_LOGGED_OUT, /* Logout Response queued; closing once written */
	SCSITGT__CONN_CLOSING,
};

struct scsitgt__iscsi_login;
struct scsitgt__iscsi_sess;

/* A Text Request exchange in progress (RFC 7143 §11.10). */
struct scsitgt__iscsi_text_xchg {
	bool active;
	uint32_t itt;
	uint32_t ttt;
	struct scsitgt__iscsi_text_acc acc;
	struct scsitgt__iscsi_textbuf resp;
};

struct scsitgt__iscsi_conn {
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt_portal *portal;
	/* The loop that runs the connection: the home loop, or its worker's (worker set,
	 * engine->conn_workers) where everything of it happens (xloop.c). */
	uv_loop_t *loop;
	struct scsitgt__worker *worker;
	/* Under ie->lock: the initiator name once known, and whether it closes (the
	 * per-initiator connection limit counts it across loops). */
	char iname[SCSITGT__ISCSI_NAME_MAX + 1];
	bool listed_closing;
	/* Under ie->lock too, for scsitgt_iscsi_engine_foreach_conn() on home (stats.c): what
	 * the connection's loop published as it entered full feature phase. */
	bool listed_ffp;
	bool listed_discovery;
	uint16_t listed_cid;
	uint16_t listed_tsih;
	char listed_target[SCSITGT__ISCSI_NAME_MAX + 1];
	/* A worker connection's hand-off, going home when it is gone (xloop.c). */
	struct scsitgt__iscsi_handoff *handoff;
	struct scsitgt__list node;	/* in ie->conns */
	struct scsitgt__list sess_node; /* in sess->conns */
	const struct scsitgt__iscsi_dm_ops *dm;
	void *dm_ctx;
	uint64_t id;
	enum scsitgt__iscsi_conn_state state;
	char peer[80]; /* "ip:port" for logs */
	struct sockaddr_storage local_sa;
	struct scsitgt__iscsi_rx rx;
	struct scsitgt__iscsi_login *login;
	struct scsitgt__iscsi_sess *sess;
	/* Session parameters negotiated at login; the Text negotiator continues from them. */
	struct scsitgt__iscsi_neg neg;
	uint16_t cid;
	uint32_t stat_sn;
	uint32_t exp_stat_sn;
	bool header_digest; /* both directions, from the PDU after the last Login Response */
	bool data_digest;
	uint32_t max_xmit_dsl;
	struct scsitgt__list tasks; /* struct scsitgt__iscsi_task, SCSI commands */
	unsigned int ntasks;
	/* The same tasks by ITT (chained through task->itt_next), for O(1) lookup. */
	struct scsitgt__iscsi_task *itt_hash[SCSITGT__ISCSI_ITT_BUCKETS];
	uint32_t next_ttt;
	struct scsitgt__iscsi_text_xchg text;
	uv_timer_t timer;
	uint64_t last_rx;     /* uv_now() of the last input */
	uint64_t rx_stamp;    /* uv_hrtime() when the data mover's current read began; 0 outside */
	bool nop_outstanding; /* our NOP-In ping waits for its NOP-Out */
	uint32_t nop_ttt;
	/* Rejects logged in the window that began at reject_log_start (uv_now()), and those
	 * not logged since the last summary (scsitgt__iscsi_conn_reject). */
	uint64_t reject_log_start;
	unsigned int reject_logged;
	uint64_t reject_unlogged;
	bool async_logout_sent;
	unsigned int tx_pending; /* batches given to the data mover, not done yet */
	/* Small batches kept for reuse (scsitgt__iscsi_conn_tx_get), chained by next. */
	struct scsitgt__iscsi_tx *tx_cache;
	unsigned int tx_cache_n;
	unsigned int refs; /* timer + data mover */
	bool dm_closing;
	bool freed;
	const char *close_reason;
	/* Decisions of the header callback for the PDU being received. */
	struct scsitgt__iscsi_task *rx_task;
	int rx_r2t;	     /* index of the R2T a Data-Out answers, -1 for unsolicited data */
	uint8_t rx_reject;   /* Reject reason to send once the PDU is complete, 0 for none */
	bool rx_ignore;	     /* drop the PDU silently (CmdSN outside the window) */
	bool cfg_locked;     /* a Text Request runs under the engine's configuration lock */
	uint8_t rx_data_err; /* the Data-Out broke its sequence: fail rx_task with this
			      * enum scsitgt__sense_reason (RFC 7143 §11.4.7.2), 0 for none */
	/* The last SCSI Command ignored for its CmdSN (§3.2.2.1) with unsolicited Data-Out to
	 * follow (F=0): that data is ignored as silently, up to its F=1 (review30b F9). */
	bool ignored_unsol;
	uint32_t ignored_itt;
	/* Multi-task TMFs waiting for the Data-Out sequences of the tasks they fenced (tmf.c),
	 * in arrival order, and how many such TMFs have not answered yet. */
	struct scsitgt__list tmf_wait;
	unsigned int tmf_fencing;
	/* TMFs received and not answered yet, waiting or acting (SCSITGT__ISCSI_TMFS_MAX). */
	unsigned int tmfs;
	/* scsitgt__iscsi_tmf_kick() looks at them from the loop, not from inside an abort. */
	struct scsitgt__deferred tmf_kick;
	bool tmf_kick_pending;
	/* traffic counters, wire bytes incl. digests (transport/iscsi/stats.c): written by the
	 * connection's loop alone (scsitgt__iscsi_stat_add(): a relaxed load and store, never
	 * a locked add), read from home by scsitgt_iscsi_engine_foreach_conn(). */
	_Atomic uint64_t stat_rx_pdus;
	_Atomic uint64_t stat_tx_pdus;
	_Atomic uint64_t stat_rx_bytes;
	_Atomic uint64_t stat_tx_bytes;
	/* counted in portal->nlogin (until full feature phase or close). */
	bool login_counted;
	/* the initiator's address, for address ACLs (core/acl.c); family 0 when unknown. */
	struct sockaddr_storage peer_sa;
	/* unit attentions to announce by Async Message (async.c), sent once per loop turn
	 * so that one change reaching many LUNs makes one message. */
	struct scsitgt__deferred async_flush;
	bool async_flush_pending;
	uint8_t async_n;
	struct scsitgt__iscsi_async_ev async_q[SCSITGT__ISCSI_ASYNC_QUEUE];
};

/* A SCSI command on a connection: the fabric-private part of a core command. */
struct scsitgt__iscsi_r2t {
	bool used;
	uint32_t ttt;
	uint32_t r2tsn;
	uint32_t offset;
	uint32_t len;
	uint32_t received;
	uint32_t next_datasn;
};

enum scsitgt__iscsi_task_state {
	SCSITGT__TASK_DATA_OUT, /* receiving Data-Out */
	SCSITGT__TASK_WAIT_SN,	/* data complete; waiting for its CmdSN turn */
	SCSITGT__TASK_EXEC,	/* in the core */
	SCSITGT__TASK_SENDING,	/* response queued */
	SCSITGT__TASK_ABORTED,	/* aborted by a TMF or teardown; freed without response */
};

struct scsitgt__iscsi_task {
	struct scsitgt__list node;    /* conn->tasks */
	struct scsitgt__list sn_node; /* sess->pending while it waits for its CmdSN */
	struct scsitgt__iscsi_conn *conn;
	struct scsitgt__cmd *cmd;
	enum scsitgt__iscsi_task_state state;
	uint32_t itt;
	uint32_t cmd_sn;
	uint32_t edtl;
	uint8_t lun[8];
	uint8_t flags;
	bool immediate;
	bool in_order;	  /* passed CmdSN ordering */
	uint64_t arrival; /* the session's count of SCSI Commands when this one arrived */
	bool counted;	  /* holds a slot of the CmdSN window */
	bool data_failed; /* a Data-Out error; the command completes with data_fail_reason */
	uint8_t data_fail_reason; /* enum scsitgt__sense_reason of the first such error */
	bool spdtl_set; /* the CDB's length before a short write was cut to the data sent */
	uint32_t spdtl;
	/* Data-Out accounting (RFC 7143 §4.2.5.2, §11.7, §11.8). */
	uint32_t want;	    /* bytes the initiator will send (EDTL of a write) */
	uint32_t received;  /* bytes received so far, in order */
	bool unsol_pending; /* unsolicited Data-Out announced (F bit clear on the command) */
	uint32_t unsol_end; /* end offset of the unsolicited burst */
	uint32_t unsol_datasn;
	uint32_t solicit_end; /* bytes to solicit with R2T in total */
	uint32_t r2t_offset;  /* next offset to solicit */
	uint32_t r2t_sn;
	unsigned int r2t_outstanding;
	unsigned int r2t_max;
	struct scsitgt__iscsi_task *itt_next; /* conn->itt_hash chain */
	/* write buffer budget (scsi.c): in sess->budget_wait while the first R2T waits for
	 * budget; bytes of the session's budget the command's buffer holds. */
	struct scsitgt__list budget_node;
	uint32_t charged;
	/* Affected by a multi-task TMF that has not acted yet (tmf.c): no new R2T, no
	 * execution; the TMF waits for its sequences in flight to end (RFC 7143 §11.5.1). */
	bool fenced;
	struct scsitgt__iscsi_r2t r2t[];
};

/*
 * A non-immediate NOP-Out ping, Text Request, Logout Request or TMF Request that arrived ahead
 * of ExpCmdSN, held for its turn like a SCSI Command (RFC 7143 §3.2.2.1: every non-immediate
 * PDU is delivered in CmdSN order): in sess->held, in CmdSN order, holding a window slot; run
 * by scsitgt__iscsi_sn_drain() when ExpCmdSN reaches it.
 */
struct scsitgt__iscsi_held_pdu {
	struct scsitgt__list node; /* sess->held */
	struct scsitgt__iscsi_conn *conn;
	uint32_t cmd_sn;
	uint32_t data_len;
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t data[];
};

/* An iSCSI session (normal or discovery). */
struct scsitgt__iscsi_sess {
	struct scsitgt__list node; /* in ie->sessions */
	struct scsitgt__iscsi_engine *ie;
	/* The loop of its connections (NULL: home); immutable. Another loop reaches the
	 * session only by a message naming its id (xloop.c). */
	struct scsitgt__worker *worker;
	/*
	 * Names the session in messages between loops: unique for the engine's life (a 64-bit
	 * count under ie->lock), unlike the TSIH, which a later session may get again once this
	 * one is gone (16 bits, RFC 7143 §11.12). Immutable.
	 */
	uint64_t id;
	/* The target's parameters when the session was created (docs: they apply to logins
	 * that start after a change), read without the engine's configuration lock. */
	struct scsitgt_iscsi_params tparams;
	/* Posted home to end a worker session's core nexus (xloop.c). */
	struct scsitgt__msg finish_msg;
	struct scsitgt__session *core; /* NULL for discovery sessions */
	struct scsitgt_target *tgt;    /* NULL for discovery sessions */
	bool discovery;
	uint8_t isid[6];
	uint16_t tsih;
	uint16_t tpgt;
	char initiator_name[SCSITGT__ISCSI_NAME_MAX + 1];
	struct scsitgt__iscsi_session_params params;
	struct scsitgt__list conns;
	unsigned int nconns;
	uint32_t exp_cmd_sn;
	/* SCSI Commands received so far: an immediate TMF that waits spares the later ones. */
	uint64_t arrivals;
	uint32_t max_cmd_sn;
	uint32_t queue_depth;
	unsigned int active;	      /* non-immediate commands holding window slots */
	struct scsitgt__list pending; /* tasks waiting for their CmdSN, in CmdSN order */
	struct scsitgt__list held;    /* struct scsitgt__iscsi_held_pdu, in CmdSN order */
	uint64_t held_bytes;	      /* their data segments (bounded: sn_hold_pdu()) */
	/* A non-immediate TMF at ExpCmdSN has not acted yet: ExpCmdSN stays at its CmdSN and
	 * nothing behind it is delivered until it has (tmf.c, RFC 7143 §11.5.1). */
	bool sn_busy;
	bool draining; /* in scsitgt__iscsi_sn_drain(): a nested call leaves it to the outer one */
	/*
	 * The CmdSNs ahead of ExpCmdSN already taken (RFC 7143 §3.2.2.1): by a command held in
	 * pending, or used up with no command left to run (aborted while held or while its PDU
	 * arrived, or named by an ABORT TASK before it came, §11.5.1). Bit CmdSN modulo
	 * SCSITGT__ISCSI_WINDOW_MAX, cleared when ExpCmdSN passes it; a non-immediate PDU
	 * with a taken CmdSN is a duplicate and ignored. No allocation: 512 bytes.
	 */
	uint64_t sn_taken[SCSITGT__ISCSI_WINDOW_MAX / 64];
	bool closing;
	/*
	 * Logins that reinstate it (under ie->lock), told on their own loops when it is gone
	 * (session.c): its last connection closed, and its commands out of backends or left there
	 * after logout_timeout_ms (the session stays listed, closing, until then).
	 */
	struct scsitgt__list reinstate_waiters;
	/* Its end after the quiescence of its commands, outside the core's callback. */
	struct scsitgt__deferred end_defer;
	/* A Logout's quiescence answered: its end needs no other (session.c). Its loop. */
	bool quiesced;
	/* uv_now() of its loop when that quiescence began, for the log of what it waited. */
	uint64_t quiesce_start;
	/* bytes of write buffers held by this session's tasks, and the tasks waiting to
	 * solicit data until that falls below max_write_buffer_bytes (scsi.c), oldest first. */
	uint64_t write_bytes;
	struct scsitgt__list budget_wait;
	bool budget_kicking;
};

/* conn.c (what data movers call is in datamover.h) */
/* Keep the connection object alive across an asynchronous step (TMF completion). */
void scsitgt__iscsi_conn_hold(struct scsitgt__iscsi_conn *conn);
void scsitgt__iscsi_conn_put(struct scsitgt__iscsi_conn *conn);
/* A batch for up to @cap PDUs, from the connection's free list when small. */
struct scsitgt__iscsi_tx *scsitgt__iscsi_conn_tx_get(struct scsitgt__iscsi_conn *conn,
						     unsigned int cap);
/* Seal and send a batch with the connection's digests. */
void scsitgt__iscsi_conn_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx);
/* Fill StatSN, ExpCmdSN and MaxCmdSN of a target PDU; @advance consumes a StatSN. */
void scsitgt__iscsi_conn_fill_sn(struct scsitgt__iscsi_conn *conn, uint8_t *bhs, bool advance);
/* Send a Reject (RFC 7143 §11.17) carrying the rejected header. Logged at NOTICE, at most
 * SCSITGT__ISCSI_REJECT_LOG_BURST a second per connection; the rest are counted in one summary
 * line, logged by the first Reject of a later second or when the connection ends. */
#define SCSITGT__ISCSI_REJECT_LOG_BURST 10
#define SCSITGT__ISCSI_REJECT_LOG_MS 1000
void scsitgt__iscsi_conn_reject(struct scsitgt__iscsi_conn *conn, const uint8_t *bhs,
				uint8_t reason);
/* Send one PDU with an optional data copy. */
int scsitgt__iscsi_conn_send_simple(struct scsitgt__iscsi_conn *conn, const uint8_t *bhs,
				    const void *data, uint32_t len, bool close_after);
/* Ask the initiator to log out (Async Message), then drop after a grace period. */
void scsitgt__iscsi_conn_request_logout(struct scsitgt__iscsi_conn *conn);
/* Enter full feature phase after a successful login. */
void scsitgt__iscsi_conn_enter_ffp(struct scsitgt__iscsi_conn *conn);
/* Run a held control PDU whose CmdSN turn came (scsitgt__iscsi_sn_drain()). */
void scsitgt__iscsi_conn_run_held(struct scsitgt__iscsi_conn *conn,
				  const struct scsitgt__iscsi_held_pdu *held);

/* login.c */
int scsitgt__iscsi_login_start(struct scsitgt__iscsi_conn *conn);
void scsitgt__iscsi_login_destroy(struct scsitgt__iscsi_conn *conn);
int scsitgt__iscsi_login_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu);
/* The parameters that apply to @tgt (the engine's defaults when NULL). */
const struct scsitgt_iscsi_params *scsitgt__iscsi_params_for(struct scsitgt__iscsi_engine *ie,
							     struct scsitgt_target *tgt);
void scsitgt__iscsi_neg_cfg_from(struct scsitgt__iscsi_neg_params *cfg,
				 const struct scsitgt_iscsi_params *p);

/* text.c */
int scsitgt__iscsi_text_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu);
void scsitgt__iscsi_text_reset(struct scsitgt__iscsi_conn *conn);
/* Append SendTargets results to @resp (RFC 7143 Appendix C). */
int scsitgt__iscsi_send_targets(struct scsitgt__iscsi_conn *conn, const char *value,
				struct scsitgt__iscsi_textbuf *resp);

/* session.c */
/*
 * A session for @conn's login, in ie->sessions with a fresh TSIH; for a normal session
 * (@tgt) without its core nexus yet: scsitgt__iscsi_sess_core_create() makes it (on the
 * home loop). 0, -ENOMEM.
 */
int scsitgt__iscsi_sess_create(struct scsitgt__iscsi_sess **out, struct scsitgt__iscsi_engine *ie,
			       struct scsitgt__iscsi_conn *conn, struct scsitgt_target *tgt,
			       const uint8_t isid[6],
			       const struct scsitgt__iscsi_session_params *p);
/* What the core nexus of a session is made of (copied: it may travel to the home loop). */
struct scsitgt__iscsi_nexus {
	char iport[SCSITGT__ISCSI_NAME_MAX + 32];
	char tport[SCSITGT__ISCSI_NAME_MAX + 32];
	uint16_t tpgt;
	bool lend_data_in;
	struct sockaddr_storage peer_sa;
};
void scsitgt__iscsi_nexus_from(struct scsitgt__iscsi_nexus *nx,
			       const struct scsitgt__iscsi_sess *sess,
			       const struct scsitgt__iscsi_conn *conn);
/* Create sess->core (Loop: home). 0, -EACCES, -ESHUTDOWN, -ENOMEM. */
int scsitgt__iscsi_sess_core_create(struct scsitgt__iscsi_sess *sess,
				    const struct scsitgt__iscsi_nexus *nx);
/* A session whose core creation failed: out of the engine's list, freed; @conn detached. */
void scsitgt__iscsi_sess_abandon(struct scsitgt__iscsi_sess *sess,
				 struct scsitgt__iscsi_conn *conn);
/* The session's nexus is over (its last connection went): event, core destroy, free. Home. */
void scsitgt__iscsi_sess_finish(struct scsitgt__iscsi_sess *sess);
void scsitgt__iscsi_sess_conn_gone(struct scsitgt__iscsi_sess *sess,
				   struct scsitgt__iscsi_conn *conn);
/* The live session of the I_T nexus @initiator/@isid x @tgt/@tpgt (RFC 7143 SSID: ISID and
 * TPGT) with @tsih (0: any). Under ie->lock. */
struct scsitgt__iscsi_sess *scsitgt__iscsi_sess_find(struct scsitgt__iscsi_engine *ie,
						     const char *initiator, const uint8_t isid[6],
						     struct scsitgt_target *tgt, uint16_t tpgt,
						     uint16_t tsih);
/* Whether @s is a session of the I_T nexus @iname/@isid x @tgt/@tpgt, closing or not. */
bool scsitgt__iscsi_sess_of_nexus(const struct scsitgt__iscsi_sess *s, const char *iname,
				  const uint8_t isid[6], const struct scsitgt_target *tgt,
				  uint16_t tpgt);
/* Close every connection of a session (reinstatement, target destroy). */
void scsitgt__iscsi_sess_close(struct scsitgt__iscsi_sess *sess, const char *why);
enum scsitgt__sn_verdict {
	SCSITGT__SN_NOW,    /* expected: deliver now */
	SCSITGT__SN_LATER,  /* in the window, ahead of ExpCmdSN: hold */
	SCSITGT__SN_IGNORE, /* outside the window or taken: silently ignore (RFC 7143 §3.2.2.1) */
};
enum scsitgt__sn_verdict scsitgt__iscsi_sn_check(const struct scsitgt__iscsi_sess *sess,
						 uint32_t cmd_sn, bool immediate);
/*
 * A non-immediate PDU with CmdSN == ExpCmdSN was accepted: ExpCmdSN passes it, then
 * scsitgt__iscsi_sn_drain(). A SCSI command uses scsitgt__iscsi_sn_step() instead, so that it
 * runs before the commands held behind it.
 */
void scsitgt__iscsi_sn_advance(struct scsitgt__iscsi_sess *sess);
/* ExpCmdSN passes one CmdSN (and MaxCmdSN follows); nothing held is delivered. */
void scsitgt__iscsi_sn_step(struct scsitgt__iscsi_sess *sess);
/* Pass the CmdSNs at ExpCmdSN that are taken: run the held command of each, skip used-up ones. */
void scsitgt__iscsi_sn_drain(struct scsitgt__iscsi_sess *sess);
/*
 * Hold the non-immediate control PDU @pdu of @conn, ahead of ExpCmdSN in the window, for its
 * turn: copied, its CmdSN taken, a window slot held. 0; -ENOBUFS when the session's held data
 * would pass max_write_buffer_bytes; -ENOMEM. Either error leaves nothing held.
 */
int scsitgt__iscsi_sn_hold_pdu(struct scsitgt__iscsi_conn *conn,
			       const struct scsitgt__iscsi_pdu *pdu);
/* Drop the held PDUs of @conn (closing), giving their window slots back. */
void scsitgt__iscsi_sn_held_release(struct scsitgt__iscsi_conn *conn);
/* Mark @cmd_sn, in the window, taken (held or used up); outside it nothing is marked. */
void scsitgt__iscsi_sn_take(struct scsitgt__iscsi_sess *sess, uint32_t cmd_sn);
/* Whether @cmd_sn, in the window, is taken (by a held command, or used up). */
bool scsitgt__iscsi_sn_is_taken(const struct scsitgt__iscsi_sess *sess, uint32_t cmd_sn);
void scsitgt__iscsi_sess_update_window(struct scsitgt__iscsi_sess *sess);
extern const struct scsitgt__fabric_ops scsitgt__iscsi_fabric_ops;

/* scsi.c */
int scsitgt__iscsi_scsi_cmd_header(struct scsitgt__iscsi_conn *conn,
				   struct scsitgt__iscsi_pdu *pdu);
int scsitgt__iscsi_scsi_cmd_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu);
int scsitgt__iscsi_data_out_header(struct scsitgt__iscsi_conn *conn,
				   struct scsitgt__iscsi_pdu *pdu);
int scsitgt__iscsi_data_out_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu);
struct scsitgt__iscsi_task *scsitgt__iscsi_task_find(struct scsitgt__iscsi_conn *conn,
						     uint32_t itt);
/* Release every task of a closing connection. */
void scsitgt__iscsi_tasks_release(struct scsitgt__iscsi_conn *conn);
/* A task's turn came (CmdSN order): execute when its data is complete. */
void scsitgt__iscsi_task_ordered(struct scsitgt__iscsi_task *task);
void scsitgt__iscsi_cmd_done(struct scsitgt__cmd *cmd);
void scsitgt__iscsi_cmd_aborted(struct scsitgt__cmd *cmd);
/* Fabric op cmd_after_tmf (tmf.c): @cmd is held behind the non-immediate TMF of @tmf_arg. */
bool scsitgt__iscsi_cmd_after_tmf(struct scsitgt__cmd *cmd, void *tmf_arg);
/* Build the Data-In PDUs and response of a finished command into a batch (exposed for tests). */
struct scsitgt__iscsi_tx *scsitgt__iscsi_build_response(struct scsitgt__iscsi_conn *conn,
							struct scsitgt__iscsi_task *task);

/* A fenced task (tmf.c) goes on: the TMFs that fenced it have acted and spared it. */
void scsitgt__iscsi_task_unfence(struct scsitgt__iscsi_task *task);

/* tmf.c */
int scsitgt__iscsi_tmf_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu);
/* A fenced task's Data-Out sequences ended, or it went: the waiting TMFs may act (from the
 * loop, deferred). */
void scsitgt__iscsi_tmf_kick(struct scsitgt__iscsi_conn *conn);
/* The connection closes: its waiting TMFs go without acting or answering. */
void scsitgt__iscsi_tmf_drop_waiting(struct scsitgt__iscsi_conn *conn);

/* async.c: Async Messages (RFC 7143 §11.9). */
/*
 * Build an Async Message reporting a SCSI asynchronous event (AsyncEvent 0) on LUN @lun_id:
 * the BHS (StatSN, ExpCmdSN, MaxCmdSN and DataSegmentLength left to the sender) and, in
 * @data, the data segment: SenseLength and fixed-format sense data with @key/@asc/@ascq.
 * Returns the data segment's length, 0 if @cap is too small.
 */
size_t scsitgt__iscsi_async_scsi_event(uint8_t *bhs, uint8_t *data, size_t cap, uint64_t lun_id,
				       uint8_t key, uint8_t asc, uint8_t ascq);
/* The core's unit_attention hook (core/fabric.h). */
void scsitgt__iscsi_async_ua(struct scsitgt__session *core, uint64_t lun_id,
			     enum scsitgt__sense_reason reason);

/* logout.c */
int scsitgt__iscsi_logout_pdu(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_pdu *pdu);

/* portal.c (what a data mover with its own listener calls is in datamover.h) */
struct scsitgt__iscsi_engine *scsitgt__iscsi_engine_get(struct scsitgt_engine *engine);
struct scsitgt__iscsi_target *scsitgt__iscsi_target_get(struct scsitgt_target *tgt, bool create);
void scsitgt__iscsi_portal_conn_gone(struct scsitgt_portal *portal);
/* "host:port" of a portal as seen by @conn (the local address for wildcard portals). */
int scsitgt__iscsi_portal_address(const struct scsitgt_portal *portal,
				  const struct scsitgt__iscsi_conn *conn, char *buf, size_t size);

/*
 * An accepted socket on its way to the worker that will run its connection (xloop.c): the
 * home loop counted it in portal->nconns and placed it on @w; the message comes back home
 * when the connection is gone (scsitgt__iscsi_xloop_conn_gone()).
 */
struct scsitgt__iscsi_handoff {
	struct scsitgt__msg msg;
	struct scsitgt_portal *portal;
	struct scsitgt__worker *w;
	uv_os_sock_t fd;
	struct sockaddr_storage peer;
	struct sockaddr_storage local;
};

/* tcp.c */
int scsitgt__iscsi_tcp_accept(struct scsitgt_portal *portal);
/* On @h's worker: run its socket (owned from now on); @h stays with the connection. */
void scsitgt__iscsi_tcp_adopt_here(struct scsitgt__iscsi_handoff *h);

/* xloop.c: connections on workers (engine->conn_workers), what crosses loops. */
/* Whether the calling thread runs loop @w (NULL: home). */
bool scsitgt__iscsi_on_loop(const struct scsitgt__iscsi_engine *ie,
			    const struct scsitgt__worker *w);
/* The core's shard of loop @w (NULL: home): where a session's commands run. */
struct scsitgt__shard *scsitgt__iscsi_loop_shard(const struct scsitgt__iscsi_engine *ie,
						 const struct scsitgt__worker *w);
/* Hand the accepted socket @fd to the least-loaded worker (its portal slot is reserved). */
int scsitgt__iscsi_xloop_adopt(struct scsitgt_portal *portal, uv_os_sock_t fd,
			       const struct sockaddr_storage *peer,
			       const struct sockaddr_storage *local);
/* Ask every connection of @portal to log out, each on its own loop. */
void scsitgt__iscsi_xloop_portal_stop(struct scsitgt_portal *portal);
/* Close the session with @tsih / ask it to log out, on its loop (now when that is this one). */
enum scsitgt__iscsi_xop {
	SCSITGT__XOP_SESS_CLOSE,
	SCSITGT__XOP_SESS_KICK,
	SCSITGT__XOP_SESS_UA,
};
void scsitgt__iscsi_xloop_sess(struct scsitgt__iscsi_sess *sess, enum scsitgt__iscsi_xop op,
			       const char *why, uint64_t lun_id, uint16_t reason);
/* A worker login's session needs its core nexus: created on home, the login resumes with
 * scsitgt__iscsi_login_core_done() on @conn's loop (@conn held meanwhile). */
int scsitgt__iscsi_xloop_core_create(struct scsitgt__iscsi_conn *conn,
				     struct scsitgt__iscsi_sess *sess);
/* The session of a worker loop ended: finish it on home. */
void scsitgt__iscsi_xloop_sess_finish(struct scsitgt__iscsi_sess *sess);
/* Then, from home, free it on its worker after what home posted there before (session.c). */
void scsitgt__iscsi_xloop_sess_free(struct scsitgt__iscsi_sess *sess);
/* A worker connection is gone (or never came up): its portal slot and worker placement are
 * released on home. */
void scsitgt__iscsi_xloop_conn_gone(struct scsitgt__iscsi_handoff *h);
/* session.c: close every session of @tgt but @except: those of this loop now, the others by
 * message to theirs (TARGET COLD RESET). */
void scsitgt__iscsi_sess_close_target(struct scsitgt__iscsi_engine *ie, struct scsitgt_target *tgt,
				      struct scsitgt__iscsi_sess *except, const char *why);
/*
 * session.c: RFC 7143 §6.3.5 reinstatement by @conn's login: close the session of the I_T
 * nexus @iname/@isid x @tgt/(@conn's portal group tag). 0: no such session is left, the login
 * goes on; 1: one is there (closing, or its commands still in backends), and the login waits
 * for scsitgt__iscsi_login_reinstate_done() on @conn's loop (@conn held meanwhile); -EBUSY:
 * none, but commands of a former session of the nexus may still be in a backend (its fence),
 * the login may not go on; -ENOMEM.
 */
int scsitgt__iscsi_sess_reinstate(struct scsitgt__iscsi_conn *conn, const char *iname,
				  const uint8_t isid[6], struct scsitgt_target *tgt);
/*
 * session.c: abort the session's tasks and answer @cb once they have left their backends, or at
 * logout_timeout_ms (scsitgt__tmf_quiesce()); its I_T nexus is fenced from now until they have
 * left, past the session's end: no login of it enters full feature phase meanwhile (without
 * memory for the fence, the bound is all there is). Its loop.
 */
void scsitgt__iscsi_sess_quiesce(struct scsitgt__iscsi_sess *sess, scsitgt__tmf_cb cb,
				 void *cb_arg);
/* Ask every connection of the session to log out (on its loop). */
void scsitgt__iscsi_sess_kick(struct scsitgt__iscsi_sess *sess);
/* async.c: queue an Async Message for a unit attention (on the session's loop). */
void scsitgt__iscsi_async_ua_here(struct scsitgt__iscsi_sess *sess, uint64_t lun_id,
				  enum scsitgt__sense_reason reason);
/* login.c: the session a login reinstates is gone (its commands out of backends, or left
 * there after logout_timeout_ms behind the nexus's fence): the login tries again. */
void scsitgt__iscsi_login_reinstate_done(struct scsitgt__iscsi_conn *conn);
/* login.c: the core nexus of a worker login exists (rc 0) or could not be made. */
void scsitgt__iscsi_login_core_done(struct scsitgt__iscsi_conn *conn, int rc);
/* login.c: a worker login waits for home to make its core nexus: home may be writing the
 * session's core right now, so its loop must not read it before core_done. */
bool scsitgt__iscsi_login_core_pending(const struct scsitgt__iscsi_conn *conn);
/* A worker login asks the home loop for the verdict of @tgt's redirect hook (@conn held);
 * the login resumes with scsitgt__iscsi_login_redirect_done() on its loop. */
int scsitgt__iscsi_xloop_redirect(struct scsitgt__iscsi_conn *conn, struct scsitgt_target *tgt,
				  const char *iname);
/* login.c: the redirect hook said @verdict (enum scsitgt_iscsi_redirect) and @addr. */
void scsitgt__iscsi_login_redirect_done(struct scsitgt__iscsi_conn *conn, int verdict,
					const char *addr);
/* tcp_worker.c: run an accepted socket (a duplicate of @fd is taken) on a worker loop. */
int scsitgt__iscsi_tcpw_adopt(struct scsitgt_portal *portal, uv_os_sock_t fd,
			      const struct sockaddr *peer, const struct sockaddr *local);

/* Add @n to a traffic counter of a connection, on its loop (struct scsitgt__iscsi_conn). */
static inline void scsitgt__iscsi_stat_add(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

#endif /* SCSITGT_ISCSI_CONN_H */
