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

/* ---- registered buffer memory for command data (see rdma.h) ---- */

/* 4 KiB units; blocks up to 2^12 units = 16 MiB (MaxBurstLength is below 16 MiB). */
#define MEM_UNIT_SHIFT 12u

static void mem_check_gone(struct scsitgt__rdma_mem *m)
{
	struct scsitgt__rdma_dev *dev = m->dev;

	if (m->owned || m->users || m->bp.live_blocks)
		return;
	ibv_dereg_mr(m->mr);
	scsitgt__bufpool_fini(&m->bp);
	free(m->mem);
	free(m);
	scsitgt__rdma_dev_put(dev);
}

int scsitgt__rdma_mem_create(struct scsitgt__rdma_mem **out, struct scsitgt__rdma_dev *dev,
			     size_t bytes, int access)
{
	struct scsitgt__rdma_mem *m;
	int rc;

	bytes &= ~(((size_t)1 << MEM_UNIT_SHIFT) - 1);
	if (bytes == 0)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	if (posix_memalign((void **)&m->mem, (size_t)1 << MEM_UNIT_SHIFT, bytes) != 0) {
		free(m);
		return -ENOMEM;
	}
	rc = scsitgt__bufpool_init(&m->bp, m->mem, bytes, MEM_UNIT_SHIFT,
				   SCSITGT__BUFPOOL_MAX_ORDER);
	if (rc < 0) {
		free(m->mem);
		free(m);
		return rc;
	}
	errno = 0;
	m->mr = ibv_reg_mr(dev->pd, m->mem, bytes, access);
	if (m->mr == NULL) {
		rc = errno ? -errno : -ENOMEM;
		scsitgt__bufpool_fini(&m->bp);
		free(m->mem);
		free(m);
		return rc;
	}
	m->size = bytes;
	m->dev = dev;
	m->owned = true;
	scsitgt__rdma_dev_hold(dev);
	*out = m;
	return 0;
}

void scsitgt__rdma_mem_put(struct scsitgt__rdma_mem *m)
{
	m->owned = false;
	mem_check_gone(m);
}

void scsitgt__rdma_mem_use(struct scsitgt__rdma_mem *m)
{
	if (m)
		m->users++;
}

void scsitgt__rdma_mem_unuse(struct scsitgt__rdma_mem *m)
{
	if (m == NULL)
		return;
	m->users--;
	mem_check_gone(m);
}

void *scsitgt__rdma_mem_alloc(struct scsitgt__rdma_mem *m, size_t size, size_t *cap)
{
	return scsitgt__bufpool_alloc(&m->bp, size, cap);
}

void scsitgt__rdma_mem_free(struct scsitgt__rdma_mem *m, void *p)
{
	if (scsitgt__bufpool_free(&m->bp, p) == 0)
		mem_check_gone(m);
}

bool scsitgt__rdma_mem_lookup(const struct scsitgt__rdma_mem *m, const void *p, size_t len,
			      uint32_t *lkey)
{
	if (m == NULL || !scsitgt__bufpool_owns(&m->bp, p, len))
		return false;
	*lkey = m->mr->lkey;
	return true;
}

int scsitgt__rdma_mem_hold(struct scsitgt__rdma_mem *m, const void *p)
{
	return scsitgt__bufpool_hold(&m->bp, p);
}

void scsitgt__rdma_mem_release(struct scsitgt__rdma_mem *m, const void *p)
{
	scsitgt__bufpool_release(&m->bp, p);
	mem_check_gone(m);
}
