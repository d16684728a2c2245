// Host names as browsers write them into Host (lower case, IDNA, IPv4 in dotted decimal, IPv6
// compressed, without a trailing dot; WHATWG URL parsing), and the --allowed-hosts value kind.
// Pure: the settings parse host lists with it, and the HTTP layer's Host check
// (src/http/host-policy.ts) compares names in this form.

import { isIP } from 'node:net';
import type { ValueKind } from './settings.ts';

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
