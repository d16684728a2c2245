// The lint rule that keeps library internals out (scripts/eslint-no-private-property.mjs).

import { RuleTester } from 'eslint';
import { describe, it } from 'vitest';
import plugin from '../../scripts/eslint-no-private-property.mjs';

RuleTester.describe = describe;
RuleTester.it = it;

new RuleTester({ languageOptions: { ecmaVersion: 2022, sourceType: 'module' } }).run('no-private-property', plugin.rules['no-private-property'], {
  valid: [
    { code: 'socket.pause(); ws.resume();' },
    { code: 'class A { #ws; f() { return this.#ws; } }' },
    { code: 'const { a: _a, ...rest } = value;' },
    { code: "entry._resourceType = 'fetch'; read(entry.response._transferSize);", options: [{ allow: ['_resourceType', '_transferSize'] }] },
  ],
  invalid: [
    { code: 'const ws = client._ws;', errors: [{ messageId: 'private' }] },
    { code: 'socket._handle.readStop();', errors: [{ messageId: 'private' }] },
    { code: "const ws = client['_ws'];", errors: [{ messageId: 'private' }] },
    { code: 'const { _socket } = ws;', errors: [{ messageId: 'private' }] },
    { code: 'entry._other = 1;', options: [{ allow: ['_resourceType'] }], errors: [{ messageId: 'private' }] },
  ],
});
