/* SPDX-License-Identifier: MIT */
/* The engine's event callback (include/libscsitgt/events.h) and the internal emitters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fabric.h"
#include "core/stats.h"
#include "core/worker.h"

SCSITGT_EXPORT int scsitgt_engine_set_event_cb(struct scsitgt_engine *engine, scsitgt_event_cb cb,
					       void *cb_arg)
{
	SCSITGT__ASSERT_HOME(engine);
	if (engine == NULL)
		return -EINVAL;
	engine->event_cb = cb;
	engine->event_arg = cb ? cb_arg : NULL;
	return 0;
}

SCSITGT_EXPORT const char *scsitgt_event_type_name(enum scsitgt_event_type type)
{
	switch (type) {
	case SCSITGT_EVENT_SESSION_LOGIN:
		return "session-login";
	case SCSITGT_EVENT_SESSION_LOGOUT:
		return "session-logout";
	case SCSITGT_EVENT_RESERVATION_CHANGED:
		return "reservation-changed";
	case SCSITGT_EVENT_ALUA_STATE_CHANGED:
		return "alua-state-changed";
	case SCSITGT_EVENT_LUN_ERROR:
		return "lun-error";
	case SCSITGT_EVENT_LUN_OFFLINE:
		return "lun-offline";
	case SCSITGT_EVENT_LUN_ONLINE:
		return "lun-online";
	case SCSITGT_EVENT_LOGIN_FAILED:
		return "login-failed";
	case SCSITGT_EVENT_TMF:
		return "tmf";
	case SCSITGT_EVENT_CONNECTION_ERROR:
		return "connection-error";
	}
	return "unknown";
}

/* An event raised on a worker loop, on its way to the home loop with copies of its strings. */
struct event_post {
	struct scsitgt__msg msg;
	struct scsitgt_engine *engine;
	struct scsitgt_event ev;
	char strs[];
};

static void event_post_fn(struct scsitgt__msg *msg)
{
	struct event_post *p = scsitgt__container_of(msg, struct event_post, msg);
	struct scsitgt_target *tgt = p->ev.target;

	scsitgt__event_emit(p->engine, &p->ev);
	free(p);
	/* Last: this may let the target's destruction go on. */
	if (tgt)
		scsitgt__target_event_unref(tgt);
}

/* Copy the string *@s points to into @buf at *@off (when @buf), and point *@s at the copy. */
static size_t event_str(const char **s, char *buf, size_t off)
{
	size_t n = *s ? strlen(*s) + 1 : 0;

	if (buf && n) {
		memcpy(buf + off, *s, n);
		*s = buf + off;
	}
	return n;
}

/*
 * Post @ev to the home loop (events are delivered there, docs/threading.md). Its strings are
 * copied. Its target is kept from being freed until the delivery (tgt->ev_refs): the caller
 * knows it alive now (the event's nexus is of that target, or a login found it under
 * engine->cfg_lock), but home may destroy it before it gets to the message. Its LUN needs no
 * reference: a LUN this loop names is one of its commands' (held) or one it found in the
 * published table (ahead of the removal's drain message on this loop); either way this
 * loop's report that lets the LUN go is posted to home after this message, and home runs
 * them in order.
 */
static void event_post_home(struct scsitgt_engine *engine, const struct scsitgt_event *ev)
{
	struct scsitgt_event e = *ev;
	struct event_post *p;
	size_t n = 0;

	n += event_str(&e.initiator_name, NULL, 0);
	n += event_str(&e.initiator_port, NULL, 0);
	n += event_str(&e.initiator_addr, NULL, 0);
	n += event_str(&e.reason, NULL, 0);
	n += event_str(&e.target_name, NULL, 0);
	p = malloc(sizeof(*p) + n);
	if (p == NULL)
		return; /* events are news, not state: one lost is no harm to the engine */
	p->engine = engine;
	p->msg.fn = event_post_fn;
	n = 0;
	n += event_str(&e.initiator_name, p->strs, n);
	n += event_str(&e.initiator_port, p->strs, n);
	n += event_str(&e.initiator_addr, p->strs, n);
	n += event_str(&e.reason, p->strs, n);
	event_str(&e.target_name, p->strs, n);
	p->ev = e;
	if (e.target)
		scsitgt__target_event_ref(e.target);
	scsitgt__engine_post(engine, &p->msg);
}

void scsitgt__event_emit(struct scsitgt_engine *engine, struct scsitgt_event *ev)
{
	if (engine == NULL)
		return;
	if (engine->conn_workers && !scsitgt__engine_on_home(engine)) {
		event_post_home(engine, ev);
		return;
	}
	if (engine->event_cb == NULL)
		return;
	ev->size = sizeof(*ev);
	engine->event_cb(engine->event_arg, ev);
}

void scsitgt__event_session(struct scsitgt__session *sess, enum scsitgt_event_type type,
			    const char *addr)
{
	struct scsitgt_event ev;

	if (addr)
		snprintf(sess->initiator_addr, sizeof(sess->initiator_addr), "%s", addr);
	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.target = sess->tgt;
	ev.initiator_name = sess->initiator_name;
	ev.initiator_port = sess->initiator_port;
	ev.initiator_addr = sess->initiator_addr;
	scsitgt__event_emit(sess->tgt->engine, &ev);
}

void scsitgt__event_tmf(struct scsitgt__session *sess, struct scsitgt_lun *lun, uint64_t lun_id,
			uint8_t function)
{
	struct scsitgt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = SCSITGT_EVENT_TMF;
	ev.target = sess->tgt;
	ev.lun = lun;
	ev.lun_id = lun_id;
	ev.initiator_name = sess->initiator_name;
	ev.initiator_port = sess->initiator_port;
	ev.initiator_addr = sess->initiator_addr;
	ev.tmf_function = function;
	scsitgt__event_emit(sess->tgt->engine, &ev);
}

void scsitgt__event_login_failed(struct scsitgt_engine *engine, struct scsitgt_target *tgt,
				 const char *initiator_name, const char *target_name,
				 const char *addr, uint16_t status, const char *reason)
{
	struct scsitgt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = SCSITGT_EVENT_LOGIN_FAILED;
	ev.target = tgt;
	ev.initiator_name = initiator_name;
	ev.target_name = target_name;
	ev.initiator_addr = addr ? addr : "";
	ev.login_status = status;
	ev.reason = reason;
	scsitgt__event_emit(engine, &ev);
}

void scsitgt__event_conn_error(struct scsitgt_engine *engine, struct scsitgt__session *sess,
			       struct scsitgt_target *tgt, const char *addr, uint8_t kind,
			       const char *reason)
{
	struct scsitgt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = SCSITGT_EVENT_CONNECTION_ERROR;
	ev.target = sess ? sess->tgt : tgt;
	if (sess) {
		ev.initiator_name = sess->initiator_name;
		ev.initiator_port = sess->initiator_port;
	}
	ev.initiator_addr = addr ? addr : "";
	ev.conn_error = kind;
	ev.reason = reason;
	scsitgt__event_emit(engine, &ev);
}

void scsitgt__event_lun_state(struct scsitgt_lun *lun, enum scsitgt_event_type type)
{
	struct scsitgt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.target = lun->tgt;
	ev.lun = lun;
	ev.lun_id = lun->id;
	scsitgt__event_emit(lun->tgt->engine, &ev);
}

void scsitgt__event_alua_changed(struct scsitgt_target *tgt, struct scsitgt_lun *lun,
				 uint16_t group, uint8_t old_state, uint8_t new_state)
{
	struct scsitgt_event ev;

	if (tgt == NULL && lun)
		tgt = lun->tgt;
	if (tgt == NULL)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.type = SCSITGT_EVENT_ALUA_STATE_CHANGED;
	ev.target = tgt;
	ev.lun = lun;
	ev.lun_id = lun ? lun->id : 0;
	ev.alua_group = group;
	ev.alua_old_state = old_state;
	ev.alua_new_state = new_state;
	scsitgt__event_emit(tgt->engine, &ev);
}
