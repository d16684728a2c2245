// The CDP endpoint's metrics (docs/operations.md "CDP endpoint"): clients connected, connections,
// messages relayed, clients cut for reading too slowly, clients closed for a refused frame, and
// closes by reason.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { CdpDisconnectReason } from '../../injected/schema.ts';
import type { ProxyStats, RefusedFrame } from '../cdp-proxy/cdp-proxy.ts';
import { mirroredCounter } from './mirrored-counter.ts';

export function registerCdpProxyMetrics(registry: Registry, proxy: ProxyStats): void {
  const registers = [registry];
  new Gauge({
    name: 'bta_cdp_proxy_clients',
    help: 'CDP clients connected to the agent now.',
    registers,
    collect() {
      this.set(proxy.clients);
    },
  });
  const mirrored = (name: string, help: string, read: () => number) => mirroredCounter(registers, name, help, read);
  mirrored('bta_cdp_proxy_connections_total', 'CDP client connections accepted.', () => proxy.connectionsTotal);
  mirrored('bta_cdp_proxy_messages_total', 'CDP messages relayed, both directions.', () => proxy.messagesTotal);
  mirrored(
    'bta_cdp_proxy_slow_client_cuts_total',
    'CDP clients closed because more than the bound waited for them (close 1008 slow_client).',
    () => proxy.cutTotal,
  );
  const closed: Record<CdpDisconnectReason, number> = { client_close: 0, upstream_changed: 0, upstream_error: 0, context_cancelled: 0 };
  new Counter({
    name: 'bta_cdp_proxy_disconnects_total',
    help: 'CDP client connections ended, by cdp_disconnect reason.',
    labelNames: ['reason'],
    registers,
    collect() {
      for (const reason of Object.keys(closed) as CdpDisconnectReason[]) {
        const total = proxy.closedTotal[reason];
        if (total > closed[reason]) this.inc({ reason }, total - closed[reason]);
        closed[reason] = total;
      }
    },
  });
  const refused: Record<RefusedFrame, number> = { frame_too_large: 0, binary_frame: 0, nesting_too_deep: 0 };
  new Counter({
    name: 'bta_cdp_proxy_refused_frames_total',
    help: 'CDP clients closed for a frame the agent refuses: over the size cap (1009), binary (1003), nested too deep (1008).',
    labelNames: ['reason'],
    registers,
    collect() {
      for (const reason of Object.keys(refused) as RefusedFrame[]) {
        const total = proxy.refusedTotal[reason];
        if (total > refused[reason]) this.inc({ reason }, total - refused[reason]);
        refused[reason] = total;
      }
    },
  });
}
