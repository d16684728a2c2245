import type { Rule } from 'eslint';

declare const plugin: { rules: { 'no-private-property': Rule.RuleModule } };
export default plugin;
