/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's management socket (docs/scsitgtd.md, "Control socket"): JSON-RPC 2.0 over a unix
 * stream socket, one JSON object per line in each direction, served on the home loop. Built
 * only with json-c; without it a configuration that asks for a socket is refused at start.
 */
#ifndef SCSITGTD_CONTROL_H
#define SCSITGTD_CONTROL_H

#include <errno.h>
#include <stdio.h>

#include "scsitgtd.h"

/* Longest request line a connection may send (bytes, newline included). */
#define SCSITGTD_CONTROL_MAX_REQUEST (64u * 1024u)

/* JSON-RPC 2.0 error codes: the reserved ones (spec §5.1) and ours (-32000..-32099). */
enum {
	SCSITGTD_RPC_PARSE_ERROR = -32700,
	SCSITGTD_RPC_INVALID_REQUEST = -32600,
	SCSITGTD_RPC_METHOD_NOT_FOUND = -32601,
	SCSITGTD_RPC_INVALID_PARAMS = -32602,
	SCSITGTD_RPC_INTERNAL_ERROR = -32603,
	SCSITGTD_RPC_NOT_FOUND = -32001,      /* no such target, LUN, session, ACL entry */
	SCSITGTD_RPC_FAILED = -32002,	      /* the library refused; data: its message */
	SCSITGTD_RPC_CONFIG_INVALID = -32003, /* reload: the file is wrong (message: FILE:LINE) */
	SCSITGTD_RPC_EXISTS = -32004,	      /* add_*: already there */
};

#ifdef SCSITGTD_HAVE_CONTROL
/*
 * Listen on @path (mode 0600, made under umask 0177). A stale socket there (nobody accepts) is
 * removed; a live one, or anything that is not a socket, makes this fail. 0 or a negative
 * errno, @err saying why.
 */
int scsitgtd_control_start(struct scsitgtd *d, const char *path, char *err, size_t err_size);
/*
 * Handle one request line (@len bytes, no newline): the JSON-RPC response to send, or NULL for
 * a notification (or when out of memory). The caller puts the object. Home loop.
 */
struct json_object;
struct json_object *scsitgtd_control_handle(struct scsitgtd *d, const char *line, size_t len);
/* The result of the "stats" method (also what the metrics listener formats). Home loop. */
struct json_object *scsitgtd_control_stats(struct scsitgtd *d);
/* Close the socket and every connection, remove the path. Idempotent. */
void scsitgtd_control_stop(struct scsitgtd *d);
#else
static inline int scsitgtd_control_start(struct scsitgtd *d, const char *path, char *err,
					 size_t err_size)
{
	(void)d;
	(void)path;
	snprintf(err, err_size, "scsitgtd was built without json-c: no control socket");
	return -ENOTSUP;
}

static inline void scsitgtd_control_stop(struct scsitgtd *d)
{
	(void)d;
}
#endif

#endif /* SCSITGTD_CONTROL_H */
