// Exhaustive switches: the last branch of a switch over a closed union (event types, page-script
// report types, computer action kinds) passes the switched value here. Once every member has its
// case the value's type is `never`; a member added later and not handled is a compile error at
// every such switch (docs/architecture.md "Recipes").

/** Marks a branch no value can reach; throws if one does anyway (a value from outside the types). */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}

/**
 * The last branch of an exhaustive switch over events that may come from outside this build at
 * run time (a newer agent's types, read from the wire or an archive): a compile error like
 * assertNever while a member is not handled, but such a value is passed over, not thrown on.
 */
export function skipUnknown(value: never): void {
  // Nothing to do: the parameter is there for the compiler's check.
  return value;
}
