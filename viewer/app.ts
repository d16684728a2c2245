// The viewer page: wires the stream (feed.ts) to the model and the views. Frames are queued as
// they arrive and ingested in slices of at most FRAME_BUDGET_MS per animation frame, then the
// views render what changed (lists only the rows in view; the timeline at most every
// TIMELINE_DATA_MS for new data), so a flood of events never blocks the page for long
// (docs/viewer.md "Responsiveness").

import type { Envelope } from '../injected/schema.ts';
import { probeCapabilities, type Capabilities } from './capabilities.ts';
import { h, replaceChildren, setText } from './dom.ts';
import { historyLines, saveLines } from './downloads.ts';
import { TelemetryFeed, type FeedConnection, type FeedState } from './feed.ts';
import { Filmstrip } from './filmstrip.ts';
import { clock, shortId, shortUrl } from './format.ts';
import { NOTICE_KINDS, SessionModel, VIEW_CATEGORIES, noChanges, type Changes, type Mark, type MarkKind, type ViewCategory } from './model.ts';
import { ConsolePanel } from './panels/console-panel.ts';
import { InteractionsPanel } from './panels/interactions-panel.ts';
import { NetworkPanel } from './panels/network-panel.ts';
import type { Panel } from './panels/panel.ts';
import { TargetsPanel } from './panels/targets-panel.ts';
import { Player } from './player.ts';
import { SnapshotPanel } from './snapshot-panel.ts';
import { Timeline } from './timeline.ts';
import type { ViewFilter } from './view-filter.ts';

const FRAME_BUDGET_MS = 8;
/** Frames waiting to be read beyond which the oldest are skipped (see skipBacklog). */
const MAX_BACKLOG = 20_000;
const TIMELINE_DATA_MS = 100;
const STATUS_MS = 250;
/** Several category clicks in a row reconnect the stream once. */
const FILTER_SETTLE_MS = 300;
/** Holes in the stream up to this size are checked against the history for opt-in events (one page). */
const HOLE_CHECK_MAX = 1000;
/** The history read's start for that check: any time (the seq range bounds it). */
const HOLE_CHECK_SINCE = '1970-01-01T00:00:00Z';

/** Categories the user can hide; monitor events (disconnects, reconnects) always show. */
const HIDEABLE: ReadonlyArray<[ViewCategory, string]> = [
  ['console', 'Console'],
  ['network', 'Network'],
  ['page', 'Page'],
  ['interaction', 'Interactions'],
  ['screenshot', 'Screenshots'],
];

type QueueItem = { seq: number; data: string } | { connection: FeedConnection };

export class ViewerApp {
  private readonly model = new SessionModel();
  private readonly feed: TelemetryFeed;
  private readonly timeline: Timeline;
  private readonly filmstrip: Filmstrip;
  /** The replay player (docs/viewer.md "The player"). */
  private readonly player: Player;
  private readonly snapshot: SnapshotPanel;
  private readonly panels: Panel[];
  private readonly network: NetworkPanel;
  private readonly console: ConsolePanel;
  private readonly targets: TargetsPanel;
  private active: Panel;
  private readonly tabs = new Map<Panel, HTMLButtonElement>();
  private readonly status: HTMLElement;
  private readonly banner: HTMLElement;
  private readonly notices: HTMLElement;
  private readonly targetSelect: HTMLSelectElement;
  private readonly harLink: HTMLAnchorElement;
  private readonly downloadButton: HTMLButtonElement;

  private categories = new Set<ViewCategory>(VIEW_CATEGORIES);
  private targetId: string | undefined;
  private caps: Capabilities = { streamFilters: undefined, history: false, har: false };
  /** The capabilities probe: a check that needs them waits for it (the stream may come first). */
  private capsProbe: Promise<Capabilities> | undefined;
  /** The categories last asked of the agent; undefined: all. */
  private asked: string[] | undefined;
  private filterTimer: ReturnType<typeof setTimeout> | undefined;

  private queue: QueueItem[] = [];
  private head = 0;
  private scheduled = false;
  private connection: FeedConnection | undefined;
  private logId: string | null | undefined;
  /** Marks waiting for the first event to place them at. */
  private readonly pendingMarks: Array<{ kind: MarkKind; label: string; severity: Mark['severity'] }> = [];
  /** Counts the seq numberings seen (an agent restarted without its log): a hole check of an older one is dropped. */
  private numbering = 0;
  /** The highest seq ingested from the stream (gaps are measured from it). */
  private liveEdge: number | undefined;
  private feedState: FeedState = 'connecting';
  private droppedAt: number | undefined;
  private lastTimelineData = 0;
  private timelinePending = false;
  private lastStatus = 0;
  /** The connection changed: the status line says so at once. */
  private statusStale = false;
  private noticeCount = -1;
  private targetCount = -1;
  private readonly rate: number[] = [];

  constructor(
    private readonly root: HTMLElement,
    /** `/browsers/{id}/` */
    private readonly session: URL,
    private readonly sessionId: string,
  ) {
    const filter = (): ViewFilter => this.viewFilter;
    this.timeline = new Timeline(this.model, filter, {
      cursor: (ts) => this.filmstrip.setCursor(ts),
      rangeChanged: () => {
        this.network.rangeChanged();
        this.schedule();
      },
      effects: (actionId, effects) => {
        const action = actionId === undefined ? undefined : this.model.actions.find((a) => a.actionId === actionId);
        this.snapshot.show(action);
        this.model.effectSeqs.clear();
        for (const e of effects) this.model.effectSeqs.add(e.seq);
        this.console.effectsChanged();
        this.network.effectsChanged();
      },
      seek: (ts) => this.player.seek(ts),
    });
    // `?replay=`: the page was opened at that replay (its replay_view_url, docs/replay.md).
    this.player = new Player(session, this.model, new URLSearchParams(location.search).get('replay') ?? undefined, {
      moved: (ts) => this.timeline.moveCursor(ts),
    });
    this.filmstrip = new Filmstrip(this.model, (shot) => this.timeline.highlight(shot.ts));
    this.snapshot = new SnapshotPanel(session, async () => ((await this.capsProbe) ?? this.caps).history);
    this.network = new NetworkPanel(
      this.model,
      filter,
      () => this.timeline.range,
      (entry) => this.timeline.highlight(entry.ts),
    );
    this.console = new ConsolePanel(this.model, filter, (row) => this.timeline.highlight(row.ts));
    this.targets = new TargetsPanel(
      this.model,
      () => this.targetId,
      (id) => this.setTarget(id),
    );
    this.panels = [this.console, this.network, new InteractionsPanel(this.model, filter, (row) => this.timeline.highlight(row.ts)), this.targets];
    this.active = this.panels[0]!;
    this.status = h('p', { class: 'conn-status', role: 'status' }, 'Connecting…');
    this.banner = h('div', { class: 'banner', role: 'alert', hidden: true });
    this.notices = h('ol', { class: 'notices', 'aria-label': 'Notices: lost events, disconnects, reconnects' });
    this.targetSelect = h('select', { 'aria-label': 'Target' }, h('option', { value: '' }, 'All targets'));
    this.targetSelect.addEventListener('change', () => this.setTarget(this.targetSelect.value || undefined));
    this.downloadButton = h('button', { type: 'button' }, 'Download events (JSON lines)');
    this.downloadButton.addEventListener('click', () => void this.download());
    this.harLink = h('a', { class: 'button', href: new URL('har', session).pathname, download: `${sessionId}.har`, hidden: true }, 'Download HAR');
    this.feed = new TelemetryFeed(new URL('telemetry', session), {
      frame: (seq, data) => this.enqueue({ seq, data }),
      connected: (connection) => this.enqueue({ connection }),
      state: (state, detail) => this.onFeedState(state, detail),
    });
    this.layout();
  }

  start(): void {
    this.feed.start();
    void this.player.refresh();
    this.capsProbe = probeCapabilities(this.session);
    void this.capsProbe.then((caps) => {
      this.caps = caps;
      this.harLink.hidden = !caps.har;
      this.downloadButton.title = caps.history ? 'The whole history, from the agent' : 'The events this page holds';
    });
    document.addEventListener('visibilitychange', () => this.schedule());
    // The rate and the connection state also change while no event arrives.
    setInterval(() => this.updateStatus(true), 1000);
    this.schedule();
  }

  private get viewFilter(): ViewFilter {
    return { categories: this.categories, targetId: this.targetId };
  }

  private layout(): void {
    const categoryBoxes = HIDEABLE.map(([category, label]) => {
      const box = h('input', { type: 'checkbox', checked: true, value: category });
      box.addEventListener('change', () => {
        const next = new Set(this.categories);
        if (box.checked) next.add(category);
        else next.delete(category);
        this.setCategories(next);
      });
      return h('label', { class: 'check' }, box, label);
    });
    const tablist = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Panels' });
    const panelStack = h('div', { class: 'panel-stack' });
    for (const panel of this.panels) {
      const tab = h(
        'button',
        { type: 'button', role: 'tab', id: `tab-${panel.id}`, 'aria-controls': `panel-${panel.id}`, 'aria-selected': 'false', tabindex: -1 },
        panel.title,
      );
      tab.addEventListener('click', () => this.activate(panel));
      this.tabs.set(panel, tab);
      tablist.append(tab);
      panelStack.append(
        h('div', { role: 'tabpanel', id: `panel-${panel.id}`, 'aria-labelledby': `tab-${panel.id}`, 'data-panel': panel.id, hidden: true }, panel.element),
      );
    }
    tablist.addEventListener('keydown', (event) => {
      const index = this.panels.indexOf(this.active);
      const moves: Record<string, number> = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: this.panels.length - 1 };
      const next = moves[event.key];
      if (next === undefined) return;
      event.preventDefault();
      const panel = this.panels[(next + this.panels.length) % this.panels.length]!;
      this.activate(panel);
      this.tabs.get(panel)!.focus();
    });
    replaceChildren(
      this.root,
      h(
        'header',
        { class: 'top' },
        h('h1', {}, 'Session ', h('code', {}, this.sessionId)),
        this.status,
        h('div', { class: 'filters', role: 'group', 'aria-label': 'Show' }, ...categoryBoxes, this.targetSelect),
        h('div', { class: 'downloads' }, this.downloadButton, this.harLink),
      ),
      this.banner,
      this.notices,
      this.timeline.element,
      h(
        'div',
        { class: 'workspace' },
        h('main', { class: 'panels' }, tablist, panelStack),
        h('div', { class: 'side' }, this.player.element, this.filmstrip.element, this.snapshot.element),
      ),
    );
    this.activate(this.active);
  }

  private activate(panel: Panel): void {
    this.active = panel;
    for (const [p, tab] of this.tabs) {
      const selected = p === panel;
      tab.setAttribute('aria-selected', String(selected));
      tab.tabIndex = selected ? 0 : -1;
      document.getElementById(`panel-${p.id}`)!.hidden = !selected;
      if (!selected) p.hidden();
    }
    panel.shown();
  }

  // ---- the stream ------------------------------------------------------------------------------

  private enqueue(item: QueueItem): void {
    this.queue.push(item);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // A hidden page gets no animation frames: keep ingesting on timers (nothing is drawn).
    if (document.hidden) setTimeout(() => this.tick(), 100);
    else requestAnimationFrame(() => this.tick());
  }

  private tick(): void {
    this.scheduled = false;
    if (this.queue.length - this.head > MAX_BACKLOG) this.skipBacklog();
    const deadline = performance.now() + FRAME_BUDGET_MS;
    let ingested = 0;
    while (this.head < this.queue.length) {
      const item = this.queue[this.head++]!;
      if ('connection' in item) {
        this.onConnection(item.connection);
        this.statusStale = true;
      } else if (this.accept(item.seq, item.data)) ingested++;
      if (performance.now() > deadline) break;
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 8192) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (ingested > 0) this.rate.push(performance.now(), ingested);
    this.render(this.model.takeChanges());
    if (this.head < this.queue.length || this.timelinePending) this.schedule();
  }

  /**
   * More frames wait than the page would keep: it cannot keep up (a flood in every category).
   * The oldest are skipped unread, as a trim would drop them right after reading them, and a
   * notice says so; the agent still has them (history, download).
   */
  private skipBacklog(): void {
    const end = this.queue.length - MAX_BACKLOG / 2;
    let skipped = 0;
    let first: number | undefined;
    for (; this.head < end; this.head++) {
      const item = this.queue[this.head]!;
      if ('connection' in item) {
        this.onConnection(item.connection);
        continue;
      }
      first ??= item.seq;
      skipped++;
      if (this.liveEdge === undefined || item.seq > this.liveEdge) this.liveEdge = item.seq;
    }
    if (skipped > 0) {
      this.noteMark({
        kind: 'page_behind',
        label: `${skipped} events skipped (seq ${first}–${this.liveEdge}): this page could not keep up; the agent still has them (narrow the view, or download)`,
        severity: 'warn',
      });
    }
  }

  private onConnection(connection: FeedConnection): void {
    const resumed = this.connection !== undefined && this.droppedAt !== undefined;
    const logChanged = this.logId != null && connection.logId !== null && connection.logId !== this.logId;
    this.connection = connection;
    this.logId = connection.logId;
    this.droppedAt = undefined;
    if (connection.resume === 'reset' || logChanged) {
      // Another log (an agent restarted without its data): its seqs number other events.
      this.model.reset();
      this.numbering++;
      this.liveEdge = undefined;
      this.noteMark({
        kind: 'agent_restarted',
        label: 'the agent restarted without its event log: seq numbering began again, earlier events are gone',
        severity: 'warn',
      });
      if (connection.resume !== 'reset') {
        // It resumed after our old seq in the new log: start again from its oldest event.
        this.feed.restartNumbering();
        this.feed.setCategories(this.asked, true);
        return;
      }
    } else if (resumed) {
      this.noteMark({ kind: 'stream_resumed', label: `viewer stream resumed after seq ${connection.resumedAfter ?? '?'}`, severity: 'info' });
    }
    const { firstSeq, resumedAfter } = connection;
    if (connection.resume === 'gap' && firstSeq !== undefined && resumedAfter !== undefined && firstSeq > resumedAfter + 1) {
      const lost = firstSeq - resumedAfter - 1;
      const filtered = connection.filtered ? ' (some may not have matched the filter)' : '';
      this.noteMark({
        kind: 'gap',
        label: `${lost} events lost while the viewer was away (seq ${resumedAfter + 1}–${firstSeq - 1}): the agent no longer had them${filtered}`,
        severity: 'error',
      });
      // The seq check of the next event must not count them again.
      if (this.liveEdge === undefined || firstSeq - 1 > this.liveEdge) this.liveEdge = firstSeq - 1;
    }
    if (connection.replay && this.liveEdge === undefined && firstSeq !== undefined) {
      if (firstSeq > 1)
        this.noteMark({ kind: 'gap', label: `${firstSeq - 1} earlier events were no longer retained by the agent (seq 1–${firstSeq - 1})`, severity: 'warn' });
      this.liveEdge = firstSeq - 1;
    }
  }

  /** A mark at the newest event held, or at the next one to arrive when none is held yet. */
  private noteMark(mark: { kind: MarkKind; label: string; severity: Mark['severity'] }): void {
    if (Number.isFinite(this.model.maxTs)) this.model.addMark({ ...mark, seq: this.liveEdge ?? 0, ts: this.model.maxTs });
    else this.pendingMarks.push(mark);
  }

  /** Ingests one frame; false when it was a duplicate or unreadable. */
  private accept(seq: number, data: string): boolean {
    if (this.model.has(seq)) return false;
    let envelope: Envelope;
    try {
      envelope = JSON.parse(data) as Envelope;
    } catch {
      return false;
    }
    if (typeof envelope !== 'object' || envelope === null || envelope.seq !== seq || typeof envelope.event?.type !== 'string') return false;
    const connection = this.connection;
    if (connection?.filtered) {
      const asked = connection.categories;
      if (asked !== undefined && !asked.includes(SessionModel.categoryOf(envelope.event))) {
        // The agent ignores the filter parameters: holes in seq are losses again.
        connection.filtered = false;
        this.feed.filtersIgnored();
      }
    }
    for (const mark of this.pendingMarks.splice(0)) this.model.addMark({ ...mark, seq, ts: envelope.event.ts });
    // A filtered stream has seq holes by design: only an unfiltered one tells of losses this way
    // (a subscriber that fell behind the agent's retention skips what it lost).
    if (connection !== undefined && !connection.filtered) {
      if (this.liveEdge === undefined && connection.replay && seq > 1) {
        this.model.addMark({
          seq,
          ts: envelope.event.ts,
          kind: 'gap',
          label: `${seq - 1} earlier events were no longer retained by the agent (seq 1–${seq - 1})`,
          severity: 'warn',
        });
      } else if (this.liveEdge !== undefined && seq > this.liveEdge + 1) {
        void this.markHole(this.liveEdge + 1, seq - 1, seq, envelope.event.ts);
      }
    }
    if (this.liveEdge === undefined || seq > this.liveEdge) this.liveEdge = seq;
    this.model.ingest(envelope);
    // A recording began or ended: the player's list follows (a finished one becomes playable).
    if (envelope.event.type === 'replay_started' || envelope.event.type === 'replay_stopped') void this.player.refresh();
    return true;
  }

  /**
   * A hole in the unfiltered stream (seq `from`–`to`): events lost, unless they are of the opt-in
   * categories the agent leaves out of a stream that names none (the DOM snapshots, docs/events.md
   * "Filters"), which the history tells: only the rest are marked lost.
   */
  private async markHole(from: number, to: number, seq: number, ts: number): Promise<void> {
    const size = to - from + 1;
    const numbering = this.numbering;
    let optIn = 0;
    // The replay of what the agent retains usually arrives before the probe has answered: a hole
    // checked without knowing whether there is a history would be marked lost (docs/viewer.md).
    const caps = (await this.capsProbe) ?? this.caps;
    if (caps.history && size <= HOLE_CHECK_MAX) {
      try {
        const url = new URL('telemetry/events', this.session);
        url.search = new URLSearchParams({ type: 'page_snapshot', offset: String(from), limit: String(size), since: HOLE_CHECK_SINCE }).toString();
        const response = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
        if (response.ok) optIn = ((await response.json()) as Envelope[]).filter((e) => e.seq >= from && e.seq <= to).length;
      } catch {
        // Unknown: counted as lost.
      }
    }
    const lost = size - optIn;
    if (lost <= 0 || numbering !== this.numbering) return;
    this.model.addMark({
      seq,
      ts,
      kind: 'gap',
      label: `${lost} event${lost === 1 ? '' : 's'} lost (seq ${from}–${to}): the agent no longer had them`,
      severity: 'error',
    });
    this.schedule();
  }

  private onFeedState(state: FeedState, detail: string): void {
    if (state === 'reconnecting' && this.feedState === 'live') this.droppedAt = Date.now();
    this.feedState = state;
    if (state === 'unauthorized') {
      this.showBanner(
        `This viewer is not signed in (${detail}). Viewer links work once and expire after a minute, and a restarted agent forgets them: ask for a new one with POST /browsers/${this.sessionId}/viewer/sessions (docs/viewer.md).`,
      );
    } else if (state === 'ended') this.showBanner(`The session has ended (${detail}). What the page received stays here.`);
    this.updateStatus(true);
  }

  private showBanner(text: string): void {
    this.banner.textContent = text;
    this.banner.hidden = false;
  }

  // ---- filters ---------------------------------------------------------------------------------

  /** The categories the stream asks the agent for; undefined: all. */
  private serverCategories(): string[] | undefined {
    if (HIDEABLE.every(([c]) => this.categories.has(c))) return undefined;
    // Failure signals and live view (system, connection) always come, like the monitor events, and
    // so do control events: the Actions and Steps lanes follow them whatever is hidden.
    return [...HIDEABLE.map(([c]) => c).filter((c) => this.categories.has(c)), 'monitor', 'system', 'connection', 'control'];
  }

  private setCategories(next: Set<ViewCategory>): void {
    next.add('monitor').add('system').add('connection');
    this.categories = next;
    this.rebuild();
    if (this.caps.streamFilters === false) return;
    clearTimeout(this.filterTimer);
    this.filterTimer = setTimeout(() => {
      const server = this.serverCategories();
      const before = this.asked;
      // Widened after the agent narrowed the stream: the added categories' events were never
      // received. Replay what the agent retains (seqs already held are skipped).
      const widened = before !== undefined && (server === undefined || server.some((c) => !before.includes(c)));
      this.asked = server;
      this.feed.setCategories(server, widened);
    }, FILTER_SETTLE_MS);
  }

  private setTarget(targetId: string | undefined): void {
    this.targetId = targetId;
    this.targetSelect.value = targetId ?? '';
    this.rebuild();
  }

  private rebuild(): void {
    for (const panel of this.panels) panel.update(noChanges(), true);
    this.timeline.invalidate();
    this.updateStatus(true);
    this.schedule();
  }

  // ---- rendering -------------------------------------------------------------------------------

  private render(changes: Changes): void {
    const any = Object.values(changes).some(Boolean);
    if (any) {
      for (const panel of this.panels) panel.update(changes, false);
      if (changes.screenshots) this.filmstrip.update();
      // Its marks: errors, navigations, actions (it compares counts, so this is cheap).
      this.player.update();
      if (changes.marks) this.renderNotices();
      if (changes.targets) this.renderTargetOptions();
    }
    const now = performance.now();
    if (any || this.timelinePending) {
      if (now - this.lastTimelineData >= TIMELINE_DATA_MS) {
        this.timeline.invalidate();
        this.network.rangeChanged();
        this.lastTimelineData = now;
        this.timelinePending = false;
      } else this.timelinePending = true;
    }
    this.timeline.draw();
    this.updateStatus(this.statusStale);
    this.statusStale = false;
  }

  private updateTabs(): void {
    for (const [panel, tab] of this.tabs) setText(tab, `${panel.title} (${panel.count()})`);
  }

  private renderNotices(): void {
    const notices = this.model.marks.filter((m) => NOTICE_KINDS.has(m.kind));
    if (notices.length === this.noticeCount) return;
    this.noticeCount = notices.length;
    replaceChildren(
      this.notices,
      // Newest first: the one that just happened is the one in view.
      ...notices
        .slice(-20)
        .reverse()
        .map((mark) => {
          const button = h(
            'button',
            { type: 'button', class: `notice ${mark.severity}`, 'data-kind': mark.kind, title: mark.label },
            `${mark.severity === 'info' ? 'ℹ' : '⚠'} ${clock(mark.ts)} ${mark.label}`,
          );
          button.addEventListener('click', () => this.timeline.highlight(mark.ts));
          return h('li', {}, button);
        }),
    );
  }

  private renderTargetOptions(): void {
    if (this.model.targets.size === this.targetCount) return;
    this.targetCount = this.model.targets.size;
    const options = [...this.model.targets.values()].map((t) => h('option', { value: t.id }, `${t.type} ${shortId(t.id)} ${shortUrl(t.url)}`));
    replaceChildren(this.targetSelect, h('option', { value: '' }, 'All targets'), ...options);
    this.targetSelect.value = this.targetId ?? '';
  }

  private updateStatus(force: boolean): void {
    // Text that changes with every event is written a few times a second: each write would
    // lay out the page again.
    const now = performance.now();
    if (!force && now - this.lastStatus < STATUS_MS) return;
    this.lastStatus = now;
    this.updateTabs();
    for (const panel of this.panels) panel.showCounts();
    while (this.rate.length > 0 && this.rate[0]! < now - 1000) this.rate.splice(0, 2);
    let perSecond = 0;
    for (let i = 1; i < this.rate.length; i += 2) perSecond += this.rate[i]!;
    const state: Record<FeedState, string> = {
      connecting: 'Connecting…',
      live: 'Live',
      reconnecting: 'Reconnecting…',
      unauthorized: 'Not signed in',
      ended: 'Session ended',
    };
    const parts = [state[this.feedState], `${this.model.envelopes.length.toLocaleString()} events held`];
    if (this.liveEdge !== undefined) parts.push(`seq ${this.liveEdge}`);
    parts.push(`${perSecond} events/s`);
    if (this.connection?.filtered) parts.push('stream filtered by the agent');
    if (this.model.trimmedBefore > 0) parts.push(`events before seq ${this.model.trimmedBefore} dropped from this page`);
    this.status.dataset.state = this.feedState;
    setText(this.status, parts.join(' · '));
  }

  private async download(): Promise<void> {
    const name = `session-${this.sessionId}-events.jsonl`;
    this.downloadButton.disabled = true;
    try {
      let lines: string[] | undefined;
      if (this.caps.history) lines = await historyLines(this.session, (n) => setText(this.downloadButton, `Downloading… ${n}`));
      lines ??= this.model.envelopes.map((envelope) => JSON.stringify(envelope));
      saveLines(lines, name);
    } finally {
      this.downloadButton.disabled = false;
      setText(this.downloadButton, 'Download events (JSON lines)');
    }
  }
}
