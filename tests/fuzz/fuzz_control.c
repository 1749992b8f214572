/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of scsitgtd's control socket requests (examples/scsitgtd_control.c): every line
 * of the input is one JSON-RPC request handled against a real engine serving a small
 * configuration (one target, two RAM LUNs, an access list); any request must be answered
 * with a result or an error object (or nothing for a notification), never crash or leak.
 * The daemon's sources are linked in (tests/fuzz/meson.build), built with
 * SCSITGTD_CONTROL_NO_SAVE: "save" is left out (no files written); reload is a stub here (no
 * file read). After each input the configuration is put back.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "scsitgtd_control.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base_text[] =
	"[engine]\nlog_level = error\n"
	"[target]\nname = iqn.2026-12.org.example:fuzz\n"
	"initiator = iqn.2026-12.org.example:ini\naddress = 127.0.0.0/8\n"
	"[lun 0]\nbackend = ram\nsize = 1M\n"
	"[lun 1]\nbackend = null\nsize = 1M\nvisible_to = iqn.2026-12.org.example:ini\n";

static struct scsitgtd d;
static struct scsitgtd_config *base;

void scsitgtd_log(struct scsitgtd *dd, enum scsitgt_log_level level, const char *fmt, ...)
{
	(void)dd;
	(void)level;
	(void)fmt;
}

int scsitgtd_reload(struct scsitgtd *dd, char *err, size_t err_size)
{
	(void)dd;
	snprintf(err, err_size, "fuzz: no file");
	return -EINVAL;
}

static void setup(void)
{
	struct scsitgt_engine_opts eo;

	d.loop = uv_default_loop();
	d.path = "fuzz.conf";
	scsitgt_engine_opts_init(&eo, sizeof(eo));
	eo.log_level = SCSITGT_LOG_ERROR;
	CHECK(scsitgt_engine_create(&d.engine, d.loop, &eo) == 0);
	CHECK(scsitgtd_config_parse(base_text, sizeof(base_text) - 1, &base, NULL, 0) == 0);
	CHECK(scsitgtd_apply(&d, scsitgtd_config_dup(base)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	if (d.engine == NULL)
		setup();
	if (size > SCSITGTD_CONTROL_MAX_REQUEST)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_object *resp = scsitgtd_control_handle(&d, p, n);

		if (resp) {
			json_object *v;

			/* A response has exactly one of result and error. */
			CHECK(json_object_object_get_ex(resp, "result", &v) !=
			      json_object_object_get_ex(resp, "error", &v));
			json_object_put(resp);
		}
		p += n + 1;
	}
	/* Back to the base configuration; let removed LUNs go. */
	CHECK(scsitgtd_apply(&d, scsitgtd_config_dup(base)) == 0);
	uv_run(d.loop, UV_RUN_NOWAIT);
	return 0;
}
