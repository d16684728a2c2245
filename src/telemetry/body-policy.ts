// Which response bodies the network category captures (`telemetry.browser.network.bodies`,
// docs/network.md "Response bodies"): by resource type and MIME type, cut to a byte size, or none.
// The default is what users read: the documents, XHR/fetch answers, event streams and the
// requests Chromium cannot classify, when their MIME type is textual. Stylesheets and scripts
// are left out: a page loads dozens of them, and each body asked of Chromium during a load costs
// the page's renderer a command of its own (docs/performance.md).

import type { Protocol } from 'devtools-protocol';

export interface BodyPolicy {
  /** false: no body is fetched at all. */
  enabled: boolean;
  /** CDP `Network.ResourceType` names whose bodies are fetched. */
  resource_types: string[];
  /**
   * MIME types whose bodies are fetched: `type/subtype`, `type/*`, or a structured-syntax suffix
   * such as `+json` (any `type/...+json`). Parameters (`; charset=...`) are ignored.
   */
  mime_types: string[];
  /** UTF-8 bytes of `body` kept in network_response; longer bodies are cut and marked truncated. */
  max_bytes: number;
}

/** The partial form accepted in a patch; `true`/`false` is shorthand for `{enabled}`. */
export type BodyPolicyPatch = boolean | Partial<BodyPolicy>;

/** Every `Network.ResourceType` Chromium reports (devtools-protocol). */
export const RESOURCE_TYPES: readonly Protocol.Network.ResourceType[] = [
  'Document',
  'Stylesheet',
  'Image',
  'Media',
  'Font',
  'Script',
  'TextTrack',
  'XHR',
  'Fetch',
  'Prefetch',
  'EventSource',
  'WebSocket',
  'Manifest',
  'SignedExchange',
  'Ping',
  'CSPViolationReport',
  'Preflight',
  'FedCM',
  'Other',
];

export const DEFAULT_BODY_RESOURCE_TYPES: readonly string[] = ['Document', 'XHR', 'Fetch', 'EventSource', 'Other'];

/** Textual MIME types: `text/*`, JSON and ndjson, XML, `+json`, `+xml`, forms, GraphQL, JavaScript. */
export const DEFAULT_BODY_MIME_TYPES: readonly string[] = [
  'text/*',
  'application/json',
  'application/x-json',
  'application/ndjson',
  'application/x-ndjson',
  'application/xml',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/x-ecmascript',
  'application/x-www-form-urlencoded',
  'application/graphql',
  '+json',
  '+xml',
];

export const DEFAULT_BODY_MAX_BYTES = 64 * 1024;
const MAX_LIST_ITEMS = 64;
const MAX_BYTES_LIMIT = 2 ** 31 - 1;
const MIME_PATTERN = /^(?:[a-z0-9][a-z0-9!#$&^_.+-]*\/(?:\*|[a-z0-9][a-z0-9!#$&^_.+-]*)|\+[a-z0-9][a-z0-9!#$&^_.-]*)$/;

export function defaultBodyPolicy(maxBytes = DEFAULT_BODY_MAX_BYTES): BodyPolicy {
  return { enabled: true, resource_types: [...DEFAULT_BODY_RESOURCE_TYPES], mime_types: [...DEFAULT_BODY_MIME_TYPES], max_bytes: maxBytes };
}

/** Fields not sent stay; lists are replaced whole. MIME types are kept lowercase. */
export function mergeBodyPolicy(base: BodyPolicy, patch: BodyPolicyPatch | undefined): BodyPolicy {
  if (patch === undefined) return base;
  if (typeof patch === 'boolean') return { ...base, enabled: patch };
  return {
    enabled: patch.enabled ?? base.enabled,
    resource_types: patch.resource_types ? [...new Set(patch.resource_types)] : base.resource_types,
    mime_types: patch.mime_types ? [...new Set(patch.mime_types.map((m) => m.toLowerCase()))] : base.mime_types,
    max_bytes: patch.max_bytes ?? base.max_bytes,
  };
}

/** Problems of an untrusted `bodies` value, each with its JSON path under `path`. */
export function validateBodyPolicyPatch(value: unknown, path: string): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  if (typeof value === 'boolean') return problems;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push({ field: path, message: 'must be an object or a boolean' });
    return problems;
  }
  for (const [key, v] of Object.entries(value)) {
    const field = `${path}.${key}`;
    if (key === 'enabled') {
      if (typeof v !== 'boolean') problems.push({ field, message: 'must be a boolean' });
    } else if (key === 'max_bytes') {
      if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > MAX_BYTES_LIMIT)
        problems.push({ field, message: `must be an integer from 0 to ${MAX_BYTES_LIMIT}` });
    } else if (key === 'resource_types' || key === 'mime_types') {
      if (!Array.isArray(v)) {
        problems.push({ field, message: 'must be an array of strings' });
        continue;
      }
      if (v.length > MAX_LIST_ITEMS) problems.push({ field, message: `at most ${MAX_LIST_ITEMS} items` });
      v.forEach((item: unknown, i) => {
        const itemField = `${field}[${i}]`;
        if (typeof item !== 'string') problems.push({ field: itemField, message: 'must be a string' });
        else if (key === 'resource_types' && !(RESOURCE_TYPES as readonly string[]).includes(item)) {
          problems.push({ field: itemField, message: `unknown resource type (expected one of ${RESOURCE_TYPES.join(', ')})` });
        } else if (key === 'mime_types' && !MIME_PATTERN.test(item.toLowerCase())) {
          problems.push({ field: itemField, message: 'must be type/subtype, type/* or a +suffix such as +json' });
        }
      });
    } else {
      problems.push({ field, message: 'unknown key' });
    }
  }
  return problems;
}

/**
 * A policy compiled for the hot path (a fetch-heavy page finishes ~500 requests a second): set
 * lookups, and the MIME decision cached per distinct MIME string.
 */
export class BodyMatcher {
  readonly policy: BodyPolicy;
  private readonly resourceTypes: ReadonlySet<string>;
  private readonly exact = new Set<string>();
  private readonly wildcardTypes = new Set<string>();
  private readonly suffixes: string[] = [];
  private readonly decided = new Map<string, boolean>();

  constructor(policy: BodyPolicy) {
    this.policy = policy;
    this.resourceTypes = new Set(policy.resource_types);
    for (const pattern of policy.mime_types) {
      if (pattern.startsWith('+')) this.suffixes.push(pattern);
      else if (pattern.endsWith('/*')) this.wildcardTypes.add(pattern.slice(0, -2));
      else this.exact.add(pattern);
    }
  }

  /** Whether the body of a response of this resource type and MIME type is wanted (size aside). */
  wants(resourceType: string | undefined, mimeType: string): boolean {
    if (!this.policy.enabled) return false;
    // Chromium leaves the type out only for requests it cannot classify: they count as Other.
    if (!this.resourceTypes.has(resourceType ?? 'Other')) return false;
    return this.mimeAllowed(mimeType);
  }

  mimeAllowed(mimeType: string): boolean {
    let allowed = this.decided.get(mimeType);
    if (allowed === undefined) {
      allowed = this.matchMime(mimeType);
      // Bounded: a page could invent MIME types without end.
      if (this.decided.size >= 256) this.decided.clear();
      this.decided.set(mimeType, allowed);
    }
    return allowed;
  }

  private matchMime(mimeType: string): boolean {
    let mime = mimeType;
    const semicolon = mime.indexOf(';');
    if (semicolon !== -1) mime = mime.slice(0, semicolon);
    mime = mime.trim().toLowerCase();
    const slash = mime.indexOf('/');
    if (slash <= 0) return false;
    if (this.exact.has(mime) || this.wildcardTypes.has(mime.slice(0, slash))) return true;
    const subtype = mime.slice(slash + 1);
    return this.suffixes.some((suffix) => subtype.endsWith(suffix));
  }
}
