/*
 * list.h — intrusive circular doubly-linked lists (the Linux kernel's shape).
 * An empty list's head points at itself; nodes are embedded in their owners.
 */
#ifndef NFSCACHED_LIST_H
#define NFSCACHED_LIST_H

#include <stddef.h>

#include "common/macros.h"

struct list_node {
	struct list_node *next, *prev;
};

#define LIST_INIT(name) { &(name), &(name) }

static inline void list_init(struct list_node *h)
{
	h->next = h->prev = h;
}

static inline int list_empty(const struct list_node *h)
{
	return h->next == h;
}

static inline void list_insert_between(struct list_node *n, struct list_node *prev,
				       struct list_node *next)
{
	n->next = next;
	n->prev = prev;
	prev->next = n;
	next->prev = n;
}

static inline void list_add_tail(struct list_node *h, struct list_node *n)
{
	list_insert_between(n, h->prev, h);
}

static inline void list_add_head(struct list_node *h, struct list_node *n)
{
	list_insert_between(n, h, h->next);
}

/* Unlink `n` and leave it self-linked, so a second list_del is harmless. */
static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)

#define list_first(h, type, member) \
	(list_empty(h) ? NULL : list_entry((h)->next, type, member))

/* Iterate allowing the current node to be removed. */
#define list_for_each_safe(pos, tmp, h) \
	for ((pos) = (h)->next, (tmp) = (pos)->next; (pos) != (h); (pos) = (tmp), (tmp) = (pos)->next)

#endif
