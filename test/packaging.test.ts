// Packaging: the built package loads with require() and import(), by path and by package name,
// exposes the same API both ways, shares one module state (one task registry), and ships type
// declarations for both. Every check runs in a fresh `node` child process.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const DIST = path.join(ROOT, 'dist');
let consumer = '';

// tsc never loads the addon: it runs without the sanitizer preload of `npm run test:asan`, which
// would only make it many times slower.
function withoutPreload(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.LD_PRELOAD;
  return env;
}

function node(dir: string, file: string, source: string): unknown {
  fs.writeFileSync(path.join(dir, file), source);
  const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
  const last = out.trim().split('\n').pop() as string;
  return JSON.parse(last);
}

// A probe that reports what a loaded module exposes and that it works.
const probe = (mod: string) => `
  const space = new ${mod}.Space('pkg');
  space.createIndex('pk', { parts: [[1, 'unsigned']] });
  space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
  space.insert([1, 'a', Date.now()]);
  let code = null, isCapped = false;
  try { space.insert([1, 'dup', 0]); } catch (e) { code = e.code; isCapped = e instanceof ${mod}.CappedError; }
  const result = {
    exports: Object.keys(${mod}).sort(),
    space: typeof ${mod}.Space, index: typeof ${mod}.Index, task: typeof ${mod}.Task,
    start: typeof ${mod}.expirationd.start, kill: typeof ${mod}.expirationd.kill,
    selected: space.select(), code, isCapped,
  };
  space.drop();
`;

beforeAll(() => {
  if (!fs.existsSync(path.join(DIST, 'index.js')) || !fs.existsSync(path.join(DIST, 'index.mjs'))) {
    execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, env: withoutPreload(), stdio: 'pipe', timeout: 120_000 });
  }
  consumer = fs.mkdtempSync(path.join(os.tmpdir(), 'capped-pkg-'));
  fs.mkdirSync(path.join(consumer, 'node_modules'));
  fs.symlinkSync(ROOT, path.join(consumer, 'node_modules', 'capped-expirationd'), 'dir');
});

afterAll(() => {
  if (consumer) fs.rmSync(consumer, { recursive: true, force: true });
});

const EXPECTED_EXPORTS = ['CappedError', 'Index', 'Space', 'Task', 'expirationd'];

function expectWorking(result: Record<string, unknown>): void {
  expect(result.exports).toEqual(expect.arrayContaining(EXPECTED_EXPORTS));
  expect(result.space).toBe('function');
  expect(result.index).toBe('function');
  expect(result.task).toBe('function');
  expect(result.start).toBe('function');
  expect(result.kill).toBe('function');
  expect((result.selected as unknown[][])[0].slice(0, 2)).toEqual([1, 'a']);
  expect(result.code).toBe('ER_DUPLICATE_KEY');
  expect(result.isCapped).toBe(true);
}

describe('loading by path', () => {
  it('require() of dist/index.js exposes Space and expirationd', () => {
    const result = node(consumer, 'path.cjs', `
      const lib = require(${JSON.stringify(path.join(DIST, 'index.js'))});
      ${probe('lib')}
      console.log(JSON.stringify(result));
    `) as Record<string, unknown>;
    expectWorking(result);
  });

  it('import() of dist/index.mjs exposes Space and expirationd', () => {
    const result = node(consumer, 'path.mjs', `
      const lib = await import(${JSON.stringify(path.join(DIST, 'index.mjs'))});
      ${probe('lib')}
      console.log(JSON.stringify(result));
    `) as Record<string, unknown>;
    expectWorking(result);
  });

  it('require() and import() share one module state', () => {
    const result = node(consumer, 'shared-path.mjs', `
      import { createRequire } from 'node:module';
      const cjs = createRequire(import.meta.url)(${JSON.stringify(path.join(DIST, 'index.js'))});
      const esm = await import(${JSON.stringify(path.join(DIST, 'index.mjs'))});
      const space = new cjs.Space('shared');
      space.createIndex('pk', { parts: [[1, 'unsigned']] });
      const task = cjs.expirationd.start('shared-task', space, { field: 1 });
      const out = {
        sameSpace: esm.Space === cjs.Space, sameExpirationd: esm.expirationd === cjs.expirationd,
        sameError: esm.CappedError === cjs.CappedError, sameTask: esm.Task === cjs.Task,
        seenFromEsm: esm.expirationd.task('shared-task') === task,
        listedByEsm: esm.expirationd.tasks().includes('shared-task'),
        spaceIsInstance: space instanceof esm.Space,
      };
      esm.expirationd.kill('shared-task');
      out.goneFromCjs = !cjs.expirationd.tasks().includes('shared-task');
      console.log(JSON.stringify(out));
    `) as Record<string, unknown>;
    expect(result).toMatchObject({
      sameSpace: true, sameExpirationd: true, sameError: true, sameTask: true, seenFromEsm: true,
      listedByEsm: true, spaceIsInstance: true, goneFromCjs: true,
    });
  });
});

describe('loading by package name', () => {
  it("require('capped-expirationd') resolves to dist/index.js and works", () => {
    const result = node(consumer, 'name.cjs', `
      const lib = require('capped-expirationd');
      ${probe('lib')}
      result.resolved = require.resolve('capped-expirationd');
      result.version = require('capped-expirationd/package.json').version;
      console.log(JSON.stringify(result));
    `) as Record<string, unknown>;
    expectWorking(result);
    expect(fs.realpathSync(result.resolved as string)).toBe(fs.realpathSync(path.join(DIST, 'index.js')));
    expect(typeof result.version).toBe('string');
  });

  it("import from 'capped-expirationd' resolves to dist/index.mjs and works, with named imports", () => {
    const result = node(consumer, 'name.mjs', `
      import { Space, Index, Task, CappedError, expirationd } from 'capped-expirationd';
      const lib = { Space, Index, Task, CappedError, expirationd };
      ${probe('lib')}
      const dynamic = await import('capped-expirationd');
      result.exports = Object.keys(dynamic).sort();
      result.resolved = import.meta.resolve('capped-expirationd');
      console.log(JSON.stringify(result));
    `) as Record<string, unknown>;
    expectWorking(result);
    expect(fs.realpathSync(new URL(result.resolved as string))).toBe(fs.realpathSync(path.join(DIST, 'index.mjs')));
  });

  it('require and import of the package name share one module state', () => {
    const result = node(consumer, 'shared-name.cjs', `
      (async () => {
        const cjs = require('capped-expirationd');
        const esm = await import('capped-expirationd');
        const space = new esm.Space('shared');
        space.createIndex('pk', { parts: [[1, 'unsigned']] });
        esm.expirationd.start('by-name', space, { field: 1 });
        const out = {
          sameSpace: esm.Space === cjs.Space, sameExpirationd: esm.expirationd === cjs.expirationd,
          seenFromCjs: cjs.expirationd.tasks().includes('by-name') && cjs.expirationd.task('by-name').name === 'by-name',
        };
        cjs.expirationd.killAll();
        out.goneFromEsm = esm.expirationd.tasks().length === 0;
        console.log(JSON.stringify(out));
      })();
    `) as Record<string, unknown>;
    expect(result).toEqual({ sameSpace: true, sameExpirationd: true, seenFromCjs: true, goneFromEsm: true });
  });
});

describe('type declarations', () => {
  it('dist ships index.d.ts and index.d.mts, and package.json points at files that exist', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(fs.existsSync(path.join(DIST, 'index.d.ts'))).toBe(true);
    expect(fs.existsSync(path.join(DIST, 'index.d.mts'))).toBe(true);
    const targets = [pkg.main, pkg.types, pkg.exports['.'].import.types, pkg.exports['.'].import.default,
      pkg.exports['.'].require.types, pkg.exports['.'].require.default];
    for (const target of targets) expect(fs.existsSync(path.join(ROOT, target)), target).toBe(true);
    expect(pkg.exports['.'].import.types).toMatch(/\.d\.mts$/);
    expect(pkg.exports['.'].require.types).toMatch(/\.d\.ts$/);
    const dts = fs.readFileSync(path.join(DIST, 'index.d.ts'), 'utf8');
    const dmts = fs.readFileSync(path.join(DIST, 'index.d.mts'), 'utf8');
    for (const name of ['Space', 'expirationd', 'CappedError']) {
      expect(dts, `index.d.ts names ${name}`).toContain(name);
      expect(dmts, `index.d.mts names ${name}`).toContain(name);
    }
  });

  // The ESM entry lists the CommonJS entry's names by hand: it had drifted (TtlOptions,
  // TtlDeclaration and TtlUnit were missing, so an ESM user could not import those types).
  it('the ESM entry exports every name the CommonJS entry does, values and types', () => {
    const namesOf = (file: string): Set<string> => {
      const src = fs.readFileSync(path.join(ROOT, 'src', file), 'utf8');
      const names = new Set<string>();
      for (const m of src.matchAll(/export (?:type )?\{([^}]*)\}/g)) {
        for (const name of m[1].split(',').map((n) => n.trim()).filter(Boolean)) names.add(name);
      }
      for (const m of src.matchAll(/^export (?:const|type) (\w+)/gm)) names.add(m[1]);
      return names;
    };
    const cjs = namesOf('index.ts');
    const esm = namesOf('index.mts');
    expect(cjs.size).toBeGreaterThan(20);
    expect([...cjs].filter((name) => !esm.has(name))).toEqual([]);
    expect([...esm].filter((name) => !cjs.has(name))).toEqual([]);
  });

  it('a TypeScript consumer type-checks against the package from both ESM and CommonJS, classes usable as types', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'capped-types-'));
    try {
      fs.mkdirSync(path.join(dir, 'node_modules'));
      fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'capped-expirationd'), 'dir');
      fs.symlinkSync(path.join(ROOT, 'node_modules', '@types'), path.join(dir, 'node_modules', '@types'), 'dir');
      const body = `
        import { Space, Index, Task, CappedError, expirationd, type Tuple, type TaskOptions } from 'capped-expirationd';
        const space: Space = new Space('typed');
        space.createIndex('pk', { type: 'HASH', parts: [{ field: 1, type: 'unsigned' }] });
        const exp: Index = space.createIndex('exp', { unique: false, parts: [[3, 'unsigned']] });
        const t: Tuple = space.insert([1, 'a', Date.now()]);
        const rows: Tuple[] = exp.select(0, { iterator: 'GE', limit: 10 });
        const options: TaskOptions = { itIndex: 'exp', field: 3, scanSize: 100 };
        const task: Task = expirationd.start('typed', space, options);
        task.kill();
        let error: CappedError | undefined;
        try { space.insert([1]); } catch (e) { if (e instanceof CappedError) error = e; }
        const code: string | undefined = error?.code;
        export const used = [t, rows, code];
      `;
      fs.writeFileSync(path.join(dir, 'esm.mts'), body);
      fs.writeFileSync(path.join(dir, 'cjs.cts'), body);
      fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { module: 'node16', moduleResolution: 'node16', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
        files: ['esm.mts', 'cjs.cts'],
      }));
      const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      let output = '';
      try {
        execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, env: withoutPreload(), encoding: 'utf8', timeout: 90_000 });
      } catch (error) {
        output = String((error as { stdout?: string }).stdout ?? error);
      }
      expect(output).toBe('');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
