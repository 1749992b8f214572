/* SPDX-License-Identifier: MIT */
/*
 * An in-process fabric for tests: an engine on a private uv loop, one target, one I_T nexus,
 * and a call that pushes one CDB (with optional Data-Out) through the core's command
 * lifecycle and runs the loop until the command is done. No sockets.
 */
#ifndef SCSITGT_TESTS_LOOP_FABRIC_H
#define SCSITGT_TESTS_LOOP_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/fabric.h"

struct loop_fabric {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt__session *sess;
	/* Commands that reached cmd_done / cmd_aborted so far. */
	unsigned int ndone;
	unsigned int naborted;
	/* Non-zero: the arrival time given to each command (scsitgt__cmd_set_arrival). */
	uint64_t arrival_ns;
	/* Nexuses made by loop_fabric_add_session() take Data-In the backend lends, as
	 * iSCSI/TCP's do (set before adding the session). */
	bool lend_data_in;
	/* cmd_done keeps the command in lf_result.cmd, as a fabric still sending its data
	 * would: the test ends it with scsitgt__cmd_destroy(). */
	bool keep_done;
};

/* What a command returned. data is malloc'd (NULL when data_len is 0). */
struct lf_result {
	uint8_t status;
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	size_t sense_len;
	uint8_t *data;
	size_t data_len;
	bool done;
	bool aborted;
	/* The command itself while it runs (NULL once done, unless keep_done); for TMF tests. */
	struct scsitgt__cmd *cmd;
};

/* Create the loop, engine, target @target_name (NULL: a default name) and the nexus. */
int loop_fabric_create(struct loop_fabric **out, const char *target_name);
/* Destroy the nexus, the engine (closing every LUN's backend), the loop. */
void loop_fabric_destroy(struct loop_fabric *lf);

/* Run one CDB on LUN @lun_id to completion. @dout supplies Data-Out (zero-filled if short). */
void loop_fabric_run(struct loop_fabric *lf, uint64_t lun_id, const uint8_t *cdb, size_t cdb_len,
		     const void *dout, size_t dout_len, struct lf_result *res);
/* Same with a raw 8-byte SAM LUN field. */
void loop_fabric_run_raw_lun(struct loop_fabric *lf, const uint8_t lun[8], const uint8_t *cdb,
			     size_t cdb_len, const void *dout, size_t dout_len,
			     struct lf_result *res);
/*
 * Start a command without waiting: the result fills @res (which must stay valid) when it
 * completes. Returns after scsitgt__cmd_execute(); @res->done may already be true.
 */
void loop_fabric_start(struct loop_fabric *lf, uint64_t lun_id, const uint8_t *cdb, size_t cdb_len,
		       const void *dout, size_t dout_len, struct lf_result *res);
/* Run the loop until @res is done. */
void loop_fabric_wait(struct loop_fabric *lf, struct lf_result *res);
/* Run the loop until @flag becomes true. */
void loop_fabric_run_until(struct loop_fabric *lf, const bool *flag);

/*
 * A further I_T nexus on the same target (multi-initiator tests), e.g. @initiator_port
 * "iqn.2024-01.org.example:other,i,0x23d000000002", through relative target port
 * @rel_port_id (target port "<target>,t,0x<rel_port_id>"). Unlike lf->sess it reports POWER ON
 * on its first command to each LUN. It uses the loop fabric's callbacks; destroy it with
 * scsitgt__session_destroy() (or leave it to loop_fabric_destroy's engine teardown).
 */
int loop_fabric_add_session(struct loop_fabric *lf, const char *initiator_port,
			    uint16_t rel_port_id, struct scsitgt__session **out);
/* loop_fabric_run / loop_fabric_start on nexus @sess instead of lf->sess. */
void loop_fabric_run_on(struct loop_fabric *lf, struct scsitgt__session *sess, uint64_t lun_id,
			const uint8_t *cdb, size_t cdb_len, const void *dout, size_t dout_len,
			struct lf_result *res);
void loop_fabric_start_on(struct loop_fabric *lf, struct scsitgt__session *sess, uint64_t lun_id,
			  const uint8_t *cdb, size_t cdb_len, const void *dout, size_t dout_len,
			  struct lf_result *res);

/* Free the data of a result (keeps the struct reusable). */
void lf_result_clear(struct lf_result *res);
/* Whether @res keeps what every fabric relies on: sense fits its buffer, there is sense exactly
 * when the status is CHECK CONDITION, and data only with GOOD. */
bool lf_result_sane(const struct lf_result *res);

#endif /* SCSITGT_TESTS_LOOP_FABRIC_H */
