#!/usr/bin/env python3
"""Checks the source tree's structure rules (docs/design.md, "Where things
are"), from the code's own #include lines and names, so that a change that
breaks one fails CI instead of slowly tangling the tree:

  ompi_coll   its rooms (folders) include only rooms below them, in the
              order ROOMS gives; engine/ never names the module
              (mca_coll_strata_module_t); no source over MAX_LINES lines;
              coll_strata.h at most HEADER_LINES lines
  plugins     ompi_hook/ and ompi_accel/ include nothing of ompi_coll/
  ucx_tl      gpu_copy/ and gpu_ipc/ include and call nothing of each other

Usage: config/check-structure.py [SRCDIR]   (default: this file's tree)
Prints every violation, and "check-structure: OK" when there is none; exits
1 on a violation, 2 on a usage error.
"""
import os
import re
import sys

# ompi_coll's rooms from the top down: a room may include its own headers and
# those of rooms after it, never one before it ("." is the top: the
# component and the module's life).
ROOMS = [".", "colls", "staging", "comm", "engine", "base", "logic"]
MAX_LINES = 700
HEADER_LINES = 300
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(top, exts=(".c", ".h", ".cu")):
    for dirpath, _, files in os.walk(top):
        for name in sorted(files):
            if name.endswith(exts):
                yield os.path.join(dirpath, name)


def room_of(path, coll):
    rel = os.path.relpath(path, coll)
    head = rel.split(os.sep)[0]
    return "." if head == rel else head


def check_ompi_coll(src, say):
    coll = os.path.join(src, "ompi_coll")
    for path in sources(coll):
        rel = os.path.relpath(path, src)
        text = open(path, encoding="utf-8", errors="replace").read()
        nlines = text.count("\n")
        room = room_of(path, coll)
        if room not in ROOMS:
            say(f"{rel}: folder '{room}' is not one of ompi_coll's rooms {ROOMS}")
            continue
        if path.endswith((".c", ".cu")) and nlines > MAX_LINES:
            say(f"{rel}: {nlines} lines (a source of ompi_coll has at most {MAX_LINES})")
        if rel == os.path.join("ompi_coll", "coll_strata.h") and nlines > HEADER_LINES:
            say(f"{rel}: {nlines} lines (at most {HEADER_LINES})")
        if room == "engine" and re.search(r"\bmca_coll_strata_module_t\b", text):
            say(f"{rel}: engine/ names the module (mca_coll_strata_module_t): "
                "engine functions take the engine and the settings")
        for inc in INCLUDE.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            if not os.path.exists(target):
                continue  # Open MPI's, common/'s (found through -I)
            if not target.startswith(coll + os.sep):
                continue
            to = room_of(target, coll)
            if to in ROOMS and ROOMS.index(to) < ROOMS.index(room):
                say(f"{rel}: includes {inc}: room {room}/ may include only rooms "
                    f"below it ({', '.join(r + '/' for r in ROOMS[ROOMS.index(room) + 1:])})")


def check_plugins(src, say):
    for plugin in ("ompi_hook", "ompi_accel"):
        for path in sources(os.path.join(src, plugin)):
            text = open(path, encoding="utf-8", errors="replace").read()
            for inc in INCLUDE.findall(text):
                if inc.startswith("ompi_coll/") or "/ompi_coll/" in inc:
                    say(f"{os.path.relpath(path, src)}: includes {inc}: {plugin}/ includes "
                        "nothing of ompi_coll/")


def defined_names(path):
    """Functions a C source defines at file scope (a line that starts with a
    return type and ends in the name and its parameters, then '{')."""
    text = open(path, encoding="utf-8", errors="replace").read()
    return set(re.findall(r"^[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\n\{", text, re.M))


def check_ucx_siblings(src, say):
    tl = os.path.join(src, "ucx_tl")
    sib = {"gpu_copy": os.path.join(tl, "gpu_copy"), "gpu_ipc": os.path.join(tl, "gpu_ipc")}
    if not all(os.path.isdir(d) for d in sib.values()):
        return
    names = {k: set() for k in sib}
    for k, d in sib.items():
        for path in sources(d, (".c",)):
            # (an upper-case name is a macro that defines a function, as
            # UCS_CLASS_INIT_FUNC does: not the sibling's own name)
            names[k] |= {n for n in defined_names(path) if not n.isupper()}
    for k, d in sib.items():
        other = "gpu_ipc" if k == "gpu_copy" else "gpu_copy"
        for path in sources(d):
            rel = os.path.relpath(path, src)
            text = open(path, encoding="utf-8", errors="replace").read()
            for inc in INCLUDE.findall(text):
                target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
                if (os.sep + other + os.sep) in target or inc.startswith(other + "/"):
                    say(f"{rel}: includes {inc}: {k}/ and {other}/ include nothing of each other")
            for name in sorted(names[other]):
                if re.search(r"\b%s\s*\(" % re.escape(name), text):
                    say(f"{rel}: calls {name} ({other}/): {k}/ and {other}/ call nothing of "
                        "each other (what both need lives in base/ or common/)")


def main(argv):
    if len(argv) > 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(src, "ompi_coll")):
        print(f"check-structure: {src} is not Strata's source tree", file=sys.stderr)
        return 2
    found = []
    say = found.append
    check_ompi_coll(src, say)
    check_plugins(src, say)
    check_ucx_siblings(src, say)
    for line in found:
        print("check-structure: " + line)
    if found:
        print(f"check-structure: {len(found)} violation(s)")
        return 1
    print("check-structure: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
