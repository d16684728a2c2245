// The gateway's storage (docs/gateway.md): one schema, applied by versioned migrations on both
// backends; a store is created and migrated on open, never migrated twice, and a database from
// a newer gateway is refused. On PostgreSQL, several gateway instances share one state. The
// SQLite store, which holds the agents' tokens, is the owner's alone (directory 0700, files 0600),
// and an older store readable by others is made private at start, with one log line.

import { ConflictError } from '@onkernel/sdk';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeyFromCommandLine } from '../../src/create-key.ts';
import { MIGRATIONS } from '../../src/storage/migrations.ts';
import { openStore, type StorageConfig } from '../../src/storage/open-store.ts';
import { SERVE_LOCK_FILE } from '../../src/storage/serve-lock.ts';
import { SQLITE_FILE_NAME } from '../../src/storage/sqlite.ts';
import { openSqlite, type Sqlite } from '../../../src/sqlite.ts';
import { BACKENDS, GatewayRig, TestStorages, uniqueName, type Backend } from './support/gateway-harness.ts';

const storages = new TestStorages();
afterAll(() => storages.close());

const LATEST = MIGRATIONS.at(-1)!.version;

async function freshStorage(backend: Backend): Promise<StorageConfig> {
  const options = await storages.fresh(backend);
  return 'dataDir' in options ? { kind: 'sqlite', dataDir: options.dataDir } : { kind: 'postgres', databaseUrl: options.databaseUrl };
}

describe.each(BACKENDS)('migrations on %s', (backend) => {
  it('a new store is migrated to the latest version', async () => {
    const { store, migration } = await openStore(await freshStorage(backend));
    await store.db.close();
    expect(migration).toEqual({ applied: MIGRATIONS.map((m) => m.version), version: LATEST });
  });

  it('opening a migrated store again applies nothing', async () => {
    const storage = await freshStorage(backend);
    await (await openStore(storage)).store.db.close();
    const { store, migration } = await openStore(storage);
    await store.db.close();
    expect(migration).toEqual({ applied: [], version: LATEST });
  });

  it('records each applied version once', async () => {
    const storage = await freshStorage(backend);
    await (await openStore(storage)).store.db.close();
    const { store } = await openStore(storage);
    const rows = await store.db.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    await store.db.close();
    expect(rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
  });

  it('keeps the data across reopening', async () => {
    const storage = await freshStorage(backend);
    const first = await openStore(storage);
    const project = await first.store.createProject(uniqueName('durable'));
    await first.store.db.close();
    const second = await openStore(storage);
    const found = await second.store.findProject(project.id);
    await second.store.db.close();
    expect(found).toEqual(project);
  });

  it('a database migrated by a newer gateway is refused', async () => {
    const storage = await freshStorage(backend);
    const { store } = await openStore(storage);
    await store.db.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [LATEST + 1, 'from the future', Date.now()]);
    await store.db.close();
    await expect(openStore(storage)).rejects.toThrow(/newer than this gateway knows/);
  });

  it('an invalid project status cannot be written (the schema checks it)', async () => {
    const { store } = await openStore(await freshStorage(backend));
    const project = await store.createProject(uniqueName('checked'));
    const write = store.db.run("UPDATE projects SET status = 'paused' WHERE id = ?", [project.id]);
    await expect(write).rejects.toThrow();
    await store.db.close();
  });
});

describe('several gateway instances on one PostgreSQL database', () => {
  it('start at the same time and migrate it once', async () => {
    const storage = await freshStorage('postgres');
    const opened = await Promise.all([openStore(storage), openStore(storage), openStore(storage)]);
    await Promise.all(opened.map(({ store }) => store.db.close()));
    expect(opened.map(({ migration }) => migration.applied.length).sort()).toEqual([0, 0, MIGRATIONS.length]);
  });

  it('a key created through one authenticates on the other', async () => {
    const storage = await storages.fresh('postgres');
    const [a, b] = await Promise.all([GatewayRig.start(storage), GatewayRig.start(storage)]);
    try {
      const created = await a.sdk().apiKeys.create({ name: 'shared' });
      await expect(b.sdk(created.key).apiKeys.retrieve(created.id)).resolves.toMatchObject({ id: created.id });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('20 parallel creates of one name spread over two instances make exactly one project', async () => {
    const storage = await storages.fresh('postgres');
    const [a, b] = await Promise.all([GatewayRig.start(storage), GatewayRig.start(storage)]);
    try {
      const name = uniqueName('shared-race');
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).sdk().projects.create({ name })));
      const created = results.filter((r) => r.status === 'fulfilled').length;
      const conflicts = results.filter((r) => r.status === 'rejected' && r.reason instanceof ConflictError).length;
      expect([created, conflicts]).toEqual([1, 19]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('the SQLite store is private to its owner', () => {
  const modeOf = (path: string) => `0${(statSync(path).mode & 0o777).toString(8)}`;
  /** The directory, the database and its WAL companions, with their modes. */
  const modes = (dataDir: string) => {
    const db = join(dataDir, SQLITE_FILE_NAME);
    return { dir: modeOf(dataDir), db: modeOf(db), wal: modeOf(`${db}-wal`), shm: modeOf(`${db}-shm`) };
  };

  /** A store made by a gateway that did not care: world-readable, with -wal and -shm present. */
  async function worldReadableStore(): Promise<{ dataDir: string; holder: Sqlite }> {
    const { dataDir } = (await storages.fresh('sqlite')) as { dataDir: string };
    await (await openStore({ kind: 'sqlite', dataDir })).store.db.close();
    // A second connection keeps the WAL files in place, as a create-key running beside the
    // gateway would; without one they are removed when the last connection closes.
    const holder = openSqlite(join(dataDir, SQLITE_FILE_NAME));
    holder.pragma('journal_mode = WAL');
    holder.prepare('SELECT COUNT(*) FROM projects').get();
    chmodSync(dataDir, 0o755);
    for (const suffix of ['', '-wal', '-shm']) chmodSync(join(dataDir, SQLITE_FILE_NAME + suffix), 0o644);
    return { dataDir, holder };
  }

  it('a new store: the directory is 0700, the database and its -wal and -shm are 0600', async () => {
    const { dataDir: parent } = (await storages.fresh('sqlite')) as { dataDir: string };
    const dataDir = join(parent, 'not-yet-created');
    const rig = await GatewayRig.start({ dataDir });
    try {
      await rig.sdk().projects.create({ name: uniqueName('written') });
      expect([existsSync(join(dataDir, `${SQLITE_FILE_NAME}-wal`)), modes(dataDir)]).toEqual([true, { dir: '0700', db: '0600', wal: '0600', shm: '0600' }]);
    } finally {
      await rig.close();
    }
  });

  it('an existing world-readable store is made private at start', async () => {
    const { dataDir, holder } = await worldReadableStore();
    const rig = await GatewayRig.start({ dataDir });
    try {
      expect(modes(dataDir)).toEqual({ dir: '0700', db: '0600', wal: '0600', shm: '0600' });
    } finally {
      await rig.close();
      holder.close();
    }
  });

  it('one log line says what was changed', async () => {
    const { dataDir, holder } = await worldReadableStore();
    const rig = await GatewayRig.start({ dataDir });
    await rig.close();
    holder.close();
    const lines = rig.logLines.filter((l) => 'changed' in l) as unknown as Array<{ level: number; changed: unknown }>;
    const db = join(dataDir, SQLITE_FILE_NAME);
    expect(lines.map((l) => l.changed)).toEqual([
      [
        { path: dataDir, from: '0755', to: '0700' },
        { path: db, from: '0644', to: '0600' },
        { path: `${db}-wal`, from: '0644', to: '0600' },
        { path: `${db}-shm`, from: '0644', to: '0600' },
      ],
    ]);
  });

  it('a private store logs nothing about permissions', async () => {
    const storage = await storages.fresh('sqlite');
    await (await GatewayRig.start(storage)).close();
    const rig = await GatewayRig.start(storage);
    await rig.close();
    expect(rig.logLines.filter((l) => 'changed' in l)).toEqual([]);
  });

  it('create-key makes an existing store private too, and reports it', async () => {
    const { dataDir, holder } = await worldReadableStore();
    try {
      const created = await createKeyFromCommandLine({ storage: { kind: 'sqlite', dataDir }, name: 'bootstrap' });
      expect([created.permissionChanges.length, modes(dataDir)]).toEqual([4, { dir: '0700', db: '0600', wal: '0600', shm: '0600' }]);
    } finally {
      holder.close();
    }
  });
});

describe('one serving gateway per SQLite directory', () => {
  it('refuses a second gateway on the same directory, naming the first, and starts once it is gone', async () => {
    const storage = await storages.fresh('sqlite');
    const first = await GatewayRig.start(storage, { archiveFollow: false });
    let refused: unknown;
    try {
      await GatewayRig.start(storage, { archiveFollow: false }).then((rig) => rig.close());
    } catch (err) {
      refused = err;
    }
    await first.close();
    const third = await GatewayRig.start(storage, { archiveFollow: false });
    await third.close();
    expect((refused as Error | undefined)?.message).toMatch(new RegExp(`another gateway \\(pid ${process.pid}\\) is serving the SQLite storage`));
  });

  it('takes over a lock file left by a process that is gone', async () => {
    const storage = (await storages.fresh('sqlite')) as { dataDir: string };
    mkdirSync(storage.dataDir, { recursive: true });
    // No process has pid 2^22 + 1 (above the kernel's pid_max on every default Linux).
    writeFileSync(join(storage.dataDir, SERVE_LOCK_FILE), `${2 ** 22 + 1}\n`);
    const rig = await GatewayRig.start(storage, { archiveFollow: false });
    await rig.close();
    expect(existsSync(join(storage.dataDir, SERVE_LOCK_FILE))).toBe(false);
  });
});
