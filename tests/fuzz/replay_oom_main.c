/* SPDX-License-Identifier: MIT */
/*
 * Allocation-failure replay: every corpus file of a fuzz target runs once to count the
 * allocations the library makes for it, then again for N = 1..K (K = that count, at most
 * FUZZ_OOM_MAX, default 256) with the Nth allocation failing. The library must answer with an
 * error (TASK SET FULL, a Reject, a dropped connection), never crash, leak or hang.
 *
 * The target links with -Wl,--wrap=malloc,... so that every call in the library's objects comes
 * here. Allocations made while fuzz_alloc_hold is raised belong to the test scaffolding
 * (fuzz_common.h) and never fail.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

/* volatile: compilers know malloc() reads no globals and would fold the raise around it. */
volatile int fuzz_alloc_hold;
static unsigned long alloc_count;   /* allocations of the library in this run */
static unsigned long alloc_fail_at; /* 0: none fails */
static unsigned long alloc_failed;

/* Whether this allocation of the library is the one to fail. */
static int alloc_should_fail(void)
{
	if (fuzz_alloc_hold)
		return 0;
	alloc_count++;
	if (alloc_fail_at && alloc_count == alloc_fail_at) {
		alloc_failed++;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return alloc_should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t a, size_t b)
{
	return alloc_should_fail() ? NULL : __real_calloc(a, b);
}

void *__wrap_realloc(void *p, size_t n)
{
	return alloc_should_fail() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return alloc_should_fail() ? NULL : __real_strdup(s);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	return alloc_should_fail() ? 12 /* ENOMEM */ : __real_posix_memalign(p, align, n);
}

static unsigned long oom_max = 256;
static unsigned long runs;

static void run_input(const uint8_t *data, size_t size)
{
	unsigned long total;

	alloc_fail_at = 0;
	alloc_count = 0;
	LLVMFuzzerTestOneInput(data, size);
	total = alloc_count;
	if (total > oom_max)
		total = oom_max;
	for (unsigned long n = 1; n <= total; n++) {
		alloc_fail_at = n;
		alloc_count = 0;
		LLVMFuzzerTestOneInput(data, size);
		runs++;
	}
	alloc_fail_at = 0;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (!f)
		return -1;
	fuzz_alloc_hold++;
	buf = malloc(1 << 20);
	fuzz_alloc_hold--;
	n = buf ? fread(buf, 1, 1 << 20, f) : 0;
	fclose(f);
	if (!buf)
		return -1;
	run_input(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	const char *max = getenv("FUZZ_OOM_MAX");
	static const uint8_t small[] = { 0x00, 0x01, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00 };
	int files = 0;

	if (max)
		oom_max = strtoul(max, NULL, 0);
	run_input(small, sizeof(small));
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *e;

		if (!d) {
			if (run_file(argv[i]) == 0)
				files++;
			continue;
		}
		while ((e = readdir(d)) != NULL) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (run_file(path) == 0)
				files++;
		}
		closedir(d);
	}
	printf("replayed %d corpus files, %lu runs with one failing allocation (%lu failed)\n",
	       files, runs, alloc_failed);
	return 0;
}
