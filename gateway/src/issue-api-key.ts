// Issuing an API key, for the API (POST /org/api_keys) and the command line (create-key) alike:
// a new secret, stored as its digest and mask with its project, creator and expiry; the
// plaintext is returned this once and kept nowhere.

import { expiryAfterDays, generateApiKey } from './api-key.ts';
import type { ApiKeyRecord, Creator, GatewayStore } from './storage/store.ts';

export interface ApiKeyRequest {
  name: string;
  /** null: an organization-wide key. */
  projectId: string | null;
  createdBy: Creator;
  /** null or absent: never expires. */
  daysToExpire?: number | null;
}

export interface IssuedApiKey {
  /** The plaintext: shown this once. */
  key: string;
  record: ApiKeyRecord;
}

export async function issueApiKey(store: GatewayStore, request: ApiKeyRequest): Promise<IssuedApiKey> {
  const secret = generateApiKey();
  const now = Date.now();
  const record = await store.createApiKey({
    name: request.name,
    projectId: request.projectId,
    digest: secret.digest,
    maskedKey: secret.masked,
    createdBy: request.createdBy,
    createdAt: now,
    expiresAt: expiryAfterDays(now, request.daysToExpire),
  });
  return { key: secret.key, record };
}
