/* SPDX-License-Identifier: MIT */
/*
 * The data-mover seam of the iSCSI transport. Login, text keys, sessions, CmdSN ordering, task
 * management and SCSI handling are shared; a data mover only moves bytes:
 *  - TCP (tcp.c): PDUs over a uv_tcp_t stream; Data-In, R2T and Data-Out are PDUs.
 *  - iSER (later): PDUs in RDMA SENDs; it will supply put_data/get_data to push Data-In with
 *    RDMA WRITE and pull Data-Out with RDMA READ instead of the PDU-based defaults.
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

struct scsitgt__iscsi_conn;
struct scsitgt__iscsi_task;

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
	 * Optional: move a command's Data-In and status (iSER: RDMA WRITE + SEND). NULL means
	 * Data-In PDUs over xmit (scsi.c).
	 */
	void (*put_data)(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_task *task);
	/*
	 * Optional: fetch a command's solicited Data-Out (iSER: RDMA READ), then call
	 * scsitgt__iscsi_task_data_done(). NULL means R2T PDUs over xmit (scsi.c).
	 */
	void (*get_data)(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_task *task);
};

#endif /* SCSITGT_ISCSI_DATAMOVER_H */
