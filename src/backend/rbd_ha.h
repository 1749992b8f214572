/* SPDX-License-Identifier: MIT */
/*
 * The decisions of the multi-gateway model (docs/rbd.md, "Several gateways: the HA model"),
 * as a pure state machine: no librbd, no libuv, no clock of its own. rbd_gateway.c feeds it
 * what it observed (a probe of the lock and of the other gateways, the end of a lock
 * acquisition, a fence, a reconnection, an initiator's SET TARGET PORT GROUPS) and carries
 * out the actions it returns; tests/unit/backend/test_rbd_ha.c drives it directly.
 *
 * One gateway, one image: the gateway that owns the image's exclusive lock is the only one
 * that writes it, and its target port group is active/optimized. The others are standby.
 */
#ifndef SCSITGT_BACKEND_RBD_HA_H
#define SCSITGT_BACKEND_RBD_HA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most gateways (target port groups) of one image the model keeps track of. */
#define SCSITGT__RBD_HA_MAX_PEERS 16
/* Room for a client address as rbd_lock_get_owners() and rados_getaddrs() spell it. */
#define SCSITGT__RBD_HA_ADDR_MAX 160

enum scsitgt__rbd_ha_state {
	/* Connected, the first probe not seen yet. ALUA: standby. */
	SCSITGT__RBD_HA_JOINING,
	/* Another gateway owns the lock (or nobody, and another gateway is to take it). */
	SCSITGT__RBD_HA_STANDBY,
	/* A lock acquisition (after breaking the owner's lock, perhaps) is running. ALUA:
	 * transitioning. */
	SCSITGT__RBD_HA_ACQUIRING,
	/* This gateway owns the lock. ALUA: active/optimized. */
	SCSITGT__RBD_HA_OWNER,
	/* Blocklisted or lost the lock: reconnecting. ALUA: unavailable. */
	SCSITGT__RBD_HA_FENCED,
};

/* Actions for the caller (bits). */
enum {
	/* Take the lock (rbd_lock_acquire); nobody owns it. */
	SCSITGT__RBD_HA_DO_ACQUIRE = 1u << 0,
	/* Break the lock of the owner seen by the last probe, then take it. */
	SCSITGT__RBD_HA_DO_BREAK = 1u << 1,
	/* Replace the dead client: shut it down, connect a fresh one, reopen the image. */
	SCSITGT__RBD_HA_DO_RECONNECT = 1u << 2,
};

/* How a gateway keeps the image's persistent reservations, as its answer says (r=): shared
 * with the other gateways through RADOS, or local to its process (minitarget's nopr,
 * scsitgtd's rbd_shared_pr = no). UNKNOWN: an answer without r= (an older gateway). */
enum scsitgt__rbd_ha_pr {
	SCSITGT__RBD_HA_PR_UNKNOWN,
	SCSITGT__RBD_HA_PR_LOCAL,
	SCSITGT__RBD_HA_PR_SHARED,
};

/* Most takeovers by SET TARGET PORT GROUPS in a row whose hold-down doubles (reviewh F8): the
 * hold-down of a live owner is cfg.holddown_ms << min(its streak, this). An owner that kept the
 * lock for twice the longest hold-down (the quiet period) starts the count again. */
#define SCSITGT__RBD_HA_STREAK_MAX 7

/* Most relative target port ids of a gateway its answer carries (t=; the first ones of its
 * configuration): enough to catch two gateways configured with one port id (reviewh F11)
 * within the answer's 256 bytes. */
#define SCSITGT__RBD_HA_PORTS_MAX 8

/* Another gateway as its answer to a probe describes it. */
struct scsitgt__rbd_ha_peer {
	uint16_t group;
	uint8_t state; /* enum scsitgt__rbd_ha_state */
	bool preferred;
	uint8_t pr; /* enum scsitgt__rbd_ha_pr */
	/* Its streak of takeovers by SET TARGET PORT GROUPS (m=; 0 unless it owns the lock). */
	uint8_t streak;
	/* Its relative target port ids (t=; none from an older gateway). */
	uint8_t nports;
	uint16_t ports[SCSITGT__RBD_HA_PORTS_MAX];
};

/* What one probe found. */
struct scsitgt__rbd_ha_probe {
	/* < 0: the probe failed (the cluster did not answer); nothing else is valid. */
	int rc;
	/* The lock has an owner, and it is this gateway's client. */
	bool locked;
	bool mine;
	/* The owner answered the probe (its client address was among the answers): its group,
	 * and how long it has owned the lock, by its own clock. */
	bool owner_alive;
	uint16_t owner_group;
	uint64_t owner_held_ms;
	/* The owner's answer's r= and m= (its peers[] entry too). */
	uint8_t owner_pr;
	uint8_t owner_streak;
	/* The other gateways that answered. */
	size_t npeers;
	struct scsitgt__rbd_ha_peer peers[SCSITGT__RBD_HA_MAX_PEERS];
	/* The lock owner's client address ("" when unknown). */
	char owner_addr[SCSITGT__RBD_HA_ADDR_MAX];
	/* The heartbeat record on the gateway object, as read by this probe (beat_read false:
	 * missing, unreadable or malformed). The owner rewrites it at every tick whether or not
	 * its watch works (docs/rbd.md, "The owner's heartbeat"): the client that wrote it, its
	 * sequence (higher at every write), and the writer's group and hold time. */
	bool beat_read;
	char beat_addr[SCSITGT__RBD_HA_ADDR_MAX];
	uint64_t beat_seq;
	uint16_t beat_group;
	uint64_t beat_held_ms;
	/* When the probe ended (the caller's clock, ms). */
	uint64_t now_ms;
};

struct scsitgt__rbd_ha_cfg {
	/* This gateway's target port group, and the other gateways' (as configured). */
	uint16_t group;
	size_t npeer_groups;
	uint16_t peer_groups[SCSITGT__RBD_HA_MAX_PEERS];
	/* This gateway's relative target port ids (its answers carry the first
	 * SCSITGT__RBD_HA_PORTS_MAX), and the one configured for each peer group (0: none). */
	size_t nports;
	uint16_t ports[SCSITGT__RBD_HA_PORTS_MAX];
	uint16_t peer_ports[SCSITGT__RBD_HA_MAX_PEERS];
	/* Taken first when nobody owns the lock. */
	bool preferred;
	/* Probes in a row the owner misses before it counts as dead (>= 1), and the silence (ms
	 * since a probe last found it alive; 0: not counted) it must also have kept: probes run
	 * back to back while one waits, so misses alone could add up to little more than one
	 * probe's timeout (reviewh F9). */
	uint32_t misses;
	uint64_t silence_ms;
	/* A live owner keeps the lock this long against SET TARGET PORT GROUPS elsewhere. */
	uint64_t holddown_ms;
};

struct scsitgt__rbd_ha {
	struct scsitgt__rbd_ha_cfg cfg;
	enum scsitgt__rbd_ha_state state;
	/* Probes in a row that found the lock held by a silent owner, or free. */
	uint32_t missed;
	uint32_t free_seen;
	/* When this gateway took the lock (caller's clock, ms). */
	uint64_t owned_since;
	/* The last probe's view: whether the lock had an owner, that owner's group (0: unknown
	 * or none) if it answered, and the peers. */
	bool locked;
	uint16_t owner_group;
	bool owner_alive;
	uint64_t owner_held_ms;
	/* The owner is alive on its heartbeat alone: it answered no probe, but its record went
	 * on since the previous probe (its watch is being re-established). */
	bool owner_beating;
	/* The owner (client @owner_addr) was silent, but this gateway has not decided that it is
	 * dead (it does when it starts breaking the lock): its group stays active/optimized in
	 * this gateway's answers, as last seen (owner_group). */
	bool owner_presumed;
	char owner_addr[SCSITGT__RBD_HA_ADDR_MAX];
	/* When a probe last found the owner alive (probe.now_ms). */
	uint64_t alive_ms;
	size_t npeers;
	struct scsitgt__rbd_ha_peer peers[SCSITGT__RBD_HA_MAX_PEERS];
	bool probed;
	/* This gateway's reservations are shared (the caller keeps it current). A gateway with
	 * local reservations never takes the lock while one that shares them answers (its
	 * reservations would not be enforced, nor its own seen), and a sharing standby breaks
	 * the lock of a live owner with local ones (reviewh F12). pr_clash: the group of a peer
	 * whose mode differs from this gateway's, from the last probe (0: none). */
	bool pr_shared;
	uint16_t pr_clash;
	/* A relative target port id a peer's answer claims that is this gateway's own, or not
	 * the one this gateway's configuration gives that peer (registrations are keyed by the
	 * port id cluster-wide, and REPORT TARGET PORT GROUPS would name the wrong gateway:
	 * reviewh F11): the peer's group and the port, from the last probe (0: none). */
	uint16_t port_clash_group;
	uint16_t port_clash_port;
	bool port_clash_own;
	/* Takeovers by SET TARGET PORT GROUPS of a live owner in a row (reviewh F8): this
	 * gateway's while it owns the lock (streak), the owner's from the last probe, the one
	 * the running acquisition will have; stpg_took: the last request broke a live owner. */
	uint8_t streak;
	uint8_t owner_streak;
	uint8_t next_streak;
	bool stpg_took;
	/* The highest heartbeat sequence read for the client @beat_owner (beat_known: any). A
	 * record counts as proof of life only when it names the lock's owner and its sequence is
	 * higher than any this gateway read for that client before. */
	bool beat_known;
	char beat_owner[SCSITGT__RBD_HA_ADDR_MAX];
	uint64_t beat_seq;
};

void scsitgt__rbd_ha_init(struct scsitgt__rbd_ha *ha, const struct scsitgt__rbd_ha_cfg *cfg);

/* A probe's result; returns the actions to take. */
unsigned int scsitgt__rbd_ha_probed(struct scsitgt__rbd_ha *ha,
				    const struct scsitgt__rbd_ha_probe *p);

/* The acquisition started for DO_ACQUIRE or DO_BREAK ended with @rc (0: this gateway owns the
 * lock) at @now_ms. */
unsigned int scsitgt__rbd_ha_acquired(struct scsitgt__rbd_ha *ha, int rc, uint64_t now_ms);

/* The client was blocklisted, or the owner found it no longer owns the lock. */
unsigned int scsitgt__rbd_ha_fenced(struct scsitgt__rbd_ha *ha);

/* The reconnection started for DO_RECONNECT ended with @rc. On failure the caller retries
 * later (DO_RECONNECT is returned again). */
unsigned int scsitgt__rbd_ha_reconnected(struct scsitgt__rbd_ha *ha, int rc);

/*
 * An initiator's SET TARGET PORT GROUPS asks for @group to go to ALUA state @alua_state.
 * Returns 0 (nothing to do), SCSITGT_ALUA_REQUEST_DEFERRED's value 1 (accepted; the caller
 * sets the ALUA states from scsitgt__rbd_ha_alua()), or a negative errno to veto, and sets
 * *@actions.
 */
int scsitgt__rbd_ha_request(struct scsitgt__rbd_ha *ha, uint16_t group, uint8_t alua_state,
			    uint64_t now_ms, unsigned int *actions);

/* The hold-down a live owner with takeover streak @streak has against SET TARGET PORT
 * GROUPS: cfg.holddown_ms doubled per takeover of the streak, at most STREAK_MAX times. */
uint64_t scsitgt__rbd_ha_holddown(const struct scsitgt__rbd_ha *ha, uint8_t streak);

/* The ALUA state (SPC-5 Table 241 value) this gateway reports for @group: its own group from
 * its state, a peer's from the last probe. */
uint8_t scsitgt__rbd_ha_alua(const struct scsitgt__rbd_ha *ha, uint16_t group);

const char *scsitgt__rbd_ha_state_name(enum scsitgt__rbd_ha_state s);

/* The probe answer of this gateway ("g=GROUP s=STATE p=PREF h=HELD_MS r=SHARED m=STREAK
 * t=PORT[,PORT...] a=ADDR"), and its parser (r=, m= and t= optional: an older gateway's
 * answer has none; t= only with ports); a parse failure returns -EINVAL. */
int scsitgt__rbd_ha_ack_format(char *buf, size_t size, const struct scsitgt__rbd_ha *ha,
			       uint64_t now_ms, const char *addr);
int scsitgt__rbd_ha_ack_parse(const char *buf, size_t len, struct scsitgt__rbd_ha_peer *peer,
			      uint64_t *held_ms, char *addr, size_t addr_size);

/*
 * How many ticks in a row an owner's re-watch may stay pending while the owner still writes
 * its heartbeat record, per probe miss of cfg.misses (docs/rbd.md, "The owner's heartbeat").
 * The record proves that the owner's loop and client work, not that its worker thread moves:
 * an owner whose re-watch never ends runs no probe, cannot release the lock nor hand it over.
 * Past the bound it stops writing, and a standby takes over after cfg.misses more probes.
 */
#define SCSITGT__RBD_HA_REWATCH_TICKS_PER_MISS 10

/* The bound above for this gateway: SCSITGT__RBD_HA_REWATCH_TICKS_PER_MISS x cfg.misses. */
uint32_t scsitgt__rbd_ha_rewatch_bound(const struct scsitgt__rbd_ha *ha);

/* Whether this gateway writes its heartbeat record at this tick: it owns the lock, and its
 * re-watch (if any) has been pending for at most scsitgt__rbd_ha_rewatch_bound() ticks
 * (@rewatch_ticks: the ticks since it was started, 0 when none is pending). */
bool scsitgt__rbd_ha_beat_due(const struct scsitgt__rbd_ha *ha, uint32_t rewatch_ticks);

/* The owner's heartbeat record ("g=GROUP n=SEQ h=HELD_MS a=ADDR"), written by an owner at
 * every tick, and its parser; a parse failure returns -EINVAL. */
int scsitgt__rbd_ha_beat_format(char *buf, size_t size, const struct scsitgt__rbd_ha *ha,
				uint64_t seq, uint64_t now_ms, const char *addr);
int scsitgt__rbd_ha_beat_parse(const char *buf, size_t len, uint16_t *group, uint64_t *seq,
			       uint64_t *held_ms, char *addr, size_t addr_size);

#endif /* SCSITGT_BACKEND_RBD_HA_H */
