/* SPDX-License-Identifier: MIT */
/*
 * How long the shared PR copy of an RBD LUN may trust its watch (rbd_pr.c): the OSD's
 * osd_client_watch_timeout, asked of this client's configuration and of the OSD that holds
 * the watch, less the slack the loop's checks need (docs/rbd.md). Blocking: worker thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/rbd_int.h"

/* The number (or the string holding one) after "@key": in JSON @out of @len bytes; -1 when
 * there is none. */
static double json_number(const char *out, size_t len, const char *key)
{
	char buf[4096], pat[96];
	const char *p;
	char *end;
	double v;

	if (out == NULL || len == 0)
		return -1;
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, out, len);
	buf[len] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(buf, pat);
	if (p == NULL)
		return -1;
	p += strlen(pat);
	p += strspn(p, " \t\r\n");
	if (*p++ != ':')
		return -1;
	p += strspn(p, " \t\r\n\"");
	v = strtod(p, &end);
	return end == p ? -1 : v;
}

/*
 * Worker (blocking, bounded by rados_mon_op_timeout / rados_osd_op_timeout): the
 * osd_client_watch_timeout the OSD that holds the watch runs with: the object's acting
 * primary ("osd map" to a monitor), asked as `ceph tell osd.N config get` asks
 * (rados_osd_command()). The monitors' configuration database cannot tell: it misses what the
 * OSDs' own ceph.conf sets (micro-ceph's -w: the database said 30, the OSD 5). Returns the
 * value in seconds, or a negative errno when it cannot be asked (a client without the caps
 * for OSD commands, a pool name that would need quoting, a cluster that does not answer).
 */
static double osd_watch_timeout(struct scsitgt__rbd_ctx *rc, const char *oid, int *primary)
{
	const char *ns = rc->pool_namespace ? rc->pool_namespace : "";
	char cmd[512], *out = NULL, *outs = NULL;
	const char *argv[1] = { cmd };
	size_t outlen = 0, outslen = 0;
	double v;
	int r;

	*primary = -1;
	if (strpbrk(rc->pool, "\"\\") || strpbrk(ns, "\"\\") || strpbrk(oid, "\"\\"))
		return -EINVAL;
	snprintf(cmd, sizeof(cmd),
		 "{\"prefix\": \"osd map\", \"pool\": \"%s\", \"object\": \"%s\", "
		 "\"nspace\": \"%s\", \"format\": \"json\"}",
		 rc->pool, oid, ns);
	r = rados_mon_command(rc->cluster, argv, 1, "", 0, &out, &outlen, &outs, &outslen);
	v = r < 0 ? -1 : json_number(out, outlen, "acting_primary");
	rados_buffer_free(out);
	rados_buffer_free(outs);
	if (r < 0)
		return r;
	if (v < 0 || v > 1e6)
		return -EPROTO;
	*primary = (int)v;
	out = outs = NULL;
	snprintf(cmd, sizeof(cmd),
		 "{\"prefix\": \"config get\", \"var\": \"osd_client_watch_timeout\"}");
	r = rados_osd_command(rc->cluster, *primary, argv, 1, "", 0, &out, &outlen, &outs,
			      &outslen);
	v = r < 0 ? -1 : json_number(out, outlen, "osd_client_watch_timeout");
	rados_buffer_free(out);
	rados_buffer_free(outs);
	if (r < 0)
		return r;
	return v > 0 ? v : -EPROTO;
}

/*
 * Worker: the age past which a watch on @oid may be gone at the OSD, in ms. osd_client_watch_timeout is the
 * OSD's option; this client reads it from its own configuration (ceph.conf, and what the
 * monitors hold for every daemon or for clients), which misses a value set for the OSDs
 * alone, so the OSD that holds the watch is asked too (osd_watch_timeout()) and the smaller
 * of the two is used; a difference is logged (docs/rbd.md). Asked at attach only: a watch
 * that moves to another primary later keeps the bound. The OSD keeps a watch at
 * least the timeout after the last ping it received, which was sent no earlier than the age
 * counts from; the check may see the age up to @check_ms late and the loop may be late too:
 * an eighth of the timeout, at least two checks, is left for that (5 s: 4 s; Ceph's 30 s:
 * 26.25 s). 0 (no check) when the timeout is unknown. A ping interval (objecter_tick_interval)
 * that is not well below the bound lets the OSD drop healthy watches between pings, and makes
 * this check call the copy stale at every ping: logged.
 */
uint64_t scsitgt__rbd_pr_stale_bound(struct scsitgt__rbd_ctx *rc, const char *oid,
				     uint64_t check_ms)
{
	char buf[64];
	uint64_t stale_ms = 0;
	double timeout_s = 0, tick_s = 0, osd_s;
	int primary;

	if (rados_conf_get(rc->cluster, "osd_client_watch_timeout", buf, sizeof(buf)) == 0)
		timeout_s = strtod(buf, NULL);
	osd_s = osd_watch_timeout(rc, oid, &primary);
	if (osd_s < 0) {
		scsitgt__log(&rc->log, SCSITGT_LOG_NOTICE, SCSITGT__RBD_SUBSYS,
			     "%s/%s: cannot ask the OSD that holds the watch (%s%d) for its "
			     "osd_client_watch_timeout: %s; using this client's, %.3g s",
			     rc->pool, oid, primary < 0 ? "no primary: " : "osd.", primary,
			     strerror((int)-osd_s), timeout_s);
	} else if (osd_s != timeout_s) {
		scsitgt__log(&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			     "%s/%s: osd_client_watch_timeout is %.3g s on osd.%d, %.3g s in this "
			     "client's configuration: using %.3g s (set it for the whole cluster)",
			     rc->pool, oid, osd_s, primary, timeout_s,
			     timeout_s > 0 && timeout_s < osd_s ? timeout_s : osd_s);
		if (timeout_s <= 0 || osd_s < timeout_s)
			timeout_s = osd_s;
	}
	if (rados_conf_get(rc->cluster, "objecter_tick_interval", buf, sizeof(buf)) == 0)
		tick_s = strtod(buf, NULL);
	if (timeout_s > 0) {
		uint64_t t = (uint64_t)(timeout_s * 1000), slack = t / 8;

		if (slack < 2 * check_ms)
			slack = 2 * check_ms;
		stale_ms = t > slack ? t - slack : 0;
	}
	if (stale_ms && tick_s * 1000 >= (double)stale_ms)
		scsitgt__log(
			&rc->log, SCSITGT_LOG_WARNING, SCSITGT__RBD_SUBSYS,
			"%s/%s: objecter_tick_interval %.3g s, osd_client_watch_timeout %.3g s: "
			"the watch is pinged too rarely to stay confirmed within %" PRIu64
			" ms: it will often be called stale and renewed, and commands meanwhile "
			"get BUSY (set objecter_tick_interval to a quarter of the timeout or less)",
			rc->pool, oid, tick_s, timeout_s, stale_ms);
	return stale_ms;
}
