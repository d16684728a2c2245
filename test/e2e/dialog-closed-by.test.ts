// Who closed a dialog (docs/events.md "Dialogs and file choosers"): a client that answers it with
// Page.handleJavaScriptDialog through the agent's CDP endpoint is seen by the agent, so the dialog's
// page_dialog_closed says `cdp_client` whether or not Chromium has a dialog handler of its own, and
// its caused_by names the client's recorded Page.handleJavaScriptDialog.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TelemetryEvent } from '../../injected/schema.ts';
import { startRig, TOKEN, until, type TestRig } from './support/harness.ts';

type Answer = { id?: number; method?: string; result?: Record<string, unknown>; params?: Record<string, unknown> };

describe('dialogs answered through the CDP endpoint', () => {
  let rig: TestRig;
  let pageUrl: string;

  beforeAll(async () => {
    rig = await startRig();
    pageUrl = rig.server.route('/dialog-page.html', '<!doctype html><title>d</title><p>d</p>');
  });
  afterAll(() => rig?.close());

  it('links a dialog a proxied client accepted to that client: closed_by cdp_client, caused_by its command', async () => {
    const ws = new WebSocket(`ws://${new URL(rig.agent.url).host}/devtools/browser/x`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const messages: Answer[] = [];
    ws.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8')) as Answer));
    let nextId = 1;
    const send = (method: string, params: object = {}, sessionId?: string) => {
      const id = nextId++;
      ws.send(JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) }));
      return id;
    };
    const ask = async (method: string, params: object = {}, sessionId?: string) => {
      const id = send(method, params, sessionId);
      await until(() => messages.some((m) => m.id === id), method, 15_000);
      return messages.find((m) => m.id === id)!.result!;
    };
    const { targetId } = (await ask('Target.createTarget', { url: pageUrl })) as { targetId: string };
    const { sessionId } = (await ask('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    await ask('Page.enable', {}, sessionId);
    const from = rig.stream.events.length;
    send('Runtime.evaluate', { expression: 'alert("through the agent")' }, sessionId);
    await until(() => messages.some((m) => m.method === 'Page.javascriptDialogOpening'), 'the dialog', 15_000);
    await ask('Page.handleJavaScriptDialog', { accept: true }, sessionId);
    const closed = await rig.stream.waitForEvent('page_dialog_closed', (e) => rig.stream.events.indexOf(e) >= from && e.data!.target_id === targetId);
    expect(closed.data).toMatchObject({ dialog_type: 'alert', accepted: true, closed_by: 'cdp_client' });
    const command = (rig.stream.events.slice(from) as Array<TelemetryEvent & { data?: Record<string, unknown> }>).find(
      (e) => e.type === 'cdp_command' && e.data!.method === 'Page.handleJavaScriptDialog',
    )!;
    expect(command.data).toMatchObject({ target_id: targetId, outcome: 'ok' });
    expect(closed.data!.caused_by).toBe(command.data!.action_id);
    await ask('Target.closeTarget', { targetId });
    ws.close();
  });
});
