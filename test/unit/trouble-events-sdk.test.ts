// The dialog, download, WebSocket/EventSource and Web Vitals events against the official client's
// types (@onkernel/sdk 0.84, resources/browsers/telemetry.d.ts), where it defines them: the client
// has no such event types, so what it defines is their category (TelemetryEventsParams.category)
// and the event context they carry (BrowserEventContext). Compiled by `tsc` (npm run lint); the
// assertions check the same at run time.

import type { BrowserEventContext, TelemetryEventsParams } from '@onkernel/sdk/resources/browsers/telemetry';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPE_CATEGORY, type EventDataByType, type SessionTroubleEventData, type TelemetryEvent } from '../../injected/schema.ts';
import { eventOf } from '../../src/event-data.ts';
import { toLogRecord } from '../../src/export/otlp-record.ts';
import { resourceFromAttributes } from '@opentelemetry/resources';

type OfficialCategory = NonNullable<TelemetryEventsParams['category']>[number];

const PAGE_CONTEXT = { session_id: 'S', target_id: 'T', target_type: 'page', frame_id: 'T', loader_id: 'L', url: 'http://x/', nav_seq: 2 } as const;

/** One example of each event of the block, typed by the schema. */
const EXAMPLES: { [T in keyof SessionTroubleEventData]: EventDataByType[T] } = {
  page_dialog_opened: { ...PAGE_CONTEXT, dialog_type: 'prompt', message: 'name?', dialog_frame_id: 'T', default_prompt: 'a', has_browser_handler: false },
  page_dialog_closed: { ...PAGE_CONTEXT, dialog_type: 'prompt', accepted: true, user_input: 'b', open_ms: 3, closed_by: 'cdp_client' },
  page_file_chooser_opened: { ...PAGE_CONTEXT, chooser_frame_id: 'T', mode: 'selectSingle', node_id: 5 },
  network_download_started: { ...PAGE_CONTEXT, url: 'http://x/f.bin', guid: 'g', suggested_filename: 'f.bin', mime_type: 'application/octet-stream' },
  network_download_progress: { ...PAGE_CONTEXT, guid: 'g', received_bytes: 1, total_bytes: 2 },
  network_download_finished: { ...PAGE_CONTEXT, guid: 'g', state: 'completed', received_bytes: 2, total_bytes: 2, file_path: '/d/f.bin' },
  network_websocket_opened: {
    ...PAGE_CONTEXT,
    url: 'ws://x/',
    request_id: 'r',
    status: 101,
    status_text: 'Switching Protocols',
    request_headers: {},
    headers: { Upgrade: 'websocket' },
  },
  network_websocket_frame: { ...PAGE_CONTEXT, url: 'ws://x/', request_id: 'r', direction: 'sent', opcode: 1, size: 2, payload: 'hi' },
  network_websocket_closed: { ...PAGE_CONTEXT, url: 'ws://x/', request_id: 'r', dropped_frames: 3 },
  network_eventsource_opened: { ...PAGE_CONTEXT, url: 'http://x/e', request_id: 'e', status: 200, status_text: 'OK', headers: {} },
  network_eventsource_message: { ...PAGE_CONTEXT, url: 'http://x/e', request_id: 'e', event_name: 'message', event_id: '', size: 2, data: 'hi' },
  page_web_vitals: { ...PAGE_CONTEXT, reason: 'navigated', ttfb: 5, fcp: 20, lcp: { value: 30 }, cls: { value: 0.1 } },
};

describe('dialog, download, socket and Web Vitals events against the official client 0.84 types', () => {
  it('carry a category the official client names', () => {
    for (const type of Object.keys(EXAMPLES) as Array<keyof SessionTroubleEventData>) {
      const category: OfficialCategory = EVENT_TYPE_CATEGORY[type];
      expect(['page', 'network']).toContain(category);
    }
  });

  it('carry the official event context on a page target', () => {
    for (const data of Object.values(EXAMPLES)) {
      // Compiles only while every context field keeps the official name and type.
      const context: BrowserEventContext = {
        session_id: data.session_id,
        target_id: data.target_id,
        target_type: data.target_type === 'page' ? 'page' : 'other',
        frame_id: data.frame_id,
        loader_id: data.loader_id,
        url: data.url,
        nav_seq: data.nav_seq,
      };
      expect(context.target_type).toBe('page');
    }
  });

  it('export to OTLP with url.full, the response status and headers as semconv attributes', () => {
    const resource = resourceFromAttributes({ 'service.name': 'x' });
    const example = <T extends keyof SessionTroubleEventData>(type: T): TelemetryEvent<T> =>
      eventOf<T>({ ts: 1_700_000_000_000_000, type, source: { kind: 'cdp' }, data: EXAMPLES[type] });
    const record = (type: keyof SessionTroubleEventData) => toLogRecord(1, 1, example(type), resource, { name: 'x' });
    const opened = record('network_websocket_opened');
    expect(opened.attributes).toMatchObject({
      'url.full': 'ws://x/',
      'http.response.status_code': 101,
      'http.response.header.upgrade': ['websocket'],
      'bta.category': 'network',
    });
    expect(record('page_dialog_opened').body).toBe('prompt: name?');
    expect(record('network_download_started').body).toBe('download f.bin http://x/f.bin');
    expect(record('network_download_finished').severityText).toBe('INFO');
    expect(record('page_web_vitals').attributes).toMatchObject({ 'bta.data.lcp': { value: 30 }, 'bta.data.reason': 'navigated' });
  });
});
