// Which of the newer telemetry routes this agent has: the stream filters, the history endpoint
// (`/telemetry/events`) and the HAR export (`/har`). Read from the agent's OpenAPI document,
// which is generated from the routes themselves, so the page asks no route that is not there
// (a 404 would be an error in the page's console); the HAR route is then confirmed with a HEAD
// probe of an empty time range. Without the document (a gateway may not serve it) every route is probed directly.

export interface Capabilities {
  /** The stream takes `category=`; undefined: unknown, try and fall back on 400. */
  streamFilters: boolean | undefined;
  /** `GET /browsers/{id}/telemetry/events` pages through the history. */
  history: boolean;
  /** `GET /browsers/{id}/har` exists. */
  har: boolean;
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, { parameters?: Array<{ name?: string; in?: string }> }>>;
}

/** `session` is the session's base URL (`/browsers/{id}/`). */
export async function probeCapabilities(session: URL): Promise<Capabilities> {
  const document = await openApi(session);
  if (document?.paths) {
    const paths = document.paths;
    const stream = paths['/browsers/{id}/telemetry']?.get;
    const streamFilters = (stream?.parameters ?? []).some((p) => p.name === 'category' && p.in === 'query');
    const history = paths['/browsers/{id}/telemetry/events']?.get !== undefined;
    const har = paths['/browsers/{id}/har']?.get !== undefined && (await exists(harProbe(session)));
    return { streamFilters, history, har };
  }
  const [history, har] = await Promise.all([exists(new URL('telemetry/events?limit=1', session), 'GET'), exists(harProbe(session))]);
  return { streamFilters: undefined, history, har };
}

/** The HAR of no time at all (from now on): the route answers without building a document. */
function harProbe(session: URL): URL {
  return new URL('har?since=0s', session);
}

async function openApi(session: URL): Promise<OpenApiDocument | undefined> {
  try {
    const response = await fetch(new URL('/openapi.json', session), { credentials: 'same-origin' });
    if (!response.ok) return undefined;
    return (await response.json()) as OpenApiDocument;
  } catch {
    return undefined;
  }
}

/** A HEAD probe (GET when HEAD is refused), reading no body. */
async function exists(url: URL, method: 'HEAD' | 'GET' = 'HEAD'): Promise<boolean> {
  const controller = new AbortController();
  try {
    const response = await fetch(url, { method, credentials: 'same-origin', signal: controller.signal });
    controller.abort();
    if (response.status === 405 && method === 'HEAD') return await exists(url, 'GET');
    // 400: the route is there and refused the probe's query.
    return response.ok || response.status === 400;
  } catch {
    return false;
  } finally {
    controller.abort();
  }
}
