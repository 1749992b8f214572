/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd under systemd (Type=notify, examples/scsitgtd.service): the service manager's
 * readiness protocol through libsystemd's sd_notify() (sd_notify(3)). Without libsystemd at
 * build time, and when not started by systemd (no NOTIFY_SOCKET), these do nothing.
 */
#ifndef SCSITGTD_NOTIFY_H
#define SCSITGTD_NOTIFY_H

#ifdef SCSITGTD_HAVE_SYSTEMD
#include <time.h>

#include <systemd/sd-daemon.h>

/* Every portal listens and every LUN of the file exists. */
static inline void scsitgtd_notify_ready(void)
{
	sd_notify(0, "READY=1\nSTATUS=serving");
}

/* A reload starts (SIGHUP or the control socket's reload); MONOTONIC_USEC as systemd 253's
 * Type=notify-reload asks, harmless before. */
static inline void scsitgtd_notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
		   (unsigned long long)ts.tv_sec * 1000000ull +
			   (unsigned long long)ts.tv_nsec / 1000);
}

static inline void scsitgtd_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}
#else
static inline void scsitgtd_notify_ready(void)
{
}

static inline void scsitgtd_notify_reloading(void)
{
}

static inline void scsitgtd_notify_stopping(void)
{
}
#endif

#endif /* SCSITGTD_NOTIFY_H */
