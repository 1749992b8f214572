#!/usr/bin/env python3
"""Check the exported interface of the built libscsitgt.so against the public headers.

- every symbol the library exports starts with scsitgt_ (never the internal scsitgt__) and is
  declared in a public header;
- every scsitgt_ function (or SCSITGT_EXPORT object) declared in the public headers is exported;
- the SONAME is libscsitgt.so.<major>, <major> from include/libscsitgt/version.h;
- each symbol is exported in the version node src/libscsitgt.map lists it in, and the test
  hooks (LIBSCSITGT_TESTING, outside the ABI promise: docs/ABI.md) are exactly what
  include/libscsitgt/testing.h declares: no stable symbol sits in the testing node, no test
  hook in a release's node.

usage: check_abi.py LIBSCSITGT.SO SRCROOT
"""
import glob
import os
import re
import subprocess
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def declared_functions(srcroot):
    """Names of the functions declared in the public headers, and where."""
    decl = {}
    for h in sorted(glob.glob(os.path.join(srcroot, "include", "libscsitgt", "*.h"))):
        text = strip_comments(open(h, encoding="utf-8").read())
        # Drop preprocessor lines (macro bodies are not declarations).
        text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
        for m in re.finditer(r"(\(\s*\*\s*)?\b(scsitgt_\w+)\s*\(", text):
            if m.group(1):
                continue  # a function-pointer type or member, e.g. (*scsitgt_done_cb)(
            if re.search(r"\b(enum|struct|union)\s+$", text[:m.start(2)]):
                continue  # a type name before a declarator, e.g. enum scsitgt_x (*cb)(
            decl.setdefault(m.group(2), (os.path.basename(h), "function"))
        # Exported objects: "SCSITGT_EXPORT extern const T scsitgt_name[...];"
        for m in re.finditer(r"\bSCSITGT_EXPORT\b([^;(]*?)\b(scsitgt_\w+)\s*(\[[^\]]*\])?\s*;",
                             text):
            decl.setdefault(m.group(2), (os.path.basename(h), "object"))
    return decl


TESTING_NODE = "LIBSCSITGT_TESTING"
TESTING_HEADER = "testing.h"


def exported_symbols(lib):
    """{name: type} and {name: version node ("" when unversioned)} of the library's exports."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms, versions = {}, {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        typ, name = parts[-2], parts[-1]
        if typ == "A":
            continue  # symbol-version nodes of the version script
        base, _, version = name.partition("@")
        syms[base] = typ
        versions[base] = version.lstrip("@")
    return syms, versions


def map_nodes(text):
    """{symbol: version node} of the names a version script lists as global."""
    nodes = {}
    for m in re.finditer(r"\b(LIBSCSITGT_[\w.]+)\s*\{(.*?)\}", text, flags=re.S):
        body = m.group(2).split("local:")[0]
        for name in re.findall(r"^\s*(scsitgt_\w+)\s*;", body, flags=re.M):
            nodes[name] = m.group(1)
    return nodes


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    return m.group(1) if m else None


def major_version(srcroot):
    text = open(os.path.join(srcroot, "include", "libscsitgt", "version.h")).read()
    m = re.search(r"#define\s+SCSITGT_VERSION_MAJOR\s+(\d+)", text)
    return m.group(1) if m else None


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    lib, srcroot = sys.argv[1], sys.argv[2]
    errors = []

    exported, versions = exported_symbols(lib)
    declared = declared_functions(srcroot)
    print("%d exported symbols, %d functions declared in public headers"
          % (len(exported), len(declared)))

    for name in sorted(exported):
        if not name.startswith("scsitgt_") or name.startswith("scsitgt__"):
            errors.append("exported symbol without the public scsitgt_ prefix: %s (%s)"
                          % (name, exported[name]))
        elif name not in declared:
            errors.append("exported but not declared in a public header: %s" % name)
    for name in sorted(declared):
        header, kind = declared[name]
        if name not in exported:
            errors.append("declared in %s but not exported: %s" % (header, name))
        elif kind == "function" and exported[name] not in ("T", "W", "i"):
            errors.append("%s is declared as a function but exported as type %s"
                          % (name, exported[name]))
        elif kind == "object" and exported[name] not in ("D", "B", "R", "V", "G", "S"):
            errors.append("%s is declared as an object but exported as type %s"
                          % (name, exported[name]))

    # The version script lists every export by name (docs/ABI.md): no wildcard may slip a
    # symbol out, and no listed name may be missing from the library.
    mapfile = os.path.join(srcroot, "src", "libscsitgt.map")
    listed = set(re.findall(r"^\s*(scsitgt_\w+)\s*;", strip_comments(open(mapfile).read()),
                            flags=re.M))
    for name in sorted(set(exported) - listed):
        errors.append("exported but not listed in src/libscsitgt.map: %s" % name)
    for name in sorted(listed - set(exported)):
        errors.append("listed in src/libscsitgt.map but not exported: %s" % name)
    if re.search(r"scsitgt_\w*\*", open(mapfile).read()):
        errors.append("src/libscsitgt.map uses a wildcard for exports")

    # Version nodes: each export carries the node the map lists it in; the testing node holds
    # the test hooks of testing.h and nothing else (docs/ABI.md).
    nodes = map_nodes(strip_comments(open(mapfile).read()))
    for name in sorted(set(exported) & set(nodes)):
        if versions.get(name) != nodes[name]:
            errors.append("%s is exported in version node '%s', src/libscsitgt.map lists it "
                          "in %s" % (name, versions.get(name), nodes[name]))
    for name in sorted(declared):
        in_testing_header = declared[name][0] == TESTING_HEADER
        in_testing_node = nodes.get(name) == TESTING_NODE
        if in_testing_header and name in nodes and not in_testing_node:
            errors.append("test hook %s (testing.h) is in the stable node %s, not %s"
                          % (name, nodes[name], TESTING_NODE))
        elif in_testing_node and not in_testing_header:
            errors.append("%s is in %s but declared in %s, not testing.h"
                          % (name, TESTING_NODE, declared[name][0]))
    for name in sorted(n for n, v in nodes.items() if v == TESTING_NODE):
        if name not in declared:
            errors.append("%s is in %s but declared in no header" % (name, TESTING_NODE))
    print("%d test hooks in %s" % (sum(v == TESTING_NODE for v in nodes.values()),
                                   TESTING_NODE))

    major = major_version(srcroot)
    so = soname(lib)
    want = "libscsitgt.so.%s" % major
    if so != want:
        errors.append("SONAME is %s, expected %s" % (so, want))
    else:
        print("SONAME %s" % so)

    for e in errors:
        print("ERROR " + e)
    print("abi: %s" % ("FAIL" if errors else "ok"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
