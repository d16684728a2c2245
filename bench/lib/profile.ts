// Summaries of the V8 CPU profiles the agent host writes under `--profile` (node --cpu-prof):
// self time by function and by source module. The agent is bundled into one file, so a bundle line
// is mapped back to its module through esbuild's `// src/...` markers.

import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  /** What the windows were (e.g. the fan-out configuration). */
  label: string;
  /** Measured windows kept (0 = whole profile). */
  windows: number;
  /** Sampled time that was not idle (ms). */
  busyMs: number;
  topFunctions: Array<{ name: string; where: string; selfMs: number; percent: number }>;
  topModules: Array<{ module: string; selfMs: number; percent: number }>;
  /** Self time by layer: the agent's code, the CDP client, Node's http/streams, GC, native. */
  layers: Array<{ layer: string; selfMs: number; percent: number }>;
}

function layerOf(module: string, functionName: string): string {
  if (functionName === '(garbage collector)') return 'V8 garbage collector';
  if (module.startsWith('src/') || module.startsWith('injected/')) return 'agent code (src/)';
  if (module.startsWith('chrome-remote-interface')) return 'CDP client (chrome-remote-interface, ws)';
  if (module.startsWith('fastify') || module.startsWith('pino') || module.startsWith('avvio') || module.startsWith('find-my-way')) return 'fastify, pino';
  if (module.startsWith('node:')) return 'Node core (http, net, streams, events)';
  if (module === '(native/V8)') return 'native (syscalls such as writev, JSON, Buffer)';
  return 'other';
}

/** Every .cpuprofile under `dir`, recursively. */
export function findProfiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.cpuprofile')) found.push(path);
    }
  };
  walk(dir);
  return found.sort();
}

/**
 * `windows`: monotonic ms ranges to keep (V8 stamps samples in µs of CLOCK_MONOTONIC on Linux,
 * the clock of process.hrtime); empty = the whole profile.
 */
export function summarizeProfile(file: string, windows: Array<[number, number]> = [], label = '', top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    const ms = t / 1000;
    if (windows.length > 0 && !windows.some(([from, to]) => ms >= from && ms <= to)) continue;
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + delta / 1000);
  }
  const moduleOf = bundleModules(profile);
  const functions = new Map<string, { name: string; where: string; selfMs: number }>();
  const modules = new Map<string, number>();
  const layers = new Map<string, number>();
  let busy = 0;
  for (const [id, ms] of self) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += ms;
    const module = moduleName(frame.url, frame.lineNumber, moduleOf);
    const where = `${module}:${frame.lineNumber + 1}`;
    const name = frame.functionName || '(anonymous)';
    const key = `${name} ${where}`;
    const entry = functions.get(key) ?? { name, where, selfMs: 0 };
    entry.selfMs += ms;
    functions.set(key, entry);
    modules.set(module, (modules.get(module) ?? 0) + ms);
    const layer = layerOf(module, frame.functionName);
    layers.set(layer, (layers.get(layer) ?? 0) + ms);
  }
  const pct = (ms: number) => Math.round((ms / busy) * 1000) / 10;
  return {
    file,
    label,
    windows: windows.length,
    busyMs: Math.round(busy),
    topFunctions: [...functions.values()]
      .sort((a, b) => b.selfMs - a.selfMs)
      .slice(0, top)
      .map((f) => ({ ...f, selfMs: Math.round(f.selfMs), percent: pct(f.selfMs) })),
    topModules: [...modules.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([module, ms]) => ({ module, selfMs: Math.round(ms), percent: pct(ms) })),
    layers: [...layers.entries()].sort((a, b) => b[1] - a[1]).map(([layer, ms]) => ({ layer, selfMs: Math.round(ms), percent: pct(ms) })),
  };
}

export function renderProfile(summary: ProfileSummary): string {
  const scope = summary.windows > 0 ? `${summary.windows} measured windows` : 'whole process life';
  const lines = [`${summary.file}${summary.label ? ` [${summary.label}]` : ''} (${scope}, busy ${summary.busyMs} ms)`, '  self time by layer:'];
  for (const l of summary.layers) lines.push(`    ${l.percent.toFixed(1).padStart(5)}%  ${l.layer}`);
  lines.push('  self time by module:');
  for (const m of summary.topModules) lines.push(`    ${m.percent.toFixed(1).padStart(5)}%  ${m.module}`);
  lines.push('  self time by function:');
  for (const f of summary.topFunctions) lines.push(`    ${f.percent.toFixed(1).padStart(5)}%  ${f.name}  ${f.where}`);
  return lines.join('\n');
}

/**
 * (bundle url, line 0-based) → the source module it came from, for the bench bundles in the
 * profile (.tmp/bench-agent-host.js, .tmp/bench-agent-cli.js).
 */
function bundleModules(profile: CpuProfile): (url: string, line: number) => string {
  const starts = new Map<string, Array<[number, string]>>();
  for (const node of profile.nodes) {
    const url = node.callFrame.url;
    if (starts.has(url) || !/\/\.tmp\/bench-[\w-]+\.js$/.test(url)) continue;
    const marks: Array<[number, string]> = [];
    try {
      const lines = readFileSync(fileURLToPath(url.startsWith('file:') ? url : `file://${url}`), 'utf8').split('\n');
      for (let i = 0; i < lines.length; i++) {
        const match = /^\/\/ ((?:src|injected|bench)\/\S+\.ts)$/.exec(lines[i]!);
        if (match) marks.push([i, match[1]!]);
      }
    } catch {
      // The bundle is gone: modules stay unresolved.
    }
    starts.set(url, marks);
  }
  return (url, line) => {
    let found = url.replace(/^.*\//, '');
    for (const [start, module] of starts.get(url) ?? []) {
      if (start > line) break;
      found = module;
    }
    return found;
  };
}

function moduleName(url: string, line: number, moduleOf: (url: string, line: number) => string): string {
  if (!url) return '(native/V8)';
  if (/\/\.tmp\/bench-[\w-]+\.js$/.test(url)) return moduleOf(url, line);
  const nodeModules = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  if (nodeModules) {
    // The nested ws of chrome-remote-interface shows as its own package.
    const inner = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(nodeModules[2]!);
    return inner ? `${nodeModules[1]}>${inner[1]}/${inner[2]}` : `${nodeModules[1]}/${nodeModules[2]}`;
  }
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\//, '');
}
