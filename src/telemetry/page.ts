// Page category translators (docs/events.md#types): CDP params in, event data out.

import type { Protocol } from 'devtools-protocol';
import type { EventContext, PageNavigationData, PageTabOpenedData, PageTimingData } from '../../injected/schema.ts';

export interface TargetIdentity {
  sessionId: string;
  targetId: string;
  type: string;
}

/** `Page.frameNavigated` → page_navigation data: no context composition and no nav_seq. */
export function translateFrameNavigated(frame: Protocol.Page.Frame, target: TargetIdentity): PageNavigationData {
  const data: PageNavigationData = { url: frame.url + (frame.urlFragment ?? ''), frame_id: frame.id, loader_id: frame.loaderId };
  if (frame.parentId) data.parent_frame_id = frame.parentId;
  data.session_id = target.sessionId;
  data.target_id = target.targetId;
  data.target_type = target.type;
  return data;
}

/** `Page.domContentEventFired` / `Page.loadEventFired` → data: context plus the raw monotonic time. */
export function translatePageTiming(timestamp: number, ctx: EventContext): PageTimingData {
  return { ...ctx, cdp_timestamp: timestamp };
}

/** `Target.targetCreated` of a page → page_tab_opened data: exactly these fields. */
export function translateTabOpened(info: Protocol.Target.TargetInfo): PageTabOpenedData {
  const data: PageTabOpenedData = { target_id: info.targetId, target_type: info.type, url: info.url, title: info.title };
  if (info.openerId) data.opener_id = info.openerId;
  return data;
}
