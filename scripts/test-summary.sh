#!/usr/bin/env bash
# One line totalling the tests of a `cargo test` log: "N passed, N failed",
# followed, when some test binaries ended without a result line (a crash, or
# a build that failed), by how many and which.
#
# A section of the log starts at a `Running ...` line (a test binary) or a
# `Doc-tests NAME` line (a library's doc tests, which have no `Running`
# line), and is finished by its `test result:` line. Counting the two kinds
# of lines over the whole log instead would let a doc-test section's result
# line hide a binary that crashed before it.
#
# Usage: scripts/test-summary.sh LOG
set -euo pipefail
log=$1
awk '
    function close_section() {
        if (open && !finished) {
            missing++
            names = names (missing > 1 ? "; " : "") name
        }
        open = 0
    }
    /^ +Running / || /^ +Doc-tests / {
        close_section()
        name = $0
        sub(/^ +(Running +)?/, "", name)
        open = 1; finished = 0; sections++
        next
    }
    /^test result:/ {
        finished = 1
        for (i = 1; i < NF; i++) {
            n = $i + 0
            if ($(i + 1) ~ /^passed/) passed += n
            if ($(i + 1) ~ /^failed/) failed += n
        }
    }
    END {
        close_section()
        line = (passed + 0) " passed, " (failed + 0) " failed"
        if (missing > 0)
            line = line ", " missing " of " sections " test binaries gave no result: " names
        print line
    }
' "$log"
