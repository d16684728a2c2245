// Plays a recorded CDP session (record-hook.cjs) back to new agent processes and reports the
// agent's CPU per page load, without a browser competing for the cores (docs/performance.md
// "Replaying a recorded session").
//
//   npm run build && node bench/investigate/replay/replay.mjs <rec.jsonl> [reps] [agent flags...]
//
// A websocket server plays Chromium: it answers each command with the answer recorded for the
// same method, session and requestId (else `{}`), and sends the recorded events at their recorded
// times from the agent's first command on. CPU is the agent's utime+stime (/proc, all threads)
// from that command until 1.5 s after the last event; loads are the main tab's load events.
// One subscriber reads the stream. Environment:
//   REPLAY_VARIANTS  JSON [{ name, args?, nodeArgs?, env?, noSub?, main? }]: arms, interleaved per rep,
//                    reported with their ratio to the first, rep by rep (default: one arm).
//   REPLAY_PASSES=n  play the session n times in the same process; measure the last pass only.
//   REPLAY_SPIN=1    send the messages the agent had read together apart from the others, at
//                    their times (busy-waits; about the recorded number of socket reads), instead
//                    of in bursts of up to 5 ms.
//   REPLAY_CURVE=1   print the CPU per load of each 5 loads.
//   AGENT_MAIN       the agent's entry (default dist/main.js; an arm's `main` overrides it).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';

const [recFile, repsArg, ...agentArgs] = process.argv.slice(2);
if (!recFile) throw new Error('usage: node bench/investigate/replay/replay.mjs <rec.jsonl> [reps] [agent flags...]');
const reps = Number(repsArg ?? 3);
const agentMain = process.env.AGENT_MAIN ?? 'dist/main.js';
const LOAD_PREFIX = '{"method":"Page.loadEventFired"';

const lines = readFileSync(recFile, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line));
const commands = new Map();
const answerTexts = new Map();
const events = [];
let anchor;
for (const line of lines) {
  if (line.d === 'out') {
    const command = JSON.parse(line.m);
    commands.set(command.id, command);
    anchor ??= line.t;
  } else if (line.m.startsWith('{"id":')) {
    answerTexts.set(JSON.parse(line.m).id, line.m);
  } else {
    events.push(line);
  }
}
const keyOf = (method, sessionId, params) => `${method}|${sessionId ?? ''}|${params?.requestId ?? ''}`;
/** Recorded answers by key, without their id: `"result":...}` to append to `{"id":N,`. */
const answers = new Map();
for (const [id, command] of commands) {
  const text = answerTexts.get(id);
  if (text === undefined) continue;
  const answer = JSON.parse(text);
  delete answer.id;
  const key = keyOf(command.method, command.sessionId, command.params);
  if (!answers.has(key)) answers.set(key, []);
  answers.get(key).push(JSON.stringify(answer).slice(1));
}
const loadsBySession = new Map();
for (const event of events) {
  if (!event.m.startsWith(LOAD_PREFIX)) continue;
  const sessionId = JSON.parse(event.m).sessionId;
  loadsBySession.set(sessionId, (loadsBySession.get(sessionId) ?? 0) + 1);
}
const [mainSession, loads] = [...loadsBySession].sort((a, b) => b[1] - a[1])[0];
const timeline = events.filter((e) => e.t >= anchor).map((e) => ({ at: e.t - anchor, m: e.m }));
console.error(`${recFile}: ${events.length} events, ${commands.size} commands, ${loads} loads over ${(timeline.at(-1).at / 1000).toFixed(1)} s`);

function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function replayOnce(variant) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: 256 * 1024 * 1024 });
  await new Promise((resolve) => server.on('listening', resolve));
  const dataDir = mkdtempSync(join(tmpdir(), 'bta-replay-'));
  const args = variant.args ?? agentArgs;
  const child = spawn(
    process.execPath,
    [
      '--max-semi-space-size=4',
      ...(variant.nodeArgs ?? []),
      variant.main ?? agentMain,
      '--cdp-url',
      `ws://127.0.0.1:${server.address().port}/devtools/browser/replay`,
      '--port',
      '0',
      '--token',
      'replay',
      '--log-level',
      'warn',
      ...(args.includes('--data-dir') ? [] : ['--data-dir', dataDir]),
      ...args,
    ],
    { env: { ...process.env, MALLOC_ARENA_MAX: '1', ...variant.env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const loadCpu = [];
  let cpuAtStart;
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const passes = Number(process.env.REPLAY_PASSES ?? 1);
  server.on('connection', (ws) => {
    let started = false;
    ws.on('message', (data) => {
      const command = JSON.parse(data.toString());
      const queue = answers.get(keyOf(command.method, command.sessionId, command.params)) ?? answers.get(keyOf(command.method, command.sessionId));
      const body = queue && queue.length > 1 ? queue.shift() : queue?.[0];
      const fallback = command.sessionId ? { id: command.id, result: {}, sessionId: command.sessionId } : { id: command.id, result: {} };
      ws.send(body === undefined ? JSON.stringify(fallback) : `{"id":${command.id},${body}`);
      if (started) return;
      started = true;
      let pass = 0;
      const send = (m) => {
        ws.send(m);
        if (m.startsWith(LOAD_PREFIX) && m.includes(mainSession)) loadCpu.push(cpuMs(child.pid));
      };
      const runPass = () => {
        const t0 = performance.now();
        if (pass === passes - 1) cpuAtStart = cpuMs(child.pid);
        let i = 0;
        const next = () => {
          if (i < timeline.length) return false;
          if (++pass < passes) setTimeout(runPass, 1000);
          else finish();
          return true;
        };
        const pump = () => {
          if (process.env.REPLAY_SPIN) {
            const until = performance.now() + 2;
            while (i < timeline.length && performance.now() < until) {
              const due = timeline[i].at;
              while (performance.now() - t0 < due) {
                // Busy-wait: timers are too coarse to keep reads apart.
              }
              while (i < timeline.length && timeline[i].at - due < 0.05) send(timeline[i++].m);
            }
            if (!next()) setImmediate(pump);
            return;
          }
          const now = performance.now() - t0;
          while (i < timeline.length && timeline[i].at <= now) send(timeline[i++].m);
          if (!next()) setTimeout(pump, Math.max(0, Math.min(5, timeline[i].at - now)));
        };
        pump();
      };
      runPass();
    });
  });
  let stderr = '';
  const streamUrl = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
      const session = /session id:\s+(\S+)/.exec(stderr)?.[1];
      if (url && session) resolve(`${url}/browsers/${session}/telemetry`);
    });
    child.on('exit', (code) => reject(new Error(`agent exited (${code}): ${stderr.slice(-400)}`)));
  });
  let bytes = 0;
  const subscriber = variant.noSub
    ? undefined
    : http.get(streamUrl, { headers: { authorization: 'Bearer replay' } }, (res) => res.on('data', (chunk) => (bytes += chunk.length)));
  subscriber?.on('error', () => undefined);
  await finished;
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const cpu = cpuMs(child.pid) - cpuAtStart;
  subscriber?.destroy();
  child.kill('SIGTERM');
  await new Promise((resolve) => child.on('exit', resolve));
  server.close();
  rmSync(dataDir, { recursive: true, force: true });
  if (process.env.REPLAY_CURVE) {
    const groups = [];
    for (let k = 0; k + 5 < loadCpu.length; k += 5) groups.push(((loadCpu[k + 5] - loadCpu[k]) / 5).toFixed(1));
    console.error(`${variant.name}: CPU ms/load by 5 loads: ${groups.join(' ')}`);
  }
  return { cpuPerLoad: cpu / loads, streamKiBPerLoad: bytes / 1024 / loads / passes };
}

const median = (values) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const variants = process.env.REPLAY_VARIANTS ? JSON.parse(process.env.REPLAY_VARIANTS) : [{ name: 'agent' }];
const results = new Map(variants.map((v) => [v.name, []]));
for (let rep = 0; rep < reps; rep++) {
  for (let k = 0; k < variants.length; k++) {
    const variant = variants[(k + rep) % variants.length];
    const result = await replayOnce(variant);
    results.get(variant.name).push(result.cpuPerLoad);
    console.error(`rep ${rep + 1} ${variant.name}: ${result.cpuPerLoad.toFixed(2)} ms/load, stream ${result.streamKiBPerLoad.toFixed(1)} KiB/load`);
  }
}
const base = results.get(variants[0].name);
for (const variant of variants) {
  const values = results.get(variant.name);
  const ratio = median(values.map((v, i) => v / base[i]));
  console.log(
    `${variant.name.padEnd(16)} ${median(values).toFixed(2)} ms/load [${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}], paired ratio to ${variants[0].name} ${ratio.toFixed(3)}`,
  );
}
