/* SPDX-License-Identifier: MIT */
/* The process-wide read-only zero region (zero_region.h). */
#include <pthread.h>
#include <sys/mman.h>

#include "backend/zero_region.h"

/* The largest transfer the core accepts (core.h SCSITGT__MAX_XFER_BYTES); address space only. */
#define ZERO_REGION_BYTES ((size_t)8 << 20)

static pthread_once_t zero_once = PTHREAD_ONCE_INIT;
static const void *zero_base;

static void zero_map(void)
{
	void *p = mmap(NULL, ZERO_REGION_BYTES, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	zero_base = p == MAP_FAILED ? NULL : p;
}

const void *scsitgt__zero_region(size_t len)
{
	if (len > ZERO_REGION_BYTES)
		return NULL;
	pthread_once(&zero_once, zero_map);
	return zero_base;
}
