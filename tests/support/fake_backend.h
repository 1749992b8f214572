/* SPDX-License-Identifier: MIT */
/*
 * A test backend built on the public ops table only: it records every io, keeps the data in
 * memory (optionally), fails ios on request with an errno or exact sense, and completes them
 * synchronously, later on the loop, on demand, or from another thread.
 */
#ifndef SCSITGT_TESTS_FAKE_BACKEND_H
#define SCSITGT_TESTS_FAKE_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "libscsitgt/scsitgt.h"

enum fake_mode {
	FAKE_SYNC,   /* complete inside submit() */
	FAKE_ASYNC,  /* complete from a uv timer on the loop */
	FAKE_MANUAL, /* hold until fake_backend_complete_pending() */
	FAKE_THREAD, /* complete from a new thread with scsitgt_io_complete_threadsafe() */
};

struct fake_backend_opts {
	uint32_t block_size; /* geometry answered by open() */
	uint64_t num_blocks;
	uint32_t geo_flags; /* SCSITGT_GEOMETRY_* */
	uint8_t phys_exp;
	uint32_t opt_blocks;
	uint32_t unmap_gran; /* geometry unmap_granularity_blocks */
	bool store;	     /* keep data (block_size * num_blocks bytes) */
	uint32_t supports;   /* (1u << SCSITGT_IO_x) the backend claims, READ/WRITE implied */
	bool no_supports_cb; /* leave ops.supports NULL */
	/* ops.flags without SCSITGT_BACKEND_ATOMIC_WRITE (a file-like backend): no WRITE ATOMIC. */
	bool no_atomic_write;
	enum fake_mode mode;
	uv_loop_t *loop; /* required for FAKE_ASYNC */
	/* Track mapped blocks (needs store): WRITE/WRITE ZEROES map, UNMAP deallocates and
	 * zeroes; answered through ops.get_lba_status. */
	bool lba_status;
	/* SCSITGT_IO_GET_LBA_STATUS answers (when claimed in supports): at most this many
	 * extents (0: the array's size), each at most lba_extent_blocks long (0: unbounded). */
	size_t lba_extent_max;
	uint64_t lba_extent_blocks;
};

struct fake_io_rec {
	enum scsitgt_io_type type;
	uint64_t lba;
	uint32_t num_blocks;
	uint32_t flags;
	int iovcnt;
	size_t bytes;
};

struct fake_backend {
	struct fake_backend_opts o;
	struct scsitgt_backend_ops ops;
	uint8_t *data;
	pthread_mutex_t lock;
	struct fake_io_rec *recs;
	size_t nrecs, recs_cap;
	/* Failure injection for the next fail_count ios (of the kinds in fail_types, a mask of
	 * (1u << SCSITGT_IO_x); 0: of any kind). */
	unsigned int fail_count;
	uint32_t fail_types;
	int fail_errno;
	bool fail_sense;
	uint8_t fail_key, fail_asc, fail_ascq;
	/* the failure names its first bad block (scsitgt_io_complete_at()), and with
	 * fail_partial says the blocks before it are written (scsitgt_io_complete_partial()) */
	bool fail_at, fail_partial;
	uint64_t fail_at_lba;
	/* Held ios (ASYNC, MANUAL). */
	struct scsitgt_io **pending;
	size_t npending, pending_cap;
	uv_timer_t timer;
	bool timer_used;
	pthread_t *threads;
	size_t nthreads, threads_cap;
	/* Set when close() ran (if not NULL); the backend is freed right after. */
	bool *closed_flag;
	/* close() arrived while fake_backend_complete_pending() was running: finish it there. */
	bool completing, close_deferred;
	/* One byte per block when o.lba_status: 1 mapped, 0 deallocated. */
	uint8_t *mapped;
	scsitgt_done_cb close_cb;
	void *close_cb_arg;
};

void fake_backend_opts_init(struct fake_backend_opts *o);
int fake_backend_create(struct fake_backend **out, const struct fake_backend_opts *o);
/* Create a LUN @id on @tgt backed by a new fake backend. On failure the backend is freed. */
int fake_backend_lun_create(struct scsitgt_lun **lun_out, struct fake_backend **fb_out,
			    struct scsitgt_target *tgt, uint64_t id, uint32_t lun_flags,
			    const struct fake_backend_opts *o);
/* The same with LUN options of the caller's (backend and backend_ctx are filled in). */
int fake_backend_lun_create_opts(struct scsitgt_lun **lun_out, struct fake_backend **fb_out,
				 struct scsitgt_target *tgt, const struct scsitgt_lun_opts *opts,
				 const struct fake_backend_opts *o);
/* Fail the next @count ios with @err (a negative errno). */
void fake_backend_fail_next(struct fake_backend *fb, int err, unsigned int count);
/* Fail the next @count ios of kind @type with @err; ios of other kinds go through. */
void fake_backend_fail_type(struct fake_backend *fb, enum scsitgt_io_type type, int err,
			    unsigned int count);
/* Fail the next io with exact sense data. */
/* Fail the next io of @type with @err at block @lba: a medium error there, the blocks before
 * it said to be written (@partial, scsitgt_io_complete_partial(): they are) or not
 * (scsitgt_io_complete_at(): none is). */
void fake_backend_fail_type_at(struct fake_backend *fb, enum scsitgt_io_type type, int err,
			       uint64_t lba, bool partial);
void fake_backend_fail_next_sense(struct fake_backend *fb, uint8_t key, uint8_t asc, uint8_t ascq);
/* Complete every held io (MANUAL mode), on the calling (loop) thread. */
void fake_backend_complete_pending(struct fake_backend *fb);
/* FAKE_MANUAL: complete the oldest io held, only it (the ios its completion submits stay
 * held). */
void fake_backend_complete_first(struct fake_backend *fb);
/* Close a backend the core will not close (it held ios when the engine went, core/drain.c),
 * once it completed them: the host's part. */
void fake_backend_destroy(struct fake_backend *fb);
/* The last recorded io, or NULL. */
const struct fake_io_rec *fake_backend_last(const struct fake_backend *fb);

#endif /* SCSITGT_TESTS_FAKE_BACKEND_H */
