// Keep-alive connections to the agents, plain and TLS. The browser proxy and the archive's
// client each have their own, so the archive's long-lived streams never share sockets with
// forwarded client requests.

import http, { type ClientRequest, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';

export class AgentConnections {
  private readonly httpAgent = new http.Agent({ keepAlive: true });
  private readonly httpsAgent = new https.Agent({ keepAlive: true });

  /** A request to `target` (an agent's URL) over the pool of its protocol; sent as it is written and ended. */
  request(target: URL, method: string, headers: OutgoingHttpHeaders): ClientRequest {
    const secure = target.protocol === 'https:';
    return (secure ? https : http).request({
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method,
      headers,
      agent: secure ? this.httpsAgent : this.httpAgent,
    });
  }

  /** Closes every socket of both pools. */
  destroy(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
