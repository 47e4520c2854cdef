// capped-expirationd on the same space, scanning the HASH primary (itIndex = rmIndex = 'primary'):
// every pass visits every tuple, the way expirationd works without a TTL index.
import { cappedContender } from './capped-indexed.js';

export default cappedContender('scan');
