// Bench-only experiments (`--experiment=<name>[,<name>]`): a proposed change applied to every agent
// process of the run, to measure it before it is made for real. A run with experiments prints and
// records them; its numbers describe the experiment, not the agent as it is.

export interface Experiment {
  about: string;
  /** Extra node flags of the agent processes (CLI and host). */
  nodeFlags: string[];
}

export const EXPERIMENTS: Record<string, Experiment> = {
  'young-gen-4mb': {
    about: 'V8 young generation capped at 4 MB per semi-space (node --max-semi-space-size=4; default 16)',
    nodeFlags: ['--max-semi-space-size=4'],
  },
  'young-gen-8mb': {
    about: 'V8 young generation capped at 8 MB per semi-space (node --max-semi-space-size=8; default 16)',
    nodeFlags: ['--max-semi-space-size=8'],
  },
};

/** Node flags of an agent process under the experiments named in BENCH_EXPERIMENTS. */
export function experimentNodeFlags(): string[] {
  return (process.env.BENCH_EXPERIMENTS ?? '')
    .split(',')
    .filter(Boolean)
    .flatMap((name) => EXPERIMENTS[name]?.nodeFlags ?? []);
}
