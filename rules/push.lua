-- push.lua: replaces the rules document stored at a key, and announces its version, unless
-- the push is refused.
-- KEYS[1]: the hash of the stored document; its name is also the channel's.
-- ARGV[1]: the document's version; ARGV[2]: its file name; ARGV[3]: the document;
-- ARGV[4]: "1" to push whatever is stored (force), else "0"; ARGV[5]: "1" to push only over
-- the version ARGV[6] (compare-and-set), else "0"; ARGV[6]: that version ("" for no rules).
-- Reply: {"ok", pushed_at, previous version}, pushed_at the Unix milliseconds of the server's
-- TIME as a string; or {"not_newer", stored version} when the version is not newer than the
-- stored one (or is the stored one, even forced); or {"changed", stored version} when the stored version is not ARGV[6].
--
-- The hash is replaced whole (no field of an older document survives) and the version
-- published in the same atomic step: a reader sees the old document or the new one, and a
-- subscriber hears of the new one only once it is there. The checks run in the same step, so
-- of two pushes over one version only one wins. pushed_at is written from TIME's seconds and
-- microseconds as text, so no number passes through Lua's doubles.

-- bytes orders two strings byte by byte: Lua's < follows the server's locale (strcoll).
local function bytes(p, q)
  for i = 1, math.min(#p, #q) do
    local x, y = string.byte(p, i), string.byte(q, i)
    if x ~= y then return x < y and -1 or 1 end
  end
  if #p == #q then return 0 end
  return #p < #q and -1 or 1
end

-- segment orders two segments of versions run by run: a run of digits, or of other bytes;
-- two runs of digits by their numbers (compared as text, so no size is too big), other runs
-- byte by byte; of two segments equal as far as the shorter goes, the shorter is older.
local function segment(p, q)
  while #p > 0 and #q > 0 do
    local rp = string.match(p, '^%d+') or string.match(p, '^%D+')
    local rq = string.match(q, '^%d+') or string.match(q, '^%D+')
    p, q = string.sub(p, #rp + 1), string.sub(q, #rq + 1)
    if string.match(rp, '^%d') and string.match(rq, '^%d') then
      rp, rq = string.gsub(rp, '^0+', ''), string.gsub(rq, '^0+', '')
      if #rp ~= #rq then return #rp < #rq and -1 or 1 end
    end
    local c = bytes(rp, rq)
    if c ~= 0 then return c end
  end
  if #p == #q then return 0 end
  return #p < #q and -1 or 1
end

-- compare orders two versions as rules.CompareVersions does: dot-separated segments, left to
-- right, each ordered by segment; a version that runs out of segments first is older.
local function compare(a, b)
  local x, y = {}, {}
  for part in string.gmatch(a, '[^.]+') do x[#x + 1] = part end
  for part in string.gmatch(b, '[^.]+') do y[#y + 1] = part end
  for i = 1, math.max(#x, #y) do
    local p, q = x[i], y[i]
    if p == nil then return -1 end
    if q == nil then return 1 end
    local c = segment(p, q)
    if c ~= 0 then return c end
  end
  return 0
end

local stored = redis.call('HGET', KEYS[1], 'version') or ''
-- The version already stored, even forced: an instance running it would never read another
-- document under the same version.
if stored == ARGV[1] then
  return {'not_newer', stored}
end
if ARGV[4] ~= '1' then
  if ARGV[5] == '1' and stored ~= ARGV[6] then
    return {'changed', stored}
  end
  if stored ~= '' and compare(ARGV[1], stored) <= 0 then
    return {'not_newer', stored}
  end
end
local t = redis.call('TIME')
local ms = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'name', ARGV[2], 'document', ARGV[3], 'pushed_at', ms,
  'forced', ARGV[4], 'previous', stored)
redis.call('PUBLISH', KEYS[1], ARGV[1])
return {'ok', ms, stored}
