// POST /browsers asks the agent before registering (docs/gateway.md "Endpoints", --check-agent):
// GET /browsers/{id} with the registered token, so a registration names a session its agent
// serves, with a token it accepts, instead of failing later on every forwarded path and in the
// archive.

import type { IncomingMessage } from 'node:http';
import { invalidInput } from 'browser-telemetry-agent/http-kit';
import { AgentConnections } from '../agent-link/agent-connections.ts';
import type { AgentTimeouts } from '../agent-link/agent-silence.ts';
import { browserTimedOut, browserUnreachable } from './errors.ts';

export class AgentCheck {
  // Its own pool: a registration never waits behind forwarded requests.
  private readonly connections = new AgentConnections();

  constructor(private readonly timeouts: Pick<AgentTimeouts, 'connectMs' | 'responseMs'>) {}

  /**
   * Resolves when the agent at `agentUrl` serves `sessionId` for `token`; else throws the answer:
   * 400 naming session_id (the agent does not serve it) or agent_token (the agent refused it),
   * 502 (unreachable, or another answer), 504 (no answer in time).
   */
  async requireServes(agentUrl: string, sessionId: string, token: string): Promise<void> {
    const response = await this.ask(new URL(`${agentUrl}/browsers/${encodeURIComponent(sessionId)}`), token);
    const status = response.statusCode ?? 0;
    response.resume();
    if (status === 200) return;
    if (status === 404) {
      const message = 'the agent at agent_url does not serve this session (it answered 404)';
      throw invalidInput(`session_id: ${message}`, [{ code: 'invalid_input', message, field: 'session_id' }]);
    }
    if (status === 401 || status === 403) {
      const message = `the agent at agent_url refused this token (HTTP ${status}); it needs at least the telemetry:read scope`;
      throw invalidInput(`agent_token: ${message}`, [{ code: 'invalid_input', message, field: 'agent_token' }]);
    }
    throw browserUnreachable(`the agent at agent_url answered HTTP ${status} to GET /browsers/{id}`);
  }

  /** Closes the pool's sockets (gateway shutdown). */
  close(): void {
    this.connections.destroy();
  }

  /** The response head of GET `target`, within the connect and response timeouts. */
  private ask(target: URL, token: string): Promise<IncomingMessage> {
    const limitMs = this.timeouts.connectMs + this.timeouts.responseMs;
    return new Promise((resolve, reject) => {
      const request = this.connections.request(target, 'GET', { authorization: `Bearer ${token}`, accept: 'application/json' });
      const timer = setTimeout(() => {
        reject(browserTimedOut('answer to the registration check', limitMs));
        request.destroy();
      }, limitMs);
      request.on('response', (response) => {
        clearTimeout(timer);
        resolve(response);
      });
      request.on('error', (err) => {
        clearTimeout(timer);
        reject(browserUnreachable(`the agent at agent_url could not be reached: ${err.message}`));
      });
      request.end();
    });
  }
}
