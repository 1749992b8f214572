/* SPDX-License-Identifier: MIT */
/*
 * Lock-free multi-producer, single-consumer queue: producers push on any thread with one
 * compare-and-swap; the consumer takes the whole batch at once and gets it in push order.
 */
#ifndef SCSITGT_UTIL_MPSC_H
#define SCSITGT_UTIL_MPSC_H

#include <stdatomic.h>

struct scsitgt__mpsc_node {
	struct scsitgt__mpsc_node *next;
};

struct scsitgt__mpsc {
	_Atomic(struct scsitgt__mpsc_node *) head;
};

void scsitgt__mpsc_init(struct scsitgt__mpsc *q);
/* Push a node. Returns true if the queue was empty (the consumer needs a wake-up). */
_Bool scsitgt__mpsc_push(struct scsitgt__mpsc *q, struct scsitgt__mpsc_node *node);
/* Take every queued node, oldest first, as a NULL-terminated chain. */
struct scsitgt__mpsc_node *scsitgt__mpsc_take_all(struct scsitgt__mpsc *q);

#endif /* SCSITGT_UTIL_MPSC_H */
