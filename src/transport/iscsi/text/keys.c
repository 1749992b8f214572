/* SPDX-License-Identifier: MIT */
/*
 * iSCSI text key negotiation, target side (RFC 7143 §6 and §13; RFC 7144 for
 * iSCSIProtocolLevel; RFC 7145 §6.3 for the iSER keys). See keys.h for the call sequence.
 */
#include "transport/iscsi/text/keys.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

/* Per-key state bits of struct scsitgt__iscsi_neg.key_state. */
enum {
	KS_OFFERED = 1u << 0,	  /* the initiator offered (or declared) the key */
	KS_TGT_OFFERED = 1u << 1, /* the target proposed the key, waiting for the answer */
	KS_TGT_DONE = 1u << 2,	  /* the initiator answered the target's proposal */
	KS_DECLARED = 1u << 3,	  /* the target declared the key */
};

#define SEC SCSITGT__ISCSI_KP_SECURITY
#define OPER (SCSITGT__ISCSI_KP_SECURITY | SCSITGT__ISCSI_KP_OPERATIONAL)
#define FFP SCSITGT__ISCSI_KP_FFP
#define LO SCSITGT__ISCSI_KP_LO
#define NODISC SCSITGT__ISCSI_KP_NO_DISCOVERY
#define INI SCSITGT__ISCSI_KP_INITIATOR
#define ISER SCSITGT__ISCSI_KP_ISER
#define VMAX SCSITGT__ISCSI_VALUE_MAX
#define LMAX SCSITGT__ISCSI_LONG_VALUE_MAX
#define DSLMIN SCSITGT__ISCSI_DSL_MIN
#define DSLMAX SCSITGT__ISCSI_DSL_MAX

/* One row of the table: key id, wire name, type, phases, numeric range, RFC default (numeric
 * and boolean keys; 0 where none applies) and the longest value text accepted. */
#define KEY(id, key_name, kt, phases, lo, hi, def, vmax)              \
	[SCSITGT__ISCSI_KEY_##id] = { .name = key_name,               \
				      .type = SCSITGT__ISCSI_KT_##kt, \
				      .phase = (phases),              \
				      .min = (lo),                    \
				      .max = (hi),                    \
				      .rfc_default = (def),           \
				      .value_max = (vmax) }

/*
 * The key table (RFC 7143 §13, in its order). List values may be long (up to 8192 bytes, like
 * binary values); other values are limited to 255 bytes (RFC 7143 §6.1). Operational keys are
 * accepted in the security stage too (the login stages share one negotiation); security keys
 * only there. Keys only a target sends (TargetAlias, TargetAddress, TargetPortalGroupTag) lack
 * INI: an initiator's copy is ignored.
 */
static const struct scsitgt__iscsi_key_desc key_table[SCSITGT__ISCSI_KEY_COUNT] = {
	KEY(HEADER_DIGEST, "HeaderDigest", LIST, OPER | INI, 0, 0, 0, LMAX),
	KEY(DATA_DIGEST, "DataDigest", LIST, OPER | INI, 0, 0, 0, LMAX),
	KEY(MAX_CONNECTIONS, "MaxConnections", NUM_MIN, OPER | LO | NODISC | INI, 1, 65535, 1,
	    VMAX),
	KEY(SEND_TARGETS, "SendTargets", DECL, FFP | INI, 0, 0, 0, VMAX),
	KEY(TARGET_NAME, "TargetName", DECL, OPER | INI, 0, 0, 0, SCSITGT__ISCSI_NAME_MAX),
	KEY(INITIATOR_NAME, "InitiatorName", DECL, OPER | INI, 0, 0, 0, SCSITGT__ISCSI_NAME_MAX),
	KEY(TARGET_ALIAS, "TargetAlias", DECL, OPER | FFP, 0, 0, 0, VMAX),
	KEY(INITIATOR_ALIAS, "InitiatorAlias", DECL, OPER | FFP | INI, 0, 0, 0, VMAX),
	KEY(TARGET_ADDRESS, "TargetAddress", DECL, OPER | FFP, 0, 0, 0, VMAX),
	KEY(TARGET_PORTAL_GROUP_TAG, "TargetPortalGroupTag", DECL, OPER, 0, 0, 0, VMAX),
	KEY(INITIAL_R2T, "InitialR2T", BOOL_OR, OPER | LO | NODISC | INI, 0, 0, 1, VMAX),
	KEY(IMMEDIATE_DATA, "ImmediateData", BOOL_AND, OPER | LO | NODISC | INI, 0, 0, 1, VMAX),
	KEY(MAX_RECV_DSL, "MaxRecvDataSegmentLength", NUM_DECL, OPER | FFP | INI, DSLMIN, DSLMAX,
	    8192, VMAX),
	KEY(MAX_BURST_LENGTH, "MaxBurstLength", NUM_MIN, OPER | LO | NODISC | INI, DSLMIN, DSLMAX,
	    262144, VMAX),
	KEY(FIRST_BURST_LENGTH, "FirstBurstLength", NUM_MIN, OPER | LO | NODISC | INI, DSLMIN,
	    DSLMAX, 65536, VMAX),
	KEY(DEFAULT_TIME2WAIT, "DefaultTime2Wait", NUM_MAX, OPER | LO | INI, 0, 3600, 2, VMAX),
	KEY(DEFAULT_TIME2RETAIN, "DefaultTime2Retain", NUM_MIN, OPER | LO | INI, 0, 3600, 20, VMAX),
	KEY(MAX_OUTSTANDING_R2T, "MaxOutstandingR2T", NUM_MIN, OPER | LO | NODISC | INI, 1, 65535,
	    1, VMAX),
	KEY(DATA_PDU_IN_ORDER, "DataPDUInOrder", BOOL_OR, OPER | LO | NODISC | INI, 0, 0, 1, VMAX),
	KEY(DATA_SEQUENCE_IN_ORDER, "DataSequenceInOrder", BOOL_OR, OPER | LO | NODISC | INI, 0, 0,
	    1, VMAX),
	KEY(ERROR_RECOVERY_LEVEL, "ErrorRecoveryLevel", NUM_MIN, OPER | LO | INI, 0, 2, 0, VMAX),
	KEY(SESSION_TYPE, "SessionType", DECL, OPER | LO | INI, 0, 0, 0, VMAX),
	KEY(AUTH_METHOD, "AuthMethod", LIST, SEC | INI, 0, 0, 0, LMAX),
	KEY(CHAP_A, "CHAP_A", AUTH, SEC | INI, 0, 0, 0, VMAX),
	KEY(CHAP_I, "CHAP_I", AUTH, SEC | INI, 0, 0, 0, VMAX),
	KEY(CHAP_C, "CHAP_C", AUTH, SEC | INI, 0, 0, 0, LMAX),
	KEY(CHAP_N, "CHAP_N", AUTH, SEC | INI, 0, 0, 0, VMAX),
	KEY(CHAP_R, "CHAP_R", AUTH, SEC | INI, 0, 0, 0, LMAX),
	KEY(OF_MARKER, "OFMarker", BOOL_AND, OPER | INI, 0, 0, 0, VMAX),
	KEY(IF_MARKER, "IFMarker", BOOL_AND, OPER | INI, 0, 0, 0, VMAX),
	KEY(OF_MARK_INT, "OFMarkInt", RANGE, OPER | INI, 1, 65535, 2048, VMAX),
	KEY(IF_MARK_INT, "IFMarkInt", RANGE, OPER | INI, 1, 65535, 2048, VMAX),
	KEY(TASK_REPORTING, "TaskReporting", LIST, OPER | LO | NODISC | INI, 0, 0, 0, LMAX),
	KEY(PROTOCOL_LEVEL, "iSCSIProtocolLevel", NUM_MIN, OPER | LO | NODISC | INI, 0, 31, 0,
	    VMAX),
	KEY(RDMA_EXTENSIONS, "RDMAExtensions", BOOL_AND, OPER | LO | INI, 0, 0, 0, VMAX),
	KEY(TARGET_RECV_DSL, "TargetRecvDataSegmentLength", NUM_MIN, OPER | ISER | INI, DSLMIN,
	    DSLMAX, 8192, VMAX),
	KEY(INITIATOR_RECV_DSL, "InitiatorRecvDataSegmentLength", NUM_MIN, OPER | ISER | INI,
	    DSLMIN, DSLMAX, 8192, VMAX),
	KEY(MAX_OUT_UNEXPECTED_PDUS, "MaxOutstandingUnexpectedPDUs", NUM_MIN,
	    OPER | LO | ISER | INI, 0, UINT32_MAX, 0, VMAX),
};
#undef KEY

void scsitgt__iscsi_neg_params_init(struct scsitgt__iscsi_neg_params *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->header_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE | SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	cfg->data_digests = SCSITGT__ISCSI_DIGEST_MASK_NONE | SCSITGT__ISCSI_DIGEST_MASK_CRC32C;
	cfg->auth_methods = SCSITGT__ISCSI_AUTH_MASK_NONE;
	cfg->max_connections = 1;
	cfg->initial_r2t = false;
	cfg->immediate_data = true;
	cfg->max_recv_dsl = 262144;
	cfg->max_burst = 16776192;
	cfg->first_burst = 262144;
	cfg->default_time2wait = 2;
	cfg->default_time2retain = 20;
	cfg->max_outstanding_r2t = 16;
	cfg->data_pdu_in_order = true;
	cfg->data_seq_in_order = true;
	cfg->error_recovery_level = 0;
	cfg->tpgt = 1;
	cfg->target_alias = NULL;
	cfg->rdma_extensions = false;
	cfg->max_outstanding_unexpected_pdus = 0;
	cfg->propose = true;
}

void scsitgt__iscsi_session_params_init(struct scsitgt__iscsi_session_params *p)
{
	/* RFC 7143 §13 defaults. */
	memset(p, 0, sizeof(*p));
	p->header_digest = SCSITGT__ISCSI_DIGEST_NONE;
	p->data_digest = SCSITGT__ISCSI_DIGEST_NONE;
	p->max_connections = 1;
	p->initial_r2t = true;
	p->immediate_data = true;
	p->max_recv_dsl = 8192;
	p->max_xmit_dsl = 8192;
	p->max_burst = 262144;
	p->first_burst = 65536;
	p->default_time2wait = 2;
	p->default_time2retain = 20;
	p->max_outstanding_r2t = 1;
	p->data_pdu_in_order = true;
	p->data_seq_in_order = true;
	p->error_recovery_level = 0;
	p->session_type = SCSITGT__ISCSI_SESSION_NORMAL;
	p->auth_method = SCSITGT__ISCSI_AUTH_UNSET;
	p->protocol_level = 0;
	p->rdma_extensions = false;
	p->target_recv_dsl = 8192;
	p->initiator_recv_dsl = 8192;
	p->max_outstanding_unexpected_pdus = 0;
}

const struct scsitgt__iscsi_key_desc *scsitgt__iscsi_key_get(enum scsitgt__iscsi_key_id id)
{
	if ((unsigned int)id >= SCSITGT__ISCSI_KEY_COUNT) {
		return NULL;
	}
	return &key_table[id];
}

int scsitgt__iscsi_key_lookup(const char *name, size_t len)
{
	/* Key names are case-sensitive (RFC 7143 §6.1). */
	for (int i = 0; i < SCSITGT__ISCSI_KEY_COUNT; i++) {
		const char *k = key_table[i].name;

		if (strlen(k) == len && memcmp(k, name, len) == 0) {
			return i;
		}
	}
	return -ENOENT;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

int scsitgt__iscsi_parse_number(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0) {
		return -EINVAL;
	}
	/* RFC 7143 §6.1 numerical values: decimal-constant or hex-constant. */
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (size_t i = 2; i < len; i++) {
			int d = hex_digit(s[i]);

			if (d < 0) {
				return -EINVAL;
			}
			if (v >> 60) {
				return -ERANGE;
			}
			v = v << 4 | (uint64_t)d;
		}
		*out = v;
		return 0;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9') {
			return -EINVAL;
		}
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10) {
			return -ERANGE;
		}
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Code points RFC 3722 §6 prohibits in names (RFC 3454 C.1.2, C.2.2, C.3-C.9), non-ASCII. */
static bool name_cp_prohibited(uint32_t c)
{
	static const struct {
		uint32_t lo, hi;
	} bad[] = {
		{ 0x0080, 0x00a0 },    /* C.2.2 C1 controls; C.1.2 no-break space */
		{ 0x0340, 0x0341 },    /* C.8 */
		{ 0x06dd, 0x06dd },    /* C.2.2 */
		{ 0x070f, 0x070f },    /* C.2.2 */
		{ 0x1680, 0x1680 },    /* C.1.2 */
		{ 0x180e, 0x180e },    /* C.2.2 */
		{ 0x2000, 0x200f },    /* C.1.2 spaces; C.2.2 ZWNJ, ZWJ; C.8 LRM, RLM */
		{ 0x2028, 0x202f },    /* C.2.2 line/paragraph separators; C.8 embeddings; C.1.2 */
		{ 0x205f, 0x2063 },    /* C.1.2; C.2.2 */
		{ 0x2066, 0x2069 },    /* bidi isolates: unassigned in Unicode 3.2 (A.1) */
		{ 0x206a, 0x206f },    /* C.2.2, C.8 */
		{ 0x2ff0, 0x2ffb },    /* C.7 */
		{ 0x3000, 0x3000 },    /* C.1.2 */
		{ 0xd800, 0xf8ff },    /* C.5 surrogates; C.3 private use */
		{ 0xfdd0, 0xfdef },    /* C.4 */
		{ 0xfeff, 0xfeff },    /* C.2.2 */
		{ 0xfff9, 0xfffd },    /* C.2.2, C.6 */
		{ 0x1d173, 0x1d17a },  /* C.2.2 */
		{ 0xe0001, 0xe0001 },  /* C.9 */
		{ 0xe0020, 0xe007f },  /* C.9 */
		{ 0xf0000, 0x10ffff }, /* C.3 */
	};

	if ((c & 0xfffe) == 0xfffe) {
		return true; /* C.4: U+xFFFE and U+xFFFF of every plane */
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (c >= bad[i].lo && c <= bad[i].hi) {
			return true;
		}
	}
	return false;
}

/* Decode one UTF-8 sequence (strict: no overlong forms, no surrogates); its length, or 0. */
static size_t utf8_next(const uint8_t *s, size_t len, uint32_t *cp)
{
	static const uint32_t min[4] = { 0, 0x80, 0x800, 0x10000 };
	size_t n;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		c = s[0] & 0x1fu;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		c = s[0] & 0x0fu;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		c = s[0] & 0x07u;
	} else {
		return 0;
	}
	if (n > len) {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
		c = c << 6 | (s[i] & 0x3fu);
	}
	if (c < min[n - 1] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
		return 0;
	}
	*cp = c;
	return n;
}

int scsitgt__iscsi_name_check(const char *name, size_t len)
{
	const uint8_t *s = (const uint8_t *)name;

	if (len == 0) {
		return -ENOENT;
	}
	if (len > SCSITGT__ISCSI_NAME_MAX) {
		return -ENAMETOOLONG;
	}
	/* RFC 7143 §4.2.7.3-§4.2.7.5: the type designator. */
	if (len < 5 || (strncasecmp(name, "iqn.", 4) != 0 && strncasecmp(name, "eui.", 4) != 0 &&
			strncasecmp(name, "naa.", 4) != 0)) {
		return -EINVAL;
	}
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t n = utf8_next(s + i, len - i, &c);

		if (n == 0) {
			return -EINVAL;
		}
		if (c < 0x80) {
			/* RFC 7143 §4.2.7.2: '-', '.', ':', letters and digits only. */
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':')) {
				return -EINVAL;
			}
		} else if (name_cp_prohibited(c)) {
			return -EINVAL;
		}
		i += n;
	}
	return 0;
}

void scsitgt__iscsi_neg_init(struct scsitgt__iscsi_neg *n,
			     const struct scsitgt__iscsi_neg_params *cfg, bool leading)
{
	memset(n, 0, sizeof(*n));
	n->cfg = *cfg;
	scsitgt__iscsi_session_params_init(&n->params);
	n->leading = leading;
	n->stage = SCSITGT__ISCSI_STAGE_SECURITY;
}

void scsitgt__iscsi_neg_set_stage(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_neg_stage stage)
{
	n->stage = stage;
	n->transit = false;
}

void scsitgt__iscsi_neg_set_transit(struct scsitgt__iscsi_neg *n, bool transit)
{
	n->transit = transit;
}

void scsitgt__iscsi_neg_text_start(struct scsitgt__iscsi_neg *n)
{
	memset(n->key_state, 0, sizeof(n->key_state));
	n->unknown_count = 0;
	n->has_send_targets = false;
	n->send_targets[0] = '\0';
	n->stage = SCSITGT__ISCSI_STAGE_FFP;
	n->transit = false;
}

bool scsitgt__iscsi_neg_offered(const struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id)
{
	return (unsigned int)id < SCSITGT__ISCSI_KEY_COUNT && (n->key_state[id] & KS_OFFERED);
}

static bool value_is(const struct scsitgt__iscsi_kv *kv, const char *s)
{
	return kv->value_len == strlen(s) && memcmp(kv->value, s, kv->value_len) == 0;
}

/* A boolean value: 1 Yes, 0 No, -1 anything else. */
static int parse_bool(const struct scsitgt__iscsi_kv *kv)
{
	if (value_is(kv, "Yes")) {
		return 1;
	}
	if (value_is(kv, "No")) {
		return 0;
	}
	return -1;
}

/* The answers a responder may give instead of a value (RFC 7143 §6.2). */
static bool is_special_answer(const struct scsitgt__iscsi_kv *kv)
{
	return value_is(kv, "Reject") || value_is(kv, "Irrelevant") ||
	       value_is(kv, "NotUnderstood");
}

static int answer(struct scsitgt__iscsi_textbuf *resp, enum scsitgt__iscsi_key_id id,
		  const char *value)
{
	return scsitgt__iscsi_textbuf_add(resp, key_table[id].name, value);
}

/*
 * The largest FirstBurstLength the target may answer or propose: its own value, and never
 * more than MaxBurstLength (RFC 7143 §13.14). Once MaxBurstLength is settled (offered by the
 * initiator, or the target's proposal answered), its result bounds it; before that, the value
 * in force so far (the RFC default) and the target's own MaxBurstLength do. What is announced
 * is what the session uses: scsitgt__iscsi_neg_text() settles MaxBurstLength before
 * FirstBurstLength when both come in one text.
 */
static uint32_t first_burst_ceiling(const struct scsitgt__iscsi_neg *n)
{
	uint8_t ks = n->key_state[SCSITGT__ISCSI_KEY_MAX_BURST_LENGTH];
	uint32_t v = n->cfg.first_burst, mbl = n->params.max_burst;

	if (!(ks & (KS_OFFERED | KS_TGT_DONE)) && n->cfg.max_burst < mbl) {
		mbl = n->cfg.max_burst;
	}
	return v < mbl ? v : mbl;
}

/* The target's own value of a numeric key. */
static uint32_t target_number(const struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id)
{
	const struct scsitgt__iscsi_neg_params *c = &n->cfg;

	switch (id) {
	case SCSITGT__ISCSI_KEY_MAX_CONNECTIONS:
		return c->max_connections;
	case SCSITGT__ISCSI_KEY_MAX_RECV_DSL:
		return c->max_recv_dsl;
	case SCSITGT__ISCSI_KEY_MAX_BURST_LENGTH:
		return c->max_burst;
	case SCSITGT__ISCSI_KEY_FIRST_BURST_LENGTH:
		return first_burst_ceiling(n);
	case SCSITGT__ISCSI_KEY_DEFAULT_TIME2WAIT:
		return c->default_time2wait;
	case SCSITGT__ISCSI_KEY_DEFAULT_TIME2RETAIN:
		return c->default_time2retain;
	case SCSITGT__ISCSI_KEY_MAX_OUTSTANDING_R2T:
		return c->max_outstanding_r2t;
	case SCSITGT__ISCSI_KEY_ERROR_RECOVERY_LEVEL:
		return c->error_recovery_level;
	case SCSITGT__ISCSI_KEY_PROTOCOL_LEVEL:
		return SCSITGT__ISCSI_PROTOCOL_LEVEL;
	case SCSITGT__ISCSI_KEY_TARGET_RECV_DSL:
		return c->max_recv_dsl;
	case SCSITGT__ISCSI_KEY_INITIATOR_RECV_DSL:
		return SCSITGT__ISCSI_DSL_MAX;
	case SCSITGT__ISCSI_KEY_MAX_OUT_UNEXPECTED_PDUS:
		return c->max_outstanding_unexpected_pdus;
	default:
		return key_table[id].rfc_default;
	}
}

static bool target_bool(const struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id)
{
	const struct scsitgt__iscsi_neg_params *c = &n->cfg;

	switch (id) {
	case SCSITGT__ISCSI_KEY_INITIAL_R2T:
		return c->initial_r2t;
	case SCSITGT__ISCSI_KEY_IMMEDIATE_DATA:
		return c->immediate_data;
	case SCSITGT__ISCSI_KEY_DATA_PDU_IN_ORDER:
		return c->data_pdu_in_order;
	case SCSITGT__ISCSI_KEY_DATA_SEQUENCE_IN_ORDER:
		return c->data_seq_in_order;
	case SCSITGT__ISCSI_KEY_RDMA_EXTENSIONS:
		return c->rdma_extensions;
	default:
		/* OFMarker, IFMarker: we never use markers. */
		return false;
	}
}

static void store_number(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id, uint32_t v)
{
	struct scsitgt__iscsi_session_params *p = &n->params;

	switch (id) {
	case SCSITGT__ISCSI_KEY_MAX_CONNECTIONS:
		p->max_connections = v;
		break;
	case SCSITGT__ISCSI_KEY_MAX_RECV_DSL:
		/*
		 * The initiator's declaration bounds what we send (RFC 7143 §13.12); not in
		 * iSER-assisted mode, where InitiatorRecvDataSegmentLength does (RFC 7145 §6.3,
		 * scsitgt__iscsi_neg_finish()): a later re-declaration (a Text Request) is ignored.
		 */
		if (!p->rdma_extensions) {
			p->max_xmit_dsl = v;
		}
		break;
	case SCSITGT__ISCSI_KEY_MAX_BURST_LENGTH:
		p->max_burst = v;
		break;
	case SCSITGT__ISCSI_KEY_FIRST_BURST_LENGTH:
		p->first_burst = v;
		break;
	case SCSITGT__ISCSI_KEY_DEFAULT_TIME2WAIT:
		p->default_time2wait = v;
		break;
	case SCSITGT__ISCSI_KEY_DEFAULT_TIME2RETAIN:
		p->default_time2retain = v;
		break;
	case SCSITGT__ISCSI_KEY_MAX_OUTSTANDING_R2T:
		p->max_outstanding_r2t = v;
		break;
	case SCSITGT__ISCSI_KEY_ERROR_RECOVERY_LEVEL:
		p->error_recovery_level = v;
		break;
	case SCSITGT__ISCSI_KEY_PROTOCOL_LEVEL:
		p->protocol_level = v;
		break;
	case SCSITGT__ISCSI_KEY_TARGET_RECV_DSL:
		p->target_recv_dsl = v;
		break;
	case SCSITGT__ISCSI_KEY_INITIATOR_RECV_DSL:
		p->initiator_recv_dsl = v;
		break;
	case SCSITGT__ISCSI_KEY_MAX_OUT_UNEXPECTED_PDUS:
		p->max_outstanding_unexpected_pdus = v;
		break;
	default:
		break;
	}
}

static void store_bool(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id, bool v)
{
	struct scsitgt__iscsi_session_params *p = &n->params;

	switch (id) {
	case SCSITGT__ISCSI_KEY_INITIAL_R2T:
		p->initial_r2t = v;
		break;
	case SCSITGT__ISCSI_KEY_IMMEDIATE_DATA:
		p->immediate_data = v;
		break;
	case SCSITGT__ISCSI_KEY_DATA_PDU_IN_ORDER:
		p->data_pdu_in_order = v;
		break;
	case SCSITGT__ISCSI_KEY_DATA_SEQUENCE_IN_ORDER:
		p->data_seq_in_order = v;
		break;
	case SCSITGT__ISCSI_KEY_RDMA_EXTENSIONS:
		p->rdma_extensions = v;
		break;
	default:
		break;
	}
}

/* Result of a numerical negotiation; MaxOutstandingUnexpectedPDUs uses 0 for "no limit". */
static uint32_t num_result(enum scsitgt__iscsi_key_id id, uint32_t theirs, uint32_t ours)
{
	if (key_table[id].type == SCSITGT__ISCSI_KT_NUM_MAX) {
		return theirs > ours ? theirs : ours;
	}
	if (id == SCSITGT__ISCSI_KEY_MAX_OUT_UNEXPECTED_PDUS) {
		/* RFC 7145 §6.3.4: 0 means no limit. */
		if (theirs == 0) {
			return ours;
		}
		if (ours == 0) {
			return theirs;
		}
	}
	return theirs < ours ? theirs : ours;
}

/* Parse a numeric value of @p id, in range. */
static int parse_key_number(const struct scsitgt__iscsi_kv *kv, enum scsitgt__iscsi_key_id id,
			    uint32_t *out)
{
	uint64_t v;

	if (scsitgt__iscsi_parse_number(kv->value, kv->value_len, &v) < 0) {
		return -EINVAL;
	}
	if (v < key_table[id].min || v > key_table[id].max) {
		return -ERANGE;
	}
	/* MaxOutstandingUnexpectedPDUs: 0 or 2..2^32-1 (RFC 7145 §6.3.4). */
	if (id == SCSITGT__ISCSI_KEY_MAX_OUT_UNEXPECTED_PDUS && v == 1) {
		return -ERANGE;
	}
	*out = (uint32_t)v;
	return 0;
}

/* Whether the target accepts one value of a list key. */
static bool list_value_ok(const struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id,
			  const char *v, size_t len)
{
#define IS(s) (len == sizeof(s) - 1 && memcmp(v, s, len) == 0)
	unsigned int hd = n->cfg.header_digests, dd = n->cfg.data_digests;

	switch (id) {
	case SCSITGT__ISCSI_KEY_HEADER_DIGEST:
		return (IS("None") && (hd & SCSITGT__ISCSI_DIGEST_MASK_NONE)) ||
		       (IS("CRC32C") && (hd & SCSITGT__ISCSI_DIGEST_MASK_CRC32C));
	case SCSITGT__ISCSI_KEY_DATA_DIGEST:
		return (IS("None") && (dd & SCSITGT__ISCSI_DIGEST_MASK_NONE)) ||
		       (IS("CRC32C") && (dd & SCSITGT__ISCSI_DIGEST_MASK_CRC32C));
	case SCSITGT__ISCSI_KEY_AUTH_METHOD:
		return (IS("None") && (n->cfg.auth_methods & SCSITGT__ISCSI_AUTH_MASK_NONE)) ||
		       (IS("CHAP") && (n->cfg.auth_methods & SCSITGT__ISCSI_AUTH_MASK_CHAP));
	case SCSITGT__ISCSI_KEY_TASK_REPORTING:
		/* RFC 7143 §13.23: we implement the RFC 3720 task reporting only. */
		return IS("RFC3720");
	default:
		return false;
	}
#undef IS
}

static void store_list(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id, const char *v,
		       size_t len)
{
	enum scsitgt__iscsi_digest dg = (len == 6 && memcmp(v, "CRC32C", 6) == 0) ?
						SCSITGT__ISCSI_DIGEST_CRC32C :
						SCSITGT__ISCSI_DIGEST_NONE;

	switch (id) {
	case SCSITGT__ISCSI_KEY_HEADER_DIGEST:
		n->params.header_digest = dg;
		break;
	case SCSITGT__ISCSI_KEY_DATA_DIGEST:
		n->params.data_digest = dg;
		break;
	case SCSITGT__ISCSI_KEY_AUTH_METHOD:
		n->params.auth_method = (len == 4 && memcmp(v, "CHAP", 4) == 0) ?
						SCSITGT__ISCSI_AUTH_CHAP :
						SCSITGT__ISCSI_AUTH_NONE;
		break;
	default:
		break;
	}
}

/*
 * The value a list key keeps when its negotiation ends in Reject: its RFC 7143 §13 default
 * (None for the digests, RFC3720 for TaskReporting).
 */
static const char *list_default(enum scsitgt__iscsi_key_id id)
{
	return id == SCSITGT__ISCSI_KEY_TASK_REPORTING ? "RFC3720" : "None";
}

/*
 * List keys: answer the first value of the initiator's list that we accept (RFC 7143 §6.2.1).
 * When there is none, Reject leaves the key at its default; if the target does not accept the
 * default either (HeaderDigest or DataDigest required to be CRC32C), Reject would let the
 * login go on with a value the target refuses: the negotiation is terminated instead (§6.2.1
 * "it may use the constant Reject or terminate the negotiation").
 */
static int neg_list(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id,
		    const struct scsitgt__iscsi_kv *kv, struct scsitgt__iscsi_textbuf *resp)
{
	const char *v = kv->value;
	size_t len = kv->value_len;

	for (size_t start = 0; start <= len;) {
		const char *comma = memchr(v + start, ',', len - start);
		size_t end = comma ? (size_t)(comma - v) : len;

		if (end > start && list_value_ok(n, id, v + start, end - start)) {
			store_list(n, id, v + start, end - start);
			return scsitgt__iscsi_textbuf_add_n(resp, key_table[id].name,
							    strlen(key_table[id].name), v + start,
							    end - start);
		}
		start = end + 1;
	}
	if (id == SCSITGT__ISCSI_KEY_AUTH_METHOD) {
		/* login.c fails the login with 0x0201 (authentication failure). */
		n->params.auth_method = SCSITGT__ISCSI_AUTH_REJECTED;
	} else if (!list_value_ok(n, id, list_default(id), strlen(list_default(id)))) {
		return -ENOTSUP;
	}
	return answer(resp, id, "Reject");
}

/* The initiator's answer to a key the target proposed: compute the result, send nothing. */
static void take_answer(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id,
			const struct scsitgt__iscsi_kv *kv)
{
	const struct scsitgt__iscsi_key_desc *d = &key_table[id];
	uint32_t num;
	int b;

	n->key_state[id] |= KS_TGT_DONE;
	/* Reject, Irrelevant, NotUnderstood and bad values leave the RFC default in place. */
	if (is_special_answer(kv)) {
		return;
	}
	switch (d->type) {
	case SCSITGT__ISCSI_KT_BOOL_AND:
	case SCSITGT__ISCSI_KT_BOOL_OR:
		b = parse_bool(kv);
		if (b >= 0) {
			bool ours = target_bool(n, id);
			bool is_and = d->type == SCSITGT__ISCSI_KT_BOOL_AND;

			store_bool(n, id, is_and ? (b && ours) : (b || ours));
		}
		break;
	case SCSITGT__ISCSI_KT_NUM_MIN:
	case SCSITGT__ISCSI_KT_NUM_MAX:
		if (parse_key_number(kv, id, &num) == 0) {
			store_number(n, id, num_result(id, num, target_number(n, id)));
		}
		break;
	default:
		break;
	}
}

/* FNV-1a, to remember unknown key names for the duplicate check without storing them. */
static uint64_t name_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int neg_unknown(struct scsitgt__iscsi_neg *n, const struct scsitgt__iscsi_kv *kv,
		       struct scsitgt__iscsi_textbuf *resp)
{
	uint64_t h = name_hash(kv->key, kv->key_len);

	for (unsigned int i = 0; i < n->unknown_count; i++) {
		if (n->unknown_seen[i] == h) {
			return -EPROTO; /* offered twice (RFC 7143 §6.2) */
		}
	}
	if (n->unknown_count == SCSITGT__ISCSI_NEG_UNKNOWN_MAX) {
		return -EPROTO;
	}
	n->unknown_seen[n->unknown_count++] = h;
	/* RFC 7143 §6.2 / §13.16: unknown and private (X-, X#) keys are NotUnderstood. */
	return scsitgt__iscsi_textbuf_add_n(resp, kv->key, kv->key_len, "NotUnderstood", 13);
}

static int copy_name(char *dst, size_t dst_size, const struct scsitgt__iscsi_kv *kv)
{
	/* RFC 7143 §4.2.7: a name outside the rules is an initiator error (login 0x0200). */
	if (kv->value_len >= dst_size || scsitgt__iscsi_name_check(kv->value, kv->value_len) < 0) {
		return -EPROTO;
	}
	memcpy(dst, kv->value, kv->value_len);
	dst[kv->value_len] = '\0';
	return 0;
}

/* Declarative keys from the initiator: recorded, never answered. */
static int neg_decl(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id,
		    const struct scsitgt__iscsi_kv *kv)
{
	struct scsitgt__iscsi_session_params *p = &n->params;

	switch (id) {
	case SCSITGT__ISCSI_KEY_INITIATOR_NAME:
		p->has_initiator_name = true;
		return copy_name(p->initiator_name, sizeof(p->initiator_name), kv);
	case SCSITGT__ISCSI_KEY_TARGET_NAME:
		p->has_target_name = true;
		return copy_name(p->target_name, sizeof(p->target_name), kv);
	case SCSITGT__ISCSI_KEY_INITIATOR_ALIAS:
		memcpy(p->initiator_alias, kv->value, kv->value_len);
		p->initiator_alias[kv->value_len] = '\0';
		return 0;
	case SCSITGT__ISCSI_KEY_SESSION_TYPE:
		/* RFC 7143 §13.21: Discovery or Normal; anything else is an initiator error. */
		if (value_is(kv, "Discovery")) {
			p->session_type = SCSITGT__ISCSI_SESSION_DISCOVERY;
		} else if (value_is(kv, "Normal")) {
			p->session_type = SCSITGT__ISCSI_SESSION_NORMAL;
		} else {
			return -EPROTO;
		}
		p->has_session_type = true;
		return 0;
	case SCSITGT__ISCSI_KEY_SEND_TARGETS:
		memcpy(n->send_targets, kv->value, kv->value_len);
		n->send_targets[kv->value_len] = '\0';
		n->has_send_targets = true;
		return 0;
	default:
		/* Keys only a target sends (TargetAlias, TargetAddress, TargetPortalGroupTag). */
		return 0;
	}
}

int scsitgt__iscsi_neg_key(struct scsitgt__iscsi_neg *n, const struct scsitgt__iscsi_kv *kv,
			   struct scsitgt__iscsi_textbuf *resp)
{
	int idx = scsitgt__iscsi_key_lookup(kv->key, kv->key_len);

	if (idx < 0) {
		return neg_unknown(n, kv, resp);
	}
	enum scsitgt__iscsi_key_id id = (enum scsitgt__iscsi_key_id)idx;
	const struct scsitgt__iscsi_key_desc *d = &key_table[id];
	bool ffp = n->stage == SCSITGT__ISCSI_STAGE_FFP;

	if (kv->value_len > d->value_max) {
		return -EPROTO;
	}
	/* The answer to a key we proposed is not a new offer. */
	if ((n->key_state[id] & KS_TGT_OFFERED) && !(n->key_state[id] & KS_TGT_DONE)) {
		take_answer(n, id, kv);
		return 0;
	}
	/* RFC 7143 §6.2: a key may be offered only once per negotiation. */
	if (n->key_state[id] & KS_OFFERED) {
		return -EPROTO;
	}
	n->key_state[id] |= KS_OFFERED;

	/* Security keys outside the security stage are a protocol error (RFC 7143 §6.3). */
	if ((d->phase & SCSITGT__ISCSI_KP_SECURITY) &&
	    !(d->phase & SCSITGT__ISCSI_KP_OPERATIONAL) &&
	    n->stage != SCSITGT__ISCSI_STAGE_SECURITY) {
		return -EPROTO;
	}
	if (d->type == SCSITGT__ISCSI_KT_AUTH) {
		return SCSITGT__ISCSI_NEG_AUTH_KEY;
	}
	if (ffp && !(d->phase & SCSITGT__ISCSI_KP_FFP)) {
		/* Login-only keys cannot be renegotiated by a Text Request. */
		return d->type == SCSITGT__ISCSI_KT_DECL ? 0 : answer(resp, id, "Reject");
	}
	if (!ffp && !(d->phase & (SCSITGT__ISCSI_KP_SECURITY | SCSITGT__ISCSI_KP_OPERATIONAL))) {
		/* SendTargets during login. */
		return answer(resp, id, "Irrelevant");
	}
	if (d->type == SCSITGT__ISCSI_KT_DECL) {
		/* LO declarations (SessionType) on other connections carry no meaning. */
		if ((d->phase & SCSITGT__ISCSI_KP_LO) && !n->leading) {
			return 0;
		}
		return neg_decl(n, id, kv);
	}
	if (((d->phase & SCSITGT__ISCSI_KP_LO) && !n->leading) ||
	    ((d->phase & SCSITGT__ISCSI_KP_NO_DISCOVERY) &&
	     n->params.session_type == SCSITGT__ISCSI_SESSION_DISCOVERY) ||
	    ((d->phase & SCSITGT__ISCSI_KP_ISER) && !n->cfg.rdma_extensions)) {
		return answer(resp, id, "Irrelevant");
	}

	uint32_t num;
	int b;

	switch (d->type) {
	case SCSITGT__ISCSI_KT_LIST:
		return neg_list(n, id, kv, resp);
	case SCSITGT__ISCSI_KT_BOOL_AND:
	case SCSITGT__ISCSI_KT_BOOL_OR: {
		b = parse_bool(kv);
		if (b < 0) {
			return answer(resp, id, "Reject");
		}
		bool ours = target_bool(n, id);
		bool res = d->type == SCSITGT__ISCSI_KT_BOOL_AND ? (b && ours) : (b || ours);
		store_bool(n, id, res);
		return answer(resp, id, res ? "Yes" : "No");
	}
	case SCSITGT__ISCSI_KT_NUM_MIN:
	case SCSITGT__ISCSI_KT_NUM_MAX:
		if (parse_key_number(kv, id, &num) < 0) {
			return answer(resp, id, "Reject");
		}
		num = num_result(id, num, target_number(n, id));
		store_number(n, id, num);
		return scsitgt__iscsi_textbuf_add_u32(resp, d->name, num);
	case SCSITGT__ISCSI_KT_NUM_DECL:
		/*
		 * MaxRecvDataSegmentLength: the initiator's own limit, not answered (§13.12). One
		 * outside 512..2^24-1 cannot be answered either: "Reject" would stand beside the
		 * target's own declaration of the same key in the response, a key sent twice
		 * (§6.2.1), and the initiator would expect PDUs no longer than it declared. An
		 * initiator error (login 0x0200; a Text Request is rejected), as for a key offered
		 * twice.
		 */
		if (parse_key_number(kv, id, &num) < 0) {
			return -EPROTO;
		}
		store_number(n, id, num);
		return 0;
	case SCSITGT__ISCSI_KT_RANGE: {
		/* OFMarkInt/IFMarkInt "n1~n2": markers are off, so the interval is irrelevant. */
		const char *tilde = memchr(kv->value, '~', kv->value_len);
		uint64_t lo, hi;

		if (tilde == NULL ||
		    scsitgt__iscsi_parse_number(kv->value, (size_t)(tilde - kv->value), &lo) < 0 ||
		    scsitgt__iscsi_parse_number(
			    tilde + 1, kv->value_len - (size_t)(tilde - kv->value) - 1, &hi) < 0 ||
		    lo < d->min || hi > d->max || lo > hi) {
			return answer(resp, id, "Reject");
		}
		return answer(resp, id, "Irrelevant");
	}
	default:
		return answer(resp, id, "Reject");
	}
}

int scsitgt__iscsi_neg_text(struct scsitgt__iscsi_neg *n, const uint8_t *text, size_t len,
			    struct scsitgt__iscsi_textbuf *resp,
			    struct scsitgt__iscsi_chap_keys *chap)
{
	struct scsitgt__iscsi_kv kv, fbl = { 0 };
	bool fbl_seen = false;
	size_t pos = 0;
	int rc;

	if (chap != NULL) {
		memset(chap, 0, sizeof(*chap));
	}
	/*
	 * SessionType first, wherever it is in the text: whether other keys are Irrelevant
	 * depends on it. The whole text is also syntax-checked before any key is applied.
	 */
	while ((rc = scsitgt__iscsi_text_next(text, len, &pos, &kv)) == 1) {
		int id = scsitgt__iscsi_key_lookup(kv.key, kv.key_len);

		if (n->leading && !n->params.has_session_type &&
		    n->stage != SCSITGT__ISCSI_STAGE_FFP && id == SCSITGT__ISCSI_KEY_SESSION_TYPE &&
		    value_is(&kv, "Discovery")) {
			n->params.session_type = SCSITGT__ISCSI_SESSION_DISCOVERY;
		}
	}
	if (rc < 0) {
		return -EINVAL;
	}
	pos = 0;
	for (;;) {
		if (scsitgt__iscsi_text_next(text, len, &pos, &kv) != 1) {
			/* The FirstBurstLength held back below, now that MaxBurstLength is known. */
			if (fbl.key == NULL) {
				break;
			}
			kv = fbl;
			fbl.key = NULL;
			pos = len;
		} else if (!fbl_seen && scsitgt__iscsi_key_lookup(kv.key, kv.key_len) ==
						SCSITGT__ISCSI_KEY_FIRST_BURST_LENGTH) {
			/*
			 * RFC 7143 §13.14: the FirstBurstLength answered must be the one in force,
			 * at most MaxBurstLength: negotiate it after the MaxBurstLength of the
			 * same text, wherever that is. A second copy is handled in place (and
			 * is a duplicate offer).
			 */
			fbl = kv;
			fbl_seen = true;
			continue;
		}
		rc = scsitgt__iscsi_neg_key(n, &kv, resp);
		if (rc < 0) {
			return rc;
		}
		if (rc != SCSITGT__ISCSI_NEG_AUTH_KEY) {
			continue;
		}
		if (chap == NULL) {
			return -EPROTO;
		}
		switch (scsitgt__iscsi_key_lookup(kv.key, kv.key_len)) {
		case SCSITGT__ISCSI_KEY_CHAP_A:
			chap->a = kv.value;
			break;
		case SCSITGT__ISCSI_KEY_CHAP_I:
			chap->i = kv.value;
			break;
		case SCSITGT__ISCSI_KEY_CHAP_C:
			chap->c = kv.value;
			break;
		case SCSITGT__ISCSI_KEY_CHAP_N:
			chap->n = kv.value;
			break;
		default:
			chap->r = kv.value;
			break;
		}
	}
	return 0;
}

/* Propose a key the initiator did not offer (cfg.propose); its answer is taken later. */
static int propose_number(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id,
			  struct scsitgt__iscsi_textbuf *resp)
{
	uint32_t ours = target_number(n, id);
	int rc;

	if ((n->key_state[id] & (KS_OFFERED | KS_TGT_OFFERED)) ||
	    ours == key_table[id].rfc_default) {
		return 0;
	}
	rc = scsitgt__iscsi_textbuf_add_u32(resp, key_table[id].name, ours);
	if (rc == 0) {
		n->key_state[id] |= KS_TGT_OFFERED;
	}
	return rc;
}

static int propose_bool(struct scsitgt__iscsi_neg *n, enum scsitgt__iscsi_key_id id,
			struct scsitgt__iscsi_textbuf *resp)
{
	bool ours = target_bool(n, id);
	int rc;

	if ((n->key_state[id] & (KS_OFFERED | KS_TGT_OFFERED)) ||
	    ours == (key_table[id].rfc_default != 0)) {
		return 0;
	}
	/* An OR key proposed as No (or AND as Yes) can still end with the other value. */
	rc = answer(resp, id, ours ? "Yes" : "No");
	if (rc == 0) {
		n->key_state[id] |= KS_TGT_OFFERED;
	}
	return rc;
}

int scsitgt__iscsi_neg_declare(struct scsitgt__iscsi_neg *n, struct scsitgt__iscsi_textbuf *resp)
{
	struct scsitgt__iscsi_session_params *p = &n->params;
	bool normal = p->session_type == SCSITGT__ISCSI_SESSION_NORMAL;
	int rc;

	if (n->stage == SCSITGT__ISCSI_STAGE_FFP) {
		return 0;
	}
	if (!n->first_response_done) {
		/* RFC 7143 §13.9: TargetPortalGroupTag in the first Login Response. */
		rc = scsitgt__iscsi_textbuf_add_u32(resp, "TargetPortalGroupTag", n->cfg.tpgt);
		if (rc < 0) {
			return rc;
		}
		n->key_state[SCSITGT__ISCSI_KEY_TARGET_PORTAL_GROUP_TAG] |= KS_DECLARED;
		if (normal && n->cfg.target_alias != NULL && n->cfg.target_alias[0] != '\0') {
			rc = scsitgt__iscsi_textbuf_add(resp, "TargetAlias", n->cfg.target_alias);
			if (rc < 0) {
				return rc;
			}
			n->key_state[SCSITGT__ISCSI_KEY_TARGET_ALIAS] |= KS_DECLARED;
		}
		n->first_response_done = true;
	}
	if (n->stage != SCSITGT__ISCSI_STAGE_OPERATIONAL) {
		return 0;
	}
	if (!(n->key_state[SCSITGT__ISCSI_KEY_MAX_RECV_DSL] & KS_DECLARED)) {
		/* RFC 7143 §13.12: our receive limit is declared, never negotiated. */
		rc = scsitgt__iscsi_textbuf_add_u32(resp, "MaxRecvDataSegmentLength",
						    n->cfg.max_recv_dsl);
		if (rc < 0) {
			return rc;
		}
		n->key_state[SCSITGT__ISCSI_KEY_MAX_RECV_DSL] |= KS_DECLARED;
		p->max_recv_dsl = n->cfg.max_recv_dsl;
	}
	if (!n->cfg.propose || !n->transit || !n->leading || !normal) {
		return 0;
	}
	static const enum scsitgt__iscsi_key_id bools[] = {
		SCSITGT__ISCSI_KEY_INITIAL_R2T,
		SCSITGT__ISCSI_KEY_IMMEDIATE_DATA,
		SCSITGT__ISCSI_KEY_DATA_PDU_IN_ORDER,
		SCSITGT__ISCSI_KEY_DATA_SEQUENCE_IN_ORDER,
	};
	static const enum scsitgt__iscsi_key_id nums[] = {
		SCSITGT__ISCSI_KEY_MAX_CONNECTIONS,	 SCSITGT__ISCSI_KEY_MAX_BURST_LENGTH,
		SCSITGT__ISCSI_KEY_FIRST_BURST_LENGTH,	 SCSITGT__ISCSI_KEY_DEFAULT_TIME2WAIT,
		SCSITGT__ISCSI_KEY_DEFAULT_TIME2RETAIN,	 SCSITGT__ISCSI_KEY_MAX_OUTSTANDING_R2T,
		SCSITGT__ISCSI_KEY_ERROR_RECOVERY_LEVEL,
	};
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		rc = propose_bool(n, bools[i], resp);
		if (rc < 0) {
			return rc;
		}
	}
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		rc = propose_number(n, nums[i], resp);
		if (rc < 0) {
			return rc;
		}
	}
	if (p->rdma_extensions) {
		rc = propose_number(n, SCSITGT__ISCSI_KEY_TARGET_RECV_DSL, resp);
		if (rc < 0) {
			return rc;
		}
	}
	return 0;
}

bool scsitgt__iscsi_neg_pending(const struct scsitgt__iscsi_neg *n)
{
	for (int i = 0; i < SCSITGT__ISCSI_KEY_COUNT; i++) {
		if ((n->key_state[i] & KS_TGT_OFFERED) && !(n->key_state[i] & KS_TGT_DONE)) {
			return true;
		}
	}
	return false;
}

int scsitgt__iscsi_neg_finish(struct scsitgt__iscsi_neg *n)
{
	struct scsitgt__iscsi_session_params *p = &n->params;

	/*
	 * RFC 7143 §13.14: FirstBurstLength must not exceed MaxBurstLength. The answers already
	 * respect it (first_burst_ceiling()); this only catches an initiator that settled
	 * MaxBurstLength below the FirstBurstLength it had agreed in an earlier exchange, or
	 * one that negotiated MaxBurstLength below the default FirstBurstLength.
	 */
	if (p->first_burst > p->max_burst) {
		p->first_burst = p->max_burst;
	}
	/*
	 * RFC 7145 §6.3: in iSER-assisted mode the initiator's InitiatorRecvDataSegmentLength
	 * (default 8192), not its MaxRecvDataSegmentLength, is what its receive buffers hold for
	 * the control-type PDUs we send; and one PDU of ours carries at most what the data
	 * mover's send buffers hold.
	 */
	if (p->rdma_extensions) {
		p->max_xmit_dsl = p->initiator_recv_dsl;
		if (n->cfg.max_xmit_cap && p->max_xmit_dsl > n->cfg.max_xmit_cap) {
			p->max_xmit_dsl = n->cfg.max_xmit_cap;
		}
	}
	/* RFC 7143 §13.11: InitiatorName is required in the first login of every connection. */
	if (!p->has_initiator_name) {
		return -ENOENT;
	}
	/* RFC 7143 §13.4: TargetName is required for normal sessions. */
	if (p->session_type == SCSITGT__ISCSI_SESSION_NORMAL && !p->has_target_name) {
		return -ENOENT;
	}
	/*
	 * A digest the target requires (cfg without None) that was never agreed: the initiator
	 * did not offer the key, and None, the default (RFC 7143 §13.1), is refused.
	 */
	if (!(n->cfg.header_digests & (1u << p->header_digest)) ||
	    !(n->cfg.data_digests & (1u << p->data_digest))) {
		return -ENOTSUP;
	}
	return 0;
}
