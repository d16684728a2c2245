// Prints vitest's JSON reports (the suite's, then the load tests') as one plain line, "N passed,
// N failed", for tools that read it. Reports that do not exist (the load tests did not run
// because the suite failed) are skipped.
import { existsSync, readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
for (const file of process.argv.slice(2).filter((path) => existsSync(path))) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
}
console.log(`${passed} passed, ${failed} failed`);
