// `browser-telemetry-gateway create-key`: the bootstrap. Opens (creating and migrating) the
// configured storage and adds an API key directly, since no key exists yet to call the API with.

import { expiryAfterDays, generateApiKey } from './api-key.ts';
import type { CreateKeyOptions } from './config.ts';
import { openStore } from './storage/open-store.ts';
import type { ModeChange } from './storage/private-files.ts';
import type { ApiKeyRecord, Creator } from './storage/store.ts';

/** `created_by` of keys made by the command line. */
export const CLI_CREATOR: Creator = { id: 'cli', email: '', name: 'browser-telemetry-gateway create-key' };

export class CreateKeyError extends Error {
  override name = 'CreateKeyError';
}

export interface CreatedKey {
  /** The plaintext: shown this once. */
  key: string;
  record: ApiKeyRecord;
  /** SQLite: permissions taken away from an existing store, as the gateway logs them. */
  permissionChanges: readonly ModeChange[];
}

export async function createKeyFromCommandLine(options: CreateKeyOptions): Promise<CreatedKey> {
  const { store, permissionChanges } = await openStore(options.storage);
  try {
    let projectId: string | null = null;
    if (options.project !== undefined) {
      const project = await store.findProject(options.project);
      if (!project) throw new CreateKeyError(`--project: no live project with the id or name ${JSON.stringify(options.project)}`);
      projectId = project.id;
    }
    const secret = generateApiKey();
    const now = Date.now();
    const record = await store.createApiKey({
      name: options.name,
      projectId,
      digest: secret.digest,
      maskedKey: secret.masked,
      createdBy: CLI_CREATOR,
      createdAt: now,
      expiresAt: expiryAfterDays(now, options.daysToExpire),
    });
    return { key: secret.key, record, permissionChanges };
  } finally {
    await store.db.close();
  }
}
