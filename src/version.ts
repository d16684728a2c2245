// The package version, inlined at build time (esbuild bundles the JSON).
import packageJson from '../package.json' with { type: 'json' };

export const VERSION: string = packageJson.version;
