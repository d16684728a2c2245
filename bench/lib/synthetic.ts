// What the synthetic events of the store and archive benches share: the event context of a page
// target, shaped like the agent's (docs/events.md "The event context").

import type { EventContext } from '../../injected/schema.ts';

export function syntheticContext(i: number, targetId: string): EventContext {
  return {
    target_id: targetId,
    target_type: 'page',
    frame_id: 'F1',
    loader_id: 'L1',
    url: 'http://127.0.0.1:8080/page.html',
    nav_seq: Math.floor(i / 1000),
  };
}
