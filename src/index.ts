// Public programmatic API of the agent package (the gateway is its own package, gateway/).
export { startAgent, type Agent, type StartAgentOptions } from './agent.ts';
export type { Config, ConfigOptions, Scope, TokenGrant } from './config.ts';
export type * from '../injected/schema.ts';
