/* SPDX-License-Identifier: MIT */
/**
 * @file iscsi.h
 * iSCSI transport: portals, negotiation parameters and authentication.
 */
#ifndef LIBSCSITGT_ISCSI_H
#define LIBSCSITGT_ISCSI_H

#include "common.h"
#include "engine.h"
#include "target.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* LIBSCSITGT_ISCSI_H */
