// The screen of the tab in front, from Chromium's screencast (docs/replay.md "Capture"), on the
// agent's own CDP connection and target sessions: an automation client's sessions never see it.
//
// `Page.startScreencast` on the active page (target-manager.ts `activePage`: headless has no
// focus, docs/replay.md "Which tab"); when another page becomes active (a new tab, a popup, a tab
// brought to the front, the active one closed) the screencast moves to it. Chromium sends a frame
// only when the page paints, and sends no more until the previous ones are acknowledged: every
// frame is acknowledged at once, also the ones the recording drops, so the browser is never held.
// JPEG frames, at most 1280×720 (Chromium scales the viewport down to fit).

import type { Protocol } from 'devtools-protocol';
import type { Logger } from 'pino';
import type { CdpConnection } from '../browser/cdp-connection.ts';
import type { IgnoredFailures } from '../browser/cdp-errors.ts';
import type { AttachedTarget, TargetManager } from '../browser/target-manager.ts';

export const MAX_WIDTH = 1280;
export const MAX_HEIGHT = 720;
/** Chromium's JPEG quality: the video is re-encoded at a lower rate anyway. */
const JPEG_QUALITY = 70;
/** A frame's own timestamp further than this from the agent's clock is not trusted (another machine's clock). */
const MAX_CLOCK_SKEW_MS = 2000;

/** What the capture follows: one CDP connection and its targets (replaced on every reconnect). */
export interface CaptureScope {
  connection: CdpConnection;
  targets: TargetManager;
}

export interface ScreenFrame {
  jpeg: Buffer;
  /** When it was painted: Unix ms (Chromium's timestamp when it agrees with the agent's clock). */
  timeMs: number;
  targetId: string;
}

export class ScreencastCapture {
  private scope: CaptureScope | undefined;
  private following: AttachedTarget | undefined;
  private readonly disposers: Array<() => void> = [];
  private closed = false;
  /** Frames received (also those dropped by the recording), for the log. */
  received = 0;

  constructor(
    private readonly onFrame: (frame: ScreenFrame) => void,
    private readonly failures: IgnoredFailures,
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Follow the targets of `scope` (a new connection), or none (the connection was lost). */
  bind(scope: CaptureScope | undefined): void {
    if (this.closed) return;
    this.unbind();
    this.scope = scope;
    if (!scope) return;
    this.disposers.push(
      scope.connection.on('Page.screencastFrame', (params, sessionId) => this.frame(params, sessionId)),
      scope.targets.onActivePageChange((page) => this.follow(page)),
    );
    this.follow(scope.targets.activePage());
  }

  /** Stops the screencast for good. */
  close(): void {
    if (this.closed) return;
    this.unbind();
    this.closed = true;
  }

  private unbind(): void {
    for (const dispose of this.disposers.splice(0)) dispose();
    this.stopOn(this.following);
    this.following = undefined;
    this.scope = undefined;
  }

  private follow(page: AttachedTarget | undefined): void {
    if (page === this.following || this.closed) return;
    this.stopOn(this.following);
    this.following = page;
    if (!page) return;
    this.logger?.debug({ target_id: page.targetId }, 'replay follows this tab');
    page
      .send('Page.startScreencast', { format: 'jpeg', quality: JPEG_QUALITY, maxWidth: MAX_WIDTH, maxHeight: MAX_HEIGHT, everyNthFrame: 1 })
      .catch((err: unknown) => {
        if (!page.isDetached) this.logger?.warn({ target_id: page.targetId, err: (err as Error).message }, 'Page.startScreencast failed');
      });
  }

  private stopOn(page: AttachedTarget | undefined): void {
    if (page && !page.isDetached) void page.sendMayFail('Page.stopScreencast');
  }

  private frame(params: Protocol.Page.ScreencastFrameEvent, sessionId: string | undefined): void {
    // Acknowledged whoever it is for: an unacknowledged frame stops that tab's screencast.
    if (this.scope && sessionId !== undefined)
      void this.failures.mayFail(this.scope.connection.send('Page.screencastFrameAck', { sessionId: params.sessionId }, sessionId));
    const page = this.following;
    if (page === undefined || sessionId !== page.sessionId) return;
    this.received++;
    const now = this.now();
    const painted = params.metadata.timestamp === undefined ? now : params.metadata.timestamp * 1000;
    this.onFrame({ jpeg: Buffer.from(params.data, 'base64'), timeMs: Math.abs(painted - now) > MAX_CLOCK_SKEW_MS ? now : painted, targetId: page.targetId });
  }
}
