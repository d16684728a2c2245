// `node scripts/generate-docs.mjs`: writes the generated documents, docs/configuration.md (the
// settings tables) and docs/computer.md (the batch schema), from the current sources. The
// generators are TypeScript (scripts/docs/), bundled with esbuild as bench/run.mjs does;
// test/unit/generated-docs.test.ts fails when a document is stale.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, '.tmp/generate-docs.js');
await build({
  stdin: {
    contents: "export { configurationDoc } from './configuration.ts';\nexport { computerDoc } from './computer.ts';\n",
    resolveDir: join(root, 'scripts/docs'),
    loader: 'ts',
  },
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  logLevel: 'warning',
});
const { configurationDoc, computerDoc } = await import(pathToFileURL(outfile).href);
for (const [file, text] of [
  ['docs/configuration.md', configurationDoc()],
  ['docs/computer.md', computerDoc()],
]) {
  writeFileSync(join(root, file), text);
  process.stdout.write(`wrote ${file}\n`);
}
