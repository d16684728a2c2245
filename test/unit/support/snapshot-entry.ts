// The snapshotter and the tree rebuilder in one bundle, for test/unit/snapshot-incremental.test.ts.
export { createSnapshotter } from '../../../injected/snapshot.ts';
export { SnapshotTrees } from '../../../injected/snapshot-tree.ts';
export { SNAPSHOT_MASKED_FIELDS } from '../../../injected/schema.ts';
