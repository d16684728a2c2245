import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TelemetryStats } from '../../src/telemetry/telemetry-stats.ts';
import type { Category, EventDataByType, EventSource, EventType, TelemetryEvent } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';
import type { CdpConnection, EventName } from '../../src/browser/cdp-connection.ts';
import { AttachedTarget } from '../../src/browser/target-manager.ts';
import { DEFAULT_LIMITS } from '../../src/limits.ts';
import { BrowserClock } from '../../src/telemetry/clock.ts';
import { EventContextTracker, type TargetState } from '../../src/telemetry/event-context.ts';
import type { EmitOptions, FamilyHost, StateHandler } from '../../src/telemetry/family.ts';
import { LoadingTabsFamily } from '../../src/telemetry/loading-tabs-family.ts';
import { PageScriptFamily, REPORT_BURST, REPORTS_PER_SECOND } from '../../src/telemetry/page-script-family.ts';
import { defaultTelemetryConfig, mergeTelemetryConfig, type TelemetryConfig } from '../../src/telemetry/telemetry-config.ts';
import { FakeConnection } from './support/fake-connection.ts';

const CLICK = { type: 'interaction_click', x: 10, y: 20, selector: '#buy', tag: 'BUTTON', text: 'Buy' };

/** The family on a FakeConnection, with a host that does what the core does. */
/** The LCP details of a page_lcp event. */
const lcpOf = (event: TelemetryEvent) => (event.type === 'page_lcp' ? event.data?.lcp_details : undefined);

class Rig implements FamilyHost {
  readonly fake = new FakeConnection();
  readonly connection: CdpConnection = this.fake.asConnection();
  readonly tracker = new EventContextTracker();
  readonly clock = new BrowserClock();
  readonly limits = DEFAULT_LIMITS;
  readonly logger = pino({ level: 'silent' });
  readonly events: TelemetryEvent[] = [];
  readonly shifts: TargetState[] = [];
  nowMs = 1000;
  readonly family = new PageScriptFamily(
    (state) => this.shifts.push(state),
    () => this.nowMs,
  );

  readonly loadingTabs = new LoadingTabsFamily();

  constructor(readonly config: TelemetryConfig = defaultTelemetryConfig()) {
    this.loadingTabs.start(this);
    this.family.start(this);
  }

  handle<E extends EventName>(event: E, handler: StateHandler<E>): void {
    this.fake.on(event, (params, sessionId) => {
      const state = this.tracker.get(sessionId);
      if (state) handler(params, state);
    });
  }

  readonly stats = new TelemetryStats();

  isOn(category: Category): boolean {
    return this.config.enabled && this.config.browser[category].enabled;
  }

  admits(category: Category): boolean {
    return this.isOn(category);
  }

  emit<T extends EventType>(type: T, ts: number, data: EventDataByType[T], options: EmitOptions = {}): void {
    const { truncated, method } = options;
    const source: EventSource = { kind: method ? 'cdp' : 'agent', event: method };
    this.events.push(eventOf<T>(truncated ? { ts, type, source, data, truncated } : { ts, type, source, data }));
  }

  setUpStep<T>(_target: AttachedTarget, _step: string, command: Promise<T>): Promise<T | undefined> {
    return command;
  }

  attach(sessionId: string, targetId: string, type: string, wasWaiting = true, parent?: AttachedTarget): TargetState {
    const info = { targetId, type, url: 'http://a.test/', title: '', attached: true, canAccessOpener: false };
    const state = this.tracker.add(new AttachedTarget(this.connection, sessionId, targetId, type, info, parent, wasWaiting));
    void this.family.setUpTarget(state);
    return state;
  }

  get binding(): { name: string; executionContextName: string } {
    return this.fake.sent.find((c) => c.method === 'Runtime.addBinding')!.params as { name: string; executionContextName: string };
  }

  /** An execution context of `frameId`; in the script's world unless `world` says otherwise. */
  context(sessionId: string, id: number, frameId: string, world = this.binding.executionContextName): void {
    const state = this.tracker.get(sessionId)!;
    const context = {
      id,
      name: world,
      origin: 'http://a.test',
      uniqueId: `u${id}`,
      auxData: { frameId, isDefault: world === '', type: world ? 'isolated' : 'default' },
    };
    this.tracker.recordExecutionContext(state, context);
    this.fake.emit('Runtime.executionContextCreated', { context }, sessionId);
  }

  report(sessionId: string, contextId: number, payload: unknown): void {
    const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
    this.fake.emit('Runtime.bindingCalled', { name: this.binding.name, payload: text, executionContextId: contextId }, sessionId);
  }
}

describe('page script injection', () => {
  it('adds the binding for the script world, then the script in that world with runImmediately', () => {
    const rig = new Rig();
    rig.attach('S1', 'T1', 'page');
    expect(rig.fake.commandsFor('S1')).toEqual(['Runtime.addBinding', 'Page.addScriptToEvaluateOnNewDocument']);
    const script = rig.fake.sent[1]!.params as { source: string; worldName: string; runImmediately: boolean };
    expect(script.worldName).toBe(rig.binding.executionContextName);
    expect(script.runImmediately).toBe(true);
    expect(script.worldName).not.toBe('');
  });

  it('registers on out-of-process iframe sessions too', () => {
    const rig = new Rig();
    rig.attach('S2', 'F2', 'iframe');
    expect(rig.fake.commandsFor('S2')).toEqual(['Runtime.addBinding', 'Page.addScriptToEvaluateOnNewDocument']);
  });

  it("does not run the script in a new iframe's initial empty document, only in the documents after it", () => {
    const rig = new Rig();
    rig.attach('S2', 'F2', 'iframe', true);
    rig.attach('S3', 'F3', 'iframe', false);
    const runImmediately = (sessionId: string) =>
      (rig.fake.sent.find((c) => c.sessionId === sessionId && c.method === 'Page.addScriptToEvaluateOnNewDocument')!.params as { runImmediately: boolean })
        .runImmediately;
    expect(runImmediately('S2')).toBe(false);
    expect(runImmediately('S3')).toBe(true);
  });

  it('registers nothing on workers', () => {
    const rig = new Rig();
    rig.attach('W1', 'W1', 'worker');
    rig.attach('W2', 'W2', 'service_worker');
    expect(rig.fake.sent).toEqual([]);
  });

  it('registers nothing when both page and interaction are off', () => {
    const rig = new Rig(mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { page: { enabled: false }, interaction: { enabled: false } } }));
    rig.attach('S1', 'T1', 'page');
    expect(rig.fake.sent).toEqual([]);
  });

  it('tells the script which categories to install', () => {
    const rig = new Rig(mergeTelemetryConfig(defaultTelemetryConfig(), { browser: { interaction: { enabled: false } } }));
    rig.attach('S1', 'T1', 'page');
    const { source } = rig.fake.sent[1]!.params as { source: string };
    expect(source).toContain(`.install({"binding":"${rig.binding.name}","interaction":false,"page":true,"history":true})`);
  });

  it('uses a world name of its own per agent connection', () => {
    const a = new Rig();
    const b = new Rig();
    expect(a.family.worldName).not.toBe(b.family.worldName);
  });
});

describe('page script on a config change', () => {
  let rig: Rig;
  let state: TargetState;
  let scripts: number;

  beforeEach(() => {
    rig = new Rig(mergeTelemetryConfig(defaultTelemetryConfig(), {}));
    scripts = 0;
    rig.fake.answers.set('Page.addScriptToEvaluateOnNewDocument', async () => ({ identifier: `script-${++scripts}` }));
    state = rig.attach('S1', 'T1', 'page');
    rig.context('S1', 5, 'T1');
    rig.context('S1', 6, 'F2');
  });

  async function switchTo(browser: Partial<Record<Category, boolean>>): Promise<string[]> {
    for (const [category, enabled] of Object.entries(browser)) rig.config.browser[category as Category].enabled = enabled;
    rig.fake.sent.length = 0;
    await Promise.all(rig.family.reconfigure(state));
    return rig.fake.sent.map((c) => c.method);
  }

  const lastSource = () =>
    rig.fake.sent.filter((c) => c.method === 'Page.addScriptToEvaluateOnNewDocument').at(-1)!.params as { source: string; runImmediately: boolean };

  it('swaps the script for one without listeners when interaction is turned off', async () => {
    expect(await switchTo({ interaction: false })).toEqual([
      'Runtime.addBinding',
      'Page.addScriptToEvaluateOnNewDocument',
      'Page.removeScriptToEvaluateOnNewDocument',
    ]);
    expect(rig.fake.sent.find((c) => c.method === 'Page.removeScriptToEvaluateOnNewDocument')!.params).toEqual({ identifier: 'script-1' });
    expect(lastSource().source).toContain('"interaction":false,"page":true,"history":false');
    expect(lastSource().runImmediately).toBe(true);
  });

  it('unregisters the script and stops it in every existing world when both categories are turned off', async () => {
    const methods = await switchTo({ interaction: false, page: false });
    expect(methods.sort()).toEqual(['Page.removeScriptToEvaluateOnNewDocument', 'Runtime.evaluate', 'Runtime.evaluate']);
    const evaluations = rig.fake.sent.filter((c) => c.method === 'Runtime.evaluate').map((c) => c.params as { contextId: number; expression: string });
    expect(evaluations.map((e) => e.contextId).sort()).toEqual([5, 6]);
    expect(evaluations[0]!.expression).toContain('configure({"binding"');
  });

  it('registers binding and script again when a category comes back on', async () => {
    await switchTo({ interaction: false, page: false });
    expect(await switchTo({ page: true })).toEqual(['Runtime.addBinding', 'Page.addScriptToEvaluateOnNewDocument']);
    expect(lastSource().source).toContain('"interaction":false,"page":true,"history":false');
  });

  it('leaves the script alone when another category changes', async () => {
    expect(await switchTo({ console: false, network: false })).toEqual([]);
  });
});

describe('page script reports', () => {
  let rig: Rig;

  beforeEach(() => {
    rig = new Rig();
    rig.attach('S1', 'T1', 'page');
    rig.tracker.recordFrame(rig.tracker.get('S1')!, { id: 'T1', loaderId: 'L1', url: 'http://a.test/' } as never);
    rig.tracker.recordFrame(rig.tracker.get('S1')!, { id: 'F2', loaderId: 'L2', url: 'http://a.test/child' } as never);
    rig.context('S1', 5, 'T1');
    rig.context('S1', 6, 'F2');
  });
  afterEach(() => rig.family.dispose());

  it('turns a click report into interaction_click with the context from the agent', () => {
    rig.report('S1', 5, CLICK);
    expect(rig.events).toHaveLength(1);
    expect(rig.events[0]!.data).toEqual({
      session_id: 'S1',
      target_id: 'T1',
      target_type: 'page',
      frame_id: 'T1',
      loader_id: 'L1',
      url: 'http://a.test/',
      nav_seq: 0,
      x: 10,
      y: 20,
      selector: '#buy',
      tag: 'BUTTON',
      text: 'Buy',
    });
    expect(rig.events[0]!.source).toMatchObject({ kind: 'cdp', event: 'Runtime.bindingCalled' });
  });

  it("takes the frame from the binding call's execution context", () => {
    rig.report('S1', 6, CLICK);
    expect(rig.events[0]!.data).toMatchObject({ frame_id: 'F2', loader_id: 'L2', url: 'http://a.test/child' });
  });

  it('gives a layout shift source_frame_id, duration 0 and its details, and feeds the settle machines', () => {
    rig.report('S1', 6, { type: 'page_layout_shift', time: 1234.5, value: 0.25, had_recent_input: false });
    expect(rig.events[0]!.data).toMatchObject({
      frame_id: 'F2',
      source_frame_id: 'F2',
      time: 1234.5,
      duration: 0,
      layout_shift_details: { value: 0.25, had_recent_input: false },
    });
    expect(rig.shifts.map((s) => s.target.sessionId)).toEqual(['S1']);
  });

  /** What Runtime.evaluate answers for the list of LCP elements: one node per backend node id. */
  const nodes =
    (...ids: number[]) =>
    async () => ({
      result: {
        type: 'object',
        subtype: 'array',
        objectId: 'o1',
        deepSerializedValue: { type: 'array', value: ids.map((id) => ({ type: 'node', value: { backendNodeId: id } })) },
      },
    });
  const lcp = (ref: number, elementId = 'hero') => ({
    type: 'page_lcp',
    time: 50,
    render_time: 50,
    load_time: 40,
    size: 240000,
    element_id: elementId,
    url: 'http://a.test/h.png',
    element_ref: ref,
  });

  it('resolves the LCP element to a backend node id in the script world', async () => {
    rig.fake.answers.set('Runtime.evaluate', nodes(42));
    rig.report('S1', 5, {
      type: 'page_lcp',
      time: 50,
      render_time: 50,
      load_time: 40,
      size: 240000,
      element_id: 'hero',
      url: 'http://a.test/h.png',
      element_ref: 3,
    });
    await new Promise((resolve) => setImmediate(resolve));
    const evaluate = rig.fake.sent.find((c) => c.method === 'Runtime.evaluate')!.params as { contextId: number; expression: string };
    expect(evaluate.contextId).toBe(5);
    expect(evaluate.expression).toContain('takeLcpElement(3)');
    expect(rig.events[0]!.data).toMatchObject({
      lcp_details: { render_time: 50, load_time: 40, size: 240000, element_id: 'hero', url: 'http://a.test/h.png', node_id: 42 },
    });
    expect(rig.fake.sent.some((c) => c.method === 'Runtime.releaseObject')).toBe(true);
  });

  it('resolves the candidates reported while the tab loads at its load event, one evaluation per document', async () => {
    rig.fake.answers.set('Runtime.evaluate', nodes(7, 8));
    rig.fake.emit('Page.frameStartedLoading', { frameId: 'T1' }, 'S1');
    rig.report('S1', 5, lcp(1, 'first'));
    rig.report('S1', 5, lcp(2, 'second'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(rig.fake.sent.filter((c) => c.method === 'Runtime.evaluate')).toHaveLength(0);
    expect(rig.events).toHaveLength(0);
    rig.fake.emit('Page.loadEventFired', { timestamp: 1 }, 'S1');
    await new Promise((resolve) => setImmediate(resolve));
    const evaluations = rig.fake.sent.filter((c) => c.method === 'Runtime.evaluate');
    expect(evaluations).toHaveLength(1);
    expect((evaluations[0]!.params as { expression: string }).expression).toMatch(/takeLcpElement\(1\).*takeLcpElement\(2\)/);
    expect(rig.events.map((e) => [lcpOf(e)?.element_id, lcpOf(e)?.node_id])).toEqual([
      ['first', 7],
      ['second', 8],
    ]);
  });

  it('reports the LCP without node_id when the element cannot be resolved', async () => {
    rig.fake.answers.set('Runtime.evaluate', async () => Promise.reject(new Error('Cannot find context with specified id')));
    rig.report('S1', 5, { type: 'page_lcp', time: 50, render_time: 0, load_time: 40, size: 100, element_id: '', url: '', element_ref: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(rig.events[0]!.data).toMatchObject({ lcp_details: { render_time: 0, size: 100 } });
    expect(lcpOf(rig.events[0]!)).not.toHaveProperty('node_id');
  });

  it('marks an LCP whose URL the script had to cut as truncated', () => {
    rig.report('S1', 5, {
      type: 'page_lcp',
      time: 50,
      render_time: 50,
      load_time: 40,
      size: 100,
      element_id: '',
      url: 'data:image/png;base64,AAAA',
      truncated: true,
    });
    expect(rig.events[0]!.truncated).toBe(true);
  });

  it('drops, and counts, a binding call from a context outside the script world', () => {
    rig.context('S1', 9, 'T1', '');
    rig.report('S1', 9, CLICK);
    expect(rig.events).toEqual([]);
    expect(rig.stats.dropped.invalid_report).toBe(1);
  });

  it('drops, and counts, a report that brings context fields of its own', () => {
    rig.report('S1', 5, { ...CLICK, target_id: 'forged', nav_seq: 99 });
    expect(rig.events).toEqual([]);
    expect(rig.stats.dropped.invalid_report).toBe(1);
  });

  it('drops, and counts, a report that is not valid', () => {
    rig.report('S1', 5, 'not json');
    rig.report('S1', 5, { ...CLICK, x: 1.5 });
    rig.report('S1', 5, { type: 'console_log', text: 'x' });
    expect(rig.events).toEqual([]);
    expect(rig.stats.dropped.invalid_report).toBe(3);
  });

  it('ignores bindings of other names', () => {
    rig.fake.emit('Runtime.bindingCalled', { name: 'somethingElse', payload: JSON.stringify(CLICK), executionContextId: 5 }, 'S1');
    expect(rig.events).toEqual([]);
    expect(rig.stats.dropped).toMatchObject({ invalid_report: 0, rate_limit: 0 });
  });

  it(`admits a burst of ${REPORT_BURST} reports per target and drops, and counts, the rest`, () => {
    for (let i = 0; i < REPORT_BURST + 50; i++) rig.report('S1', 5, CLICK);
    expect(rig.events).toHaveLength(REPORT_BURST);
    expect(rig.stats.dropped.rate_limit).toBe(50);
  });

  it(`admits ${REPORTS_PER_SECOND} reports per second sustained`, () => {
    for (let i = 0; i < REPORT_BURST; i++) rig.report('S1', 5, CLICK);
    rig.events.length = 0;
    for (let ms = 0; ms < 1000; ms++) {
      rig.nowMs += 1;
      rig.report('S1', 5, CLICK);
      rig.report('S1', 5, CLICK);
    }
    expect(rig.events).toHaveLength(REPORTS_PER_SECOND);
    expect(rig.stats.dropped.rate_limit).toBe(1000);
  });

  it('rate-limits each target on its own', () => {
    rig.attach('S2', 'F9', 'iframe');
    rig.context('S2', 5, 'F9');
    for (let i = 0; i < REPORT_BURST; i++) rig.report('S1', 5, CLICK);
    rig.report('S2', 5, CLICK);
    expect(rig.events.at(-1)!.data).toMatchObject({ target_id: 'F9' });
    expect(rig.stats.dropped.rate_limit).toBe(0);
  });

  it('produces no interaction event when interaction is turned off', () => {
    rig.config.browser.interaction.enabled = false;
    rig.report('S1', 5, CLICK);
    expect(rig.events).toEqual([]);
  });
});
