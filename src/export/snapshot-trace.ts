// page_snapshot events as the Playwright trace's frame snapshots (docs/export.md "Snapshots in
// the trace"). Pure: the events of the snapshot category go in, in seq order, and `frame-snapshot`
// lines come out, one per frame for each action and phase the snapshot shows, named
// `before@<callId>` / `after@<callId>` (format version 8 names them; the trace's before and after
// lines carry the same names, trace.ts).
//
// The stored trees refer to the previous snapshot of their frame; the trace's refer to any earlier
// snapshot of the frame in the trace, by how many snapshots ago and the node's index among the
// nodes written in full (Playwright's snapshot renderer resolves them so). So the trees are rebuilt
// (injected/snapshot-tree.ts) and written again: a subtree already written is a reference to where
// it was written, anything else is written in full. Snapshots before the export's window are
// rebuilt but not written, so a window that starts mid-document still shows whole pages.
//
// A `<link rel=stylesheet>` whose sheet the page script could read is written as a `<style>` with
// that text: the trace renders with the page's styles without the sheet's response body, which
// the default body policy does not keep (docs/network.md "Response bodies").

import { SNAPSHOT_ATTRIBUTES, type PageSnapshotData, type SnapshotNode, type TelemetryEvent } from '../../injected/schema.ts';
import { SnapshotTrees, type TreeEntry } from '../../injected/snapshot-tree.ts';
import { traceTime, type SnapshotCalls } from './trace.ts';

export class SnapshotTraceWriter {
  private readonly trees = new SnapshotTrees();
  /** Frame id → frame snapshots written for it. */
  private readonly written = new Map<string, number>();
  /** Frame snapshots that could not be rebuilt (a base out of retention). */
  unresolved = 0;

  constructor(private readonly calls: SnapshotCalls) {}

  /** One page_snapshot, in seq order; `write`: it is in the export's window. Returns the lines. */
  add(event: TelemetryEvent, write: boolean): string {
    const data = event.data as PageSnapshotData | undefined;
    if (data === undefined || !Array.isArray(data.frames)) return '';
    const roots = new Map<string, TreeEntry>();
    for (const frame of data.frames) {
      const root = this.trees.add(frame);
      if (root !== undefined) roots.set(frame.frame_id, root);
      else this.unresolved++;
    }
    const tab = data.target_id;
    if (!write || tab === undefined || !roots.has(tab)) return '';
    let out = '';
    for (const { callId, phase } of this.namesOf(data)) {
      for (const frame of data.frames) {
        const root = roots.get(frame.frame_id);
        // A frame is shown inside its parent's element: without the parent there is nowhere to show it.
        if (root === undefined || (frame.parent_frame_id !== undefined && !roots.has(frame.parent_frame_id))) continue;
        const ordinal = (this.written.get(frame.frame_id) ?? 0) + 1;
        this.written.set(frame.frame_id, ordinal);
        const counter = { n: 0 };
        const html = writeEntry(root, ordinal, counter);
        const time = traceTime(event.ts);
        const snapshot: Record<string, unknown> = {
          callId,
          snapshotName: `${phase}@${callId}`,
          pageId: tab,
          frameId: frame.frame_id,
          frameUrl: frame.url,
          timestamp: time,
          wallTime: time,
          collectionTime: frame.collection_ms,
          html,
          resourceOverrides: [],
          viewport: frame.viewport,
          isMainFrame: frame.frame_id === tab,
        };
        if (frame.doctype !== undefined) snapshot.doctype = frame.doctype;
        out += `${JSON.stringify({ type: 'frame-snapshot', snapshot })}\n`;
      }
    }
    return out;
  }

  private namesOf(data: PageSnapshotData): Array<{ callId: string; phase: 'before' | 'after' }> {
    const names: Array<{ callId: string; phase: 'before' | 'after' }> = [];
    if (data.reason === 'navigation_settled') {
      const callId = data.target_id !== undefined && data.nav_seq !== undefined ? this.calls.callOfSettledNavigation(data.target_id, data.nav_seq) : undefined;
      if (callId !== undefined) names.push({ callId, phase: 'after' });
      return names;
    }
    for (const action of data.actions ?? []) {
      const callId = this.calls.callOfAction(action.action_id);
      if (callId !== undefined) names.push({ callId, phase: action.phase });
    }
    return names;
  }
}

/**
 * A rebuilt subtree in the trace's form for the `ordinal`-th snapshot of its frame: a reference
 * when it was written before, else in full (and marked as written here). `counter` numbers the
 * nodes written in full, children before parents, as the renderer counts them.
 */
function writeEntry(entry: TreeEntry, ordinal: number, counter: { n: number }): SnapshotNode {
  if (entry.mark !== undefined) return [[ordinal - entry.mark.ordinal, entry.mark.index]];
  let out: SnapshotNode;
  const node = entry.node;
  if (typeof node === 'string') {
    out = node;
  } else {
    const sheet = node.name === 'LINK' ? node.attrs[SNAPSHOT_ATTRIBUTES.sheet] : undefined;
    if (sheet !== undefined) {
      const { href: _href, rel: _rel, [SNAPSHOT_ATTRIBUTES.sheet]: _sheet, ...rest } = node.attrs;
      // The text node, then the element: two nodes written in full.
      counter.n++;
      out = ['STYLE', rest, sheet];
    } else {
      const children = node.children.map((child) => writeEntry(child, ordinal, counter));
      out = children.length === 0 && Object.keys(node.attrs).length === 0 ? [node.name] : [node.name, { ...node.attrs }, ...children];
    }
  }
  entry.mark = { ordinal, index: counter.n++ };
  return out;
}
