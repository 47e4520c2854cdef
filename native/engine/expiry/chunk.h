// The expiration daemon's chunk: one bounded step of a scan, run natively in one call.
//
// A chunk takes up to `scan_size` tuples from the task's cursor (over itIndex), reads each
// one's TTL field, and deletes it when the field is a number <= now (compared by value, whatever
// its MessagePack encoding). A missing or non-numeric TTL (NaN included) is never expired and
// never ends a pass.
// Deletion goes through the space, so the tuple leaves every index, as rmIndex:delete() would.
//
// Early break (itIndex is a TREE led by the TTL field, walked in ascending order): the first
// live tuple ends the pass and the cursor is reset, so the next pass starts again at the
// smallest TTL. (Tarantool's C module keeps its cursor after the break, so each later chunk
// reads one tuple and sleeps; that is a bug we do not copy.) Without early break the walk covers
// the whole index, and reaching its end ends the pass and resets the cursor.
//
// Cost: O(checked) tuple reads plus O(expired) deletions; with early break, checked is
// expired + 1 per pass, so expiry costs in proportion to what expires.
//
// The caller owns the transaction: it calls space.begin() before and commit()/rollback()
// after, which is what keeps every tuple the cursor has returned readable during the chunk.
//
// The predicate path (a JavaScript isExpired) splits the chunk in two: scan_chunk() copies up
// to scan_size visited tuples into the cursor and returns them, and delete_visited() deletes
// the chosen ones by primary key, only where the stored tuple is still byte-for-byte the one
// visited (the predicate may have changed the space in between).
#pragma once

#include <cstdint>
#include <string>

#include "cursor.h"
#include "space.h"

namespace ce {

struct ChunkResult {
  uint32_t checked = 0;
  uint32_t expired = 0;
  bool pass_end = false;
  bool early_break = false;
};

// Appends the bytes of each deleted tuple to *deleted when it is not null.
ChunkResult expire_chunk(Space& space, Cursor& cursor, uint32_t fieldno, uint32_t scan_size, double now,
                         bool early_break, std::string* deleted);

// Copies up to scan_size tuples into cursor.visited(); sets *pass_end when the index ended
// (the cursor is then reset). Returns the count.
uint32_t scan_chunk(Cursor& cursor, uint32_t scan_size, bool* pass_end);

// Deletes the visited tuples whose positions are listed; appends their bytes to *deleted when
// it is not null. Returns how many were deleted.
uint32_t delete_visited(Space& space, Cursor& cursor, const uint32_t* positions, size_t count,
                        std::string* deleted);

}  // namespace ce
