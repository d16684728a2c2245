// Rebuilding snapshots (docs/events.md "Snapshots"): a page_snapshot frame refers to unchanged
// subtrees of the frame's previous snapshot (`[[1, k]]`, injected/snapshot.ts); its readers (the
// Playwright trace export, the viewer's snapshot panel) rebuild the whole tree from the frame's
// snapshots in order. Pure and shared by both; entries are shared between the trees of
// successive snapshots, so a reader keeps one tree per frame whatever the number of snapshots.

import type { FrameSnapshotData, SnapshotNode } from './schema.ts';

/** An element of a rebuilt tree. */
export interface TreeElement {
  name: string;
  attrs: Readonly<Record<string, string>>;
  children: readonly TreeEntry[];
}

/** A node of a rebuilt tree, with the size of its subtree (itself included). */
export interface TreeEntry {
  readonly node: string | TreeElement;
  readonly size: number;
  /** Free for the reader: where the trace export last wrote this subtree. */
  mark?: { ordinal: number; index: number };
}

/** The latest rebuilt snapshot of each frame: its document series, number and nodes (children before parents). */
interface FrameTree {
  doc: string;
  number: number;
  entries: TreeEntry[];
}

export class SnapshotTrees {
  private readonly frames = new Map<string, FrameTree>();

  /**
   * The rebuilt root of a frame's snapshot, taken in order; undefined when it refers to a
   * snapshot not seen (left out of the reading, or no longer retained): the frame's later
   * snapshots of that document fail too, until a full one.
   */
  add(frame: Pick<FrameSnapshotData, 'frame_id' | 'doc' | 'number' | 'base' | 'html'>): TreeEntry | undefined {
    const previous = this.frames.get(frame.frame_id);
    const base =
      frame.base !== undefined && previous !== undefined && previous.doc === frame.doc && previous.number === frame.base ? previous.entries : undefined;
    if (frame.base !== undefined && base === undefined) {
      this.frames.delete(frame.frame_id);
      return undefined;
    }
    const entries: TreeEntry[] = [];
    const root = rebuild(frame.html, base ?? [], entries);
    if (root === undefined) {
      this.frames.delete(frame.frame_id);
      return undefined;
    }
    this.frames.set(frame.frame_id, { doc: frame.doc, number: frame.number, entries });
    return root;
  }

  /** Frames with a tree kept. */
  get size(): number {
    return this.frames.size;
  }
}

/** Appends the node's entries to `out` (children first) and returns its own; undefined for a malformed node. */
function rebuild(node: SnapshotNode, base: readonly TreeEntry[], out: TreeEntry[]): TreeEntry | undefined {
  if (typeof node === 'string') {
    const entry: TreeEntry = { node, size: 1 };
    out.push(entry);
    return entry;
  }
  if (!Array.isArray(node) || node.length === 0) return undefined;
  const head = node[0];
  if (Array.isArray(head)) {
    const k = head[1];
    const entry = typeof k === 'number' ? base[k] : undefined;
    if (entry === undefined || k - entry.size + 1 < 0) return undefined;
    for (let i = k - entry.size + 1; i <= k; i++) out.push(base[i]!);
    return entry;
  }
  if (typeof head !== 'string') return undefined;
  const attrs = node.length > 1 && typeof node[1] === 'object' && !Array.isArray(node[1]) ? node[1] : {};
  const children: TreeEntry[] = [];
  let size = 1;
  for (let i = 2; i < node.length; i++) {
    const child = rebuild(node[i] as SnapshotNode, base, out);
    if (child === undefined) return undefined;
    children.push(child);
    size += child.size;
  }
  const entry: TreeEntry = { node: { name: head, attrs, children }, size };
  out.push(entry);
  return entry;
}
