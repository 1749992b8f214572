/* SPDX-License-Identifier: MIT */
/*
 * ABI gate: the public structs of LIBSCSITGT_0.1 on x86_64 (LP64). Fields are only ever
 * appended (docs/ABI.md), so a change of any size or offset here is an ABI break: bump the
 * major version, or append instead. Other ABIs are checked at run time for the invariants
 * every ABI shares (size first, appended growth).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "libscsitgt/scsitgt.h"

#if defined(__x86_64__) && defined(__LP64__)
_Static_assert(sizeof(struct scsitgt_engine_opts) == 40, "engine_opts ABI");
_Static_assert(offsetof(struct scsitgt_engine_opts, log_cb) == 8, "engine_opts ABI");
_Static_assert(offsetof(struct scsitgt_engine_opts, log_arg) == 16, "engine_opts ABI");
_Static_assert(offsetof(struct scsitgt_engine_opts, log_level) == 24, "engine_opts ABI");
_Static_assert(offsetof(struct scsitgt_engine_opts, workers) == 28, "engine_opts ABI");
/* Appended after the first release, past the 32 bytes of the older struct. */
_Static_assert(offsetof(struct scsitgt_engine_opts, conn_workers) == 32, "engine_opts ABI");

_Static_assert(sizeof(struct scsitgt_target_opts) == 40, "target_opts ABI");
_Static_assert(offsetof(struct scsitgt_target_opts, name) == 8, "target_opts ABI");
_Static_assert(offsetof(struct scsitgt_target_opts, alias) == 16, "target_opts ABI");
/* appended limits. */
_Static_assert(offsetof(struct scsitgt_target_opts, max_sessions) == 24, "target_opts ABI");
_Static_assert(offsetof(struct scsitgt_target_opts, max_lun_commands) == 28, "target_opts ABI");
_Static_assert(offsetof(struct scsitgt_target_opts, max_read_buffer_bytes) == 32,
	       "target_opts ABI");

_Static_assert(sizeof(struct scsitgt_lun_opts) == 184, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, id) == 8, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, block_size) == 16, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, num_blocks) == 24, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, flags) == 32, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, vendor) == 40, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, product) == 48, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, revision) == 56, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, serial) == 64, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, naa) == 72, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, eui64) == 80, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, backend) == 88, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, backend_ctx) == 96, "lun_opts ABI");
/* appended. */
_Static_assert(offsetof(struct scsitgt_lun_opts, physical_block_exponent) == 104, "lun_opts ABI");
/* Appended after the first release, all past the 112 bytes of the older struct. */
_Static_assert(offsetof(struct scsitgt_lun_opts, max_write_same_blocks) == 112, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, max_transfer_blocks) == 120, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, optimal_transfer_blocks) == 124, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, optimal_transfer_granularity) == 128,
	       "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, max_unmap_blocks) == 132, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, max_unmap_descriptors) == 136, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, unmap_granularity) == 140, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, unmap_granularity_alignment) == 144,
	       "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, naa_extended) == 148, "lun_opts ABI");
_Static_assert(offsetof(struct scsitgt_lun_opts, uuid) == 164, "lun_opts ABI");

_Static_assert(sizeof(struct scsitgt_backend_ops) == 120, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, name) == 8, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, io_ctx_size) == 16, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, open) == 24, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, close) == 32, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, submit) == 40, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, supports) == 48, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, get_lba_status) == 56, "backend_ops ABI");
/* appended. */
_Static_assert(offsetof(struct scsitgt_backend_ops, abort) == 64, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, reset) == 72, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, reset_async) == 80, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, get_size) == 88, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, resize) == 96, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, flags) == 104, "backend_ops ABI");
_Static_assert(offsetof(struct scsitgt_backend_ops, detach) == 112, "backend_ops ABI");

_Static_assert(sizeof(struct scsitgt_lun_geometry) == 40, "lun_geometry ABI");
_Static_assert(offsetof(struct scsitgt_lun_geometry, block_size) == 8, "lun_geometry ABI");
_Static_assert(offsetof(struct scsitgt_lun_geometry, num_blocks) == 16, "lun_geometry ABI");
_Static_assert(offsetof(struct scsitgt_lun_geometry, physical_block_exponent) == 24,
	       "lun_geometry ABI");
_Static_assert(offsetof(struct scsitgt_lun_geometry, optimal_transfer_blocks) == 28,
	       "lun_geometry ABI");
_Static_assert(offsetof(struct scsitgt_lun_geometry, flags) == 32, "lun_geometry ABI");
_Static_assert(offsetof(struct scsitgt_lun_geometry, unmap_granularity_blocks) == 36,
	       "lun_geometry ABI");

_Static_assert(sizeof(struct scsitgt_backend_aio_opts) == 64, "backend_aio_opts ABI");
_Static_assert(sizeof(struct scsitgt_backend_null_opts) == 32, "backend_null_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_null_opts, log_level) == 24,
	       "backend_null_opts ABI");
_Static_assert(sizeof(struct scsitgt_backend_ram_opts) == 32, "backend_ram_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_ram_opts, log_level) == 24, "backend_ram_opts ABI");
/* Appended after uring_async (the 0.1 ABI's struct ended at 56 bytes). */
_Static_assert(offsetof(struct scsitgt_backend_aio_opts, log_level) == 56, "backend_aio_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_aio_opts, log_arg) == 40, "backend_aio_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_aio_opts, engine) == 48, "backend_aio_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_aio_opts, uring_async) == 52,
	       "backend_aio_opts ABI");

_Static_assert(sizeof(struct scsitgt_backend_rbd_opts) == 88, "backend_rbd_opts ABI");
/* Appended after log_arg (the 0.1 ABI's struct ended at 80 bytes). */
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, log_level) == 80, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, loop) == 8, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, pool) == 16, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, image) == 24, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, pool_namespace) == 32,
	       "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, client_id) == 40, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, conf_file) == 48, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, read_only) == 56, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, write_through) == 57,
	       "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, op_timeout_s) == 60,
	       "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, log_cb) == 64, "backend_rbd_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_opts, log_arg) == 72, "backend_rbd_opts ABI");
_Static_assert(sizeof(struct scsitgt_backend_rbd_pr_opts) == 16, "backend_rbd_pr_opts ABI");
_Static_assert(offsetof(struct scsitgt_backend_rbd_pr_opts, notify_timeout_ms) == 8,
	       "backend_rbd_pr_opts ABI");
_Static_assert(sizeof(struct scsitgt_pr_cluster_ops) == 40, "pr_cluster_ops ABI");
_Static_assert(offsetof(struct scsitgt_pr_cluster_ops, detach) == 24, "pr_cluster_ops ABI");
/* appended. */
_Static_assert(offsetof(struct scsitgt_pr_cluster_ops, recheck) == 32, "pr_cluster_ops ABI");
_Static_assert(sizeof(struct scsitgt_rbd_gateway_opts) == 72, "rbd_gateway_opts ABI");
_Static_assert(offsetof(struct scsitgt_rbd_gateway_opts, group_id) == 8, "rbd_gateway_opts ABI");
_Static_assert(offsetof(struct scsitgt_rbd_gateway_opts, rel_port_ids) == 16,
	       "rbd_gateway_opts ABI");
_Static_assert(offsetof(struct scsitgt_rbd_gateway_opts, peers) == 32, "rbd_gateway_opts ABI");
_Static_assert(offsetof(struct scsitgt_rbd_gateway_opts, preferred) == 48, "rbd_gateway_opts ABI");
_Static_assert(offsetof(struct scsitgt_rbd_gateway_opts, holddown_ms) == 64,
	       "rbd_gateway_opts ABI");
_Static_assert(sizeof(struct scsitgt_rbd_gateway_peer) == 4, "rbd_gateway_peer ABI");
#endif

/* Enum values and flags are part of the ABI too. */
_Static_assert(SCSITGT_IO_READ == 0 && SCSITGT_IO_WRITE == 1 && SCSITGT_IO_FLUSH == 2 &&
		       SCSITGT_IO_UNMAP == 3 && SCSITGT_IO_WRITE_ZEROES == 4,
	       "io types");
_Static_assert(SCSITGT_IO_WRITE_SAME == 5 && SCSITGT_IO_GET_LBA_STATUS == 6, "io types");
_Static_assert(SCSITGT_LBA_MAPPED == 0 && SCSITGT_LBA_DEALLOCATED == 1, "lba status");
_Static_assert(sizeof(struct scsitgt_lba_extent) == 16, "lba_extent ABI");
_Static_assert(offsetof(struct scsitgt_lba_extent, status) == 8, "lba_extent ABI");
_Static_assert(SCSITGT_IO_FLAG_FUA == 1u, "io flags");
_Static_assert(SCSITGT_GEOMETRY_WRITE_CACHE == 1u && SCSITGT_GEOMETRY_LBPRZ == 2u &&
		       SCSITGT_GEOMETRY_NON_ROTATIONAL == 4u,
	       "geometry flags");
_Static_assert(SCSITGT_LUN_READ_ONLY == 1u && SCSITGT_LUN_THIN == 2u &&
		       SCSITGT_LUN_REMOVABLE == 4u && SCSITGT_LUN_WRITE_CACHE == 8u,
	       "lun flags");
_Static_assert(SCSITGT_EPROTO_PEER == -4001 && SCSITGT_EAUTH == -4002, "error codes");
_Static_assert(SCSITGT_LOG_ERROR == 3 && SCSITGT_LOG_DEBUG == 7, "log levels");

/* Every ABI: each versioned struct starts with its size. */
static void test_size_first(void **state)
{
	(void)state;
	assert_int_equal(offsetof(struct scsitgt_engine_opts, size), 0);
	assert_int_equal(offsetof(struct scsitgt_target_opts, size), 0);
	assert_int_equal(offsetof(struct scsitgt_lun_opts, size), 0);
	assert_int_equal(offsetof(struct scsitgt_backend_ops, size), 0);
	assert_int_equal(offsetof(struct scsitgt_lun_geometry, size), 0);
}

/* The built-in backends are compiled against the same table size the header declares. */
static void test_builtin_tables(void **state)
{
	(void)state;
	assert_int_equal(scsitgt_backend_null_ops()->size, sizeof(struct scsitgt_backend_ops));
	assert_int_equal(scsitgt_backend_ram_ops()->size, sizeof(struct scsitgt_backend_ops));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_first),
		cmocka_unit_test(test_builtin_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
