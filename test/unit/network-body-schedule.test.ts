// When deferred response bodies are fetched (src/telemetry/body-schedule.ts), on fake timers.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BODY_QUIET_MS, BodySchedule, MAX_DEFER_MS, type DeferredBody } from '../../src/telemetry/body-schedule.ts';

/** A deferred body that records how it ended. */
function body(name: string, log: string[], over: Partial<DeferredBody> = {}): DeferredBody {
  return {
    sessionId: 'S-page',
    rootFrameId: 'T-page',
    bytes: 100,
    durable: true,
    run: (urgent) => log.push(`${name}:${urgent ? 'urgent' : 'run'}`),
    drop: () => log.push(`${name}:drop`),
    ...over,
  };
}

describe('BodySchedule', () => {
  let log: string[];
  let schedule: BodySchedule;

  beforeEach(() => {
    vi.useFakeTimers();
    log = [];
    schedule = new BodySchedule();
  });
  afterEach(() => {
    schedule.dispose();
    vi.useRealTimers();
  });

  it('holds the bodies of a loading tab until its load event, then fetches them in order', () => {
    schedule.documentRequested('tab', 'T-page', true);
    schedule.defer('tab', body('a', log));
    schedule.defer('tab', body('b', log));
    vi.advanceTimersByTime(MAX_DEFER_MS - 1);
    expect(log).toEqual([]);
    schedule.loaded('tab');
    expect(log).toEqual(['a:run', 'b:run']);
  });

  it('after the load, fetches once no request of the tab has been in flight for BODY_QUIET_MS', () => {
    schedule.requestStarted('tab');
    schedule.defer('tab', body('a', log));
    vi.advanceTimersByTime(1000);
    schedule.requestEnded('tab');
    schedule.requestStarted('tab');
    schedule.requestEnded('tab');
    vi.advanceTimersByTime(BODY_QUIET_MS - 1);
    expect(log).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(log).toEqual(['a:run']);
  });

  it('fetches at most MAX_DEFER_MS after the first body, whatever the tab does', () => {
    schedule.documentRequested('tab', 'T-page', true);
    schedule.defer('tab', body('a', log));
    vi.advanceTimersByTime(MAX_DEFER_MS);
    expect(log).toEqual(['a:run']);
  });

  it('fetches the oldest bodies at once beyond the byte budget', () => {
    const small = new BodySchedule({ maxDeferredBytes: 250 });
    small.documentRequested('tab', 'T-page', true);
    small.defer('tab', body('a', log));
    small.defer('tab', body('b', log));
    small.defer('tab', body('c', log));
    expect(log).toEqual(['a:run']);
    small.dispose();
  });

  it('fetches at once, urgently, the bodies without durable storage that a new document of their frame drops', () => {
    schedule.documentRequested('tab', 'T-page', true);
    schedule.defer('tab', body('page', log, { durable: false }));
    schedule.defer('tab', body('iframe', log, { durable: false, sessionId: 'S-iframe', rootFrameId: 'T-iframe' }));
    schedule.defer('tab', body('durable', log));
    schedule.documentRequested('tab', 'T-iframe', false);
    expect(log).toEqual(['iframe:urgent']);
    schedule.documentRequested('tab', 'T-page', true);
    expect(log).toEqual(['iframe:urgent', 'page:urgent']);
  });

  it('drops the bodies of a session that ended, and of a tab that closed', () => {
    schedule.documentRequested('tab', 'T-page', true);
    schedule.defer('tab', body('iframe', log, { sessionId: 'S-iframe' }));
    schedule.defer('tab', body('page', log));
    schedule.dropSession('S-iframe');
    expect(log).toEqual(['iframe:drop']);
    schedule.forgetTab('tab');
    expect(log).toEqual(['iframe:drop', 'page:drop']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('runs no timer while nothing is deferred', () => {
    schedule.requestStarted('tab');
    schedule.requestEnded('tab');
    schedule.documentRequested('tab', 'T-page', true);
    schedule.loaded('tab');
    expect(vi.getTimerCount()).toBe(0);
    schedule.defer('tab', body('a', log));
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(BODY_QUIET_MS);
    expect(log).toEqual(['a:run']);
    expect(vi.getTimerCount()).toBe(0);
  });
});
