/* SPDX-License-Identifier: MIT */
/* Connection counters of the iSCSI transport (scsitgt_iscsi_engine_foreach_conn, iscsi.h). */
#include <errno.h>
#include <string.h>

#include "transport/iscsi/conn.h"

SCSITGT_EXPORT int scsitgt_iscsi_engine_foreach_conn(struct scsitgt_engine *engine,
						     scsitgt_iscsi_conn_stats_cb cb, void *cb_arg)
{
	struct scsitgt__iscsi_engine *ie;
	struct scsitgt__list *p, *next;
	int rc;

	if (engine == NULL || cb == NULL)
		return -EINVAL;
	ie = engine->ext[SCSITGT__EXT_ISCSI].data;
	if (ie == NULL)
		return 0;
	/* Connections on workers (engine->conn_workers) come and go meanwhile: walk under the
	 * registry lock; their counters are read as they are at that moment. */
	if (engine->conn_workers)
		uv_mutex_lock(&ie->lock);
	rc = 0;
	for (p = ie->conns.next; p != &ie->conns && rc == 0; p = next) {
		struct scsitgt__iscsi_conn *conn =
			scsitgt__container_of(p, struct scsitgt__iscsi_conn, node);
		struct scsitgt__iscsi_sess *sess = conn->sess;
		struct scsitgt_iscsi_conn_stats s;

		next = p->next;
		memset(&s, 0, sizeof(s));
		s.size = sizeof(s);
		s.peer_addr = conn->peer;
		s.initiator_name = sess ? sess->initiator_name : "";
		s.target_name = sess && sess->tgt ? sess->tgt->name : "";
		s.cid = conn->cid;
		s.tsih = sess ? sess->tsih : 0;
		s.full_feature = conn->state == SCSITGT__CONN_FFP;
		s.discovery = sess ? sess->discovery : false;
		s.rx_pdus = conn->stat_rx_pdus;
		s.tx_pdus = conn->stat_tx_pdus;
		s.rx_bytes = conn->stat_rx_bytes;
		s.tx_bytes = conn->stat_tx_bytes;
		rc = cb(cb_arg, &s);
	}
	if (engine->conn_workers)
		uv_mutex_unlock(&ie->lock);
	return rc;
}
