// ESLint rule `local/no-private-property`: no code reads a `_`-prefixed property, the convention
// for a package's private fields (chrome-remote-interface's `_ws`, Node's `socket._handle`). A
// patch release of the package may rename or remove one, and what relied on it breaks silently.
// Member reads (`a._b`, `a['_b']`) and destructuring (`const { _b } = a`) are checked; the
// `allow` option lists the project's own `_` names (HAR's custom fields, which the HAR format
// spells with a leading underscore).

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: "disallow reading another package's `_`-prefixed (private) properties" },
    schema: [{ type: 'object', properties: { allow: { type: 'array', items: { type: 'string' } } }, additionalProperties: false }],
    messages: {
      private: '`{{name}}` is a private property (leading `_`): use the package\'s public API (docs/decisions.md "The CDP transport").',
    },
  },
  create(context) {
    const allowed = new Set(context.options[0]?.allow ?? []);
    /** @param {import('estree').Node} key @param {boolean} computed */
    const nameOf = (key, computed) => {
      if (!computed && key.type === 'Identifier') return key.name;
      if (key.type === 'Literal' && typeof key.value === 'string') return key.value;
      return undefined;
    };
    /** @param {import('estree').Node} node @param {string | undefined} name */
    const check = (node, name) => {
      if (name !== undefined && name.startsWith('_') && !allowed.has(name)) context.report({ node, messageId: 'private', data: { name } });
    };
    return {
      MemberExpression(node) {
        check(node.property, nameOf(node.property, node.computed));
      },
      'ObjectPattern > Property'(node) {
        check(node.key, nameOf(node.key, node.computed));
      },
    };
  },
};

export default { rules: { 'no-private-property': rule } };
