#!/usr/bin/env bash
# npm run test:asan [-- <vitest args>]
# bash scripts/test-asan.sh [--self-test] [<vitest args>...]
#
# Runs the whole vitest suite against an AddressSanitizer + UndefinedBehaviorSanitizer build of
# the addon, loaded into the ordinary (uninstrumented) node with gcc's libasan preloaded.
#
#  1. Builds the addon with CE_SANITIZE=1 (binding.gyp then adds -fsanitize=address,undefined,
#     -fno-omit-frame-pointer and CE_TUPLE_MALLOC, so every tuple is its own malloc block and a
#     use after free is seen) into build-asan/, a staging project holding a copy of binding.gyp
#     and a snapshot of native/. build/ is never written: the script checks afterwards that
#     build/Release/capped_expirationd.node is unchanged (or, if a concurrent `npm run
#     build:native` replaced it, that it is not instrumented).
#  2. Builds dist/ (tsc), as `npm test` does, so no test has to build it under the sanitizer.
#  3. Runs vitest with CAPPED_EXPIRATIOND_ADDON pointing at the sanitizer build (src/native/loader.ts
#     loads it; child processes and worker threads inherit it), LD_PRELOAD=libasan, leak
#     checking on (suppressions: scripts/lsan.supp, Node/V8/third-party allocations only), every
#     report written to build-asan/reports/run-<pid>/ (log_path), next to a proc.<pid> file per
#     node process naming it (and, for a fork, its test files). Extra arguments go to vitest
#     unchanged, e.g.
#       bash scripts/test-asan.sh test/space.test.ts --reporter=json --outputFile=asan.json
#  4. Fails when vitest fails, when any report file is non-empty (a leak found at the exit of a
#     process, or an error in a child process whose exit status nobody checked), or when the
#     output holds a sanitizer report (UBSan ignores log_path next to ASan and writes to stderr).
#
# Vitest forks: vitest stops a fork with SIGTERM, which kills it before LeakSanitizer runs (it
# runs at exit()). So each fork gets build-asan/fork-exit.cjs preloaded (--execArgv=--require):
# once the fork has reported 'stopped' it closes its IPC channel and exits naturally, which runs
# Node's environment teardown (so the addon's finalizers and cleanup hooks run under ASan too)
# and then the leak check; SIGTERM is ignored from then on, and if something keeps the event loop
# alive the fork calls process.exit() after 200 ms. vitest's SIGKILL, 500 ms after its SIGTERM,
# is deferred (build-asan/vitest-main.cjs, preloaded into vitest) so that it cannot cut the leak
# check short. A fork that aborts on an ASan/UBSan error during the run makes vitest fail with
# "Worker exited unexpectedly", and its report is on disk.
#
# --self-test: instead of the suite, proves the harness catches errors: a deliberate leak and a
# deliberate use-after-free (in a plain node process and in a vitest fork) and a deliberate
# signed overflow (UBSan) must each be reported, with the suppressions in place.
#
# Environment: ASAN_JOBS (make -j, default: nproc); ASAN_KEEP_OPTIONS=1 appends ASAN_OPTIONS /
# LSAN_OPTIONS / UBSAN_OPTIONS from the environment to ours; ASAN_FORK_GRACE (seconds a fork may
# take to exit after SIGTERM, default 120); FUZZ_RUNS (property test cases, default 1000 here).
# The addon's libubsan is loaded as its dependency; only libasan has to be preloaded.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

STAGE=$ROOT/build-asan
ADDON=$STAGE/build/Release/capped_expirationd.node
REPORTS=$STAGE/reports/run-$$   # one directory per run: concurrent runs do not mix reports
PRELOAD=$STAGE/fork-exit.cjs
SUPP=$ROOT/scripts/lsan.supp
NORMAL_ADDON=$ROOT/build/Release/capped_expirationd.node

say() { printf '\n\033[1m[test:asan] %s\033[0m\n' "$*"; }
die() { printf '\n\033[1;31m[test:asan] FAIL: %s\033[0m\n' "$*" >&2; exit 1; }

SELF_TEST=0
if [[ "${1:-}" == "--self-test" ]]; then SELF_TEST=1; shift; fi

[[ "$(uname -s)" == Linux ]] || die "the sanitizer build is Linux-only (binding.gyp's CE_SANITIZE condition)"
command -v gcc >/dev/null || die "gcc is required (for libasan.so)"
LIBASAN=$(gcc -print-file-name=libasan.so)
[[ "$LIBASAN" == /* && -e "$LIBASAN" ]] || die "gcc has no libasan.so (install libasan / gcc's sanitizer runtime)"
LIBASAN=$(readlink -f "$LIBASAN")

fingerprint() { if [[ -f "$1" ]]; then sha256sum "$1" | cut -d' ' -f1; else echo absent; fi; }
NORMAL_BEFORE=$(fingerprint "$NORMAL_ADDON")

# ---------------------------------------------------------------------------------------------
# 1. The sanitizer build.
# ---------------------------------------------------------------------------------------------
NODE_GYP=()
if [[ -n "${npm_config_node_gyp:-}" && -f "${npm_config_node_gyp}" ]]; then
  NODE_GYP=(node "$npm_config_node_gyp")
else
  NPM_ROOT=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  if [[ -f "$NPM_ROOT/node_modules/node-gyp/bin/node-gyp.js" ]]; then
    NODE_GYP=(node "$NPM_ROOT/node_modules/node-gyp/bin/node-gyp.js")
  else
    NODE_GYP=(npx --yes node-gyp)
  fi
fi
# Headers: npm's nodedir setting if any, else the ones installed next to this node, else
# node-gyp downloads them.
GYP_ARGS=()
NODE_PREFIX=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
if [[ -n "${npm_config_nodedir:-}" ]]; then
  GYP_ARGS+=("--nodedir=$npm_config_nodedir")
elif [[ -f "$NODE_PREFIX/include/node/node_api.h" ]]; then
  GYP_ARGS+=("--nodedir=$NODE_PREFIX")
fi

mkdir -p "$STAGE"
# One build at a time in build-asan/ (a concurrent `npm run test:asan` waits here).
exec 9>"$STAGE/.build.lock"
flock 9
cmp -s binding.gyp "$STAGE/binding.gyp" || cp binding.gyp "$STAGE/binding.gyp"
# A snapshot of native/ (mtimes kept, so make rebuilds only what changed): sources edited while
# the build runs cannot mix into it.
[[ -L "$STAGE/native" ]] && rm -f "$STAGE/native"
rm -rf "$STAGE/native.new"
cp -a native "$STAGE/native.new"
if [[ -d "$STAGE/native" ]] && diff -rq "$STAGE/native" "$STAGE/native.new" >/dev/null; then
  rm -rf "$STAGE/native.new"
else
  rm -rf "$STAGE/native"
  mv "$STAGE/native.new" "$STAGE/native"
fi
say "building the sanitizer addon into ${STAGE#$ROOT/}/ (CE_SANITIZE=1: -fsanitize=address,undefined -fno-omit-frame-pointer -O1 -g, CE_TUPLE_MALLOC)"
echo "  ${NODE_GYP[*]} configure ${GYP_ARGS[*]}   (cwd ${STAGE#$ROOT/}, CE_SANITIZE=1)"
echo "  ${NODE_GYP[*]} build -j ${ASAN_JOBS:-$(nproc)}"
(
  cd "$STAGE"
  export CE_SANITIZE=1
  # configure every time (about a second): the flags are decided at configure time; make then
  # rebuilds only what changed.
  "${NODE_GYP[@]}" configure "${GYP_ARGS[@]}" >"$STAGE/configure.log" 2>&1 || { cat "$STAGE/configure.log"; exit 1; }
  "${NODE_GYP[@]}" build -j "${ASAN_JOBS:-$(nproc)}" 2>&1 | sed '/^gyp info/d'
) || die "the sanitizer build failed"
[[ -f "$ADDON" ]] || die "no addon at $ADDON after the build"
grep -q -- '-fsanitize=address,undefined' "$STAGE/build/capped_expirationd.target.mk" ||
  die "CE_SANITIZE did not take effect (binding.gyp condition not met?)"
SYMBOLS=$(nm -D "$ADDON")
UNDEFINED=$(nm -D --undefined-only "$ADDON" | grep -E ' _ZN(K)?2ce' || true)
[[ -z "$UNDEFINED" ]] || die "the sanitizer build is inconsistent (undefined addon symbols: $UNDEFINED); rerun"
grep -q '__asan_init' <<<"$SYMBOLS" || die "$ADDON is not instrumented with ASan"
grep -q '__ubsan_handle' <<<"$SYMBOLS" || die "$ADDON is not instrumented with UBSan"

flock -u 9

# build/ must not receive the sanitizer build. If the normal addon changed meanwhile, it is only
# acceptable when it is not instrumented (someone ran `npm run build:native` at the same time).
check_normal_build() {
  local now; now=$(fingerprint "$NORMAL_ADDON")
  if [[ "$now" == "$NORMAL_BEFORE" ]]; then
    echo "  build/Release/capped_expirationd.node untouched ($now)"
  elif [[ -f "$NORMAL_ADDON" ]] && nm -D "$NORMAL_ADDON" 2>/dev/null | grep -c '__asan_init' >/dev/null; then
    die "build/Release/capped_expirationd.node is now a sanitizer build: this script must never write to build/"
  else
    echo "  note: build/Release/capped_expirationd.node was changed meanwhile by another build (not instrumented: not by this script)"
  fi
}
check_normal_build

# ---------------------------------------------------------------------------------------------
# 2. dist/ for tests that spawn plain node on dist/index.js (built without the sanitizer preload).
# ---------------------------------------------------------------------------------------------
say "building dist/ (npx tsc -p tsconfig.json)"
npx tsc -p tsconfig.json || die "tsc failed"

# ---------------------------------------------------------------------------------------------
# 3. The run.
# ---------------------------------------------------------------------------------------------
cat >"$PRELOAD.$$" <<'EOF'
// Generated by scripts/test-asan.sh; preloaded into each vitest fork (see the script's header).
'use strict';
if (typeof process.send === 'function') {
  // Records the test files this fork runs next to its pid (see proc-tag.cjs). The listener is
  // added right after vitest's own: a 'message' listener added earlier would start the IPC
  // channel and take vitest's first message.
  const tagFiles = (message) => {
    const files = message && message.type === 'run' && message.context && message.context.files;
    if (!Array.isArray(files) || !process.env.CE_ASAN_REPORTS) return;
    const names = files.map((f) => (typeof f === 'string' ? f : f.filepath)).join(' ');
    try {
      require('node:fs').appendFileSync(`${process.env.CE_ASAN_REPORTS}/proc.${process.pid}`, `  test files: ${names}\n`);
    } catch {
      // best effort
    }
  };
  const on = process.on;
  let tagging = false;
  process.on = function (event, listener) {
    const result = on.call(this, event, listener);
    if (event === 'message' && !tagging) {
      tagging = true;
      on.call(this, 'message', tagFiles);
    }
    return result;
  };
  const send = process.send.bind(process);
  const exit = process.exit.bind(process);
  let stopping = false;
  process.send = function (message, ...rest) {
    if (stopping || !message || message.__vitest_worker_response__ !== true || message.type !== 'stopped') {
      return send(message, ...rest);
    }
    stopping = true;
    // From now on SIGTERM (sent by vitest right after 'stopped') must not kill the fork before the
    // natural exit and the leak check; until now it kept its default action.
    process.on('SIGTERM', () => {});
    const callback = typeof rest[rest.length - 1] === 'function' ? rest.pop() : undefined;
    return send(message, ...rest, (error) => {
      process.removeAllListeners('message');
      if (process.connected) process.disconnect();
      setTimeout(() => exit(), 200).unref();
      if (callback) callback(error);
    });
  };
}
EOF
mv -f "$PRELOAD.$$" "$PRELOAD"

# Preloaded into the vitest main process: vitest sends SIGKILL to a fork 500 ms after SIGTERM,
# which can land while LeakSanitizer is still scanning a large heap at the fork's exit (the
# report is then lost, or the dying tracer writes "Tracer caught signal 11"). This defers that
# SIGKILL by ASAN_FORK_GRACE seconds (default 120) unless the fork exits first; a fork that
# really hangs is still killed.
MAIN_PRELOAD=$STAGE/vitest-main.cjs
cat >"$MAIN_PRELOAD.$$" <<'EOF'
// Generated by scripts/test-asan.sh; preloaded into the vitest main process (see the script).
'use strict';
const { ChildProcess } = require('node:child_process');
const grace = 1000 * Number(process.env.ASAN_FORK_GRACE || 120);
const kill = ChildProcess.prototype.kill;
ChildProcess.prototype.kill = function (signal) {
  const isFork = Array.isArray(this.spawnargs) && this.spawnargs.some((a) => /vitest[\\/]dist[\\/]workers[\\/]forks\.js$/.test(a));
  if (!isFork || (signal !== 'SIGKILL' && signal !== 9) || this.exitCode !== null || this.signalCode !== null) {
    return kill.call(this, signal);
  }
  if (this.asanDeferredKill === undefined) {
    this.asanDeferredKill = setTimeout(() => {
      process.stderr.write(`[test:asan] fork ${this.pid} did not exit ${grace / 1000} s after SIGTERM; killing it\n`);
      kill.call(this, 'SIGKILL');
    }, grace);
    this.once('exit', () => clearTimeout(this.asanDeferredKill));
  }
  return true;
};
EOF
mv -f "$MAIN_PRELOAD.$$" "$MAIN_PRELOAD"

# Reports of earlier runs whose process is gone are removed; this run's go to run-<pid>/.
for old in "$STAGE"/reports/run-*; do
  [[ -e "$old" ]] || continue
  pid=${old##*/run-}; pid=${pid%%.*}
  kill -0 "$pid" 2>/dev/null || rm -rf "$old"
done
rm -rf "$REPORTS"
mkdir -p "$REPORTS"

# Every node process of the run (vitest, its forks, processes the tests spawn) records its pid,
# parent and command line in $REPORTS/proc.<pid> (NODE_OPTIONS=--require), so that a report
# asan.<pid> can be traced back to a process; forks add the test files they ran.
TAGGER=$STAGE/proc-tag.cjs
cat >"$TAGGER.$$" <<'EOF'
// Generated by scripts/test-asan.sh: names this process in the sanitizer report directory.
'use strict';
try {
  if (require('node:worker_threads').isMainThread && process.env.CE_ASAN_REPORTS) {
    require('node:fs').appendFileSync(`${process.env.CE_ASAN_REPORTS}/proc.${process.pid}`,
      `parent ${process.ppid}: ${process.argv.slice(1).join(' ')}\n`);
  }
} catch {
  // best effort
}
EOF
mv -f "$TAGGER.$$" "$TAGGER"
ASAN_OPTS="detect_leaks=1:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=0:check_initialization_order=1:strict_init_order=1:detect_odr_violation=0:log_path=$REPORTS/asan"
# intercept_tls_get_addr=0: with it on, gcc 12's LeakSanitizer tracer crashed ("Tracer caught
# signal 11", addr 0x32c0) at the exit of one child process of the suite, every time, for one
# build path of the addon and not another: its bookkeeping of dynamic TLS blocks trips over this
# glibc's layout. Off, LSan no longer tracks dynamically allocated TLS; that could only produce
# false leak reports, never hide a leak, and the suite reports none.
LSAN_OPTS="suppressions=$SUPP:print_suppressions=0:intercept_tls_get_addr=0"
UBSAN_OPTS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:report_error_type=1:log_path=$REPORTS/ubsan"
if [[ "${ASAN_KEEP_OPTIONS:-0}" == 1 ]]; then
  ASAN_OPTS="$ASAN_OPTS${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  LSAN_OPTS="$LSAN_OPTS${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  UBSAN_OPTS="$UBSAN_OPTS${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
fi
[[ -f "$SUPP" ]] || die "missing $SUPP"

OUTPUT_LOG=$REPORTS.vitest-output.log
MARKERS='runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|AddressSanitizer:DEADLYSIGNAL|UndefinedBehaviorSanitizer:DEADLYSIGNAL'

# The property tests take their case count from FUZZ_RUNS (default 10000); under the sanitizer
# (3-5x slower, and every case allocates) the default here is 1000. Set FUZZ_RUNS to override.
export FUZZ_RUNS=${FUZZ_RUNS:-1000}

# Runs "$@" with the sanitizer environment.
sanitized() {
  env CAPPED_EXPIRATIOND_ADDON="$ADDON" LD_PRELOAD="$LIBASAN" CE_ASAN_REPORTS="$REPORTS" \
    NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--require=$TAGGER" \
    ASAN_OPTIONS="$ASAN_OPTS" LSAN_OPTIONS="$LSAN_OPTS" UBSAN_OPTIONS="$UBSAN_OPTS" "$@"
}

# Prints every non-empty report; returns 1 if there is one.
check_reports() {
  local found=0 f
  for f in "$REPORTS"/asan.* "$REPORTS"/ubsan.*; do
    [[ -s "$f" ]] || continue
    found=1
    local pid=${f##*.}
    printf '\n----- %s -----\n' "${f#$ROOT/}"
    if [[ -f "$REPORTS/proc.$pid" ]]; then sed 's/^/process: /' "$REPORTS/proc.$pid"; fi
    head -c 20000 "$f"
  done
  return $found
}

if [[ $SELF_TEST == 1 ]]; then
  say "self-test: the harness must catch a leak, a use-after-free (plain node and vitest fork) and UB"
  CANARY=$STAGE/canary
  mkdir -p "$CANARY/test"
  cat >"$CANARY/canary.c" <<'EOF'
#include <node_api.h>
#include <stdlib.h>
#include <string.h>
static void* volatile sink;
static napi_value Leak(napi_env env, napi_callback_info info) { char* p = malloc(4321); memset(p, 1, 4321); sink = p; sink = 0; return NULL; }
static napi_value Uaf(napi_env env, napi_callback_info info) { volatile char* p = malloc(16); free((void*)p); p[3] = 1; return NULL; }
static napi_value Ub(napi_env env, napi_callback_info info) { volatile int x = 0x7fffffff, one = 1; x = x + one; return NULL; }
NAPI_MODULE_INIT() {
  napi_value f;
  napi_create_function(env, "leak", NAPI_AUTO_LENGTH, Leak, NULL, &f); napi_set_named_property(env, exports, "leak", f);
  napi_create_function(env, "uaf", NAPI_AUTO_LENGTH, Uaf, NULL, &f); napi_set_named_property(env, exports, "uaf", f);
  napi_create_function(env, "ub", NAPI_AUTO_LENGTH, Ub, NULL, &f); napi_set_named_property(env, exports, "ub", f);
  return exports;
}
EOF
  gcc -shared -fPIC -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
    -I"${npm_config_nodedir:-$NODE_PREFIX}/include/node" -o "$CANARY/canary.node" "$CANARY/canary.c" || die "cannot build the canary"
  cat >"$CANARY/test/canary.test.ts" <<EOF
import { createRequire } from 'node:module';
import { expect, test } from 'vitest';
const require = createRequire(import.meta.url);
test('canary', () => {
  require('$CANARY/canary.node')[process.env.CANARY as string]();
  expect(true).toBe(true);
});
EOF
  cat >"$CANARY/vitest.config.mts" <<'EOF'
import { defineConfig } from 'vitest/config';
export default defineConfig({ test: { pool: 'forks', include: ['test/*.test.ts'] } });
EOF
  ln -sfn "$ROOT/node_modules" "$CANARY/node_modules"
  failures=0
  expect_caught() {  # label, pattern, command...
    local label=$1 pattern=$2; shift 2
    rm -f "$REPORTS"/*
    local rc=0
    (cd "$CANARY" && sanitized "$@") >"$REPORTS.canary.out" 2>&1 || rc=$?
    if grep -qsE "$pattern" "$REPORTS"/* "$REPORTS.canary.out"; then
      echo "  ok: $label (exit $rc: $(grep -hsE "$pattern" "$REPORTS"/* "$REPORTS.canary.out" | head -1 | cut -c1-110))"
    else
      echo "  NOT CAUGHT: $label (exit $rc)"; tail -20 "$REPORTS.canary.out"; failures=$((failures + 1))
    fi
  }
  expect_caught "leak, plain node, natural exit" 'LeakSanitizer: detected memory leaks' \
    node -e "require('$CANARY/canary.node').leak()"
  expect_caught "leak, plain node, process.exit()" 'LeakSanitizer: detected memory leaks' \
    node -e "require('$CANARY/canary.node').leak(); process.exit(0)"
  expect_caught "use-after-free, plain node" 'heap-use-after-free' node -e "require('$CANARY/canary.node').uaf()"
  expect_caught "signed overflow (UBSan), plain node" 'signed integer overflow' node -e "require('$CANARY/canary.node').ub()"
  VITEST=(node --require="$MAIN_PRELOAD" "$ROOT/node_modules/vitest/vitest.mjs" run --execArgv="--require=$PRELOAD")
  expect_caught "leak in a vitest fork" 'LeakSanitizer: detected memory leaks' env CANARY=leak "${VITEST[@]}"
  expect_caught "use-after-free in a vitest fork" 'heap-use-after-free' env CANARY=uaf "${VITEST[@]}"
  expect_caught "signed overflow (UBSan) in a vitest fork" 'signed integer overflow' env CANARY=ub "${VITEST[@]}"
  rm -f "$REPORTS"/*
  if (cd "$CANARY" && sanitized env CANARY=toString "${VITEST[@]}") >"$REPORTS.canary.out" 2>&1 && check_reports >/dev/null; then
    echo "  ok: a clean vitest run passes with no report"
  else
    echo "  UNEXPECTED: a clean vitest run failed"; tail -30 "$REPORTS.canary.out"; check_reports || true
    failures=$((failures + 1))
  fi
  rm -f "$REPORTS"/*
  [[ $failures -eq 0 ]] || die "$failures self-test case(s) not caught"
  say "self-test passed"
  exit 0
fi

say "running vitest under AddressSanitizer + UBSan + LeakSanitizer"
cat <<EOF
  CAPPED_EXPIRATIOND_ADDON=${ADDON#$ROOT/}
  LD_PRELOAD=$LIBASAN
  ASAN_OPTIONS=$ASAN_OPTS
  LSAN_OPTIONS=$LSAN_OPTS
  UBSAN_OPTIONS=$UBSAN_OPTS
  NODE_OPTIONS=${NODE_OPTIONS:+$NODE_OPTIONS }--require=${TAGGER#$ROOT/}   (names each process in the reports directory)
  FUZZ_RUNS=$FUZZ_RUNS
  node --require=${MAIN_PRELOAD#$ROOT/} node_modules/vitest/vitest.mjs run --execArgv=--require=${PRELOAD#$ROOT/} $*
EOF
# One run of the suite: sets rc (vitest's status), reports_rc (1 when a sanitizer report or
# marker was found) and elapsed.
run_suite() {
  started=$SECONDS
  rc=0
  rm -f "$REPORTS"/asan.* "$REPORTS"/ubsan.*
  # The output is also kept in build-asan/vitest-output.log: UBSan ignores log_path when it
  # shares the process with ASan, so its reports (from forks, or children with inherited stderr)
  # are found there.
  set +o pipefail
  sanitized node --require="$MAIN_PRELOAD" "$ROOT/node_modules/vitest/vitest.mjs" run --execArgv="--require=$PRELOAD" "$@" 2>&1 | tee "$OUTPUT_LOG"
  rc=${PIPESTATUS[0]}
  set -o pipefail
  elapsed=$((SECONDS - started))

  reports_rc=0
  check_reports || reports_rc=1
  if grep -qE "$MARKERS" "$OUTPUT_LOG"; then
    reports_rc=1
    printf '\n----- sanitizer output in the vitest log (%s) -----\n' "${OUTPUT_LOG#$ROOT/}"
    grep -nE -A12 "$MARKERS" "$OUTPUT_LOG" | head -200
  fi
}

# LeakSanitizer's stop-the-world tracer sometimes crashes at a process's exit ("Tracer caught
# signal 11 ... LeakSanitizer has encountered a fatal error"): a known intermittent fault of LSan
# itself under load (google/sanitizers#1353), not a leak, and the process then exits non-zero. It
# has hit one child process of this suite once so far, in a CI run on a busy 2-core machine. True
# when that is the only thing found: at least one report has the tracer's signature, every report
# has it, and the log holds no sanitizer error. Then the suite runs once more, and that run
# decides: a real failure fails again.
only_tracer_crashes() {
  local f seen=0
  for f in "$REPORTS"/asan.* "$REPORTS"/ubsan.*; do
    [[ -s "$f" ]] || continue
    grep -q 'Tracer caught signal' "$f" && grep -q 'LeakSanitizer has encountered a fatal error' "$f" || return 1
    grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" && return 1
    seen=1
  done
  [[ $seen -eq 1 ]] && ! grep -qE "$MARKERS" "$OUTPUT_LOG"
}

run_suite "$@"
if [[ $rc -ne 0 || $reports_rc -ne 0 ]] && only_tracer_crashes; then
  say "LeakSanitizer's tracer crashed (LSan's own intermittent fault, reports above; not a leak): running the suite once more"
  run_suite "$@"
fi
check_normal_build

if [[ $rc -ne 0 ]]; then
  die "vitest exited with status $rc after ${elapsed}s (a failing test, or a fork killed by a sanitizer abort; reports above if any)"
fi
if [[ $reports_rc -ne 0 ]]; then
  die "sanitizer reports found in ${REPORTS#$ROOT/}/ (printed above) after ${elapsed}s"
fi
say "PASS: vitest passed under ASan/UBSan/LSan in ${elapsed}s with no sanitizer report"
