-- check.lua: the function `check(KEYS, ARGV)`, the entry point: it evaluates a whole policy list
-- for one identity, all or nothing. It is called with the KEYS and ARGV below, by the Redis
-- Function the library registers or by the script's last line (see scripts.go).
--
-- KEYS[i]   the state key of policy i (all keys share one cluster hash tag)
-- ARGV[1]   now in microseconds (an injected clock: keys then live at least a minute), or "0" to
--           read the Redis server's TIME
-- ARGV[2]   cost of the request (0 reads without charging)
-- ARGV[3]   "1" to charge the request when every policy allows it, "0" to only evaluate it,
--           "2" to refund a charge of cost made at ARGV[4] (the reply is then empty), "3" to
--           renew it (in-flight slots; the reply is then the time of the renewal alone)
-- ARGV[4]   with "2" or "3": the time of the charge (the last integer of its reply); else "0"
-- ARGV[5i], ARGV[5i+1], ARGV[5i+2], ARGV[5i+3], ARGV[5i+4]
--           policy i: algorithm code, limit, window in microseconds, burst (0: the limit),
--           shadow ("1": evaluated and charged with what it admits, never deciding; "0")
--
-- Reply: 6 integers per policy, in order: allowed (1 or 0), remaining, reset after (µs),
-- retry after (µs; -1 never), delay (µs), next (µs; 0 for in-flight slots); then the time of
-- the check (µs). Every policy is
-- evaluated before any is charged, so a denied request consumes nothing.
-- pending holds the writes of a check until every policy has allowed it: write, key, v1..v6
-- per policy (see preamble.lua). It is one table for every call, which the library outlives.
local pending = {}

local function check(KEYS, ARGV)
  -- The library outlives a call (a Redis Function): every call starts afresh.
  floor, ceil, min_ttl_ms = math.floor, math.ceil, 1
  local now = tonumber(ARGV[1])
  if now == 0 then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  else
    min_ttl_ms = 60000 -- see preamble.lua
  end
  local cost = tonumber(ARGV[2])
  local charge = ARGV[3] == '1'

  if ARGV[3] == '2' or ARGV[3] == '3' then
    local at, fns = tonumber(ARGV[4]), refunds
    if ARGV[3] == '3' then fns = renews end
    for i = 1, #KEYS do -- every code is known before anything is written
      local code = ARGV[5 * i]
      if not algorithms[code] then return redis.error_reply('ratelimit: unknown algorithm code ' .. tostring(code)) end
      if not fns[code] then return redis.error_reply('ratelimit: algorithm code ' .. code .. ' holds no lease to renew') end
    end
    for i = 1, #KEYS do
      local a = 5 * i
      fns[ARGV[a]](KEYS[i], now, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), cost, at)
    end
    if ARGV[3] == '3' then return {now} end
    return {}
  end

  -- A table built of seven elements has room for them; one that grows reallocates on the way.
  local reply = {}
  if #KEYS == 1 then reply = {0, 0, 0, 0, 0, 0, 0} end
  local all, n, w = true, 0, 0
  for i = 1, #KEYS do
    local a = 5 * i
    local fn = algorithms[ARGV[a]]
    if not fn then return redis.error_reply('ratelimit: unknown algorithm code ' .. tostring(ARGV[a])) end
    local ok, remaining, reset, retry, delay, next, write, v1, v2, v3, v4, v5, v6 =
      fn(KEYS[i], now, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), cost)
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5], reply[n + 6] =
      ok, remaining, reset, retry, delay, next
    n = n + 6
    -- A shadow policy never decides, and is charged only with what it admits.
    local shadow = ARGV[a + 4] == '1'
    if not shadow and ok == 0 then all = false end
    if not shadow or ok == 1 then
      pending[w + 1], pending[w + 2], pending[w + 3], pending[w + 4] = write, KEYS[i], v1, v2
      pending[w + 5], pending[w + 6], pending[w + 7], pending[w + 8] = v3, v4, v5, v6
      w = w + 8
    end
  end
  if all and charge and cost > 0 then
    for j = 1, w, 8 do
      pending[j](pending[j + 1], pending[j + 2], pending[j + 3], pending[j + 4], pending[j + 5], pending[j + 6], pending[j + 7])
    end
  end
  reply[n + 1] = now
  return reply
end
