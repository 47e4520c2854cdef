-- bench/anchor-memory.lua: what Tarantool's memtx spends per tuple on the anchor's workload, so
-- that "memory per tuple is below Tarantool's" rests on a measurement (bench/anchor-memory.ts
-- runs it beside our side and prints the table).
--   tarantool bench/anchor-memory.lua N       (bench/anchor-memory.ts runs it in a scratch work_dir)
--
-- The workload is capped_bench.lua's (and bench/anchor.ts's load()): N tuples
-- {i, 'user'..i..'@tarantool.io', exp}, i = 1..N; every 10th has exp = now - 10, the others
-- now + 3600 (now = floor(fiber.time())); a unique TREE pk on field 1 (unsigned) and a non-unique
-- TREE on field 3 (unsigned); s:insert in transactions of 10,000 tuples. memtx, no WAL, no
-- checkpoint daemon (the bootstrap snapshot box.cfg writes into the scratch work_dir is before
-- the first reading).
--
-- Everything is read twice, after box.cfg and a full Lua GC but before the space is created,
-- and after the load and a full Lua GC; the figures are the differences (the system spaces and
-- the arena slabs box.cfg touches, 32 MB, are not the space's), divided by N. What 2.6 reports
-- (src/box/lua/slab.c, memtx_engine_memory_stat in src/box/memtx_engine.c):
-- - items_used: the tuples' allocations in memtx's small allocator, each counted at its size
--   class (tuple header, field map and MessagePack, rounded up to the class). Free space in the
--   slabs is not in it. box.info.memory().data is the same number.
-- - items_size: the slabs those allocations live in, free space included.
-- - index (box.info.memory().index): the 16 KiB extents the indexes' B+trees (and their reserve)
--   hold, whole, the free space in the tree blocks included. arena_used = items_used + index.
-- - index pool: the slabs of the extent pool (box.slab.stats()'s last entry), used or free.
-- - arena_size: the address space the arena has touched (whole arena slabs, tuples and indexes,
--   cached free slabs included); quota_used: what is booked against memtx_memory (about the same).
-- - RSS: /proc/self/statm's resident pages; it also holds what the Lua loop left in LuaJIT's
--   heap after the GC (box.info.memory().lua is the live part) and malloc's free memory.
--
-- Which figure goes with which of ours (bench/anchor-memory.ts):
-- - Our space.memory() counts the tuple arena's slabs and chunks whole (free space included)
--   and each index's node pool whole (free nodes included), not what is "used" inside them. Its
--   like-for-like figure here is "slabs" = items_size + index pool. arena_used counts the
--   tuples at their size class but no free slab space, so it is lower than that basis: a
--   comparison of our memory() with arena_used is stricter on us than like-for-like.
-- - Our RSS growth (after a full V8 GC) goes with this RSS growth (after a full Lua GC): both
--   are the whole process, the language heap's leftovers from the load loop included.
--
-- Prints one line: 'anchor-memory ' followed by a JSON object (keys below; bytes unless said).
local N = tonumber(arg[1])
if N == nil or N < 1 or N ~= math.floor(N) then error('usage: tarantool anchor-memory.lua N') end
box.cfg{
  -- A quota, not a reservation: the arena's pages are touched as slabs are handed out. 10M
  -- tuples need about 1 GB; 6 GB is what capped_bench.lua gives itself.
  memtx_memory = tonumber(os.getenv('TT_MEMTX_MEMORY')) or 6 * 1024 * 1024 * 1024,
  wal_mode = 'none', checkpoint_interval = 0, log_level = 1,
  work_dir = os.getenv('TT_WORKDIR') or '.',
}
local ffi = require('ffi')
local fiber = require('fiber')
local json = require('json')
local clock = require('clock')
ffi.cdef('long sysconf(int name);')
local PAGE = tonumber(ffi.C.sysconf(30))  -- _SC_PAGESIZE on Linux

local function rss()
  local f = assert(io.open('/proc/self/statm', 'r'))
  local line = f:read('*l')
  f:close()
  local resident = line:match('^%d+%s+(%d+)')
  return tonumber(resident) * PAGE
end

-- The extent pool is the last entry of box.slab.stats() (lbox_slab_stats appends it after the
-- tuple pools); its item_size is the extent size, 16 KiB.
local function reading()
  collectgarbage('collect')
  collectgarbage('collect')
  local slab = box.slab.info()
  local mem = box.info.memory()
  local stats = box.slab.stats()
  local pool = stats[#stats]
  local index_pool = 0
  if pool ~= nil and pool.item_size == 16384 then index_pool = pool.mem_used + pool.mem_free end
  -- The tuple pool holding the most items: the size class our tuples fall in.
  local class, count = 0, 0
  for i = 1, #stats - 1 do
    if stats[i].item_count > count then class, count = stats[i].item_size, stats[i].item_count end
  end
  return {
    rss = rss(),
    items_used = slab.items_used, items_size = slab.items_size,
    arena_used = slab.arena_used, arena_size = slab.arena_size, quota_used = slab.quota_used,
    data = mem.data, index = mem.index, lua = mem.lua, cache = mem.cache, net = mem.net, tx = mem.tx,
    index_pool = index_pool, class = class, class_count = count,
  }
end

local before = reading()
local s = box.schema.space.create('tester')
s:create_index('primary', {type = 'tree', unique = true, parts = {1, 'unsigned'}})
s:create_index('exp', {type = 'tree', unique = false, parts = {3, 'unsigned'}})
local now = math.floor(fiber.time())
local t0 = clock.monotonic()
box.begin()
for i = 1, N do
  s:insert{i, 'user' .. i .. '@tarantool.io', (i % 10 == 0) and (now - 10) or (now + 3600)}
  if i % 10000 == 0 then box.commit(); box.begin() end
end
box.commit()
local load_s = clock.monotonic() - t0
local after = reading()
if s:len() ~= N then error(string.format('loaded %d tuples, not %d', s:len(), N)) end

local function delta(k) return after[k] - before[k] end
local out = {
  n = N, version = box.info.version, load_s = load_s, page = PAGE,
  before = before, after = after,
  -- Per tuple, each a difference over the load divided by N.
  per_tuple = {
    items_used = delta('items_used') / N,                       -- tuples at their size class
    items_size = delta('items_size') / N,                       -- tuple slabs, free space included
    index = delta('index') / N,                                 -- index extents held
    used = (delta('items_used') + delta('index')) / N,          -- items_used + index
    arena_used = delta('arena_used') / N,                       -- the same sum, as slab.info() gives it
    slabs = (delta('items_size') + delta('index_pool')) / N,    -- like-for-like with our memory()
    arena_size = delta('arena_size') / N,
    quota_used = delta('quota_used') / N,
    lua = delta('lua') / N,
    rss = delta('rss') / N,                                     -- like-for-like with our RSS growth
  },
}
print('anchor-memory ' .. json.encode(out))
os.exit(0)
