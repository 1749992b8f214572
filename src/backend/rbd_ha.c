/* SPDX-License-Identifier: MIT */
/*
 * The multi-gateway model's decisions (rbd_ha.h; docs/rbd.md, "Several gateways: the HA
 * model").
 *
 * Rules, in order of importance:
 *  1. Only the owner of the image's exclusive lock writes (librbd refuses the others' writes
 *     with -EROFS once a client took the lock with rbd_lock_acquire()), so at most one group
 *     is active/optimized per image, and a lock change fences the former owner (breaking a
 *     lock blocklists its client).
 *  2. No gateway takes the lock from a live owner, except for an initiator's SET TARGET PORT
 *     GROUPS, and not during the owner's hold-down (doubled per such takeover in a row): no
 *     ping-pong. Also, a standby that shares reservations takes it from a live owner that
 *     keeps them locally, and a gateway with local ones never takes it while a sharing one
 *     answers (reviewh F12).
 *  3. An owner that misses cfg.misses probes in a row is dead: one standby breaks its lock
 *     and takes it (the preferred one, else the lowest group among the live standbys; any
 *     standby after twice as many misses, in case that one is stuck too). A probe is missed
 *     when the owner neither answered it nor wrote a new heartbeat record since the previous
 *     probe: an owner whose watch is being re-established answers nobody but keeps writing
 *     (for a bounded number of ticks, scsitgt__rbd_ha_rewatch_bound(): a re-watch that never
 *     ends leaves the owner unable to probe, release or hand over the lock), while a dead,
 *     stalled, blocklisted or cut-off owner can do neither.
 *  4. A free lock (a clean shutdown released it) goes the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libscsitgt/alua.h"
#include "rbd_ha.h"

void scsitgt__rbd_ha_init(struct scsitgt__rbd_ha *ha, const struct scsitgt__rbd_ha_cfg *cfg)
{
	memset(ha, 0, sizeof(*ha));
	ha->cfg = *cfg;
	if (ha->cfg.misses == 0)
		ha->cfg.misses = 1;
	if (ha->cfg.npeer_groups > SCSITGT__RBD_HA_MAX_PEERS)
		ha->cfg.npeer_groups = SCSITGT__RBD_HA_MAX_PEERS;
	if (ha->cfg.nports > SCSITGT__RBD_HA_PORTS_MAX)
		ha->cfg.nports = SCSITGT__RBD_HA_PORTS_MAX;
	ha->state = SCSITGT__RBD_HA_JOINING;
}

const char *scsitgt__rbd_ha_state_name(enum scsitgt__rbd_ha_state s)
{
	switch (s) {
	case SCSITGT__RBD_HA_JOINING:
		return "joining";
	case SCSITGT__RBD_HA_STANDBY:
		return "standby";
	case SCSITGT__RBD_HA_ACQUIRING:
		return "acquiring";
	case SCSITGT__RBD_HA_OWNER:
		return "owner";
	case SCSITGT__RBD_HA_FENCED:
		return "fenced";
	}
	return "?";
}

static uint8_t alua_of(uint8_t s)
{
	switch (s) {
	case SCSITGT__RBD_HA_OWNER:
		return SCSITGT_ALUA_ACTIVE_OPTIMIZED;
	case SCSITGT__RBD_HA_ACQUIRING:
		return SCSITGT_ALUA_TRANSITIONING;
	case SCSITGT__RBD_HA_FENCED:
		return SCSITGT_ALUA_UNAVAILABLE;
	default:
		return SCSITGT_ALUA_STANDBY;
	}
}

uint8_t scsitgt__rbd_ha_alua(const struct scsitgt__rbd_ha *ha, uint16_t group)
{
	if (group == ha->cfg.group)
		return alua_of((uint8_t)ha->state);
	/* A peer: active/optimized if it owns the lock and answers (or beats); as it describes
	 * itself if it answered; unavailable if it did not (dead, cut off, or not started). */
	if (ha->state != SCSITGT__RBD_HA_OWNER && (ha->owner_alive || ha->owner_presumed) &&
	    group == ha->owner_group)
		return SCSITGT_ALUA_ACTIVE_OPTIMIZED;
	for (size_t i = 0; i < ha->npeers; i++) {
		if (ha->peers[i].group != group)
			continue;
		/* Only the lock's owner is active/optimized (rule 1): a peer that claims it but is
		 * not the live owner the probe found (this gateway owns the lock, another one
		 * does, or the lock is free) is stale or corrupted; it cannot write either way. */
		if (ha->peers[i].state == SCSITGT__RBD_HA_OWNER)
			return SCSITGT_ALUA_UNAVAILABLE;
		return alua_of(ha->peers[i].state);
	}
	return SCSITGT_ALUA_UNAVAILABLE;
}

static uint8_t pr_mode(const struct scsitgt__rbd_ha *ha)
{
	return ha->pr_shared ? SCSITGT__RBD_HA_PR_SHARED : SCSITGT__RBD_HA_PR_LOCAL;
}

/* A peer that keeps reservations otherwise than this gateway (an older one, which does not
 * say, is taken to keep them alike). */
static bool pr_differs(const struct scsitgt__rbd_ha *ha, const struct scsitgt__rbd_ha_peer *p)
{
	return p->pr != SCSITGT__RBD_HA_PR_UNKNOWN && p->pr != pr_mode(ha);
}

/* A gateway with local reservations while one that shares them answers: it must not own the
 * lock (reviewh F12). */
static bool pr_barred(const struct scsitgt__rbd_ha *ha)
{
	if (ha->pr_shared)
		return false;
	for (size_t i = 0; i < ha->npeers; i++)
		if (ha->peers[i].pr == SCSITGT__RBD_HA_PR_SHARED)
			return true;
	return false;
}

/* Is this gateway the one to take the lock now, among itself and the live standbys? The
 * preferred gateway first, then the lowest group; a standby that keeps reservations otherwise
 * does not count (one of the two never takes the lock). */
static bool first_in_line(const struct scsitgt__rbd_ha *ha)
{
	for (size_t i = 0; i < ha->npeers; i++) {
		const struct scsitgt__rbd_ha_peer *p = &ha->peers[i];

		if (p->state != SCSITGT__RBD_HA_STANDBY && p->state != SCSITGT__RBD_HA_JOINING)
			continue;
		if (pr_differs(ha, p))
			continue;
		if (p->preferred != ha->cfg.preferred) {
			if (p->preferred)
				return false;
			continue;
		}
		if (p->group < ha->cfg.group)
			return false;
	}
	return true;
}

/* Does a peer claim one of this gateway's port ids, or a port id other than the one configured
 * for its group (reviewh F11)? The first such, into port_clash_*. */
static void port_check(struct scsitgt__rbd_ha *ha)
{
	ha->port_clash_group = 0;
	ha->port_clash_port = 0;
	ha->port_clash_own = false;
	for (size_t i = 0; i < ha->npeers; i++) {
		const struct scsitgt__rbd_ha_peer *p = &ha->peers[i];
		uint16_t expect = 0;
		bool listed = false;

		for (size_t k = 0; k < ha->cfg.npeer_groups; k++)
			if (ha->cfg.peer_groups[k] == p->group)
				expect = ha->cfg.peer_ports[k];
		for (size_t j = 0; j < p->nports; j++) {
			for (size_t k = 0; k < ha->cfg.nports; k++) {
				if (p->ports[j] == ha->cfg.ports[k]) {
					ha->port_clash_group = p->group;
					ha->port_clash_port = p->ports[j];
					ha->port_clash_own = true;
					return;
				}
			}
			listed |= p->ports[j] == expect;
		}
		/* The port this gateway reports for the peer's group is not the peer's. */
		if (expect != 0 && p->nports > 0 && !listed && ha->port_clash_group == 0) {
			ha->port_clash_group = p->group;
			ha->port_clash_port = expect;
		}
	}
}

static unsigned int start_acquire(struct scsitgt__rbd_ha *ha, unsigned int how)
{
	/* Decided: the owner, if any, is dead (or keeps reservations locally). */
	ha->owner_presumed = false;
	ha->state = SCSITGT__RBD_HA_ACQUIRING;
	ha->next_streak = 0;
	ha->stpg_took = false;
	return how;
}

/*
 * Did the owner write its heartbeat record since the previous probe? Only a record naming the
 * lock's owner counts (a fenced former owner's late write names another client), and only a
 * sequence higher than any read before for that client: the first record read of an owner is
 * a baseline, never a proof (it may be all a dead owner left). Each write proves once that the
 * owner's loop ran and its client reached the gateway object's OSD, unblocklisted.
 */
static bool beat_advanced(struct scsitgt__rbd_ha *ha, const struct scsitgt__rbd_ha_probe *p)
{
	bool advanced;

	if (!p->locked || p->mine || !p->beat_read || p->owner_addr[0] == '\0' ||
	    strcmp(p->beat_addr, p->owner_addr) != 0)
		return false;
	if (!ha->beat_known || strcmp(ha->beat_owner, p->owner_addr) != 0) {
		snprintf(ha->beat_owner, sizeof(ha->beat_owner), "%s", p->owner_addr);
		ha->beat_seq = p->beat_seq;
		ha->beat_known = true;
		return false;
	}
	advanced = p->beat_seq > ha->beat_seq;
	if (advanced)
		ha->beat_seq = p->beat_seq;
	return advanced;
}

unsigned int scsitgt__rbd_ha_probed(struct scsitgt__rbd_ha *ha,
				    const struct scsitgt__rbd_ha_probe *p)
{
	bool beating;

	if (p->rc < 0)
		return 0;
	/* The view of the others, whatever this gateway's state. */
	ha->probed = true;
	ha->npeers = p->npeers < SCSITGT__RBD_HA_MAX_PEERS ? p->npeers : SCSITGT__RBD_HA_MAX_PEERS;
	memcpy(ha->peers, p->peers, ha->npeers * sizeof(ha->peers[0]));
	ha->pr_clash = 0;
	for (size_t i = 0; i < ha->npeers && ha->pr_clash == 0; i++)
		if (pr_differs(ha, &ha->peers[i]))
			ha->pr_clash = ha->peers[i].group;
	port_check(ha);
	ha->locked = p->locked;
	beating = beat_advanced(ha, p);
	ha->owner_alive = p->locked && !p->mine && (p->owner_alive || beating);
	ha->owner_beating = ha->owner_alive && !p->owner_alive;
	if (ha->owner_alive)
		ha->alive_ms = p->now_ms;
	/*
	 * A silent owner, the same client as before: until this gateway decides it is dead, its
	 * group keeps the state it was last seen in. A single missed probe is no decision, and
	 * initiators (Linux's scsi_dh_alua) take every group's state from any path's REPORT
	 * TARGET PORT GROUPS: reporting it UNAVAILABLE (and announcing it) moved their I/O to a
	 * standby path (reviewh F10).
	 */
	ha->owner_presumed =
		!ha->owner_alive && p->locked && !p->mine && ha->owner_group != 0 &&
		(ha->state == SCSITGT__RBD_HA_STANDBY || ha->state == SCSITGT__RBD_HA_JOINING) &&
		strcmp(p->owner_addr, ha->owner_addr) == 0;
	snprintf(ha->owner_addr, sizeof(ha->owner_addr), "%s", p->locked ? p->owner_addr : "");
	if (ha->owner_presumed) {
		/* as last seen */
	} else if (!ha->owner_alive) {
		ha->owner_group = 0;
		ha->owner_held_ms = 0;
		ha->owner_streak = 0;
	} else if (p->owner_alive) {
		ha->owner_group = p->owner_group;
		ha->owner_held_ms = p->owner_held_ms;
		ha->owner_streak = p->owner_streak;
	} else {
		/* As the owner wrote them at its last tick. */
		ha->owner_group = p->beat_group;
		ha->owner_held_ms = p->beat_held_ms;
		ha->owner_streak = 0;
	}

	switch (ha->state) {
	case SCSITGT__RBD_HA_OWNER:
		/* The lock went elsewhere: another gateway broke it, so this client is
		 * blocklisted (or will be). Stop writing and start again as a standby. */
		if (!p->mine)
			return scsitgt__rbd_ha_fenced(ha);
		return 0;
	case SCSITGT__RBD_HA_JOINING:
	case SCSITGT__RBD_HA_STANDBY:
		break;
	default:
		/* Acquiring or fenced: the running job decides. */
		return 0;
	}
	ha->state = SCSITGT__RBD_HA_STANDBY;
	if (p->mine) {
		/* Cannot happen with a fresh client; trust the lock. */
		ha->state = SCSITGT__RBD_HA_OWNER;
		return 0;
	}
	if (pr_barred(ha)) {
		/* Logged by the caller (pr_clash); it stays a standby whatever happens. */
		ha->missed = 0;
		ha->free_seen = 0;
		return 0;
	}
	if (!p->locked) {
		ha->missed = 0;
		ha->free_seen++;
		if (first_in_line(ha) || ha->free_seen > 2 * ha->cfg.misses)
			return start_acquire(ha, SCSITGT__RBD_HA_DO_ACQUIRE);
		return 0;
	}
	ha->free_seen = 0;
	if (ha->owner_alive) {
		ha->missed = 0;
		/* A live owner with local reservations does not enforce the ones taken through
		 * this gateway: the first sharing standby in line fences it (it never takes the
		 * lock back while a sharing gateway answers). */
		if (p->owner_alive && ha->pr_shared && p->owner_pr == SCSITGT__RBD_HA_PR_LOCAL &&
		    first_in_line(ha))
			return start_acquire(ha, SCSITGT__RBD_HA_DO_BREAK);
		return 0;
	}
	ha->missed++;
	if (ha->cfg.silence_ms && p->now_ms - ha->alive_ms < ha->cfg.silence_ms)
		return 0; /* not silent long enough yet, however many probes missed */
	if (ha->missed >= 2 * ha->cfg.misses || (ha->missed >= ha->cfg.misses && first_in_line(ha)))
		return start_acquire(ha, SCSITGT__RBD_HA_DO_BREAK);
	return 0;
}

unsigned int scsitgt__rbd_ha_acquired(struct scsitgt__rbd_ha *ha, int rc, uint64_t now_ms)
{
	if (ha->state != SCSITGT__RBD_HA_ACQUIRING)
		return 0;
	ha->missed = 0;
	ha->free_seen = 0;
	if (rc == 0) {
		ha->state = SCSITGT__RBD_HA_OWNER;
		ha->owned_since = now_ms;
		ha->streak = ha->next_streak;
		ha->owner_alive = false;
		ha->owner_beating = false;
		ha->owner_group = 0;
		return 0;
	}
	/* -ESHUTDOWN: this client itself was blocklisted meanwhile. */
	if (rc == -ESHUTDOWN)
		return scsitgt__rbd_ha_fenced(ha);
	/* Another gateway was faster, or the owner refused: a standby again. */
	ha->state = SCSITGT__RBD_HA_STANDBY;
	return 0;
}

unsigned int scsitgt__rbd_ha_fenced(struct scsitgt__rbd_ha *ha)
{
	if (ha->state == SCSITGT__RBD_HA_FENCED)
		return 0;
	ha->state = SCSITGT__RBD_HA_FENCED;
	ha->streak = 0;
	ha->missed = 0;
	ha->free_seen = 0;
	ha->owner_alive = false;
	ha->owner_presumed = false;
	ha->owner_beating = false;
	return SCSITGT__RBD_HA_DO_RECONNECT;
}

unsigned int scsitgt__rbd_ha_reconnected(struct scsitgt__rbd_ha *ha, int rc)
{
	if (ha->state != SCSITGT__RBD_HA_FENCED)
		return 0;
	if (rc < 0)
		return SCSITGT__RBD_HA_DO_RECONNECT;
	ha->state = SCSITGT__RBD_HA_JOINING;
	ha->probed = false;
	return 0;
}

static bool is_peer(const struct scsitgt__rbd_ha *ha, uint16_t group)
{
	for (size_t i = 0; i < ha->cfg.npeer_groups; i++)
		if (ha->cfg.peer_groups[i] == group)
			return true;
	return false;
}

int scsitgt__rbd_ha_request(struct scsitgt__rbd_ha *ha, uint16_t group, uint8_t alua_state,
			    uint64_t now_ms, unsigned int *actions)
{
	bool active = alua_state == SCSITGT_ALUA_ACTIVE_OPTIMIZED ||
		      alua_state == SCSITGT_ALUA_ACTIVE_NON_OPTIMIZED;

	(void)now_ms;
	*actions = 0;
	ha->stpg_took = false;
	if (group != ha->cfg.group) {
		/* Another gateway's group: this gateway cannot move it. Asking it to step down
		 * is accepted (it does when this or another gateway takes over); asking it to
		 * become active is not something this gateway can do for it. */
		if (!is_peer(ha, group))
			return -ENOENT;
		if (active && scsitgt__rbd_ha_alua(ha, group) != SCSITGT_ALUA_ACTIVE_OPTIMIZED)
			return -EREMOTE;
		return 1;
	}
	if (!active) {
		/* The owner gives the lock up only to another gateway's takeover: stepping down
		 * on request would leave the image without a writer. */
		if (ha->state == SCSITGT__RBD_HA_OWNER || ha->state == SCSITGT__RBD_HA_ACQUIRING)
			return -EBUSY;
		return 1;
	}
	switch (ha->state) {
	case SCSITGT__RBD_HA_OWNER:
	case SCSITGT__RBD_HA_ACQUIRING:
		return 1;
	case SCSITGT__RBD_HA_STANDBY: {
		bool live = ha->locked && ha->owner_alive;
		uint8_t streak = 0;

		if (!ha->probed)
			return -EAGAIN;
		if (pr_barred(ha))
			return -EPERM;
		/*
		 * Hold-down: a live owner that took the lock moments ago keeps it, twice as long
		 * per takeover by this command in a row (each one blocklists a client for an hour
		 * and makes an osdmap epoch; a multipath configuration that activates every path
		 * would otherwise move the lock every hold-down, reviewh F8). An owner left alone
		 * for the quiet period starts the count again.
		 */
		if (live && ha->owner_held_ms < scsitgt__rbd_ha_holddown(ha, ha->owner_streak))
			return -EBUSY;
		if (live)
			streak = ha->owner_held_ms >= 2 * scsitgt__rbd_ha_holddown(
								  ha, SCSITGT__RBD_HA_STREAK_MAX) ?
					 1 :
				 ha->owner_streak < SCSITGT__RBD_HA_STREAK_MAX ?
					 (uint8_t)(ha->owner_streak + 1) :
					 SCSITGT__RBD_HA_STREAK_MAX;
		*actions = start_acquire(ha, ha->locked ? SCSITGT__RBD_HA_DO_BREAK :
							  SCSITGT__RBD_HA_DO_ACQUIRE);
		ha->next_streak = streak;
		ha->stpg_took = live;
		return 1;
	}
	default:
		/* Joining or fenced: not ready to own anything. */
		return -EAGAIN;
	}
}

uint64_t scsitgt__rbd_ha_holddown(const struct scsitgt__rbd_ha *ha, uint8_t streak)
{
	uint64_t d = ha->cfg.holddown_ms;

	for (uint8_t i = 0; i < streak && i < SCSITGT__RBD_HA_STREAK_MAX && d < UINT64_MAX / 2; i++)
		d *= 2;
	return d;
}

int scsitgt__rbd_ha_ack_format(char *buf, size_t size, const struct scsitgt__rbd_ha *ha,
			       uint64_t now_ms, const char *addr)
{
	bool owner = ha->state == SCSITGT__RBD_HA_OWNER;
	uint64_t held = owner ? now_ms - ha->owned_since : 0;
	size_t off;
	int n = snprintf(buf, size, "g=%u s=%u p=%u h=%" PRIu64 " r=%u m=%u ", ha->cfg.group,
			 (unsigned int)ha->state, ha->cfg.preferred ? 1u : 0u, held,
			 ha->pr_shared ? 1u : 0u, owner ? (unsigned int)ha->streak : 0u);

	if (n < 0 || (size_t)n >= size)
		return -ENOSPC;
	off = (size_t)n;
	for (size_t i = 0; i < ha->cfg.nports; i++) {
		n = snprintf(buf + off, size - off, "%s%u",
			     i ? "," : "t=", (unsigned int)ha->cfg.ports[i]);
		if (n < 0 || (size_t)n >= size - off)
			return -ENOSPC;
		off += (size_t)n;
	}
	n = snprintf(buf + off, size - off, "%sa=%s", ha->cfg.nports ? " " : "", addr ? addr : "-");
	if (n < 0 || (size_t)n >= size - off)
		return -ENOSPC;
	return (int)(off + (size_t)n);
}

/* The longest record either parser takes (rbd_gateway.c reads them into 256 bytes). */
#define RECORD_MAX 256

/*
 * One "K=NUMBER " field of a record at *@p, as the formats above write it: decimal digits, no
 * sign, no blank, no leading zero, at most @max; *@p moves past the blank after it. Stricter
 * than sscanf's %u, which takes "-1" and wraps "g=4294967297" to group 1 past any range check:
 * whatever this code could not have written is a corrupted record, refused.
 */
static bool take_field(const char **p, const char *end, char key, uint64_t max, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (end - s < 3 || s[0] != key || s[1] != '=' || s[2] < '0' || s[2] > '9')
		return false;
	s += 2;
	if (s[0] == '0' && end - s > 1 && s[1] != ' ')
		return false;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		uint64_t d = (uint64_t)(*s - '0');

		if (d > max || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (s == end || *s != ' ')
		return false;
	*p = s + 1;
	*out = v;
	return true;
}

/* "t=PORT[,PORT...] ": 1 to SCSITGT__RBD_HA_PORTS_MAX port ids, 1..65535, spelled as
 * take_field() takes a number; into @peer. */
static int take_ports(const char **p, const char *end, struct scsitgt__rbd_ha_peer *peer)
{
	const char *s = *p;
	uint64_t v;

	if (end - s < 2 || s[0] != 't' || s[1] != '=')
		return -EINVAL;
	s += 2;
	for (;;) {
		const char *q = s;
		uint64_t d = 0;

		if (q == end || *q < '1' || *q > '9')
			return -EINVAL;
		for (v = 0; q < end && *q >= '0' && *q <= '9'; q++) {
			d = (uint64_t)(*q - '0');
			if (v > (UINT16_MAX - d) / 10)
				return -EINVAL;
			v = v * 10 + d;
		}
		if (q == end || peer->nports == SCSITGT__RBD_HA_PORTS_MAX)
			return -EINVAL;
		peer->ports[peer->nports++] = (uint16_t)v;
		s = q + 1;
		if (*q == ' ')
			break;
		if (*q != ',')
			return -EINVAL;
	}
	*p = s;
	return 0;
}

/* The last field, "a=ADDRESS" to the end of the record: 1 to SCSITGT__RBD_HA_ADDR_MAX - 1
 * bytes, none blank nor NUL (the formats write a client address or "-"). Its length, or 0. */
static size_t addr_field(const char *p, const char *end)
{
	size_t n;

	if (end - p < 3 || p[0] != 'a' || p[1] != '=')
		return 0;
	p += 2;
	n = (size_t)(end - p);
	if (n >= SCSITGT__RBD_HA_ADDR_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] == '\0' || p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r'))
			return 0;
	return n;
}

int scsitgt__rbd_ha_ack_parse(const char *buf, size_t len, struct scsitgt__rbd_ha_peer *peer,
			      uint64_t *held_ms, char *addr, size_t addr_size)
{
	const char *p = buf, *end;
	uint64_t g, s, pref, h, r = 0, m = 0;
	bool has_r = false;
	size_t n;

	if (buf == NULL || len == 0 || len >= RECORD_MAX)
		return -EINVAL;
	end = buf + len;
	if (!take_field(&p, end, 'g', UINT16_MAX, &g) || g == 0 ||
	    !take_field(&p, end, 's', SCSITGT__RBD_HA_FENCED, &s) ||
	    !take_field(&p, end, 'p', 1, &pref) || !take_field(&p, end, 'h', UINT64_MAX, &h))
		return -EINVAL;
	/* Optional, in this order (an older gateway writes neither). */
	if (p < end && *p == 'r') {
		if (!take_field(&p, end, 'r', 1, &r))
			return -EINVAL;
		has_r = true;
	}
	if (p < end && *p == 'm' && !take_field(&p, end, 'm', SCSITGT__RBD_HA_STREAK_MAX, &m))
		return -EINVAL;
	peer->nports = 0;
	if (p < end && *p == 't' && take_ports(&p, end, peer) < 0)
		return -EINVAL;
	n = addr_field(p, end);
	if (n == 0 || (addr && n >= addr_size))
		return -EINVAL;
	peer->group = (uint16_t)g;
	peer->state = (uint8_t)s;
	peer->preferred = pref != 0;
	peer->pr = !has_r ? SCSITGT__RBD_HA_PR_UNKNOWN :
		   r	  ? SCSITGT__RBD_HA_PR_SHARED :
			    SCSITGT__RBD_HA_PR_LOCAL;
	peer->streak = (uint8_t)m;
	*held_ms = h;
	if (addr) {
		memcpy(addr, p + 2, n);
		addr[n] = '\0';
	}
	return 0;
}

uint32_t scsitgt__rbd_ha_rewatch_bound(const struct scsitgt__rbd_ha *ha)
{
	if (ha->cfg.misses > UINT32_MAX / SCSITGT__RBD_HA_REWATCH_TICKS_PER_MISS)
		return UINT32_MAX;
	return SCSITGT__RBD_HA_REWATCH_TICKS_PER_MISS * ha->cfg.misses;
}

bool scsitgt__rbd_ha_beat_due(const struct scsitgt__rbd_ha *ha, uint32_t rewatch_ticks)
{
	return ha->state == SCSITGT__RBD_HA_OWNER &&
	       rewatch_ticks <= scsitgt__rbd_ha_rewatch_bound(ha);
}

int scsitgt__rbd_ha_beat_format(char *buf, size_t size, const struct scsitgt__rbd_ha *ha,
				uint64_t seq, uint64_t now_ms, const char *addr)
{
	uint64_t held = ha->state == SCSITGT__RBD_HA_OWNER ? now_ms - ha->owned_since : 0;
	int n = snprintf(buf, size, "g=%u n=%" PRIu64 " h=%" PRIu64 " a=%s", ha->cfg.group, seq,
			 held, addr ? addr : "-");

	return n < 0 || (size_t)n >= size ? -ENOSPC : n;
}

int scsitgt__rbd_ha_beat_parse(const char *buf, size_t len, uint16_t *group, uint64_t *seq,
			       uint64_t *held_ms, char *addr, size_t addr_size)
{
	const char *p = buf, *end;
	uint64_t g, n_seq, h;
	size_t n;

	if (buf == NULL || len == 0 || len >= RECORD_MAX)
		return -EINVAL;
	end = buf + len;
	if (!take_field(&p, end, 'g', UINT16_MAX, &g) || g == 0 ||
	    !take_field(&p, end, 'n', UINT64_MAX, &n_seq) ||
	    !take_field(&p, end, 'h', UINT64_MAX, &h))
		return -EINVAL;
	n = addr_field(p, end);
	if (n == 0 || n >= addr_size)
		return -EINVAL;
	*group = (uint16_t)g;
	*seq = n_seq;
	*held_ms = h;
	memcpy(addr, p + 2, n);
	addr[n] = '\0';
	return 0;
}
