/* SPDX-License-Identifier: MIT */
/**
 * @file common.h
 * Export macro, error codes, logging and version queries shared by every libscsitgt header.
 *
 * Conventions used by every function of the library:
 * - Errors are negative errno values; 0 (or a non-negative count) means success.
 * - An asynchronous call that returns < 0 never calls its callback; one that returns 0 calls it
 *   exactly once, and never from inside the call itself (it is deferred to the loop).
 * - "Loop: home" means the function may be called only on the thread that runs the object's
 *   home uv loop; "Thread-safe" means any thread may call it.
 */
#ifndef LIBSCSITGT_COMMON_H
#define LIBSCSITGT_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/**
 * @def SCSITGT_EXPORT
 * Marks a declaration as part of the library's exported ABI (default symbol visibility on
 * GCC and Clang; the library builds with hidden visibility otherwise).
 */
/**
 * @def SCSITGT_DEPRECATED
 * Marks a declaration that will go away at the next major version; the compiler warns on use.
 */
/**
 * @def SCSITGT_PRINTF(f, a)
 * Lets the compiler check a printf-style format: argument @p f is the format, arguments from
 * @p a on are its values.
 */
#if defined(_WIN32)
#define SCSITGT_EXPORT
#elif defined(__GNUC__) || defined(__clang__)
#define SCSITGT_EXPORT __attribute__((visibility("default")))
#else
#define SCSITGT_EXPORT
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SCSITGT_DEPRECATED __attribute__((deprecated))
#define SCSITGT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SCSITGT_DEPRECATED
#define SCSITGT_PRINTF(f, a)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Library-specific error codes. They live below -4000 so they never collide with errno values.
 */
enum scsitgt_error {
	/** The peer violated its protocol (a malformed PDU or IU). */
	SCSITGT_EPROTO_PEER = -4001,
	/** Authentication failed (wrong CHAP response or unknown initiator). */
	SCSITGT_EAUTH = -4002,
};

/**
 * Completion callback of an asynchronous call.
 *
 * @param cb_arg The argument given together with the callback.
 * @param status 0 on success, a negative errno value on failure; -ECANCELED when the work was
 *               cut short by a destroy.
 */
typedef void (*scsitgt_done_cb)(void *cb_arg, int status);

/** Severity of a log message, lowest number most severe (syslog order). */
enum scsitgt_log_level {
	/**
	 * Something failed: an operation, a connection, a backend call; also a create or set
	 * call that refuses its arguments, in one line naming the argument, its value and the
	 * rule (scsitgt(3), "Conventions").
	 */
	SCSITGT_LOG_ERROR = 3,
	/** Something unexpected that the library coped with (a peer's protocol error...). */
	SCSITGT_LOG_WARNING = 4,
	/** Normal but significant: portals listening, logins, LUNs going offline. */
	SCSITGT_LOG_NOTICE = 5,
	/** Informational: object creation, negotiated parameters. */
	SCSITGT_LOG_INFO = 6,
	/** Per-command and per-PDU detail, for debugging. */
	SCSITGT_LOG_DEBUG = 7,
};

/**
 * Host logger. The library never prints; every message goes through this callback.
 *
 * @param cb_arg    The log_arg given in the engine options.
 * @param level     Severity of the message.
 * @param subsystem Short name of the part that logs: "core" (targets, LUNs, commands),
 *                  "iscsi" (portals, connections, logins), "aio" (the file backend),
 *                  "null" and "ram" (those backends, given a logger in their options).
 * @param fmt       printf-style format; @p ap holds its arguments.
 * @param ap        The arguments of @p fmt.
 *
 * Thread: called on the thread of the loop where the event happened.
 */
typedef void (*scsitgt_log_cb)(void *cb_arg, enum scsitgt_log_level level, const char *subsystem,
			       const char *fmt, va_list ap);

/**
 * Text for an error code of this library: a negative errno value or an ::scsitgt_error.
 *
 * @param err The error code.
 * @return A static string; never NULL. Thread-safe.
 */
SCSITGT_EXPORT const char *scsitgt_strerror(int err);

/**
 * Run-time version of the library.
 *
 * @return ::SCSITGT_VERSION_HEX of the library actually loaded. Thread-safe.
 */
SCSITGT_EXPORT unsigned int scsitgt_version(void);

/**
 * Run-time version as text, "MAJOR.MINOR.PATCH".
 *
 * @return A static string. Thread-safe.
 */
SCSITGT_EXPORT const char *scsitgt_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_COMMON_H */
