/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's HTTP metrics listener (metrics = ADDRESS:PORT in [engine]; docs/scsitgtd.md,
 * "Metrics"): GET /metrics answers the counters in the Prometheus text format, on the home
 * loop. Built with json-c only (the format is made from the control socket's "stats").
 */
#ifndef SCSITGTD_METRICS_H
#define SCSITGTD_METRICS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "scsitgtd.h"

/* Connections served at once; more are closed at accept. */
#define SCSITGTD_METRICS_MAX_CONNS 16
/* How long a connection may live, from accept to the end of the answer (slow clients). */
#define SCSITGTD_METRICS_TIMEOUT_MS 10000

#ifdef SCSITGTD_HAVE_CONTROL
/* Listen on @addr (numeric) @port. 0 or a negative errno, @err saying why. */
int scsitgtd_metrics_start(struct scsitgtd *d, const char *addr, uint16_t port, char *err,
			   size_t err_size);
/* Close the listener and every connection. Idempotent. */
void scsitgtd_metrics_stop(struct scsitgtd *d);
#else
static inline int scsitgtd_metrics_start(struct scsitgtd *d, const char *addr, uint16_t port,
					 char *err, size_t err_size)
{
	(void)d;
	(void)addr;
	(void)port;
	snprintf(err, err_size, "scsitgtd was built without json-c: no metrics listener");
	return -ENOTSUP;
}

static inline void scsitgtd_metrics_stop(struct scsitgtd *d)
{
	(void)d;
}
#endif

#endif /* SCSITGTD_METRICS_H */
