// Lints of the deploy artefacts that need system tools (run by `npm run lint`, not `npm test`):
// `systemd-analyze verify` on the unit, with its paths pointed at this checkout, and shellcheck on
// the scripts. A missing tool is a failure that says which Debian package has it (.ci/run installs
// them); nothing is skipped.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = process.cwd();
let failed = false;

function run(tool, debianPackage, args) {
  const result = spawnSync(tool, args, { cwd: root, encoding: 'utf8' });
  if (result.error) {
    console.error(`lint-deploy: ${tool} is not installed (Debian package ${debianPackage})`);
    failed = true;
    return;
  }
  const output = `${result.stdout}${result.stderr}`.trim();
  if (result.status !== 0 || output !== '') {
    console.error(`lint-deploy: ${tool} ${args.join(' ')}\n${output}`);
    failed = true;
  } else {
    console.log(`lint-deploy: ${tool} clean`);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'bta-unit-'));
const unit = readFileSync(join(root, 'deploy/browser-telemetry-agent.service'), 'utf8')
  .replaceAll(
    '/usr/bin/node --max-semi-space-size=4 /opt/browser-telemetry-agent/dist/main.js',
    `${process.execPath} --max-semi-space-size=4 ${root}/dist/main.js`,
  )
  .replaceAll('/opt/browser-telemetry-agent/deploy/wait-healthy.sh', `${root}/deploy/wait-healthy.sh`)
  .replaceAll('WorkingDirectory=/opt/browser-telemetry-agent', `WorkingDirectory=${root}`);
writeFileSync(join(dir, 'browser-telemetry-agent.service'), unit);
try {
  run('systemd-analyze', 'systemd', ['verify', join(dir, 'browser-telemetry-agent.service')]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
run('shellcheck', 'shellcheck', ['deploy/entrypoint.sh', 'deploy/wait-healthy.sh', '.ci/run']);
process.exit(failed ? 1 : 0);
