// What a program around the agent's pieces needs (`browser-telemetry-agent/program`): the
// settings table machinery, signal handling, SQLite and the version.

export * from './settings.ts';
export * from './shutdown.ts';
export * from './sqlite.ts';
export { VERSION } from './version.ts';
