/* SPDX-License-Identifier: MIT */
/* SANITIZE (SBC-4 §5.28, sanitize operations §4.33) and the state it leaves on the LUN. */
#ifndef SCSITGT_CORE_SBC_SANITIZE_H
#define SCSITGT_CORE_SBC_SANITIZE_H

#include "core/cmd.h"
#include "core/sense.h"

struct scsitgt__cdb_def;

/* A LUN's sanitize state. */
enum {
	SCSITGT__SANITIZE_IDLE = 0,
	SCSITGT__SANITIZE_RUNNING = 1,
	SCSITGT__SANITIZE_FAILED = 2,
};
enum scsitgt__sense_reason scsitgt__sbc_parse_sanitize(struct scsitgt__cmd *cmd);
void scsitgt__sbc_sanitize(struct scsitgt__cmd *cmd);
/* What a command meets on a LUN whose sanitize state is not idle (called by cdb_parse); sets
 * the progress indication in cmd->detail while a sanitize runs. */
enum scsitgt__sense_reason scsitgt__sanitize_check(struct scsitgt__cmd *cmd,
						   const struct scsitgt__cdb_def *row);

#endif /* SCSITGT_CORE_SBC_SANITIZE_H */
