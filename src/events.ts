// The event model, what the gateway package takes from the agent to store, filter and export what
// it archives (`browser-telemetry-agent/events`): the schema, filters, resume positions, time
// bounds and the HAR builder.

export type * from '../injected/schema.ts';
export * from './stream/event-filter.ts';
export * from './stream/start-position.ts';
export { parseTimeBound } from './stream/history.ts';
export * from './export/har.ts';
export * from './export/trace-archive.ts';
