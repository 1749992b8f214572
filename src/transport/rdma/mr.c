/* SPDX-License-Identifier: MIT */
/* Registered buffer pool: one allocation, one registration, buffers by index. See rdma.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rdma/rdma.h"

int scsitgt__rdma_pool_init(struct scsitgt__rdma_pool *p, struct ibv_pd *pd, uint32_t count,
			    uint32_t buf_size, int access)
{
	size_t total;

	memset(p, 0, sizeof(*p));
	if (count == 0 || buf_size == 0 || (size_t)count > SIZE_MAX / buf_size)
		return -EINVAL;
	total = (size_t)count * buf_size;
	if (posix_memalign((void **)&p->mem, 4096, total) != 0)
		return -ENOMEM;
	p->free_stack = malloc(count * sizeof(*p->free_stack));
	if (p->free_stack == NULL) {
		free(p->mem);
		p->mem = NULL;
		return -ENOMEM;
	}
	p->mr = ibv_reg_mr(pd, p->mem, total, access);
	if (p->mr == NULL) {
		int rc = errno ? -errno : -ENOMEM;

		free(p->free_stack);
		free(p->mem);
		memset(p, 0, sizeof(*p));
		return rc;
	}
	p->buf_size = buf_size;
	p->count = count;
	for (uint32_t i = 0; i < count; i++)
		p->free_stack[i] = count - 1 - i;
	p->nfree = count;
	return 0;
}

void scsitgt__rdma_pool_destroy(struct scsitgt__rdma_pool *p)
{
	if (p->mr)
		ibv_dereg_mr(p->mr);
	free(p->free_stack);
	free(p->mem);
	memset(p, 0, sizeof(*p));
}

int scsitgt__rdma_pool_get(struct scsitgt__rdma_pool *p)
{
	if (p->nfree == 0)
		return -ENOBUFS;
	return (int)p->free_stack[--p->nfree];
}

void scsitgt__rdma_pool_put(struct scsitgt__rdma_pool *p, uint32_t idx)
{
	if (idx < p->count && p->nfree < p->count)
		p->free_stack[p->nfree++] = idx;
}
