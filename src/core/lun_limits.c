/* SPDX-License-Identifier: MIT */
/*
 * The Block Limits (SBC-4 §6.6.4, VPD B0h) and the optional LU designators (SPC-5 §7.7.6) of a
 * LUN, settled once at scsitgt_lun_create() from its options, the backend's geometry and the
 * library's own limits. Contradictions are refused there rather than advertised: an initiator
 * that trusted a page whose optimal transfer exceeds the maximum, or whose unmap alignment is
 * not below its granularity, would build requests the device server must refuse.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"
#include "core/sbc.h"

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Each refusal names the LUN, the option, its value and the rule (scsitgt__log_refused()). */
#define LUN_REFUSE(lg, ...) \
	scsitgt__log_refused(lg, "core", -EINVAL, "scsitgt_lun_create: LUN %llu: " __VA_ARGS__)

int scsitgt__lun_designators_set(const struct scsitgt__logger *lg,
				 struct scsitgt__lun_designators *d,
				 const struct scsitgt_lun_opts *o)
{
	memset(d, 0, sizeof(*d));
	if (!all_zero(o->naa_extended, sizeof(o->naa_extended))) {
		/* SPC-5 §7.7.6.6.6: NAA 6h, IEEE Registered Extended. */
		if (o->naa_extended[0] >> 4 != 6)
			return LUN_REFUSE(lg,
					  "naa_extended starts with NAA %u: not 6 (IEEE Registered "
					  "Extended, SPC-5 §7.7.6.6.6)",
					  (unsigned long long)o->id, o->naa_extended[0] >> 4);
		memcpy(d->naa_extended, o->naa_extended, sizeof(d->naa_extended));
		d->has_naa_extended = true;
	}
	if (!all_zero(o->uuid, sizeof(o->uuid))) {
		unsigned int version = o->uuid[6] >> 4;

		/* RFC 4122 §4.1.1: variant 10x in the top bits of clock_seq_hi_and_reserved;
		 * §4.1.3 (and RFC 9562 §4.2, which adds 6..8): the version in time_hi's top
		 * nibble. */
		if ((o->uuid[8] & 0xc0) != 0x80 || version < 1 || version > 8)
			return LUN_REFUSE(lg,
					  "uuid variant bits 0x%02x, version %u: not an RFC 4122 "
					  "UUID (variant 10x, version 1..8)",
					  (unsigned long long)o->id, o->uuid[8] & 0xc0, version);
		memcpy(d->uuid, o->uuid, sizeof(d->uuid));
		d->has_uuid = true;
	}
	return 0;
}

/* Whether any of the options' UNMAP limits is set. */
static bool opts_unmap_limits(const struct scsitgt_lun_opts *o)
{
	return o->max_unmap_blocks || o->max_unmap_descriptors || o->unmap_granularity ||
	       o->unmap_granularity_alignment;
}

int scsitgt__lun_limits_settle(struct scsitgt_lun *lun, const struct scsitgt_lun_opts *o)
{
	struct scsitgt__lun_limits *l = &lun->limits;
	uint32_t bs = lun->geo.block_size;
	uint32_t lib_max = SCSITGT__MAX_XFER_BYTES / bs;
	uint32_t phys = 1u << (lun->geo.physical_block_exponent & 0x0f);
	const struct scsitgt__logger *lg = &lun->engine->log;
	uint32_t gran;

	memset(l, 0, sizeof(*l));
	/* MAXIMUM TRANSFER LENGTH: buffers of a command are at most SCSITGT__MAX_XFER_BYTES. */
	if (o->max_transfer_blocks > lib_max)
		return LUN_REFUSE(lg, "max_transfer_blocks %u: above %u (%u bytes in blocks of %u)",
				  (unsigned long long)o->id, o->max_transfer_blocks, lib_max,
				  (unsigned)SCSITGT__MAX_XFER_BYTES, bs);
	l->max_transfer_blocks = o->max_transfer_blocks ? o->max_transfer_blocks : lib_max;

	/* OPTIMAL TRANSFER LENGTH GRANULARITY: a 16-bit field; a transfer of one granule must
	 * be possible when the host set either value (a backend's large physical block alone
	 * is reported as it always was). */
	if (o->optimal_transfer_granularity > 0xffff)
		return LUN_REFUSE(lg, "optimal_transfer_granularity %u: above 65535 (16 bits)",
				  (unsigned long long)o->id, o->optimal_transfer_granularity);
	gran = o->optimal_transfer_granularity ? o->optimal_transfer_granularity : phys;
	if (gran > l->max_transfer_blocks &&
	    (o->optimal_transfer_granularity || o->max_transfer_blocks))
		return LUN_REFUSE(lg,
				  "optimal transfer granularity %u blocks: above the maximum "
				  "transfer length %u",
				  (unsigned long long)o->id, gran, l->max_transfer_blocks);
	l->opt_granularity = (uint16_t)(gran > 0xffff ? 0xffff : gran);

	/* OPTIMAL TRANSFER LENGTH: SBC-4 §6.6.4 wants it at most the MAXIMUM TRANSFER LENGTH.
	 * The host's value must satisfy that (and be whole granules when it gave both); the
	 * backend's is cut to it, as before. */
	if (o->optimal_transfer_blocks) {
		if (o->optimal_transfer_blocks > l->max_transfer_blocks)
			return LUN_REFUSE(lg,
					  "optimal_transfer_blocks %u: above the maximum transfer "
					  "length %u (SBC-4 §6.6.4)",
					  (unsigned long long)o->id, o->optimal_transfer_blocks,
					  l->max_transfer_blocks);
		if (o->optimal_transfer_granularity &&
		    o->optimal_transfer_blocks % o->optimal_transfer_granularity)
			return LUN_REFUSE(lg,
					  "optimal_transfer_blocks %u: not a multiple of "
					  "optimal_transfer_granularity %u",
					  (unsigned long long)o->id, o->optimal_transfer_blocks,
					  o->optimal_transfer_granularity);
		l->opt_transfer_blocks = o->optimal_transfer_blocks;
	} else {
		l->opt_transfer_blocks = lun->geo.optimal_transfer_blocks > l->max_transfer_blocks ?
						 l->max_transfer_blocks :
						 lun->geo.optimal_transfer_blocks;
	}

	/* MAXIMUM WRITE SAME LENGTH: commands count blocks in 32 bits. */
	if (o->max_write_same_blocks > UINT32_MAX)
		return LUN_REFUSE(lg, "max_write_same_blocks %llu: above 4294967295 (32 bits)",
				  (unsigned long long)o->id,
				  (unsigned long long)o->max_write_same_blocks);
	l->max_write_same_blocks = o->max_write_same_blocks ? o->max_write_same_blocks :
							      SCSITGT__SBC_MAX_WRITE_SAME_BLOCKS;

	/* UNMAP limits describe the UNMAP command, which only a thin LUN has (LBPME). */
	if (opts_unmap_limits(o) && !(lun->flags & SCSITGT_LUN_THIN))
		return LUN_REFUSE(lg,
				  "UNMAP limits (max_unmap_blocks, max_unmap_descriptors, "
				  "unmap_granularity*) on a LUN without SCSITGT_LUN_THIN",
				  (unsigned long long)o->id);
	l->max_unmap_blocks = o->max_unmap_blocks ? o->max_unmap_blocks :
						    SCSITGT__MAX_UNMAP_LBA_COUNT;
	l->max_unmap_descriptors = o->max_unmap_descriptors ? o->max_unmap_descriptors :
							      SCSITGT__MAX_UNMAP_DESCRIPTORS;
	if (o->unmap_granularity_alignment &&
	    (o->unmap_granularity == 0 || o->unmap_granularity_alignment >= o->unmap_granularity ||
	     o->unmap_granularity_alignment > 0x7fffffff))
		return LUN_REFUSE(lg,
				  "unmap_granularity_alignment %u: needs a unmap_granularity "
				  "above it (now %u) and at most 2147483647",
				  (unsigned long long)o->id, o->unmap_granularity_alignment,
				  o->unmap_granularity);
	if (o->unmap_granularity) {
		l->unmap_granularity = o->unmap_granularity;
		l->unmap_alignment = o->unmap_granularity_alignment;
		l->ugavalid = true;
	} else if (lun->geo.unmap_granularity_blocks > phys) {
		/* The backend's deallocation unit (RBD's discard granularity, the RAM backend's
		 * chunk, a file system's block), aligned at LBA 0 (issue 17): initiators then
		 * send aligned ranges that free something. */
		l->unmap_granularity = lun->geo.unmap_granularity_blocks;
		l->ugavalid = true;
	} else {
		/* A physical block; UGAVALID stays zero. */
		l->unmap_granularity = phys;
	}
	return 0;
}
