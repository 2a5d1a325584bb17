#!/usr/bin/env bash
# Checks that the C sources a change touches follow .clang-format: only the
# lines the change adds or modifies (clang-format --lines, one range per diff
# hunk), so code the change leaves alone never fails the check.  Prints the
# diff clang-format would make and exits 1 on a violation.
#
# Usage: config/check-format.sh [--worktree] [BASE]
#   BASE..HEAD (the committed change; file contents as of HEAD).  BASE: the
#     argument, else $STRATA_FORMAT_BASE, else the merge-base with origin/main
#     (HEAD~1 when HEAD is on origin/main), else HEAD~1.
#   --worktree  the working tree against HEAD instead: staged and unstaged
#     changes, and untracked (not ignored) sources as a whole.
# Environment: CLANG_FORMAT, the clang-format to run (default clang-format;
# .clang-format is tuned for clang-format 14, whose output other versions can
# differ from).
# Exit: 0 clean, or nothing to check, or no clang-format (a skip, said so);
#       1 a violation; 2 a usage or git error.
#
# To fix: git clang-format --style=file BASE   (the changed lines only), or
#         clang-format -i --style=file FILE     (a whole file).
set -uo pipefail

say() { echo "check-format: $*"; }
die() { echo "check-format: $*" >&2; exit 2; }

worktree=no base_arg=""
while [ $# -gt 0 ]; do
    case "$1" in
    --worktree) worktree=yes; shift ;;
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (usage: $0 [--worktree] [BASE])" ;;
    *) [ -z "$base_arg" ] || die "one BASE at most"; base_arg=$1; shift ;;
    esac
done

CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
    say "SKIP: $CLANG_FORMAT not found, nothing checked (install it: config/setup-deps.sh, or apt-get install clang-format)"
    exit 0
fi

srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$srcdir" || die "cannot enter $srcdir"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    say "SKIP: $srcdir is not a git checkout, no change to check"
    exit 0
fi
[ -f .clang-format ] || die "no .clang-format in $srcdir"

commit_of() { git rev-parse -q --verify "$1^{commit}" 2>/dev/null; }

# The two sides: `old` is a commit; `new` is HEAD, or the working tree.
if [ $worktree = yes ]; then
    [ -z "$base_arg" ] || die "--worktree compares with HEAD; give no BASE"
    old=$(commit_of HEAD) || { say "no commit yet, nothing to compare with"; exit 0; }
    what="the working tree against HEAD"
else
    head=$(commit_of HEAD) || { say "no commit yet, nothing to compare with"; exit 0; }
    base=${base_arg:-${STRATA_FORMAT_BASE:-}}
    if [ -n "$base" ]; then
        old=$(commit_of "$base") || die "base '$base' is not a commit"
    elif upstream=$(commit_of origin/main) && old=$(git merge-base "$upstream" "$head" 2>/dev/null) \
            && [ "$old" != "$head" ]; then
        base="merge-base with origin/main"
    elif old=$(commit_of HEAD~1); then
        base="HEAD~1"
    else
        say "SKIP: no base commit to compare with (a single commit, or a shallow clone); set STRATA_FORMAT_BASE"
        exit 0
    fi
    what="$base ($(git rev-parse --short "$old"))..HEAD"
fi

# diff_args: git diff's arguments for the change (after `git diff`).
if [ $worktree = yes ]; then diff_args=("$old"); else diff_args=("$old" "$head"); fi

# Changed C sources, deleted ones left out; in the working tree, untracked
# ones too (every line of them is new).
mapfile -t files < <(git diff --name-only --diff-filter=d "${diff_args[@]}" -- '*.c' '*.h')
untracked=()
if [ $worktree = yes ]; then
    mapfile -t untracked < <(git ls-files --others --exclude-standard -- '*.c' '*.h')
    files+=("${untracked[@]}")
fi
if [ ${#files[@]} -eq 0 ]; then
    say "no C sources changed in $what"
    exit 0
fi

# content FILE: the file as the change leaves it
content() {
    if [ $worktree = yes ]; then cat -- "$1"; else git show "$head:$1"; fi
}

# line_args FILE: one --lines=FIRST:LAST per hunk that adds lines (a hunk
# that only deletes leaves nothing new to check)
line_args() {
    local f=$1 u
    for u in "${untracked[@]}"; do
        if [ "$u" = "$f" ]; then echo "--lines=1:2147483647"; return; fi
    done
    git diff -U0 --no-color --no-ext-diff "${diff_args[@]}" -- "$f" \
        | sed -n 's/^@@ -[0-9,]* +\([0-9]*\)\(,\([0-9]*\)\)\{0,1\} @@.*/\1 \3/p' \
        | awk '{ n = ($2 == "") ? 1 : $2; if (n > 0) printf "--lines=%d:%d\n", $1, $1 + n - 1 }'
}

tmp=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
say "$("$CLANG_FORMAT" --version | head -n 1); checking the changed lines of ${#files[@]} file(s) in $what"

nbad=0 nchecked=0
for f in "${files[@]}"; do
    mapfile -t lines < <(line_args "$f")
    [ ${#lines[@]} -gt 0 ] || continue
    nchecked=$((nchecked + 1))
    content "$f" >"$tmp/orig" || die "cannot read $f"
    # --assume-filename: the .clang-format that applies is the one nearest to
    # the file (some directories have their own).
    if "$CLANG_FORMAT" --style=file --assume-filename="$f" --dry-run --Werror "${lines[@]}" \
            <"$tmp/orig" >/dev/null 2>&1; then
        continue
    fi
    "$CLANG_FORMAT" --style=file --assume-filename="$f" "${lines[@]}" <"$tmp/orig" >"$tmp/formatted" \
        || die "clang-format failed on $f"
    nbad=$((nbad + 1))
    echo
    say "$f: the changed lines are not formatted as .clang-format says; clang-format would change:"
    diff -u --label "a/$f" --label "b/$f" "$tmp/orig" "$tmp/formatted"
done

echo
if [ $nbad -gt 0 ]; then
    say "FAIL: $nbad of $nchecked file(s) need formatting (the diffs above)."
    if [ $worktree = yes ]; then
        say "fix: git clang-format --style=file -f    (the changed lines of tracked files, in place), or clang-format -i --style=file FILE"
    else
        say "fix: git clang-format --style=file $(git rev-parse --short "$old")    (then amend), or clang-format -i --style=file FILE"
    fi
    exit 1
fi
say "OK: the changed lines of $nchecked file(s) are formatted"
exit 0
