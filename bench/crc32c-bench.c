/* SPDX-License-Identifier: MIT */
/*
 * crc32c-bench: throughput of the iSCSI digest (CRC32C) as the library computes it
 * (scsitgt__crc32c: ISA-L's crc32_iscsi where built with it) next to the project's own code
 * (SSE4.2 three-stream, and the slicing-by-8 table), at the sizes a PDU has: a 48-byte BHS, 8 KiB
 * and 64 KiB data segments, 256 KiB and 1 MiB bursts.
 *
 *   crc32c-bench [SECONDS_PER_CELL]     default 0.2
 *
 * Prints one row per size: MB/s of each implementation and the ratio library / builtin. A
 * benchmark, not a test: nothing checks the figures.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "util/crc32c.h"

typedef uint32_t (*crc_fn)(uint32_t crc, const void *buf, size_t len);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* MB/s of @p fn over @p len bytes, repeated for about @p secs. */
static double rate(crc_fn fn, const uint8_t *buf, size_t len, double secs)
{
	volatile uint32_t sink = 0;
	uint64_t bytes = 0;
	double start = now_s(), t;
	uint32_t crc = 0;

	do {
		for (int i = 0; i < 64; i++) {
			crc = fn(crc, buf, len);
			bytes += len;
		}
		t = now_s() - start;
	} while (t < secs);
	sink = crc;
	(void)sink;
	return (double)bytes / t / 1e6;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {
		48, 128, 256, 512, 1024, 4096, 8192, 65536, 262144, 1048576
	};
	double secs = argc > 1 ? atof(argv[1]) : 0.2;
	uint8_t *buf = malloc(1048576);

	if (buf == NULL || secs <= 0) {
		fprintf(stderr, "usage: crc32c-bench [SECONDS_PER_CELL]\n");
		return 2;
	}
	for (size_t i = 0; i < 1048576; i++) {
		buf[i] = (uint8_t)(i * 2654435761u >> 24);
	}
	printf("library: %s; builtin: %s\n", scsitgt__crc32c_impl(),
	       scsitgt__crc32c_hw_available() ? "sse4.2" : "table");
	printf("%9s %12s %12s %12s %8s\n", "bytes", "library MB/s", "builtin MB/s", "table MB/s",
	       "lib/bltn");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double lib = rate(scsitgt__crc32c, buf, sizes[i], secs);
		double own = rate(scsitgt__crc32c_builtin, buf, sizes[i], secs);
		double tab = rate(scsitgt__crc32c_sw, buf, sizes[i], secs);

		printf("%9zu %12.0f %12.0f %12.0f %8.2f\n", sizes[i], lib, own, tab, lib / own);
	}
	free(buf);
	return 0;
}
