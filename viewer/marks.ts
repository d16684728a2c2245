// The timeline's marks (docs/viewer.md "What it shows"): what a mark is and its kinds, shared by
// the model that makes them and the lanes that draw them.

/** The part every row of the model has: its event's seq, time and target. */
export interface Row {
  seq: number;
  /** Unix µs. */
  ts: number;
  targetId: string | undefined;
}

/** The Activity lane's kinds (viewer/activity-lane.ts). */
export type ActivityKind = 'dialog' | 'file_chooser' | 'download' | 'socket' | 'web_vitals';

export type MarkKind =
  | 'navigation'
  | 'dom_content_loaded'
  | 'load'
  | 'layout_shift'
  | 'lcp'
  | 'network_idle'
  | 'page_layout_settled'
  | 'page_navigation_settled'
  | 'disconnected'
  | 'reconnected'
  | 'reconnect_failed'
  | 'init_failed'
  /** Seqs skipped in an unfiltered stream: events lost (the agent's retention). */
  | 'gap'
  /** The page's own stream dropped and resumed. */
  | 'stream_resumed'
  /** Another agent process: seq numbering began again. */
  | 'agent_restarted'
  /** Events this page skipped because it could not keep up (the agent still has them). */
  | 'page_behind'
  // Failure signals and live view: the timeline's Health lane (viewer/health-lane.ts).
  | 'service_crashed'
  | 'oom_kill'
  | 'tab_crashed'
  | 'tab_recovered'
  | 'unresponsive'
  /** page_responsive: `value` is how long the tab did not answer (ms), ending at `ts`. */
  | 'responsive'
  /** `value`: the task's duration (ms), ending at `ts`. */
  | 'long_task'
  | 'live_view'
  // Dialogs, downloads, sockets, Web Vitals: the timeline's Activity lane (viewer/activity-lane.ts).
  | ActivityKind;

export interface Mark extends Row {
  kind: MarkKind;
  label: string;
  severity: 'info' | 'warn' | 'error';
  /** Layout shift score, LCP size. */
  value?: number;
}
