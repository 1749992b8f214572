/* SPDX-License-Identifier: MIT */
/*
 * The multi-gateway model's state machine (src/backend/rbd_ha.c): who takes a free lock, when
 * a silent owner counts as dead, an owner whose watch is being re-established kept alive by its
 * heartbeat record (and only by a fresh one of its own, for a bounded re-watch), fencing and rejoining, SET TARGET PORT
 * GROUPS with its hold-down, the ALUA states reported for each group, and the formats of the
 * probe answer and of the heartbeat record.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
	/* Group 1 stops answering: after three misses group 2 (first in line) breaks it. Until
	 * then group 1 stays active/optimized in group 2's answers: one missed probe is no
	 * decision (reviewh F10: it was UNAVAILABLE, and Linux moved its I/O off the owner). */
	p = probe(&b, 1, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), SB);
	/* An answer in between resets the count. */
	{
		struct scsitgt__rbd_ha_probe alive = probe(&b, 1, true, 200);

		assert_int_equal(scsitgt__rbd_ha_probed(&b, &alive), 0);
	}
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), SCSITGT__RBD_HA_DO_BREAK);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), TR);
	/* Decided: the owner is dead. */
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), UN);
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

/* Probes run back to back while one waits: two misses 250 ms apart, 1.25 s after the owner was
 * last seen alive, are no "two probes of silence" (two seconds with the defaults). The standby
 * breaks only once the silence lasted that long (reviewh F9: it broke after 1.3 s). */
static void test_short_silence_is_not_death(void **state)
{
	struct scsitgt__rbd_ha b;
	struct scsitgt__rbd_ha_cfg cfg = {
		.group = 2, .misses = 2, .silence_ms = 2000, .holddown_ms = 5000
	};
	struct scsitgt__rbd_ha_probe p;

	(void)state;
	cfg.peer_groups[cfg.npeer_groups++] = 1;
	cfg.peer_groups[cfg.npeer_groups++] = 3;
	scsitgt__rbd_ha_init(&b, &cfg);
	p = probe(&b, 1, true, 100);
	p.now_ms = 10000;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	p = probe(&b, 1, false, 0);
	p.now_ms = 11000;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	p.now_ms = 11250;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(b.state, SCSITGT__RBD_HA_STANDBY);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
	/* It answers again: nothing happened. */
	p = probe(&b, 1, true, 1400);
	p.now_ms = 11500;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	/* Silent for good: two misses and two seconds since it was last seen. */
	p = probe(&b, 1, false, 0);
	p.now_ms = 12500;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	p.now_ms = 13000;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	p.now_ms = 13500;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), SCSITGT__RBD_HA_DO_BREAK);
}

/* The lock owner's client @owner, and the heartbeat record as a probe read it: written by
 * @writer with sequence @seq, group 1, held @held ms. */
static void beat(struct scsitgt__rbd_ha_probe *p, const char *owner, const char *writer,
		 uint64_t seq, uint64_t held)
{
	snprintf(p->owner_addr, sizeof(p->owner_addr), "%s", owner);
	p->beat_read = true;
	snprintf(p->beat_addr, sizeof(p->beat_addr), "%s", writer);
	p->beat_seq = seq;
	p->beat_group = 1;
	p->beat_held_ms = held;
}

#define A1 "127.0.0.1:0/1111"
#define A2 "127.0.0.1:0/2222"

static void test_heartbeat_keeps_a_rewatching_owner(void **state)
{
	struct scsitgt__rbd_ha b;
	struct scsitgt__rbd_ha_probe p;
	unsigned int act;
	uint64_t seq = 10;

	(void)state;
	ha_init(&b, 2, false);
	/* Group 1 owns the lock and answers; its record is read as a baseline. */
	p = probe(&b, 1, true, 100);
	beat(&p, A1, A1, seq, 100);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_true(b.owner_alive);
	assert_false(b.owner_beating);
	/* Its watch breaks and its re-watch takes long: it answers nobody, but writes a new record
	 * between any two probes. However long that lasts, it is alive and active/optimized. */
	for (int i = 0; i < 50; i++) {
		p = probe(&b, 1, false, 0);
		beat(&p, A1, A1, ++seq, 1000 + 500 * (uint64_t)i);
		assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
		assert_int_equal(b.missed, 0);
		assert_true(b.owner_beating);
		assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
		assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), SB);
	}
	/* Its hold-down counts on what the record says: taken 1 s ago, SET TARGET PORT GROUPS
	 * through this gateway is refused. */
	p = probe(&b, 1, false, 0);
	beat(&p, A1, A1, ++seq, 1000);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), -EBUSY);
	/* It answers again: alive as before, not on its heartbeat alone. */
	p = probe(&b, 1, true, 30000);
	beat(&p, A1, A1, seq, 30000);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_false(b.owner_beating);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
	/* Silent again, and its record stops (dead, frozen, cut off, blocklisted): a miss per
	 * probe, and after three the standby breaks the lock. */
	p = probe(&b, 1, false, 0);
	beat(&p, A1, A1, seq, 30000);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_false(b.owner_alive);
	/* not decided yet: as last seen */
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), SCSITGT__RBD_HA_DO_BREAK);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), TR);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), UN);
}

/* An owner whose re-watch never ends (its worker thread stuck) writes its record for the
 * model's bound of ticks, then stops: a standby probing once per tick takes over after the
 * bound and cfg.misses probes more, and not before. */
static void test_heartbeat_stops_past_the_rewatch_bound(void **state)
{
	struct scsitgt__rbd_ha a, b;
	struct scsitgt__rbd_ha_probe p;
	uint32_t bound, t;
	unsigned int act = 0;
	uint64_t seq = 10;

	(void)state;
	ha_init(&a, 1, false);
	ha_init(&b, 2, false);
	bound = scsitgt__rbd_ha_rewatch_bound(&a);
	assert_int_equal(bound, SCSITGT__RBD_HA_REWATCH_TICKS_PER_MISS * a.cfg.misses);
	/* Only an owner writes a record. */
	assert_false(scsitgt__rbd_ha_beat_due(&a, 0));
	p = probe(&a, 0, false, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), SCSITGT__RBD_HA_DO_ACQUIRE);
	assert_int_equal(scsitgt__rbd_ha_acquired(&a, 0, 0), 0);
	assert_true(scsitgt__rbd_ha_beat_due(&a, 0));
	assert_true(scsitgt__rbd_ha_beat_due(&a, bound));
	assert_false(scsitgt__rbd_ha_beat_due(&a, bound + 1));
	/* The standby's baseline, the owner answering. */
	p = probe(&b, 1, true, 100);
	beat(&p, A1, A1, seq, 100);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	/* The owner's watch breaks; its re-watch is pending from tick 1 on and never ends. */
	for (t = 1; t <= bound + b.cfg.misses; t++) {
		if (scsitgt__rbd_ha_beat_due(&a, t))
			seq++;
		p = probe(&b, 1, false, 0);
		beat(&p, A1, A1, seq, 1000);
		act = scsitgt__rbd_ha_probed(&b, &p);
		if (t <= bound) {
			/* Within the bound: alive on its heartbeat, nothing moves. */
			assert_int_equal(act, 0);
			assert_true(b.owner_beating);
			assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), AO);
		} else if (t < bound + b.cfg.misses) {
			assert_int_equal(act, 0);
			assert_false(b.owner_alive);
		}
	}
	assert_int_equal(act, SCSITGT__RBD_HA_DO_BREAK);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 2), TR);
	/* The new owner's acquisition fences the stuck one (its client is blocklisted): it
	 * rejoins as a standby once reconnected. */
	assert_int_equal(scsitgt__rbd_ha_acquired(&b, 0, 0), 0);
	assert_int_equal(b.state, SCSITGT__RBD_HA_OWNER);
	assert_int_equal(scsitgt__rbd_ha_fenced(&a), SCSITGT__RBD_HA_DO_RECONNECT);
	assert_false(scsitgt__rbd_ha_beat_due(&a, 0));
	assert_int_equal(scsitgt__rbd_ha_reconnected(&a, 0), 0);
	p = probe(&a, 2, true, 10);
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	assert_int_equal(a.state, SCSITGT__RBD_HA_STANDBY);
}

/* A probe that finds group 1's client @owner owning the lock, silent, and the record @writer
 * wrote with sequence @seq: it returns @actions and leaves @missed misses counted. */
static void silent(struct scsitgt__rbd_ha *ha, const char *owner, const char *writer, uint64_t seq,
		   unsigned int actions, uint32_t missed)
{
	struct scsitgt__rbd_ha_probe p = probe(ha, 1, false, 0);

	beat(&p, owner, writer, seq, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(ha, &p), actions);
	assert_int_equal(ha->missed, missed);
}

static void test_heartbeat_proves_only_fresh_records_of_the_owner(void **state)
{
	struct scsitgt__rbd_ha b;
	struct scsitgt__rbd_ha_probe p;

	(void)state;
	/* The first record read of a silent owner is a baseline, not a proof (it may be all a
	 * dead owner left behind); the next, higher one is. */
	ha_init(&b, 2, false);
	silent(&b, A1, A1, 99, 0, 1);
	silent(&b, A1, A1, 100, 0, 0);
	assert_true(b.owner_beating);
	/* A lower sequence (a late write landing) or one read before proves nothing. */
	silent(&b, A1, A1, 50, 0, 1);
	silent(&b, A1, A1, 100, 0, 2);
	silent(&b, A1, A1, 101, 0, 0);
	/* A record going on, but written by another client than the lock's owner (a former
	 * owner, fenced, whose writes somehow land; the owner's own previous client): no proof
	 * for the owner, which is taken over after three misses. */
	silent(&b, A2, A1, 200, 0, 1);
	silent(&b, A2, A1, 201, 0, 2);
	silent(&b, A2, A1, 202, SCSITGT__RBD_HA_DO_BREAK, 3);
	/* The lock's owner changed: the new owner's first record is a baseline again, whatever
	 * the former owner's sequence was. */
	ha_init(&b, 2, false);
	silent(&b, A1, A1, 500, 0, 1);
	silent(&b, A2, A2, 501, 0, 2);
	silent(&b, A2, A2, 502, 0, 0);
	/* No record read (missing, unreadable), or a failed probe: no proof, and a failed probe
	 * counts no miss either. */
	p = probe(&b, 1, false, 0);
	beat(&p, A2, A2, 503, 0);
	p.beat_read = false;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(b.missed, 1);
	p.beat_read = true;
	p.rc = -ETIMEDOUT;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(b.missed, 1);
	silent(&b, A2, A2, 503, 0, 0);
	/* A free lock: nobody to vouch for, whatever the record says (group 1, first in line,
	 * is to take it). */
	p = probe(&b, 0, false, 0);
	beat(&p, "", A2, 504, 0);
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_false(b.owner_alive);
	assert_false(b.owner_beating);
	assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), SB);
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

/* Groups 1..3 (and @extra) that gateway @ha reports active/optimized. */
static unsigned int ao_groups(const struct scsitgt__rbd_ha *ha, uint16_t extra)
{
	unsigned int n = scsitgt__rbd_ha_alua(ha, extra) == AO;

	for (uint16_t g = 1; g <= 3; g++)
		n += g != extra && scsitgt__rbd_ha_alua(ha, g) == AO;
	return n;
}

/*
 * A stale or corrupted answer of a peer that claims to own the lock while another live gateway
 * holds it (or nobody does): only the lock's owner is reported active/optimized, never two
 * groups at once.
 */
static void test_stale_owner_claim_is_not_active(void **state)
{
	struct scsitgt__rbd_ha c, b;
	struct scsitgt__rbd_ha_probe p;

	(void)state;
	ha_init(&c, 3, false);
	/* Group 2 owns the lock and answers; group 1, its former owner, still says "owner". */
	p = probe(&c, 2, true, 100);
	p.peers[0].state = SCSITGT__RBD_HA_OWNER;
	assert_int_equal(p.peers[0].group, 1);
	assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 2), AO);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 1), UN);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 3), SB);
	assert_int_equal(ao_groups(&c, 0), 1);
	/* A corrupted answer for a group nobody configured claims it too. */
	peer(&p, 9, SCSITGT__RBD_HA_OWNER);
	assert_int_equal(scsitgt__rbd_ha_probed(&c, &p), 0);
	assert_int_equal(scsitgt__rbd_ha_alua(&c, 9), UN);
	assert_int_equal(ao_groups(&c, 9), 1);
	/* The lock free, or its owner silent: a claim alone makes nobody active/optimized. */
	ha_init(&b, 2, false);
	for (int locked = 0; locked < 2; locked++) {
		p = probe(&b, locked ? 3 : 0, false, 0);
		assert_int_equal(p.peers[0].group, 1);
		p.peers[0].state = SCSITGT__RBD_HA_OWNER;
		(void)scsitgt__rbd_ha_probed(&b, &p);
		assert_int_equal(scsitgt__rbd_ha_alua(&b, 1), UN);
		assert_int_equal(ao_groups(&b, 0), b.state == SCSITGT__RBD_HA_OWNER);
		ha_init(&b, 2, false);
	}
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
	assert_string_equal(buf, "g=7 s=3 p=1 h=2500 r=0 m=0 a=127.0.0.1:0/1234");
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

/*
 * Two gateways, one multipath configuration that activates the standby's path with SET TARGET
 * PORT GROUPS every second, for an hour: the live owner's hold-down doubles per takeover in a
 * row (5 s, 10 s, 20 s ... 640 s), so the lock moves about ten times, not 720 (reviewh F8);
 * an owner left alone for the quiet period (twice the longest) starts the count again.
 */
static void test_stpg_pingpong_backs_off(void **state)
{
	struct scsitgt__rbd_ha gw[2];
	uint64_t last_move = 0, gap = 0;
	unsigned int moves = 0, act;
	char buf[256], addr[64];

	(void)state;
	for (int i = 0; i < 2; i++) {
		ha_init(&gw[i], (uint16_t)(i + 1), false);
		gw[i].pr_shared = true;
	}
	gw[0].state = SCSITGT__RBD_HA_OWNER;
	gw[0].owned_since = 0;
	gw[1].state = SCSITGT__RBD_HA_STANDBY;
	for (uint64_t t = 1000; t <= 3600 * 1000; t += 1000) {
		int o = gw[0].state == SCSITGT__RBD_HA_OWNER ? 0 : 1, sb = 1 - o;
		struct scsitgt__rbd_ha_probe p;
		struct scsitgt__rbd_ha_peer pe;
		uint64_t held;
		int n;

		/* The standby's probe: the owner's answer, as the wire carries it. */
		n = scsitgt__rbd_ha_ack_format(buf, sizeof(buf), &gw[o], t, "o");
		assert_true(n > 0);
		assert_int_equal(
			scsitgt__rbd_ha_ack_parse(buf, (size_t)n, &pe, &held, addr, sizeof(addr)),
			0);
		memset(&p, 0, sizeof(p));
		p.locked = true;
		p.owner_alive = true;
		p.owner_group = pe.group;
		p.owner_held_ms = held;
		p.owner_pr = pe.pr;
		p.owner_streak = pe.streak;
		p.peers[p.npeers++] = pe;
		p.now_ms = t;
		snprintf(p.owner_addr, sizeof(p.owner_addr), "o");
		assert_int_equal(scsitgt__rbd_ha_probed(&gw[sb], &p), 0);
		if (scsitgt__rbd_ha_request(&gw[sb], gw[sb].cfg.group, AO, t, &act) == -EBUSY)
			continue;
		assert_int_equal(act, SCSITGT__RBD_HA_DO_BREAK);
		assert_true(gw[sb].stpg_took);
		/* Each wait at least doubles until the cap. */
		if (moves >= 2 && gap < 640 * 1000)
			assert_true(t - last_move >= 2 * gap);
		gap = t - last_move;
		last_move = t;
		moves++;
		assert_int_equal(scsitgt__rbd_ha_acquired(&gw[sb], 0, t), 0);
		assert_int_equal(scsitgt__rbd_ha_fenced(&gw[o]), SCSITGT__RBD_HA_DO_RECONNECT);
		assert_int_equal(scsitgt__rbd_ha_reconnected(&gw[o], 0), 0);
		gw[o].state = SCSITGT__RBD_HA_STANDBY;
		gw[o].probed = false;
	}
	/* 5+10+...+640 s is 1275 s for 8 moves, then one per 640 s: 11 in the hour. */
	assert_true(moves >= 8);
	assert_true(moves <= 12);
	/* Quiet for the period (twice 640 s): the next takeover starts a new streak. */
	{
		struct scsitgt__rbd_ha b;
		struct scsitgt__rbd_ha_probe p;

		ha_init(&b, 2, false);
		p = probe(&b, 1, true, 1280 * 1000);
		p.owner_streak = SCSITGT__RBD_HA_STREAK_MAX;
		assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
		assert_int_equal(scsitgt__rbd_ha_request(&b, 2, AO, 0, &act), 1);
		assert_int_equal(b.next_streak, 1);
		assert_int_equal(scsitgt__rbd_ha_acquired(&b, 0, 0), 0);
		assert_int_equal(scsitgt__rbd_ha_holddown(&b, b.streak), 10000);
		/* A takeover of a dead owner is no STPG streak. */
		ha_init(&b, 2, false);
		b.streak = 3;
		assert_int_equal(scsitgt__rbd_ha_fenced(&b), SCSITGT__RBD_HA_DO_RECONNECT);
		assert_int_equal(b.streak, 0);
	}
}

/*
 * A gateway with local reservations next to one that shares them (reviewh F12): the answers
 * say which (r=); the local one never takes the lock, not even a free one nor on request, and
 * the sharing one takes it over from a live local owner at once. An older gateway that does not
 * say is taken to share alike.
 */
static void test_pr_mode_clash(void **state)
{
	struct scsitgt__rbd_ha a, b;
	struct scsitgt__rbd_ha_probe p;
	struct scsitgt__rbd_ha_peer pe;
	char buf[256], addr[64];
	uint64_t held;
	unsigned int act;
	int n;

	(void)state;
	/* B keeps them locally (nopr), preferred and lowest: a free lock all the same. */
	ha_init(&b, 1, true);
	b.pr_shared = false;
	p = probe(&b, 0, false, 0);
	for (size_t i = 0; i < p.npeers; i++)
		p.peers[i].pr = p.peers[i].group == 2 ? SCSITGT__RBD_HA_PR_SHARED :
							SCSITGT__RBD_HA_PR_UNKNOWN;
	for (int i = 0; i < 10; i++)
		assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(b.pr_clash, 2);
	assert_int_equal(scsitgt__rbd_ha_request(&b, 1, AO, 0, &act), -EPERM);
	assert_int_equal(act, 0);
	/* Nor does it break a silent owner's lock. */
	p = probe(&b, 3, false, 0);
	snprintf(p.owner_addr, sizeof(p.owner_addr), "x");
	for (size_t i = 0; i < p.npeers; i++)
		p.peers[i].pr = SCSITGT__RBD_HA_PR_SHARED;
	p.now_ms = 100000;
	for (int i = 0; i < 10; i++)
		assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), 0);
	assert_int_equal(b.state, SCSITGT__RBD_HA_STANDBY);
	/* Alone (the sharing gateways gone), a local one serves: one gateway, nopr. */
	p = probe(&b, 0, false, 0);
	p.npeers = 0;
	assert_int_equal(scsitgt__rbd_ha_probed(&b, &p), SCSITGT__RBD_HA_DO_ACQUIRE);
	assert_int_equal(scsitgt__rbd_ha_acquired(&b, 0, 0), 0);
	/* Its answer says so. */
	n = scsitgt__rbd_ha_ack_format(buf, sizeof(buf), &b, 100, "b");
	assert_int_equal(scsitgt__rbd_ha_ack_parse(buf, (size_t)n, &pe, &held, addr, sizeof(addr)),
			 0);
	assert_int_equal(pe.pr, SCSITGT__RBD_HA_PR_LOCAL);
	/* A, sharing, joins next to that live local owner (held 100 ms: no hold-down counts). */
	ha_init(&a, 2, false);
	a.pr_shared = true;
	p = probe(&a, 1, true, held);
	p.owner_pr = pe.pr;
	p.peers[0].pr = pe.pr;
	snprintf(p.owner_addr, sizeof(p.owner_addr), "b");
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), SCSITGT__RBD_HA_DO_BREAK);
	assert_int_equal(a.pr_clash, 1);
	/* The same owner sharing them, or not saying (an older gateway): left alone. */
	ha_init(&a, 2, false);
	a.pr_shared = true;
	p.owner_pr = SCSITGT__RBD_HA_PR_UNKNOWN;
	p.peers[0].pr = SCSITGT__RBD_HA_PR_UNKNOWN;
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	assert_int_equal(a.pr_clash, 0);
	p.owner_pr = SCSITGT__RBD_HA_PR_SHARED;
	p.peers[0].pr = SCSITGT__RBD_HA_PR_SHARED;
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	/* An older gateway's answer (no r=, no m=) still parses. */
	assert_int_equal(scsitgt__rbd_ha_ack_parse("g=1 s=3 p=0 h=5 a=x", 19, &pe, &held, addr,
						   sizeof(addr)),
			 0);
	assert_int_equal(pe.pr, SCSITGT__RBD_HA_PR_UNKNOWN);
	assert_int_equal(pe.streak, 0);
	assert_int_equal(scsitgt__rbd_ha_ack_parse("g=1 s=3 p=0 h=5 r=1 m=7 a=x", 27, &pe, &held,
						   addr, sizeof(addr)),
			 0);
	assert_int_equal(pe.pr, SCSITGT__RBD_HA_PR_SHARED);
	assert_int_equal(pe.streak, 7);
	static const char *bad[] = { "g=1 s=3 p=0 h=5 r=2 a=x", "g=1 s=3 p=0 h=5 m=8 a=x",
				     "g=1 s=3 p=0 h=5 m=1 r=1 a=x", "g=1 s=3 p=0 h=5 r= a=x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(scsitgt__rbd_ha_ack_parse(bad[i], strlen(bad[i]), &pe, &held, addr,
							   sizeof(addr)),
				 -EINVAL);
}

/*
 * Relative target port ids cross-checked through the answers (reviewh F11): a peer that claims
 * one of this gateway's port ids, or not the one this gateway's configuration gives its group,
 * is reported (port_clash_*); older answers without t= are not.
 */
static void test_port_clash(void **state)
{
	struct scsitgt__rbd_ha a, b;
	struct scsitgt__rbd_ha_probe p;
	struct scsitgt__rbd_ha_peer pe;
	char buf[256], addr[64];
	uint64_t held;
	int n;

	(void)state;
	/* B (group 2): ports 2 and 5; A (group 1) says group 2 holds port 2, A's own port 1. */
	ha_init(&b, 2, false);
	b.cfg.nports = 2;
	b.cfg.ports[0] = 2;
	b.cfg.ports[1] = 5;
	n = scsitgt__rbd_ha_ack_format(buf, sizeof(buf), &b, 0, "b");
	assert_string_equal(buf, "g=2 s=0 p=0 h=0 r=0 m=0 t=2,5 a=b");
	assert_int_equal(scsitgt__rbd_ha_ack_parse(buf, (size_t)n, &pe, &held, addr, sizeof(addr)),
			 0);
	assert_int_equal(pe.nports, 2);
	assert_int_equal(pe.ports[1], 5);
	ha_init(&a, 1, false);
	a.cfg.nports = 1;
	a.cfg.ports[0] = 1;
	a.cfg.peer_ports[0] = 2; /* peer_groups[0] is 2 */
	p = probe(&a, 3, true, 1000);
	p.peers[0] = pe;
	assert_int_equal(scsitgt__rbd_ha_probed(&a, &p), 0);
	assert_int_equal(a.port_clash_group, 0);
	/* B mis-set with port 1, A's own. */
	p.peers[0].ports[1] = 1;
	scsitgt__rbd_ha_probed(&a, &p);
	assert_int_equal(a.port_clash_group, 2);
	assert_int_equal(a.port_clash_port, 1);
	assert_true(a.port_clash_own);
	/* B without the port A reports for it. */
	p.peers[0].ports[0] = 7;
	p.peers[0].ports[1] = 8;
	scsitgt__rbd_ha_probed(&a, &p);
	assert_int_equal(a.port_clash_group, 2);
	assert_int_equal(a.port_clash_port, 2);
	assert_false(a.port_clash_own);
	/* An older answer (no t=): nothing to compare. */
	p.peers[0].nports = 0;
	scsitgt__rbd_ha_probed(&a, &p);
	assert_int_equal(a.port_clash_group, 0);
	/* The list as written: no empty, zero, too large or too many entries. */
	static const char *bad[] = {
		"g=1 s=1 p=0 h=0 t= a=x",     "g=1 s=1 p=0 h=0 t=0 a=x",
		"g=1 s=1 p=0 h=0 t=1, a=x",   "g=1 s=1 p=0 h=0 t=65536 a=x",
		"g=1 s=1 p=0 h=0 t=1,,2 a=x", "g=1 s=1 p=0 h=0 t=1,2,3,4,5,6,7,8,9 a=x",
		"g=1 s=1 p=0 h=0 t=01 a=x",   "g=1 s=1 p=0 h=0 t=1 m=0 a=x"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(scsitgt__rbd_ha_ack_parse(bad[i], strlen(bad[i]), &pe, &held, addr,
							   sizeof(addr)),
				 -EINVAL);
	assert_int_equal(scsitgt__rbd_ha_ack_parse("g=1 s=1 p=0 h=0 t=65535,1,2,3,4,5,6,7 a=x", 41,
						   &pe, &held, addr, sizeof(addr)),
			 0);
	assert_int_equal(pe.nports, 8);
	assert_int_equal(pe.ports[0], 65535);
}

static void test_beat_format(void **state)
{
	struct scsitgt__rbd_ha ha;
	char buf[256], addr[64];
	uint64_t seq, held;
	uint16_t group;
	int n;

	(void)state;
	ha_init(&ha, 7, false);
	ha.state = SCSITGT__RBD_HA_OWNER;
	ha.owned_since = 1000;
	n = scsitgt__rbd_ha_beat_format(buf, sizeof(buf), &ha, 42, 3500, "127.0.0.1:0/1234");
	assert_true(n > 0);
	assert_string_equal(buf, "g=7 n=42 h=2500 a=127.0.0.1:0/1234");
	assert_int_equal(
		scsitgt__rbd_ha_beat_parse(buf, (size_t)n, &group, &seq, &held, addr, sizeof(addr)),
		0);
	assert_int_equal(group, 7);
	assert_int_equal(seq, 42);
	assert_int_equal(held, 2500);
	assert_string_equal(addr, "127.0.0.1:0/1234");
	assert_int_equal(scsitgt__rbd_ha_beat_format(buf, 10, &ha, 1, 0, "x"), -ENOSPC);
	static const char *bad[] = { "",
				     "g=0 n=1 h=0 a=x",
				     "g=70000 n=1 h=0 a=x",
				     "g=1 n=1 h=0",
				     "g=1 s=1 p=0 h=0 a=x",
				     "g=1 n=1 h=0 a=x trailing",
				     "hello" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(scsitgt__rbd_ha_beat_parse(bad[i], strlen(bad[i]), &group, &seq,
							    &held, addr, sizeof(addr)),
				 -EINVAL);
	assert_int_equal(scsitgt__rbd_ha_beat_parse("g=1 n=1 h=0 a=0123456789", 24, &group, &seq,
						    &held, addr, 4),
			 -EINVAL);
}

/*
 * A record this code could not have written is refused, whatever sscanf would make of it: a
 * number past its type wrapped back into range ("g=4294967297" was group 1, "s=4294967298"
 * state 2), a sign, a blank, a leading zero, a number past 64 bits, a blank in the address
 * (fuzz_rbd_ha found the first).
 */
static void test_records_refuse_what_no_gateway_writes(void **state)
{
	static const char *bad_ack[] = { "g=4294967297 s=1 p=0 h=0 a=x",
					 "g=1 s=4294967298 p=0 h=0 a=x",
					 "g=1 s=1 p=4294967297 h=0 a=x",
					 "g=1 s=1 p=0 h=18446744073709551616 a=x",
					 "g=1 s=1 p=0 h=-1 a=x",
					 "g=+1 s=1 p=0 h=0 a=x",
					 "g= 1 s=1 p=0 h=0 a=x",
					 "g=01 s=1 p=0 h=0 a=x",
					 "g=1  s=1 p=0 h=0 a=x",
					 "g=1 s=1 p=0 h=0 a=x\t",
					 "g=1 s=1 p=0 h=0 a=" };
	static const char *bad_beat[] = { "g=65537 n=1 h=0 a=x", "g=1 n=-1 h=0 a=x",
					  "g=1 n=18446744073709551616 h=0 a=x", "g=1 n=007 h=0 a=x",
					  "g=1 n=1 h=+0 a=x" };
	struct scsitgt__rbd_ha_peer pe;
	char addr[64];
	uint64_t held, seq;
	uint16_t group;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_ack) / sizeof(bad_ack[0]); i++)
		assert_int_equal(scsitgt__rbd_ha_ack_parse(bad_ack[i], strlen(bad_ack[i]), &pe,
							   &held, addr, sizeof(addr)),
				 -EINVAL);
	for (size_t i = 0; i < sizeof(bad_beat) / sizeof(bad_beat[0]); i++)
		assert_int_equal(scsitgt__rbd_ha_beat_parse(bad_beat[i], strlen(bad_beat[i]),
							    &group, &seq, &held, addr,
							    sizeof(addr)),
				 -EINVAL);
	/* The extremes it writes itself still read back. */
	assert_int_equal(scsitgt__rbd_ha_ack_parse("g=65535 s=4 p=1 h=18446744073709551615 a=-", 42,
						   &pe, &held, addr, sizeof(addr)),
			 0);
	assert_int_equal(pe.group, 65535);
	assert_int_equal(pe.state, SCSITGT__RBD_HA_FENCED);
	assert_true(held == UINT64_MAX);
	assert_string_equal(addr, "-");
	assert_int_equal(scsitgt__rbd_ha_beat_parse("g=1 n=0 h=0 a=10.0.0.1:0/1", 26, &group, &seq,
						    &held, addr, sizeof(addr)),
			 0);
	assert_true(group == 1 && seq == 0 && held == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_lock_goes_to_the_first_in_line),
		cmocka_unit_test(test_live_owner_keeps_the_lock),
		cmocka_unit_test(test_silent_owner_is_broken),
		cmocka_unit_test(test_short_silence_is_not_death),
		cmocka_unit_test(test_heartbeat_keeps_a_rewatching_owner),
		cmocka_unit_test(test_heartbeat_proves_only_fresh_records_of_the_owner),
		cmocka_unit_test(test_heartbeat_stops_past_the_rewatch_bound),
		cmocka_unit_test(test_fenced_owner_rejoins_as_standby),
		cmocka_unit_test(test_stale_owner_claim_is_not_active),
		cmocka_unit_test(test_stpg),
		cmocka_unit_test(test_ack_format),
		cmocka_unit_test(test_stpg_pingpong_backs_off),
		cmocka_unit_test(test_pr_mode_clash),
		cmocka_unit_test(test_port_clash),
		cmocka_unit_test(test_beat_format),
		cmocka_unit_test(test_records_refuse_what_no_gateway_writes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
