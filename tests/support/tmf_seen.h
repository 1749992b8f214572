/* SPDX-License-Identifier: MIT */
/*
 * What the host sees of task management functions, for a fabric's tests: the TMF events
 * its event callback got (scsitgt_engine_set_event_cb(engine, tmf_seen_cb, NULL)) and a LUN's
 * TMF count in its statistics. Header-only: include after cmocka.h.
 */
#ifndef SCSITGT_TESTS_TMF_SEEN_H
#define SCSITGT_TESTS_TMF_SEEN_H

#include <stdint.h>
#include <string.h>

#include "libscsitgt/events.h"
#include "libscsitgt/stats.h"

/* TMF events seen (the LUN of the last). */
static unsigned int tmf_events;
static uint64_t tmf_event_lun;

static inline void tmf_seen_cb(void *arg, const struct scsitgt_event *ev)
{
	(void)arg;
	if (ev->type != SCSITGT_EVENT_TMF)
		return;
	tmf_events++;
	tmf_event_lun = ev->lun_id;
}

/* The TMFs @lun's statistics counted. */
static inline uint64_t tmf_seen_lun_tmfs(struct scsitgt_lun *lun)
{
	struct scsitgt_lun_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	assert_int_equal(scsitgt_lun_get_stats(lun, &st), 0);
	return st.cmds.tmfs;
}

#endif /* SCSITGT_TESTS_TMF_SEEN_H */
