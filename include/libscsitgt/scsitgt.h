/* SPDX-License-Identifier: MIT */
/**
 * @file scsitgt.h
 * Umbrella header of libscsitgt: include this one. See README.md and docs/ for the concepts.
 */
#ifndef LIBSCSITGT_SCSITGT_H
#define LIBSCSITGT_SCSITGT_H

#include "version.h"
#include "common.h"
#include "engine.h"
#include "target.h"
#include "backend.h"
#include "backend_aio.h"
#include "backend_fault.h"
#include "backend_rbd.h"
#include "backend_rbd_gateway.h"
#include "lun.h"
#include "pr.h"
#include "alua.h"
#include "iscsi.h"
#include "srp.h"
#include "stats.h"
#include "events.h"

#endif /* LIBSCSITGT_SCSITGT_H */
