/* SPDX-License-Identifier: MIT */
/* Intrusive circular doubly linked list. */
#ifndef SCSITGT_UTIL_LIST_H
#define SCSITGT_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct scsitgt__list {
	struct scsitgt__list *next;
	struct scsitgt__list *prev;
};

#define scsitgt__container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void scsitgt__list_init(struct scsitgt__list *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool scsitgt__list_empty(const struct scsitgt__list *head)
{
	return head->next == head;
}

static inline void scsitgt__list_add_tail(struct scsitgt__list *head, struct scsitgt__list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void scsitgt__list_remove(struct scsitgt__list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->next = node;
	node->prev = node;
}

/* Iterate; the body may remove the current node (the next one is fetched first). */
#define scsitgt__list_foreach_safe(pos, tmp, head)                       \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif /* SCSITGT_UTIL_LIST_H */
