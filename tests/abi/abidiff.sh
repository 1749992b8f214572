#!/bin/sh
# abidiff.sh BASELINE LIBRARY HEADERS_DIR SUPPRESSIONS
#
# The ABI gate (docs/ABI.md): compare the library just built, seen through its public headers,
# with the stored ABI of the last release (abidw output). Added functions and types pass;
# removed or changed functions and types fail, except what the suppression file allows
# (members appended at the end of a size-prefixed struct). Exit 77 (skipped) without abidiff.
set -u
baseline=$1
lib=$2
headers=$3
supp=$4

if ! command -v abidiff >/dev/null 2>&1; then
	echo "abidiff not installed (Debian: abigail-tools); skipping the ABI gate"
	exit 77
fi
# Types are compared through DWARF: a build without debug information (e.g. buildtype=release)
# cannot be checked.
if command -v readelf >/dev/null 2>&1 && ! readelf -S "$lib" | grep -q '\.debug_info'; then
	echo "$lib has no debug information (build with -g); skipping the ABI gate"
	exit 77
fi
if [ ! -f "$baseline" ]; then
	echo "no ABI baseline at $baseline"
	exit 1
fi
# --no-added-syms: additions are compatible. Exit status bits (abidiff(1)): 1 error, 2 usage
# error, 4 ABI change, 8 incompatible ABI change; after the filters any change is a break.
# --drop-private-types: types the public headers do not define (struct scsitgt_io, the core's
# objects) are not ABI and are left out entirely; it also keeps libabigail 2.2 (Debian 12)
# from crashing while it applies the suppressions to them (SIGSEGV in get_last_data_member once
# struct scsitgt_backend_ops grew members). Inserted or retyped public members still fail.
abidiff --drop-private-types --no-added-syms --headers-dir2 "$headers" --suppressions "$supp" \
	"$baseline" "$lib"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "abidiff: exit status $rc: the ABI of $lib is not compatible with $baseline"
	echo "(see docs/ABI.md: a break needs a major version and a new baseline)"
	exit 1
fi
echo "ABI compatible with $(basename "$baseline")"
exit 0
