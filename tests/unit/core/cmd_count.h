/* SPDX-License-Identifier: MIT */
/*
 * That every command a test started was freed, whatever way it ended (cmd.c's transition hook:
 * debug builds only; a release build checks nothing). count_start() before the first command,
 * count_check() once the engine is gone.
 */
#ifndef SCSITGT_TESTS_CMD_COUNT_H
#define SCSITGT_TESTS_CMD_COUNT_H

#include "core/cmd.h"

#ifndef NDEBUG
/* Commands that left NEW, and commands freed. */
static unsigned int cc_started, cc_freed;

static inline void cc_hook(const struct scsitgt__cmd *cmd, enum scsitgt__cmd_state from,
			   enum scsitgt__cmd_state to)
{
	(void)cmd;
	if (from == SCSITGT__CMD_NEW)
		cc_started++;
	if (to == SCSITGT__CMD_FREED)
		cc_freed++;
}
#endif

static inline void count_start(void)
{
#ifndef NDEBUG
	cc_started = 0;
	cc_freed = 0;
	scsitgt__cmd_transition_hook = cc_hook;
#endif
}

/* Every command started since count_start() has been freed. */
static inline void count_check(void)
{
#ifndef NDEBUG
	scsitgt__cmd_transition_hook = NULL;
	assert_true(cc_started > 0);
	assert_int_equal(cc_freed, cc_started);
#endif
}

#endif /* SCSITGT_TESTS_CMD_COUNT_H */
