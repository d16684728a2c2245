// The header the gateway sets on every request it forwards to an agent (docs/gateway.md).

/** Sent by the gateway on forwarded requests: the agent's own URLs are not for its clients. */
export const VIA_GATEWAY_HEADER = 'x-bta-via-gateway';
