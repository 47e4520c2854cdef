#!/usr/bin/env bash
# Builds every native/test/*_test.cc with ASan + UBSan into a temporary directory and runs it.
# Each test links the engine's .cc files directly (plain C++, no N-API). Extra arguments go to
# btree_test (e.g. the large tree size).
#
#   bash native/test/run.sh [--quick] [--only name,name] [btree_test args...]
#
# --quick: no sanitizers, -O1, only the production allocators (the pool build): what `npm test`
# (test/native-engine.test.ts) and `npm run mutate` run; CI keeps the sanitizer runs.
# --one-mode: sanitizers kept, only the per-node build (every tuple its own malloc, so ASan sees
# each one): what `npm run mutate` runs for the mutants that only a sanitizer can see.
# --only: only these tests (e.g. --only msgpack_test,btree_test).
set -euo pipefail

quick=0
one_mode=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --one-mode) one_mode=1; shift ;;
    --only) only=",$2,"; shift 2 ;;
    *) break ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
engine="$here/../engine"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

flags=(-std=c++17 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
       -Wall -Wextra -Werror -I "$engine")
modes=(per-node pool)
[ "$one_mode" = 1 ] && modes=(per-node)
if [ "$quick" = 1 ]; then
  flags=(-std=c++17 -O1 -Wall -Wextra -Werror -I "$engine")
  modes=(pool)
fi
export CAPPED_EXPIRATIOND_HASH_SEED="${CAPPED_EXPIRATIOND_HASH_SEED:-0}"  # the HASH orders of every run alike (key_def.cc)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Two builds: CE_TUPLE_MALLOC makes every tuple, node and table its own allocation, so ASan sees
# each one and an injected bad_alloc reaches every allocation; the default build runs the
# production allocators (tuple arena, node pool, huge-page tables).
for mode in "${modes[@]}"; do
  defines=()
  [ "$mode" = per-node ] && defines=(-DCE_TUPLE_MALLOC)
  mkdir -p "$out/$mode"
  objs=()
  pids=()
  while IFS= read -r src; do
    obj="$out/$mode/$(echo "${src#$engine/}" | tr / _).o"
    "${CXX:-g++}" "${flags[@]}" "${defines[@]}" -c "$src" -o "$obj" &
    pids+=($!)
    objs+=("$obj")
  done < <(find "$engine" -name '*.cc' | sort)
  for pid in "${pids[@]}"; do wait "$pid"; done
  for test in "$here"/*_test.cc; do
    name="$(basename "$test" .cc)"
    if [ -n "$only" ] && [[ "$only" != *",$name,"* ]]; then continue; fi
    if [ "$name" = btree_test ]; then
      "${CXX:-g++}" "${flags[@]}" "${defines[@]}" "$test" -o "$out/$mode/$name"
      echo "$name ($mode)"
      "$out/$mode/$name" "$@"
    else
      "${CXX:-g++}" "${flags[@]}" "${defines[@]}" "$test" "${objs[@]}" -o "$out/$mode/$name"
      echo "$name ($mode)"
      "$out/$mode/$name"
      # Big mappings take 4 KiB pages unless the environment asks for huge ones: both ways.
      if [ "$name" = background_test ]; then
        echo "$name ($mode, CAPPED_EXPIRATIOND_HUGE_PAGES=1)"
        CAPPED_EXPIRATIOND_HUGE_PAGES=1 "$out/$mode/$name"
      fi
    fi
  done
done
