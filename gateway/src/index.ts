// Public programmatic API of the gateway package.
export { startGateway, startGatewayWithConfig, type Gateway, type StartGatewayOptions } from './gateway.ts';
export type { GatewayConfig } from './config.ts';
