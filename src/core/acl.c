/* SPDX-License-Identifier: MIT */
/*
 * Access control of a target: the initiator name list, source address ranges (target-wide and
 * per initiator) and LUN masking (which LUNs each initiator sees).
 *
 * Every initiator name the host configured anything for has one entry in tgt->acl; the LUNs
 * mapped to every initiator live in tgt->acl_any. Sessions point at their initiator's entry
 * (sess->acl) so that the per-command visibility check is two bit tests. An entry goes away
 * when nothing is left in it, after the sessions pointing at it are detached.
 *
 * Across shards (issue 18): commands of every loop run those bit tests (LUN masking, the
 * read-only maps) while home changes them under engine->cfg_lock, which commands do not take.
 * So the pointers they follow (sess->acl, tgt->acl_any, an entry's maps) are stored with
 * release and loaded with acquire, the bitmap words and tgt->lun_masking are relaxed atomics
 * (home is their one writer), and a map or an entry that goes is freed only once every worker
 * shard has passed a callback boundary (scsitgt__shards_sync(), as the published LUN table).
 * A command sees a change at once or at its next check; SPC-5 §5.14's REPORTED LUNS DATA HAS
 * CHANGED, raised by home, is what tells the initiator.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "core/core.h"
#include "core/fabric.h"
#include "core/shard.h"
#include "core/ua.h"

#define ACL_MAP_WORDS (SCSITGT__ACL_LUN_IDS / 64)

/* sess->acl and tgt->acl_any, read on any shard, written on home (see the top). */
static struct scsitgt__acl_entry *acl_load(struct scsitgt__acl_entry *const *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void acl_publish(struct scsitgt__acl_entry **p, struct scsitgt__acl_entry *e)
{
	__atomic_store_n(p, e, __ATOMIC_RELEASE);
}

/* Parse "address[/prefix]" into the 128-bit form (IPv4 as ::ffff:a.b.c.d, prefix + 96). */
static int acl_parse_cidr(const char *cidr, struct scsitgt__acl_net *out)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash;
	size_t hlen;
	unsigned int max, prefix;
	bool v4;

	if (cidr == NULL)
		return -EINVAL;
	slash = strchr(cidr, '/');
	hlen = slash ? (size_t)(slash - cidr) : strlen(cidr);
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, cidr, hlen);
	host[hlen] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, host, &out->addr[12]) == 1) {
		v4 = true;
		out->addr[10] = 0xff;
		out->addr[11] = 0xff;
		max = 32;
	} else if (inet_pton(AF_INET6, host, out->addr) == 1) {
		v4 = false;
		max = 128;
	} else {
		return -EINVAL;
	}
	prefix = max;
	if (slash) {
		const char *p = slash + 1;

		/* Decimal digits only, no sign, no spaces, at most three of them. */
		if (*p == '\0' || strlen(p) > 3)
			return -EINVAL;
		prefix = 0;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			prefix = prefix * 10 + (unsigned int)(*p - '0');
		}
		if (prefix > max)
			return -EINVAL;
	}
	out->prefix = (uint8_t)(v4 ? prefix + 96 : prefix);
	/* Clear the host bits so that equal ranges compare equal. */
	for (unsigned int bit = out->prefix; bit < 128; bit++)
		out->addr[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
	return 0;
}

/* The peer address in the 128-bit form; false for families without one. */
static bool acl_sockaddr(const struct sockaddr *sa, uint8_t addr[16])
{
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		memset(addr, 0, 10);
		addr[10] = 0xff;
		addr[11] = 0xff;
		memcpy(&addr[12], &in->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;

		/* IPv4-mapped peers of dual-stack sockets land on the IPv4 ranges this way. */
		memcpy(addr, &in6->sin6_addr, 16);
		return true;
	}
	return false;
}

static bool acl_net_match(const struct scsitgt__acl_net *n, const uint8_t addr[16])
{
	unsigned int full = n->prefix / 8, rest = n->prefix % 8;

	if (memcmp(n->addr, addr, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((addr[full] ^ n->addr[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

/* Whether @sa falls in one of @nets; an empty list allows everything. */
static bool acl_nets_allow(const struct scsitgt__acl_net *nets, size_t n, const struct sockaddr *sa)
{
	uint8_t addr[16];

	if (n == 0)
		return true;
	if (!acl_sockaddr(sa, addr))
		return false;
	for (size_t i = 0; i < n; i++)
		if (acl_net_match(&nets[i], addr))
			return true;
	return false;
}

static ssize_t acl_nets_find(const struct scsitgt__acl_net *nets, size_t n,
			     const struct scsitgt__acl_net *net)
{
	for (size_t i = 0; i < n; i++)
		if (nets[i].prefix == net->prefix && memcmp(nets[i].addr, net->addr, 16) == 0)
			return (ssize_t)i;
	return -1;
}

static int acl_nets_add(struct scsitgt__acl_net **nets, size_t *n, const char *cidr)
{
	struct scsitgt__acl_net net, *grown;

	if (acl_parse_cidr(cidr, &net) < 0)
		return -EINVAL;
	if (acl_nets_find(*nets, *n, &net) >= 0)
		return -EEXIST;
	grown = realloc(*nets, (*n + 1) * sizeof(**nets));
	if (grown == NULL)
		return -ENOMEM;
	grown[*n] = net;
	*nets = grown;
	(*n)++;
	return 0;
}

static int acl_nets_remove(struct scsitgt__acl_net **nets, size_t *n, const char *cidr)
{
	struct scsitgt__acl_net net;
	ssize_t i;

	if (acl_parse_cidr(cidr, &net) < 0)
		return -EINVAL;
	i = acl_nets_find(*nets, *n, &net);
	if (i < 0)
		return -ENOENT;
	memmove(&(*nets)[i], &(*nets)[i + 1], (*n - (size_t)i - 1) * sizeof(**nets));
	if (--(*n) == 0) {
		free(*nets);
		*nets = NULL;
	}
	return 0;
}

struct scsitgt__acl_entry *scsitgt__acl_find(const struct scsitgt_target *tgt,
					     const char *initiator)
{
	struct scsitgt__list *pos;

	if (initiator == NULL)
		return NULL;
	for (pos = tgt->acl.next; pos != &tgt->acl; pos = pos->next) {
		struct scsitgt__acl_entry *e =
			scsitgt__container_of(pos, struct scsitgt__acl_entry, node);

		if (strcasecmp(e->name, initiator) == 0)
			return e;
	}
	return NULL;
}

static bool acl_valid_name(const char *name)
{
	return name && name[0] != '\0' && strlen(name) <= 223;
}

/* -EINVAL, logged, unless @name is a valid initiator name (RFC 7143 §4.2.7: 1..223 bytes). */
static int acl_name_check(struct scsitgt_target *tgt, const char *fn, const char *name)
{
	if (acl_valid_name(name))
		return 0;
	return scsitgt__log_refused(
		&tgt->engine->log, "core", -EINVAL,
		"%s: target %s: initiator_name %s%.64s%s: %zu bytes, not 1..223", fn, tgt->name,
		name ? "\"" : "", name ? name : "NULL", name ? "\"" : "", name ? strlen(name) : 0);
}

/* -EINVAL, logged, unless @cidr is "address[/prefix]" (acl_parse_cidr()). */
static int acl_cidr_check(struct scsitgt_target *tgt, const char *fn, const char *cidr)
{
	struct scsitgt__acl_net net;

	if (acl_parse_cidr(cidr, &net) == 0)
		return 0;
	return scsitgt__log_refused(&tgt->engine->log, "core", -EINVAL,
				    "%s: target %s: cidr %s%s%s: not a numeric IPv4 or IPv6 "
				    "address with an optional /prefix (0..32, 0..128)",
				    fn, tgt->name, cidr ? "\"" : "", cidr ? cidr : "NULL",
				    cidr ? "\"" : "");
}

/* -EINVAL, logged, unless @lun_id is below SCSITGT__ACL_LUN_IDS. */
static int acl_lun_id_check(struct scsitgt_target *tgt, const char *fn, uint64_t lun_id)
{
	if (lun_id < SCSITGT__ACL_LUN_IDS)
		return 0;
	return scsitgt__log_refused(&tgt->engine->log, "core", -EINVAL,
				    "%s: target %s: LUN %llu: id above %u", fn, tgt->name,
				    (unsigned long long)lun_id, SCSITGT__ACL_LUN_IDS - 1);
}

/* The entry of @name, created (and attached to the name's live sessions) when missing. */
static struct scsitgt__acl_entry *acl_entry_get(struct scsitgt_target *tgt, const char *name)
{
	struct scsitgt__acl_entry *e = scsitgt__acl_find(tgt, name);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->name = strdup(name);
	if (e->name == NULL) {
		free(e);
		return NULL;
	}
	scsitgt__list_add_tail(&tgt->acl, &e->node);
	for (struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions; p = p->next) {
		struct scsitgt__session *s =
			scsitgt__container_of(p, struct scsitgt__session, node);

		if (strcasecmp(s->initiator_name, name) == 0)
			acl_publish(&s->acl, e);
	}
	return e;
}

static void acl_entry_free(struct scsitgt__acl_entry *e)
{
	free(e->nets);
	free(e->lun_map);
	free(e->ro_map);
	free(e->name);
	free(e);
}

static void acl_entry_free_cb(void *e)
{
	acl_entry_free(e);
}

/* Drop an entry that no longer says anything; sessions forget it first. */
static void acl_entry_put(struct scsitgt_target *tgt, struct scsitgt__acl_entry *e)
{
	if (e->allowed || e->nnets || e->nmapped || e->nro)
		return;
	for (struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions; p = p->next) {
		struct scsitgt__session *s =
			scsitgt__container_of(p, struct scsitgt__session, node);

		if (s->acl == e)
			acl_publish(&s->acl, NULL);
	}
	scsitgt__list_remove(&e->node);
	/* a command of a worker may still be reading it: free it after their next boundary */
	if (!scsitgt__shards_sync(tgt->engine, acl_entry_free_cb, e))
		scsitgt__log(&tgt->engine->log, SCSITGT_LOG_WARNING, "core",
			     "out of memory: an access control entry is left behind");
}

void scsitgt__acl_free(struct scsitgt_target *tgt)
{
	struct scsitgt__list *pos, *tmp;

	scsitgt__list_foreach_safe(pos, tmp, &tgt->acl)
	{
		acl_entry_free(scsitgt__container_of(pos, struct scsitgt__acl_entry, node));
	}
	scsitgt__list_init(&tgt->acl);
	if (tgt->acl_any)
		acl_entry_free(tgt->acl_any);
	tgt->acl_any = NULL;
	free(tgt->nets);
	tgt->nets = NULL;
	tgt->nnets = 0;
}

void scsitgt__acl_session_attach(struct scsitgt__session *sess)
{
	acl_publish(&sess->acl, scsitgt__acl_find(sess->tgt, sess->initiator_name));
}

bool scsitgt__acl_login_allowed(const struct scsitgt_target *tgt, const char *initiator,
				const struct sockaddr *sa)
{
	const struct scsitgt__acl_entry *e = scsitgt__acl_find(tgt, initiator);

	if (tgt->nallowed && (e == NULL || !e->allowed))
		return false;
	if (!acl_nets_allow(tgt->nets, tgt->nnets, sa))
		return false;
	return e == NULL || acl_nets_allow(e->nets, e->nnets, sa);
}

bool scsitgt__target_initiator_allowed(const struct scsitgt_target *tgt, const char *initiator)
{
	const struct scsitgt__acl_entry *e = scsitgt__acl_find(tgt, initiator);

	return tgt->nallowed == 0 || (e && e->allowed);
}

/* Bit @id of the map *@mapp, from any shard (see the top). */
static bool acl_bit(uint64_t *const *mapp, uint64_t id)
{
	const uint64_t *m = __atomic_load_n(mapp, __ATOMIC_ACQUIRE);

	return m && (__atomic_load_n(&m[id / 64], __ATOMIC_RELAXED) >> (id % 64) & 1);
}

/* Home: bit @id of an allocated map to @on (readers on other shards load the word). */
static void acl_bit_store(uint64_t *m, uint64_t id, bool on)
{
	uint64_t w = __atomic_load_n(&m[id / 64], __ATOMIC_RELAXED);
	uint64_t bit = 1ull << (id % 64);

	__atomic_store_n(&m[id / 64], on ? w | bit : w & ~bit, __ATOMIC_RELAXED);
}

/* Home: a map with no bit left goes; freed after the worker shards' next boundary (without
 * memory for that, it stays, empty, and serves the next bit set). */
static void acl_map_retire(struct scsitgt_target *tgt, uint64_t **mapp)
{
	uint64_t *m = *mapp;

	__atomic_store_n(mapp, NULL, __ATOMIC_RELEASE);
	if (!scsitgt__shards_sync(tgt->engine, free, m))
		__atomic_store_n(mapp, m, __ATOMIC_RELEASE);
}

static bool acl_map_has(const struct scsitgt__acl_entry *e, uint64_t id)
{
	return e && acl_bit(&e->lun_map, id);
}

static bool acl_ro_has(const struct scsitgt__acl_entry *e, uint64_t id)
{
	return e && id < SCSITGT__ACL_LUN_IDS && acl_bit(&e->ro_map, id);
}

bool scsitgt__session_lun_read_only(const struct scsitgt__session *sess, uint64_t lun_id)
{
	return acl_ro_has(acl_load(&sess->tgt->acl_any), lun_id) ||
	       acl_ro_has(acl_load(&sess->acl), lun_id);
}

bool scsitgt__lun_write_protected(const struct scsitgt_lun *lun,
				  const struct scsitgt__session *sess)
{
	return (lun->flags & SCSITGT_LUN_READ_ONLY) || lun->mode.swp ||
	       (sess && scsitgt__session_lun_read_only(sess, lun->id));
}

bool scsitgt__session_lun_visible(const struct scsitgt__session *sess, uint64_t lun_id)
{
	const struct scsitgt_target *tgt = sess->tgt;

	if (!__atomic_load_n(&tgt->lun_masking, __ATOMIC_RELAXED))
		return true;
	if (lun_id >= SCSITGT__ACL_LUN_IDS)
		return false;
	return acl_map_has(acl_load(&tgt->acl_any), lun_id) ||
	       acl_map_has(acl_load(&sess->acl), lun_id);
}

struct scsitgt_lun *scsitgt__session_find_lun(const struct scsitgt__session *sess, uint64_t lun_id)
{
	struct scsitgt_lun *lun = scsitgt__target_find_lun(sess->tgt, lun_id);

	/* a destroyed LUN left the table when its destroy began (core/lun.c). */
	if (lun == NULL || !scsitgt__session_lun_visible(sess, lun_id))
		return NULL;
	return lun;
}

/*
 * SPC-5 §5.14: the inventory a nexus sees changed; it learns of it on the LUNs it still sees
 * (@e NULL: every nexus of the target, else the nexuses of that initiator).
 */
static void acl_luns_changed(struct scsitgt_target *tgt, const struct scsitgt__acl_entry *e)
{
	for (struct scsitgt__list *p = tgt->sessions.next; p != &tgt->sessions; p = p->next) {
		struct scsitgt__session *s =
			scsitgt__container_of(p, struct scsitgt__session, node);

		if (s->ua_no_power_on || (e && s->acl != e))
			continue;
		scsitgt__ua_nexus_luns_changed(s);
	}
}

SCSITGT_EXPORT int scsitgt_target_add_initiator(struct scsitgt_target *tgt,
						const char *initiator_name)
{
	struct scsitgt__acl_entry *e;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (acl_name_check(tgt, "scsitgt_target_add_initiator", initiator_name) < 0)
		return -EINVAL;
	e = scsitgt__acl_find(tgt, initiator_name);
	if (e && e->allowed)
		return -EEXIST;
	/* a login on a worker reads the lists (engine->cfg_lock). */
	scsitgt__cfg_wrlock(tgt->engine);
	e = acl_entry_get(tgt, initiator_name);
	if (e) {
		e->allowed = true;
		tgt->nallowed++;
	}
	scsitgt__cfg_wrunlock(tgt->engine);
	return e ? 0 : -ENOMEM;
}

SCSITGT_EXPORT int scsitgt_target_remove_initiator(struct scsitgt_target *tgt,
						   const char *initiator_name)
{
	struct scsitgt__acl_entry *e;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (initiator_name == NULL)
		return scsitgt__log_refused(&tgt->engine->log, "core", -EINVAL,
					    "scsitgt_target_remove_initiator: target %s: "
					    "initiator_name is NULL",
					    tgt->name);
	e = scsitgt__acl_find(tgt, initiator_name);
	if (e == NULL || !e->allowed)
		return -ENOENT;
	scsitgt__cfg_wrlock(tgt->engine);
	e->allowed = false;
	tgt->nallowed--;
	acl_entry_put(tgt, e);
	scsitgt__cfg_wrunlock(tgt->engine);
	return 0;
}

SCSITGT_EXPORT int scsitgt_target_add_address(struct scsitgt_target *tgt, const char *cidr)
{
	int rc;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (acl_cidr_check(tgt, "scsitgt_target_add_address", cidr) < 0)
		return -EINVAL;
	scsitgt__cfg_wrlock(tgt->engine);
	rc = acl_nets_add(&tgt->nets, &tgt->nnets, cidr);
	scsitgt__cfg_wrunlock(tgt->engine);
	return rc;
}

SCSITGT_EXPORT int scsitgt_target_remove_address(struct scsitgt_target *tgt, const char *cidr)
{
	int rc;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (acl_cidr_check(tgt, "scsitgt_target_remove_address", cidr) < 0)
		return -EINVAL;
	scsitgt__cfg_wrlock(tgt->engine);
	rc = acl_nets_remove(&tgt->nets, &tgt->nnets, cidr);
	scsitgt__cfg_wrunlock(tgt->engine);
	return rc;
}

SCSITGT_EXPORT int scsitgt_target_add_initiator_address(struct scsitgt_target *tgt,
							const char *initiator_name,
							const char *cidr)
{
	struct scsitgt__acl_entry *e;
	int rc;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (acl_name_check(tgt, "scsitgt_target_add_initiator_address", initiator_name) < 0 ||
	    acl_cidr_check(tgt, "scsitgt_target_add_initiator_address", cidr) < 0)
		return -EINVAL;
	scsitgt__cfg_wrlock(tgt->engine);
	e = acl_entry_get(tgt, initiator_name);
	rc = e ? acl_nets_add(&e->nets, &e->nnets, cidr) : -ENOMEM;
	if (e)
		acl_entry_put(tgt, e);
	scsitgt__cfg_wrunlock(tgt->engine);
	return rc;
}

SCSITGT_EXPORT int scsitgt_target_remove_initiator_address(struct scsitgt_target *tgt,
							   const char *initiator_name,
							   const char *cidr)
{
	struct scsitgt__acl_entry *e;
	int rc;

	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (initiator_name == NULL)
		return scsitgt__log_refused(&tgt->engine->log, "core", -EINVAL,
					    "scsitgt_target_remove_initiator_address: target %s: "
					    "initiator_name is NULL",
					    tgt->name);
	if (acl_cidr_check(tgt, "scsitgt_target_remove_initiator_address", cidr) < 0)
		return -EINVAL;
	e = scsitgt__acl_find(tgt, initiator_name);
	if (e == NULL)
		return -ENOENT;
	scsitgt__cfg_wrlock(tgt->engine);
	rc = acl_nets_remove(&e->nets, &e->nnets, cidr);
	acl_entry_put(tgt, e);
	scsitgt__cfg_wrunlock(tgt->engine);
	return rc;
}

/* The entry of @name, created if need be, or the every-initiator entry for NULL. */
static struct scsitgt__acl_entry *acl_entry_for(struct scsitgt_target *tgt, const char *name)
{
	if (name)
		return acl_entry_get(tgt, name);
	if (tgt->acl_any == NULL)
		acl_publish(&tgt->acl_any, calloc(1, sizeof(*tgt->acl_any)));
	return tgt->acl_any;
}

/* Set @lun_id's bit in the LUN bitmap *@map of @e, allocating it on first use; without memory
 * a new, otherwise empty entry is dropped again. */
static int acl_bit_set(struct scsitgt_target *tgt, struct scsitgt__acl_entry *e, uint64_t **map,
		       uint64_t lun_id)
{
	uint64_t *m = *map;

	if (m == NULL) {
		m = calloc(ACL_MAP_WORDS, sizeof(*m));
		if (m == NULL) {
			if (e != tgt->acl_any)
				acl_entry_put(tgt, e);
			return -ENOMEM;
		}
		m[lun_id / 64] = 1ull << (lun_id % 64);
		__atomic_store_n(map, m, __ATOMIC_RELEASE);
		return 0;
	}
	acl_bit_store(m, lun_id, true);
	return 0;
}

static int acl_map_lun(struct scsitgt_target *tgt, const char *initiator_name, uint64_t lun_id)
{
	struct scsitgt__acl_entry *e;
	bool was_masking;

	if (tgt == NULL || lun_id >= SCSITGT__ACL_LUN_IDS ||
	    (initiator_name && !acl_valid_name(initiator_name)))
		return -EINVAL;
	e = acl_entry_for(tgt, initiator_name);
	if (e == NULL)
		return -ENOMEM;
	if (acl_map_has(e, lun_id))
		return -EEXIST;
	if (acl_bit_set(tgt, e, &e->lun_map, lun_id) < 0)
		return -ENOMEM;
	e->nmapped++;
	was_masking = tgt->lun_masking;
	__atomic_store_n(&tgt->lun_masking, true, __ATOMIC_RELAXED);
	/* Turning masking on changes every nexus's view; one mapping only its initiator's. */
	acl_luns_changed(tgt, was_masking && e != tgt->acl_any ? e : NULL);
	return 0;
}

static int acl_unmap_lun(struct scsitgt_target *tgt, const char *initiator_name, uint64_t lun_id)
{
	struct scsitgt__acl_entry *e;

	if (tgt == NULL || (initiator_name && initiator_name[0] == '\0'))
		return -EINVAL;
	e = initiator_name ? scsitgt__acl_find(tgt, initiator_name) : tgt->acl_any;
	if (lun_id >= SCSITGT__ACL_LUN_IDS || !acl_map_has(e, lun_id))
		return -ENOENT;
	acl_bit_store(e->lun_map, lun_id, false);
	if (--e->nmapped == 0)
		acl_map_retire(tgt, &e->lun_map);
	if (tgt->lun_masking)
		acl_luns_changed(tgt, e == tgt->acl_any ? NULL : e);
	if (e != tgt->acl_any)
		acl_entry_put(tgt, e);
	return 0;
}

static int acl_set_lun_read_only(struct scsitgt_target *tgt, const char *initiator_name,
				 uint64_t lun_id, bool read_only)
{
	struct scsitgt__acl_entry *e;

	if (tgt == NULL || lun_id >= SCSITGT__ACL_LUN_IDS ||
	    (initiator_name && !acl_valid_name(initiator_name)))
		return -EINVAL;
	if (!read_only) {
		e = initiator_name ? scsitgt__acl_find(tgt, initiator_name) : tgt->acl_any;
		if (!acl_ro_has(e, lun_id))
			return 0;
		acl_bit_store(e->ro_map, lun_id, false);
		if (--e->nro == 0)
			acl_map_retire(tgt, &e->ro_map);
		if (e != tgt->acl_any)
			acl_entry_put(tgt, e);
		return 0;
	}
	e = acl_entry_for(tgt, initiator_name);
	if (e == NULL)
		return -ENOMEM;
	if (acl_ro_has(e, lun_id))
		return 0;
	if (acl_bit_set(tgt, e, &e->ro_map, lun_id) < 0)
		return -ENOMEM;
	e->nro++;
	return 0;
}

enum acl_lun_op {
	ACL_LUN_MAP,
	ACL_LUN_UNMAP,
	ACL_LUN_READ_ONLY,
	ACL_LUN_READ_WRITE
};

/* A LUN mapping change under the configuration lock: a login on a worker walks the entries. */
static int acl_lun_change(struct scsitgt_target *tgt, enum acl_lun_op op, const char *name,
			  uint64_t lun_id)
{
	int rc;

	if (tgt == NULL)
		return -EINVAL;
	if (op != ACL_LUN_UNMAP) {
		const char *fn = op == ACL_LUN_MAP ? "scsitgt_target_map_lun" :
						     "scsitgt_target_set_lun_read_only";

		if (acl_lun_id_check(tgt, fn, lun_id) < 0 ||
		    (name && acl_name_check(tgt, fn, name) < 0))
			return -EINVAL;
	}
	scsitgt__cfg_wrlock(tgt->engine);
	if (op == ACL_LUN_MAP)
		rc = acl_map_lun(tgt, name, lun_id);
	else if (op == ACL_LUN_UNMAP)
		rc = acl_unmap_lun(tgt, name, lun_id);
	else
		rc = acl_set_lun_read_only(tgt, name, lun_id, op == ACL_LUN_READ_ONLY);
	scsitgt__cfg_wrunlock(tgt->engine);
	return rc;
}

SCSITGT_EXPORT int scsitgt_target_map_lun(struct scsitgt_target *tgt, const char *initiator_name,
					  uint64_t lun_id)
{
	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	return acl_lun_change(tgt, ACL_LUN_MAP, initiator_name, lun_id);
}

SCSITGT_EXPORT int scsitgt_target_unmap_lun(struct scsitgt_target *tgt, const char *initiator_name,
					    uint64_t lun_id)
{
	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	return acl_lun_change(tgt, ACL_LUN_UNMAP, initiator_name, lun_id);
}

SCSITGT_EXPORT int scsitgt_target_set_lun_read_only(struct scsitgt_target *tgt,
						    const char *initiator_name, uint64_t lun_id,
						    bool read_only)
{
	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	return acl_lun_change(tgt, read_only ? ACL_LUN_READ_ONLY : ACL_LUN_READ_WRITE,
			      initiator_name, lun_id);
}

SCSITGT_EXPORT int scsitgt_target_set_lun_masking(struct scsitgt_target *tgt, bool enabled)
{
	SCSITGT__ASSERT_HOME(tgt ? tgt->engine : NULL);
	if (tgt == NULL)
		return -EINVAL;
	if (tgt->lun_masking == enabled)
		return 0;
	__atomic_store_n(&tgt->lun_masking, enabled, __ATOMIC_RELAXED);
	acl_luns_changed(tgt, NULL);
	return 0;
}
