// better-sqlite3 with the single statement many users write: DELETE FROM t WHERE expires_at <= ?
// every scan time, whatever the backlog (see sqlite.ts).
import { sqliteContender } from './sqlite.js';

export default sqliteContender('single');
