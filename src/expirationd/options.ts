// Options of expirationd.start(): checked here, before anything runs, into a Config. Both forms
// are accepted: an options object, and the capped module's positional
// (rmIndex, itIndex, field, scanSize, scanTime).
//
// On a TTL-aware space (new Space(name, { ttl })), field, unit and now default to the space's
// declaration; explicit options win. An explicit unit other than the space's takes the wall
// clock in that unit, not the space's now. An explicit field other than the space's is allowed
// (the task then expires by another field than the one reads hide by).
import type { Tuple } from '../native/codec.js';
import { CappedError, illegal } from '../errors.js';
import { handleOf, isSpace, Space, type Index } from '../space/space.js';
import { checkCount, checkFunction, checkOptions, checkPositiveNumber, functionKind } from '../validate.js';
import type { Task } from './task.js';

/** Options of expirationd.start() over a Space<T>: the callbacks see T. */
export interface TaskOptions<T extends unknown[] = unknown[]> {
  rmIndex?: string;
  itIndex?: string;
  field?: number;
  scanSize?: number;
  scanTime?: number;
  iterationDelay?: number;
  fullScanDelay?: number;
  unit?: 's' | 'ms';
  now?: () => number;
  isExpired?: (tuple: T, now: number) => boolean;
  /** May return a promise: its tuples are then deleted once it resolves (at-least-once). */
  onExpired?: (tuples: T[]) => unknown;
  /**
   * Replaces the delete (the Lua module's process_expired_tuple): called inside the chunk's
   * transaction with the expired tuples, still stored; it may update, re-insert or delete them,
   * or write to other spaces. Synchronous; a throw rolls the chunk back in every space.
   */
  processExpired?: (tuples: T[], task: Task<T>) => void;
  onFullScanStart?: (task: Task<T>) => void;
  onFullScanSuccess?: (task: Task<T>) => void;
  onFullScanError?: (task: Task<T>, error: unknown) => void;
  onFullScanComplete?: (task: Task<T>) => void;
  keepAlive?: boolean;
  /**
   * Share of one core, in (0, 1], that backlog mode may use over a sliding 1 s window (default
   * 0.25): an early-break task whose chunk found only expired tuples runs its next chunk at once
   * while under it.
   */
  maxCpuShare?: number;
}

export type PositionalArgs = [rmIndex?: string, itIndex?: string, field?: number, scanSize?: number, scanTime?: number];

const OPTION_NAMES = [
  'rmIndex', 'itIndex', 'field', 'scanSize', 'scanTime', 'iterationDelay', 'fullScanDelay', 'unit', 'now',
  'isExpired', 'onExpired', 'processExpired', 'onFullScanStart', 'onFullScanSuccess', 'onFullScanError', 'onFullScanComplete',
  'keepAlive', 'maxCpuShare',
] as const;

export type PassCallback = 'onFullScanStart' | 'onFullScanSuccess' | 'onFullScanError' | 'onFullScanComplete';

export interface Config {
  rm: Index;
  it: Index;
  /**
   * itIndex's and rmIndex's tuple counts, read from the native handle: the task reads them from
   * timers, and a user's spy or mock on the Index's len() must not be able to throw there.
   */
  itLen: () => number;
  rmLen: () => number;
  /** 0-based TTL field (0 when only isExpired is given). */
  fieldno: number;
  scanSize: number;
  scanTime: number;
  iterationDelay: number;
  fullScanDelay: number;
  now: () => number;
  /** The unit of TTLs and now(), in seconds: 1 for 's', 0.001 for 'ms'. */
  unitSeconds: number;
  maxCpuShare: number;
  /** itIndex is a TREE led by the TTL field: the first live tuple ends the pass. */
  earlyBreak: boolean;
  keepAlive: boolean;
  isExpired: ((tuple: Tuple, now: number) => unknown) | undefined;
  onExpired: ((tuples: Tuple[]) => unknown) | undefined;
  /** onExpired is an async function (at-least-once delivery from its first call). */
  asyncOnExpired: boolean;
  processExpired: ((tuples: Tuple[], task: Task) => unknown) | undefined;
  pass: Partial<Record<PassCallback, (task: Task, error?: unknown) => unknown>>;
}

/** The options object of either form of start(name, space, ...rest). */
export function optionsOf(rest: unknown[]): unknown {
  if (typeof rest[0] !== 'string' && rest.length <= 1) return rest[0];
  if (rest[0] !== null && typeof rest[0] === 'object' && rest.slice(1).some((v) => v !== undefined)) {
    throw illegal(`expirationd.start: the options object must be the last argument; ${rest.length - 1} more came after it`);
  }
  const [rmIndex, itIndex, field, scanSize, scanTime] = rest as PositionalArgs;
  // Anything past scanTime (an options object appended to this form, say) would be dropped unread.
  if (rest.slice(5).some((v) => v !== undefined)) {
    throw illegal(`expirationd.start: the positional form takes at most five values (rmIndex, itIndex, field, scanSize, scanTime), got ${rest.length}; pass one options object instead`);
  }
  if (rmIndex !== undefined && typeof rmIndex !== 'string') throw illegal('expirationd.start: rmIndex must be an index name');
  return Object.fromEntries(Object.entries({ rmIndex, itIndex, field, scanSize, scanTime }).filter(([, v]) => v !== undefined));
}

function resolveIndex(space: Space, name: unknown, what: string): Index {
  if (typeof name !== 'string') throw illegal(`expirationd.start: ${what} must be an index name`);
  const index = space.index[name];
  if (index === undefined) {
    throw new CappedError(`expirationd.start: no index '${name}' in space '${space.name}'`, 'ER_NO_SUCH_INDEX');
  }
  return index;
}

export function configure(space: Space, raw: unknown): Config {
  // A brand check: a Proxy around a Space passes instanceof, then fails on its private fields.
  // (instanceof too: a Space whose prototype was taken away has no methods to configure it with.)
  if (!isSpace(space) || !(space instanceof Space)) throw illegal('expirationd.start: space must be a Space (not a Proxy or another object)');
  if (space.dropped) throw new CappedError(`expirationd.start: space '${space.name}' was dropped`, 'ER_SPACE_DROPPED');
  const o = checkOptions('expirationd.start', raw, OPTION_NAMES) as TaskOptions;
  // A getter among the options may have dropped it.
  if (space.dropped) throw new CappedError(`expirationd.start: space '${space.name}' was dropped`, 'ER_SPACE_DROPPED');
  if (space.indexes.length === 0) {
    throw new CappedError(`expirationd.start: space '${space.name}' has no primary index`, 'ER_NO_PRIMARY_INDEX');
  }
  const rm = o.rmIndex === undefined ? space.indexes[0] : resolveIndex(space, o.rmIndex, 'rmIndex');
  const it = o.itIndex === undefined ? rm : resolveIndex(space, o.itIndex, 'itIndex');
  if (!rm.unique) throw illegal(`expirationd.start: rmIndex '${rm.name}' must be unique`);
  const isExpired = checkFunction<Config['isExpired']>('expirationd.start', 'isExpired', o.isExpired);
  const ttl = space.ttl;
  // The space's TTL field by default (not written into the caller's options object).
  const fieldOption = o.field === undefined && isExpired === undefined ? ttl?.field : o.field;
  if (fieldOption === undefined && isExpired === undefined) {
    throw illegal('expirationd.start: field (the 1-based TTL field) is required unless isExpired is given');
  }
  const field = checkCount('expirationd.start', 'field', fieldOption, 0);
  if (fieldOption !== undefined && (field < 1 || field > 65535)) {
    throw illegal(`expirationd.start: field must be a 1-based field number, got ${field}`);
  }
  const walksTtlTree = it !== rm && it.type === 'TREE';
  if (walksTtlTree && it.parts[0].field !== field) {
    throw illegal(`expirationd.start: itIndex '${it.name}' is a TREE whose first part is field ${it.parts[0].field}, ` +
      `not the TTL field ${fieldOption !== undefined ? field : ttl !== undefined ? '(none given: with isExpired, field is not taken from the space)' : '(none given)'}; ` +
      'walk the TTL index or the rmIndex itself');
  }
  if (walksTtlTree && (it.parts[0].type === 'string' || it.parts[0].type === 'boolean')) {
    throw illegal(`expirationd.start: the TTL field ${field} of index '${it.name}' must be numeric, not ${it.parts[0].type}`);
  }
  if (o.unit !== undefined && o.unit !== 's' && o.unit !== 'ms') throw illegal(`expirationd.start: unit must be 's' or 'ms'`);
  const unit = o.unit ?? ttl?.unit ?? 's';
  const now = checkFunction<() => number>('expirationd.start', 'now', o.now) ??
    (ttl !== undefined && ttl.unit === unit ? ttl.now : undefined) ??
    (unit === 's' ? () => Date.now() / 1000 : () => Date.now());
  const pass: Config['pass'] = Object.create(null) as Config['pass'];
  for (const cb of ['onFullScanStart', 'onFullScanSuccess', 'onFullScanError', 'onFullScanComplete'] as const) {
    pass[cb] = checkFunction('expirationd.start', cb, o[cb]);
  }
  const onExpired = checkFunction<Config['onExpired']>('expirationd.start', 'onExpired', o.onExpired);
  const processExpired = checkFunction<Config['processExpired']>('expirationd.start', 'processExpired', o.processExpired);
  if (processExpired !== undefined && onExpired !== undefined) {
    throw illegal('expirationd.start: processExpired and onExpired cannot be combined: processExpired replaces the ' +
      'delete that onExpired reports; do the work of onExpired inside processExpired');
  }
  if (processExpired !== undefined && functionKind(processExpired) === '[object AsyncFunction]') {
    throw illegal('expirationd.start: processExpired must be synchronous: it runs inside the chunk\'s transaction, ' +
      'which cannot stay open across an await (for at-least-once work outside it, use an async onExpired)');
  }
  if (o.keepAlive !== undefined && typeof o.keepAlive !== 'boolean') throw illegal('expirationd.start: keepAlive must be a boolean');
  const maxCpuShare = checkPositiveNumber('expirationd.start', 'maxCpuShare', o.maxCpuShare, 0.25);
  if (maxCpuShare > 1) throw illegal(`expirationd.start: maxCpuShare must be in (0, 1], got ${maxCpuShare}`);
  const scanSize = checkCount('expirationd.start', 'scanSize', o.scanSize, 1024);
  if (scanSize < 1 || scanSize > 1_000_000) throw illegal(`expirationd.start: scanSize must be in [1, 1000000], got ${scanSize}`);
  const h = handleOf(space);
  return {
    rm,
    it,
    itLen: () => h.len(it.id),
    rmLen: () => h.len(rm.id),
    fieldno: Math.max(field - 1, 0),
    scanSize,
    scanTime: checkPositiveNumber('expirationd.start', 'scanTime', o.scanTime, 3600),
    iterationDelay: checkPositiveNumber('expirationd.start', 'iterationDelay', o.iterationDelay, 1, true),
    fullScanDelay: checkPositiveNumber('expirationd.start', 'fullScanDelay', o.fullScanDelay, 0, true),
    now,
    unitSeconds: unit === 's' ? 1 : 0.001,
    maxCpuShare,
    earlyBreak: walksTtlTree,
    keepAlive: o.keepAlive ?? false,
    isExpired,
    onExpired,
    asyncOnExpired: onExpired !== undefined && functionKind(onExpired) === '[object AsyncFunction]',
    processExpired,
    pass,
  };
}
