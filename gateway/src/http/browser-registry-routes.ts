// POST /browsers (docs/gateway.md): the VM provisioner registers a session's agent (its URL and its
// token) under an optional project. Organization-wide keys only. The response never shows the
// agent's address or token: clients must always come through the gateway.

import type { FastifyInstance } from 'fastify';
import { invalidInput } from 'browser-telemetry-agent/http-kit';
import type { GatewayStore } from '../storage/store.ts';
import type { AgentCheck } from './agent-check.ts';
import { principalOf, requireOrgWide } from './auth.ts';
import { browserRegistrationView } from './views.ts';

const registerBody = {
  type: 'object',
  properties: {
    // The agent's own rule for session ids (src/config.ts).
    session_id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' },
    agent_url: { type: 'string', minLength: 1, maxLength: 2048 },
    agent_token: { type: 'string', pattern: '^[\\x21-\\x7e]{1,4096}$' },
    project_id: { type: ['string', 'null'], minLength: 1 },
  },
  required: ['session_id', 'agent_url', 'agent_token'],
  additionalProperties: false,
} as const;

interface RegisterBody {
  session_id: string;
  agent_url: string;
  agent_token: string;
  project_id?: string | null;
}

/** `http(s)://host[:port][/prefix]`, without credentials, query or fragment; trailing `/` dropped. */
export function normalizeAgentUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username || url.password || url.search || url.hash || url.hostname === '') return undefined;
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/**
 * `onRegistered`: the archive starts following at once rather than at its next renewal
 * (docs/gateway.md). `check`: the agent is asked first (--check-agent); none: registered unchecked.
 */
export function registerBrowserRegistryRoutes(app: FastifyInstance, store: GatewayStore, onRegistered: () => void = () => undefined, check?: AgentCheck): void {
  app.post('/browsers', { schema: { body: registerBody } }, async (request, reply) => {
    requireOrgWide(principalOf(request));
    const body = request.body as RegisterBody;
    const agentUrl = normalizeAgentUrl(body.agent_url);
    if (agentUrl === undefined) {
      const message = 'must be an http(s) URL without credentials, query or fragment';
      throw invalidInput(`agent_url: ${message}`, [{ code: 'invalid_input', message, field: 'agent_url' }]);
    }
    await check?.requireServes(agentUrl, body.session_id, body.agent_token);
    const browser = await store.registerBrowser({
      sessionId: body.session_id,
      projectId: body.project_id ?? null,
      agentUrl,
      agentToken: body.agent_token,
    });
    onRegistered();
    return reply.code(201).send(browserRegistrationView(browser, request.headers.host ?? 'localhost'));
  });
}
