// Bench-only experiments (`--experiment=<name>[,<name>]`): a proposed change applied to every agent
// process of the run, to measure it before it is made for real. A run with experiments prints and
// records them; its numbers describe the experiment, not the agent as it is.

export interface Experiment {
  about: string;
  /** Extra node flags of the agent processes (CLI and host). */
  nodeFlags: string[];
  /** Extra environment variables of the agent processes. */
  env?: Record<string, string>;
}

export const EXPERIMENTS: Record<string, Experiment> = {
  'young-gen-8mb': {
    about: 'V8 young generation capped at 8 MB per semi-space instead of the deployed 4 (node --max-semi-space-size=8)',
    nodeFlags: ['--max-semi-space-size=8'],
  },
  'young-gen-2mb': {
    about: 'V8 young generation capped at 2 MB per semi-space instead of the deployed 4 (node --max-semi-space-size=2)',
    nodeFlags: ['--max-semi-space-size=2'],
  },
  'malloc-arenas-default': {
    about: 'glibc malloc with its default arenas (8 per core) instead of the deployed MALLOC_ARENA_MAX=1',
    nodeFlags: [],
    env: { MALLOC_ARENA_MAX: '' },
  },
  'mmap-threshold-128k': {
    about: 'glibc malloc with a fixed 128 KiB mmap threshold (MALLOC_MMAP_THRESHOLD_) instead of the deployed 64 KiB',
    nodeFlags: [],
    env: { MALLOC_MMAP_THRESHOLD_: '131072' },
  },
  'perf-map': {
    about: 'JIT symbols for Linux perf (node --perf-basic-prof; writes /tmp/perf-<pid>.map): not a change, an aid to `perf record`',
    nodeFlags: ['--perf-basic-prof'],
  },
  maglev: {
    about: 'V8 tiers up to Maglev (its mid-tier optimizing compiler, quicker to compile than TurboFan) before TurboFan (node --maglev)',
    nodeFlags: ['--maglev'],
  },
  'no-turbofan': {
    about: 'V8 optimizes with Maglev only, never TurboFan (node --maglev --max-opt=2): less compiling, less optimized code',
    nodeFlags: ['--maglev', '--max-opt=2'],
  },
  'baseline-only': {
    about: 'V8 never optimizes: interpreter and Sparkplug baseline code only (node --max-opt=1)',
    nodeFlags: ['--max-opt=1'],
  },
  'single-threaded-gc': {
    about: 'V8 garbage collection on the main thread only (node --single-threaded-gc): no parallel or concurrent GC tasks on worker threads',
    nodeFlags: ['--single-threaded-gc'],
  },
  'v8-pool-1': {
    about: 'one V8 platform worker thread (node --v8-pool-size=1; default 4)',
    nodeFlags: ['--v8-pool-size=1'],
  },
};

/**
 * Node flags of an agent process: as deployed (deploy/, npm start: a 4 MiB young generation),
 * then those of the experiments named in BENCH_EXPERIMENTS (the last of a repeated flag wins).
 */
export function agentNodeFlags(): string[] {
  return ['--max-semi-space-size=4', ...chosen().flatMap((e) => e.nodeFlags)];
}

/**
 * Environment of an agent process: as deployed (deploy/, npm start: one malloc arena), plus the
 * experiments named in BENCH_EXPERIMENTS.
 */
export function agentEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, MALLOC_ARENA_MAX: '1', MALLOC_MMAP_THRESHOLD_: '65536' };
  // Agents run as deployed: with the durable store (docs/storage.md), in the bench's own directory.
  if (process.env.BENCH_DATA_DIR) env.DATA_DIR = process.env.BENCH_DATA_DIR;
  for (const experiment of chosen()) Object.assign(env, experiment.env);
  // An empty value removes the variable.
  return Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
}

/** The experiments named in BENCH_EXPERIMENTS (unknown names are refused by bench/run.ts). */
function chosen(): Experiment[] {
  return (process.env.BENCH_EXPERIMENTS ?? '')
    .split(',')
    .filter(Boolean)
    .flatMap((name) => EXPERIMENTS[name] ?? []);
}
