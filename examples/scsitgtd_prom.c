/* SPDX-License-Identifier: MIT */
/*
 * The result of scsitgtd's "stats" (scsitgtd_control_show.c) in the Prometheus text exposition
 * format 0.0.4 (docs/scsitgtd.md, "Metrics"): printed by `scsitgtctl metrics` and served by
 * scsitgtd's metrics listener (scsitgtd_metrics.c). Needs json-c.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "scsitgtd_prom.h"

/* Label values escape \, " and newline (exposition format). */
static void label(FILE *f, const char *name, const char *v)
{
	fprintf(f, "%s=\"", name);
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fprintf(f, "\\n");
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

static uint64_t get_u64(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_uint64(v) : 0;
}

static const char *get_str(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static json_object *get(json_object *o, const char *k)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, k, &v);
	return v;
}

static const struct {
	const char *key, *metric, *help;
} counters[] = {
	{ "read_cmds", "read_commands_total", "Media read commands" },
	{ "write_cmds", "write_commands_total", "Media write commands" },
	{ "other_cmds", "other_commands_total", "Other commands" },
	{ "bytes_read", "read_bytes_total", "Bytes of successful media reads" },
	{ "bytes_written", "written_bytes_total", "Bytes of successful media writes" },
	{ "reservation_conflicts", "reservation_conflicts_total", "RESERVATION CONFLICT statuses" },
	{ "busy", "busy_total", "BUSY and TASK SET FULL statuses" },
	{ "aborted", "aborted_total", "Commands aborted" },
	{ "tmfs", "task_management_functions_total", "Task management functions received" },
};

/* One family per counter over every LUN (@kind "lun") or session ("session"). */
static void metrics_counters(FILE *f, json_object *targets, const char *kind)
{
	char arr[16];

	snprintf(arr, sizeof(arr), "%ss", kind);
	for (size_t m = 0; m <= sizeof(counters) / sizeof(counters[0]); m++) {
		bool cc = m == sizeof(counters) / sizeof(counters[0]);

		if (cc)
			fprintf(f,
				"# HELP scsitgt_%s_check_conditions_total CHECK CONDITION statuses by "
				"sense key\n# TYPE scsitgt_%s_check_conditions_total counter\n",
				kind, kind);
		else
			fprintf(f, "# HELP scsitgt_%s_%s %s\n# TYPE scsitgt_%s_%s counter\n", kind,
				counters[m].metric, counters[m].help, kind, counters[m].metric);
		for (size_t t = 0; t < json_object_array_length(targets); t++) {
			json_object *tgt = json_object_array_get_idx(targets, t);
			json_object *items = get(tgt, arr);

			for (size_t i = 0; items && i < json_object_array_length(items); i++) {
				json_object *it = json_object_array_get_idx(items, i);
				json_object *cmds = get(it, "cmds");

				for (int k = 0; k < (cc ? 16 : 1); k++) {
					uint64_t v =
						cc ? json_object_get_uint64(
							     json_object_array_get_idx(
								     get(cmds, "check_conditions"),
								     k)) :
						     get_u64(cmds, counters[m].key);

					fprintf(f, "scsitgt_%s_%s{", kind,
						cc ? "check_conditions_total" : counters[m].metric);
					label(f, "target", get_str(tgt, "name"));
					if (!strcmp(kind, "lun"))
						fprintf(f, ",lun=\"%llu\"",
							(unsigned long long)get_u64(it, "id"));
					else
						fputc(',', f), label(f, "initiator_port",
								     get_str(it, "initiator_port"));
					if (cc)
						fprintf(f, ",sense_key=\"%x\"", k);
					fprintf(f, "} %llu\n", (unsigned long long)v);
				}
			}
		}
	}
}

void scsitgtd_prom_write(json_object *st, FILE *f)
{
	json_object *targets = get(st, "targets"), *conns = get(st, "connections");
	static const char *const conn_ctr[][2] = {
		{ "rx_pdus", "received_pdus_total" },
		{ "tx_pdus", "sent_pdus_total" },
		{ "rx_bytes", "received_bytes_total" },
		{ "tx_bytes", "sent_bytes_total" },
	};

	metrics_counters(f, targets, "lun");
	fprintf(f, "# HELP scsitgt_lun_inflight_commands Commands on the LUN now\n"
		   "# TYPE scsitgt_lun_inflight_commands gauge\n");
	for (size_t t = 0; t < json_object_array_length(targets); t++) {
		json_object *tgt = json_object_array_get_idx(targets, t), *luns = get(tgt, "luns");

		for (size_t i = 0; i < json_object_array_length(luns); i++) {
			json_object *l = json_object_array_get_idx(luns, i);

			fprintf(f, "scsitgt_lun_inflight_commands{");
			label(f, "target", get_str(tgt, "name"));
			fprintf(f, ",lun=\"%llu\"} %llu\n", (unsigned long long)get_u64(l, "id"),
				(unsigned long long)get_u64(l, "inflight"));
		}
	}
	/* Latency: the library's log2 microsecond buckets as a histogram in seconds. Bucket b
	 * holds [2^b, 2^(b+1)) us (b 0: below 2 us), so its upper bound is 2^(b+1) us; the
	 * last one is +Inf. The sum is not kept by the library: estimated from bucket
	 * midpoints, and said so in HELP. */
	fprintf(f, "# HELP scsitgt_lun_latency_seconds Command latency (sum estimated from log2 "
		   "buckets)\n# TYPE scsitgt_lun_latency_seconds histogram\n");
	for (size_t t = 0; t < json_object_array_length(targets); t++) {
		json_object *tgt = json_object_array_get_idx(targets, t), *luns = get(tgt, "luns");

		for (size_t i = 0; i < json_object_array_length(luns); i++) {
			json_object *l = json_object_array_get_idx(luns, i),
				    *lat = get(l, "latency_us");
			size_t nb = json_object_array_length(lat);
			uint64_t cum = 0;
			double sum = 0;

			for (size_t b = 0; b < nb; b++) {
				uint64_t c =
					json_object_get_uint64(json_object_array_get_idx(lat, b));

				cum += c;
				sum += (double)c * 1.5 * (double)(1ull << b) / 1e6;
				fprintf(f, "scsitgt_lun_latency_seconds_bucket{");
				label(f, "target", get_str(tgt, "name"));
				if (b + 1 < nb)
					fprintf(f, ",lun=\"%llu\",le=\"%g\"} %llu\n",
						(unsigned long long)get_u64(l, "id"),
						(double)(1ull << (b + 1)) / 1e6,
						(unsigned long long)cum);
				else
					fprintf(f, ",lun=\"%llu\",le=\"+Inf\"} %llu\n",
						(unsigned long long)get_u64(l, "id"),
						(unsigned long long)cum);
			}
			fprintf(f, "scsitgt_lun_latency_seconds_sum{");
			label(f, "target", get_str(tgt, "name"));
			fprintf(f, ",lun=\"%llu\"} %.9f\n", (unsigned long long)get_u64(l, "id"),
				sum);
			fprintf(f, "scsitgt_lun_latency_seconds_count{");
			label(f, "target", get_str(tgt, "name"));
			fprintf(f, ",lun=\"%llu\"} %llu\n", (unsigned long long)get_u64(l, "id"),
				(unsigned long long)cum);
		}
	}
	metrics_counters(f, targets, "session");
	for (size_t m = 0; m < 4; m++) {
		fprintf(f,
			"# HELP scsitgt_connection_%s iSCSI connection %s\n"
			"# TYPE scsitgt_connection_%s counter\n",
			conn_ctr[m][1], conn_ctr[m][0], conn_ctr[m][1]);
		for (size_t i = 0; i < json_object_array_length(conns); i++) {
			json_object *c = json_object_array_get_idx(conns, i);

			fprintf(f, "scsitgt_connection_%s{", conn_ctr[m][1]);
			label(f, "peer", get_str(c, "peer_addr"));
			fprintf(f, ",cid=\"%llu\",tsih=\"%llu\"} %llu\n",
				(unsigned long long)get_u64(c, "cid"),
				(unsigned long long)get_u64(c, "tsih"),
				(unsigned long long)get_u64(c, conn_ctr[m][0]));
		}
	}
}
