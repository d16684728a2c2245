// `browser-telemetry-gateway create-key`: the bootstrap. Opens (creating and migrating) the
// configured storage and adds an API key directly, since no key exists yet to call the API with.

import type { CreateKeyOptions } from './config.ts';
import { issueApiKey, type IssuedApiKey } from './issue-api-key.ts';
import { openStore } from './storage/open-store.ts';
import type { ModeChange } from './storage/private-files.ts';
import type { Creator } from './storage/store.ts';

/** `created_by` of keys made by the command line. */
export const CLI_CREATOR: Creator = { id: 'cli', email: '', name: 'browser-telemetry-gateway create-key' };

export class CreateKeyError extends Error {
  override name = 'CreateKeyError';
}

export interface CreatedKey extends IssuedApiKey {
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
    const issued = await issueApiKey(store, { name: options.name, projectId, createdBy: CLI_CREATOR, daysToExpire: options.daysToExpire });
    return { ...issued, permissionChanges };
  } finally {
    await store.db.close();
  }
}
