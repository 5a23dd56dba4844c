-- check.lua: the function `check(KEYS, ARGV)`, the entry point: it evaluates a whole policy list
-- for one identity, all or nothing. It is called with the KEYS and ARGV below, by the Redis
-- Function the library registers or by the script's last line (see scripts.go).
--
-- KEYS[i]   the state key of policy i (all keys share one cluster hash tag)
-- ARGV[1]   now in microseconds (an injected clock: keys then live at least a minute), or "0" to
--           read the Redis server's TIME; either with "e" before it ("e" alone for the server's
--           TIME) for a store with compact state (see compact in preamble.lua)
-- ARGV[2]   cost of the request (0 reads without charging)
-- ARGV[3]   "1" to charge the request when every policy allows it, "0" to only evaluate it,
--           "2" to refund a charge of cost made at ARGV[4] (the reply is then empty), "3" to
--           renew it (in-flight slots; the reply is then the time of the renewal alone)
-- ARGV[4]   with "2" or "3": the time of the charge (the last integer of its reply); else "0"
-- ARGV[4+i] policy i, one string "code:limit:window:burst:shadow": algorithm code, limit,
--           window in microseconds, burst (0: the limit), shadow ("1": evaluated and charged
--           with what it admits, never deciding; "0"). A policy's string is the same on every
--           call, so the library parses it once (see spec_of).
--
-- A refund ("2") announces itself: see announce.
--
-- Reply: 6 integers per policy, in order: allowed (1 or 0), remaining, reset after (µs),
-- retry after (µs; -1 never), delay (µs), next (µs; 0 for in-flight slots); then the time of
-- the check (µs). Every policy is
-- evaluated before any is charged, so a denied request consumes nothing.
-- pending holds the writes of a check until every policy has allowed it: write, key, v1..v6
-- per policy (see preamble.lua). It is one table for every call, which the library outlives.
local pending = {}

-- specs maps a policy's ARGV string to what it says, parsed once: {check, limit, window, burst,
-- shadow, code}. The library outlives a call, so a service's few policies are parsed on their
-- first call only; the table is emptied when it holds too many (a bound, never reached by a
-- sane configuration). Under EVALSHA the library is defined afresh by each call.
local specs, nspecs = {}, 0

-- spec_of returns the parsed policy of ARGV string s, or nil and an error reply.
local function spec_of(s)
  local p = specs[s]
  if p then return p end
  if type(s) ~= 'string' then return nil, redis.error_reply('ratelimit: missing policy argument') end
  local code, limit, window, burst, shadow = string.match(s, '^([^:]*):(%d+):(%d+):(%d+):([01])$')
  if not code then return nil, redis.error_reply('ratelimit: malformed policy argument ' .. s) end
  local fn = algorithms[code]
  if not fn then return nil, redis.error_reply('ratelimit: unknown algorithm code ' .. code) end
  p = {fn, tonumber(limit), tonumber(window), tonumber(burst), shadow == '1', code}
  if nspecs >= 1000 then specs, nspecs = {}, 0 end
  specs[s], nspecs = p, nspecs + 1
  return p
end

-- replies holds a reply table per policy count, reused: the library outlives a call, and Redis
-- reads the reply before the next call. Every call writes every element of its reply.
local replies = {}

-- announce tells the instances that answer denials themselves (the Redis store's denial cache)
-- that what an identity was charged was given back, so that none of them goes on denying it
-- until a Retry-After that no longer holds: it publishes, on the channel of the keys' prefix
-- followed by "forget", the identity as the keys hold it (what stands between the braces).
-- Refunds and resets announce; nothing else ends a denial sooner than its Retry-After.
local function announce(key)
  local b = string.find(key, '{', 1, true)
  local e = b and string.find(key, '}', b + 1, true)
  if e then redis.call('PUBLISH', string.sub(key, 1, b - 1) .. 'forget', string.sub(key, b + 1, e - 1)) end
end

local function check(KEYS, ARGV)
  -- The library outlives a call (a Redis Function): every call starts afresh.
  floor, ceil, min_ttl_ms = math.floor, math.ceil, 1
  local now = ARGV[1]
  compact, expiry_write = false, false
  if now == 'e' then -- compact state, on the server's clock
    compact, now = true, '0'
    expiry_write = (redis.REDIS_VERSION_NUM or 0) >= 0x070000
  elseif now ~= '0' and string.byte(now) == 101 then -- compact state, on an injected clock
    compact, now = true, string.sub(now, 2)
  end
  if now == '0' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  else
    now = tonumber(now)
    min_ttl_ms = 60000 -- see preamble.lua
  end
  local cost = ARGV[2]
  if cost == '1' then cost = 1 else cost = tonumber(cost) end
  local mode = ARGV[3]
  local nk = #KEYS

  if mode == '2' or mode == '3' then
    local at, fns = tonumber(ARGV[4]), refunds
    if mode == '3' then fns = renews end
    for i = 1, nk do -- every code is known before anything is written
      local p, err = spec_of(ARGV[4 + i])
      if not p then return err end
      if not fns[p[6]] then return redis.error_reply('ratelimit: algorithm code ' .. p[6] .. ' holds no lease to renew') end
    end
    for i = 1, nk do
      local p = specs[ARGV[4 + i]] or spec_of(ARGV[4 + i])
      fns[p[6]](KEYS[i], now, p[2], p[3], p[4], cost, at)
    end
    if mode == '3' then return {now} end
    announce(KEYS[1])
    return {}
  end

  local charge = mode == '1' and cost > 0
  if nk == 1 then -- one policy: no pending write to keep
    local p, err = spec_of(ARGV[5])
    if not p then return err end
    local ok, remaining, reset, retry, delay, next, write, v1, v2, v3, v4, v5, v6 =
      p[1](KEYS[1], now, p[2], p[3], p[4], cost)
    -- A shadow policy never decides, and is charged only with what it admits.
    if charge and ok == 1 then write(KEYS[1], v1, v2, v3, v4, v5, v6) end
    local reply = replies[1]
    if not reply then reply = {0, 0, 0, 0, 0, 0, 0}; replies[1] = reply end
    reply[1], reply[2], reply[3], reply[4], reply[5], reply[6], reply[7] =
      ok, remaining, reset, retry, delay, next, now
    return reply
  end

  for i = 1, nk do -- every code is known before any algorithm runs
    local p, err = spec_of(ARGV[4 + i])
    if not p then return err end
  end
  local reply = replies[nk]
  if not reply then
    reply = {}
    if nk <= 16 then replies[nk] = reply end
  end
  local all, n, w = true, 0, 0
  for i = 1, nk do
    local p = specs[ARGV[4 + i]] or spec_of(ARGV[4 + i])
    local ok, remaining, reset, retry, delay, next, write, v1, v2, v3, v4, v5, v6 =
      p[1](KEYS[i], now, p[2], p[3], p[4], cost)
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5], reply[n + 6] =
      ok, remaining, reset, retry, delay, next
    n = n + 6
    -- A shadow policy never decides, and is charged only with what it admits.
    local shadow = p[5]
    if not shadow and ok == 0 then all = false end
    if not shadow or ok == 1 then
      pending[w + 1], pending[w + 2], pending[w + 3], pending[w + 4] = write, KEYS[i], v1, v2
      pending[w + 5], pending[w + 6], pending[w + 7], pending[w + 8] = v3, v4, v5, v6
      w = w + 8
    end
  end
  if all and charge then
    for j = 1, w, 8 do
      pending[j](pending[j + 1], pending[j + 2], pending[j + 3], pending[j + 4], pending[j + 5], pending[j + 6], pending[j + 7])
    end
  end
  reply[n + 1] = now
  return reply
end
