-- bench/anchor-poll.lua: the anchor's stop loop alone, in an idle Tarantool (issue 15). It runs
-- capped_bench.lua's poll (the TTL index's min(), then fiber.sleep(0.01)) for WALL_MS
-- milliseconds on a space of the same shape with no task, and prints its CPU (os.clock()), so
-- that bench/anchor.ts can show what the measurement itself costs on that side.
--   tarantool bench/anchor-poll.lua WALL_MS      (run by bench/anchor.ts in a scratch work_dir)
local wall_ms = tonumber(arg[1])
if wall_ms == nil or wall_ms <= 0 then error('usage: tarantool anchor-poll.lua WALL_MS') end
box.cfg{wal_mode = 'none', log_level = 1, work_dir = os.getenv('TT_WORKDIR') or '.'}
local clock = require('clock')
local fiber = require('fiber')
local s = box.schema.space.create('tester', {if_not_exists = true})
s:create_index('primary', {type = 'tree', unique = true, parts = {1, 'unsigned'}, if_not_exists = true})
s:create_index('exp', {type = 'tree', unique = false, parts = {3, 'unsigned'}, if_not_exists = true})
local far = math.floor(fiber.time()) + 3600
box.begin()
for i = 1, 10000 do s:replace{i, 'user' .. i .. '@tarantool.io', far} end
box.commit()
collectgarbage()
local now = math.floor(fiber.time())
local c0, t0 = os.clock(), clock.monotonic()
local polls = 0
while (clock.monotonic() - t0) * 1000 < wall_ms do
  -- The same condition as the anchor's loop; here it never holds, as no TTL is past.
  if s.index.exp:min() ~= nil and s.index.exp:min()[3] <= now then break end
  polls = polls + 1
  fiber.sleep(0.01)
end
print(string.format('poll wall %.3f s, cpu %.4f s, polls %d', clock.monotonic() - t0, os.clock() - c0, polls))
os.exit(0)
