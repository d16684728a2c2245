// What a bearer token may do (docs/configuration.md, --tokens-file): the scopes and a grant.

export type Scope = 'telemetry:read' | 'telemetry:write' | 'computer' | 'fs' | 'browser:delete' | 'metrics:read' | 'cdp' | 'replay' | '*';
export const SCOPES: readonly Scope[] = ['telemetry:read', 'telemetry:write', 'computer', 'fs', 'browser:delete', 'metrics:read', 'cdp', 'replay', '*'];

export interface TokenGrant {
  token: string;
  scopes: Scope[];
}
