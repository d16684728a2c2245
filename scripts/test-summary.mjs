// Prints vitest's JSON report as one plain line, "N passed, N failed", for tools that read it.
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed`);
