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
	/*
	 * Connections on workers (engine->conn_workers) come and go, log in and close meanwhile:
	 * walk under the registry lock and read only what their loops published under it (the
	 * listed_* fields, the peer's address set before the connection was listed) and their
	 * counters, relaxed atomics, as they are at that moment.
	 */
	if (engine->conn_workers)
		uv_mutex_lock(&ie->lock);
	rc = 0;
	for (p = ie->conns.next; p != &ie->conns && rc == 0; p = next) {
		struct scsitgt__iscsi_conn *conn =
			scsitgt__container_of(p, struct scsitgt__iscsi_conn, node);
		struct scsitgt_iscsi_conn_stats s;

		next = p->next;
		memset(&s, 0, sizeof(s));
		s.size = sizeof(s);
		s.peer_addr = conn->peer;
		s.initiator_name = conn->iname;
		s.target_name = conn->listed_target;
		s.cid = conn->listed_cid;
		s.tsih = conn->listed_tsih;
		s.full_feature = conn->listed_ffp && !conn->listed_closing;
		s.discovery = conn->listed_discovery;
		s.rx_pdus = atomic_load_explicit(&conn->stat_rx_pdus, memory_order_relaxed);
		s.tx_pdus = atomic_load_explicit(&conn->stat_tx_pdus, memory_order_relaxed);
		s.rx_bytes = atomic_load_explicit(&conn->stat_rx_bytes, memory_order_relaxed);
		s.tx_bytes = atomic_load_explicit(&conn->stat_tx_bytes, memory_order_relaxed);
		rc = cb(cb_arg, &s);
	}
	if (engine->conn_workers)
		uv_mutex_unlock(&ie->lock);
	return rc;
}
