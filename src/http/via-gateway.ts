// The headers the gateway sets on the requests it forwards to an agent (docs/gateway.md).

/** Sent by the gateway on forwarded requests: the agent's own URLs are not for its clients. */
export const VIA_GATEWAY_HEADER = 'x-bta-via-gateway';

/**
 * Sent by the gateway with VIA_GATEWAY_HEADER: the API caller it authenticated (`key:<API key id>`),
 * whose steps and actions go together (docs/events.md "Steps").
 */
export const CALLER_HEADER = 'x-bta-caller';

/** Sent by the gateway with VIA_GATEWAY_HEADER on a step its MCP server marks: `mcp` (docs/events.md "Steps"). */
export const STEP_VIA_HEADER = 'x-bta-step-via';
