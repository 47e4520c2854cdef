// capped-expirationd on a space with a HASH primary only, scanning it (itIndex = rmIndex =
// 'primary'): every pass visits every tuple, the way expirationd works without a TTL index.
import { cappedContender } from './capped-indexed.js';

export default cappedContender('scan');
