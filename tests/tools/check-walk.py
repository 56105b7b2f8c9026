#!/usr/bin/env python3
"""README's source walk against the tree.

Reads the tables of README.md's "A walk through the source": each
directory's table (after a bold "`DIR/`: ..." line) names its files in
the first column, relative to that directory ("testing/x.c" sets the
subdirectory for the names after it in the same cell); the "Everything
else" table names paths from the top.  Fails, listing them, when a
source file of a walked directory is not in its table, or when a table
names a file that does not exist.

    check-walk.py SRCDIR

The files are git's when SRCDIR is a checkout (so build output and
stray files do not count), else every file under the directories.
"""
import os
import re
import subprocess
import sys

WALKED = ("lib", "server", "common", "admin", "nbd-plugin", "docs")
SOURCE = re.compile(r"\.(c|h|syms|md)$")


def tracked(srcdir):
    try:
        out = subprocess.run(["git", "-C", srcdir, "ls-files", *WALKED],
                             check=True, capture_output=True, text=True)
        files = out.stdout.split()
        if files:
            return set(files)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = set()
    for top in WALKED:
        for root, _, names in os.walk(os.path.join(srcdir, top)):
            for n in names:
                found.add(os.path.relpath(os.path.join(root, n), srcdir))
    return found


def walk_names(readme):
    text = open(readme, encoding="utf-8").read()
    start = text.index("### A walk through the source")
    end = text.index("\n## ", start)
    named = set()
    base = None
    for line in text[start:end].splitlines():
        m = re.match(r"\*\*`([^`]+/)`", line)
        if m:
            base = m.group(1)
            continue
        if line.startswith("**Everything else**"):
            base = ""
            continue
        if base is None or not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        sub = ""
        for name in re.findall(r"`([^`]+)`", cell):
            if base and "/" in name.rstrip("/"):
                sub = name.rsplit("/", 1)[0] + "/"
                name = name.rsplit("/", 1)[1]
            if name.endswith("/"):
                continue
            named.add(base + sub + name)
    return named


def main():
    srcdir = sys.argv[1] if len(sys.argv) > 1 else "."
    named = walk_names(os.path.join(srcdir, "README.md"))
    files = {f for f in tracked(srcdir) if SOURCE.search(f)}
    missing = sorted(f for f in files if f not in named)
    stale = sorted(n for n in named if SOURCE.search(n) and
                   not os.path.exists(os.path.join(srcdir, n)))
    for f in missing:
        print("not in README's source walk: %s" % f)
    for n in stale:
        print("README's source walk names a file that does not exist: %s"
              % n)
    if missing or stale:
        return 1
    print("source walk: %d files, all named" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
