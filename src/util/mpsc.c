/* SPDX-License-Identifier: MIT */
#include <stddef.h>

#include "util/mpsc.h"

void scsitgt__mpsc_init(struct scsitgt__mpsc *q)
{
	atomic_init(&q->head, NULL);
}

_Bool scsitgt__mpsc_push(struct scsitgt__mpsc *q, struct scsitgt__mpsc_node *node)
{
	struct scsitgt__mpsc_node *old = atomic_load_explicit(&q->head, memory_order_relaxed);

	do {
		node->next = old;
	} while (!atomic_compare_exchange_weak_explicit(&q->head, &old, node, memory_order_release,
							memory_order_relaxed));
	return old == NULL;
}

struct scsitgt__mpsc_node *scsitgt__mpsc_take_all(struct scsitgt__mpsc *q)
{
	struct scsitgt__mpsc_node *n =
		atomic_exchange_explicit(&q->head, NULL, memory_order_acquire);
	struct scsitgt__mpsc_node *rev = NULL;

	/* The stack holds newest first; reverse it so completions run in arrival order. */
	while (n) {
		struct scsitgt__mpsc_node *next = n->next;
		n->next = rev;
		rev = n;
		n = next;
	}
	return rev;
}
