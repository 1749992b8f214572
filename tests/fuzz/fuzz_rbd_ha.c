/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what the RBD gateways of one image read from each other through the cluster
 * (src/backend/rbd_ha.c; docs/rbd.md, "Several gateways: the HA model"): the probe answers the
 * other gateways send back on the gateway object's notify, and the owner's heartbeat record
 * (an xattr of that object). Another gateway, an older version, or a corrupted object can
 * hand back anything; a gateway must parse or refuse it, and its state machine must keep its
 * rules whatever the answers say.
 *
 * The input is lines; the first configures this gateway, each next one is a step:
 *   "GROUP MISSES HOLDDOWN_MS PREFERRED PEER..."  this gateway's configuration
 *   L<addr>    the lock's owner for the next probes (empty: nobody holds the lock)
 *   M<0|1>     whether this gateway's client owns it (rbd_is_exclusive_lock_owner)
 *   A<bytes>   a probe answer, collected for the next probe (at most 24 per probe)
 *   B<bytes>   the heartbeat record the next probe reads (B alone: none)
 *   P          a probe, assembled as rbd_gateway.c's probe_work() does
 *   X          a probe that failed (the cluster did not answer)
 *   Q<n>       the acquisition ended (n picks 0, -ESHUTDOWN, -EBUSY, -ETIMEDOUT)
 *   F / R<n>   fenced / the reconnection ended (n 0: ok, else failed)
 *   S<g> <a>   an initiator's SET TARGET PORT GROUPS: group g to ALUA state a
 *   T<ms>      the clock advances
 * After each step the state machine's invariants are checked, and this gateway's own answer
 * and heartbeat record must parse back to what it formatted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/rbd_ha.h"
#include "libscsitgt/alua.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* As rbd_gateway.c sizes them: an address, and the answer and record buffers. */
#define ADDR_MAX 160
#define ACK_MAX 256
#define MAX_ACKS 24

static const char self_addr[] = "192.0.2.1:0/4001";

struct harness {
	struct scsitgt__rbd_ha ha;
	uint64_t now;
	char owner[ADDR_MAX];
	bool mine;
	size_t nacks;
	/* Exact-size copies (ASan sees a read past one), freed by the probe or at the end. */
	char *acks[MAX_ACKS];
	size_t ack_len[MAX_ACKS];
	char *beat;
	size_t beat_len;
};

/* An unsigned number at *@p (digits only), then past one space; @max bounds it. */
static unsigned long long take_num(const char **p, const char *end, unsigned long long max)
{
	unsigned long long v = 0;

	while (*p < end && **p >= '0' && **p <= '9') {
		unsigned long long d = (unsigned long long)(**p - '0');

		v = d > max || v > (max - d) / 10 ? max : v * 10 + d;
		(*p)++;
	}
	if (*p < end && **p == ' ')
		(*p)++;
	return v;
}

static void configure(struct harness *h, const char *p, const char *end)
{
	struct scsitgt__rbd_ha_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.group = (uint16_t)take_num(&p, end, UINT16_MAX);
	cfg.misses = (uint32_t)take_num(&p, end, UINT32_MAX);
	cfg.holddown_ms = take_num(&p, end, UINT64_MAX);
	cfg.preferred = take_num(&p, end, 1) != 0;
	while (p < end && cfg.npeer_groups < SCSITGT__RBD_HA_MAX_PEERS)
		cfg.peer_groups[cfg.npeer_groups++] = (uint16_t)take_num(&p, end, UINT16_MAX);
	scsitgt__rbd_ha_init(&h->ha, &cfg);
	CHECK(h->ha.cfg.misses >= 1);
	CHECK(h->ha.state == SCSITGT__RBD_HA_JOINING);
}

/* A parsed answer is one this code could have written: formatted again, it is the same bytes
 * (numbers in range, no sign, no leading zero, no blank), and it names a group and a state the
 * model knows. */
static void check_ack(const char *buf, size_t len)
{
	struct scsitgt__rbd_ha_peer pe, pe2;
	char addr[ADDR_MAX], addr2[ADDR_MAX], again[ACK_MAX + 64];
	uint64_t held, held2;
	int n;

	if (scsitgt__rbd_ha_ack_parse(buf, len, &pe, &held, addr, sizeof(addr)) != 0)
		return;
	CHECK(pe.group != 0 && pe.state <= SCSITGT__RBD_HA_FENCED);
	CHECK(strlen(addr) > 0 && strlen(addr) < sizeof(addr));
	n = snprintf(again, sizeof(again), "g=%u s=%u p=%u h=%" PRIu64 " a=%s", pe.group,
		     (unsigned int)pe.state, pe.preferred ? 1u : 0u, held, addr);
	CHECK(n > 0 && (size_t)n == len && memcmp(again, buf, len) == 0);
	CHECK(scsitgt__rbd_ha_ack_parse(again, (size_t)n, &pe2, &held2, addr2, sizeof(addr2)) == 0);
	CHECK(pe2.group == pe.group && pe2.state == pe.state && pe2.preferred == pe.preferred);
	CHECK(held2 == held && strcmp(addr2, addr) == 0);
	/* A buffer too small for the address is a refusal, never an overflow. */
	CHECK(scsitgt__rbd_ha_ack_parse(buf, len, &pe2, &held2, addr2, strlen(addr)) == -EINVAL);
}

static void check_beat(const char *buf, size_t len)
{
	char addr[ADDR_MAX], again[ACK_MAX + 64];
	uint64_t seq, held;
	uint16_t g;
	int n;

	if (scsitgt__rbd_ha_beat_parse(buf, len, &g, &seq, &held, addr, sizeof(addr)) != 0)
		return;
	CHECK(g != 0 && strlen(addr) > 0 && strlen(addr) < sizeof(addr));
	n = snprintf(again, sizeof(again), "g=%u n=%" PRIu64 " h=%" PRIu64 " a=%s", g, seq, held,
		     addr);
	CHECK(n > 0 && (size_t)n == len && memcmp(again, buf, len) == 0);
	CHECK(scsitgt__rbd_ha_beat_parse(buf, len, &g, &seq, &held, addr, strlen(addr)) == -EINVAL);
}

static void drop_acks(struct harness *h)
{
	for (size_t i = 0; i < h->nacks; i++)
		free(h->acks[i]);
	h->nacks = 0;
}

static char *copy(const char *p, size_t len)
{
	char *c = malloc(len ? len : 1);

	if (c && len)
		memcpy(c, p, len);
	return c;
}

/* rbd_gateway.c's probe_work(): the lock, the answers, then the owner's record. */
static unsigned int probe(struct harness *h)
{
	struct scsitgt__rbd_ha_probe p;

	memset(&p, 0, sizeof(p));
	p.locked = h->owner[0] != '\0';
	p.mine = h->mine;
	for (size_t i = 0; i < h->nacks; i++) {
		struct scsitgt__rbd_ha_peer peer;
		char addr[ADDR_MAX];
		uint64_t held;

		if (scsitgt__rbd_ha_ack_parse(h->acks[i], h->ack_len[i], &peer, &held, addr,
					      sizeof(addr)) < 0)
			continue;
		if (p.locked && strcmp(addr, h->owner) == 0 && !p.mine) {
			p.owner_alive = true;
			p.owner_group = peer.group;
			p.owner_held_ms = held;
		}
		if (peer.group != h->ha.cfg.group && p.npeers < SCSITGT__RBD_HA_MAX_PEERS)
			p.peers[p.npeers++] = peer;
	}
	snprintf(p.owner_addr, sizeof(p.owner_addr), "%s", h->owner);
	if (p.locked && !p.mine && h->beat && h->beat_len > 0 && h->beat_len <= ACK_MAX)
		p.beat_read = scsitgt__rbd_ha_beat_parse(h->beat, h->beat_len, &p.beat_group,
							 &p.beat_seq, &p.beat_held_ms, p.beat_addr,
							 sizeof(p.beat_addr)) == 0;
	drop_acks(h);
	return scsitgt__rbd_ha_probed(&h->ha, &p);
}

static bool alua_known(uint8_t s)
{
	return s == SCSITGT_ALUA_ACTIVE_OPTIMIZED || s == SCSITGT_ALUA_STANDBY ||
	       s == SCSITGT_ALUA_UNAVAILABLE || s == SCSITGT_ALUA_TRANSITIONING;
}

/* The rules every step keeps (rbd_ha.c's header). */
static void check_state(struct harness *h, unsigned int actions)
{
	const struct scsitgt__rbd_ha *ha = &h->ha;
	char buf[ACK_MAX], addr[ADDR_MAX];
	struct scsitgt__rbd_ha_peer pe;
	uint64_t held, seq;
	uint16_t g;
	int n;

	CHECK((actions & ~(unsigned int)(SCSITGT__RBD_HA_DO_ACQUIRE | SCSITGT__RBD_HA_DO_BREAK |
					 SCSITGT__RBD_HA_DO_RECONNECT)) == 0);
	CHECK(ha->state <= SCSITGT__RBD_HA_FENCED);
	CHECK(strcmp(scsitgt__rbd_ha_state_name(ha->state), "?") != 0);
	if (actions & (SCSITGT__RBD_HA_DO_ACQUIRE | SCSITGT__RBD_HA_DO_BREAK))
		CHECK(ha->state == SCSITGT__RBD_HA_ACQUIRING);
	if (actions & SCSITGT__RBD_HA_DO_RECONNECT)
		CHECK(ha->state == SCSITGT__RBD_HA_FENCED);
	CHECK(ha->npeers <= SCSITGT__RBD_HA_MAX_PEERS);
	CHECK(ha->cfg.npeer_groups <= SCSITGT__RBD_HA_MAX_PEERS);
	CHECK(alua_known(scsitgt__rbd_ha_alua(ha, ha->cfg.group)));
	for (size_t i = 0; i < ha->cfg.npeer_groups; i++)
		CHECK(alua_known(scsitgt__rbd_ha_alua(ha, ha->cfg.peer_groups[i])));
	for (size_t i = 0; i < ha->npeers; i++)
		CHECK(alua_known(scsitgt__rbd_ha_alua(ha, ha->peers[i].group)));
	/* Rule 1: this gateway is active/optimized exactly when it owns the lock. */
	CHECK((scsitgt__rbd_ha_alua(ha, ha->cfg.group) == SCSITGT_ALUA_ACTIVE_OPTIMIZED) ==
	      (ha->state == SCSITGT__RBD_HA_OWNER));
	/* Rule 1 across groups: a peer is active/optimized only as the live lock owner (or the
	 * silent one this standby has not decided is dead: as last seen), so never two groups
	 * at once. */
	for (size_t i = 0; i < ha->cfg.npeer_groups + ha->npeers; i++) {
		uint16_t pg = i < ha->cfg.npeer_groups ? ha->cfg.peer_groups[i] :
							 ha->peers[i - ha->cfg.npeer_groups].group;

		if (pg != ha->cfg.group &&
		    scsitgt__rbd_ha_alua(ha, pg) == SCSITGT_ALUA_ACTIVE_OPTIMIZED)
			CHECK(ha->state != SCSITGT__RBD_HA_OWNER &&
			      (ha->owner_alive || ha->owner_presumed) && pg == ha->owner_group);
		/* The presumption holds only while this gateway stands by, the lock another's. */
		if (ha->owner_presumed)
			CHECK(!ha->owner_alive && ha->locked && ha->owner_group != 0 &&
			      (ha->state == SCSITGT__RBD_HA_STANDBY ||
			       ha->state == SCSITGT__RBD_HA_JOINING ||
			       ha->state == SCSITGT__RBD_HA_FENCED));
	}
	CHECK(scsitgt__rbd_ha_rewatch_bound(ha) >= SCSITGT__RBD_HA_REWATCH_TICKS_PER_MISS);
	CHECK(scsitgt__rbd_ha_beat_due(ha, 0) == (ha->state == SCSITGT__RBD_HA_OWNER));
	if (scsitgt__rbd_ha_rewatch_bound(ha) < UINT32_MAX)
		CHECK(!scsitgt__rbd_ha_beat_due(ha, scsitgt__rbd_ha_rewatch_bound(ha) + 1));

	/* What the others read of this gateway reads back as it was written. */
	if (ha->cfg.group == 0)
		return; /* group 0 is "none": not a gateway of the model, nothing to answer */
	n = scsitgt__rbd_ha_ack_format(buf, sizeof(buf), ha, h->now, self_addr);
	CHECK(n > 0);
	CHECK(scsitgt__rbd_ha_ack_parse(buf, (size_t)n, &pe, &held, addr, sizeof(addr)) == 0);
	CHECK(pe.group == ha->cfg.group && pe.state == (uint8_t)ha->state);
	CHECK(pe.preferred == ha->cfg.preferred && strcmp(addr, self_addr) == 0);
	CHECK(held == (ha->state == SCSITGT__RBD_HA_OWNER ? h->now - ha->owned_since : 0));
	n = scsitgt__rbd_ha_beat_format(buf, sizeof(buf), ha, h->now, h->now, self_addr);
	CHECK(n > 0);
	CHECK(scsitgt__rbd_ha_beat_parse(buf, (size_t)n, &g, &seq, &held, addr, sizeof(addr)) == 0);
	CHECK(g == ha->cfg.group && seq == h->now && strcmp(addr, self_addr) == 0);
}

static unsigned int step(struct harness *h, const char *p, size_t len)
{
	static const int acquire_rc[] = { 0, -ESHUTDOWN, -EBUSY, -ETIMEDOUT };
	const char *end = p + len, *arg = p + 1;
	enum scsitgt__rbd_ha_state before = h->ha.state;
	bool alive = h->ha.owner_alive, locked = h->owner[0] != '\0';
	uint64_t held = h->ha.owner_held_ms;
	unsigned int actions = 0;
	uint16_t group;
	uint8_t alua;
	int rc;

	switch (p[0]) {
	case 'L':
		if (len - 1 < sizeof(h->owner) && memchr(arg, '\0', len - 1) == NULL) {
			memcpy(h->owner, arg, len - 1);
			h->owner[len - 1] = '\0';
		}
		break;
	case 'M':
		h->mine = len > 1 && p[1] == '1';
		break;
	case 'A':
		check_ack(arg, len - 1);
		if (h->nacks < MAX_ACKS) {
			h->acks[h->nacks] = copy(arg, len - 1);
			if (h->acks[h->nacks])
				h->ack_len[h->nacks++] = len - 1;
		}
		break;
	case 'B':
		check_beat(arg, len - 1);
		free(h->beat);
		h->beat = copy(arg, len - 1);
		h->beat_len = h->beat ? len - 1 : 0;
		break;
	case 'P':
		actions = probe(h);
		/* Rule 2: no break of a live owner's lock on a probe; a free lock is taken, a
		 * held one broken. */
		if (actions & SCSITGT__RBD_HA_DO_BREAK)
			CHECK(locked && !h->ha.owner_alive && !h->mine);
		if (actions & SCSITGT__RBD_HA_DO_ACQUIRE)
			CHECK(!locked);
		if (h->mine &&
		    (before == SCSITGT__RBD_HA_JOINING || before == SCSITGT__RBD_HA_STANDBY))
			CHECK(h->ha.state == SCSITGT__RBD_HA_OWNER);
		break;
	case 'X': {
		struct scsitgt__rbd_ha_probe failed;

		memset(&failed, 0, sizeof(failed));
		failed.rc = -ETIMEDOUT;
		actions = scsitgt__rbd_ha_probed(&h->ha, &failed);
		CHECK(actions == 0 && h->ha.state == before);
		break;
	}
	case 'Q':
		actions = scsitgt__rbd_ha_acquired(&h->ha, acquire_rc[take_num(&arg, end, 3)],
						   h->now);
		if (before != SCSITGT__RBD_HA_ACQUIRING)
			CHECK(actions == 0 && h->ha.state == before);
		break;
	case 'F':
		actions = scsitgt__rbd_ha_fenced(&h->ha);
		CHECK(h->ha.state == SCSITGT__RBD_HA_FENCED);
		break;
	case 'R':
		actions = scsitgt__rbd_ha_reconnected(&h->ha, take_num(&arg, end, 1) ? -EIO : 0);
		break;
	case 'S':
		group = (uint16_t)take_num(&arg, end, UINT16_MAX);
		alua = (uint8_t)take_num(&arg, end, 0x0f);
		rc = scsitgt__rbd_ha_request(&h->ha, group, alua, h->now, &actions);
		CHECK(rc == 0 || rc == 1 || rc == -ENOENT || rc == -EREMOTE || rc == -EBUSY ||
		      rc == -EAGAIN);
		if (actions)
			CHECK(rc == 1 && before == SCSITGT__RBD_HA_STANDBY);
		/* The hold-down: a live owner that took the lock moments ago keeps it. */
		if (actions & SCSITGT__RBD_HA_DO_BREAK)
			CHECK(!alive || held >= h->ha.cfg.holddown_ms);
		break;
	case 'T':
		h->now += take_num(&arg, end, 1u << 30);
		break;
	default:
		break;
	}
	return actions;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct harness h;
	bool configured = false;

	if (size > 1 << 16)
		return 0;
	memset(&h, 0, sizeof(h));
	h.now = 1000;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		/* An exact copy of the line: ASan sees a read past it. */
		char *line = copy(p, len);

		if (line == NULL)
			break;
		if (!configured) {
			configure(&h, line, line + len);
			configured = true;
			check_state(&h, 0);
		} else if (len > 0) {
			check_state(&h, step(&h, line, len));
		}
		free(line);
		p = nl ? nl + 1 : end;
	}
	drop_acks(&h);
	free(h.beat);
	return 0;
}
