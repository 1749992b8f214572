/* SPDX-License-Identifier: MIT */
/*
 * Fuzz SET TARGET PORT GROUPS parameter lists (SPC-5 §6.50) and REPORT TARGET PORT GROUPS
 * (§6.36) on a target with ALUA configured (fuzz_cdb's target has none: both commands end
 * there as unsupported), with a request hook that accepts, defers, vetoes or reconfigures
 * ALUA, and the host changing groups and ports between commands. Two I_T nexuses on relative
 * target ports 1 and 2. Input:
 *   byte 0      LUN configuration (FUZZ_LUN_* bits)
 *   byte 1      bits 0-1 ALUA modes (IMPLICIT, EXPLICIT), bit 2 a request hook, bits 3-4
 *               groups - 1 (ids 1.., group 1 holds port 1 and group 2 port 2), bits 5-7 the
 *               IMPLICIT TRANSITION TIME
 *   byte 2      the hook's answers: 2 bits per call, cycling (accept, defer after moving the
 *               group to TRANSITIONING, veto, turn ALUA off)
 *   then up to 32 records: [kind][flags][length, 2 bytes BE][data]
 *     kind 0  SET TARGET PORT GROUPS with the data as parameter list; PARAMETER LIST LENGTH
 *             = length, plus flags >> 4 when flags bit 1 is set
 *     kind 1  REPORT TARGET PORT GROUPS, format flags >> 5, ALLOCATION LENGTH = length
 *     kind 2  the host: data[0] picks set_state, set_preferred, add/remove port, create or
 *             destroy a group, reconfigure; data[1..] its arguments
 *     kind 3  READ(10) of one block, then INQUIRY VPD 83h (the group's designator)
 *   flags bit 0: on the second nexus (port 2).
 * After every record both formats of REPORT TARGET PORT GROUPS run. Nothing may crash, hang or
 * leak.
 */
#include "fuzz_common.h"

#include "libscsitgt/alua.h"

struct fz_alua {
	struct scsitgt_target *tgt;
	uint8_t answers;
	unsigned int calls;
};

static int fz_hook(void *arg, struct scsitgt_target *tgt, uint16_t group_id,
		   enum scsitgt_alua_state old_state, enum scsitgt_alua_state new_state)
{
	struct fz_alua *fa = arg;
	unsigned int a = (fa->answers >> (2 * (fa->calls++ % 4))) & 3;
	struct scsitgt_alua_opts o;

	(void)old_state;
	(void)new_state;
	switch (a) {
	case 0:
		return 0;
	case 1:
		scsitgt_alua_set_state(tgt, group_id, SCSITGT_ALUA_TRANSITIONING);
		return SCSITGT_ALUA_REQUEST_DEFERRED;
	case 2:
		return -EIO;
	default:
		scsitgt_alua_opts_init(&o, sizeof(o));
		scsitgt_alua_configure(tgt, &o);
		return 0;
	}
}

static void fz_host(struct fz_alua *fa, const uint8_t *d, size_t len)
{
	struct scsitgt_alua_opts o;
	uint16_t id;
	uint8_t arg;

	if (len < 3)
		return;
	id = d[1] % 8;
	arg = d[2];
	switch (d[0] % 7) {
	case 0:
		scsitgt_alua_set_state(fa->tgt, id, (enum scsitgt_alua_state)(arg & 0x0f));
		break;
	case 1:
		scsitgt_alua_set_preferred(fa->tgt, id, arg & 1);
		break;
	case 2:
		scsitgt_alua_group_add_port(fa->tgt, id, arg % 4);
		break;
	case 3:
		scsitgt_alua_group_remove_port(fa->tgt, id, arg % 4);
		break;
	case 4:
		scsitgt_alua_group_create(fa->tgt, id, (enum scsitgt_alua_state)(arg & 0x0f));
		break;
	case 5:
		scsitgt_alua_group_destroy(fa->tgt, id);
		break;
	default:
		scsitgt_alua_opts_init(&o, sizeof(o));
		o.modes = arg & 3;
		o.implicit_transition_secs = arg >> 2;
		o.request_cb = (arg & 0x80) ? fz_hook : NULL;
		o.request_arg = fa;
		scsitgt_alua_configure(fa->tgt, &o);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scsitgt__session *other;
	struct scsitgt_alua_opts o;
	struct fuzz_env env;
	struct fz_alua fa;
	unsigned int ngroups;
	size_t off = 3;

	if (size < 3)
		return 0;
	fuzz_env_init(&env, data[0] & ~FUZZ_LUN_READ_ONLY);
	other = fuzz_add_other(&env);
	fa.tgt = env.lf->tgt;
	fa.answers = data[2];
	fa.calls = 0;
	/* The setup is the host's: it does not fail for want of memory here. */
	fuzz_alloc_hold++;
	ngroups = 1 + ((data[1] >> 3) & 3);
	for (unsigned int g = 1; g <= ngroups; g++)
		if (scsitgt_alua_group_create(fa.tgt, (uint16_t)g,
					      g == 1 ? SCSITGT_ALUA_ACTIVE_OPTIMIZED :
						       SCSITGT_ALUA_STANDBY) != 0)
			abort();
	if (scsitgt_alua_group_add_port(fa.tgt, 1, 1) != 0)
		abort();
	if (ngroups > 1 && scsitgt_alua_group_add_port(fa.tgt, 2, 2) != 0)
		abort();
	scsitgt_alua_opts_init(&o, sizeof(o));
	o.modes = data[1] & 3;
	o.implicit_transition_secs = data[1] >> 5;
	o.request_cb = (data[1] & 4) ? fz_hook : NULL;
	o.request_arg = &fa;
	if (scsitgt_alua_configure(fa.tgt, &o) != 0)
		abort();
	fuzz_alloc_hold--;

	for (int n = 0; n < 32 && size - off >= 4; n++) {
		uint8_t kind = data[off] % 4, flags = data[off + 1];
		size_t len = (size_t)data[off + 2] << 8 | data[off + 3];
		struct scsitgt__session *sess = (flags & 1) ? other : NULL;
		uint8_t cdb[12] = { 0 }, rw[10] = { 0x28 }, inq[6] = { 0x12, 1, 0x83, 0, 0xff };
		const uint8_t *pl = &data[off + 4];

		off += 4;
		if (len > size - off)
			len = size - off;
		off += len;
		switch (kind) {
		case 0:
			cdb[0] = 0xa4;
			cdb[1] = 0x0a;
			fuzz_put_be32(&cdb[6],
				      (uint32_t)len + ((flags & 2) ? (uint32_t)(flags >> 4) : 0));
			fuzz_run_on(&env, sess, cdb, sizeof(cdb), pl, len);
			break;
		case 1:
			cdb[0] = 0xa3;
			cdb[1] = (uint8_t)(0x0a | (flags & 0xe0));
			fuzz_put_be32(&cdb[6], (uint32_t)len);
			fuzz_run_on(&env, sess, cdb, sizeof(cdb), NULL, 0);
			break;
		case 2:
			fz_host(&fa, pl, len);
			break;
		default:
			fuzz_put_be32(&rw[2], n % FUZZ_BLOCKS);
			fuzz_put_be16(&rw[7], 1);
			fuzz_run_on(&env, sess, rw, sizeof(rw), NULL, 0);
			fuzz_run_on(&env, sess, inq, sizeof(inq), NULL, 0);
			break;
		}
		for (uint8_t fmt = 0; fmt < 2; fmt++) {
			cdb[0] = 0xa3;
			cdb[1] = (uint8_t)(0x0a | fmt << 5);
			memset(&cdb[2], 0, 10);
			fuzz_put_be32(&cdb[6], 4096);
			fuzz_run_on(&env, fmt ? other : NULL, cdb, sizeof(cdb), NULL, 0);
		}
	}
	fuzz_env_fini(&env);
	return 0;
}
