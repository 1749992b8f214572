/* SPDX-License-Identifier: MIT */
/*
 * Contract tests of the backend-facing API (backend.h): the io accessors, io_ctx, each
 * completion call and its errno mapping, thread-safe completion from other threads (delivered
 * on the loop thread), old ops tables, and destroys that wait for ios still in a backend.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io_harness.h"
#include "probe_backend.h"

struct done {
	unsigned int calls;
	int status;
};

static void done_cb(void *arg, int status)
{
	struct done *d = arg;

	d->calls++;
	d->status = status;
}

static void test_io_accessors(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 1000 };
	struct scsitgt_backend_ops ops = probe_ops(true);
	struct scsitgt_lun *lun;
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd;
	uint8_t buf[3 * 4096];
	struct iovec iov3[3] = {
		{ .iov_base = buf, .iov_len = 100 },
		{ .iov_base = buf + 100, .iov_len = 8000 },
		{ .iov_base = buf + 8100, .iov_len = sizeof(buf) - 8100 },
	};
	struct iovec iov2[2] = {
		{ .iov_base = buf, .iov_len = 4096 },
		{ .iov_base = buf + 4096, .iov_len = 4096 },
	};

	(void)state;
	harness_init(&h);
	assert_int_equal(harness_lun(&h, &lun, 7, &ops, &p, 4096, 0, 0), 0);
	/* The table lives on our stack: the LUN uses its own copy. */
	memset(&ops, 0, sizeof(ops));

	cmd = harness_cmd_begin(&h, 7);
	assert_int_equal(
		harness_submit(cmd, &res, SCSITGT_IO_WRITE, 990, 3, iov3, 3, SCSITGT_IO_FLAG_FUA),
		0);
	assert_int_equal(res.done, 1);
	assert_int_equal(res.reason, SCSITGT__SR_OK);
	assert_int_equal(p.submit_calls, 1);
	assert_int_equal(p.type, SCSITGT_IO_WRITE);
	assert_int_equal(p.lba, 990);
	assert_int_equal(p.num_blocks, 3);
	assert_int_equal(p.block_size, 4096);
	assert_int_equal(p.iovcnt, 3);
	assert_ptr_equal(p.iov[0].iov_base, buf);
	assert_int_equal(p.iov[1].iov_len, 8000);
	assert_int_equal(p.flags, SCSITGT_IO_FLAG_FUA);
	assert_ptr_equal(p.lun, lun);
	/* A backend without SCSITGT_BACKEND_MULTI_LOOP runs on the home loop. */
	assert_ptr_equal(p.loop, &h.loop);
	/* io_ctx_size bytes, zeroed at submit, aligned for any scalar type. */
	assert_non_null(p.ctx);
	assert_true(p.ctx_zeroed);
	assert_int_equal((uintptr_t)p.ctx % _Alignof(max_align_t), 0);

	/* Two iovecs: the io carries them (the caller's array may go away). */
	assert_int_equal(harness_submit(cmd, &res, SCSITGT_IO_READ, 0, 2, iov2, 2, 0), 0);
	assert_int_equal(p.iovcnt, 2);
	assert_ptr_equal(p.iov[1].iov_base, buf + 4096);
	assert_true(p.ctx_zeroed);
	assert_int_equal(p.flags, 0);

	assert_null(p.ext);
	assert_int_equal(p.next, 0);

	/* Types without data have no iovecs. */
	assert_int_equal(harness_submit(cmd, &res, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0), 0);
	assert_int_equal(p.type, SCSITGT_IO_FLUSH);
	assert_int_equal(p.iovcnt, 0);
	assert_int_equal(p.num_blocks, 0);
	assert_int_equal(res.done, 3);

	/* GET LBA STATUS: its extent array through scsitgt_io_get_lba_extents(), no data. */
	{
		struct scsitgt_lba_extent ext[5];
		struct iovec eiov = { ext, sizeof(ext) };

		assert_int_equal(
			harness_submit(cmd, &res, SCSITGT_IO_GET_LBA_STATUS, 8, 100, &eiov, 1, 0),
			0);
		assert_int_equal(p.type, SCSITGT_IO_GET_LBA_STATUS);
		assert_int_equal(p.iovcnt, 0);
		assert_ptr_equal(p.ext, ext);
		assert_int_equal(p.next, 5);
	}
	harness_cmd_end(cmd);
	harness_fini(&h);
	assert_int_equal(p.close_calls, 1);
}

static void test_io_ctx_absent(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 10, .ctx = &p };
	struct scsitgt_backend_ops ops = probe_ops(false);

	(void)state;
	harness_init(&h);
	assert_int_equal(harness_lun(&h, NULL, 0, &ops, &p, 512, 0, 0), 0);
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, NULL), SCSITGT__SR_OK);
	assert_null(p.ctx);
	harness_fini(&h);
}

/* scsitgt_io_complete(): each documented errno and its sense reason. */
static void test_io_complete_errno_mapping(void **state)
{
	static const struct {
		enum scsitgt_io_type type;
		int status;
		enum scsitgt__sense_reason reason;
	} cases[] = {
		{ SCSITGT_IO_READ, 0, SCSITGT__SR_OK },
		{ SCSITGT_IO_READ, -EIO, SCSITGT__SR_READ_ERROR },
		{ SCSITGT_IO_WRITE, -EIO, SCSITGT__SR_WRITE_ERROR },
		{ SCSITGT_IO_WRITE, -ENOSPC, SCSITGT__SR_SPACE_ALLOC_FAILED },
		{ SCSITGT_IO_WRITE, -EROFS, SCSITGT__SR_WRITE_PROTECTED },
		{ SCSITGT_IO_READ, -ENOMEM, SCSITGT__SR_BUSY },
		{ SCSITGT_IO_READ, -EAGAIN, SCSITGT__SR_BUSY },
		{ SCSITGT_IO_FLUSH, -ENOTSUP, SCSITGT__SR_INVALID_OPCODE },
		{ SCSITGT_IO_READ, -EPERM, SCSITGT__SR_INTERNAL_FAILURE },
		{ SCSITGT_IO_READ, -12345, SCSITGT__SR_INTERNAL_FAILURE },
	};
	struct harness h;
	struct probe p = { .open_num_blocks = 10 };
	struct scsitgt_backend_ops ops = probe_ops(false);
	uint8_t buf[512];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };

	(void)state;
	harness_init(&h);
	assert_int_equal(harness_lun(&h, NULL, 0, &ops, &p, 512, 0, 0), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool data = cases[i].type != SCSITGT_IO_FLUSH;

		p.status = cases[i].status;
		assert_int_equal(harness_io(&h, 0, cases[i].type, 0, data ? 1 : 0,
					    data ? &iov : NULL, data ? 1 : 0, NULL),
				 cases[i].reason);
	}
	harness_fini(&h);
}

static void test_io_complete_sense(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 10, .mode = PROBE_SENSE };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct harness_result res;

	(void)state;
	harness_init(&h);
	assert_int_equal(harness_lun(&h, NULL, 0, &ops, &p, 512, 0, 0), 0);
	/* MEDIUM ERROR, UNRECOVERED READ ERROR - AUTO REALLOCATE FAILED. */
	p.sense_key = 0x03;
	p.sense_asc = 0x11;
	p.sense_ascq = 0x04;
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, &res), SCSITGT__SR_RAW);
	assert_int_equal(res.raw.key, 0x03);
	assert_int_equal(res.raw.asc, 0x11);
	assert_int_equal(res.raw.ascq, 0x04);
	/* Only the low nibble is a sense key. */
	p.sense_key = 0x1b;
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, &res), SCSITGT__SR_RAW);
	assert_int_equal(res.raw.key, 0x0b);
	/* NO SENSE is success. */
	p.sense_key = 0;
	assert_int_equal(harness_io(&h, 0, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, NULL), SCSITGT__SR_OK);
	harness_fini(&h);
}

/* Completions from other threads come back on the loop thread, each exactly once. */
static void test_io_complete_threadsafe(void **state)
{
	enum {
		N = 48
	};
	struct harness h;
	struct probe p = { .open_num_blocks = 100, .mode = PROBE_THREAD };
	struct scsitgt_backend_ops ops = probe_ops(true);
	struct harness_result res[N];
	struct scsitgt__cmd *cmds[N];
	uv_thread_t self = uv_thread_self();
	unsigned int total;

	(void)state;
	memset(res, 0, sizeof(res));
	harness_init(&h);
	assert_int_equal(harness_lun(&h, NULL, 0, &ops, &p, 512, 0, 0), 0);
	for (int i = 0; i < N; i++) {
		cmds[i] = harness_cmd_begin(&h, 0);
		p.status = i % 3 == 0 ? -EIO : 0;
		assert_int_equal(harness_submit(cmds[i], &res[i], SCSITGT_IO_UNMAP, (uint64_t)i, 1,
						NULL, 0, 0),
				 0);
	}
	do {
		uv_run(&h.loop, UV_RUN_ONCE);
		total = 0;
		for (int i = 0; i < N; i++) {
			total += res[i].done;
		}
	} while (total < N);
	probe_join(&p);
	/* Nothing more arrives. */
	uv_run(&h.loop, UV_RUN_NOWAIT);
	for (int i = 0; i < N; i++) {
		assert_int_equal(res[i].done, 1);
		assert_true(uv_thread_equal(&res[i].thread, &self));
		assert_int_equal(res[i].reason,
				 i % 3 == 0 ? SCSITGT__SR_WRITE_ERROR : SCSITGT__SR_OK);
		harness_cmd_end(cmds[i]);
	}
	harness_fini(&h);
}

/* An io completed later on the loop thread (an asynchronous backend). */
static void test_io_complete_later(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 100, .mode = PROBE_HOLD };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd;

	(void)state;
	harness_init(&h);
	assert_int_equal(harness_lun(&h, NULL, 0, &ops, &p, 512, 0, 0), 0);
	cmd = harness_cmd_begin(&h, 0);
	assert_int_equal(harness_submit(cmd, &res, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0), 0);
	assert_int_equal(harness_submit(cmd, &res, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0), 0);
	assert_int_equal(p.nheld, 2);
	uv_run(&h.loop, UV_RUN_NOWAIT);
	assert_int_equal(res.done, 0);
	assert_int_equal(cmd->ios_inflight, 2);
	scsitgt_io_complete(p.held[1], 0);
	assert_int_equal(res.done, 1);
	scsitgt_io_complete(p.held[0], -ENOSPC);
	assert_int_equal(res.done, 2);
	assert_int_equal(res.reason, SCSITGT__SR_SPACE_ALLOC_FAILED);
	harness_cmd_end(cmd);
	harness_fini(&h);
}

/* LUN destroy waits for commands in flight; meanwhile the LUN is gone for new commands. */
static void test_lun_destroy_waits_for_inflight(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 100 };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct scsitgt_lun *lun;
	struct scsitgt__cmd *cmd, *late;
	struct done d = { 0 };
	uint8_t lunbuf[8];
	static const uint8_t tur[6] = { 0 };

	(void)state;
	harness_init(&h);
	assert_int_equal(harness_lun(&h, &lun, 2, &ops, &p, 512, 0, 0), 0);
	cmd = harness_cmd_begin(&h, 2);
	scsitgt_lun_destroy(lun, done_cb, &d);
	for (int i = 0; i < 3; i++) {
		uv_run(&h.loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(p.close_calls, 0);
	assert_int_equal(d.calls, 0);
	/* A new command no longer finds LUN 2 (SPC-5: LOGICAL UNIT NOT SUPPORTED). */
	assert_int_equal(scsitgt__cmd_create(&late, h.sess, sizeof(void *)), 0);
	scsitgt__lun_encode(2, lunbuf);
	scsitgt__cmd_setup(late, lunbuf, tur, sizeof(tur), 0, 2);
	assert_int_equal(late->state, SCSITGT__CMD_DONE);
	assert_null(late->lun);
	assert_int_equal(late->status, 0x02);
	scsitgt__cmd_destroy(late);
	/* The id may be reused at once. */
	{
		struct probe p2 = { .open_num_blocks = 5 };

		assert_int_equal(harness_lun(&h, NULL, 2, &ops, &p2, 512, 0, 0), 0);
		harness_cmd_end(cmd);
		assert_int_equal(p.close_calls, 1);
		assert_int_equal(d.calls, 0);
		uv_run(&h.loop, UV_RUN_NOWAIT);
		assert_int_equal(d.calls, 1);
		harness_fini(&h);
		assert_int_equal(p2.close_calls, 1);
	}
}

/* Engine destroy with an io still in a backend: it finishes once the io completes. */
static void test_engine_destroy_waits_for_backend(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 100, .mode = PROBE_HOLD };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct harness_result res = { 0 };
	struct scsitgt__cmd *cmd;
	struct done d = { 0 };

	(void)state;
	harness_init(&h);
	assert_int_equal(harness_lun(&h, NULL, 0, &ops, &p, 512, 0, 0), 0);
	cmd = harness_cmd_begin(&h, 0);
	assert_int_equal(harness_submit(cmd, &res, SCSITGT_IO_FLUSH, 0, 0, NULL, 0, 0), 0);
	/* The harness fabric ends its nexus synchronously when the target goes. */
	h.sess = NULL;
	scsitgt_engine_destroy(h.engine, done_cb, &d);
	for (int i = 0; i < 5; i++) {
		uv_run(&h.loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(d.calls, 0);
	assert_int_equal(p.close_calls, 0);
	/* The backend finishes; the detached command goes, then the LUN, target and engine. */
	scsitgt_io_complete(p.held[0], 0);
	assert_int_equal(res.done, 1);
	assert_int_equal(uv_run(&h.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(p.close_calls, 1);
	assert_int_equal(uv_loop_close(&h.loop), 0);
}

/*
 * A target whose only nexus ends synchronously during destroy, with no LUNs, while other
 * deferred work is queued (here a LUN of another target being freed): each callback once.
 */
static void test_target_destroy_sync_session_no_luns(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 100 };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct scsitgt_target_opts to;
	struct scsitgt_lun_opts lo;
	struct scsitgt_target *t2;
	struct scsitgt_lun *lun;
	struct done d = { 0 }, dl = { 0 };

	(void)state;
	harness_init(&h);
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = "iqn.2024-01.test:other";
	assert_int_equal(scsitgt_target_create(&t2, h.engine, &to), 0);
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.backend = &ops;
	lo.backend_ctx = &p;
	assert_int_equal(scsitgt_lun_create(&lun, t2, &lo), 0);
	scsitgt_lun_destroy(lun, done_cb, &dl);

	h.sess = NULL;
	scsitgt_target_destroy(h.tgt, done_cb, &d);
	assert_int_equal(d.calls, 0);
	/* The engine's deferred-work list is intact: each item queued once, the head reached. */
	{
		const struct scsitgt__list *head = &h.engine->shards[0].deferred, *n = head->next;
		int count = 0;

		while (n != head && count < 10) {
			assert_ptr_equal(n->next->prev, n);
			n = n->next;
			count++;
		}
		assert_int_equal(count, 2);
	}
	for (int i = 0; i < 5; i++) {
		uv_run(&h.loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(d.calls, 1);
	assert_int_equal(dl.calls, 1);
	harness_fini(&h);
	assert_int_equal(d.calls, 1);
	assert_int_equal(dl.calls, 1);
}

/* An ops table that ends before supports(): only READ and WRITE are used. */
static void test_old_table_supports_absent(void **state)
{
	struct harness h;
	struct probe p = { .open_num_blocks = 100, .supports_unmap = true };
	struct scsitgt_backend_ops ops = probe_ops(false);
	struct scsitgt_lun *lun;

	(void)state;
	harness_init(&h);
	ops.size = offsetof(struct scsitgt_backend_ops, supports);
	assert_int_equal(harness_lun(&h, &lun, 0, &ops, &p, 512, 0, 0), 0);
	assert_true(scsitgt__lun_supports(lun, SCSITGT_IO_READ));
	assert_true(scsitgt__lun_supports(lun, SCSITGT_IO_WRITE));
	assert_false(scsitgt__lun_supports(lun, SCSITGT_IO_FLUSH));
	assert_false(scsitgt__lun_supports(lun, SCSITGT_IO_UNMAP));
	assert_false(scsitgt__lun_supports(lun, SCSITGT_IO_WRITE_ZEROES));
	assert_int_equal(p.supports_calls, 0);
	/* The same table at full size is asked. */
	ops.size = sizeof(ops);
	assert_int_equal(harness_lun(&h, &lun, 1, &ops, &p, 512, 0, 0), 0);
	assert_true(p.supports_calls > 0);
	assert_true(scsitgt__lun_supports(lun, SCSITGT_IO_UNMAP));
	harness_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_io_accessors),
		cmocka_unit_test(test_io_ctx_absent),
		cmocka_unit_test(test_io_complete_errno_mapping),
		cmocka_unit_test(test_io_complete_sense),
		cmocka_unit_test(test_io_complete_threadsafe),
		cmocka_unit_test(test_io_complete_later),
		cmocka_unit_test(test_lun_destroy_waits_for_inflight),
		cmocka_unit_test(test_engine_destroy_waits_for_backend),
		cmocka_unit_test(test_target_destroy_sync_session_no_luns),
		cmocka_unit_test(test_old_table_supports_absent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
