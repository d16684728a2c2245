import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleErrorData, ConsoleLogData } from '../../injected/schema.ts';
import { consoleText, startRig, type Tab, type TestRig } from './support/harness.ts';

const PAGE = `<!doctype html><title>console</title><div id="d">x</div><script>
console.log('hello', 42, true, null, undefined, {a: 1, b: 'two'}, [1, 2, 3], document.getElementById('d'));
console.warn('careful', 1.5);
console.error('bad thing', new Error('inner'));
console.debug('dbg');
console.log('L'.repeat(100000));
setTimeout(() => { Promise.reject(new Error('rejected')); }, 0);
setTimeout(() => { null.f(); }, 0);
</script>`;

describe('console telemetry', () => {
  let rig: TestRig;
  let tab: Tab;
  let pageUrl: string;

  beforeAll(async () => {
    rig = await startRig();
    pageUrl = rig.server.route('/console.html', PAGE);
    tab = await rig.driver.firstPage();
    await tab.ready(rig.stream);
    await tab.navigate(pageUrl);
    await rig.stream.waitFor((s) => s.ofType('console_error').length >= 3, 'three console errors');
  });
  afterAll(() => rig?.close());

  const byText = (text: string) => rig.stream.events.find((e) => consoleText(e) === text);

  it('reports console.log with the exact fields and context', () => {
    const event = byText('hello')!;
    expect(event.type).toBe('console_log');
    const data = event.data as ConsoleLogData;
    expect(data.level).toBe('log');
    expect(data.args.slice(0, 5)).toEqual(['hello', '42', 'true', 'null', 'undefined']);
    expect(data).toMatchObject({
      session_id: expect.any(String),
      target_id: tab.targetId,
      target_type: 'page',
      frame_id: tab.targetId,
      loader_id: expect.any(String),
      url: pageUrl,
      nav_seq: 1,
    });
    expect(data.stack_trace!.callFrames[0]).toMatchObject({ url: pageUrl, lineNumber: 1 });
    expect(Object.keys(event).sort()).toEqual(['category', 'data', 'source', 'ts', 'type']);
    expect(event.category).toBe('console');
    expect(event.source).toEqual({
      kind: 'cdp',
      event: 'Runtime.consoleAPICalled',
      metadata: { cdp_session_id: data.session_id, target_id: tab.targetId, target_type: 'page' },
    });
  });

  it('renders objects, arrays and DOM nodes by description, never as "object"', () => {
    const args = (byText('hello')!.data as ConsoleLogData).args;
    expect(args).toHaveLength(8);
    for (const rendered of args.slice(5)) expect(rendered).not.toMatch(/^object$/i);
    expect(args[5]).toContain('a: 1');
    expect(args[6]).toContain('1, 2, 3');
    expect(args[7]).toBe('div#d');
  });

  it('passes the console level through verbatim', () => {
    expect((byText('careful')!.data as ConsoleLogData).level).toBe('warning');
    expect((byText('dbg')!.data as ConsoleLogData).level).toBe('debug');
  });

  it('reports console.error as console_error with level and args', () => {
    const event = byText('bad thing')!;
    expect(event.type).toBe('console_error');
    const data = event.data as ConsoleErrorData;
    expect(data.level).toBe('error');
    expect(data.args![1]).toMatch(/^Error: inner\n\s+at /);
  });

  it('reports an uncaught exception with the message DevTools shows and its position', () => {
    const event = rig.stream.ofType('console_error').find((e) => consoleText(e)?.startsWith('Uncaught TypeError'))!;
    const data = event.data as ConsoleErrorData;
    expect(data.text).toBe("Uncaught TypeError: Cannot read properties of null (reading 'f')");
    expect(data).toMatchObject({ line: 7, source_url: pageUrl, target_type: 'page', nav_seq: 1 });
    expect(typeof data.column).toBe('number');
    expect(data.level).toBeUndefined();
    expect(data.args).toBeUndefined();
    expect(event.source.event).toBe('Runtime.exceptionThrown');
  });

  it('reports an unhandled rejection as Uncaught (in promise)', () => {
    const event = rig.stream.ofType('console_error').find((e) => consoleText(e) === 'Uncaught (in promise) Error: rejected');
    expect(event).toBeDefined();
  });

  it('cuts a 100 KB string to the limit and marks the event truncated', () => {
    const event = rig.stream.ofType('console_log').find((e) => consoleText(e)?.startsWith('LLLL'))!;
    expect(event.truncated).toBe(true);
    const data = event.data as ConsoleLogData;
    expect(data.text).toHaveLength(16 * 1024);
    expect(data.args[0]).toHaveLength(16 * 1024);
  });

  it('stamps console events with the browser time of the call', () => {
    const event = byText('hello')!;
    const now = Date.now() * 1000;
    expect(Number.isInteger(event.ts)).toBe(true);
    expect(event.ts).toBeLessThanOrEqual(now);
    expect(event.ts).toBeGreaterThan(now - 60_000_000);
  });
});
