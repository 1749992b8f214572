/* SPDX-License-Identifier: MIT */
/*
 * Which session a login names (review p35 F5): an iSCSI session is one I_T nexus, the
 * initiator's name and ISID x the target and its portal group tag (RFC 7143: the SSID is ISID
 * plus TPGT). The same initiator port through another portal group is another nexus: a login
 * there with TSIH 0 must not reinstate the first portal group's session, and a TSIH of one
 * portal group does not name a session through the other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/iscsi/conn.h"

static const uint8_t isid_a[6] = { 0x80, 0, 0x02, 0x3d, 0, 0x01 };
static const uint8_t isid_b[6] = { 0x80, 0, 0x02, 0x3d, 0, 0x02 };

static void sess_fill(struct scsitgt__iscsi_sess *s, struct scsitgt_target *tgt, uint16_t tpgt,
		      uint16_t tsih)
{
	memset(s, 0, sizeof(*s));
	s->tgt = tgt;
	s->tpgt = tpgt;
	s->tsih = tsih;
	memcpy(s->isid, isid_a, 6);
	strcpy(s->initiator_name, "iqn.2026-12.test:ini");
}

static void test_nexus_match(void **state)
{
	struct scsitgt_target tgt, other;
	struct scsitgt__iscsi_sess s;

	(void)state;
	memset(&tgt, 0, sizeof(tgt));
	memset(&other, 0, sizeof(other));
	sess_fill(&s, &tgt, 1, 7);
	assert_true(scsitgt__iscsi_sess_of_nexus(&s, "iqn.2026-12.test:ini", isid_a, &tgt, 1));
	/* iSCSI names compare without regard to case (RFC 7143 §4.2.7.1, RFC 3722). */
	assert_true(scsitgt__iscsi_sess_of_nexus(&s, "IQN.2026-12.TEST:INI", isid_a, &tgt, 1));
	assert_false(scsitgt__iscsi_sess_of_nexus(&s, "iqn.2026-12.test:ini", isid_a, &tgt, 2));
	assert_false(scsitgt__iscsi_sess_of_nexus(&s, "iqn.2026-12.test:ini", isid_b, &tgt, 1));
	assert_false(scsitgt__iscsi_sess_of_nexus(&s, "iqn.2026-12.test:other", isid_a, &tgt, 1));
	assert_false(scsitgt__iscsi_sess_of_nexus(&s, "iqn.2026-12.test:ini", isid_a, &other, 1));
	s.discovery = true;
	assert_false(scsitgt__iscsi_sess_of_nexus(&s, "iqn.2026-12.test:ini", isid_a, &tgt, 1));
}

static void test_find_per_portal_group(void **state)
{
	struct scsitgt__iscsi_engine ie;
	struct scsitgt_target tgt;
	struct scsitgt__iscsi_sess s1, s2;

	(void)state;
	memset(&tgt, 0, sizeof(tgt));
	memset(&ie, 0, sizeof(ie));
	scsitgt__list_init(&ie.sessions);
	sess_fill(&s1, &tgt, 1, 1);
	sess_fill(&s2, &tgt, 2, 2);
	scsitgt__list_add_tail(&ie.sessions, &s1.node);
	scsitgt__list_add_tail(&ie.sessions, &s2.node);
	/* The session of each portal group, and no other. */
	assert_ptr_equal(scsitgt__iscsi_sess_find(&ie, "iqn.2026-12.test:ini", isid_a, &tgt, 1, 0),
			 &s1);
	assert_ptr_equal(scsitgt__iscsi_sess_find(&ie, "iqn.2026-12.test:ini", isid_a, &tgt, 2, 0),
			 &s2);
	assert_null(scsitgt__iscsi_sess_find(&ie, "iqn.2026-12.test:ini", isid_a, &tgt, 3, 0));
	/* TSIH 2 lives behind portal group 2 only. */
	assert_null(scsitgt__iscsi_sess_find(&ie, "iqn.2026-12.test:ini", isid_a, &tgt, 1, 2));
	assert_ptr_equal(scsitgt__iscsi_sess_find(&ie, "iqn.2026-12.test:ini", isid_a, &tgt, 2, 2),
			 &s2);
	/* A closing session is found by no login. */
	s1.closing = true;
	assert_null(scsitgt__iscsi_sess_find(&ie, "iqn.2026-12.test:ini", isid_a, &tgt, 1, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nexus_match),
		cmocka_unit_test(test_find_per_portal_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
