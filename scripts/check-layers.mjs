// The layer rules of docs/architecture.md "Layers", checked (run by `npm run lint`): every import
// of src/, injected/, viewer/ and gateway/src/ goes from a layer to the same or a lower one, the gateway
// reaches the agent only through the agent package's entries, and no import circle exists between
// modules (type-only imports count: a circle of types is still two modules that must change
// together). A regex over the sources is enough: the code imports only with static `import`/
// `export ... from` lines.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');

/**
 * Layers, lowest first; a module may import its own layer and those before it. Within one layer
 * the only rule is no circle. Patterns are path prefixes from the repository root; the longest
 * matching prefix names a module's layer.
 */
export const LAYERS = [
  // The event schema both sides of the page boundary share, and the leaves everyone may use.
  {
    name: 'base',
    paths: [
      'package.json',
      'injected/',
      'src/assert-never.ts',
      'src/event-data.ts',
      'src/limits.ts',
      'src/version.ts',
      'src/settings.ts',
      'src/sqlite.ts',
      'src/shutdown.ts',
      'src/cleanup-stack.ts',
      'src/host-names.ts',
      'src/http-timeouts.ts',
      'src/heartbeat.ts',
      'src/process-alive.ts',
      'src/generated/',
    ],
  },
  // The agent's data path, in the order data flows (docs/architecture.md "The agent").
  // The viewer page: a program of its own (bundled into src/generated/), reading the event schema.
  { name: 'viewer', paths: ['viewer/'] },
  { name: 'browser', paths: ['src/browser/'] },
  { name: 'telemetry', paths: ['src/telemetry/'] },
  { name: 'stream', paths: ['src/stream/'] },
  { name: 'store, export', paths: ['src/store/', 'src/export/', 'src/metrics/store-metrics.ts', 'src/metrics/mirrored-counter.ts'] },
  { name: 'computer, fs', paths: ['src/computer/', 'src/fs/'] },
  // Replays (docs/replay.md): the screencast of the followed browser, its encoder and files; the
  // retention shares the event stores' budget, so it sits above the store.
  { name: 'replay', paths: ['src/replay/'] },
  // Control events (docs/events.md "Control events"), produced beside telemetry from what clients
  // make the browser do: the CDP proxy's commands and the computer API's actions. The proxy
  // speaks CDP at the browser level but records through the control recorder, and the recorder
  // shapes computer actions as the proxy shapes commands, so both folders are one layer.
  { name: 'control, cdp proxy', paths: ['src/control/', 'src/cdp-proxy/'] },
  { name: 'metrics', paths: ['src/metrics/'] },
  // The agent's settings: what the HTTP layer's auth reads (scopes, tokens).
  { name: 'config', paths: ['src/config.ts', 'src/config/'] },
  // The MCP server's tools over any source of events (docs/mcp.md): the agent's history here, the
  // gateway's archive through the agent package's `mcp` entry.
  { name: 'mcp', paths: ['src/mcp/'] },
  { name: 'http', paths: ['src/http/'] },
  { name: 'agent', paths: ['src/agent.ts', 'src/index.ts', 'src/events.ts', 'src/program.ts'] },
  { name: 'agent program', paths: ['src/main.ts'] },
  // The gateway package, above every agent entry it uses.
  { name: 'gateway storage', paths: ['gateway/src/storage/', 'gateway/src/api-key.ts', 'gateway/src/issue-api-key.ts'] },
  { name: 'gateway config', paths: ['gateway/src/config.ts'] },
  // Connections to the agents and the silence watch, used by the archive's followers and the proxy.
  { name: 'gateway agent link', paths: ['gateway/src/agent-link/'] },
  { name: 'gateway archive', paths: ['gateway/src/archive/'] },
  { name: 'gateway http', paths: ['gateway/src/http/'] },
  { name: 'gateway wiring', paths: ['gateway/src/'] },
];

/**
 * Known violations, each owned by a piece of work that removes it. An entry that no longer occurs
 * fails the check too, so the list only shrinks.
 */
export const ALLOWED = [];

const SOURCES = ['src', 'injected', 'gateway/src', 'viewer'];
const agentEntries = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).exports;

function walk(dir) {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return walk(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function layerOf(path) {
  let best;
  LAYERS.forEach((layer, rank) => {
    for (const prefix of layer.paths) {
      if (path.startsWith(prefix) && (best === undefined || prefix.length > best.prefix.length)) best = { rank, prefix, name: layer.name };
    }
  });
  return best;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s(?:[^'";]*?\sfrom\s)?\s*'([^']+)'/g;

/** The repository path an import names, or undefined for a third-party or Node module. */
function target(from, specifier, problems) {
  if (specifier.startsWith('.')) return relative(root, resolve(root, dirname(from), specifier));
  const agent = /^browser-telemetry-agent(\/.*)?$/.exec(specifier);
  if (agent) {
    const entry = agentEntries[`.${agent[1] ?? ''}`];
    if (entry?.source === undefined) problems.push(`${from}: imports ${specifier}, which the agent package does not export`);
    else return relative(root, resolve(root, entry.source));
  }
  return undefined;
}

export function checkLayers() {
  const problems = [];
  const graph = new Map();
  const seenAllowed = new Set();
  for (const file of SOURCES.flatMap(walk)) {
    const text = readFileSync(join(root, file), 'utf8');
    const edges = [];
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1];
      const to = target(file, specifier, problems);
      if (to === undefined) continue;
      edges.push(to);
      const edge = `${file} -> ${to}`;
      if (file.startsWith('gateway/') && !to.startsWith('gateway/') && specifier.startsWith('.')) {
        problems.push(`${edge}: the gateway reaches the agent only through the agent package's entries (browser-telemetry-agent/...)`);
        continue;
      }
      if (!file.startsWith('gateway/') && to.startsWith('gateway/')) {
        problems.push(`${edge}: the agent package must not know the gateway`);
        continue;
      }
      const a = layerOf(file);
      const b = layerOf(to);
      if (a === undefined || b === undefined) {
        problems.push(`${edge}: ${a === undefined ? file : to} is in no layer (scripts/check-layers.mjs LAYERS)`);
        continue;
      }
      if (b.rank > a.rank) {
        if (ALLOWED.includes(edge)) seenAllowed.add(edge);
        else problems.push(`${edge}: layer "${a.name}" imports the higher layer "${b.name}"`);
      }
    }
    graph.set(file, edges);
  }
  for (const edge of ALLOWED) if (!seenAllowed.has(edge)) problems.push(`${edge}: allowed in scripts/check-layers.mjs but gone: remove it from ALLOWED`);
  for (const circle of circles(graph)) problems.push(`import circle: ${circle.join(' -> ')}`);
  return problems;
}

/** Every strongly connected group of two or more modules (Tarjan), as one path around it. */
function circles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (node) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), index.get(to)));
    }
    if (low.get(node) === index.get(node)) {
      const group = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1) found.push(group.sort().concat(group[0]));
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = checkLayers();
  for (const problem of problems) console.error(`check-layers: ${problem}`);
  if (problems.length > 0) process.exit(1);
  console.log('check-layers: clean');
}
