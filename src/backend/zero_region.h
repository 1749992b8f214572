/* SPDX-License-Identifier: MIT */
/*
 * One read-only region of zeros for the whole process, lent as the data of READs that return
 * zeros (the null backend, never-written RAM chunks). It is an anonymous PROT_READ mapping, so
 * every page of it is the kernel's shared zero page: it costs no memory, and the kernel's
 * copy into the socket reads one cache-hot page again and again.
 */
#ifndef SCSITGT_BACKEND_ZERO_REGION_H
#define SCSITGT_BACKEND_ZERO_REGION_H

#include <stddef.h>

/* At least @len zero bytes that never change, or NULL (too long, or no mapping). Thread-safe. */
const void *scsitgt__zero_region(size_t len);

#endif /* SCSITGT_BACKEND_ZERO_REGION_H */
