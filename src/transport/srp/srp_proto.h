/* SPDX-License-Identifier: MIT */
/*
 * SCSI RDMA Protocol information units (T10 SRP r16a, INCITS 365-2002) and the SRP-2 immediate
 * data extension Linux uses, as pure codecs: no I/O, no libuv, no rdma-core. Every decoder
 * checks the length it is given and returns -EPROTO (malformed) or -EMSGSIZE (too short).
 *
 * Also the request-limit (credit) model of a channel (SRP r16a §5.5.2), kept here so it can be
 * tested without RDMA.
 */
#ifndef SCSITGT_SRP_PROTO_H
#define SCSITGT_SRP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SRP r16a §5.1 Table 4: IU types. */
enum {
	SRP_IU_LOGIN_REQ = 0x00,
	SRP_IU_TSK_MGMT = 0x01,
	SRP_IU_CMD = 0x02,
	SRP_IU_I_LOGOUT = 0x03,
	SRP_IU_LOGIN_RSP = 0xc0,
	SRP_IU_RSP = 0xc1,
	SRP_IU_LOGIN_REJ = 0xc2,
	SRP_IU_T_LOGOUT = 0x80,
	SRP_IU_CRED_REQ = 0x81,
	SRP_IU_AER_REQ = 0x82,
	SRP_IU_CRED_RSP = 0x41,
	SRP_IU_AER_RSP = 0x42,
};

/* Wire lengths (SRP r16a §5.2-§5.7; the RDMA/CM login form is the Linux/SRP-2 compact one). */
#define SRP_LOGIN_REQ_LEN 64u
#define SRP_LOGIN_REQ_RDMA_LEN 56u
#define SRP_LOGIN_RSP_LEN 52u
#define SRP_LOGIN_REJ_LEN 32u
#define SRP_I_LOGOUT_LEN 16u
#define SRP_T_LOGOUT_LEN 16u
#define SRP_TSK_MGMT_LEN 48u
#define SRP_CMD_LEN 48u
#define SRP_RSP_LEN 36u
#define SRP_CRED_REQ_LEN 16u
#define SRP_CRED_RSP_LEN 16u
#define SRP_AER_REQ_LEN 36u
#define SRP_AER_RSP_LEN 16u
#define SRP_DIRECT_DESC_LEN 16u
#define SRP_INDIRECT_HDR_LEN 20u
#define SRP_IMM_DESC_LEN 4u
/* TSK_MGMT response data (SRP r16a §5.7 Table 24: four bytes, RSP CODE in the last). */
#define SRP_RSP_DATA_LEN 4u

/* SRP r16a §5.2.1 Table 6: REQUIRED/SUPPORTED BUFFER FORMATS bits. */
#define SRP_BUF_FMT_DIRECT 0x0002u
#define SRP_BUF_FMT_INDIRECT 0x0004u

/* SRP r16a §5.6 Table 20 (+ SRP-2 immediate): data buffer descriptor formats. */
enum {
	SRP_DESC_NONE = 0,
	SRP_DESC_DIRECT = 1,
	SRP_DESC_INDIRECT = 2,
	SRP_DESC_IMMEDIATE = 3,
};

/* SRP_LOGIN_REQ flags: MULTI-CHANNEL ACTION (§5.2.1 Table 7) and SRP-2 IMMEDIATE DATA. */
#define SRP_LOGIN_MULTICHAN_MASK 0x03u
#define SRP_LOGIN_MULTICHAN_SINGLE 0x00u
#define SRP_LOGIN_MULTICHAN_MULTI 0x01u
#define SRP_LOGIN_IMMED_REQUESTED 0x80u
/* SRP_LOGIN_RSP flags: MULTI-CHANNEL RESULT (§5.2.2 Table 9) and SRP-2 IMMEDIATE DATA. */
#define SRP_LOGIN_RSP_NO_CHANNELS 0x00u
#define SRP_LOGIN_RSP_TERMINATED 0x01u
#define SRP_LOGIN_RSP_MAINTAINED 0x02u
#define SRP_LOGIN_RSP_IMMED_SUPP 0x80u

/* SRP r16a §5.2.3 Table 11: SRP_LOGIN_REJ reasons. */
enum {
	SRP_REJ_UNABLE_ESTABLISH = 0x00010000u,
	SRP_REJ_INSUFFICIENT_RESOURCES = 0x00010001u,
	SRP_REJ_IT_IU_TOO_LARGE = 0x00010002u,
	SRP_REJ_UNABLE_ASSOCIATE = 0x00010003u,
	SRP_REJ_UNSUPPORTED_FORMAT = 0x00010004u,
	SRP_REJ_MULTICHANNEL_UNSUPPORTED = 0x00010005u,
	SRP_REJ_CHANNEL_LIMIT = 0x00010006u,
};

/* SRP r16a §5.4 Table 17: SRP_T_LOGOUT reasons. */
enum {
	SRP_TLO_NO_REASON = 0x0,
	SRP_TLO_INACTIVE = 0x1,
	SRP_TLO_INVALID_IU_TYPE = 0x2,
	SRP_TLO_UNEXPECTED_RSP = 0x3,
	SRP_TLO_MULTICHAN_SINGLE = 0x4,
	SRP_TLO_BAD_DATA_OUT_FMT = 0x6,
	SRP_TLO_BAD_DATA_IN_FMT = 0x7,
	SRP_TLO_INVALID_IU_LEN = 0x8,
};

/* SRP r16a §5.7 Table 22: task management functions (+ SRP-2 queries). */
enum {
	SRP_TSK_ABORT_TASK = 0x01,
	SRP_TSK_ABORT_TASK_SET = 0x02,
	SRP_TSK_CLEAR_TASK_SET = 0x04,
	SRP_TSK_LUN_RESET = 0x08,
	SRP_TSK_CLEAR_ACA = 0x40,
	SRP_TSK_QUERY_TASK = 0x80,
	SRP_TSK_QUERY_TASK_SET = 0x81,
	SRP_TSK_QUERY_ASYNC_EVENT = 0x82,
};

/* SRP r16a §5.9 Table 27: SRP_RSP flags. */
#define SRP_RSP_RSPVALID 0x01u
#define SRP_RSP_SNSVALID 0x02u
#define SRP_RSP_DOOVER 0x04u
#define SRP_RSP_DOUNDER 0x08u
#define SRP_RSP_DIOVER 0x10u
#define SRP_RSP_DIUNDER 0x20u

/* SRP r16a §5.9 Table 28 (+ SRP-2): RSP CODE of task management responses. */
enum {
	SRP_RSP_CODE_COMPLETE = 0x00,
	SRP_RSP_CODE_INVALID_FIELDS = 0x02,
	SRP_RSP_CODE_NOT_SUPPORTED = 0x04,
	SRP_RSP_CODE_FAILED = 0x05,
	SRP_RSP_CODE_INCORRECT_LUN = 0x09,
	SRP_RSP_CODE_SUCCEEDED = 0x08,
};

/* SOLNT bits of SRP_CMD/SRP_TSK_MGMT byte 1 (§5.6 Table 19): solicited notification wanted
 * for a successful (SCSOLNT) or unsuccessful (UCSOLNT) response. */
#define SRP_SOLNT_SC 0x02u
#define SRP_SOLNT_UC 0x04u

/* SRP_CMD TASK ATTRIBUTE (§5.6 Table 21). */
enum {
	SRP_ATTR_SIMPLE = 0,
	SRP_ATTR_HEAD_OF_QUEUE = 1,
	SRP_ATTR_ORDERED = 2,
	SRP_ATTR_ACA = 4,
};

/*
 * Descriptors one SRP_CMD may describe in an indirect table; a command with more fails with
 * CHECK CONDITION (the decoder still accepts it: the channel stays).
 */
#define SRP_MAX_DESCRIPTORS 256u

/* ---- login ---- */

struct scsitgt__srp_login_req {
	uint64_t tag;
	uint32_t it_iu_len;
	uint16_t buf_fmt;
	uint8_t flags;
	uint16_t imm_data_offset; /* SRP-2; 0 when absent */
	uint8_t initiator_port_id[16];
	uint8_t target_port_id[16];
};

/*
 * Decode an SRP_LOGIN_REQ: the 64-byte IB form (@rdma_cm false, §5.2.1) or the 56-byte compact
 * form carried in RDMA/CM private data (@rdma_cm true; tag first, opcode at byte 11). Longer
 * buffers are accepted (CM pads private data). -EMSGSIZE when short, -EPROTO on a wrong opcode.
 */
int scsitgt__srp_login_req_decode(const uint8_t *buf, size_t len, bool rdma_cm,
				  struct scsitgt__srp_login_req *out);
/* Encode one (for tests, fuzz seeds); returns the length written. */
size_t scsitgt__srp_login_req_encode(uint8_t *buf, bool rdma_cm,
				     const struct scsitgt__srp_login_req *req);

struct scsitgt__srp_login_rsp {
	uint32_t req_lim_delta;
	uint64_t tag;
	uint32_t max_it_iu_len;
	uint32_t max_ti_iu_len;
	uint16_t buf_fmt;
	uint8_t flags;
};

void scsitgt__srp_login_rsp_encode(uint8_t buf[SRP_LOGIN_RSP_LEN],
				   const struct scsitgt__srp_login_rsp *rsp);
int scsitgt__srp_login_rsp_decode(const uint8_t *buf, size_t len,
				  struct scsitgt__srp_login_rsp *out);
void scsitgt__srp_login_rej_encode(uint8_t buf[SRP_LOGIN_REJ_LEN], uint32_t reason, uint64_t tag,
				   uint16_t buf_fmt);
int scsitgt__srp_login_rej_decode(const uint8_t *buf, size_t len, uint32_t *reason, uint64_t *tag,
				  uint16_t *buf_fmt);
const char *scsitgt__srp_rej_reason_name(uint32_t reason);

/* What the target port accepts; input of scsitgt__srp_login_check(). */
struct scsitgt__srp_login_limits {
	uint64_t id_ext;
	uint64_t ioc_guid;
	uint32_t max_it_iu_len; /* the largest request IU we take */
	uint32_t min_it_iu_len; /* an IU must at least hold an SRP_CMD with one descriptor */
	uint16_t buf_fmt;	/* formats supported */
	bool immediate_data;
};

/* What the login gets, when scsitgt__srp_login_check() accepts it. */
struct scsitgt__srp_login_verdict {
	uint32_t it_iu_len;	  /* accepted request IU length */
	uint16_t imm_data_offset; /* 0: no immediate data on this channel */
	bool multi;		  /* MULTI-CHANNEL ACTION is MULTI */
};

/*
 * Validate a login against the port's limits (SRP r16a §6.2): target port identifier
 * (id_ext || ioc_guid), required buffer formats, IU length, immediate data offset. Returns 0
 * and fills @v, or an SRP_REJ_* reason. Channel counts are checked by the caller.
 */
uint32_t scsitgt__srp_login_check(const struct scsitgt__srp_login_req *req,
				  const struct scsitgt__srp_login_limits *lim,
				  struct scsitgt__srp_login_verdict *v);

/* What a login does to the I_T nexus of its initiator port (SRP r16a §6.2.2). */
enum scsitgt__srp_mc_action {
	SRP_MC_NEW,	      /* a new nexus, no other channel of it exists */
	SRP_MC_NEW_TERMINATE, /* SINGLE: end the nexus's channels, then a new nexus */
	SRP_MC_JOIN,	      /* MULTI: one more channel of the live nexus */
};

/*
 * Apply MULTI-CHANNEL ACTION @multi to a nexus that has @nchans channels (0: none exists) on a
 * port allowing @max_channels per nexus. Returns 0 with *@action and the MULTI-CHANNEL RESULT
 * for SRP_LOGIN_RSP in *@result, or SRP_REJ_MULTICHANNEL_UNSUPPORTED (MULTI to a live nexus of
 * a single-channel port) or SRP_REJ_CHANNEL_LIMIT.
 */
uint32_t scsitgt__srp_multichannel(bool multi, unsigned int nchans, unsigned int max_channels,
				   enum scsitgt__srp_mc_action *action, uint8_t *result);

/* ---- logout, credits, asynchronous events ---- */

int scsitgt__srp_i_logout_decode(const uint8_t *buf, size_t len, uint64_t *tag);
void scsitgt__srp_i_logout_encode(uint8_t buf[SRP_I_LOGOUT_LEN], uint64_t tag);
void scsitgt__srp_t_logout_encode(uint8_t buf[SRP_T_LOGOUT_LEN], uint8_t sol_not, uint32_t reason,
				  uint64_t tag);
int scsitgt__srp_t_logout_decode(const uint8_t *buf, size_t len, uint32_t *reason, uint64_t *tag);
void scsitgt__srp_cred_req_encode(uint8_t buf[SRP_CRED_REQ_LEN], uint8_t sol_not, uint32_t delta,
				  uint64_t tag);
int scsitgt__srp_cred_req_decode(const uint8_t *buf, size_t len, uint32_t *delta, uint64_t *tag);
/* SRP_CRED_RSP and SRP_AER_RSP share one layout (opcode, reserved, tag). */
int scsitgt__srp_simple_rsp_decode(const uint8_t *buf, size_t len, uint8_t opcode, uint64_t *tag);
void scsitgt__srp_simple_rsp_encode(uint8_t buf[16], uint8_t opcode, uint64_t tag);
/*
 * Encode an SRP_AER_REQ with @sense (SRP r16a §5.10) into @cap bytes; the sense data is cut
 * to what fits. Returns the IU length, or 0 when @cap cannot hold the fixed part.
 */
size_t scsitgt__srp_aer_req_encode(uint8_t *buf, size_t cap, uint8_t sol_not, uint32_t delta,
				   uint64_t tag, const uint8_t lun[8], const uint8_t *sense,
				   size_t sense_len);
int scsitgt__srp_aer_req_decode(const uint8_t *buf, size_t len, uint32_t *delta, uint64_t *tag,
				uint8_t lun[8], const uint8_t **sense, uint32_t *sense_len);

/* ---- task management ---- */

struct scsitgt__srp_tsk_mgmt {
	uint8_t sol_not;
	uint64_t tag;
	uint8_t lun[8];
	uint8_t func;
	uint64_t task_tag;
};

int scsitgt__srp_tsk_mgmt_decode(const uint8_t *buf, size_t len, struct scsitgt__srp_tsk_mgmt *out);
void scsitgt__srp_tsk_mgmt_encode(uint8_t buf[SRP_TSK_MGMT_LEN],
				  const struct scsitgt__srp_tsk_mgmt *tm);

/* ---- commands and data buffer descriptors ---- */

struct scsitgt__srp_desc {
	uint64_t va;
	uint32_t key;
	uint32_t len;
};

void scsitgt__srp_desc_get(const uint8_t *p, struct scsitgt__srp_desc *d);
void scsitgt__srp_desc_put(uint8_t *p, const struct scsitgt__srp_desc *d);

/* One direction's data buffer as an SRP_CMD describes it (§5.6.2, SRP-2 immediate). */
struct scsitgt__srp_buf {
	uint8_t fmt;	    /* SRP_DESC_* */
	uint32_t total_len; /* bytes the initiator's buffer holds */
	/* DIRECT: the descriptor. INDIRECT: the table descriptor (where the full list is). */
	struct scsitgt__srp_desc desc;
	/*
	 * INDIRECT: descriptors in the IU (@list, 16 bytes each) and in the whole table (may
	 * exceed SRP_MAX_DESCRIPTORS; n_in_iu is within the IU).
	 */
	const uint8_t *list;
	uint32_t n_in_iu;
	uint32_t n_total;
	/* IMMEDIATE: the data inside the IU. */
	const uint8_t *imm;
};

struct scsitgt__srp_cmd {
	uint8_t sol_not;
	uint64_t tag;
	uint8_t lun[8];
	uint8_t task_attr; /* SRP_ATTR_* */
	uint16_t cdb_len;  /* 16 + additional CDB length: 16..268 */
	const uint8_t *cdb;
	struct scsitgt__srp_buf out; /* data-out (initiator to target) */
	struct scsitgt__srp_buf in;  /* data-in */
};

/*
 * Decode an SRP_CMD of @len bytes (§5.6). @imm_data_offset is the channel's negotiated SRP-2
 * immediate data offset, 0 when not negotiated. On a protocol violation returns -EPROTO and
 * sets *@tlo_reason to the SRP_TLO_* the target logs the channel out with (unsupported
 * descriptor format of either direction, IU length); -EMSGSIZE is reported as
 * SRP_TLO_INVALID_IU_LEN. Pointers in @out point into @buf.
 */
int scsitgt__srp_cmd_decode(const uint8_t *buf, size_t len, uint16_t imm_data_offset,
			    struct scsitgt__srp_cmd *out, uint32_t *tlo_reason);

/* Fields of a command for tests and fuzz seeds. */
struct scsitgt__srp_cmd_spec {
	uint8_t sol_not;
	uint64_t tag;
	uint8_t lun[8];
	uint8_t task_attr;
	const uint8_t *cdb;
	uint16_t cdb_len; /* 16..16+252, a multiple of 4 beyond 16 */
	uint8_t out_fmt, in_fmt;
	/* DIRECT: descs[0]. INDIRECT: table at @table, @ndescs of which go into the IU. */
	const struct scsitgt__srp_desc *descs;
	uint32_t ndescs;
	struct scsitgt__srp_desc table;
	uint32_t total_len;
	/* IMMEDIATE: data placed at @imm_data_offset. */
	const uint8_t *imm;
	uint32_t imm_len;
	uint16_t imm_data_offset;
};

/* Encode an SRP_CMD into @cap bytes; returns its length or 0 when it does not fit. */
size_t scsitgt__srp_cmd_encode(uint8_t *buf, size_t cap, const struct scsitgt__srp_cmd_spec *s);

/* ---- responses ---- */

struct scsitgt__srp_rsp {
	uint8_t sol_not;
	uint32_t req_lim_delta;
	uint64_t tag;
	uint8_t flags; /* SRP_RSP_DO*, DI*; RSPVALID and SNSVALID are set by the encoder */
	uint8_t status;
	uint32_t data_out_res;
	uint32_t data_in_res;
	const uint8_t *sense;
	uint32_t sense_len;
	const uint8_t *resp_data;
	uint32_t resp_len;
};

/*
 * Encode an SRP_RSP into @cap bytes (the initiator's maximum target-to-initiator IU length,
 * §5.9): response data first, then sense data cut to what still fits (SENSE DATA LIST LENGTH
 * says how much was sent). Returns the IU length, or 0 when @cap cannot hold the fixed part
 * and the response data.
 */
size_t scsitgt__srp_rsp_encode(uint8_t *buf, size_t cap, const struct scsitgt__srp_rsp *r);

/* What a finished command moved, against the initiator's buffers. */
struct scsitgt__srp_xfer {
	uint32_t out_buf;  /* bytes of the data-out buffer (its descriptors' total) */
	uint32_t in_buf;   /* bytes of the data-in buffer */
	uint32_t out_need; /* bytes of Data-Out the CDB asked for (SPDTL) */
	uint32_t out_done; /* bytes of Data-Out read from the initiator */
	uint32_t in_have;  /* bytes of Data-In the command produced: all of a GOOD read, the
			    * good blocks before a medium error (sent with the CHECK CONDITION) */
};

/*
 * Set the DO/DI OVER/UNDER flags and residual counts of @r for @x (SRP r16a §5.9 Table 27)
 * and return how many bytes of Data-In to send.
 */
uint32_t scsitgt__srp_residuals(struct scsitgt__srp_rsp *r, const struct scsitgt__srp_xfer *x);
int scsitgt__srp_rsp_decode(const uint8_t *buf, size_t len, struct scsitgt__srp_rsp *out);

/* ---- request limit (credits, SRP r16a §5.5.2) ---- */

/*
 * The initiator may have at most @max requests (SRP_CMD, SRP_TSK_MGMT) that the target has not
 * answered. It starts with @max credits (the login's REQUEST LIMIT DELTA); each request takes
 * one; a request's credit comes back to the target when the request is finished (its response
 * is built or the task was aborted), and travels to the initiator in the REQUEST LIMIT DELTA of
 * the next SRP_RSP, SRP_CRED_REQ or SRP_AER_REQ. Invariant: held + inflight + owed == max.
 */
struct scsitgt__srp_credits {
	uint32_t max;
	uint32_t held;	   /* credits the initiator holds, as far as the target knows */
	uint32_t inflight; /* requests received and not finished */
	uint32_t owed;	   /* finished requests whose credit was not sent back yet */
};

/* Returns the login's initial REQUEST LIMIT DELTA (= @max). */
uint32_t scsitgt__srp_credits_init(struct scsitgt__srp_credits *c, uint32_t max);
/* A request arrived: -EPROTO when the initiator had no credit (it overran the limit). */
int scsitgt__srp_credits_take(struct scsitgt__srp_credits *c);
/* A request finished. */
void scsitgt__srp_credits_finish(struct scsitgt__srp_credits *c);
/* The REQUEST LIMIT DELTA of an outgoing IU: everything owed, now held by the initiator. */
uint32_t scsitgt__srp_credits_grant(struct scsitgt__srp_credits *c);

#endif /* SCSITGT_SRP_PROTO_H */
