// Public programmatic API.
export { startAgent, type Agent, type StartAgentOptions } from './agent.ts';
export type { Config, ConfigOptions, Scope, TokenGrant } from './config.ts';
export type * from '../injected/schema.ts';
export { startGateway } from './gateway/gateway.ts';
