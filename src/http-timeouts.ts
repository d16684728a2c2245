// The HTTP connection timeouts of both programs (docs/operations.md "Connection timeouts"), here
// in the base layer so that the agent's settings table and the shared fastify setup
// (src/http/api-server.ts) read the same values.

/**
 * A client that has not sent a request's whole headers in this long gets 408 and is closed:
 * partial headers held open are how a few clients exhaust the file descriptors (slowloris).
 */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;

/** How often Node looks for connections past the headers timeout: one is closed within the timeout plus this. */
export const HEADERS_CHECK_INTERVAL_MS = 1000;

/**
 * An idle keep-alive connection is closed after this long: fastify's value, longer than the 60 s
 * idle timeout of common proxies and load balancers, so that they close first and never reuse a
 * socket the server is closing.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;
