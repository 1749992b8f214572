/* SPDX-License-Identifier: MIT */
/*
 * Replays every file of a corpus directory through LLVMFuzzerTestOneInput(), so that the fuzz
 * corpus runs as an ordinary test without libFuzzer. With no corpus it still feeds a set of
 * generated inputs (empty, short, all-0xff, pseudo-random), so the target is exercised.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t *buf = malloc(1 << 20);
	size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
	fclose(f);
	if (!buf)
		return -1;
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static void run_generated(void)
{
	static uint8_t buf[4096];
	uint32_t x = 0x12345678u;

	LLVMFuzzerTestOneInput(buf, 0);
	for (size_t len = 1; len <= sizeof(buf); len = len * 3 + 1) {
		memset(buf, 0xff, len);
		LLVMFuzzerTestOneInput(buf, len);
		for (int round = 0; round < 64; round++) {
			for (size_t i = 0; i < len; i++) {
				x ^= x << 13;
				x ^= x >> 17;
				x ^= x << 5;
				buf[i] = (uint8_t)x;
			}
			LLVMFuzzerTestOneInput(buf, len);
		}
	}
}

int main(int argc, char **argv)
{
	int files = 0;

	run_generated();
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			if (run_file(argv[i]) == 0)
				files++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (run_file(path) == 0)
				files++;
		}
		closedir(d);
	}
	printf("replayed %d corpus files and the generated inputs\n", files);
	return 0;
}
