/* SPDX-License-Identifier: MIT */
/*
 * A host backend for contract tests: it counts every callback, records what each io looked
 * like through the public accessors, and completes ios synchronously, from another thread, or
 * not at all until the test says so.
 */
#ifndef TESTS_UNIT_API_PROBE_BACKEND_H
#define TESTS_UNIT_API_PROBE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "libscsitgt/backend.h"

enum probe_mode {
	PROBE_SYNC,   /* complete inside submit() with probe->status */
	PROBE_SENSE,  /* complete inside submit() with probe->sense_* */
	PROBE_THREAD, /* complete from a new thread with scsitgt_io_complete_threadsafe() */
	PROBE_HOLD,   /* keep the io in probe->held[] for the test to complete */
};

#define PROBE_MAX_HELD 64

struct probe {
	/* Behaviour. */
	int open_rc;
	uint32_t open_block_size; /* written into the geometry when not 0 */
	uint64_t open_num_blocks; /* written into the geometry when not 0 */
	bool supports_unmap;
	enum probe_mode mode;
	int status;
	uint8_t sense_key, sense_asc, sense_ascq;

	/* Counters. */
	unsigned int open_calls, close_calls, submit_calls, supports_calls;

	/* The last io as the accessors showed it in submit(). */
	enum scsitgt_io_type type;
	uint64_t lba;
	uint32_t num_blocks;
	uint32_t block_size;
	/* The first iovecs (the array itself is lent only until completion). */
	struct iovec iov[4];
	int iovcnt;
	uint32_t flags;
	/* scsitgt_io_get_lba_extents(): the array and its size (NULL and 0 for other types). */
	struct scsitgt_lba_extent *ext;
	size_t next;
	void *ctx;
	bool ctx_zeroed;
	struct scsitgt_lun *lun;
	uv_loop_t *loop;

	/* Held ios (PROBE_HOLD) and completion threads (PROBE_THREAD). */
	struct scsitgt_io *held[PROBE_MAX_HELD];
	unsigned int nheld;
	uv_thread_t threads[PROBE_MAX_HELD];
	unsigned int nthreads;
};

/* Bytes of io_ctx the probe asks for when it wants one. */
#define PROBE_CTX_SIZE 24

/* A complete ops table (size = sizeof), with io_ctx_size PROBE_CTX_SIZE if @with_ctx. */
struct scsitgt_backend_ops probe_ops(bool with_ctx);

/* Join the completion threads started so far. */
void probe_join(struct probe *p);

#endif /* TESTS_UNIT_API_PROBE_BACKEND_H */
