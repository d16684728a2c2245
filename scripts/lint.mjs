// `npm run lint`: every check, each to the end, in two lanes at once. ESLint's type-checked rules
// take most of the time on one core; the compiler, Prettier and the project's own checks run on
// the other meanwhile (about 50 s less than one after the other on 2 cores). Each check's output
// is printed whole once it ends; the exit code is non-zero when any failed.

import { spawn } from 'node:child_process';

const lanes = [
  [['eslint', ['node_modules/.bin/eslint', '.']]],
  [
    ['tsc', ['node_modules/.bin/tsc', '--noEmit', '-p', '.']],
    ['prettier', ['node_modules/.bin/prettier', '--check', '.']],
    ['check-layers', ['scripts/check-layers.mjs']],
    ['lint-deploy', ['scripts/lint-deploy.mjs']],
  ],
];

function run(name, [script, ...args]) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (err) => output.push(Buffer.from(`${err.message}\n`)));
    child.on('close', (code) => {
      process.stdout.write(`> ${name}\n${Buffer.concat(output).toString()}`);
      if (code !== 0) process.stdout.write(`lint: ${name} failed (exit ${code})\n`);
      resolve(code === 0);
    });
  });
}

const results = await Promise.all(
  lanes.map(async (lane) => {
    const passed = [];
    for (const [name, command] of lane) passed.push(await run(name, command));
    return passed.every(Boolean);
  }),
);
process.exitCode = results.every(Boolean) ? 0 : 1;
