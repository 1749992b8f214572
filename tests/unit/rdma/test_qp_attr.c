/* SPDX-License-Identifier: MIT */
/* The log line of a QP's transport attributes (src/transport/rdma/verbs.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/rdma/rdma.h"

/* What rdma_cm gave our passive QPs in the vm suite's guest (docs/srp.md "Measured"). */
static void test_rxe_login(void **state)
{
	struct ibv_qp_attr a;
	char buf[200];

	(void)state;
	memset(&a, 0, sizeof(a));
	a.timeout = 19;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.min_rnr_timer = 12;
	a.path_mtu = IBV_MTU_1024;
	a.max_rd_atomic = 4;
	scsitgt__rdma_qp_attr_str(&a, buf, sizeof(buf));
	assert_string_equal(buf, "local ACK timeout 19 (2147.483 ms), retry 7, RNR retry 7, "
				 "RNR timer 12, path MTU 1024, RDMA READs out 4, in 0");
}

/* 4.096 us * 2^timeout at both ends of the 5-bit field; 0 has no timer at all. */
static void test_timeout_range(void **state)
{
	struct ibv_qp_attr a;
	char buf[200];

	(void)state;
	memset(&a, 0, sizeof(a));
	a.path_mtu = IBV_MTU_4096;
	scsitgt__rdma_qp_attr_str(&a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "local ACK timeout 0 (infinite),"));
	assert_non_null(strstr(buf, "path MTU 4096,"));
	a.timeout = 1;
	scsitgt__rdma_qp_attr_str(&a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "local ACK timeout 1 (0.008 ms),"));
	a.timeout = 14;
	scsitgt__rdma_qp_attr_str(&a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "local ACK timeout 14 (67.108 ms),"));
	a.timeout = 31;
	scsitgt__rdma_qp_attr_str(&a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "local ACK timeout 31 (8796093.022 ms),"));
}

/* A path MTU outside the verbs enumeration is shown as 0, and a short buffer is cut. */
static void test_odd_mtu_short_buffer(void **state)
{
	struct ibv_qp_attr a;
	char buf[200], small[12];

	(void)state;
	memset(&a, 0, sizeof(a));
	a.timeout = 19;
	scsitgt__rdma_qp_attr_str(&a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "path MTU 0,"));
	a.path_mtu = (enum ibv_mtu)6;
	scsitgt__rdma_qp_attr_str(&a, buf, sizeof(buf));
	assert_non_null(strstr(buf, "path MTU 0,"));
	memset(small, 'x', sizeof(small));
	scsitgt__rdma_qp_attr_str(&a, small, sizeof(small));
	assert_string_equal(small, "local ACK t");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rxe_login),
		cmocka_unit_test(test_timeout_range),
		cmocka_unit_test(test_odd_mtu_short_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
