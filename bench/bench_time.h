/* SPDX-License-Identifier: MIT */
/* bench_time.h - the clocks the stand-alone benchmark programs measure with. */
#ifndef SCSITGT_BENCH_TIME_H
#define SCSITGT_BENCH_TIME_H

#include <sys/resource.h>
#include <time.h>

/* Wall time, seconds on CLOCK_MONOTONIC. */
static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's CPU time (user + system, every thread), seconds. */
static inline double bench_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

#endif /* SCSITGT_BENCH_TIME_H */
