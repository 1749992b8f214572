/* SPDX-License-Identifier: MIT */
/*
 * Byte counts as people type them on command lines and in configuration files: decimal digits
 * with an optional K, M, G or T suffix (powers of 1024; "Ki", "KiB" and "KB" are the same), as
 * minitarget, scsitgtd and scsitgt-bench take them. Shared by those programs so that "4k" means
 * the same everywhere.
 */
#ifndef SCSITGT_EXAMPLES_SIZE_ARG_H
#define SCSITGT_EXAMPLES_SIZE_ARG_H

#include <stdint.h>

/*
 * Parse @s into *@out. 0, or -EINVAL (empty, a sign, a space, any other character or suffix)
 * or -ERANGE (does not fit in 64 bits). Zero is a valid count: callers check their own range.
 */
int size_arg_parse(const char *s, uint64_t *out);

#endif /* SCSITGT_EXAMPLES_SIZE_ARG_H */
