/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the SRP receive-side parsers (T10 SRP r16a §5, SRP-2 immediate data): the login
 * in both forms (RDMA/CM private data and the IB IU) with its validation and, once accepted,
 * its MULTI-CHANNEL ACTION against the nexuses it may meet, SRP_CMD with its data
 * buffer descriptors, SRP_TSK_MGMT, SRP_I_LOGOUT, the initiator's answers (CRED_RSP, AER_RSP),
 * and the decoders of the IUs we send (a peer could echo anything back). Every pointer a decoder
 * returns must stay inside the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "transport/srp/srp_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_range(const uint8_t *data, size_t size, const uint8_t *p, size_t len)
{
	if (p == NULL) {
		if (len)
			abort();
		return;
	}
	if (p < data || p > data + size || len > (size_t)(data + size - p))
		abort();
}

static void check_buf(const uint8_t *data, size_t size, const struct scsitgt__srp_buf *b)
{
	switch (b->fmt) {
	case SRP_DESC_NONE:
	case SRP_DESC_DIRECT:
		break;
	case SRP_DESC_INDIRECT:
		if (b->n_in_iu > b->n_total || b->n_total == 0)
			abort();
		check_range(data, size, b->list, (size_t)b->n_in_iu * SRP_DIRECT_DESC_LEN);
		break;
	case SRP_DESC_IMMEDIATE:
		check_range(data, size, b->imm, b->total_len);
		break;
	default:
		abort();
	}
}

/* An accepted login's MULTI-CHANNEL ACTION against nexuses of 0..3 channels on ports of 0..3
 * channels (SRP r16a §6.2.2, Table 9): joins only a live nexus with room, answers with the
 * result its action implies. */
static void check_multichannel(bool multi)
{
	for (unsigned int max = 0; max < 4; max++) {
		for (unsigned int n = 0; n < 4; n++) {
			enum scsitgt__srp_mc_action act = SRP_MC_NEW;
			uint8_t result = 0xff;
			uint32_t rej = scsitgt__srp_multichannel(multi, n, max, &act, &result);

			if (rej) {
				if (!multi || n == 0 ||
				    (rej != SRP_REJ_MULTICHANNEL_UNSUPPORTED &&
				     rej != SRP_REJ_CHANNEL_LIMIT))
					abort();
				continue;
			}
			if ((act == SRP_MC_JOIN) != (multi && n > 0) ||
			    (act == SRP_MC_JOIN &&
			     (n >= max || result != SRP_LOGIN_RSP_MAINTAINED)) ||
			    (act == SRP_MC_NEW &&
			     (n != 0 || result != SRP_LOGIN_RSP_NO_CHANNELS)) ||
			    (act == SRP_MC_NEW_TERMINATE &&
			     (n == 0 || result != SRP_LOGIN_RSP_TERMINATED)))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t imm_offsets[] = { 0, 52, 68 };
	struct scsitgt__srp_login_limits lim = {
		.id_ext = 0x0002c90300abcdefull,
		.ioc_guid = 0x0002c90300abcdefull,
		.max_it_iu_len = 65536,
		.min_it_iu_len = SRP_CMD_LEN + SRP_DIRECT_DESC_LEN,
		.buf_fmt = SRP_BUF_FMT_DIRECT | SRP_BUF_FMT_INDIRECT,
		.immediate_data = true,
	};
	struct scsitgt__srp_login_verdict v;
	struct scsitgt__srp_login_req req;
	struct scsitgt__srp_tsk_mgmt tm;
	struct scsitgt__srp_login_rsp lrsp;
	struct scsitgt__srp_rsp rsp;
	struct scsitgt__srp_cmd cmd;
	const uint8_t *sense;
	uint32_t reason, delta, slen, tlo;
	uint64_t tag;
	uint16_t fmt;
	uint8_t lun[8];

	for (int form = 0; form < 2; form++) {
		if (scsitgt__srp_login_req_decode(data, size, form == 1, &req) != 0)
			continue;
		if (scsitgt__srp_login_check(&req, &lim, &v) != 0)
			continue;
		if (v.it_iu_len > lim.max_it_iu_len || v.it_iu_len < lim.min_it_iu_len ||
		    (v.imm_data_offset && v.imm_data_offset >= v.it_iu_len))
			abort();
		check_multichannel(v.multi);
	}
	for (size_t i = 0; i < sizeof(imm_offsets) / sizeof(imm_offsets[0]); i++) {
		if (scsitgt__srp_cmd_decode(data, size, imm_offsets[i], &cmd, &tlo) != 0) {
			if (tlo == 0)
				abort(); /* a refusal always names its logout reason */
			continue;
		}
		check_range(data, size, cmd.cdb, cmd.cdb_len);
		if (cmd.cdb_len < 16 || (cmd.cdb_len - 16) % 4)
			abort();
		check_buf(data, size, &cmd.out);
		check_buf(data, size, &cmd.in);
		if (cmd.out.fmt == SRP_DESC_IMMEDIATE && cmd.in.fmt != SRP_DESC_NONE)
			abort();
	}
	(void)scsitgt__srp_tsk_mgmt_decode(data, size, &tm);
	(void)scsitgt__srp_i_logout_decode(data, size, &tag);
	(void)scsitgt__srp_simple_rsp_decode(data, size, SRP_IU_CRED_RSP, &tag);
	(void)scsitgt__srp_simple_rsp_decode(data, size, SRP_IU_AER_RSP, &tag);
	(void)scsitgt__srp_t_logout_decode(data, size, &reason, &tag);
	(void)scsitgt__srp_cred_req_decode(data, size, &delta, &tag);
	(void)scsitgt__srp_login_rej_decode(data, size, &reason, &tag, &fmt);
	(void)scsitgt__srp_login_rsp_decode(data, size, &lrsp);
	if (scsitgt__srp_aer_req_decode(data, size, &delta, &tag, lun, &sense, &slen) == 0)
		check_range(data, size, sense, slen);
	if (scsitgt__srp_rsp_decode(data, size, &rsp) == 0) {
		uint8_t out[512];

		check_range(data, size, rsp.sense, rsp.sense_len);
		check_range(data, size, rsp.resp_data, rsp.resp_len);
		/* Re-encoding what was decoded never writes past the capacity. */
		if (scsitgt__srp_rsp_encode(out, sizeof(out), &rsp) > sizeof(out))
			abort();
	}
	return 0;
}
