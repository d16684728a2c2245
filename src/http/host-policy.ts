// Which Host headers the agent and the gateway answer (DNS rebinding). A web page can make a browser send
// requests to the gateway under a name its author controls, by pointing that name at the
// gateway's address after the page has loaded; the browser then treats the gateway's answers as
// the page's own. Such requests carry the attacker's name in Host, so the gateway answers only
// names it knows:
//
// - listening on loopback (127.0.0.0/8, ::1, `localhost`): the loopback addresses and `localhost`;
// - listening on one address or name: that address or name;
// - listening on every address (0.0.0.0, ::): any IP literal, and `localhost`. An IP literal is
//   not a name anyone can re-point, so a page at it is the gateway's own origin; `localhost`
//   always names this machine;
// - in every case, the names given with --allowed-hosts.
//
// Names are compared the way browsers write them into Host: lower case, IDNA, IPv4 in dotted
// decimal, IPv6 compressed (WHATWG URL parsing), without a trailing dot; the port is ignored.

import { BlockList, isIP } from 'node:net';
import type { ValueKind } from '../settings.ts';

const LOCALHOST = 'localhost';
const WILDCARDS = new Set(['0.0.0.0', '::']);

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
// IPv4-mapped loopback (::ffff:127.x.y.z).
loopback.addSubnet('::ffff:7f00:0', 104, 'ipv6');

/**
 * A host name or IP literal (an IPv6 one with or without brackets) in canonical form; undefined
 * when it is not one (a port, a path, credentials, spaces).
 */
export function canonicalHostname(text: string): string | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIP(bare) === 6) return new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  // Only what a host name or IPv4 literal can hold: URL parsing would also accept (and strip)
  // credentials, ports and paths.
  if (!/^[\p{L}\p{N}._-]+$/u.test(text)) return undefined;
  let url: URL;
  try {
    url = new URL(`http://${text}/`);
  } catch {
    return undefined;
  }
  const name = url.hostname.replace(/\.$/, '');
  return name === '' ? undefined : name;
}

/** The canonical host of a Host header (`name`, `name:port`, `[v6]:port`); undefined if malformed. */
export function hostOfHeader(header: string): string | undefined {
  let host = header;
  if (header.startsWith('[')) {
    const close = header.indexOf(']');
    if (close === -1 || !/^(:\d{1,5})?$/.test(header.slice(close + 1))) return undefined;
    host = header.slice(0, close + 1);
  } else {
    const colon = header.indexOf(':');
    if (colon !== -1) {
      if (!/^\d{1,5}$/.test(header.slice(colon + 1))) return undefined;
      host = header.slice(0, colon);
    }
  }
  return canonicalHostname(host);
}

function isLoopback(host: string): boolean {
  const family = isIP(host);
  return host === LOCALHOST || (family !== 0 && loopback.check(host, family === 4 ? 'ipv4' : 'ipv6'));
}

export class HostPolicy {
  private readonly names: ReadonlySet<string>;
  private readonly anyIpLiteral: boolean;
  private readonly anyLoopback: boolean;

  /** `listenHost`: the address the gateway listens on; `allowedHosts`: canonical names. */
  constructor(listenHost: string, allowedHosts: readonly string[]) {
    const listen = canonicalHostname(listenHost) ?? listenHost.toLowerCase();
    this.anyIpLiteral = WILDCARDS.has(listen);
    this.anyLoopback = isLoopback(listen);
    const names = new Set(allowedHosts);
    if (this.anyIpLiteral || this.anyLoopback) names.add(LOCALHOST);
    else names.add(listen);
    this.names = names;
  }

  /** Whether a request with this Host header (absent: HTTP/1.0 without one) is answered. */
  allows(header: string | undefined): boolean {
    if (header === undefined) return false;
    const host = hostOfHeader(header);
    if (host === undefined) return false;
    if (this.names.has(host)) return true;
    if (this.anyIpLiteral) return isIP(host) !== 0;
    return this.anyLoopback && isLoopback(host);
  }
}

/** Host names and IP literals, comma-separated in text, canonical in the result. */
export function hostListKind(): ValueKind<string[]> {
  const canonical = (names: readonly unknown[]): string[] | undefined => {
    const hosts = names.map((name) => (typeof name === 'string' ? canonicalHostname(name.trim()) : undefined));
    return hosts.length > 0 && hosts.every((h) => h !== undefined) ? [...new Set(hosts)] : undefined;
  };
  return {
    expected: 'a comma-separated list of host names or IP addresses, without ports',
    fromText: (text) => canonical(text.split(',')),
    // An empty list (a resolved config passed back in) is no extra names.
    fromValue: (value) => (Array.isArray(value) ? (value.length === 0 ? [] : canonical(value)) : undefined),
  };
}
