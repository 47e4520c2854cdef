#!/usr/bin/env bash
# Builds native/test/btree_test.cc with ASan + UBSan into a temporary directory and runs it.
# Extra arguments are passed to the test (e.g. the large tree size).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# Two builds: CE_TUPLE_MALLOC makes every node its own operator new, so ASan sees each node and
# the injected bad_alloc reaches every node allocation; the default build runs the node pool.
for mode in per-node pool; do
  defines=""
  [ "$mode" = per-node ] && defines="-DCE_TUPLE_MALLOC"
  "${CXX:-g++}" -std=c++17 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
    -fno-sanitize-recover=undefined -Wall -Wextra -Werror $defines \
    -I "$here/../engine" "$here/btree_test.cc" -o "$out/btree_test"
  echo "btree_test ($mode nodes)"
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$out/btree_test" "$@"
done
