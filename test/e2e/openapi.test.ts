import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/agent.ts';
import { TOKEN } from './support/harness.ts';

describe('GET /openapi.json', () => {
  let agent: Agent;
  let doc: any;

  beforeAll(async () => {
    agent = await startAgent({ port: 0, token: TOKEN, logLevel: 'silent', screenshots: false });
    const response = await fetch(`${agent.url}/openapi.json`);
    expect(response.status).toBe(200);
    doc = await response.json();
  });
  afterAll(() => agent?.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined();
  });

  it('lists every route of the agent with its method', () => {
    const routes = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        'GET /browsers/{id}',
        'PATCH /browsers/{id}',
        'DELETE /browsers/{id}',
        'GET /browsers/{id}/telemetry',
        'GET /browsers/{id}/telemetry/stream',
        'GET /browsers/{id}/telemetry/events',
        'POST /browsers/{id}/telemetry/steps',
        'GET /browsers/{id}/har',
        'GET /browsers/{id}/trace',
        'POST /browsers/{id}/viewer/sessions',
        'POST /browsers/{id}/replays',
        'GET /browsers/{id}/replays',
        'POST /browsers/{id}/replays/{replay_id}/stop',
        'GET /browsers/{id}/replays/{replay_id}',
        'POST /browsers/{id}/computer/batch',
        'PUT /browsers/{id}/fs/write_file',
        'GET /healthz',
        'GET /metrics',
      ].sort(),
    );
  });

  it('documents the trace as a zip with its query and the 413 of the size cap', () => {
    const trace = doc.paths['/browsers/{id}/trace'].get;
    expect(Object.keys(trace.responses[200].content)).toEqual(['application/zip']);
    expect(trace.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['since', 'until', 'target_id', 'nav_seq']));
    expect(trace.responses[413]).toBeDefined();
  });

  it('documents the steps route: its body with the limits, the step_id answer, and the 413 and 429', () => {
    const steps = doc.paths['/browsers/{id}/telemetry/steps'].post;
    const body = steps.requestBody.content['application/json'].schema;
    expect(body.properties.name).toMatchObject({ type: 'string', maxLength: 200 });
    expect(body.properties.data.type).toBe('object');
    expect(Object.keys(steps.responses[200].content['application/json'].schema.properties)).toEqual(['step_id', 'recorded']);
    expect([steps.responses[413], steps.responses[429]].every((r) => r !== undefined)).toBe(true);
    expect(doc.paths['/browsers/{id}/telemetry/events'].get.parameters.map((p: { name: string }) => p.name)).toContain('step_id');
  });

  it('describes request schemas: the batch actions, the write_file query and body, the PATCH body', () => {
    const batch = doc.paths['/browsers/{id}/computer/batch'].post;
    expect(JSON.stringify(batch.requestBody)).toContain('click_mouse');
    const write = doc.paths['/browsers/{id}/fs/write_file'].put;
    expect(write.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['id', 'path', 'mode']));
    expect(Object.keys(write.requestBody.content)).toEqual(['application/octet-stream']);
    expect(JSON.stringify(doc.paths['/browsers/{id}'].patch.requestBody)).toContain('interaction');
  });

  it('gives every authenticated route the error body for 401, 403 and 404, and the bearer scheme', () => {
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      if (path === '/healthz') continue;
      for (const op of Object.values(ops)) {
        for (const status of ['401', '403']) expect(op.responses[status], `${path} ${status}`).toBeDefined();
        expect(JSON.stringify(op.responses['401'])).toMatch(/ErrorBody|"code"/);
      }
    }
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/healthz'].get.security).toEqual([]);
  });

  it('documents the stream as text/event-stream and the success statuses of each operation', () => {
    expect(Object.keys(doc.paths['/browsers/{id}/telemetry'].get.responses['200'].content)).toEqual(['text/event-stream']);
    expect(doc.paths['/browsers/{id}/computer/batch'].post.responses['204']).toBeDefined();
    expect(doc.paths['/browsers/{id}/fs/write_file'].put.responses['201']).toBeDefined();
    expect(doc.paths['/browsers/{id}'].delete.responses['204']).toBeDefined();
    expect(doc.paths['/browsers/{id}/computer/batch'].post.responses['422']).toBeDefined();
    expect(doc.paths['/browsers/{id}/fs/write_file'].put.responses['413']).toBeDefined();
  });

  it('documents the replays: the start body, the 409s, and the video with its Range answers', () => {
    const start = doc.paths['/browsers/{id}/replays'].post;
    expect(Object.keys(start.requestBody.content['application/json'].schema.properties)).toEqual(['framerate', 'max_duration_in_seconds', 'record_audio']);
    expect(start.responses['409']).toBeDefined();
    const download = doc.paths['/browsers/{id}/replays/{replay_id}'].get;
    expect(Object.keys(download.responses['206'].content)).toEqual(['video/mp4', 'video/webm']);
    expect(download.responses['416']).toBeDefined();
    expect(doc.components.schemas.ErrorBody.properties.code.enum).toEqual(
      expect.arrayContaining(['replay_in_progress', 'replay_not_ready', 'range_not_satisfiable']),
    );
  });
});
