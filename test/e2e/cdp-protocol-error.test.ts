// Chromium's error answers, as the agent's CDP connection hands them on: a typed ProtocolError
// (docs/decisions.md "The CDP transport"), on a real Chromium.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CdpConnection } from '../../src/browser/cdp-connection.ts';
import { IgnoredFailures, ProtocolError } from '../../src/browser/cdp-errors.ts';
import { ChromiumProcess } from '../../src/browser/chromium-launcher.ts';
import type { CommandName } from '../../src/browser/cdp-connection.ts';

describe("Chromium's error answers", () => {
  let chromium: ChromiumProcess;
  let connection: CdpConnection;

  beforeAll(async () => {
    chromium = await ChromiumProcess.launch();
    connection = await CdpConnection.connect(chromium.browserWsUrl, new IgnoredFailures());
  }, 30_000);
  afterAll(async () => {
    await connection.close();
    await chromium.close();
  });

  it('rejects a command Chromium does not know with a ProtocolError carrying its code, message and method', async () => {
    const error: unknown = await connection.send('Nonexistent.command' as CommandName).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ProtocolError);
    const protocolError = error as ProtocolError;
    expect(protocolError.code).toBe(-32601);
    expect(protocolError.method).toBe('Nonexistent.command');
    expect(protocolError.protocolMessage).toMatch(/wasn't found/);
  });

  it('rejects invalid params with -32602', async () => {
    const error: unknown = await connection.send('Target.attachToTarget', { targetId: 42 as unknown as string }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).code).toBe(-32602);
  });

  it('counts a refused command let pass by mayFail as other, and a command on a gone session as gone', async () => {
    const { failures } = connection;
    await expect(failures.mayFail(connection.send('Nonexistent.command' as CommandName))).resolves.toBeUndefined();
    await expect(failures.mayFail(connection.send('Runtime.evaluate', { expression: '1' }, 'NO-SUCH-SESSION'))).resolves.toBeUndefined();
    expect({ gone: failures.gone, other: failures.other }).toEqual({ gone: 1, other: 1 });
  });
});
