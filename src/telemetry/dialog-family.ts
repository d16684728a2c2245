// Dialogs and file choosers (docs/events.md "Dialogs and file choosers"): page_dialog_opened,
// page_dialog_closed and page_file_chooser_opened, from the Page domain the core enables.
//
// The agent never answers a dialog: it only watches Page.javascriptDialogOpening/Closed. Who
// answered is not in the CDP event; what the agent can tell: a client of its CDP endpoint sent
// `Page.handleJavaScriptDialog` for that tab while the dialog was open (the proxy reads it before
// relaying it, so before Chromium closes the dialog: `answered`), or Chromium had no handler of
// its own (`hasBrowserHandler` false: only a CDP client can close it). Either way `closed_by` is
// `cdp_client`; otherwise (a browser handler, and no client of the endpoint answered: the user,
// or a client connected to Chromium directly) `unknown`.
//
// File choosers: `Page.fileChooserOpened` is asked for with `Page.enable
// {enableFileChooserOpenedEvent: true}` (telemetry.ts), which reports the chooser without
// `Page.setInterceptFileChooserDialog`: the chooser still opens as it would without the agent.

import type { Protocol } from 'devtools-protocol';
import type { PageDialogClosedData, PageDialogOpenedData } from '../../injected/schema.ts';
import type { TargetState } from './event-context.ts';
import type { FamilyHost, TelemetryFamily } from './family.ts';

interface OpenDialog {
  type: PageDialogOpenedData['dialog_type'];
  frameId: string;
  openedAt: number;
  hasBrowserHandler: boolean;
  targetId: string;
  /** A client of the agent's CDP endpoint answered it. */
  answered: boolean;
}

export class DialogFamily implements TelemetryFamily {
  private host!: FamilyHost;
  /** The dialog open on each session (a page blocks on one at a time). */
  private readonly open = new Map<string, OpenDialog>();

  start(host: FamilyHost): void {
    this.host = host;
    host.handle('Page.javascriptDialogOpening', (p, s) => this.onOpening(p, s));
    host.handle('Page.javascriptDialogClosed', (p, s) => this.onClosed(p, s));
    host.handle('Page.fileChooserOpened', (p, s) => this.onFileChooser(p, s));
  }

  targetDetached(state: TargetState): void {
    this.open.delete(state.target.sessionId);
  }

  dispose(): void {
    this.open.clear();
  }

  /** A client of the agent's CDP endpoint answers the dialog open in `targetId`, if one is. */
  answered(targetId: string): void {
    for (const open of this.open.values()) if (open.targetId === targetId) open.answered = true;
  }

  private onOpening(p: Protocol.Page.JavascriptDialogOpeningEvent, state: TargetState): void {
    const type = p.type;
    const now = this.host.clock.nowUs();
    this.open.set(state.target.sessionId, {
      type,
      frameId: p.frameId,
      openedAt: now,
      hasBrowserHandler: p.hasBrowserHandler,
      targetId: state.target.targetId,
      answered: false,
    });
    if (!this.host.admits('page')) return;
    const ctx = this.host.tracker.contextOf(state, p.frameId);
    const data: PageDialogOpenedData = {
      ...ctx,
      url: p.url,
      dialog_type: type,
      message: p.message,
      dialog_frame_id: p.frameId,
      has_browser_handler: p.hasBrowserHandler,
    };
    if (p.defaultPrompt !== undefined && type === 'prompt') data.default_prompt = p.defaultPrompt;
    this.host.emit('page_dialog_opened', now, data, { method: 'Page.javascriptDialogOpening', origin: state });
  }

  private onClosed(p: Protocol.Page.JavascriptDialogClosedEvent, state: TargetState): void {
    const open = this.open.get(state.target.sessionId);
    this.open.delete(state.target.sessionId);
    if (!this.host.admits('page')) return;
    const now = this.host.clock.nowUs();
    const ctx = this.host.tracker.contextOf(state, p.frameId ?? open?.frameId);
    const data: PageDialogClosedData = {
      ...ctx,
      accepted: p.result,
      closed_by: open !== undefined && (open.answered || !open.hasBrowserHandler) ? 'cdp_client' : 'unknown',
    };
    if (open !== undefined) {
      data.dialog_type = open.type;
      data.open_ms = Math.round((now - open.openedAt) / 1000);
    }
    if (p.result && open?.type === 'prompt') data.user_input = p.userInput;
    this.host.emit('page_dialog_closed', now, data, { method: 'Page.javascriptDialogClosed', origin: state });
  }

  private onFileChooser(p: Protocol.Page.FileChooserOpenedEvent, state: TargetState): void {
    if (!this.host.admits('page')) return;
    const ctx = this.host.tracker.contextOf(state, p.frameId);
    const data = { ...ctx, chooser_frame_id: p.frameId, mode: p.mode, ...(p.backendNodeId !== undefined && { node_id: p.backendNodeId }) };
    this.host.emit('page_file_chooser_opened', this.host.clock.nowUs(), data, { method: 'Page.fileChooserOpened', origin: state });
  }
}
