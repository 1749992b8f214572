/* SPDX-License-Identifier: MIT */
/*
 * The data-mover seam of the iSCSI transport. Login, text keys, sessions, CmdSN ordering, task
 * management and SCSI handling are shared; a data mover only moves bytes:
 *  - TCP (tcp.c): PDUs over a uv_tcp_t stream; Data-In, R2T and Data-Out are PDUs.
 *  - iSER (src/transport/iser): PDUs in RDMA SENDs with the iSER header. Its xmit turns the
 *    Data-In PDUs of a batch into RDMA WRITEs posted before the SEND of the response (a
 *    status-carrying Data-In becomes a SCSI Response, RFC 7145 §7.3.5), and R2Ts into RDMA
 *    READs whose data is handed back as the Data-Out PDUs the R2T solicited, so scsi.c keeps
 *    one code path for its accounting.
 *
 * Ownership: the iSCSI connection (conn.c) owns the data mover's context and calls close()
 * exactly once; the data mover calls scsitgt__iscsi_conn_dm_closed() once it released every
 * resource (all queued batches finished with their done callbacks).
 *
 * This header is the whole seam: the ops a data mover implements, below them the functions it
 * calls on its connection and portal. The connection and portal stay opaque to it (iSER
 * includes nothing else of transport/iscsi, STYLE.md §2 rule 3); conn.h is the iSCSI side's.
 */
#ifndef SCSITGT_ISCSI_DATAMOVER_H
#define SCSITGT_ISCSI_DATAMOVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "libscsitgt/iscsi.h"
#include "transport/iscsi/pdu.h"
#include "transport/iscsi/text/keys.h"

#define SCSITGT__ISCSI_SUBSYS "iscsi"

struct scsitgt__cmd;
struct scsitgt__iscsi_conn;
struct scsitgt_portal;

/* What a successful login hands the data mover before the final Login Response. */
struct scsitgt__iscsi_dm_login {
	/* The session's negotiated keys (RFC 7143 §13, RFC 7145 §6). */
	const struct scsitgt__iscsi_session_params *params;
	/* The CmdSN window the session grants: MaxCmdSN - ExpCmdSN + 1 (RFC 7143 §4.2.2.1). */
	uint32_t queue_depth;
	bool discovery;
};

struct scsitgt__iscsi_dm_ops {
	const char *name;
	/*
	 * Send a sealed batch of PDUs after every batch queued before it. tx->done (if set) runs
	 * once: status 0 when written, a negative errno when the connection failed or closed.
	 * The batch is freed by the data mover after done.
	 */
	void (*xmit)(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx);
	/* Stop receiving, drop queued output, close. Called once. */
	void (*close)(struct scsitgt__iscsi_conn *conn);
	/*
	 * iSER (RFC 7145 §6.3): login offers RDMAExtensions=Yes, forces digests to None, and
	 * declares max_recv_dsl as MaxRecvDataSegmentLength / TargetRecvDataSegmentLength (the
	 * size of the posted receive buffers).
	 */
	bool rdma;
	uint32_t max_recv_dsl;
	/*
	 * iSER: the largest data segment one PDU it sends can carry (its send buffers); with
	 * rdma, what the target sends is bounded by the initiator's InitiatorRecvDataSegmentLength
	 * and by this (RFC 7145 §6.3). 0: no bound of its own.
	 */
	uint32_t max_send_dsl;
	/*
	 * Optional: a SCSI command was created on @conn, before its CDB is parsed (iSER: its
	 * data buffer comes from registered memory, cmd->buf_ops).
	 */
	void (*cmd_init)(struct scsitgt__iscsi_conn *conn, struct scsitgt__cmd *cmd);
	/*
	 * Optional: login succeeded and its session exists. Called once per connection, after
	 * the session is created and before the final Login Response (the one that transits to
	 * full feature phase) is built, so before any full-feature PDU is sent or received.
	 * The data mover gets ready for full feature phase (iSER, RFC 7145 §7.3.1: post the
	 * receive buffers the session needs before that response) and may lower *@window (on
	 * entry login->queue_depth) to the CmdSN window it can take: the session and the
	 * response's MaxCmdSN then use it. Returns 0, or a negative errno: the connection is
	 * closed without that response. NULL: the window stays.
	 */
	int (*login_complete)(struct scsitgt__iscsi_conn *conn,
			      const struct scsitgt__iscsi_dm_login *login, uint32_t *window);
	/*
	 * Optional: the task with @itt ended without a response (aborted by a TMF, by another
	 * nexus or a LUN drain), before the response of a TMF that ended it goes to xmit. The
	 * data mover drops what it still keeps for it (iSER: the RDMA READs of its R2Ts not
	 * posted yet, which would otherwise follow that response on the wire and read an STag
	 * the initiator may have released, and the STags it advertised), and hands no more of
	 * its data to the connection. Once the initiator has that response it may reuse @itt.
	 */
	void (*task_gone)(struct scsitgt__iscsi_conn *conn, uint32_t itt);
	/*
	 * Optional: whether a NOP-In ping (RFC 7143 §11.19) could go out now, not held behind a
	 * limit of the data mover. false: the keepalive skips this ping (a ping is optional) and
	 * asks again an interval later. iSER: not while the initiator's
	 * MaxOutstandingUnexpectedPDUs are outstanding (RFC 7145 §8.4), since a ping queued then
	 * would hold every later PDU of the connection behind it. NULL: always.
	 */
	bool (*may_ping)(struct scsitgt__iscsi_conn *conn);
};

/* ---- The iSCSI connection, as its data mover drives it (conn.c) ---- */

/* A connection on @portal moved by @dm (its context @dm_ctx); starts in login. */
int scsitgt__iscsi_conn_create(struct scsitgt__iscsi_conn **out, struct scsitgt_portal *portal,
			       const struct scsitgt__iscsi_dm_ops *dm, void *dm_ctx,
			       const struct sockaddr *peer, const struct sockaddr *local);
/* The data mover's context given to scsitgt__iscsi_conn_create(). */
void *scsitgt__iscsi_conn_dm_ctx(const struct scsitgt__iscsi_conn *conn);
/* Bytes from the data mover; returns < 0 when the connection is being closed. */
int scsitgt__iscsi_conn_recv(struct scsitgt__iscsi_conn *conn, const uint8_t *data, size_t len);
/*
 * Where the receiver wants the next bytes in place (inside a data segment bound for a command
 * buffer): returns how many may land at *dst, 0 when they must go through
 * scsitgt__iscsi_conn_recv().
 */
size_t scsitgt__iscsi_conn_rx_direct(struct scsitgt__iscsi_conn *conn, uint8_t **dst);
/* The data mover read n bytes in place (where scsitgt__iscsi_conn_rx_direct() pointed). */
int scsitgt__iscsi_conn_recv_direct(struct scsitgt__iscsi_conn *conn, size_t n);
/* The largest data segment we accept (MaxRecvDataSegmentLength in force; 0 before login). */
uint32_t scsitgt__iscsi_conn_max_recv_dsl(const struct scsitgt__iscsi_conn *conn);
/* The StatSN the next response carries (an ExpStatSN the initiator would send). */
uint32_t scsitgt__iscsi_conn_stat_sn(const struct scsitgt__iscsi_conn *conn);
/* The data buffer (*len: its transfer length) of the command with @itt, NULL if none. */
uint8_t *scsitgt__iscsi_conn_cmd_buf(struct scsitgt__iscsi_conn *conn, uint32_t itt, uint32_t *len);
/* The data mover finished a batch (written: 0; dropped: < 0); frees it. */
void scsitgt__iscsi_conn_tx_complete(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx,
				     int status);
/* The data mover saw EOF or an error. */
void scsitgt__iscsi_conn_dm_error(struct scsitgt__iscsi_conn *conn, int err);
/* Drop the connection (its session too at ERL0 when it is the last one). */
void scsitgt__iscsi_conn_close(struct scsitgt__iscsi_conn *conn, const char *why);
/* The data mover finished closing. */
void scsitgt__iscsi_conn_dm_closed(struct scsitgt__iscsi_conn *conn);
void scsitgt__iscsi_conn_log(struct scsitgt__iscsi_conn *conn, enum scsitgt_log_level level,
			     const char *fmt, ...) SCSITGT_PRINTF(3, 4);

/*
 * Connections on worker loops (engine->conn_workers, docs/threading.md). A data mover with its
 * own listener places each connection it admitted, on home: scsitgt__iscsi_portal_place()
 * counts it in its portal (as a TCP hand-off, xloop.c) and picks the least-loaded worker. On
 * that worker's loop the data mover then creates the connection with
 * scsitgt__iscsi_conn_create_on(), which keeps the placement and gives it back when the
 * connection is gone; a placement that never became a connection is given back with
 * scsitgt__iscsi_handoff_drop().
 */
struct scsitgt__iscsi_handoff;
struct scsitgt__worker;

/*
 * Place a connection of @portal: 0 with *@out and *@w (its worker), or 0 with both NULL when
 * the engine keeps its connections on home; -ENOMEM. Loop: home.
 */
int scsitgt__iscsi_portal_place(struct scsitgt_portal *portal, struct scsitgt__iscsi_handoff **out,
				struct scsitgt__worker **w);
/* Give back a placement that never became a connection (by message to home). Thread-safe. */
void scsitgt__iscsi_handoff_drop(struct scsitgt__iscsi_handoff *h);
/* A connection of @portal on the worker of @h (NULL: the home loop), from that loop, see
 * scsitgt__iscsi_conn_create(); it keeps @h. */
int scsitgt__iscsi_conn_create_on(struct scsitgt__iscsi_conn **out, struct scsitgt_portal *portal,
				  struct scsitgt__iscsi_handoff *h,
				  const struct scsitgt__iscsi_dm_ops *dm, void *dm_ctx,
				  const struct sockaddr *peer, const struct sockaddr *local);

/* ---- The portal, as a data mover with its own listener (iSER) drives it (portal.c) ---- */

/*
 * What creating a TCP or an iSER portal shares: copy min(size) bytes of @opts over the defaults
 * into @o, check them, parse the address into @sa, and allocate the portal with its engine,
 * TPGT, connection limits and address filled in. 0 and *out, -EINVAL (logged, naming the public
 * call @fn) or -ENOMEM.
 */
int scsitgt__iscsi_portal_new(struct scsitgt_portal **out, struct scsitgt_engine *engine,
			      const struct scsitgt_portal_opts *opts, struct scsitgt_portal_opts *o,
			      struct sockaddr_storage *sa, const char *fn);
/* A portal from scsitgt__iscsi_portal_new() that never went in service: free it. */
void scsitgt__iscsi_portal_discard(struct scsitgt_portal *portal);
/*
 * The portal's own listener: scsitgt_portal_destroy() calls @stop instead of closing a TCP
 * handle, and @stop calls scsitgt__iscsi_portal_listener_gone() when done. @kind ("iSER")
 * names the portal in logs.
 */
void scsitgt__iscsi_portal_set_listener(struct scsitgt_portal *portal, const char *kind,
					void (*stop)(struct scsitgt_portal *portal), void *ctx);
void *scsitgt__iscsi_portal_listener_ctx(const struct scsitgt_portal *portal);
/* Listening on @port (bound address @sa): put the portal in service, as a TCP one. */
void scsitgt__iscsi_portal_register(struct scsitgt_portal *portal, uint16_t port,
				    const struct sockaddr_storage *sa);
struct scsitgt_engine *scsitgt__iscsi_portal_engine(const struct scsitgt_portal *portal);
/* The portal's address is a wildcard (0.0.0.0 or ::). */
bool scsitgt__iscsi_portal_wildcard(const struct scsitgt_portal *portal);
/* Log "<kind> portal <address>:<port>: <message>". */
void scsitgt__iscsi_portal_log(const struct scsitgt_portal *portal, enum scsitgt_log_level level,
			       const char *fmt, ...) SCSITGT_PRINTF(3, 4);
/*
 * Whether @portal takes one more connection, asked by every data mover before it sets one up
 * (TCP once accepted, so that the backlog drains; iSER at CONNECT_REQUEST, rejecting): not
 * while the portal closes, nor over its limits (scsitgt_portal_opts max_connections,
 * max_login_connections); a refusal for a limit is counted in portal->refused and logged on
 * the 1st, 2nd, 4th, 8th... one. 0, -ESHUTDOWN or -ECONNREFUSED.
 */
int scsitgt__iscsi_portal_admit(struct scsitgt_portal *portal);
/* Its listener finished closing (set_listener portals); the listener context is gone. */
void scsitgt__iscsi_portal_listener_gone(struct scsitgt_portal *portal);

#endif /* SCSITGT_ISCSI_DATAMOVER_H */
