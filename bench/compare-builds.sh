#!/usr/bin/env bash
# Two pathprof builds give the same outputs (issue 28: a restructuring changes
# no byte): every C fixture and suite program instrumented in every mode by
# both, and the fixtures' profiles of every mode (written as JSON), compared
# byte for byte. Prints one line per difference and a count; exit 1 on any.
#
#   bash bench/compare-builds.sh OLD_PATHPROF NEW_PATHPROF
#
# Needs the C fixtures (scripts/build-c-fixtures.sh); the suite programs in
# target/bench-wasm are used when built (bench/build-suite.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
old="$1" new="$2"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
modules=(tests/fixtures/c/build/*.wasm)
for w in "${CARGO_TARGET_DIR:-target}"/bench-wasm/*.wasm; do [[ -f $w ]] && modules+=("$w"); done
modes=(path edge ppp context piecewise intra-context)
same=0 differ=0 refused=0
compare() { # label file-old file-new
    if ! cmp -s "$2" "$3"; then differ=$((differ + 1)); echo "differs: $1"
    elif [[ $(head -c 6 "$2" | tr -d '\0') == failed ]]; then refused=$((refused + 1))
    else same=$((same + 1)); fi
}
for m in "${modules[@]}"; do
    name="$(basename "$m" .wasm)"
    "$old" run -o "$out/$name.tested.json" "$m" >/dev/null 2>&1 || true
    for mode in "${modes[@]}"; do
        extra=()
        [[ $mode == ppp ]] && extra=(--interesting "$out/$name.tested.json")
        [[ $mode == ppp && ! -s $out/$name.tested.json ]] && continue
        for b in old new; do
            bin="$old"; [[ $b == new ]] && bin="$new"
            "$bin" instrument --mode "$mode" "${extra[@]}" -o "$out/$name.$mode.$b.wasm" "$m" >/dev/null 2>&1 || echo failed >"$out/$name.$mode.$b.wasm"
            if [[ $m == tests/fixtures/* ]]; then
                "$bin" run --mode "$mode" "${extra[@]}" -o "$out/$name.$mode.$b.json" "$m" >/dev/null 2>&1 || true
            fi
        done
        compare "$name $mode module" "$out/$name.$mode.old.wasm" "$out/$name.$mode.new.wasm"
        [[ $m == tests/fixtures/* ]] && compare "$name $mode profile" "$out/$name.$mode.old.json" "$out/$name.$mode.new.json"
    done
done
echo "compare-builds: $same outputs identical, $differ differ, $refused refused by both"
((differ == 0))
