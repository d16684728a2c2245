import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { TargetManager, type AttachedTarget, type TargetObserver } from '../../src/browser/target-manager.ts';
import { TargetClosedError } from '../../src/browser/cdp-errors.ts';
import { FakeConnection } from './support/fake-connection.ts';

function info(targetId: string, type: string, url = '') {
  return { targetId, type, url, title: '', attached: true, canAccessOpener: false };
}

function setup(setUpTarget: (t: AttachedTarget) => Array<Promise<unknown>> = (t) => [t.send('Runtime.enable')]) {
  const connection = new FakeConnection();
  const attached: AttachedTarget[] = [];
  const detached: AttachedTarget[] = [];
  const created: string[] = [];
  const destroyed: string[] = [];
  const failures: string[] = [];
  const observer: TargetObserver = {
    setUpTarget: (t) => {
      attached.push(t);
      return setUpTarget(t);
    },
    targetDetached: (t) => detached.push(t),
    targetCreated: (i) => created.push(i.targetId),
    targetDestroyed: (id) => destroyed.push(id),
    setupFailed: (_t, step) => failures.push(step),
  };
  const manager = new TargetManager(connection.asConnection(), observer, pino({ level: 'silent' }));
  return { connection, manager, attached, detached, created, destroyed, failures };
}

describe('TargetManager', () => {
  it('auto-attaches at the browser level with waitForDebuggerOnStart, flatten, and browser_ui/tab excluded', async () => {
    const { connection, manager } = setup();
    await manager.start();
    const autoAttach = connection.sent.find((c) => c.method === 'Target.setAutoAttach')!;
    expect(autoAttach.sessionId).toBeUndefined();
    expect(autoAttach.params).toEqual({
      autoAttach: true,
      waitForDebuggerOnStart: true,
      flatten: true,
      filter: [{ type: 'browser_ui', exclude: true }, { type: 'tab', exclude: true }, {}],
    });
    expect(connection.sent[0]!.method).toBe('Target.setDiscoverTargets');
  });

  it('sends every setup command before resuming a paused target', async () => {
    const { connection, manager } = setup((t) => [t.send('Page.enable'), t.send('Runtime.enable')]);
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'S1', targetInfo: info('T1', 'page'), waitingForDebugger: true });
    expect(connection.commandsFor('S1')).toEqual(['Page.enable', 'Runtime.enable', 'Target.setAutoAttach', 'Runtime.runIfWaitingForDebugger']);
  });

  it('does not wait for setup answers before resuming (a paused service worker answers only after resume)', async () => {
    const { connection, manager } = setup((t) => [t.send('Runtime.enable')]);
    connection.answers.set('Runtime.enable', () => new Promise(() => undefined));
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'SW', targetInfo: info('W', 'service_worker'), waitingForDebugger: true });
    expect(connection.commandsFor('SW')).toEqual(['Runtime.enable', 'Runtime.runIfWaitingForDebugger']);
  });

  it('still resumes a target whose setup threw', async () => {
    const { connection, manager, failures } = setup(() => {
      throw new Error('boom');
    });
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'S1', targetInfo: info('T1', 'worker'), waitingForDebugger: true });
    expect(connection.commandsFor('S1')).toContain('Runtime.runIfWaitingForDebugger');
    expect(failures).toEqual(['setup']);
  });

  it('auto-attaches recursively on page and iframe sessions, excluding service and shared workers', async () => {
    const { connection, manager } = setup(() => []);
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'P', targetInfo: info('T1', 'page'), waitingForDebugger: false });
    connection.emit('Target.attachedToTarget', { sessionId: 'F', targetInfo: info('T2', 'iframe'), waitingForDebugger: true }, 'P');
    connection.emit('Target.attachedToTarget', { sessionId: 'W', targetInfo: info('T3', 'worker'), waitingForDebugger: true }, 'F');
    const child = connection.sent.find((c) => c.method === 'Target.setAutoAttach' && c.sessionId === 'F')!;
    expect(child.params).toMatchObject({ autoAttach: true, waitForDebuggerOnStart: true, flatten: true });
    expect((child.params as { filter: unknown[] }).filter).toEqual(
      expect.arrayContaining([
        { type: 'service_worker', exclude: true },
        { type: 'shared_worker', exclude: true },
      ]),
    );
    expect(connection.commandsFor('W')).not.toContain('Target.setAutoAttach');
  });

  it('gives iframes and dedicated workers the tab that contains them, and service workers none', async () => {
    const { connection, manager } = setup(() => []);
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'P', targetInfo: info('T1', 'page'), waitingForDebugger: false });
    connection.emit('Target.attachedToTarget', { sessionId: 'F', targetInfo: info('T2', 'iframe'), waitingForDebugger: true }, 'P');
    connection.emit('Target.attachedToTarget', { sessionId: 'W', targetInfo: info('T3', 'worker'), waitingForDebugger: true }, 'F');
    connection.emit('Target.attachedToTarget', { sessionId: 'SW', targetInfo: info('T4', 'service_worker'), waitingForDebugger: true });
    expect(manager.get('F')!.tab!.targetId).toBe('T1');
    expect(manager.get('W')!.tab!.targetId).toBe('T1');
    expect(manager.get('SW')!.tab).toBeUndefined();
  });

  it('keeps the first session of a target reached twice and resumes then detaches the second', async () => {
    const { connection, manager, attached } = setup(() => []);
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'A', targetInfo: info('SW1', 'service_worker'), waitingForDebugger: true });
    connection.emit('Target.attachedToTarget', { sessionId: 'B', targetInfo: info('SW1', 'service_worker'), waitingForDebugger: true }, 'P');
    await new Promise((r) => setImmediate(r));
    expect(attached.map((t) => t.sessionId)).toEqual(['A']);
    expect(connection.commandsFor('B')).toEqual(['Runtime.runIfWaitingForDebugger']);
    expect(connection.sent.find((c) => c.method === 'Target.detachFromTarget')!.params).toEqual({ sessionId: 'B' });
  });

  it('forgets a detached target and tells the observer', async () => {
    const { connection, manager, detached } = setup(() => []);
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'P', targetInfo: info('T1', 'page'), waitingForDebugger: false });
    connection.emit('Target.detachedFromTarget', { sessionId: 'P', targetId: 'T1' });
    expect(manager.get('P')).toBeUndefined();
    expect(detached.map((t) => t.targetId)).toEqual(['T1']);
    expect(manager.activePage()).toBeUndefined();
  });

  it('fails the commands still unanswered when their target detaches, and every later one at once', async () => {
    const { connection, manager } = setup(() => []);
    connection.answers.set('Page.getFrameTree', () => new Promise(() => undefined));
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'P', targetInfo: info('T1', 'page'), waitingForDebugger: false });
    const target = manager.get('P')!;
    const pending = target.send('Page.getFrameTree');
    connection.emit('Target.detachedFromTarget', { sessionId: 'P', targetId: 'T1' });
    await expect(pending).rejects.toThrow(TargetClosedError);
    const sentBefore = connection.sent.length;
    await expect(target.send('Runtime.evaluate', { expression: '1' })).rejects.toThrow(/target closed: T1 \(Runtime.evaluate\)/);
    expect(connection.sent.length).toBe(sentBefore);
  });

  it('tells the observer when a target is destroyed', async () => {
    const { connection, manager, destroyed } = setup(() => []);
    await manager.start();
    connection.emit('Target.targetDestroyed', { targetId: 'T9' });
    expect(destroyed).toEqual(['T9']);
    manager.dispose();
    connection.emit('Target.targetDestroyed', { targetId: 'T10' });
    expect(destroyed).toEqual(['T9']);
  });

  it('names the most recently opened page as the active one', async () => {
    const { connection, manager } = setup(() => []);
    await manager.start();
    connection.emit('Target.attachedToTarget', { sessionId: 'P1', targetInfo: info('T1', 'page'), waitingForDebugger: false });
    connection.emit('Target.attachedToTarget', { sessionId: 'P2', targetInfo: info('T2', 'page'), waitingForDebugger: true });
    expect(manager.activePage()!.targetId).toBe('T2');
  });

  it('removes every CDP listener on dispose', async () => {
    const { connection, manager } = setup(() => []);
    await manager.start();
    manager.dispose();
    expect(connection.handlerCount()).toBe(0);
  });
});
