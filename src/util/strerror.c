/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "libscsitgt/common.h"
#include "libscsitgt/version.h"

#define STR_(x) #x
#define STR(x) STR_(x)

SCSITGT_EXPORT const char *scsitgt_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case SCSITGT_EPROTO_PEER:
		return "protocol violation by the peer";
	case SCSITGT_EAUTH:
		return "authentication failed";
	default:
		break;
	}
	if (err < 0 && err > -4000)
		return strerror(-err);
	return "unknown error";
}

SCSITGT_EXPORT unsigned int scsitgt_version(void)
{
	return SCSITGT_VERSION_HEX;
}

SCSITGT_EXPORT const char *scsitgt_version_string(void)
{
	return STR(SCSITGT_VERSION_MAJOR) "." STR(SCSITGT_VERSION_MINOR) "." STR(
		SCSITGT_VERSION_PATCH);
}
