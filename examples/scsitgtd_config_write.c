/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's configuration back to INI text (the control socket's "save"): every member the
 * parser sets, in the file's syntax (docs/scsitgtd.md), so that scsitgtd_config_parse() of the
 * output gives the same configuration. Keys at their default are left out. A member added to
 * the configuration must be added here too (tests/unit/scsitgtd/test_config.c round-trips).
 */
#include <stdio.h>
#include <string.h>

#include "scsitgtd_config.h"

static void kv_str(FILE *f, const char *key, const char *v)
{
	if (v)
		fprintf(f, "%s = %s\n", key, v);
}

static void kv_u64(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, "%s = %llu\n", key, (unsigned long long)v);
}

static void kv_bool(FILE *f, const char *key, bool v)
{
	fprintf(f, "%s = %s\n", key, v ? "yes" : "no");
}

static void kv_cred(FILE *f, const char *key, const char *user, const char *secret)
{
	if (user)
		fprintf(f, "%s = %s:%s\n", key, user, secret);
}

static void params_write(FILE *f, const struct scsitgtd_params *ps)
{
	static const char *const digest[] = { "any", "none", "crc32c" };
	static const char *const chap[] = { "md5", "sha1", "sha256", "sha3-256" };
	static const char *const async[] = { "luns_changed", "capacity_changed", "other" };

	for (unsigned int i = 0; i < SCSITGTD_P_COUNT; i++) {
		const char *name = scsitgtd_param_name((enum scsitgtd_param)i);
		uint64_t v = ps->v[i];

		if (!(ps->set & (1u << i)))
			continue;
		switch ((enum scsitgtd_param)i) {
		case SCSITGTD_P_IMMEDIATE_DATA:
		case SCSITGTD_P_INITIAL_R2T:
			kv_bool(f, name, v != 0);
			break;
		case SCSITGTD_P_HEADER_DIGEST:
		case SCSITGTD_P_DATA_DIGEST:
			kv_str(f, name, digest[v < 3 ? v : 0]);
			break;
		case SCSITGTD_P_CHAP_ALGORITHMS:
		case SCSITGTD_P_ASYNC_EVENTS: {
			bool is_chap = i == SCSITGTD_P_CHAP_ALGORITHMS, first = true;

			fprintf(f, "%s =", name);
			for (unsigned int b = 0; b < (is_chap ? 4u : 3u); b++) {
				if (v & (1u << b)) {
					fprintf(f, "%s%s", first ? " " : ", ",
						is_chap ? chap[b] : async[b]);
					first = false;
				}
			}
			fprintf(f, "%s\n", first ? " none" : "");
			break;
		}
		default:
			kv_u64(f, name, v);
			break;
		}
	}
}

static const char *const backends[] = { "ram", "null", "file", "block", "rbd" };

static bool all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Block Limits values and designators: the keys given (0 / all zeros: left out). */
static void limits_write(FILE *f, const struct scsitgtd_lun *l)
{
	const struct {
		const char *key;
		uint64_t v;
	} nums[] = {
#define LIMIT_VALUE(name, type, max) { #name, l->name },
		SCSITGTD_LUN_LIMITS(LIMIT_VALUE)
#undef LIMIT_VALUE
	};
	const uint8_t *u = l->uuid;

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (nums[i].v)
			kv_u64(f, nums[i].key, nums[i].v);
	if (!all_zero(l->naa_extended, sizeof(l->naa_extended))) {
		fprintf(f, "naa_extended = ");
		for (size_t i = 0; i < sizeof(l->naa_extended); i++)
			fprintf(f, "%02x", l->naa_extended[i]);
		fprintf(f, "\n");
	}
	if (!all_zero(u, sizeof(l->uuid)))
		fprintf(f,
			"uuid = %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			"%02x%02x%02x%02x%02x%02x\n",
			u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			u[12], u[13], u[14], u[15]);
}

static void lun_write(FILE *f, const struct scsitgtd_lun *l)
{
	bool aio = l->backend == SCSITGTD_BACKEND_FILE || l->backend == SCSITGTD_BACKEND_BLOCK;
	static const struct {
		uint32_t flag;
		const char *key;
	} flags[] = {
		{ SCSITGTD_LUN_READ_ONLY, "read_only" },
		{ SCSITGTD_LUN_THIN, "thin" },
		{ SCSITGTD_LUN_REMOVABLE, "removable" },
		{ SCSITGTD_LUN_WRITE_CACHE, "write_cache" },
		{ SCSITGTD_LUN_CLAIM_SPC4, "claim_spc4" },
	};

	fprintf(f, "\n[lun %llu]\n", (unsigned long long)l->id);
	kv_str(f, "backend", (unsigned int)l->backend < 5 ? backends[l->backend] : "ram");
	if (l->size)
		kv_u64(f, "size", l->size);
	if (l->block_size)
		kv_u64(f, "block_size", l->block_size);
	kv_str(f, "path", l->path);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (l->flags & flags[i].flag)
			kv_bool(f, flags[i].key, true);
	if (l->offline)
		kv_bool(f, "offline", true);
	if (aio && !l->direct)
		kv_bool(f, "direct", false);
	if (aio && l->write_through)
		kv_bool(f, "write_through", true);
	if (l->backend == SCSITGTD_BACKEND_RBD && l->write_through)
		kv_bool(f, "write_through", true);
	if (l->aio_queue_depth)
		kv_u64(f, "aio_queue_depth", l->aio_queue_depth);
	if (aio && l->io_engine == 1)
		kv_str(f, "io_engine", "libaio");
	if (aio && l->io_engine == 2)
		kv_str(f, "io_engine", "io_uring");
	if (aio && l->uring_async == 1)
		kv_str(f, "uring_async", "always");
	if (aio && l->uring_async == 2)
		kv_str(f, "uring_async", "never");
	kv_str(f, "rbd_namespace", l->rbd_namespace);
	kv_str(f, "rbd_client_id", l->rbd_client_id);
	kv_str(f, "rbd_conf", l->rbd_conf);
	if (l->rbd_op_timeout >= 0)
		kv_u64(f, "rbd_op_timeout", (uint64_t)l->rbd_op_timeout);
	if (l->backend == SCSITGTD_BACKEND_RBD && !l->rbd_shared_pr)
		kv_bool(f, "rbd_shared_pr", false);
	kv_str(f, "vendor", l->vendor);
	kv_str(f, "product", l->product);
	kv_str(f, "revision", l->revision);
	kv_str(f, "serial", l->serial);
	kv_str(f, "pr_file", l->pr_file);
	if (l->physical_block_exponent >= 0)
		kv_u64(f, "physical_block_exponent", (uint64_t)l->physical_block_exponent);
	limits_write(f, l);
	for (size_t i = 0; i < l->nvisible_to; i++)
		kv_str(f, "visible_to", l->visible_to[i]);
	kv_str(f, "fault", l->fault);
}

static void gateway_write(FILE *f, const struct scsitgtd_gateway *g)
{
	if (g->group == 0)
		return;
	kv_u64(f, "rbd_gateway", g->group);
	if (g->nports) {
		fprintf(f, "rbd_gateway_ports =");
		for (size_t i = 0; i < g->nports; i++)
			fprintf(f, " %u", g->ports[i]);
		fprintf(f, "\n");
	}
	for (size_t i = 0; i < g->npeers; i++)
		fprintf(f, "rbd_gateway_peer = %u:%u\n", g->peer_groups[i], g->peer_ports[i]);
	if (g->preferred)
		kv_bool(f, "rbd_gateway_preferred", true);
	if (g->holddown_ms >= 0)
		kv_u64(f, "rbd_gateway_holddown_ms", (uint64_t)g->holddown_ms);
	if (g->probe_ms >= 0)
		kv_u64(f, "rbd_gateway_probe_ms", (uint64_t)g->probe_ms);
}

static void target_write(FILE *f, const struct scsitgtd_target *t)
{
	static const char *const states[16] = { [0x0] = "active_optimized",
						[0x1] = "active_non_optimized",
						[0x2] = "standby",
						[0x3] = "unavailable",
						[0xf] = "transitioning" };

	fprintf(f, "\n[target]\n");
	kv_str(f, "name", t->name);
	kv_str(f, "alias", t->alias);
	for (size_t i = 0; i < t->ninitiators; i++)
		kv_str(f, "initiator", t->initiators[i]);
	kv_cred(f, "chap", t->chap_user, t->chap_secret);
	kv_cred(f, "mutual_chap", t->mutual_user, t->mutual_secret);
	for (size_t i = 0; i < t->nichap; i++)
		fprintf(f, "initiator_chap = %s %s:%s\n", t->ichap[i].initiator, t->ichap[i].user,
			t->ichap[i].secret);
	if (t->alua_modes)
		fprintf(f, "alua = %s%s%s\n", (t->alua_modes & 1) ? "implicit" : "",
			t->alua_modes == 3 ? ", " : "", (t->alua_modes & 2) ? "explicit" : "");
	for (size_t i = 0; i < t->naddresses; i++) {
		if (t->addresses[i].initiator)
			fprintf(f, "initiator_address = %s %s\n", t->addresses[i].initiator,
				t->addresses[i].cidr);
		else
			kv_str(f, "address", t->addresses[i].cidr);
	}
	if (t->max_sessions >= 0)
		kv_u64(f, "max_sessions", (uint64_t)t->max_sessions);
	if (t->max_lun_commands >= 0)
		kv_u64(f, "max_lun_commands", (uint64_t)t->max_lun_commands);
	gateway_write(f, &t->gw);
	params_write(f, &t->params);
	for (size_t i = 0; i < t->ngroups; i++) {
		const struct scsitgtd_alua_group *g = &t->groups[i];

		fprintf(f, "\n[alua_group %u]\n", g->id);
		kv_str(f, "state", states[g->state & 0xf] ? states[g->state & 0xf] : "standby");
		if (g->preferred)
			kv_bool(f, "preferred", true);
		if (g->nports) {
			fprintf(f, "ports =");
			for (size_t j = 0; j < g->nports; j++)
				fprintf(f, "%s%u", j ? ", " : " ", g->ports[j]);
			fprintf(f, "\n");
		}
	}
	for (size_t i = 0; i < t->nluns; i++)
		lun_write(f, &t->luns[i]);
	for (size_t i = 0; i < t->nsrps; i++) {
		const struct scsitgtd_srp *s = &t->srps[i];

		fprintf(f, "\n[srp]\n");
		kv_str(f, "address", s->address);
		kv_u64(f, "port", s->port);
		fprintf(f, "id_ext = 0x%llx\n", (unsigned long long)s->id_ext);
		if (s->ioc_guid)
			fprintf(f, "ioc_guid = 0x%llx\n", (unsigned long long)s->ioc_guid);
		if (s->max_channels)
			kv_u64(f, "max_channels", s->max_channels);
		if (s->queue_size)
			kv_u64(f, "queue_size", s->queue_size);
		if (s->max_it_iu_len)
			kv_u64(f, "max_it_iu_len", s->max_it_iu_len);
		if (s->max_ti_iu_len)
			kv_u64(f, "max_ti_iu_len", s->max_ti_iu_len);
		if (s->immediate_data >= 0)
			kv_bool(f, "immediate_data", s->immediate_data != 0);
		if (s->aer >= 0)
			kv_bool(f, "aer", s->aer != 0);
		if (s->rel_port_id)
			kv_u64(f, "rel_port_id", s->rel_port_id);
		if (s->backlog)
			kv_u64(f, "backlog", s->backlog);
	}
}

int scsitgtd_config_write(const struct scsitgtd_config *cfg, FILE *f)
{
	static const char *const levels[] = { "error", "warning", "notice", "info", "debug" };

	fprintf(f, "# scsitgtd configuration written by the control socket's save "
		   "(docs/scsitgtd.md)\n[engine]\n");
	if (cfg->log_level >= 3 && cfg->log_level <= 7)
		kv_str(f, "log_level", levels[cfg->log_level - 3]);
	if (cfg->workers == -1)
		kv_str(f, "workers", "auto");
	else if (cfg->workers >= 0)
		kv_u64(f, "workers", (uint64_t)cfg->workers);
	if (cfg->conn_workers >= 0)
		kv_bool(f, "conn_workers", cfg->conn_workers != 0);
	if (cfg->tmf_timeout_ms)
		kv_u64(f, "tmf_timeout_ms", cfg->tmf_timeout_ms);
	if (cfg->drain_timeout_ms)
		kv_u64(f, "drain_timeout_ms", cfg->drain_timeout_ms);
	kv_cred(f, "discovery_chap", cfg->discovery_user, cfg->discovery_secret);
	kv_cred(f, "discovery_mutual_chap", cfg->discovery_mutual_user,
		cfg->discovery_mutual_secret);
	kv_str(f, "pr_dir", cfg->pr_dir);
	kv_str(f, "control_socket", cfg->control_socket);
	kv_str(f, "pidfile", cfg->pidfile);
	if (cfg->metrics_address)
		fprintf(f,
			strchr(cfg->metrics_address, ':') ? "metrics = [%s]:%u\n" :
							    "metrics = %s:%u\n",
			cfg->metrics_address, cfg->metrics_port);
	params_write(f, &cfg->params);
	for (size_t i = 0; i < cfg->nportals; i++) {
		const struct scsitgtd_portal *p = &cfg->portals[i];

		fprintf(f, "\n[portal]\n");
		kv_str(f, "transport", p->transport == SCSITGTD_TRANSPORT_ISER ? "iser" : "tcp");
		kv_str(f, "address", p->address);
		kv_u64(f, "port", p->port);
		kv_u64(f, "tpgt", p->tpgt);
		if (p->backlog)
			kv_u64(f, "backlog", p->backlog);
		if (p->max_connections >= 0)
			kv_u64(f, "max_connections", (uint64_t)p->max_connections);
		if (p->max_login_connections >= 0)
			kv_u64(f, "max_login_connections", (uint64_t)p->max_login_connections);
		if (p->max_connections_per_initiator >= 0)
			kv_u64(f, "max_connections_per_initiator",
			       (uint64_t)p->max_connections_per_initiator);
		if (p->rdma_buffer)
			kv_u64(f, "rdma_buffer", p->rdma_buffer);
	}
	for (size_t i = 0; i < cfg->ntargets; i++)
		target_write(f, &cfg->targets[i]);
	return ferror(f) ? -1 : 0;
}
