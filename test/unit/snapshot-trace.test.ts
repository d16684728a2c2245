// Rebuilding stored snapshots and writing them as the trace's frame snapshots (docs/events.md
// "Snapshots", docs/export.md "Snapshots in the trace"): the stored references point into the
// frame's previous snapshot; the trace's are resolved here the way Playwright's renderer resolves
// them (the non-reference nodes of an earlier snapshot of the frame, children before parents).

import { describe, expect, it } from 'vitest';
import type { FrameSnapshotData, PageSnapshotData, SnapshotNode, TelemetryEvent } from '../../injected/schema.ts';
import { SnapshotTrees, type TreeEntry } from '../../injected/snapshot-tree.ts';
import { SnapshotTraceWriter } from '../../src/export/snapshot-trace.ts';

const T0 = 1_800_000_000_000_000;
const TAB = 'TAB1';

function frame(number: number, html: SnapshotNode, base?: number, frameId = TAB, doc = 'd1'): FrameSnapshotData {
  return {
    frame_id: frameId,
    doc,
    number,
    ...(base !== undefined ? { base } : {}),
    url: 'http://a.test/',
    viewport: { width: 800, height: 600 },
    html,
    nodes: 0,
    collection_ms: 1,
  };
}

function snapshotEvent(seq: number, frames: FrameSnapshotData[], actions: PageSnapshotData['actions']): TelemetryEvent {
  const data: PageSnapshotData = { target_id: TAB, target_type: 'page', frame_id: TAB, nav_seq: 1, reason: 'action', actions, frames };
  return { ts: T0 + seq * 1000, type: 'page_snapshot', source: { kind: 'agent' }, data };
}

/** A rebuilt tree as plain nodes, for comparison. */
function plain(entry: TreeEntry): SnapshotNode {
  const node = entry.node;
  if (typeof node === 'string') return node;
  return [node.name, { ...node.attrs }, ...node.children.map(plain)];
}

/** Playwright's renderer's resolution of a trace's frame snapshots (one frame), to plain nodes. */
function resolveTrace(snapshots: SnapshotNode[]): SnapshotNode[] {
  const lists: SnapshotNode[][] = [];
  const nodesOf = (html: SnapshotNode): SnapshotNode[] => {
    const out: SnapshotNode[] = [];
    const visit = (n: SnapshotNode) => {
      if (typeof n === 'string') out.push(n);
      else if (typeof n[0] === 'string') {
        for (const child of n.slice(2) as SnapshotNode[]) visit(child);
        out.push(n);
      }
    };
    visit(html);
    return out;
  };
  const expand = (n: SnapshotNode, index: number): SnapshotNode => {
    if (typeof n === 'string') return n;
    if (Array.isArray(n[0])) {
      const [ago, k] = n[0];
      const target = index - ago;
      return expand(lists[target]![k]!, target);
    }
    const [name, attrs, ...children] = n as [string, Record<string, string>?, ...SnapshotNode[]];
    return [name, { ...(attrs ?? {}) }, ...children.map((c) => expand(c, index))];
  };
  return snapshots.map((html, i) => {
    lists.push(nodesOf(html));
    return expand(html, i);
  });
}

const FIRST: SnapshotNode = [
  'HTML',
  {},
  ['HEAD', {}, ['TITLE', {}, 'page']],
  ['BODY', {}, ['H1', { id: 'h' }, 'Old'], ['P', {}, 'unchanged text'], ['UL', {}, ['LI', {}, 'one'], ['LI', {}, 'two']]],
];
// Post-order positions of FIRST: 0 'page', 1 TITLE, 2 HEAD, 3 'Old', 4 H1, 5 'unchanged text', 6 P, 7 'one', 8 LI, 9 'two', 10 LI, 11 UL, 12 BODY, 13 HTML.
const SECOND: SnapshotNode = ['HTML', {}, [[1, 2]], ['BODY', {}, ['H1', { id: 'h' }, 'New'], [[1, 6]], [[1, 11]]]];
const SECOND_PLAIN: SnapshotNode = [
  'HTML',
  {},
  ['HEAD', {}, ['TITLE', {}, 'page']],
  ['BODY', {}, ['H1', { id: 'h' }, 'New'], ['P', {}, 'unchanged text'], ['UL', {}, ['LI', {}, 'one'], ['LI', {}, 'two']]],
];

describe('rebuilding stored snapshots', () => {
  it('expands a reference into the subtree of the previous snapshot it names', () => {
    const trees = new SnapshotTrees();
    trees.add(frame(1, FIRST));
    expect(plain(trees.add(frame(2, SECOND, 1))!)).toEqual(SECOND_PLAIN);
  });

  it('refers to a subtree that was itself a reference', () => {
    const trees = new SnapshotTrees();
    trees.add(frame(1, FIRST));
    trees.add(frame(2, SECOND, 1));
    // Positions of SECOND rebuilt are FIRST's but H1 ('New' at 3, H1 at 4): the list (UL) is still at 11.
    const third: SnapshotNode = ['HTML', {}, [[1, 2]], ['BODY', {}, [[1, 4]], ['P', {}, 'changed'], [[1, 11]]]];
    const rebuilt = plain(trees.add(frame(3, third, 2))!);
    expect(rebuilt).toEqual([
      'HTML',
      {},
      ['HEAD', {}, ['TITLE', {}, 'page']],
      ['BODY', {}, ['H1', { id: 'h' }, 'New'], ['P', {}, 'changed'], ['UL', {}, ['LI', {}, 'one'], ['LI', {}, 'two']]],
    ]);
  });

  it('cannot rebuild a snapshot whose base it has not seen, nor the ones after it, until a full one', () => {
    const trees = new SnapshotTrees();
    trees.add(frame(1, FIRST));
    expect(trees.add(frame(3, SECOND, 2))).toBeUndefined();
    expect(trees.add(frame(4, SECOND, 3))).toBeUndefined();
    expect(trees.add(frame(5, FIRST))).toBeDefined();
  });

  it('keeps documents apart: a reference never reaches another document of the frame', () => {
    const trees = new SnapshotTrees();
    trees.add(frame(1, FIRST, undefined, TAB, 'd1'));
    expect(trees.add(frame(2, SECOND, 1, TAB, 'd2'))).toBeUndefined();
  });
});

describe('snapshots as trace frame snapshots', () => {
  const calls = {
    callOfAction: (id: string) => ({ a1: 'call@1', a2: 'call@2' })[id],
    callOfSettledNavigation: () => undefined,
  };
  const framesOf = (lines: string) =>
    lines
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { snapshot: { html: SnapshotNode; snapshotName: string; frameId: string; isMainFrame: boolean } }).snapshot);

  it('names one frame snapshot per action and phase the snapshot shows', () => {
    const writer = new SnapshotTraceWriter(calls);
    const lines = writer.add(
      snapshotEvent(
        1,
        [frame(1, FIRST)],
        [
          { action_id: 'a1', phase: 'after' },
          { action_id: 'a2', phase: 'before' },
        ],
      ),
      true,
    );
    expect(framesOf(lines).map((s) => s.snapshotName)).toEqual(['after@call@1', 'before@call@2']);
  });

  it("writes what it wrote before as references that Playwright's renderer resolves to the same page", () => {
    const writer = new SnapshotTraceWriter(calls);
    const written = [
      ...framesOf(writer.add(snapshotEvent(1, [frame(1, FIRST)], [{ action_id: 'a1', phase: 'before' }]), true)),
      ...framesOf(writer.add(snapshotEvent(2, [frame(2, SECOND, 1)], [{ action_id: 'a1', phase: 'after' }]), true)),
    ];
    expect(written[1]!.html).not.toEqual(SECOND_PLAIN);
    expect(resolveTrace(written.map((s) => s.html))).toEqual([FIRST, SECOND_PLAIN]);
  });

  it('writes a snapshot before the window in full in the first one of the window', () => {
    const writer = new SnapshotTraceWriter(calls);
    expect(writer.add(snapshotEvent(1, [frame(1, FIRST)], [{ action_id: 'a1', phase: 'before' }]), false)).toBe('');
    const [only] = framesOf(writer.add(snapshotEvent(2, [frame(2, SECOND, 1)], [{ action_id: 'a1', phase: 'after' }]), true));
    expect(only!.html).toEqual(SECOND_PLAIN);
  });

  it('writes a link whose style sheet the page script read as a <style> with that text', () => {
    const writer = new SnapshotTraceWriter(calls);
    const html: SnapshotNode = [
      'HTML',
      {},
      ['HEAD', {}, ['LINK', { rel: 'stylesheet', href: '/a.css', media: 'screen', __bta_sheet__: 'h1 { color: red; }' }]],
    ];
    const [first] = framesOf(writer.add(snapshotEvent(1, [frame(1, html)], [{ action_id: 'a1', phase: 'before' }]), true));
    expect(first!.html).toEqual(['HTML', {}, ['HEAD', {}, ['STYLE', { media: 'screen' }, 'h1 { color: red; }']]]);
  });

  it('leaves out a frame whose parent is not in the snapshot', () => {
    const writer = new SnapshotTraceWriter(calls);
    const child = { ...frame(1, ['HTML'], undefined, 'F2'), parent_frame_id: 'GONE' };
    const lines = framesOf(writer.add(snapshotEvent(1, [frame(1, FIRST), child], [{ action_id: 'a1', phase: 'before' }]), true));
    expect(lines.map((s) => [s.frameId, s.isMainFrame])).toEqual([[TAB, true]]);
  });

  it('writes nothing for an action the trace does not hold', () => {
    const writer = new SnapshotTraceWriter(calls);
    expect(writer.add(snapshotEvent(1, [frame(1, FIRST)], [{ action_id: 'unknown', phase: 'before' }]), true)).toBe('');
  });
});
