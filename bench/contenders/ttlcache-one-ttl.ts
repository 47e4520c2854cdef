// @isaacs/ttlcache with one TTL for every live entry: few expiration buckets, so purges and timer
// re-arms are cheap (see ttlcache.ts for the spread-TTL row).
import { ttlcacheContender } from './ttlcache.js';

export default ttlcacheContender(true);
