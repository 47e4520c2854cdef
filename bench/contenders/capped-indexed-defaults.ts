// capped-expirationd, indexed, as a user who passes only itIndex and field runs it: scanTime 3600,
// scanSize 1024, iterationDelay 1. Its idle cost is near zero; how fast it clears a backlog is
// what this row shows (it may not finish within --window; the row then says what was left).
import { cappedContender } from './capped-indexed.js';

export default cappedContender('indexed-defaults');
