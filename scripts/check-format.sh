#!/bin/bash
# check-format.sh - fail when a tracked C file differs from what clang-format makes of it.
#
#   scripts/check-format.sh          check every tracked *.c / *.h (the 'format' test suite)
#   scripts/check-format.sh --fix    rewrite them in place
#
# The style is .clang-format at the top of the tree (Linux kernel C style, 100 columns). The
# check uses clang-format 14, Debian 12's: another major version may wrap a few lines
# differently, so a different version only warns unless SCSITGT_FORMAT_STRICT=1.
set -euo pipefail
cd "$(dirname "$0")/.."

CF=${CLANG_FORMAT:-}
if [[ -z "$CF" ]]; then
	for c in clang-format-14 clang-format; do
		if command -v "$c" >/dev/null; then
			CF=$c
			break
		fi
	done
fi
if [[ -z "$CF" ]]; then
	echo "check-format: clang-format not installed (scripts/install-deps.sh installs it)" >&2
	exit 77
fi

mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find src include examples tests bench -name '*.[ch]')
if [[ "${1:-}" == --fix ]]; then
	"$CF" -i "${files[@]}"
	exit 0
fi

ver=$("$CF" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if ! out=$("$CF" --dry-run -Werror "${files[@]}" 2>&1); then
	if [[ "$ver" != 14 && "${SCSITGT_FORMAT_STRICT:-0}" != 1 ]]; then
		echo "check-format: clang-format $ver (not 14) disagrees; not failing:" >&2
		echo "$out" | head -20 >&2
		exit 77
	fi
	echo "$out" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (error|warning)' | cut -d: -f1 | sort -u |
		sed 's/^/not formatted: /'
	echo "check-format: run scripts/check-format.sh --fix (clang-format $ver)" >&2
	exit 1
fi
echo "check-format: ${#files[@]} files formatted as .clang-format says (clang-format $ver)"
