#!/usr/bin/env python3
"""Checks that the user's documentation points at things that exist:

  README.md   at most README_MAX lines (a newcomer's few screens; the rest
              lives in docs/)
  links       every relative link of README.md and docs/*.md (and
              docs/results/README.md) reaches a file or folder of the tree,
              and its #anchor a heading of the Markdown file it names
  paths       every path of the source tree a code span or code block names
              (config/..., test/..., tools/..., docs/..., the plugins'
              folders) exists

Usage: config/check-docs.py [SRCDIR]   (default: this file's tree)
Prints every problem and "check-docs: OK" when there is none; exits 1 on a
problem, 2 on a usage error.
"""
import os
import re
import sys

README_MAX = 250
TOP_DIRS = ("config", "test", "tools", "docs", "ompi_coll", "ompi_hook", "ompi_accel",
            "ompi_common", "ucx_tl", "common", "m4", ".ci")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`]+)`")
WORD = re.compile(r"^(?:\./)?((?:%s)/[A-Za-z0-9_./+-]*)$" % "|".join(re.escape(d) for d in TOP_DIRS))


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped but - and
    _, spaces to -."""
    text = re.sub(r"`", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen, fence = set(), {}, False
        with open(path) as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    base = slug(m.group(1))
                    n = seen.get(base, 0)
                    seen[base] = n + 1
                    found.add(base if n == 0 else "%s-%d" % (base, n))
        cache[path] = found
    return cache[path]


def docs(top):
    out = [os.path.join(top, "README.md")]
    ddir = os.path.join(top, "docs")
    out += sorted(os.path.join(ddir, f) for f in os.listdir(ddir) if f.endswith(".md"))
    results = os.path.join(ddir, "results", "README.md")
    if os.path.exists(results):
        out.append(results)
    return out


def check_file(top, path, problems):
    rel = os.path.relpath(path, top)
    base = os.path.dirname(path)
    fence = False
    with open(path) as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = not fence
            continue
        where = "%s:%d" % (rel, n)
        if not fence:
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(base, file_part)) if file_part else path
                if not os.path.exists(dest):
                    problems.append("%s: link to %s: no such file" % (where, target))
                    continue
                if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    problems.append("%s: link to %s: %s has no heading #%s"
                                    % (where, target, os.path.relpath(dest, top), anchor))
        texts = [line] if fence else SPAN.findall(line)
        for text in texts:
            for word in re.split(r"[\s=:,;()'\"]+", text):
                m = WORD.match(word.rstrip(".,:;"))
                if not m:
                    continue
                p = m.group(1).rstrip("/")
                if re.search(r"[<>*$]|\.\.\.|XX", p):
                    continue
                full = os.path.join(top, p)
                # a module by its stem: common/strata_cuda for .c and .h
                if not any(os.path.exists(full + ext) for ext in ("", ".c", ".h", ".py", ".sh")):
                    problems.append("%s: names %s, which is not in the source tree" % (where, p))


def main(argv):
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__.strip())
        return 2
    top = os.path.abspath(argv[0] if argv else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    with open(os.path.join(top, "README.md")) as f:
        n = sum(1 for _ in f)
    if n > README_MAX:
        problems.append("README.md: %d lines, more than %d (move the rest into docs/)" % (n, README_MAX))
    for path in docs(top):
        check_file(top, path, problems)
    for p in problems:
        print("check-docs: " + p)
    if problems:
        print("check-docs: %d problem(s)" % len(problems))
        return 1
    print("check-docs: OK (README.md %d lines; %d files checked)" % (n, len(docs(top))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
