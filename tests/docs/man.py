#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""man.py SRCDIR [--minitarget EXE] [--scsitgtd EXE] [--scsitgtctl EXE]
man.py --links SRCDIR

--links prints "FUNCTION PAGE" for every function in the SYNOPSIS of a section 3 page (meson
installs FUNCTION.3 as a link to PAGE.3, so that `man FUNCTION` works). Otherwise it is
the 'man' test (suite 'docs') of the manual pages in docs/man, so that they cannot drift from
the code:
  - groff renders every page without a warning (-ww);
  - the SYNOPSIS of the section 3 pages lists every function the public headers export, each
    once, with the prototype the header has (whitespace aside), and nothing else;
  - minitarget.8 names every option `minitarget --help` prints, scsitgtd.8 every option of
    scsitgtd's usage and every section and key its configuration parser knows
    (examples/scsitgtd_config_keys.c), scsitgtctl.8 every option of its usage and every verb
    it dispatches (examples/scsitgtctl.c).
A program that was not built is left out (with a note); without groff the test is skipped.
"""
import glob
import os
import re
import shutil
import subprocess
import sys


def fail(msgs):
    for m in msgs:
        print('man.py: ' + m, file=sys.stderr)
    sys.exit(1)


def strip_comments(text):
    return re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)


def norm(decl):
    decl = ' '.join(decl.split())
    return decl.replace('( ', '(').replace(' )', ')').replace(' ;', ';')


def header_decls(incdir):
    """{normalized prototype: header} of every SCSITGT_EXPORT declaration."""
    out = {}
    for h in sorted(glob.glob(os.path.join(incdir, '*.h'))):
        text = strip_comments(open(h, encoding='utf-8').read())
        for m in re.finditer(r'^SCSITGT_EXPORT\s(.*?);', text, flags=re.S | re.M):
            d = re.sub(r'SCSITGT_PRINTF\([^)]*\)', '', m.group(1))
            d = re.sub(r'SCSITGT_DEPRECATED(\([^)]*\))?', '', d)
            out[norm(d + ';')] = os.path.basename(h)
    return out


def synopsis_decls(page):
    """The prototypes in the SYNOPSIS of a section 3 page (its non-request lines)."""
    lines, inside = [], False
    for line in open(page, encoding='utf-8'):
        if line.startswith('.SH'):
            inside = line.split()[1:2] == ['SYNOPSIS']
            continue
        if inside and not line.startswith('.'):
            lines.append(line)
    text = strip_comments(''.join(lines))
    text = re.sub(r'Compile and link with.*', '', text, flags=re.S)
    return [norm(d + ';') for d in text.split(';') if d.strip()]


def roff_text(page):
    """The page's source with roff's escaped minus and space made plain."""
    text = open(page, encoding='utf-8').read()
    return text.replace('\\-', '-').replace('\\ ', ' ').replace('\\e', '\\')


def has_word(text, word):
    return re.search(r'(?<![\w-])' + re.escape(word) + r'(?![\w-])', text) is not None


def help_options(cmd):
    """Every -x / --long option in the usage a program prints for --help (stdout or stderr)."""
    r = subprocess.run(cmd + ['--help'], capture_output=True, text=True, timeout=60)
    text = r.stdout + r.stderr
    if 'usage' not in text:
        fail(['%s --help printed no usage' % cmd[0]])
    opts = set(re.findall(r'(?<![\w-])(--?[a-z][a-z0-9-]*)', text))
    opts.discard('--help')  # the usage's own option, where the usage names it
    return sorted(opts)


def print_links(src):
    for p in sorted(glob.glob(os.path.join(src, 'docs', 'man', '*.3'))):
        page = os.path.basename(p)[:-2]
        for d in synopsis_decls(p):
            m = re.search(r'\b(scsitgt_\w+)\(', d)
            if m and m.group(1) != page:
                print(m.group(1), page)


def main():
    args = sys.argv[1:]
    if args[:1] == ['--links']:
        print_links(args[1])
        return
    src = args.pop(0)
    exes = {}
    for flag, exe in zip(args[0::2], args[1::2]):
        exes[flag.lstrip('-')] = exe
    mandir = os.path.join(src, 'docs', 'man')
    groff = shutil.which('groff')
    if groff is None:
        print('groff not installed (scripts/install-deps.sh installs it): skipped')
        sys.exit(77)
    errors = []
    pages = sorted(glob.glob(os.path.join(mandir, '*.[38]')))
    if not pages:
        fail(['no pages in ' + mandir])

    # 1. Every page renders without a warning.
    for p in pages:
        r = subprocess.run([groff, '-man', '-Tutf8', '-ww', '-z', p], capture_output=True,
                           text=True, timeout=60)
        if r.returncode != 0 or r.stderr.strip():
            errors.append('%s: groff: %s' % (os.path.basename(p), r.stderr.strip() or r.returncode))

    # 2. Section 3: the SYNOPSIS lines are the headers' exported prototypes, each once.
    want = header_decls(os.path.join(src, 'include', 'libscsitgt'))
    seen = {}
    for p in pages:
        if not p.endswith('.3'):
            continue
        for d in synopsis_decls(p):
            name = os.path.basename(p)
            if d not in want:
                errors.append('%s: SYNOPSIS declares what no header exports: %s' % (name, d))
            elif d in seen:
                errors.append('%s: %s is also in %s' % (name, d, seen[d]))
            else:
                seen[d] = name
    for d, h in sorted(want.items(), key=lambda x: x[1]):
        if d not in seen:
            errors.append('no section 3 SYNOPSIS has %s (%s): add it to the page of its object'
                          % (d, h))

    # 3. Section 8: the options each program prints, and scsitgtd's keys, scsitgtctl's verbs.
    def check_words(page, words, what):
        text = roff_text(os.path.join(mandir, page))
        for w in words:
            if not has_word(text, w):
                errors.append('%s does not name %s %s' % (page, what, w))

    if 'minitarget' in exes:
        check_words('minitarget.8', help_options([exes['minitarget']]), 'the option')
    else:
        print('minitarget not built: its options are not checked')
    if 'scsitgtd' in exes:
        check_words('scsitgtd.8', help_options([exes['scsitgtd']]), 'the option')
    else:
        print('scsitgtd not built: its options are not checked')
    keys_c = open(os.path.join(src, 'examples', 'scsitgtd_config_keys.c'), encoding='utf-8').read()
    keys = set(re.findall(r'\{ "([a-z0-9_]+)", k_', keys_c))
    keys |= set(re.findall(r'\] = \{ "([a-z0-9_]+)", PK_', keys_c))
    sections = set(re.findall(r'\{ "\[([a-z_]+)\]", ', keys_c))
    if len(keys) < 20 or len(sections) < 5:
        errors.append('scsitgtd_config_keys.c: found only %d keys and %d sections: update man.py'
                      % (len(keys), len(sections)))
    check_words('scsitgtd.8', sorted(keys), 'the configuration key')
    text = roff_text(os.path.join(mandir, 'scsitgtd.8'))
    for s in sorted(sections):
        if not re.search(r'\[' + s + r'( N)?\]', text):
            errors.append('scsitgtd.8 does not name the section [%s]' % s)
    if 'scsitgtctl' in exes:
        check_words('scsitgtctl.8', help_options([exes['scsitgtctl']]), 'the option')
    else:
        print('scsitgtctl not built: its options are not checked')
    ctl_c = open(os.path.join(src, 'examples', 'scsitgtctl.c'), encoding='utf-8').read()
    verbs = sorted(set(re.findall(r'strcmp\(verb, "([a-z-]+)"\)', ctl_c)))
    if len(verbs) < 5:
        errors.append('scsitgtctl.c: found only %d verbs: update man.py' % len(verbs))
    check_words('scsitgtctl.8', verbs, 'the verb')

    if errors:
        fail(errors)
    print('man: %d pages render cleanly; %d exported functions in section 3; options, keys '
          'and verbs all named' % (len(pages), len(want)))


if __name__ == '__main__':
    main()
