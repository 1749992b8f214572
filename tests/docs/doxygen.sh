#!/bin/sh
# doxygen.sh DOXYGEN DOXYFILE - the 'docs' test: build the Doxygen HTML of the public headers
# (docs/Doxyfile.in) and fail on any warning about them: an undocumented declaration, member or
# parameter, a @param naming no parameter, a link that does not resolve. Warnings about the
# Markdown pages (docs/*.md, README.md) are printed but do not fail the test; warnings without
# a location (a broken Doxyfile) do.
set -eu
doxygen=$1
doxyfile=$2
log=$(sed -n 's/^WARN_LOGFILE *= *//p' "$doxyfile")
[ -n "$log" ] || { echo "doxygen.sh: no WARN_LOGFILE in $doxyfile" >&2; exit 1; }
rm -f "$log"
"$doxygen" "$doxyfile" || { echo "doxygen.sh: doxygen failed" >&2; exit 1; }
[ -f "$log" ] || { echo "doxygen.sh: doxygen wrote no $log" >&2; exit 1; }
if [ ! -s "$log" ]; then
	echo "doxygen: no warnings"
	exit 0
fi
cat "$log" >&2
# A message starts at a line with "warning:" or "error:"; continuation lines are indented.
bad=$(grep -E '(warning|error):' "$log" | grep -Ev '\.md:[0-9]+: ' || true)
if [ -n "$bad" ]; then
	echo "doxygen.sh: $(printf '%s\n' "$bad" | wc -l) warning(s) about the public API (above)" >&2
	exit 1
fi
echo "doxygen: only Markdown warnings (above)"
