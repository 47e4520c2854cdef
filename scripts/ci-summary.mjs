// Prints CI's closing line, "tests: N passed, M failed", from vitest's JSON reports.
// Arguments: "name:exitCode" for a step that counts as one test, or "name:exitCode:report.json"
// for a vitest run. A run that exited non-zero without a failing test in its report (a sanitizer
// abort, a crashed fork, a missing report) counts as one more failure. The failing tests are
// named (with the first line of their error) above the closing line, where a log's tail shows them.
import { existsSync, readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
for (const arg of process.argv.slice(2)) {
  const [name, code, report] = arg.split(':');
  const exitCode = Number(code);
  if (report === undefined) {
    if (exitCode === 0) passed++;
    else failed++;
    console.log(`${name}: exit ${exitCode}`);
    continue;
  }
  let p = 0;
  let f = 0;
  if (existsSync(report)) {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    p = json.numPassedTests ?? 0;
    f = (json.numFailedTests ?? 0) + (json.numRuntimeErrorTestSuites ?? 0);
    for (const file of json.testResults ?? []) {
      if (file.status === 'failed' && (file.assertionResults ?? []).every((t) => t.status !== 'failed')) {
        console.log(`${name}: FAILED ${file.name}: ${String(file.message ?? '').split('\n')[0]}`);
      }
      for (const test of file.assertionResults ?? []) {
        if (test.status !== 'failed') continue;
        const first = String((test.failureMessages ?? [])[0] ?? '').split('\n')[0];
        console.log(`${name}: FAILED ${file.name} > ${test.fullName} (${Math.round(test.duration ?? 0)} ms): ${first}`);
      }
    }
  }
  if (exitCode !== 0 && f === 0) f = 1;
  console.log(`${name}: ${p} passed, ${f} failed (exit ${exitCode})`);
  passed += p;
  failed += f;
}
console.log(`tests: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
