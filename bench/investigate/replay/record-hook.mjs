// Records an agent's CDP traffic for bench/investigate/replay/replay.mjs (docs/performance.md "Replaying a
// recorded session"): preloaded into the agent's process, it writes every websocket message in
// and out as a JSON line { d: 'in' | 'out', t: ms since start, m: text } to $REC_FILE.
//
//   NODE_OPTIONS="--import $PWD/bench/investigate/replay/record-hook.mjs" REC_FILE=/tmp/rec.jsonl node dist/main.js ...
//
// The agent's only websockets are its CDP connection's (chrome-remote-interface's ws 8, the same
// class as this import's).
import { openSync, writeSync } from 'node:fs';
import WebSocket from 'ws';

const file = process.env.REC_FILE;
if (!file) throw new Error('record-hook: set REC_FILE');
const fd = openSync(file, 'w');
const start = process.hrtime.bigint();
const write = (d, m) => writeSync(fd, `${JSON.stringify({ d, t: Number(process.hrtime.bigint() - start) / 1e6, m })}\n`);

const emit = WebSocket.prototype.emit;
WebSocket.prototype.emit = function (event, ...args) {
  if (event === 'message') write('in', args[0].toString());
  return emit.call(this, event, ...args);
};
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (data, ...rest) {
  write('out', String(data));
  return send.call(this, data, ...rest);
};
