#!/bin/bash
# compare.sh RECORD ANSWERS: do a driver's answers (cuda_conformance --out ANSWERS) agree
# with a record of what the CUDA driver answers (driver-documented.txt, conformance-real-*.txt)?
#
# Both files hold `key value` lines; `#` lines and blank lines are comments. Every key of the
# record whose value is not `?` must be answered alike; `error` in the record matches any
# `error:NAME`. Prints each difference as `key: driver says X, got Y` and exits 1 on any;
# otherwise prints `conformance: N answers agree, M not recorded` (M: answers whose key the
# record leaves `?` or does not have) and exits 0. Exit 2: usage, or a file missing.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 RECORD ANSWERS" >&2
    exit 2
fi
for f in "$1" "$2"; do
    [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 2; }
done

awk '
    /^[ \t]*(#|$)/ { next }
    FNR == NR { record[$1] = $2; order[++nrecord] = $1; next }
    { answer[$1] = $2; answers[++nanswers] = $1 }
    END {
        agree = 0; differ = 0; unrecorded = 0
        for (i = 1; i <= nrecord; ++i) {
            key = order[i]; want = record[key]
            if (want == "?") continue
            got = (key in answer) ? answer[key] : "nothing"
            if (got == want || (want == "error" && got ~ /^error:/)) {
                ++agree
            } else {
                printf "%s: driver says %s, got %s\n", key, want, got
                ++differ
            }
        }
        for (i = 1; i <= nanswers; ++i) {
            key = answers[i]
            if (!(key in record) || record[key] == "?") ++unrecorded
        }
        if (differ > 0) {
            printf "conformance: %d answers differ, %d agree, %d not recorded\n", differ, agree, unrecorded
            exit 1
        }
        printf "conformance: %d answers agree, %d not recorded\n", agree, unrecorded
    }
' "$1" "$2"
