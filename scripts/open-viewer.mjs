#!/usr/bin/env node
// Opens the live session viewer (docs/viewer.md) in the default browser: asks the agent for a
// one-time viewer URL with the bearer token, prints it, and hands it to xdg-open / open / start.
//
//   AGENT_TOKEN=<token> node scripts/open-viewer.mjs [agent URL]
//
// The agent URL defaults to AGENT_URL, else http://127.0.0.1:10001. The session id is SESSION_ID
// when set, else the one /healthz names to a caller with a known token. The token is read from
// the environment only: on the command line every local user could read it in the process list.
import { spawn } from 'node:child_process';

const agentUrl = (process.argv[2] ?? process.env.AGENT_URL ?? 'http://127.0.0.1:10001').replace(/\/+$/, '');
const token = process.env.AGENT_TOKEN;
if (!token) fail('set AGENT_TOKEN to a token with the telemetry:read scope (the agent prints one at start)');
const auth = { authorization: `Bearer ${token}` };

let sessionId = process.env.SESSION_ID;
if (!sessionId) {
  const health = await request(`${agentUrl}/healthz`, { headers: auth });
  sessionId = (await health.json()).session_id;
  if (!sessionId) fail(`${agentUrl}/healthz did not name the session: is AGENT_TOKEN one of the agent's tokens?`);
}

const minted = await request(`${agentUrl}/browsers/${encodeURIComponent(sessionId)}/viewer/sessions`, { method: 'POST', headers: auth });
if (minted.status !== 201) fail(`the agent answered ${minted.status}: ${await minted.text()}`);
const { url, expires_at: expiresAt } = await minted.json();
process.stdout.write(`${url}\n`);
process.stderr.write(`One-time viewer link, valid until ${expiresAt}; opening it in the default browser.\n`);

const [command, ...args] = process.platform === 'darwin' ? ['open', url] : process.platform === 'win32' ? ['cmd', '/c', 'start', '', url] : ['xdg-open', url];
const opener = spawn(command, args, { stdio: 'ignore', detached: true });
opener.on('error', () => process.stderr.write(`Could not run ${command}: open the link above yourself.\n`));
opener.unref();

async function request(url, init) {
  try {
    return await fetch(url, init);
  } catch (err) {
    fail(`cannot reach ${url}: ${err.cause?.code ?? err.message}`);
  }
}

function fail(message) {
  process.stderr.write(`open-viewer: ${message}\n`);
  process.exit(1);
}
