// The gateway's state: projects, API keys and the browser registry, over either backend. Every
// mutation is one transaction; decisions that depend on other rows (is the project empty, does
// it still exist) lock the project row first, so concurrent requests on PostgreSQL cannot both
// pass a check that only one of them may pass. Unique indexes settle concurrent creates. The
// `browsers` rows are written only through browser-rows.ts, which the archive uses too.

import { randomBytes } from 'node:crypto';
import { insertRegistered, markDeleted, replaceEnded, type BrowserRecord } from './browser-rows.ts';
import type { Database, Queryable } from './database.ts';
import { Conditions, readPage, type Page, type PageRequest } from './list-query.ts';

export type ProjectStatus = 'active' | 'archived';
export const PROJECT_STATUSES: readonly ProjectStatus[] = ['active', 'archived'];

export interface Project {
  id: string;
  name: string;
  status: ProjectStatus;
  /** Unix milliseconds, like every time here. */
  createdAt: number;
  updatedAt: number;
}

export interface Creator {
  id: string;
  email: string;
  name: string | null;
}

export interface ApiKeyRecord {
  id: string;
  name: string;
  maskedKey: string;
  projectId: string | null;
  /** Null for org-wide keys, and when the project is gone. */
  projectName: string | null;
  createdBy: Creator;
  createdAt: number;
  expiresAt: number | null;
  deletedAt: number | null;
}

/** What authentication needs of a key, found by its digest. */
export interface KeyCredential {
  id: string;
  name: string;
  digest: string;
  projectId: string | null;
  expiresAt: number | null;
  deletedAt: number | null;
}

export type { BrowserRecord, EndedReason } from './browser-rows.ts';

export type { Page, PageRequest } from './list-query.ts';

export interface ProjectFilter extends PageRequest {
  /** Case-insensitive substring of the name. */
  query?: string;
  /** Exact name. */
  name?: string;
  /** Only this project (a project-scoped caller). */
  onlyId?: string;
}

export type ApiKeyStatusFilter = 'active' | 'deleted' | 'all';
export type ApiKeySortField = 'created_at' | 'name' | 'expires_at';

export interface ApiKeyFilter extends PageRequest {
  query?: string;
  name?: string;
  status: ApiKeyStatusFilter;
  /** Only keys scoped to this project (a project-scoped caller). */
  projectId?: string;
  sortBy: ApiKeySortField;
  sortDirection: 'asc' | 'desc';
}

export interface NewApiKeyRecord {
  name: string;
  projectId: string | null;
  digest: string;
  maskedKey: string;
  createdBy: Creator;
  /** Defaults to now; given when the expiry was computed from it. */
  createdAt?: number;
  expiresAt: number | null;
}

export interface NewBrowser {
  sessionId: string;
  projectId: string | null;
  agentUrl: string;
  agentToken: string;
}

export type StoreErrorReason = 'not_found' | 'name_taken' | 'session_taken' | 'session_archived' | 'project_not_empty' | 'unknown_project';

/** A domain failure of the store; the HTTP layer maps the reason to a status and code. */
export class StoreError extends Error {
  override name = 'StoreError';
  constructor(
    readonly reason: StoreErrorReason,
    message: string,
  ) {
    super(message);
  }
}

/** Base32 digits in ASCII order, so that ids compare as strings the way their values do. */
const ID_ALPHABET = '234567abcdefghijklmnopqrstuvwxyz';
let lastIdTime = -1;
let lastIdRandom = 0n;

function base32(value: bigint, digits: number): string {
  let text = '';
  for (let i = digits - 1; i >= 0; i--) text += ID_ALPHABET.charAt(Number((value >> BigInt(5 * i)) & 31n));
  return text;
}

/**
 * 24 lowercase characters: the creation time (ms, 10 characters) then 70 random bits (14), as a
 * ULID does. Ids made in one millisecond by this process increase, so ordering by (created_at,
 * id) is creation order; the random part keeps ids of several instances apart.
 */
export function newId(now: number): string {
  if (now <= lastIdTime) {
    lastIdRandom += 1n;
  } else {
    lastIdTime = now;
    lastIdRandom = BigInt(`0x${randomBytes(9).toString('hex')}`) >> 2n;
  }
  return base32(BigInt(lastIdTime), 10) + base32(lastIdRandom & ((1n << 70n) - 1n), 14);
}

/** How names are compared by `query`: Unicode-normalised and lower-cased. */
export function foldName(name: string): string {
  return name.normalize('NFC').toLowerCase();
}

function likeSubstring(text: string): string {
  return `%${foldName(text).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

interface ProjectRow {
  id: string;
  name: string;
  status: ProjectStatus;
  created_at: number;
  updated_at: number;
  [key: string]: unknown;
}

interface ApiKeyRow {
  id: string;
  name: string;
  masked_key: string;
  project_id: string | null;
  project_name: string | null;
  created_by_id: string;
  created_by_email: string;
  created_by_name: string | null;
  created_at: number;
  expires_at: number | null;
  deleted_at: number | null;
  [key: string]: unknown;
}

export interface BrowserRow {
  session_id: string;
  session_key: number;
  project_id: string | null;
  agent_url: string;
  agent_token: string;
  created_at: number;
  [key: string]: unknown;
}

const PROJECT_COLUMNS = 'id, name, status, created_at, updated_at';
const API_KEY_SELECT = `SELECT k.id, k.name, k.masked_key, k.project_id, p.name AS project_name, k.created_by_id,
  k.created_by_email, k.created_by_name, k.created_at, k.expires_at, k.deleted_at
  FROM api_keys k LEFT JOIN projects p ON p.id = k.project_id AND p.deleted_at IS NULL`;

function toProject(row: ProjectRow): Project {
  return { id: row.id, name: row.name, status: row.status, createdAt: Number(row.created_at), updatedAt: Number(row.updated_at) };
}

function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    maskedKey: row.masked_key,
    projectId: row.project_id,
    projectName: row.project_id === null ? null : row.project_name,
    createdBy: { id: row.created_by_id, email: row.created_by_email, name: row.created_by_name },
    createdAt: Number(row.created_at),
    expiresAt: numberOrNull(row.expires_at),
    deletedAt: numberOrNull(row.deleted_at),
  };
}

/** A nullable time column (Unix ms) as a number, like the `Number(...)` of the others; null stays null. */
function numberOrNull(value: number | null): number | null {
  return value === null ? null : Number(value);
}

export function toBrowser(row: BrowserRow): BrowserRecord {
  return {
    sessionId: row.session_id,
    sessionKey: Number(row.session_key),
    projectId: row.project_id,
    agentUrl: row.agent_url,
    agentToken: row.agent_token,
    createdAt: Number(row.created_at),
  };
}

export class GatewayStore {
  constructor(
    readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {}

  async ping(): Promise<void> {
    await this.db.all('SELECT 1 AS ok');
  }

  // ---- projects -------------------------------------------------------------------------------

  async listProjects(filter: ProjectFilter): Promise<Page<Project>> {
    const where = new Conditions('deleted_at IS NULL')
      .bind('id = ?', filter.onlyId)
      .bind('name = ?', filter.name)
      .bind("name_folded LIKE ? ESCAPE '\\'", filter.query ? likeSubstring(filter.query) : undefined);
    // Oldest first: offsets of existing projects do not move when new ones are created.
    return readPage(this.db, `SELECT ${PROJECT_COLUMNS} FROM projects${where.clause} ORDER BY created_at, id`, where.params, filter, toProject);
  }

  async createProject(name: string): Promise<Project> {
    const now = this.now();
    const project: Project = { id: newId(now), name, status: 'active', createdAt: now, updatedAt: now };
    try {
      await this.db.run('INSERT INTO projects (id, name, name_folded, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
        project.id,
        name,
        foldName(name),
        project.status,
        now,
        now,
      ]);
    } catch (err) {
      throw this.nameClash(err, name);
    }
    return project;
  }

  /** A live project by id, or else by exact name. */
  async findProject(idOrName: string): Promise<Project | undefined> {
    const rows = await this.db.all<ProjectRow>(
      `SELECT ${PROJECT_COLUMNS} FROM projects WHERE deleted_at IS NULL AND (id = ? OR name = ?)
       ORDER BY CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1`,
      [idOrName, idOrName, idOrName],
    );
    return rows[0] ? toProject(rows[0]) : undefined;
  }

  async updateProject(id: string, patch: { name?: string; status?: ProjectStatus }): Promise<Project> {
    try {
      return await this.db.transaction(async (tx) => {
        const current = await this.lockProject(tx, id);
        const updated: Project = {
          ...current,
          name: patch.name ?? current.name,
          status: patch.status ?? current.status,
          updatedAt: Math.max(this.now(), current.updatedAt),
        };
        await tx.run('UPDATE projects SET name = ?, name_folded = ?, status = ?, updated_at = ? WHERE id = ?', [
          updated.name,
          foldName(updated.name),
          updated.status,
          updated.updatedAt,
          id,
        ]);
        return updated;
      });
    } catch (err) {
      throw patch.name === undefined ? err : this.nameClash(err, patch.name);
    }
  }

  /** Soft delete; only an empty project (no live browser, no usable project key) may go. */
  async deleteProject(id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await this.lockProject(tx, id);
      const now = this.now();
      const [browsers] = await tx.all<{ n: number }>('SELECT COUNT(*) AS n FROM browsers WHERE project_id = ? AND deleted_at IS NULL', [id]);
      const [keys] = await tx.all<{ n: number }>(
        'SELECT COUNT(*) AS n FROM api_keys WHERE project_id = ? AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > ?)',
        [id, now],
      );
      const liveBrowsers = Number(browsers?.n ?? 0);
      const liveKeys = Number(keys?.n ?? 0);
      if (liveBrowsers > 0 || liveKeys > 0) {
        throw new StoreError('project_not_empty', `the project still has ${liveBrowsers} live browser(s) and ${liveKeys} live API key(s): delete them first`);
      }
      await tx.run('UPDATE projects SET deleted_at = ?, updated_at = ? WHERE id = ?', [now, now, id]);
    });
  }

  // ---- API keys -------------------------------------------------------------------------------

  async createApiKey(key: NewApiKeyRecord): Promise<ApiKeyRecord> {
    return this.db.transaction(async (tx) => {
      let projectName: string | null = null;
      if (key.projectId !== null) projectName = (await this.lockProject(tx, key.projectId, 'unknown_project')).name;
      const createdAt = key.createdAt ?? this.now();
      const id = newId(createdAt);
      await tx.run(
        `INSERT INTO api_keys (id, name, name_folded, key_digest, masked_key, project_id, created_by_id, created_by_email,
           created_by_name, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          id,
          key.name,
          foldName(key.name),
          key.digest,
          key.maskedKey,
          key.projectId,
          key.createdBy.id,
          key.createdBy.email,
          key.createdBy.name,
          createdAt,
          key.expiresAt,
        ],
      );
      return {
        id,
        name: key.name,
        maskedKey: key.maskedKey,
        projectId: key.projectId,
        projectName,
        createdBy: key.createdBy,
        createdAt,
        expiresAt: key.expiresAt,
        deletedAt: null,
      };
    });
  }

  async findApiKey(id: string, includeDeleted = false): Promise<ApiKeyRecord | undefined> {
    const rows = await this.db.all<ApiKeyRow>(`${API_KEY_SELECT} WHERE k.id = ?${includeDeleted ? '' : ' AND k.deleted_at IS NULL'}`, [id]);
    return rows[0] ? toApiKey(rows[0]) : undefined;
  }

  async listApiKeys(filter: ApiKeyFilter): Promise<Page<ApiKeyRecord>> {
    const where = new Conditions()
      .when(filter.status === 'active', 'k.deleted_at IS NULL')
      .when(filter.status === 'deleted', 'k.deleted_at IS NOT NULL')
      .bind('k.project_id = ?', filter.projectId)
      .bind('k.name = ?', filter.name)
      .bind("k.name_folded LIKE ? ESCAPE '\\'", filter.query ? likeSubstring(filter.query) : undefined);
    const dir = filter.sortDirection === 'desc' ? 'DESC' : 'ASC';
    // NULL sorts differently on the two backends: place "never expires" explicitly (last when
    // ascending, as the farthest expiry).
    const order =
      filter.sortBy === 'expires_at'
        ? `(k.expires_at IS NULL) ${dir}, k.expires_at ${dir}, k.id ${dir}`
        : filter.sortBy === 'name'
          ? `k.name ${dir}, k.id ${dir}`
          : `k.created_at ${dir}, k.id ${dir}`;
    return readPage(this.db, `${API_KEY_SELECT}${where.clause} ORDER BY ${order}`, where.params, filter, toApiKey);
  }

  async findKeyCredential(digest: string): Promise<KeyCredential | undefined> {
    const rows = await this.db.all<{
      id: string;
      name: string;
      key_digest: string;
      project_id: string | null;
      expires_at: number | null;
      deleted_at: number | null;
    }>('SELECT id, name, key_digest, project_id, expires_at, deleted_at FROM api_keys WHERE key_digest = ?', [digest]);
    const row = rows[0];
    if (!row) return undefined;
    return {
      id: row.id,
      name: row.name,
      digest: row.key_digest,
      projectId: row.project_id,
      expiresAt: numberOrNull(row.expires_at),
      deletedAt: numberOrNull(row.deleted_at),
    };
  }

  /** Which of `ids` are keys that still authenticate at `now` (neither deleted nor expired). */
  async liveKeyIds(ids: readonly string[], now: number): Promise<Set<string>> {
    const live = new Set<string>();
    // In slices, far below either backend's limit on bound parameters.
    for (let start = 0; start < ids.length; start += 500) {
      const slice = ids.slice(start, start + 500);
      const rows = await this.db.all<{ id: string }>(
        `SELECT id FROM api_keys WHERE id IN (${slice.map(() => '?').join(', ')}) AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`,
        [...slice, now],
      );
      for (const row of rows) live.add(row.id);
    }
    return live;
  }

  async deleteApiKey(id: string): Promise<void> {
    const changed = await this.db.run('UPDATE api_keys SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL', [this.now(), id]);
    if (changed === 0) throw new StoreError('not_found', 'API key not found');
  }

  // ---- browsers -------------------------------------------------------------------------------

  /**
   * Registers a session's agent. An ended registration of the same id is replaced when nothing of
   * it is archived; one with an archive is kept (its events would mix with the new session's,
   * seq for seq): 409 until retention removes it.
   */
  async registerBrowser(browser: NewBrowser): Promise<BrowserRecord> {
    try {
      return await this.db.transaction(async (tx) => {
        if (browser.projectId !== null) await this.lockProject(tx, browser.projectId, 'unknown_project');
        const createdAt = this.now();
        const existing = await tx.all<{ deleted_at: number | null; archived_seq: number; event_count: number }>(
          `SELECT deleted_at, archived_seq, event_count FROM browsers WHERE session_id = ?${this.db.lockSuffix}`,
          [browser.sessionId],
        );
        if (existing[0] && existing[0].deleted_at === null) throw this.sessionTaken(browser.sessionId);
        if (existing[0] && (Number(existing[0].archived_seq) > 0 || Number(existing[0].event_count) > 0)) {
          throw new StoreError(
            'session_archived',
            `browser session ${JSON.stringify(browser.sessionId)} has ended and its telemetry is archived: register the new session under a new id`,
          );
        }
        // Counted up, never down: a key is never given twice, even after its session is purged.
        const [counter] = await tx.all<{ value: number }>("UPDATE counters SET value = value + 1 WHERE name = 'session_key' RETURNING value");
        const sessionKey = Number(counter!.value);
        const row = { ...browser, sessionKey, createdAt };
        if (existing[0]) {
          await replaceEnded(tx, row);
        } else {
          await insertRegistered(tx, row);
        }
        return row;
      });
    } catch (err) {
      // Two registrations of a new id at once: the primary key lets one in.
      if (this.db.isUniqueViolation(err)) throw this.sessionTaken(browser.sessionId);
      throw err;
    }
  }

  async findBrowser(sessionId: string): Promise<BrowserRecord | undefined> {
    const rows = await this.db.all<BrowserRow>(
      'SELECT session_id, session_key, project_id, agent_url, agent_token, created_at FROM browsers WHERE session_id = ? AND deleted_at IS NULL',
      [sessionId],
    );
    return rows[0] ? toBrowser(rows[0]) : undefined;
  }

  /** Marks a registration deleted: a DELETE through the gateway ended its session (browser-rows.ts markDeleted). */
  async markBrowserDeleted(sessionId: string): Promise<void> {
    await markDeleted(this.db, sessionId, this.now());
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** Locks a live project row for the rest of the transaction; throws when there is none. */
  private async lockProject(tx: Queryable, id: string, reason: 'not_found' | 'unknown_project' = 'not_found'): Promise<Project> {
    const rows = await tx.all<ProjectRow>(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ? AND deleted_at IS NULL${this.db.lockSuffix}`, [id]);
    if (!rows[0]) throw new StoreError(reason, reason === 'not_found' ? 'project not found' : `no live project with id ${JSON.stringify(id)}`);
    return toProject(rows[0]);
  }

  private nameClash(err: unknown, name: string): unknown {
    return this.db.isUniqueViolation(err) ? new StoreError('name_taken', `a project named ${JSON.stringify(name)} already exists`) : err;
  }

  private sessionTaken(sessionId: string): StoreError {
    return new StoreError('session_taken', `browser session ${JSON.stringify(sessionId)} is already registered`);
  }
}
