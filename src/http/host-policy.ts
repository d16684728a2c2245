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
import { canonicalHostname, hostOfHeader } from '../host-names.ts';

export { canonicalHostname, hostListKind, hostOfHeader } from '../host-names.ts';

const LOCALHOST = 'localhost';
const WILDCARDS = new Set(['0.0.0.0', '::']);

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
// IPv4-mapped loopback (::ffff:127.x.y.z).
loopback.addSubnet('::ffff:7f00:0', 104, 'ipv6');

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
