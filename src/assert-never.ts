// Exhaustive switches: the last branch of a switch over a closed union (event types, page-script
// report types, computer action kinds) passes the switched value here. Once every member has its
// case the value's type is `never`; a member added later and not handled is a compile error at
// every such switch (docs/architecture.md "Recipes").

/** Marks a branch no value can reach; throws if one does anyway (a value from outside the types). */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}

/**
 * Narrows `value` to the members of `members`: a switch that handles only some members of a
 * union (the few event types a HAR is built from) switches after this and stays exhaustive.
 */
export function isOneOf<T extends string>(value: string, members: readonly T[]): value is T {
  return (members as readonly string[]).includes(value);
}
