#!/bin/sh
# Prints the version from include/libscsitgt/version.h, the single source of truth.
cd "$(dirname "$0")/.." || exit 1
h=include/libscsitgt/version.h
maj=$(sed -n 's/^#define SCSITGT_VERSION_MAJOR \([0-9]*\).*/\1/p' $h)
min=$(sed -n 's/^#define SCSITGT_VERSION_MINOR \([0-9]*\).*/\1/p' $h)
pat=$(sed -n 's/^#define SCSITGT_VERSION_PATCH \([0-9]*\).*/\1/p' $h)
echo "$maj.$min.$pat"
