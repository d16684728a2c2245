// Downloads (docs/events.md "Downloads"): network_download_started, network_download_progress (at
// most one a second per download) and network_download_finished, from the Browser domain's
// download events.
//
// Chromium sends Browser.downloadWillBegin/downloadProgress only to a client that asked with
// `Browser.setDownloadBehavior {eventsEnabled: true}`, and that command also sets the behaviour.
// The agent sends `behavior: "default"` (Chromium's own behaviour, as without the command), once
// per connection, for the default browser context.
// A CDP client that sets its own behaviour later keeps receiving its own events; the agent keeps
// receiving its events as long as Chromium keeps them per client (docs/events.md "Downloads").

import type { Protocol } from 'devtools-protocol';
import type { EventContext, NetworkDownloadFinishedData } from '../../injected/schema.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';

/** Progress events per download at most this often. */
export const DOWNLOAD_PROGRESS_INTERVAL_MS = 1000;
/** Downloads and response MIME types remembered at most. */
const MAX_DOWNLOADS = 256;
const MAX_MIME_URLS = 64;

interface DownloadRecord {
  ctx: EventContext;
  suggestedFilename: string;
  lastProgressAt: number;
}

export class DownloadFamily implements TelemetryFamily {
  private host!: FamilyHost;
  private readonly downloads = new Map<string, DownloadRecord>();
  /** MIME types of the latest document-like responses by URL: a download is one of them. */
  private readonly mimeByUrl = new Map<string, string>();
  private readonly disposers: Array<() => void> = [];

  constructor(private readonly now: () => number = () => performance.now()) {}

  start(host: FamilyHost): void {
    this.host = host;
    const connection = host.connection;
    // Browser-level events come on the browser session (no session id).
    this.disposers.push(
      connection.on('Browser.downloadWillBegin', (p, sessionId) => {
        if (sessionId === undefined) this.onWillBegin(p);
      }),
      connection.on('Browser.downloadProgress', (p, sessionId) => {
        if (sessionId === undefined) this.onProgress(p);
      }),
    );
    host.handle('Network.responseReceived', (p) => {
      if (p.type !== 'Document' && p.type !== 'Other') return;
      if (this.mimeByUrl.size >= MAX_MIME_URLS) this.mimeByUrl.delete(this.mimeByUrl.keys().next().value!);
      this.mimeByUrl.set(p.response.url, p.response.mimeType);
    });
    void connection.failures.mayFail(connection.send('Browser.setDownloadBehavior', { behavior: 'default', eventsEnabled: true })).then((result) => {
      if (result === undefined) host.logger.warn('Browser.setDownloadBehavior failed: download events are off');
    });
  }

  dispose(): void {
    for (const dispose of this.disposers.splice(0)) dispose();
    this.downloads.clear();
    this.mimeByUrl.clear();
  }

  /** The context of the frame that started the download: its tab's target, when attached. */
  private contextOfFrame(frameId: string): EventContext {
    for (const state of this.host.tracker.all()) {
      if (state.frames.has(frameId)) return this.host.tracker.contextOf(state, frameId);
    }
    return { frame_id: frameId };
  }

  private onWillBegin(p: Protocol.Browser.DownloadWillBeginEvent): void {
    const ctx = this.contextOfFrame(p.frameId);
    if (this.downloads.size >= MAX_DOWNLOADS) this.downloads.delete(this.downloads.keys().next().value!);
    this.downloads.set(p.guid, { ctx, suggestedFilename: p.suggestedFilename, lastProgressAt: -Infinity });
    if (!this.host.admits('network')) return;
    const mime = this.mimeByUrl.get(p.url);
    this.host.emit(
      'network_download_started',
      this.host.clock.nowUs(),
      { ...ctx, url: p.url, guid: p.guid, suggested_filename: p.suggestedFilename, ...(mime !== undefined && { mime_type: mime }) },
      { method: 'Browser.downloadWillBegin', origin: originOf(ctx) },
    );
  }

  private onProgress(p: Protocol.Browser.DownloadProgressEvent): void {
    const record = this.downloads.get(p.guid);
    const ctx = record?.ctx ?? {};
    if (p.state === 'inProgress') {
      if (record === undefined) return;
      const now = this.now();
      if (now - record.lastProgressAt < DOWNLOAD_PROGRESS_INTERVAL_MS) return;
      record.lastProgressAt = now;
      if (!this.host.admits('network')) return;
      this.host.emit(
        'network_download_progress',
        this.host.clock.nowUs(),
        { ...ctx, guid: p.guid, received_bytes: p.receivedBytes, total_bytes: p.totalBytes },
        { method: 'Browser.downloadProgress', origin: originOf(ctx) },
      );
      return;
    }
    this.downloads.delete(p.guid);
    if (!this.host.admits('network')) return;
    const data: NetworkDownloadFinishedData = { ...ctx, guid: p.guid, state: p.state, received_bytes: p.receivedBytes, total_bytes: p.totalBytes };
    if (p.filePath !== undefined && p.state === 'completed') data.file_path = p.filePath;
    if (record !== undefined) data.suggested_filename = record.suggestedFilename;
    this.host.emit('network_download_finished', this.host.clock.nowUs(), data, { method: 'Browser.downloadProgress', origin: originOf(ctx) });
  }
}

function originOf(ctx: EventContext): { target_id?: string; target_type?: string } | undefined {
  return ctx.target_id === undefined ? undefined : { target_id: ctx.target_id, ...(ctx.target_type !== undefined && { target_type: ctx.target_type }) };
}
