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
 */
#ifndef SCSITGT_ISCSI_DATAMOVER_H
#define SCSITGT_ISCSI_DATAMOVER_H

#include <stddef.h>
#include <stdint.h>

#include "transport/iscsi/pdu.h"
#include "transport/iscsi/text/keys.h"

struct scsitgt__cmd;
struct scsitgt__iscsi_conn;

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
};

#endif /* SCSITGT_ISCSI_DATAMOVER_H */
