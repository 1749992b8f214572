/* SPDX-License-Identifier: MIT */
/*
 * iSCSI login/text key negotiation, target side (RFC 7143 §6 and §13, RFC 7144 for
 * iSCSIProtocolLevel, RFC 7145 for the iSER keys).
 *
 * How login.c uses it (one struct scsitgt__iscsi_neg per login, i.e. per connection):
 *
 *	scsitgt__iscsi_neg_params_init(&cfg);          // then apply the target's settings
 *	scsitgt__iscsi_neg_init(&neg, &cfg, leading);  // leading = TSIH 0 in the first request
 *	for each Login Request:
 *		r = scsitgt__iscsi_text_acc_add(&acc, seg, seg_len, C bit);  // textbuf.h
 *		if (r == 0) answer with an empty Login Response (C bit echoed), wait for more;
 *		scsitgt__iscsi_neg_set_stage(&neg, CSG);
 *		scsitgt__iscsi_neg_set_transit(&neg, T bit);
 *		text = scsitgt__iscsi_text_acc_data(&acc, &len);
 *		r = scsitgt__iscsi_neg_text(&neg, text, len, &resp, &chap);   // answers every key
 *		... sequence CHAP with chap.h using chap.a/i/c/n/r (security stage) ...
 *		scsitgt__iscsi_neg_declare(&neg, &resp);     // TPGT, MaxRecvDataSegmentLength, ...
 *		transit allowed only if !scsitgt__iscsi_neg_pending(&neg);
 *		send resp in chunks (scsitgt__iscsi_textbuf_next_chunk()), C bit while more remains;
 *	on transit to full feature phase:
 *		scsitgt__iscsi_neg_finish(&neg);             // fix-ups and required keys
 *		read neg.params (struct scsitgt__iscsi_session_params).
 *
 * A Text Request negotiation in full feature phase uses the same object after
 * scsitgt__iscsi_neg_text_start(), which forgets the per-key state of the previous exchange.
 *
 * Each key may be offered once per negotiation: a second offer is a protocol error (RFC 7143
 * §6.2). Keys not understood (unknown, "X-" and "X#" private keys) are answered NotUnderstood
 * (RFC 7143 §6.2, §13.16); keys irrelevant in a discovery session or on a non-leading
 * connection are answered Irrelevant; out-of-range or malformed values are answered Reject and
 * keep the RFC default (RFC 7143 §6.2, §6.3). A list key whose offer holds no value the target
 * accepts is answered Reject only when the target accepts the default; otherwise (a digest the
 * target requires) the negotiation is terminated (§6.2.1) and the login fails.
 */
#ifndef SCSITGT_ISCSI_TEXT_KEYS_H
#define SCSITGT_ISCSI_TEXT_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/iscsi/text/textbuf.h"

/** Keys the negotiator knows, in table order. */
enum scsitgt__iscsi_key_id {
	SCSITGT__ISCSI_KEY_HEADER_DIGEST,
	SCSITGT__ISCSI_KEY_DATA_DIGEST,
	SCSITGT__ISCSI_KEY_MAX_CONNECTIONS,
	SCSITGT__ISCSI_KEY_SEND_TARGETS,
	SCSITGT__ISCSI_KEY_TARGET_NAME,
	SCSITGT__ISCSI_KEY_INITIATOR_NAME,
	SCSITGT__ISCSI_KEY_TARGET_ALIAS,
	SCSITGT__ISCSI_KEY_INITIATOR_ALIAS,
	SCSITGT__ISCSI_KEY_TARGET_ADDRESS,
	SCSITGT__ISCSI_KEY_TARGET_PORTAL_GROUP_TAG,
	SCSITGT__ISCSI_KEY_INITIAL_R2T,
	SCSITGT__ISCSI_KEY_IMMEDIATE_DATA,
	SCSITGT__ISCSI_KEY_MAX_RECV_DSL,
	SCSITGT__ISCSI_KEY_MAX_BURST_LENGTH,
	SCSITGT__ISCSI_KEY_FIRST_BURST_LENGTH,
	SCSITGT__ISCSI_KEY_DEFAULT_TIME2WAIT,
	SCSITGT__ISCSI_KEY_DEFAULT_TIME2RETAIN,
	SCSITGT__ISCSI_KEY_MAX_OUTSTANDING_R2T,
	SCSITGT__ISCSI_KEY_DATA_PDU_IN_ORDER,
	SCSITGT__ISCSI_KEY_DATA_SEQUENCE_IN_ORDER,
	SCSITGT__ISCSI_KEY_ERROR_RECOVERY_LEVEL,
	SCSITGT__ISCSI_KEY_SESSION_TYPE,
	SCSITGT__ISCSI_KEY_AUTH_METHOD,
	SCSITGT__ISCSI_KEY_CHAP_A,
	SCSITGT__ISCSI_KEY_CHAP_I,
	SCSITGT__ISCSI_KEY_CHAP_C,
	SCSITGT__ISCSI_KEY_CHAP_N,
	SCSITGT__ISCSI_KEY_CHAP_R,
	SCSITGT__ISCSI_KEY_OF_MARKER,
	SCSITGT__ISCSI_KEY_IF_MARKER,
	SCSITGT__ISCSI_KEY_OF_MARK_INT,
	SCSITGT__ISCSI_KEY_IF_MARK_INT,
	SCSITGT__ISCSI_KEY_TASK_REPORTING,
	SCSITGT__ISCSI_KEY_PROTOCOL_LEVEL,
	SCSITGT__ISCSI_KEY_RDMA_EXTENSIONS,
	SCSITGT__ISCSI_KEY_TARGET_RECV_DSL,
	SCSITGT__ISCSI_KEY_INITIATOR_RECV_DSL,
	SCSITGT__ISCSI_KEY_MAX_OUT_UNEXPECTED_PDUS,
	SCSITGT__ISCSI_KEY_COUNT
};

/** How a key's result is computed (RFC 7143 §6.2). */
enum scsitgt__iscsi_key_type {
	SCSITGT__ISCSI_KT_LIST,	    /**< First value of the offer the responder accepts. */
	SCSITGT__ISCSI_KT_BOOL_AND, /**< Yes only if both say Yes. */
	SCSITGT__ISCSI_KT_BOOL_OR,  /**< Yes if either says Yes. */
	SCSITGT__ISCSI_KT_NUM_MIN,  /**< Smaller of the two numbers. */
	SCSITGT__ISCSI_KT_NUM_MAX,  /**< Larger of the two numbers. */
	SCSITGT__ISCSI_KT_NUM_DECL, /**< Declared number, one per direction; no answer. */
	SCSITGT__ISCSI_KT_DECL,	    /**< Declared string; no answer. */
	SCSITGT__ISCSI_KT_RANGE,    /**< Numeric range "n1~n2" (obsolete marker intervals). */
	SCSITGT__ISCSI_KT_AUTH,	    /**< CHAP_* keys: handed to the caller (login.c). */
};

/** Where a key may appear (bit mask). */
enum scsitgt__iscsi_key_phase {
	SCSITGT__ISCSI_KP_SECURITY = 1u << 0,	  /**< Security negotiation stage. */
	SCSITGT__ISCSI_KP_OPERATIONAL = 1u << 1,  /**< Operational negotiation stage. */
	SCSITGT__ISCSI_KP_FFP = 1u << 2,	  /**< Text Request in full feature phase. */
	SCSITGT__ISCSI_KP_LO = 1u << 3,		  /**< Leading connection only (RFC 7143 §6.3). */
	SCSITGT__ISCSI_KP_NO_DISCOVERY = 1u << 4, /**< Irrelevant when SessionType=Discovery. */
	SCSITGT__ISCSI_KP_INITIATOR = 1u << 5,	  /**< The initiator may send it. */
	SCSITGT__ISCSI_KP_ISER = 1u << 6,	  /**< iSER only (Irrelevant without RDMA). */
};

/** One row of the key table. */
struct scsitgt__iscsi_key_desc {
	const char *name; /**< Key name as on the wire. */
	enum scsitgt__iscsi_key_type type;
	unsigned int phase;   /**< enum scsitgt__iscsi_key_phase bits. */
	uint32_t min;	      /**< Numeric keys: smallest valid value. */
	uint32_t max;	      /**< Numeric keys: largest valid value. */
	uint32_t rfc_default; /**< Numeric and boolean keys: value if not negotiated. */
	uint16_t value_max;   /**< Longest value text accepted. */
};

/** Digest values (HeaderDigest, DataDigest). */
enum scsitgt__iscsi_digest {
	SCSITGT__ISCSI_DIGEST_NONE = 0,
	SCSITGT__ISCSI_DIGEST_CRC32C = 1,
};
#define SCSITGT__ISCSI_DIGEST_MASK_NONE (1u << SCSITGT__ISCSI_DIGEST_NONE)
#define SCSITGT__ISCSI_DIGEST_MASK_CRC32C (1u << SCSITGT__ISCSI_DIGEST_CRC32C)

/** AuthMethod values the target implements. */
enum scsitgt__iscsi_auth {
	SCSITGT__ISCSI_AUTH_UNSET = 0, /**< Not negotiated (yet). */
	SCSITGT__ISCSI_AUTH_NONE = 1,
	SCSITGT__ISCSI_AUTH_CHAP = 2,
	SCSITGT__ISCSI_AUTH_REJECTED = 3, /**< Offered, but nothing acceptable: fail the login. */
};
#define SCSITGT__ISCSI_AUTH_MASK_NONE (1u << SCSITGT__ISCSI_AUTH_NONE)
#define SCSITGT__ISCSI_AUTH_MASK_CHAP (1u << SCSITGT__ISCSI_AUTH_CHAP)

enum scsitgt__iscsi_session_type {
	SCSITGT__ISCSI_SESSION_NORMAL = 0,
	SCSITGT__ISCSI_SESSION_DISCOVERY = 1,
};

/** Negotiation stage; the login values equal the CSG field (RFC 7143 §11.12.3). */
enum scsitgt__iscsi_neg_stage {
	SCSITGT__ISCSI_STAGE_SECURITY = 0,
	SCSITGT__ISCSI_STAGE_OPERATIONAL = 1,
	SCSITGT__ISCSI_STAGE_FFP = 3,
};

/** Largest iSCSI name, in bytes (RFC 7143 §4.2.7.1: 223). */
#define SCSITGT__ISCSI_NAME_MAX 223
/** Largest numeric value of the length keys (RFC 7143 §13.12-§13.14: 2^24 - 1). */
#define SCSITGT__ISCSI_DSL_MAX 16777215u
/** Smallest value of the length keys. */
#define SCSITGT__ISCSI_DSL_MIN 512u
/** Most R2Ts one task tracks: MaxOutstandingR2T is never answered above it. */
#define SCSITGT__ISCSI_R2T_MAX 64
/** iSCSIProtocolLevel we implement (RFC 7144 §2.1: 1 = RFC 7143). */
#define SCSITGT__ISCSI_PROTOCOL_LEVEL 1

/**
 * What the target wants, filled by login.c from the target settings. Start from
 * scsitgt__iscsi_neg_params_init(), which sets values that perform well.
 */
struct scsitgt__iscsi_neg_params {
	unsigned int header_digests;   /**< SCSITGT__ISCSI_DIGEST_MASK_* the target accepts. */
	unsigned int data_digests;     /**< Same for DataDigest. */
	unsigned int auth_methods;     /**< SCSITGT__ISCSI_AUTH_MASK_* the target accepts. */
	uint32_t max_connections;      /**< Default 1. */
	bool initial_r2t;	       /**< Default false (No). */
	bool immediate_data;	       /**< Default true. */
	uint32_t max_recv_dsl;	       /**< Declared MaxRecvDataSegmentLength, default 262144. */
	uint32_t max_burst;	       /**< Default 16776192 (16 MiB - 1 KiB). */
	uint32_t first_burst;	       /**< Default 262144. */
	uint32_t default_time2wait;    /**< Default 2. */
	uint32_t default_time2retain;  /**< Default 20. */
	uint32_t max_outstanding_r2t;  /**< Default 16. */
	bool data_pdu_in_order;	       /**< Default true (we support only in-order). */
	bool data_seq_in_order;	       /**< Default true. */
	uint32_t error_recovery_level; /**< Default 0. */
	uint16_t tpgt;		       /**< TargetPortalGroupTag declared on leading logins. */
	const char *target_alias;      /**< Declared TargetAlias, or NULL. Not copied. */
	bool rdma_extensions;	       /**< iSER: accept RDMAExtensions=Yes. Default false. */
	uint32_t max_outstanding_unexpected_pdus; /**< iSER, 0 = no limit. Default 0. */
	/**
	 * iSER: the largest data segment the data mover can send in one PDU; what we send is
	 * bounded by it besides the initiator's InitiatorRecvDataSegmentLength. 0: no bound.
	 */
	uint32_t max_xmit_cap;
	/**
	 * Propose operational keys the initiator did not offer when our value differs from the
	 * RFC default (e.g. InitialR2T=No); the login then waits for the answer. Default true.
	 */
	bool propose;
};

/**
 * Negotiated (or declared) values of a session and connection. Holds RFC defaults until
 * negotiated (scsitgt__iscsi_session_params_init()).
 */
struct scsitgt__iscsi_session_params {
	enum scsitgt__iscsi_digest header_digest;
	enum scsitgt__iscsi_digest data_digest;
	uint32_t max_connections;
	bool initial_r2t;
	bool immediate_data;
	uint32_t max_recv_dsl; /**< Ours: the largest data segment we accept. */
	/**
	 * The largest data segment we may send: the initiator's MaxRecvDataSegmentLength; with
	 * RDMAExtensions=Yes its InitiatorRecvDataSegmentLength instead, within
	 * cfg.max_xmit_cap (RFC 7145 §6.3), set by scsitgt__iscsi_neg_finish().
	 */
	uint32_t max_xmit_dsl;
	uint32_t max_burst;
	uint32_t first_burst;
	uint32_t default_time2wait;
	uint32_t default_time2retain;
	uint32_t max_outstanding_r2t;
	bool data_pdu_in_order;
	bool data_seq_in_order;
	uint32_t error_recovery_level;
	enum scsitgt__iscsi_session_type session_type;
	enum scsitgt__iscsi_auth auth_method;
	uint32_t protocol_level;     /**< Negotiated iSCSIProtocolLevel (0 = RFC 3720). */
	bool rdma_extensions;	     /**< iSER. */
	uint32_t target_recv_dsl;    /**< iSER TargetRecvDataSegmentLength (ours). */
	uint32_t initiator_recv_dsl; /**< iSER InitiatorRecvDataSegmentLength (theirs). */
	uint32_t max_outstanding_unexpected_pdus; /**< iSER, 0 = no limit. */
	bool has_initiator_name;		  /**< InitiatorName was declared. */
	bool has_target_name;			  /**< TargetName was declared. */
	bool has_session_type;			  /**< SessionType was declared. */
	char initiator_name[SCSITGT__ISCSI_NAME_MAX + 1];
	char initiator_alias[SCSITGT__ISCSI_VALUE_MAX + 1];
	char target_name[SCSITGT__ISCSI_NAME_MAX + 1];
};

/** CHAP_* values of the last text, for login.c to sequence with chap.h. */
struct scsitgt__iscsi_chap_keys {
	const char *a; /**< CHAP_A value or NULL; points into the text given to neg_text(). */
	const char *i; /**< CHAP_I. */
	const char *c; /**< CHAP_C. */
	const char *n; /**< CHAP_N. */
	const char *r; /**< CHAP_R. */
};

/** Most distinct unknown keys tracked (for duplicate detection) in one negotiation. */
#define SCSITGT__ISCSI_NEG_UNKNOWN_MAX 64

/** Negotiation state of one login (or one Text exchange). Plain data; no destroy. */
struct scsitgt__iscsi_neg {
	struct scsitgt__iscsi_neg_params cfg;	     /**< Copy of the target's wishes. */
	struct scsitgt__iscsi_session_params params; /**< Results so far. */
	enum scsitgt__iscsi_neg_stage stage;
	bool leading;		  /**< Leading connection of a new session (TSIH 0). */
	bool transit;		  /**< The current request has the T bit set. */
	bool first_response_done; /**< The first response's declarations were made. */
	uint8_t key_state[SCSITGT__ISCSI_KEY_COUNT]; /**< SCSITGT__ISCSI_KS_* bits, private. */
	uint64_t unknown_seen[SCSITGT__ISCSI_NEG_UNKNOWN_MAX]; /**< Hashes of unknown keys. */
	unsigned int unknown_count;
	bool has_send_targets; /**< A SendTargets key came (Text Request, FFP). */
	char send_targets[SCSITGT__ISCSI_VALUE_MAX + 1]; /**< Its value ("All", a name or ""). */
};

/** Return value of scsitgt__iscsi_neg_key() for a CHAP_* key the caller must handle. */
#define SCSITGT__ISCSI_NEG_AUTH_KEY 1

/**
 * Fill @p cfg with the target's preferred values (see each field).
 */
void scsitgt__iscsi_neg_params_init(struct scsitgt__iscsi_neg_params *cfg);

/**
 * Fill @p p with the RFC 7143 §13 defaults (used for any key never negotiated).
 */
void scsitgt__iscsi_session_params_init(struct scsitgt__iscsi_session_params *p);

/**
 * The table row of a key.
 *
 * @return The row; NULL when @p id is out of range.
 */
const struct scsitgt__iscsi_key_desc *scsitgt__iscsi_key_get(enum scsitgt__iscsi_key_id id);

/**
 * Look a key name up.
 *
 * @param name Key name (need not be NUL-terminated).
 * @param len  Its length.
 * @return The key id; -ENOENT when unknown.
 */
int scsitgt__iscsi_key_lookup(const char *name, size_t len);

/**
 * Parse a numerical value (RFC 7143 §6.1): decimal without sign or leading "+", or "0x"/"0X"
 * hex. At most 64 bits.
 *
 * @param s   The text (need not be NUL-terminated).
 * @param len Its length.
 * @param out Receives the number.
 * @return 0; -EINVAL when malformed or empty; -ERANGE when larger than 2^64 - 1.
 */
int scsitgt__iscsi_parse_number(const char *s, size_t len, uint64_t *out);

/**
 * Check an iSCSI name from the wire (InitiatorName, TargetName, a SendTargets name) against
 * RFC 7143 §4.2.7 and the stringprep profile of RFC 3722 §6:
 *  - 1 to 223 bytes of valid UTF-8 (RFC 7143 §4.2.7.1), a type designator "iqn.", "eui." or
 *    "naa." (§4.2.7.3-§4.2.7.5);
 *  - ASCII limited to '-', '.', ':', letters and digits (§4.2.7.2): no control characters,
 *    whitespace, '/', '\', '"', ... Upper-case ASCII letters are accepted: the profile maps
 *    them to lower case and names compare without case;
 *  - none of the code points RFC 3722 §6 prohibits (RFC 3454 tables C.1.2, C.2.2, C.3-C.9: C1
 *    controls, non-ASCII spaces, line and paragraph separators, bidirectional and format
 *    controls, private use, surrogates, non-characters, tags), and the bidirectional isolates
 *    U+2066-U+2069 (unassigned in Unicode 3.2, table A.1). Other unassigned code points are
 *    not checked.
 *
 * @param name The name (need not be NUL-terminated; a NUL inside is refused).
 * @param len  Its length.
 * @return 0 when valid; -ENOENT when empty; -ENAMETOOLONG above 223 bytes; -EINVAL otherwise.
 */
int scsitgt__iscsi_name_check(const char *name, size_t len);

/**
 * Start a login negotiation.
 *
 * @param n       State to initialise.
 * @param cfg     The target's wishes (copied; target_alias must outlive @p n).
 * @param leading true on the leading connection of a new session (TSIH 0); LO keys on other
 *                connections are answered Irrelevant.
 */
void scsitgt__iscsi_neg_init(struct scsitgt__iscsi_neg *n,
			     const struct scsitgt__iscsi_neg_params *cfg, bool leading);

/**
 * Set the stage of the request being processed (the Login Request's CSG, or FFP).
 */
void scsitgt__iscsi_neg_set_stage(struct scsitgt__iscsi_neg *n,
				  enum scsitgt__iscsi_neg_stage stage);

/**
 * Tell whether the request being processed has the T (transit) bit set, i.e. the initiator
 * has offered everything it wanted for this stage. The target makes its own proposals
 * (cfg.propose) only then, so they never cross an offer still to come. Reset to false by
 * scsitgt__iscsi_neg_set_stage(); call after it.
 */
void scsitgt__iscsi_neg_set_transit(struct scsitgt__iscsi_neg *n, bool transit);

/**
 * Start a Text Request negotiation in full feature phase: stage FFP, per-key state cleared,
 * results kept.
 */
void scsitgt__iscsi_neg_text_start(struct scsitgt__iscsi_neg *n);

/**
 * Negotiate one key: record the result and append the answer (if one is due) to @p resp.
 *
 * @param n    The negotiation.
 * @param kv   The pair (from scsitgt__iscsi_text_next()).
 * @param resp Response builder.
 * @return 0 when handled; ::SCSITGT__ISCSI_NEG_AUTH_KEY for a CHAP_* key in the security stage
 *         (the caller handles it; nothing appended); -EPROTO for a protocol error (a key offered
 *         twice, a security key outside the security stage, a value too long, a declarative key
 *         with an invalid value): fail the login with status 0x0200 / reject the Text Request;
 *         -ENOTSUP when a list key's offer holds no value the target accepts and its default
 *         (None) is refused too, i.e. HeaderDigest or DataDigest without CRC32C on a target
 *         that requires it (RFC 7143 §6.2.1: the negotiation is terminated): fail the login
 *         with status 0x0200; -ENOSPC or -ENOMEM when @p resp is full (a target error).
 */
int scsitgt__iscsi_neg_key(struct scsitgt__iscsi_neg *n, const struct scsitgt__iscsi_kv *kv,
			   struct scsitgt__iscsi_textbuf *resp);

/**
 * Negotiate every pair of a complete text (from the accumulator). SessionType is applied first
 * wherever it appears, so keys irrelevant to discovery sessions are answered correctly. CHAP_*
 * values are returned in @p chap instead of being answered.
 *
 * @param n    The negotiation.
 * @param text The complete text.
 * @param len  Its length.
 * @param resp Response builder.
 * @param chap Receives the CHAP_* values (all NULL when absent). NULL means the caller
 *             expects no CHAP keys: a CHAP_* key is then a protocol error (-EPROTO).
 * @return 0; -EINVAL for malformed text (RFC 7143 §6.1 syntax); the errors of
 *         scsitgt__iscsi_neg_key().
 */
int scsitgt__iscsi_neg_text(struct scsitgt__iscsi_neg *n, const uint8_t *text, size_t len,
			    struct scsitgt__iscsi_textbuf *resp,
			    struct scsitgt__iscsi_chap_keys *chap);

/**
 * Append what the target must send without being asked, for the current stage:
 *  - TargetPortalGroupTag in the first response of a leading login (RFC 7143 §13.9);
 *  - TargetAlias (if configured) in the first response of a normal session's leading login;
 *  - in the operational stage, MaxRecvDataSegmentLength (declarative, RFC 7143 §13.12), once;
 *  - in the operational stage of a normal session's leading login with cfg.propose, once the
 *    initiator set the T bit (scsitgt__iscsi_neg_set_transit()), offers of keys it did not
 *    offer whose target value differs from the RFC default; the initiator must answer them
 *    (see scsitgt__iscsi_neg_pending()). If the login skips the operational stage, nothing is
 *    declared and the RFC defaults stay (our MaxRecvDataSegmentLength is then 8192);
 *  - with RDMAExtensions=Yes, TargetRecvDataSegmentLength (RFC 7145 §6.3).
 * Call once per response, after the request's keys were negotiated. Idempotent per key.
 *
 * @return 0; -ENOSPC or -ENOMEM when @p resp is full.
 */
int scsitgt__iscsi_neg_declare(struct scsitgt__iscsi_neg *n, struct scsitgt__iscsi_textbuf *resp);

/**
 * Whether the target offered keys that the initiator has not answered yet; while true the
 * target must not transit to the next stage (T bit clear).
 */
bool scsitgt__iscsi_neg_pending(const struct scsitgt__iscsi_neg *n);

/**
 * Finish the login negotiation before full feature phase: FirstBurstLength clamped to
 * MaxBurstLength (RFC 7143 §13.14), digest and burst values of discovery sessions reset, and
 * the required declarations checked.
 *
 * @return 0; -ENOENT when InitiatorName is missing (leading login) or TargetName is missing in
 *         a normal session's leading login (login status 0x0207, missing parameter); -ENOTSUP
 *         when HeaderDigest or DataDigest ends at a value the target refuses (it requires
 *         CRC32C and the initiator never offered the key, so the default None stands): login
 *         status 0x0200.
 */
int scsitgt__iscsi_neg_finish(struct scsitgt__iscsi_neg *n);

/**
 * Whether a key has been offered by the initiator in this negotiation.
 */
bool scsitgt__iscsi_neg_offered(const struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id);

#endif /* SCSITGT_ISCSI_TEXT_KEYS_H */
