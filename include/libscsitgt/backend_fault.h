/* SPDX-License-Identifier: MIT */
/**
 * @file backend_fault.h
 * A fault-injection backend: it wraps any backend (built-in or the host's) and, by rule, fails
 * ios with an errno or a medium error at chosen blocks, delays them, or holds them without
 * completing ("hang") until the host releases them. For hosts testing their error handling
 * and for the library's own teardown tests (docs/backends.md, "Testing a backend").
 *
 * Rules are tried in the order they were added; the first that fires decides the io's fate.
 * An io no rule fires on goes straight to the wrapped backend. Rules act on ios only: the
 * wrapper is transparent for every other op of the table (scsitgt_backend_fault_ops()), so a
 * LUN keeps its features behind it (a LOGICAL UNIT RESET reaches the backend, a resize goes
 * through it). Every function here is
 * Loop: home of the LUN (or of @p loop given at creation), unless it says otherwise.
 */
#ifndef LIBSCSITGT_BACKEND_FAULT_H
#define LIBSCSITGT_BACKEND_FAULT_H

#include <uv.h>

#include "backend.h"
#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Rule io-type mask bit for an io type: SCSITGT_FAULT_IO(SCSITGT_IO_WRITE). */
#define SCSITGT_FAULT_IO(type) (1u << (unsigned)(type))
/** Rule io-type mask matching every io type. */
#define SCSITGT_FAULT_IO_ALL 0x1fu

/** What a rule does to an io it fires on. */
enum scsitgt_fault_action {
	/** Complete the io with scsitgt_io_complete(io, error) (default error -EIO). */
	SCSITGT_FAULT_ERROR = 0,
	/**
	 * Complete the io with a medium error at the first block of the rule's range inside the
	 * io (scsitgt_io_complete_at(io, -EIO, lba)): the initiator sees MEDIUM ERROR with the
	 * failing LBA in the INFORMATION field.
	 */
	SCSITGT_FAULT_MEDIUM = 1,
	/** Hand the io to the wrapped backend after delay_ms milliseconds (a timer on the loop). */
	SCSITGT_FAULT_DELAY = 2,
	/** Hold the io, never completing it, until scsitgt_backend_fault_release(). */
	SCSITGT_FAULT_HANG = 3,
};

/** One fault rule. Initialise with scsitgt_fault_rule_init(). */
struct scsitgt_fault_rule {
	/** sizeof(struct scsitgt_fault_rule), set by scsitgt_fault_rule_init(). */
	size_t size;
	/** What to do. Default ::SCSITGT_FAULT_ERROR. */
	enum scsitgt_fault_action action;
	/** SCSITGT_FAULT_IO() bits of the io types the rule applies to. Default all. */
	uint32_t io_types;
	/** First block of the range an io must overlap to match. */
	uint64_t lba;
	/** Blocks in the range; 0 (default) matches every io, whatever its blocks. */
	uint64_t lba_count;
	/** Matching ios to let through before the rule may fire. Default 0. */
	uint32_t skip;
	/** Fire on every Nth matching io after @ref skip (1 = each). Default 1; 0 means 1. */
	uint32_t every;
	/** Fire at most this many times; 0 (default) means no limit. */
	uint32_t count;
	/** ::SCSITGT_FAULT_ERROR: the negative errno to complete with. Default -EIO. */
	int error;
	/** ::SCSITGT_FAULT_DELAY: milliseconds to wait. Default 100. */
	uint32_t delay_ms;
	/**
	 * ::SCSITGT_FAULT_HANG and ::SCSITGT_FAULT_DELAY: an io this rule holds is cancelled
	 * when its command is aborted (the backend's abort(), backend.h): it completes at once
	 * with -ECANCELED, as on a device that honours aborts. Default false: held ios ignore
	 * aborts, as on a hung device, and the task management function waits for the TMF
	 * timeout. Spec key `abortable=1`.
	 */
	bool abortable;
};

/** Counters of a fault backend (scsitgt_backend_fault_get_stats()). */
struct scsitgt_fault_stats {
	/** sizeof(struct scsitgt_fault_stats) as the caller was compiled; set it first. */
	size_t size;
	/** ios received from the library. */
	uint64_t submitted;
	/** ios handed to the wrapped backend at once (no rule fired). */
	uint64_t passed;
	/** ios completed with an errno by an ::SCSITGT_FAULT_ERROR rule. */
	uint64_t errors;
	/** ios completed with a medium error by an ::SCSITGT_FAULT_MEDIUM rule. */
	uint64_t medium_errors;
	/** ios delayed by an ::SCSITGT_FAULT_DELAY rule. */
	uint64_t delayed;
	/** ios held by an ::SCSITGT_FAULT_HANG rule (in total). */
	uint64_t hung;
	/** ios released by scsitgt_backend_fault_release(). */
	uint64_t released;
	/** ios held right now. */
	uint32_t held;
	/** ios waiting for their delay right now. */
	uint32_t delaying;
	/** ios cancelled by an abort (rules with abortable set). */
	uint64_t cancelled;
	/** Resets of the logical unit seen (the backend's reset() or reset_async()). */
	uint64_t resets;
};

/**
 * Fill @p rule with the defaults (ERROR -EIO on every io).
 *
 * @param rule The rule.
 * @param size sizeof(*rule) as the caller was compiled.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT void scsitgt_fault_rule_init(struct scsitgt_fault_rule *rule, size_t size);

/**
 * Create a fault backend wrapping another backend.
 *
 * @param bctx_out  Receives the context; pass it as backend_ctx, with
 *                  scsitgt_backend_fault_ops(*bctx_out) as backend, to scsitgt_lun_create().
 *                  The LUN frees it through close(), which closes the wrapped backend too.
 * @param loop      The LUN's home loop (delay timers run there).
 * @param inner_ops The wrapped backend's table (copied, min(size, sizeof) bytes).
 * @param inner_ctx The wrapped backend's context; owned by the fault context on success.
 * @return 0; -EINVAL for a NULL argument or an inner table without open, close or submit;
 *         -ENOMEM.
 *
 * Thread-safe (touches no loop until used).
 */
SCSITGT_EXPORT int scsitgt_backend_fault_create(void **bctx_out, uv_loop_t *loop,
						const struct scsitgt_backend_ops *inner_ops,
						void *inner_ctx);

/**
 * The ops table of a fault context: the wrapped backend's, with submit() interposed. Its
 * io_ctx_size and its SCSITGT_BACKEND_MULTI_LOOP flag are the wrapped backend's, so the
 * wrapped backend keeps its per-io area and its loops. Every other op is passed on unchanged
 * (the rules never apply to them): supports(), get_lba_status(), reset_async(), get_size(),
 * resize() and detach() are set exactly when the wrapped backend sets them, as a NULL op
 * makes the core emulate or refuse (backend.h). abort() and reset() are always set: abort()
 * cancels an io an abortable rule holds and passes any other on, reset() counts the reset
 * (scsitgt_fault_stats.resets); each calls the wrapped backend's op when it has one, and
 * nothing else. When the wrapped backend has reset_async(), the core calls it (through the
 * wrapper, which counts the reset too) instead of reset(), and the reset's answer waits for
 * the wrapped backend's callback.
 *
 * @param bctx A context from scsitgt_backend_fault_create().
 * @return The table, valid as long as the context; NULL for a NULL @p bctx.
 *
 * Thread-safe.
 */
SCSITGT_EXPORT const struct scsitgt_backend_ops *scsitgt_backend_fault_ops(const void *bctx);

/**
 * Free a fault context the library will never close: after scsitgt_lun_create() failed, or
 * after an engine was destroyed while this backend still held ios (docs/threading.md,
 * "Teardown": the library then never calls close()). Held ios must have been released
 * first. Closes the wrapped backend with close(inner_ctx, NULL, NULL).
 *
 * @param bctx The context (may be NULL).
 * @return 0; -EBUSY (nothing freed) while ios are held or delayed.
 */
SCSITGT_EXPORT int scsitgt_backend_fault_destroy(void *bctx);

/**
 * Add a rule after the existing ones.
 *
 * @param bctx The context.
 * @param rule The rule (copied, min(size, sizeof) bytes over the defaults).
 * @return The rule's id (>= 0); -EINVAL for a NULL argument, a size of 0, an unknown action,
 *         an empty io_types mask or a non-negative error; -ENOSPC beyond 64 rules.
 */
SCSITGT_EXPORT int scsitgt_backend_fault_add_rule(void *bctx,
						  const struct scsitgt_fault_rule *rule);

/**
 * Add the rules a text specification describes, for command lines and configuration files:
 * rules separated by ';', each `ACTION[=ARG]@TYPES[:KEY=VALUE...]` where
 * - ACTION is `error` (ARG: an errno number or name: EIO, ENOSPC, EROFS, ENOMEM, EAGAIN,
 *   ENOTSUP; default EIO), `medium`, `delay` (ARG: milliseconds, default 100) or `hang`;
 * - TYPES is `all` or io types joined by '+': `read`, `write`, `flush`, `unmap`,
 *   `write_zeroes`;
 * - KEY is `lba` (first block), `len` (blocks, with lba), `skip`, `every` or `count`.
 * Examples: `hang@write`, `error=ENOSPC@write:every=3`, `medium@read:lba=100:len=8`,
 * `delay=250@read+write;hang@flush:skip=2`.
 *
 * @param bctx The context.
 * @param spec The specification.
 * @return The number of rules added (>= 1); -EINVAL for a malformed specification (then no
 *         rule is added); -ENOSPC beyond 64 rules.
 */
SCSITGT_EXPORT int scsitgt_backend_fault_add_spec(void *bctx, const char *spec);

/**
 * Remove every rule (held and delayed ios stay as they are).
 *
 * @param bctx The context.
 * @return 0; -EINVAL for NULL.
 */
SCSITGT_EXPORT int scsitgt_backend_fault_clear_rules(void *bctx);

/**
 * Release held ios, oldest first.
 *
 * @param bctx   The context.
 * @param max    How many at most; 0 means all.
 * @param status 0 hands each io to the wrapped backend (it completes normally); a negative
 *               errno completes each with scsitgt_io_complete(io, status) instead.
 * @return How many ios were released; -EINVAL for NULL or a positive @p status.
 *
 * Loop: home, or any single thread once the engine is destroyed (the ios are then orphans,
 * whose completion touches nothing but their own memory).
 */
SCSITGT_EXPORT int scsitgt_backend_fault_release(void *bctx, unsigned int max, int status);

/**
 * The backend's counters.
 *
 * @param bctx  The context.
 * @param stats Receives them; set stats->size first.
 * @return 0; -EINVAL for a NULL argument or a size of 0.
 */
SCSITGT_EXPORT int scsitgt_backend_fault_get_stats(const void *bctx,
						   struct scsitgt_fault_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_BACKEND_FAULT_H */
