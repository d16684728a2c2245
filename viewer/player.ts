// The replay player (docs/viewer.md "The player"): a session's recording (docs/replay.md) played
// in step with the timeline. The video's time 0 is the replay's `started_at` and the file covers
// wall time, so a moment of the session (unix µs) and a position in the video are the same thing:
// playing moves the timeline's cursor, choosing an event (a console row, a request, an
// interaction, an action, a mark) seeks the video there. Errors, navigations and actions are marks
// on the player's scrubber; choosing one seeks too. The replays come from
// `/browsers/{id}/replays` (the agent's, or the gateway's archive for an ended session), read with
// the viewer cookie; a viewer whose link does not grant them (403) shows no player.

import { h, replaceChildren, setText } from './dom.ts';
import { clock } from './format.ts';
import type { SessionModel } from './model.ts';

/** The fields of a replay object the player reads (docs/replay.md "API"). */
export interface ReplayInfo {
  replay_id: string;
  started_at: string;
  finished_at: string | null;
  state?: string;
}

export interface PlayerHandlers {
  /** The video moved to `ts` (unix µs): playing, or a seek the player made. */
  moved(ts: number): void;
}

type MarkKind = 'error' | 'navigation' | 'action';

interface ScrubMark {
  kind: MarkKind;
  /** Unix µs. */
  ts: number;
  label: string;
}

/** Most marks drawn on the scrubber per kind (the newest): each is a button. */
const MAX_MARKS = 300;

export class Player {
  readonly element: HTMLElement;
  private readonly video: HTMLVideoElement;
  private readonly picker: HTMLSelectElement;
  private readonly scrubber: HTMLElement;
  private readonly progress: HTMLElement;
  private readonly marksLayer: HTMLElement;
  private readonly note: HTMLElement;
  private replays: ReplayInfo[] = [];
  private current: { id: string; startMs: number; endMs: number } | undefined;
  private marksKey = '';
  private frame = 0;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;

  constructor(
    /** `/browsers/{id}/` */
    private readonly session: URL,
    private readonly model: SessionModel,
    /** The replay the page was opened at (`?replay=`, the replay's `replay_view_url`). */
    private readonly wanted: string | undefined,
    private readonly handlers: PlayerHandlers,
  ) {
    // Muted: a recording has no sound (docs/replay.md), and a muted video may play without a gesture.
    this.video = h('video', { class: 'player-video', controls: true, muted: true, playsinline: true, preload: 'auto' });
    this.video.muted = true;
    this.picker = h('select', { 'aria-label': 'Replay' });
    this.picker.addEventListener('change', () => this.load(this.picker.value));
    this.progress = h('div', { class: 'scrub-progress' });
    this.marksLayer = h('div', { class: 'scrub-marks' });
    this.scrubber = h(
      'div',
      { class: 'scrubber', role: 'group', 'aria-label': 'Recording: errors, navigations and actions; click to seek' },
      this.progress,
      this.marksLayer,
    );
    this.scrubber.addEventListener('click', (event) => {
      if ((event.target as Element).closest('.scrub-mark')) return;
      const box = this.scrubber.getBoundingClientRect();
      const current = this.current;
      if (!current || box.width === 0) return;
      const fraction = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
      this.seek((current.startMs + fraction * (current.endMs - current.startMs)) * 1000);
    });
    this.note = h('p', { class: 'caption player-note', 'aria-live': 'polite' });
    this.element = h(
      'section',
      { class: 'player', 'aria-label': 'Replay', hidden: true },
      h('div', { class: 'player-bar' }, h('h2', {}, 'Replay'), this.picker),
      this.video,
      this.scrubber,
      this.note,
    );
    const follow = () => {
      this.frame = 0;
      this.showPosition(true);
      if (!this.video.paused && !this.video.ended) this.frame = requestAnimationFrame(follow);
    };
    this.video.addEventListener('play', () => {
      cancelAnimationFrame(this.frame);
      this.frame = requestAnimationFrame(follow);
    });
    this.video.addEventListener('pause', () => cancelAnimationFrame(this.frame));
    // A seek from the video's own controls or the scrubber moves the cursor too.
    this.video.addEventListener('seeked', () => this.showPosition(true));
    this.video.addEventListener('loadedmetadata', () => this.showPosition(false));
  }

  /** The replay shown (its id), if any. */
  get replayId(): string | undefined {
    return this.current?.id;
  }

  /** Reads the session's replays again (a replay started or stopped); one read at a time. */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = this.read().finally(() => {
      this.refreshing = undefined;
      if (this.refreshAgain) {
        this.refreshAgain = false;
        void this.refresh();
      }
    });
    return this.refreshing;
  }

  /**
   * Seeks the video to `ts` (unix µs), clamped to the recording; false when no replay is loaded.
   * The cursor follows through `moved` once the video has seeked.
   */
  seek(ts: number): boolean {
    const current = this.current;
    if (!current) return false;
    const ms = Math.min(current.endMs, Math.max(current.startMs, ts / 1000));
    this.video.currentTime = (ms - current.startMs) / 1000;
    this.element.dataset.seekTs = String(ts);
    setText(
      this.note,
      ts / 1000 < current.startMs || ts / 1000 > current.endMs
        ? `${clock(ts)} is outside this recording (${clock(current.startMs * 1000)}–${clock(current.endMs * 1000)}): shown at its ${ts / 1000 < current.startMs ? 'start' : 'end'}`
        : '',
    );
    this.showPosition(false);
    return true;
  }

  /** The held events changed: the scrubber's marks follow. */
  update(): void {
    const current = this.current;
    if (!current) return;
    const key = `${current.id}:${this.model.epoch}:${this.model.console.length}:${this.model.marks.length}:${this.model.actions.length}`;
    if (key === this.marksKey) return;
    this.marksKey = key;
    const startUs = current.startMs * 1000;
    const endUs = current.endMs * 1000;
    const inside = (ts: number) => ts >= startUs && ts <= endUs;
    const marks: ScrubMark[] = [
      ...newest(
        this.model.console.filter((row) => row.level === 'error' && inside(row.ts)).map((row) => ({ kind: 'error' as const, ts: row.ts, label: row.text })),
      ),
      ...newest(
        this.model.marks
          .filter((mark) => mark.kind === 'navigation' && inside(mark.ts))
          .map((mark) => ({ kind: 'navigation' as const, ts: mark.ts, label: mark.label })),
      ),
      ...newest(this.model.actions.filter((action) => inside(action.ts)).map((action) => ({ kind: 'action' as const, ts: action.ts, label: action.label }))),
    ];
    const span = Math.max(1, endUs - startUs);
    replaceChildren(
      this.marksLayer,
      ...marks.map((mark) => {
        const button = h('button', {
          type: 'button',
          class: `scrub-mark mark-${mark.kind}`,
          'data-kind': mark.kind,
          'data-ts': mark.ts,
          title: `${clock(mark.ts)} ${mark.kind}: ${mark.label}`,
          'aria-label': `${mark.kind} at ${clock(mark.ts)}: ${mark.label}`,
        });
        // CSSOM, not a style attribute: the page's CSP refuses inline styles (docs/viewer.md).
        button.style.left = `${(((mark.ts - startUs) / span) * 100).toFixed(3)}%`;
        button.addEventListener('click', () => this.seek(mark.ts));
        return button;
      }),
    );
  }

  private async read(): Promise<void> {
    let listed: ReplayInfo[];
    try {
      const response = await fetch(new URL('replays', this.session), { headers: { accept: 'application/json' }, credentials: 'same-origin' });
      // 403: this viewer's link does not grant the replays; 404: an agent without them.
      if (!response.ok) {
        this.element.hidden = true;
        return;
      }
      listed = (await response.json()) as ReplayInfo[];
    } catch {
      return;
    }
    this.replays = Array.isArray(listed) ? listed.filter((r) => typeof r?.replay_id === 'string') : [];
    const playable = this.replays.filter((r) => r.finished_at !== null && (r.state === undefined || r.state === 'finished'));
    this.element.hidden = this.replays.length === 0;
    replaceChildren(
      this.picker,
      ...this.replays.map((r) =>
        h(
          'option',
          { value: r.replay_id, disabled: !playable.includes(r) },
          `${clock(Date.parse(r.started_at) * 1000)} ${playable.includes(r) ? '' : '(recording…)'}`.trim(),
        ),
      ),
    );
    const choice = this.current?.id ?? (playable.some((r) => r.replay_id === this.wanted) ? this.wanted : playable[playable.length - 1]?.replay_id);
    if (choice !== undefined && choice !== this.current?.id) this.load(choice);
    if (this.current) this.picker.value = this.current.id;
    else if (this.wanted !== undefined && this.replays.some((r) => r.replay_id === this.wanted))
      setText(this.note, 'This replay is still recording: it plays once it is stopped.');
  }

  private load(replayId: string): void {
    const replay = this.replays.find((r) => r.replay_id === replayId);
    if (!replay || replay.finished_at === null) return;
    this.current = { id: replayId, startMs: Date.parse(replay.started_at), endMs: Date.parse(replay.finished_at) };
    this.element.dataset.replayId = replayId;
    this.video.src = new URL(`replays/${encodeURIComponent(replayId)}`, this.session).href;
    this.marksKey = '';
    setText(this.note, '');
    this.update();
  }

  /** Draws the progress; `tell`: the timeline's cursor follows. */
  private showPosition(tell: boolean): void {
    const current = this.current;
    if (!current) return;
    const ms = current.startMs + this.video.currentTime * 1000;
    const span = Math.max(1, current.endMs - current.startMs);
    this.progress.style.width = `${Math.min(100, ((ms - current.startMs) / span) * 100).toFixed(3)}%`;
    const ts = Math.round(ms * 1000);
    this.element.dataset.positionTs = String(ts);
    if (tell) this.handlers.moved(ts);
  }
}

function newest<T>(items: T[]): T[] {
  return items.length > MAX_MARKS ? items.slice(-MAX_MARKS) : items;
}
