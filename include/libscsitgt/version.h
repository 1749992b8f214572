/* SPDX-License-Identifier: MIT */
/**
 * @file version.h
 * Compile-time and run-time version of libscsitgt (semantic versioning, see docs/ABI.md).
 */
#ifndef LIBSCSITGT_VERSION_H
#define LIBSCSITGT_VERSION_H

/** Major version: changes when the API or ABI breaks compatibility (and with it the SONAME). */
#define SCSITGT_VERSION_MAJOR 0
/** Minor version: changes when functions or struct members are added compatibly. */
#define SCSITGT_VERSION_MINOR 1
/** Patch version: changes for fixes that leave the API and ABI alone. */
#define SCSITGT_VERSION_PATCH 0

/** The version as one integer: major << 16 | minor << 8 | patch. */
#define SCSITGT_VERSION_HEX \
	((SCSITGT_VERSION_MAJOR << 16) | (SCSITGT_VERSION_MINOR << 8) | SCSITGT_VERSION_PATCH)

#endif /* LIBSCSITGT_VERSION_H */
