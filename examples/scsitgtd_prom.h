/* SPDX-License-Identifier: MIT */
/* The "stats" result in the Prometheus text exposition format (scsitgtd_prom.c). */
#ifndef SCSITGTD_PROM_H
#define SCSITGTD_PROM_H

#include <stdio.h>

#include <json-c/json.h>

/*
 * Write @stats (the result object of the control socket's "stats" method: targets with their
 * LUNs and sessions, connections) to @f as Prometheus text: LUN and session counters as
 * counters ending in _total, in-flight commands as a gauge, latency as a histogram in seconds.
 */
void scsitgtd_prom_write(json_object *stats, FILE *f);

#endif /* SCSITGTD_PROM_H */
