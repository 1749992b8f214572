/* SPDX-License-Identifier: MIT */
/*
 * A range walked with backend ios one bounded piece at a time (VERIFY's medium reads, WRITE
 * SAME and its WRITE ZEROES emulation): one buffer of at most SCSITGT__SBC_CHUNK_BYTES, one
 * io in flight, and a loop rather than recursion when the backend completes inside submit().
 * The walk holds the range for the plain path (range_lock.h) until it ends. While it runs, the
 * command's context (cmd->ctx.chunker) is the walk.
 */
#ifndef SCSITGT_CORE_SBC_CHUNK_H
#define SCSITGT_CORE_SBC_CHUNK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cmd.h"

/* The largest piece of one io of a walk: bounds the memory of a long WRITE SAME or VERIFY. */
#define SCSITGT__SBC_CHUNK_BYTES (1u << 20)

struct scsitgt__sbc_chunker;

/* Submit the io of the piece [lba, lba + n); 0 or -ENOMEM. */
typedef int (*scsitgt__chunk_issue_fn)(struct scsitgt__sbc_chunker *ch, uint64_t lba, uint32_t n);
/* The piece's io succeeded: check it (compare); a reason other than OK ends the walk. */
typedef enum scsitgt__sense_reason (*scsitgt__chunk_check_fn)(struct scsitgt__sbc_chunker *ch,
							      uint64_t lba, uint32_t n);

struct scsitgt__sbc_chunker {
	struct scsitgt__cmd *cmd;
	uint64_t start; /* first LBA of the range */
	uint64_t next;	/* first LBA not yet submitted */
	uint64_t end;	/* LBA past the range */
	uint32_t max_blocks;
	uint64_t cur_lba;
	uint32_t cur_n;
	scsitgt__chunk_issue_fn issue;
	scsitgt__chunk_check_fn check; /* may be NULL */
	uint8_t *buf;		       /* freed at the end */
	uint32_t buf_len;
	enum scsitgt__sense_reason reason;
	struct scsitgt__sense_detail detail;
	struct scsitgt__range_token token; /* range lock of the plain path */
	bool pumping, again, io_done;
	/* Once every piece succeeded, a FLUSH io over the range before the status: the pieces'
	 * ios (WRITE ZEROES, UNMAP) carry no FUA (backend.h). Cleared once submitted. */
	bool flush_after;
	/* The pieces write to the cache (WCE 1 at parse): the FLUSH is due all the same if WCE
	 * is 0 once they are done (sbc.h scsitgt__sbc_cache_written_through()). */
	bool cached_writes;
};

/*
 * Allocate a chunker for @cmd over [lba, lba + nblocks) with a buffer of @buf_len bytes
 * (0: none; zeroed). Returns NULL on -ENOMEM.
 */
struct scsitgt__sbc_chunker *scsitgt__sbc_chunker_new(struct scsitgt__cmd *cmd, uint64_t lba,
						      uint64_t nblocks, uint32_t buf_len);
/*
 * Start the walk (takes the range, then submits the pieces, then the FLUSH of flush_after).
 * The command is completed at the end with the first failure, or GOOD; the chunker is freed.
 * Never fails.
 */
void scsitgt__sbc_chunker_start(struct scsitgt__sbc_chunker *ch);
/* The io done function the issue callback passes to scsitgt__io_submit(). */
void scsitgt__sbc_chunk_io_done(struct scsitgt__cmd *cmd, struct scsitgt_io *io,
				enum scsitgt__sense_reason reason);

#endif /* SCSITGT_CORE_SBC_CHUNK_H */
