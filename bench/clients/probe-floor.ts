// Helper process for the idle section (docs/performance.md "Idle"): the floor of an idle agent, a
// Node process that does nothing but what the agent's health probe does, `Browser.getVersion`
// over the browser's websocket once a second. Its CPU over the same window, on the same machine,
// is what the idle line's 0.1% is held against when the machine itself costs more.
//
// argv[2]: the browser's websocket URL.

import WebSocket from 'ws';

const ws = new WebSocket(process.argv[2]!, { perMessageDeflate: false, maxPayload: 1 << 20 });
let id = 0;
ws.on('open', () => {
  setInterval(() => ws.send(JSON.stringify({ id: ++id, method: 'Browser.getVersion' })), 1000);
});
ws.on('message', () => undefined);
ws.on('error', (err) => {
  console.error(err.message);
  process.exit(1);
});
