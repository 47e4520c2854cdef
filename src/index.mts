// The ESM entry: re-exports the CommonJS build, so ESM and require() share one module state
// (one task registry) instead of loading two copies.
import cjs from './index.js';

export const { Space, Index, expirationd, Task, CappedError } = cjs;
export type * from './index.js';
