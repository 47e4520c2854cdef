// Compile-time assertions for the type tests: `expectType<Equal<A, B>>()` fails to compile
// unless A and B are the same type. Nothing here runs.
export type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends (<X>() => X extends B ? 1 : 2) ? true : false;

export function expectType<T extends true>(): T | undefined {
  return undefined;
}
