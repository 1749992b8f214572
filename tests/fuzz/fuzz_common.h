/* SPDX-License-Identifier: MIT */
/*
 * Shared scaffolding of the parameter-list fuzz targets (fuzz_pr_out.c, fuzz_unmap.c, ...):
 * the loop fabric and the fake backend compiled into the target (tests/fuzz/meson.build builds
 * each target from one source file), a LUN factory, and fuzz_run(), which pushes one CDB with
 * its Data-Out through the core like loop_fabric_run() but survives the library refusing to
 * allocate a command (the allocation-failure replay, replay_oom_main.c, makes it do that).
 *
 * Allocation failure: replay_oom_main.c wraps malloc/calloc/realloc/strdup of every object
 * (ld --wrap) and fails the Nth allocation made while fuzz_alloc_hold is 0. The support code
 * is not the library under test and aborts when it cannot allocate, so its allocations go
 * through the fuzz_hold_* shims below, which raise fuzz_alloc_hold around the call.
 */
#ifndef SCSITGT_TESTS_FUZZ_COMMON_H
#define SCSITGT_TESTS_FUZZ_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Raised while the test scaffolding allocates; the failing allocator leaves those alone.
 * volatile: compilers know malloc() reads no globals and would fold the raise around it. */
__attribute__((weak)) volatile int fuzz_alloc_hold;

static inline void *fuzz_hold_malloc(size_t n)
{
	void *p;

	fuzz_alloc_hold++;
	p = malloc(n);
	fuzz_alloc_hold--;
	return p;
}

static inline void *fuzz_hold_calloc(size_t a, size_t b)
{
	void *p;

	fuzz_alloc_hold++;
	p = calloc(a, b);
	fuzz_alloc_hold--;
	return p;
}

static inline void *fuzz_hold_realloc(void *o, size_t n)
{
	void *p;

	fuzz_alloc_hold++;
	p = realloc(o, n);
	fuzz_alloc_hold--;
	return p;
}

#define malloc(n) fuzz_hold_malloc(n)
#define calloc(a, b) fuzz_hold_calloc(a, b)
#define realloc(o, n) fuzz_hold_realloc(o, n)
#include "../support/fake_backend.c"
#include "../support/loop_fabric.c"
#undef malloc
#undef calloc
#undef realloc

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Number of blocks of the fuzz LUN: small, so that whole-LUN operations stay cheap. */
#define FUZZ_BLOCKS 64u

struct fuzz_env {
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct scsitgt_lun *lun;
};

enum {
	FUZZ_LUN_THIN = 1u << 0,
	FUZZ_LUN_BS_4096 = 1u << 1,
	FUZZ_LUN_NO_UNMAP = 1u << 2, /* the backend has no UNMAP/WRITE ZEROES: emulated */
	FUZZ_LUN_ASYNC = 1u << 3,
	FUZZ_LUN_READ_ONLY = 1u << 4,
	FUZZ_LUN_STORE = 1u << 5,
	FUZZ_LUN_D_SENSE = 1u << 6,
};

/* Engine, target, nexus and LUN 0. Failing here is a broken harness: abort. */
static inline void fuzz_env_init(struct fuzz_env *env, unsigned int cfg)
{
	struct fake_backend_opts o;
	uint32_t lun_flags = 0;

	fuzz_alloc_hold++;
	if (loop_fabric_create(&env->lf, NULL) != 0)
		abort();
	fake_backend_opts_init(&o);
	o.block_size = (cfg & FUZZ_LUN_BS_4096) ? 4096 : 512;
	o.num_blocks = FUZZ_BLOCKS;
	o.supports = 1u << SCSITGT_IO_FLUSH;
	if (!(cfg & FUZZ_LUN_NO_UNMAP))
		o.supports |= 1u << SCSITGT_IO_UNMAP | 1u << SCSITGT_IO_WRITE_ZEROES;
	o.geo_flags = SCSITGT_GEOMETRY_LBPRZ;
	o.mode = (cfg & FUZZ_LUN_ASYNC) ? FAKE_ASYNC : FAKE_SYNC;
	o.store = cfg & FUZZ_LUN_STORE;
	o.lba_status = o.store;
	o.loop = &env->lf->loop;
	if (cfg & FUZZ_LUN_THIN)
		lun_flags |= SCSITGT_LUN_THIN;
	if (cfg & FUZZ_LUN_READ_ONLY)
		lun_flags |= SCSITGT_LUN_READ_ONLY;
	/* A thin LUN may need a backend that deallocates: then it is a plain one. */
	if (fake_backend_lun_create(&env->lun, &env->fb, env->lf->tgt, 0, lun_flags, &o) != 0 &&
	    fake_backend_lun_create(&env->lun, &env->fb, env->lf->tgt, 0,
				    lun_flags & ~(uint32_t)SCSITGT_LUN_THIN, &o) != 0)
		abort();
	env->lun->mode.d_sense = cfg & FUZZ_LUN_D_SENSE;
	fuzz_alloc_hold--;
}

/* A second I_T nexus on relative target port 2, past its POWER ON unit attention. */
static inline struct scsitgt__session *fuzz_add_other(struct fuzz_env *env)
{
	struct scsitgt__session *other = NULL;

	fuzz_alloc_hold++;
	if (loop_fabric_add_session(env->lf, "iqn.2024-01.org.example:other,i,0x23d000000002", 2,
				    &other) != 0)
		abort();
	other->ua_no_power_on = true;
	fuzz_alloc_hold--;
	return other;
}

static inline void fuzz_env_fini(struct fuzz_env *env)
{
	fuzz_alloc_hold++;
	loop_fabric_destroy(env->lf);
	fuzz_alloc_hold--;
}

/*
 * Run one CDB on LUN 0 of @sess (NULL: the main nexus) to completion, Data-Out from @dout
 * (zero-filled when short), and check the invariants every fabric relies on. Returns the
 * SCSI status, or -1 when the library could not allocate the command.
 */
static inline int fuzz_run_on(struct fuzz_env *env, struct scsitgt__session *sess,
			      const uint8_t *cdb, size_t cdb_len, const void *dout, size_t dout_len)
{
	struct loop_fabric *lf = env->lf;
	struct lf_result res;
	struct scsitgt__cmd *cmd;
	struct lf_priv *p;
	uint8_t lun[8];
	int status;

	memset(&res, 0, sizeof(res));
	if (scsitgt__cmd_create(&cmd, sess ? sess : lf->sess, sizeof(*p)) < 0)
		return -1;
	p = scsitgt__cmd_fabric_priv(cmd);
	p->lf = lf;
	p->res = &res;
	res.cmd = cmd;
	scsitgt__lun_encode(0, lun);
	scsitgt__cmd_setup(cmd, lun, cdb, cdb_len, 0, 0x1000 + lf->ndone);
	if (cmd->state == SCSITGT__CMD_NEED_DATA && cmd->xfer_len) {
		size_t n = dout_len < cmd->xfer_len ? dout_len : cmd->xfer_len;

		if (cmd->buf == NULL)
			abort(); /* the core asked for data but gave no buffer */
		memset(cmd->buf, 0, cmd->xfer_len);
		if (n)
			memcpy(cmd->buf, dout, n);
	}
	scsitgt__cmd_execute(cmd);
	loop_fabric_wait(lf, &res);
	if (!lf_result_sane(&res))
		abort();
	status = res.status;
	fuzz_alloc_hold++;
	lf_result_clear(&res);
	fuzz_alloc_hold--;
	return status;
}

static inline int fuzz_run(struct fuzz_env *env, const uint8_t *cdb, size_t cdb_len,
			   const void *dout, size_t dout_len)
{
	return fuzz_run_on(env, NULL, cdb, cdb_len, dout, dout_len);
}

/* Big-endian stores for CDB fields (the library's be.h is internal to it, keep tests apart). */
static inline void fuzz_put_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void fuzz_put_be32(uint8_t *p, uint32_t v)
{
	fuzz_put_be16(p, v >> 16);
	fuzz_put_be16(p + 2, v);
}

static inline void fuzz_put_be64(uint8_t *p, uint64_t v)
{
	fuzz_put_be32(p, (uint32_t)(v >> 32));
	fuzz_put_be32(p + 4, (uint32_t)v);
}

#endif /* SCSITGT_TESTS_FUZZ_COMMON_H */
