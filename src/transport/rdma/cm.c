/* SPDX-License-Identifier: MIT */
/* rdma_cm event channel on the libuv loop. See rdma.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma/rdma.h"

static void cm_poll_cb(uv_poll_t *h, int status, int events)
{
	struct scsitgt__rdma_cm *cm = h->data;

	(void)events;
	if (status < 0)
		return;
	for (;;) {
		struct scsitgt__rdma_cm_event ev;
		struct rdma_cm_event *e;
		struct scsitgt__rdma_cm_handler *hd;

		if (rdma_get_cm_event(cm->ch, &e) != 0)
			break; /* EAGAIN: the channel is non-blocking */
		memset(&ev, 0, sizeof(ev));
		ev.type = e->event;
		ev.status = e->status;
		ev.id = e->id;
		ev.listen_id = e->listen_id;
		if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
		    e->event == RDMA_CM_EVENT_ESTABLISHED) {
			size_t n = e->param.conn.private_data_len;

			ev.conn = e->param.conn;
			if (n > SCSITGT__RDMA_PRIV_MAX)
				n = SCSITGT__RDMA_PRIV_MAX;
			if (e->param.conn.private_data && n)
				memcpy(ev.priv, e->param.conn.private_data, n);
			ev.conn.private_data = ev.priv;
			ev.conn.private_data_len = (uint8_t)n;
		}
		/* Acknowledge first: handlers may then destroy the id without deadlocking. */
		rdma_ack_cm_event(e);
		hd = ev.id ? ev.id->context : NULL;
		if (hd && hd->event)
			hd->event(hd, &ev);
	}
}

int scsitgt__rdma_cm_open(struct scsitgt__rdma_cm *cm, uv_loop_t *loop)
{
	int flags, rc;

	cm->ch = rdma_create_event_channel();
	if (cm->ch == NULL)
		return errno ? -errno : -ENODEV;
	flags = fcntl(cm->ch->fd, F_GETFL);
	if (flags < 0 || fcntl(cm->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		rc = -errno;
		rdma_destroy_event_channel(cm->ch);
		return rc;
	}
	rc = uv_poll_init(loop, &cm->poll, cm->ch->fd);
	if (rc == 0)
		rc = uv_poll_start(&cm->poll, UV_READABLE, cm_poll_cb);
	if (rc < 0) {
		rdma_destroy_event_channel(cm->ch);
		return rc;
	}
	cm->poll.data = cm;
	return 0;
}

static void cm_poll_closed(uv_handle_t *h)
{
	struct scsitgt__rdma_cm *cm = h->data;

	rdma_destroy_event_channel(cm->ch);
	cm->ch = NULL;
	if (cm->closed)
		cm->closed(cm);
}

void scsitgt__rdma_cm_close(struct scsitgt__rdma_cm *cm, void (*closed)(struct scsitgt__rdma_cm *))
{
	cm->closed = closed;
	uv_poll_stop(&cm->poll);
	uv_close((uv_handle_t *)&cm->poll, cm_poll_closed);
}

int scsitgt__rdma_cm_listen(struct scsitgt__rdma_cm *cm, struct scsitgt__rdma_cm_handler *h,
			    const struct sockaddr_storage *sa, bool wildcard, int backlog,
			    struct rdma_cm_id **out)
{
	struct rdma_cm_id *id = NULL;
	int rc = 0;

	if (rdma_create_id(cm->ch, &id, h, RDMA_PS_TCP) != 0)
		rc = errno ? -errno : -ENODEV;
	else if (rdma_bind_addr(id, (struct sockaddr *)sa) != 0)
		rc = errno ? -errno : -EADDRNOTAVAIL;
	else if (id->verbs == NULL && !wildcard)
		rc = -ENODEV; /* the address is not on an RDMA device */
	else if (rdma_listen(id, backlog) != 0)
		rc = errno ? -errno : -EIO;
	if (rc < 0) {
		if (id)
			rdma_destroy_id(id);
		return rc;
	}
	*out = id;
	return 0;
}

const char *scsitgt__rdma_cm_event_name(enum rdma_cm_event_type t)
{
	return rdma_event_str(t);
}
