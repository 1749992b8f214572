/* SPDX-License-Identifier: MIT */
/*
 * iSCSI text data segments (RFC 7143 §6.1): "key=value\0" pairs carried by Login and Text
 * PDUs, possibly continued over several PDUs with the C bit (RFC 7143 §11.10.2, §11.12.2).
 *
 * Three small tools:
 *  - an accumulator that joins continued data segments into one text, bounded by a limit;
 *  - an iterator over the pairs of a complete text, checking the syntax;
 *  - a bounded builder for responses, which hands the text out again in chunks of at most N
 *    bytes (the peer's MaxRecvDataSegmentLength) and says whether more remains (the C bit).
 *
 * Nothing here does I/O. Objects belong to one connection; no locking.
 */
#ifndef SCSITGT_ISCSI_TEXT_TEXTBUF_H
#define SCSITGT_ISCSI_TEXT_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Longest key name (RFC 7143 §6.1: "key-name ... MUST NOT exceed 63 bytes"). */
#define SCSITGT__ISCSI_KEY_NAME_MAX 63
/** Longest ordinary value (RFC 7143 §6.1: 255 bytes unless the key says otherwise). */
#define SCSITGT__ISCSI_VALUE_MAX 255
/** Longest binary or list value (RFC 7143 §6.1 large values, e.g. CHAP_C). */
#define SCSITGT__ISCSI_LONG_VALUE_MAX 8192
/** Default bound of a whole (continued) text: 64 KiB. */
#define SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT 65536

/** Joins continued text data segments. Zero-initialise or use _init(). */
struct scsitgt__iscsi_text_acc {
	uint8_t *buf;  /**< Joined text (owned, grown up to @ref limit). */
	size_t len;    /**< Bytes held. */
	size_t cap;    /**< Bytes allocated. */
	size_t limit;  /**< Largest text accepted. */
	bool complete; /**< The last segment (C bit clear) has been added. */
};

/**
 * Prepare an empty accumulator. Allocates nothing yet.
 *
 * @param acc   The accumulator.
 * @param limit Largest joined text in bytes; 0 means ::SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT.
 */
void scsitgt__iscsi_text_acc_init(struct scsitgt__iscsi_text_acc *acc, size_t limit);

/**
 * Add one PDU's data segment (without its pad bytes). A segment added after the text was
 * complete starts a new text.
 *
 * @param acc  The accumulator.
 * @param data The data segment; may be NULL when @p len is 0.
 * @param len  Its length (DataSegmentLength).
 * @param cont The PDU's C (continue) bit: more segments of this text follow.
 * @return 1 when the text is complete (C bit clear) and well terminated; 0 when more segments
 *         are expected; -EMSGSIZE when the joined text would exceed the limit (the text is
 *         dropped); -EINVAL when the complete text does not end in a NUL (RFC 7143 §6.1: every
 *         pair ends with one) or a continued segment is empty; -ENOMEM.
 */
int scsitgt__iscsi_text_acc_add(struct scsitgt__iscsi_text_acc *acc, const void *data, size_t len,
				bool cont);

/**
 * The joined text. Valid until the next add, reset or destroy.
 *
 * @param acc The accumulator.
 * @param len Receives the text length.
 * @return The bytes (NULL when empty).
 */
const uint8_t *scsitgt__iscsi_text_acc_data(const struct scsitgt__iscsi_text_acc *acc, size_t *len);

/** Drop the held text, keeping the allocation. */
void scsitgt__iscsi_text_acc_reset(struct scsitgt__iscsi_text_acc *acc);

/** Free the allocation. The accumulator may be initialised again afterwards. */
void scsitgt__iscsi_text_acc_destroy(struct scsitgt__iscsi_text_acc *acc);

/** One pair of a text. @ref value is NUL-terminated in the text; @ref key is not. */
struct scsitgt__iscsi_kv {
	const char *key; /**< Key name, @ref key_len bytes, followed by '='. */
	size_t key_len;
	const char *value; /**< Value, NUL-terminated, @ref value_len bytes. */
	size_t value_len;
};

/**
 * Next pair of a text (RFC 7143 §6.1). Checks the key-name syntax (letters, digits, '.', '-',
 * '+', '@', '_', starting with a letter; "X#" prefixed names allowed) and length, and the '='.
 * Value length limits depend on the key and are checked by the negotiator.
 *
 * @param text The complete text.
 * @param len  Its length.
 * @param pos  Offset of the next pair; start with 0. Advanced past the returned pair.
 * @param kv   Receives the pair.
 * @return 1 for a pair; 0 at the end; -EINVAL for a malformed pair (missing '=', empty or
 *         invalid key name, key longer than ::SCSITGT__ISCSI_KEY_NAME_MAX, value longer than
 *         ::SCSITGT__ISCSI_LONG_VALUE_MAX, missing NUL terminator).
 */
int scsitgt__iscsi_text_next(const uint8_t *text, size_t len, size_t *pos,
			     struct scsitgt__iscsi_kv *kv);

/**
 * Whether a key name is syntactically valid (see scsitgt__iscsi_text_next()).
 */
bool scsitgt__iscsi_key_name_valid(const char *key, size_t len);

/** Bounded builder of a response text. Zero-initialise or use _init(). */
struct scsitgt__iscsi_textbuf {
	uint8_t *buf; /**< The text (owned). */
	size_t len;   /**< Bytes written. */
	size_t cap;   /**< Bytes allocated. */
	size_t limit; /**< Largest text. */
	size_t taken; /**< Bytes already handed out by scsitgt__iscsi_textbuf_next_chunk(). */
};

/**
 * Prepare an empty builder. Allocates nothing yet.
 *
 * @param tb    The builder.
 * @param limit Largest text in bytes; 0 means ::SCSITGT__ISCSI_TEXT_LIMIT_DEFAULT.
 */
void scsitgt__iscsi_textbuf_init(struct scsitgt__iscsi_textbuf *tb, size_t limit);

/**
 * Append "key=value\0".
 *
 * @param tb    The builder.
 * @param key   Key name, NUL-terminated.
 * @param value Value, NUL-terminated.
 * @return 0; -ENOSPC when the text would exceed the limit (nothing appended); -EINVAL for an
 *         empty key; -ENOMEM.
 */
int scsitgt__iscsi_textbuf_add(struct scsitgt__iscsi_textbuf *tb, const char *key,
			       const char *value);

/**
 * Append "key=value\0" from counted strings (which must not contain NUL bytes).
 *
 * @return As scsitgt__iscsi_textbuf_add().
 */
int scsitgt__iscsi_textbuf_add_n(struct scsitgt__iscsi_textbuf *tb, const char *key, size_t key_len,
				 const char *value, size_t value_len);

/**
 * Append "key=<decimal>\0".
 *
 * @return As scsitgt__iscsi_textbuf_add().
 */
int scsitgt__iscsi_textbuf_add_u32(struct scsitgt__iscsi_textbuf *tb, const char *key,
				   uint32_t value);

/**
 * Whether the text holds a pair with this key (e.g. to avoid declaring a key twice).
 */
bool scsitgt__iscsi_textbuf_has_key(const struct scsitgt__iscsi_textbuf *tb, const char *key);

/**
 * The whole text written so far.
 *
 * @param tb  The builder.
 * @param len Receives the length.
 * @return The bytes (NULL when empty). Valid until the next add, reset or destroy.
 */
const uint8_t *scsitgt__iscsi_textbuf_data(const struct scsitgt__iscsi_textbuf *tb, size_t *len);

/**
 * Take the next chunk of at most @p max bytes of the text for one response PDU. Pairs may be
 * split across chunks (RFC 7143 §6.1: a continued text is joined before it is parsed).
 *
 * @param tb   The builder.
 * @param data Receives the chunk (valid until the next add, reset or destroy).
 * @param max  Largest chunk, the peer's MaxRecvDataSegmentLength (>= 1).
 * @param more Receives true when text remains after this chunk: set the C bit.
 * @return The chunk length; 0 when the text is empty or fully taken.
 */
size_t scsitgt__iscsi_textbuf_next_chunk(struct scsitgt__iscsi_textbuf *tb, const uint8_t **data,
					 size_t max, bool *more);

/** Bytes of the text not yet handed out. */
size_t scsitgt__iscsi_textbuf_remaining(const struct scsitgt__iscsi_textbuf *tb);

/** Empty the text (and the taken count), keeping the allocation. */
void scsitgt__iscsi_textbuf_reset(struct scsitgt__iscsi_textbuf *tb);

/** Free the allocation. */
void scsitgt__iscsi_textbuf_destroy(struct scsitgt__iscsi_textbuf *tb);

#endif /* SCSITGT_ISCSI_TEXT_TEXTBUF_H */
