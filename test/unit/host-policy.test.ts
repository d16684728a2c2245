// Which Host headers the gateway answers (DNS rebinding, src/http/host-policy.ts): the listen
// address decides the default, --allowed-hosts adds names, and names compare the way browsers
// write them.

import { describe, expect, it } from 'vitest';
import { canonicalHostname, hostOfHeader, HostPolicy } from '../../src/http/host-policy.ts';

describe('canonicalHostname', () => {
  it.each([
    ['localhost', 'localhost'],
    ['Gateway.Example.', 'gateway.example'],
    ['127.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['::1', '::1'],
    ['[::1]', '::1'],
    ['[0:0:0:0:0:0:0:1]', '::1'],
    ['bücher.example', 'xn--bcher-kva.example'],
  ])('%s is %s', (text, canonical) => {
    expect(canonicalHostname(text)).toBe(canonical);
  });

  it.each(['', 'user@host', 'host:80', 'host/path', 'two words', '[::1', '[not-v6]'])('%j is not a host name', (text) => {
    expect(canonicalHostname(text)).toBeUndefined();
  });
});

describe('hostOfHeader', () => {
  it.each([
    ['127.0.0.1:10000', '127.0.0.1'],
    ['[::1]:10000', '::1'],
    ['[::1]', '::1'],
    ['LOCALHOST', 'localhost'],
    ['gateway.example.:443', 'gateway.example'],
  ])('%s names %s', (header, host) => {
    expect(hostOfHeader(header)).toBe(host);
  });

  it.each(['127.0.0.1:', '127.0.0.1:port', 'a:1:2', '[::1]x', 'evil.example@127.0.0.1', ''])('%j is malformed', (header) => {
    expect(hostOfHeader(header)).toBeUndefined();
  });
});

describe('HostPolicy', () => {
  const HOSTS = [
    '127.0.0.1:1',
    '127.0.0.2:1',
    'localhost:1',
    '[::1]:1',
    '[::ffff:127.0.0.1]:1',
    '10.0.0.5:1',
    '[2001:db8::1]:1',
    'evil.example:1',
    'gateway.example:1',
  ];
  const answered = (policy: HostPolicy) => HOSTS.filter((h) => policy.allows(h));

  it('on loopback: loopback addresses and localhost', () => {
    expect(answered(new HostPolicy('127.0.0.1', []))).toEqual(['127.0.0.1:1', '127.0.0.2:1', 'localhost:1', '[::1]:1', '[::ffff:127.0.0.1]:1']);
  });

  it('on ::1 and on localhost the same', () => {
    expect([answered(new HostPolicy('::1', [])), answered(new HostPolicy('localhost', []))]).toEqual([
      answered(new HostPolicy('127.0.0.1', [])),
      answered(new HostPolicy('127.0.0.1', [])),
    ]);
  });

  it('on one address: that address only', () => {
    expect(answered(new HostPolicy('10.0.0.5', []))).toEqual(['10.0.0.5:1']);
  });

  it('on a name: that name only', () => {
    expect(answered(new HostPolicy('gateway.example', []))).toEqual(['gateway.example:1']);
  });

  it('on every address: any IP literal and localhost, never a name', () => {
    expect([answered(new HostPolicy('0.0.0.0', [])), answered(new HostPolicy('::', []))]).toEqual([
      HOSTS.filter((h) => !h.startsWith('evil') && !h.startsWith('gateway')),
      HOSTS.filter((h) => !h.startsWith('evil') && !h.startsWith('gateway')),
    ]);
  });

  it('allowed hosts add names in every case', () => {
    expect(['127.0.0.1', '10.0.0.5', '0.0.0.0'].map((listen) => new HostPolicy(listen, ['gateway.example']).allows('Gateway.Example:8443'))).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('a request without Host is not answered', () => {
    expect(new HostPolicy('0.0.0.0', []).allows(undefined)).toBe(false);
  });

  it('a malformed Host is not answered, whatever it contains', () => {
    expect(new HostPolicy('0.0.0.0', []).allows('127.0.0.1@evil.example')).toBe(false);
  });
});
