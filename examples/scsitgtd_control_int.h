/* SPDX-License-Identifier: MIT */
/*
 * Internals of scsitgtd's management socket, shared by its parts: scsitgtd_control.c (the
 * socket, its connections, JSON-RPC framing and dispatch, answers that wait),
 * scsitgtd_control_show.c (the methods that read state: show, stats) and
 * scsitgtd_control_change.c (the methods that change it: kick, reload, LUNs, access lists,
 * save). Not used by the rest of the daemon (scsitgtd_control.h).
 */
#ifndef SCSITGTD_CONTROL_INT_H
#define SCSITGTD_CONTROL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "scsitgtd_control.h"

struct ctl_conn;

/* A method's outcome: a result, or an error code and message. */
struct rpc_reply {
	json_object *result;
	int code;
	char message[SCSITGTD_ERR_SIZE]; /* a reload lists every error of the file */
	/* The connection, when the method may answer later (add_lun: set wait_lun, wait_tname
	 * and deferred; reload: wait_reload and deferred); NULL otherwise (a notification, the
	 * fuzz target). */
	struct ctl_conn *conn;
	bool deferred;
	bool wait_reload; /* a reload waiting for its RBD images, else add_lun's wait_lun */
	uint64_t wait_lun;
	char wait_tname[256];
};

/* Set @r's error. */
void rpc_error(struct rpc_reply *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : json_object_new_null();
}

static inline json_object *ju64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* A string member of @params, or NULL (then @r holds the error). */
const char *param_str(json_object *params, const char *name, struct rpc_reply *r);
/* The running target named by params.target (and its configuration), or NULL. */
struct scsitgt_target *param_target(struct scsitgtd *d, json_object *params,
				    const struct scsitgtd_target **conf, struct rpc_reply *r);

/* ---- scsitgtd_control_show.c ---- */

void ctl_show(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_stats(struct scsitgtd *d, json_object *params, struct rpc_reply *r);

/* ---- scsitgtd_control_change.c ---- */

void ctl_kick(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_reload(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_add_lun(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_remove_lun(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_add_initiator(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_remove_initiator(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_add_address(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
void ctl_remove_address(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
#ifndef SCSITGTD_CONTROL_NO_SAVE
void ctl_save(struct scsitgtd *d, json_object *params, struct rpc_reply *r);
#endif
/*
 * The answer to a reload once the file is applied: {"reloaded": FILE, "failed": [{target, id,
 * error}], "opening"?: [{target, id}]}, the LUNs of the file that do not run.
 */
void ctl_reload_answer(struct scsitgtd *d, struct rpc_reply *r);
/* Whether the running configuration has LUN @id of @tname. */
bool ctl_lun_configured(struct scsitgtd *d, const char *tname, uint64_t id);
/* Remove LUN @id of target @tname from a copy of the configuration and apply it. */
bool ctl_lun_drop(struct scsitgtd *d, const char *tname, uint64_t id, struct rpc_reply *r);
/*
 * The answer to add_lun of LUN @id of @tname once it was applied: added, still opening (its
 * RBD image), or not created (then taken out again if @drop, as if never asked, with the
 * reason).
 */
void ctl_add_lun_answer(struct scsitgtd *d, const char *tname, uint64_t id, bool drop,
			struct rpc_reply *r);

#endif /* SCSITGTD_CONTROL_INT_H */
