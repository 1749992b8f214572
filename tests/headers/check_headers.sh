#!/bin/bash
# check_headers.sh SRCROOT - every public header compiles on its own, twice in a row (include
# guard), as strict C11 and as C++ (so that C++ hosts can include it).
# Headers are enumerated when the test runs, so new ones are checked without a reconfigure.
# Compilers come from the environment: CC (meson's C compiler), CXX (may be empty: C++ skipped).
set -euo pipefail
SRCROOT=${1:?usage: check_headers.sh SRCROOT}
CC=${CC:-cc}
CXX=${CXX:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scsitgt-headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# uv.h needs POSIX types (pthread_rwlock_t) that strict -std=c11 hides: a strict-C host on a
# POSIX system asks for them with _POSIX_C_SOURCE, and so do we. Nothing more is defined.
uvflags="-D_POSIX_C_SOURCE=200809L $(pkg-config --cflags libuv 2>/dev/null || true)"
shopt -s nullglob
headers=("$SRCROOT"/include/libscsitgt/*.h)
[[ ${#headers[@]} -gt 0 ]] || { echo "no headers in $SRCROOT/include/libscsitgt" >&2; exit 1; }

fail=0
for h in "${headers[@]}"; do
	name=libscsitgt/$(basename "$h")
	printf '#include <%s>\n#include <%s>\nint scsitgt_header_check_%s;\n' \
		"$name" "$name" "$(basename "$h" .h | tr -c 'a-zA-Z0-9_\n' _)" >"$tmp/t.c"
	# shellcheck disable=SC2086
	if $CC -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$SRCROOT/include" \
		$uvflags "$tmp/t.c" 2>"$tmp/err"; then
		echo "ok   C11  $name"
	else
		echo "FAIL C11  $name"
		cat "$tmp/err"
		fail=1
	fi
	if [[ -n "$CXX" ]]; then
		cp "$tmp/t.c" "$tmp/t.cc"
		# shellcheck disable=SC2086
		if $CXX -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only \
			-I"$SRCROOT/include" $uvflags "$tmp/t.cc" 2>"$tmp/err"; then
			echo "ok   C++  $name"
		else
			echo "FAIL C++  $name"
			cat "$tmp/err"
			fail=1
		fi
	fi
done
if [[ -z "$CXX" ]]; then
	echo "note: no C++ compiler found; C++ checks not run"
fi
exit $fail
