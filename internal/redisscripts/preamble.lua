-- preamble.lua: shared by every algorithm; the first part of the one script that ratelimit runs.
-- Defines the table `algorithms` (code -> function) and the helpers below. Times are integer
-- microseconds held in Lua numbers (exact below 2^53, i.e. until the year 2255).
--
-- An algorithm function is called as
--   fn(key, now, limit, window, burst, cost)
-- and returns the six integers of its reply row — allowed (1/0), remaining, reset after, retry
-- after (-1: never), delay, next — then a function write and up to six values v1..v6: write(key, v1,
-- ..., v6) writes the charged state, called only when every policy of the list allowed the
-- request and it is charged. (Values, not a closure or a table: a call allocates nothing for
-- them.)
--
-- `refunds` (code -> function) holds each algorithm's refund, called as
--   fn(key, now, limit, window, burst, cost, at)
-- which gives back a charge of cost units made at time at, as the Go Refund does.
--
-- `renews` (code -> function) holds the Renew of the algorithms whose charges are leases (the
-- in-flight slots), called as refunds are: it moves the charge made at time at to now.

local algorithms, refunds, renews = {}, {}, {}

-- floor and ceil are math's, bound by each call of check (see check.lua): a Redis Functions
-- library is loaded without the standard libraries, which are there only when it is called.
local floor, ceil

-- int formats an integer-valued number without exponent or rounding. The writes pass their
-- integers through it: Redis turns a number argument of redis.call into its digits at a
-- higher cost than this (a SET with its value and PX as numbers takes about 170 ns more than
-- with both formatted here: `go run ./tools/luaprof -only PX`).
local function int(n)
  return string.format('%d', n)
end

-- min_ttl_ms is the shortest lifetime of a key, in milliseconds. Redis expires keys on its own
-- clock; when the caller passes the time (an injected clock, for tests), that clock may run
-- slower than Redis' or go back, so check.lua raises the bound to a minute: state past its
-- lifetime is equivalent to no state for every algorithm, so keeping it longer changes nothing.
local min_ttl_ms = 1

-- compact is set by check for a call of a store with compact state (WithCompactState): its
-- keys are digests, and the algorithms that keep a TAT may keep it in the key's expiry (see
-- tat.lua). expiry_write says they write it so: a compact store, on the server's clock, on a
-- server with PEXPIRETIME (Redis 7.0 and later). Both are bound by each call.
local compact, expiry_write = false, false

-- ttl_ms turns a state lifetime in microseconds into a PX argument (at least min_ttl_ms), a
-- number (hash_flush compares them), which the writes format with int.
local function ttl_ms(us)
  local ms = ceil(us / 1000)
  if ms < min_ttl_ms then ms = min_ttl_ms end
  return ms
end

-- idiv is a/b rounded down, exact for integers below 2^53 (b > 0): the quotient of the double
-- division is corrected by one where it rounded across an integer.
local function idiv(a, b)
  local q = floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

-- hkey is, for a call of a store with hash state (WithHashState), the hash that holds the
-- identity's state: every policy whose state is integers (all but the sliding log and the
-- in-flight slots, which keep sorted sets under keys of their own) keeps it in a field, named
-- by the policy's tag, and an algorithm's key is then that field. nil for a call of a store
-- with a key per policy. The accessors below read and write either form; a check reads its
-- fields at once (hash_read) and writes them at once (hash_flush), when every policy decided.
local hkey = nil

-- own reports whether key names a key of its own, not a field of the call's hash: always
-- without hkey; with it, for a policy whose state keeps its own key in a call of hashed ones
-- (a calendar period's, which ends with its period, never a field). A field, a policy's tag,
-- holds no brace; a key always does, its hash tag.
local function own(key)
  return not hkey or string.find(key, '{', 1, true) ~= nil
end

-- state_at names where the state of key is, for an error: the key, or the field of the
-- identity's hash (a field's name alone, the policy's tag, would send the reader looking for
-- a key of that name).
local function state_at(key)
  if not own(key) then return 'key ' .. hkey .. ' field ' .. key end
  return 'key ' .. key
end

-- parse_ints reads the state string v of key: integers separated by ':'; count, when given,
-- is how many it must hold.
local function parse_ints(key, v, count)
  local out = {}
  for part in string.gmatch(v, '[^:]+') do
    local n = tonumber(part)
    if not n or n ~= floor(n) then out = nil break end
    out[#out + 1] = n
  end
  if not out or #out == 0 or (count and #out ~= count) then
    return error('ratelimit: malformed state at ' .. state_at(key))
  end
  return out
end

-- hvals holds the fields hash_read read (false: absent); hread says they are there to use.
-- hwrites holds the field-value pairs to write, nhw their count, hwant the lifetime, in
-- milliseconds, that the hash needs for them. hseen says that a check found a field, so that
-- the hash exists, and has an expiry (every write of a field sets one, in the same call).
local hvals, hread, hwrites, nhw, hwant, hseen = {}, false, {}, 0, 0, false

-- expire_gt says that the server has PEXPIRE's GT option (Redis 7.0 and later), bound by each
-- call as floor is.
local expire_gt = false

-- sget returns the state of key, nil when absent.
local function sget(key)
  if own(key) then return redis.call('GET', key) end
  if hread then return hvals[key] or nil end
  local v = redis.call('HGET', hkey, key)
  if v then hseen = true end
  return v
end

-- sset writes the state v of key with a lifetime of ms milliseconds (see ttl_ms). A field
-- waits for hash_flush.
local function sset(key, v, ms)
  if own(key) then
    redis.call('SET', key, v, 'PX', int(ms))
    return
  end
  hwrites[nhw + 1], hwrites[nhw + 2], nhw = key, v, nhw + 2
  if ms > hwant then hwant = ms end
end

-- sdel deletes the state of key (back to fresh). A hash left without fields is deleted by
-- Redis itself.
local function sdel(key)
  if own(key) then
    redis.call('DEL', key)
  else
    redis.call('HDEL', hkey, key)
    hseen = false -- the hash may be gone with its last field
  end
end

-- hash_begin starts the state of a call afresh: hash names the identity's hash, or is nil for
-- a call without one. The state in a hash is never kept in its expiry (see compact), which the
-- fields share.
local function hash_begin(hash)
  hkey, hread, nhw, hwant, hseen = hash, false, 0, 0, false
  if hash then compact, expiry_write = false, false end
end

-- hash_read reads the fields of the call's policies (nf names, fields[1..nf]) in one call.
local function hash_read(fields, nf)
  local vs = redis.call('HMGET', hkey, unpack(fields, 1, nf))
  for i = 1, nf do
    hvals[fields[i]] = vs[i]
    if vs[i] then hseen = true end
  end
  hread = true
end

-- hash_flush writes the fields sset kept, in one call, and makes the hash live at least as
-- long as the longest of them needs: it never shortens the hash's life, which the fields of
-- other policy lists of the identity may need (a field past its lifetime reads as no state,
-- so a hash that lives longer changes nothing but the memory it holds). A hash in which the
-- call found a field (hseen: a check's read or a refund's) has an expiry, which PEXPIRE's GT
-- lengthens in one call; another (a new hash, one holding only other lists' fields, one whose
-- last field a refund deleted) is asked its time to live first (-1: a new hash, without
-- expiry yet). Then it ends the hash call.
local function hash_flush()
  if hkey and nhw > 0 then
    redis.call('HSET', hkey, unpack(hwrites, 1, nhw))
    if hseen and expire_gt then
      redis.call('PEXPIRE', hkey, int(hwant), 'GT')
    elseif redis.call('PTTL', hkey) < hwant then
      redis.call('PEXPIRE', hkey, int(hwant))
    end
  end
  hash_begin(nil)
end

-- get_ints reads the state of key (see parse_ints), nil when absent.
local function get_ints(key, count)
  local v = sget(key)
  if not v then return nil end
  return parse_ints(key, v, count)
end

-- get_pair reads the state of key that holds two integers, "a:b" (see parse_ints), and
-- returns them, or nothing when it is absent: get_ints(key, 2) without a table, on the path of
-- every check of a fixed window.
local function get_pair(key)
  local v = sget(key)
  if not v then return nil end
  local a, b = string.match(v, '^(%-?%d+):(%-?%d+)$')
  if a then return tonumber(a), tonumber(b) end
  local s = parse_ints(key, v, 2) -- a malformed state: its error (or a form it takes, "+1:2")
  return s[1], s[2]
end

-- set_pair writes the state "a:b" of key. Unless it is a field of a hash, keep says that the
-- key holds state whose expiry is the one this write needs (a window's end, which the key
-- took when the window began): the key keeps it (KEEPTTL, Redis 6.0 and later; expire_gt
-- stands for 7.0), which spares formatting it and moving the key's entry in Redis' table of
-- expiries. On an injected clock (min_ttl_ms raised) every write makes the key live its
-- minimum from then, as it must: that clock may stay in a window longer than Redis' runs.
local function set_pair(key, a, b, ttl_us, keep)
  if keep and expire_gt and own(key) and min_ttl_ms == 1 then
    redis.call('SET', key, int(a) .. ':' .. int(b), 'KEEPTTL')
    return
  end
  sset(key, int(a) .. ':' .. int(b), ttl_ms(ttl_us))
end

-- set_ints writes a state string of integers with its expiry.
local function set_ints(key, values, ttl_us)
  local parts = {}
  for i = 1, #values do parts[i] = int(values[i]) end
  sset(key, table.concat(parts, ':'), ttl_ms(ttl_us))
end

-- put_ints writes a refunded state: nothing when it is unchanged (old), and deletes the key
-- when the state is back to fresh (its lifetime is over).
local function put_ints(key, old, values, ttl_us)
  local same = true
  for i = 1, #values do same = same and old[i] == values[i] end
  if same then return end
  if ttl_us <= 0 then
    sdel(key)
  else
    set_ints(key, values, ttl_us)
  end
end

local function capacity_of(limit, burst)
  if burst > 0 then return burst end
  return limit
end

