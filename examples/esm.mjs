// The package from plain ESM JavaScript (after `npm install`, which builds dist/).
//
//   node examples/esm.mjs
import { Space, expirationd, CappedError } from '../dist/index.mjs';

const space = new Space('tokens');
space.createIndex('primary', { type: 'HASH', parts: [[1, 'string']] });
space.createIndex('exp', { type: 'TREE', unique: false, parts: [[2, 'unsigned']] });
space.insert(['t-1', 100]);
space.insert(['t-2', 200]);

try {
  space.insert(['t-1', 300]);
} catch (error) {
  console.log(error instanceof CappedError, error.code); // true ER_DUPLICATE_KEY
}

let clock = 150;
const task = expirationd.start('tokens', space, { itIndex: 'exp', field: 2, now: () => clock });
task.once('fullScan', () => {
  console.log(space.select()); // [ [ 't-2', 200 ] ]
  task.kill();
});
