// The event model, what the gateway package takes from the agent to store, filter and export what
// it archives (`browser-telemetry-agent/events`): the schema, filters, resume positions, time
// bounds, the HAR builder, and what an exhaustive switch over event types needs.

export type * from '../injected/schema.ts';
export { assertNever, skipUnknown } from './assert-never.ts';
export * from './stream/event-filter.ts';
export * from './stream/start-position.ts';
export { parseTimeBound } from './stream/history.ts';
export * from './export/har.ts';
export * from './export/trace-archive.ts';
