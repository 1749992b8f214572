/* SPDX-License-Identifier: MIT */
/*
 * The multi-gateway model's state machine (src/backend/rbd_ha.c): who takes a free lock, when
 * a silent owner counts as dead, fencing and rejoining, SET TARGET PORT GROUPS with its
 * hold-down, the ALUA states reported for each group, and the probe answer's format.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backend/rbd_ha.h"
#include "libscsitgt/alua.h"

enum {
	AO = SCSITGT_ALUA_ACTIVE_OPTIMIZED,
	SB = SCSITGT_ALUA_STANDBY,
	UN = SCSITGT_ALUA_UNAVAILABLE,
	TR = SCSITGT_ALUA_TRANSITIONING
};

static void ha_init(struct scsitgt__rbd_ha *ha, uint16_t group, bool preferred)
{
	struct scsitgt__rbd_ha_cfg cfg = {
		.group = group, .preferred = preferred, .misses = 3, .holddown_ms = 5000
	};

	/* Groups 1, 2 and 3; each gateway lists the two others. */
	for (uint16_t g = 1; g <= 3; g++)
		if (g != group)
			cfg.peer_groups[cfg.npeer_groups++] = g;
	scsitgt__rbd_ha_init(ha, &cfg);
}

static void peer(struct scsitgt__rbd_ha_probe *p, uint16_t group, enum scsitgt__rbd_ha_state s)
{
	p->peers[p->npeers].group = group;
	p->peers[p->npeers].state = (uint8_t)s;
	p->peers[p->npeers].preferred = false;
	p->npeers++;
}

/* A probe that finds group @owner (0: nobody) owning the lock, alive or not, and the other
 * groups of 1..3 standing by. */
static struct scsitgt__rbd_ha_probe probe(const struct scsitgt__rbd_ha *ha, uint16_t owner,
					  bool alive, uint64_t held)
{
	struct scsitgt__rbd_ha_probe p;

	memset(&p, 0, sizeof(p));
	p.locked = owner != 0;
	p.mine = owner == ha->cfg.group;
	p.owner_alive = owner != 0 && alive;
	p.owner_group = alive ? owner : 0;
	p.owner_held_ms = held;
	for (uint16_t g = 1; g <= 3; g++) {
		if (g == ha->cfg.group || (g == owner && !alive))
			continue;
		peer(&p, g, g == owner ? SCSITGT__RBD_HA_OWNER : SCSITGT__RBD_HA_STANDBY);
	}
	return p;
}

static void test_free_lock_goes_to_the_first_in_line(void **state)
{
	struct scsitgt__rbd_ha a, c;
	struct scsitgt__rbd_ha_probe p;

	(void)state;
	ha_init(&a, 1, false);
	ha_init(&c, 3, false);
	assert_int_equal(scsitgt__rbd_ha_alua(&a, 1), SB);
	/* Nobody owns the lock: group 1 takes it, group 3 waits for it. */
	p = probe(&a, 0, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), SCSITGT__RBD_HA_DO_ACQUIRE);
	assert_int_equal(scsitgt__rbd_ha_alua(&a, 1), TR);
	p = probe(&c, 0, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), 0);
	assert_int_equal(c.state, SCSITGT__RBD_HA_STANDBY);
	assert_int_equal(scsitgt__rbd_ha_acquired(&a, 0, 1000), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&a, 1), AO);
	assert_int_equal(scsitgt__rbd_ha_alua(&a, 2), SB);
	/* If group 1 never takes it, group 3 does after twice the misses. */
	for (int i = 0; i < 5; i++)
		assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), SCSITGT__RBD_HA_DO_ACQUIRE);
	/* It lost the race: standby again. */
	assert_int_equal(scsitgt__rbd_ha_acquired(&c, -EROFS, 2000), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 3), SB);
	/* A preferred gateway goes first whatever its group. */
	ha_init(&a, 1, false);
	p = probe(&a, 0, false, 0);
	p.peers[1].preferred = true;
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	ha_init(&c, 3, true);
	p = probe(&c, 0, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), SCSITGT__RBD_HA_DO_ACQUIRE);
}

static void test_live_owner_keeps_the_lock(void **state)
{
	struct scsitgt__rbd_ha b;
	struct scsitgt__rbd_ha_probe p;

	(void)state;
	ha_init(&b, 2, true);
	p = probe(&b, 1, true, 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), SB);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 3), SB);
	/* A failed probe (cluster unreachable) changes nothing and counts no miss. */
	p.rc = -ETIMEDOUT;
	for (int i = 0; i < 10; i++)
		assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(b.missed, 0);
}

static void test_silent_owner_is_broken(void **state)
{
	struct scsitgt__rbd_ha b, c;
	struct scsitgt__rbd_ha_probe p;

	(void)state;
	ha_init(&b, 2, false);
	ha_init(&c, 3, false);
	p = probe(&b, 1, true, 100);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	/* Group 1 stops answering: after three misses group 2 (first in line) breaks it. */
	p = probe(&b, 1, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), UN);
	/* An answer in between resets the count. */
	{
		struct scsitgt__rbd_ha_probe alive = probe(&b, 1, true, 200);

		assert_int_equal(scsitgt__rbd_ha_probed(&b, &alive), 0);
	}
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), SCSITGT__RBD_HA_DO_BREAK);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), TR);
	/* Probes during the acquisition change nothing. */
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_acquired(&b, 0, 5000), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), AO);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), UN);
	/* Group 3 leaves it to group 2 (alive, lower) until twice the misses. */
	p = probe(&c, 1, false, 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), SCSITGT__RBD_HA_DO_BREAK);
	/* Group 2 was faster (the takeover job found another owner): standby. */
	assert_int_equal(scsitgt__rbd_ha_acquired(&c, -EAGAIN, 6000), 0);
	assert_int_equal(c.state, SCSITGT__RBD_HA_STANDBY);
	/* Group 1 stays silent; group 2 answers as the owner. */
	memset(&p, 0, sizeof(p));
	p.locked = p.owner_alive = true;
	p.owner_group = 2;
	peer(&p, 2, SCSITGT__RBD_HA_OWNER);
	assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 2), AO);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 1), UN);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 3), SB);
}

static void test_fenced_owner_rejoins_as_standby(void **state)
{
	struct scsitgt__rbd_ha a;
	struct scsitgt__rbd_ha_probe p;

	(void)state;
	ha_init(&a, 1, false);
	p = probe(&a, 0, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), SCSITGT__RBD_HA_DO_ACQUIRE);
	assert_int_equal(scsitgt__rbd_ha_acquired(&a, 0, 0), 0);
	p = probe(&a, 1, true, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	/* Another gateway broke the lock: the owner's probe finds it elsewhere. */
	p = probe(&a, 2, true, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), SCSITGT__RBD_HA_DO_RECONNECT);
	assert_int_equal(scsitgt__rbd_ha_alua(&a, 1), UN);
	/* The backend's fence hook too, once only. */
	assert_int_equal(scsitgt__rbd_ha_fenced(&a), 0);
	/* No takeover, no STPG while fenced; reconnection retried until it works. */
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_reconnected(&a, -ETIMEDOUT), SCSITGT__RBD_HA_DO_RECONNECT);
	assert_int_equal(scsitgt__rbd_ha_reconnected(&a, 0), 0);
	assert_int_equal(a.state, SCSITGT__RBD_HA_JOINING);
	assert_int_equal(scsitgt__rbd_ha_alua(&a, 1), SB);
	p = probe(&a, 2, true, 10);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	assert_int_equal(a.state, SCSITGT__RBD_HA_STANDBY);
	assert_int_equal(scsitgt__rbd_ha_alua(&a, 2), AO);
	/* A blocklisted acquisition fences too. */
	p = probe(&a, 0, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), SCSITGT__RBD_HA_DO_ACQUIRE);
	assert_int_equal(scsitgt__rbd_ha_acquired(&a, -ESHUTDOWN, 0), SCSITGT__RBD_HA_DO_RECONNECT);
}

static void test_stpg(void **state)
{
	struct scsitgt__rbd_ha b;
	struct scsitgt__rbd_ha_probe p;
	unsigned int act;

	(void)state;
	ha_init(&b, 2, false);
	/* Before the first probe: not ready. */
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), -EAGAIN);
	p = probe(&b, 1, true, 1000);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	/* Hold-down: the owner took the lock 1 s ago. */
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), -EBUSY);
	assert_int_equal(act, 0);
	/* Another gateway's group: stepping down is accepted (a no-op here), promoting it is
	 * not this gateway's to do; an unknown group is refused. */
	assert_int_equal(scsitgt__rbd_ha_request(&b, 3, SB, 0, &act), 1);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 3, AO, 0, &act), -EREMOTE);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 1, AO, 0, &act), 1);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 9, SB, 0, &act), -ENOENT);
	/* Standby to standby: nothing to do. */
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, SB, 0, &act), 1);
	assert_int_equal(act, 0);
	/* After the hold-down: break the live owner's lock and take it. */
	p = probe(&b, 1, true, 6000);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), 1);
	assert_int_equal(act, SCSITGT__RBD_HA_DO_BREAK);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), TR);
	/* A second request while acquiring: accepted, nothing more. */
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), 1);
	assert_int_equal(act, 0);
	assert_int_equal(scsitgt__rbd_ha_acquired(&b, 0, 7000), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), AO);
	/* The owner does not step down on request; it stays the owner on "active" again. */
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, SB, 0, &act), -EBUSY);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), 1);
	assert_int_equal(act, 0);
	/* A free lock: taken without breaking anything. */
	ha_init(&b, 2, false);
	p = probe(&b, 0, false, 0);
	p.peers[0].state = SCSITGT__RBD_HA_FENCED;
	p.npeers = 1;
	p.peers[0].group = 1;
	peer(&p, 3, SCSITGT__RBD_HA_JOINING);
	p.peers[1].preferred = true;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), UN);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), 1);
	assert_int_equal(act, SCSITGT__RBD_HA_DO_ACQUIRE);
}

static void test_ack_format(void **state)
{
	struct scsitgt__rbd_ha ha;
	struct scsitgt__rbd_ha_peer pe;
	char buf[256], addr[64];
	uint64_t held;
	int n;

	(void)state;
	ha_init(&ha, 7, true);
	ha.state = SCSITGT__RBD_HA_OWNER;
	ha.owned_since = 1000;
	n = scsitgt__rbd_ha_ack_format(buf, sizeof(buf), &ha, 3500, "127.0.0.1:0/1234");
	assert_true(n > 0);
	assert_string_equal(buf, "g=7 s=3 p=1 h=2500 a=127.0.0.1:0/1234");
	assert_int_equal(scsitgt__rbd_ha_ack_parse(buf, (size_t)n, &pe, &held, addr, sizeof(addr)),
			 0);
	assert_int_equal(pe.group, 7);
	assert_int_equal(pe.state, SCSITGT__RBD_HA_OWNER);
	assert_true(pe.preferred);
	assert_int_equal(held, 2500);
	assert_string_equal(addr, "127.0.0.1:0/1234");
	assert_int_equal(scsitgt__rbd_ha_ack_format(buf, 10, &ha, 0, "x"), -ENOSPC);
	/* Anything else another client might answer is not a gateway. */
	static const char *bad[] = { "",
				     "g=0 s=1 p=0 h=0 a=x",
				     "g=1 s=9 p=0 h=0 a=x",
				     "g=1 s=1 p=2 h=0 a=x",
				     "g=1 s=1 p=0 h=0",
				     "hello",
				     "g=1 s=1 p=0 h=0 a=x trailing",
				     "g=70000 s=1 p=0 h=0 a=x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(scsitgt__rbd_ha_ack_parse(bad[i], strlen(bad[i]), &pe, &held, addr,
							   sizeof(addr)),
				 -EINVAL);
	assert_int_equal(
		scsitgt__rbd_ha_ack_parse("g=1 s=1 p=0 h=0 a=0123456789", 28, &pe, &held, addr, 4),
		-EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_lock_goes_to_the_first_in_line),
		cmocka_unit_test(test_live_owner_keeps_the_lock),
		cmocka_unit_test(test_silent_owner_is_broken),
		cmocka_unit_test(test_fenced_owner_rejoins_as_standby),
		cmocka_unit_test(test_stpg),
		cmocka_unit_test(test_ack_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
