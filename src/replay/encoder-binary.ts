// Which ffmpeg records and decodes replays (docs/replay.md "The encoder"): `--ffmpeg-path` when
// given, else the machine's `ffmpeg` on PATH, else the static build inside the npm package
// `@ffmpeg-installer/linux-x64` (an optional dependency, like the bundled browser: the README's
// two commands still do all the set-up, and nothing is downloaded). It runs as a separate program
// (its licence: docs/decisions.md "Dependencies").
//
// What the build can encode decides the format: H.264 in MP4 (libx264) when it has it, else VP8
// in WebM (libvpx). Found once per process and path; the result (path, version, format) is logged
// at start-up by the agent.

import { execFile } from 'node:child_process';
import { accessSync, constants, copyFileSync, chmodSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { defaultCacheRoot } from '../browser/bundled-chromium.ts';

export const ENCODER_PACKAGE = '@ffmpeg-installer/linux-x64';

/** A container and codec the encoder writes a replay in. */
export interface ReplayFormat {
  /** File extension, without the dot. */
  extension: 'mp4' | 'webm';
  mimeType: 'video/mp4' | 'video/webm';
  /** The ffmpeg encoder. */
  encoder: 'libx264' | 'libvpx';
}

export const MP4_H264: ReplayFormat = { extension: 'mp4', mimeType: 'video/mp4', encoder: 'libx264' };
export const WEBM_VP8: ReplayFormat = { extension: 'webm', mimeType: 'video/webm', encoder: 'libvpx' };

export interface EncoderBinary {
  path: string;
  /** `ffmpeg-path` (the setting), `system` (PATH) or `npm` (the package). */
  source: 'ffmpeg-path' | 'system' | 'npm';
  /** The first line of `ffmpeg -version`, without the copyright. */
  version: string;
  /** What a recording is written as: MP4/H.264 when the build has libx264, else WebM/VP8. */
  format: ReplayFormat;
  /** The option that keeps frames' own timestamps: `-fps_mode` since ffmpeg 5.1, `-vsync` before (removed in 7). */
  fpsModeOption: '-fps_mode' | '-vsync';
}

export class EncoderUnavailableError extends Error {
  override name = 'EncoderUnavailableError';
}

const found = new Map<string, Promise<EncoderBinary>>();

/**
 * The encoder to use; rejects with EncoderUnavailableError when there is none or it cannot encode
 * H.264 nor VP8. `ffmpegPath` is the setting; `pathEnv` is PATH (tests).
 */
export function locateEncoder(options: { ffmpegPath?: string; pathEnv?: string } = {}): Promise<EncoderBinary> {
  const key = `${options.ffmpegPath ?? ''}\0${options.pathEnv ?? process.env.PATH ?? ''}`;
  let pending = found.get(key);
  if (!pending) {
    pending = locate(options.ffmpegPath, options.pathEnv ?? process.env.PATH ?? '');
    found.set(key, pending);
    pending.catch(() => found.delete(key));
  }
  return pending;
}

async function locate(ffmpegPath: string | undefined, pathEnv: string): Promise<EncoderBinary> {
  if (ffmpegPath !== undefined) {
    if (!isExecutable(ffmpegPath)) throw new EncoderUnavailableError(`--ffmpeg-path ${ffmpegPath} is not an executable file`);
    return describe(ffmpegPath, 'ffmpeg-path');
  }
  for (const dir of pathEnv.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'ffmpeg');
    if (isExecutable(candidate)) return describe(candidate, 'system');
  }
  const packaged = packagedEncoder();
  if (packaged === undefined) {
    throw new EncoderUnavailableError(`no ffmpeg on PATH and the npm package ${ENCODER_PACKAGE} is not installed (run "npm ci", or pass --ffmpeg-path)`);
  }
  return describe(packaged, 'npm');
}

/**
 * The package's binary, runnable by this user. npm may leave it without the execute bit for
 * others (a package installed by another user): then a copy in the agent's cache is used.
 */
function packagedEncoder(): string | undefined {
  let dir: string;
  try {
    dir = dirname(createRequire(import.meta.url).resolve(`${ENCODER_PACKAGE}/package.json`));
  } catch {
    return undefined;
  }
  const binary = join(dir, 'ffmpeg');
  if (isExecutable(binary)) return binary;
  let size: number;
  try {
    size = statSync(binary).size;
  } catch {
    return undefined;
  }
  const copy = join(defaultCacheRoot(), `ffmpeg-${size}`, 'ffmpeg');
  if (isExecutable(copy) && statSync(copy).size === size) return copy;
  mkdirSync(dirname(copy), { recursive: true, mode: 0o700 });
  const work = `${copy}.partial-${process.pid}`;
  copyFileSync(binary, work);
  chmodSync(work, 0o755);
  renameSync(work, copy);
  return copy;
}

async function describe(path: string, source: EncoderBinary['source']): Promise<EncoderBinary> {
  const versionText = await run(path, ['-hide_banner', '-version']);
  const version = /^ffmpeg version (\S+)/m.exec(versionText)?.[1];
  if (version === undefined) throw new EncoderUnavailableError(`${path} is not ffmpeg (its -version says: ${versionText.slice(0, 120)})`);
  const encoders = await run(path, ['-hide_banner', '-encoders']);
  const has = (name: string) => new RegExp(`^\\s*V\\S*\\s+${name}\\s`, 'm').test(encoders);
  let format: ReplayFormat;
  if (has('libx264')) format = MP4_H264;
  else if (has('libvpx')) format = WEBM_VP8;
  else throw new EncoderUnavailableError(`${path} (ffmpeg ${version}) has neither libx264 nor libvpx`);
  const options = await run(path, ['-hide_banner', '-h', 'long']);
  const fpsModeOption = /^-fps_mode\b/m.test(options) ? '-fps_mode' : '-vsync';
  return { path, source, version, format, fpsModeOption };
}

function run(path: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(path, args, { timeout: 20_000, maxBuffer: 4 * 1024 * 1024 }, (err, stdout) => {
      if (err) reject(new EncoderUnavailableError(`${path} ${args.join(' ')} failed: ${err.message}`));
      else resolve(stdout);
    });
  });
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
