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
--           renew it (in-flight slots; the reply is then the time of the renewal alone); for
--           the quota leases of fixed windows (see lease_taken in fixed_window.lua), "4" to
--           charge as "1" does and count the units as a lease's, "5" to refund as "2" does and
--           end the lease that charged them (its units: ARGV[6+n]); "6" to charge as "1" does
--           and hold the charge, "7" to settle a hold (see holds.lua, which also gives their
--           KEYS and ARGV after the policies')
-- ARGV[4]   with "2", "3" or "5": the time of the charge (the last integer of its reply); else "0"
-- ARGV[4+i] policy i, one string "code:limit:window:burst:shadow" or
--           "code:limit:window:burst:shadow:field": algorithm code, limit, window in
--           microseconds, burst (0: the limit; a calendar period's start, µs since the epoch,
--           negative before 1970), shadow ("1": evaluated and charged with what it
--           admits, never deciding; "0"), and for a store with hash state the field of KEYS[i],
--           the identity's hash, that holds the policy's state (see hkey in preamble.lua). A
--           policy's string is the same on every call, so the library parses it once (see
--           spec_of).
-- ARGV[5+n] with "2", for compact keys (n policies): the channel of announcements; with "5", the
--           channel or "" (readable keys)
-- ARGV[6+n] with "5": the units of the lease that ends
--
-- lease_keys: with "4" and "5", KEYS holds after the n state keys the key of each one's leases'
-- count (its state key and ":lease"; for a field of the identity's hash, the hash again),
-- declared so that a Cluster node whose slot is moving answers TRYAGAIN when the two are split
-- between the nodes (a script may touch a key it did not declare only where that key is: the
-- count would be written on the new node while the old one still held it, and the slot's move
-- would fail, BUSYKEY).
--
-- A refund ("2", or "5" of unused units) announces itself: see announce.
--
-- Reply: 6 integers per policy, in order: allowed (1 or 0), remaining, reset after (µs),
-- retry after (µs; -1 never), delay (µs), next (µs; 0 for in-flight slots); then the time of
-- the check (µs). Every policy is
-- evaluated before any is charged, so a denied request consumes nothing.
-- pending holds the writes of a check until every policy has allowed it: write, key, v1..v6
-- per policy (see preamble.lua). It is one table for every call, which the library outlives.
local pending = {}

-- fields holds the names of the hash fields of a check's policies (see hkey in preamble.lua),
-- reused as pending is.
local fields = {}

-- specs maps a policy's ARGV string to what it says, parsed once: {check, limit, window, burst,
-- shadow, code, field (false: a key of its own)}. The library outlives a call, so a service's few policies are parsed on their
-- first call only; the table is emptied when it holds too many (a bound, never reached by a
-- sane configuration). Under EVALSHA the library is defined afresh by each call.
local specs, nspecs = {}, 0

-- spec_of returns the parsed policy of ARGV string s, or nil and an error reply.
local function spec_of(s)
  local p = specs[s]
  if p then return p end
  if type(s) ~= 'string' then return nil, redis.error_reply('ratelimit: missing policy argument') end
  local code, limit, window, burst, shadow, field = string.match(s, '^([^:]*):(%d+):(%d+):(-?%d+):([01])(.*)$')
  if field and field ~= '' then field = string.match(field, '^:([%w_%-]+)$') end
  if not code or not field then return nil, redis.error_reply('ratelimit: malformed policy argument ' .. s) end
  local fn = algorithms[code]
  if not fn then return nil, redis.error_reply('ratelimit: unknown algorithm code ' .. code) end
  p = {fn, tonumber(limit), tonumber(window), tonumber(burst), shadow == '1', code, field ~= '' and field}
  if nspecs >= 1000 then specs, nspecs = {}, 0 end
  specs[s], nspecs = p, nspecs + 1
  return p
end

-- leases_only_fw is the error of a lease's call (mode "4" or "5") of another algorithm.
local function leases_only_fw() return redis.error_reply('ratelimit: only a fixed window leases quota') end

-- replies holds a reply table per policy count, reused: the library outlives a call, and Redis
-- reads the reply before the next call. Every call writes every element of its reply.
local replies = {}

-- announce tells the instances that answer denials themselves (the Redis store's denial cache)
-- that what an identity was charged was given back, so that none of them goes on denying it
-- until a Retry-After that no longer holds: it publishes, on channel, the identity as the keys
-- hold it (what stands between the braces of key). The channel is the keys' prefix followed by
-- "forget": compact keys, which hold no prefix, come with it (the argument after the
-- policies'); readable keys give it. Refunds and resets announce, before they write anything:
-- a server that refuses the announcement (an ACL) fails the call before it changed anything.
-- Nothing else ends a denial sooner than its Retry-After.
local function announce(key, channel)
  local b = string.find(key, '{', 1, true)
  local e = b and string.find(key, '}', b + 1, true)
  if not e then return end
  redis.call('PUBLISH', channel or string.sub(key, 1, b - 1) .. 'forget', string.sub(key, b + 1, e - 1))
end

-- redis_now is the Redis server's TIME in microseconds.
local function redis_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- begin starts a call afresh (the library outlives it: a Redis Function) and returns its time,
-- from its ARGV[1] (t): server_now, when given, is the server's TIME already read.
local function begin(t, server_now)
  floor, ceil, min_ttl_ms = math.floor, math.ceil, 1
  compact, expiry_write = false, false
  expire_gt = (redis.REDIS_VERSION_NUM or 0) >= 0x070000
  hkey, hread, nhw, hwant, hseen = nil, false, 0, 0, false -- hash_begin(nil), without a call
  if t == 'e' then -- compact state, on the server's clock
    compact, t = true, '0'
    expiry_write = (redis.REDIS_VERSION_NUM or 0) >= 0x070000
  elseif t ~= '0' and string.byte(t) == 101 then -- compact state, on an injected clock
    compact, t = true, string.sub(t, 2)
  end
  if t == '0' then return server_now or redis_now() end
  min_ttl_ms = 60000 -- see preamble.lua
  return tonumber(t)
end

-- evaluate runs the check (mode "0" or "1") of the call whose keys are KEYS[k0 + 1 .. k0 + nk]
-- and whose arguments are ARGV[a0 + 1 ..], at now: it writes the call's reply (see above) to
-- out[o + 1 ..] and returns the index of its last integer, or nil and an error reply. Nothing
-- is written to Redis before every policy has been read, so a call that fails wrote nothing.
local function evaluate(KEYS, k0, nk, ARGV, a0, now, out, o)
  local cost = ARGV[a0 + 2]
  if cost == '1' then cost = 1 else cost = tonumber(cost) end
  local mode = ARGV[a0 + 3]
  local lease = mode == '4'
  local charge = (mode == '1' or mode == '6' or lease) and cost > 0
  if nk == 1 then -- one policy: no pending write to keep
    local p, err = spec_of(ARGV[a0 + 5])
    if not p then return nil, err end
    if lease and p[6] ~= 'fw' then return nil, leases_only_fw() end
    local key = KEYS[k0 + 1]
    if p[7] then -- a field of the identity's hash, read by the algorithm itself
      hash_begin(key)
      key = p[7]
    end
    local ok, remaining, reset, retry, delay, next, write, v1, v2, v3, v4, v5, v6 =
      p[1](key, now, p[2], p[3], p[4], cost)
    -- A shadow policy never decides, and is charged only with what it admits.
    if charge and ok == 1 then
      write(key, v1, v2, v3, v4, v5, v6)
      if lease then lease_taken(key, v1, cost, v3) end
    end
    if hkey then hash_flush() end
    out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6], out[o + 7] =
      ok, remaining, reset, retry, delay, next, now
    return o + 7
  end

  local nf = 0
  for i = 1, nk do -- every code is known before any algorithm runs
    local p, err = spec_of(ARGV[a0 + 4 + i])
    if not p then return nil, err end
    if lease and p[6] ~= 'fw' then return nil, leases_only_fw() end
    if p[7] then
      if nf == 0 then hash_begin(KEYS[k0 + i]) end
      fields[nf + 1], nf = p[7], nf + 1
    end
  end
  if nf > 1 then hash_read(fields, nf) end -- one field: sget reads it
  local all, n, w = true, o, 0
  for i = 1, nk do
    local p = specs[ARGV[a0 + 4 + i]] or spec_of(ARGV[a0 + 4 + i])
    local key = p[7] or KEYS[k0 + i]
    local ok, remaining, reset, retry, delay, next, write, v1, v2, v3, v4, v5, v6 =
      p[1](key, now, p[2], p[3], p[4], cost)
    out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5], out[n + 6] =
      ok, remaining, reset, retry, delay, next
    n = n + 6
    -- A shadow policy never decides, and is charged only with what it admits.
    local shadow = p[5]
    if not shadow and ok == 0 then all = false end
    if not shadow or ok == 1 then
      pending[w + 1], pending[w + 2], pending[w + 3], pending[w + 4] = write, key, v1, v2
      pending[w + 5], pending[w + 6], pending[w + 7], pending[w + 8] = v3, v4, v5, v6
      w = w + 8
    end
  end
  if all and charge then
    for j = 1, w, 8 do
      pending[j](pending[j + 1], pending[j + 2], pending[j + 3], pending[j + 4], pending[j + 5], pending[j + 6], pending[j + 7])
      if lease then lease_taken(pending[j + 1], pending[j + 2], cost, pending[j + 4]) end -- fw: index, cost, to end
    end
  end
  if hkey then hash_flush() end
  out[n + 1] = now
  return n + 1
end

-- hold_ps holds the parsed policies of a call with holds, reused as pending is.
local hold_ps = {}

-- holds_call is a reserve (mode "6") or a settle ("7") at now: see holds.lua. Before anything
-- else, it gives back the holds of the list that expired, which it announces, as a refund,
-- before it writes anything; so does a settle that gives back part of its estimate.
local function holds_call(KEYS, ARGV, now, mode)
  local n = #KEYS - 1
  local h = KEYS[n + 1]
  local ok, err = holds_specs(n, ARGV, spec_of, hold_ps)
  if not ok then return err end
  local channel = hold_channel(ARGV, n)
  local member, held, delta
  if mode == '7' then
    local actual, est = tonumber(ARGV[2]), tonumber(ARGV[6 + n])
    member = ARGV[5 + n] .. ':' .. int(est) .. ':' .. ARGV[4] .. ':' .. ARGV[9 + n] .. ':' .. ARGV[10 + n]
    held = ARGV[5 + n] == '-' or redis.call('ZSCORE', h, member) ~= false
    delta = actual
    if held then delta = actual - est end
  end
  local gone, fresh
  if mode == '6' then
    -- A reserve reads the earliest hold first: most find nothing expired, and an empty answer
    -- says the record is new (its expiry is then set in one call, see keep_holds).
    local first = redis.call('ZRANGE', h, '0', '0', 'WITHSCORES')
    fresh = #first == 0
    if fresh or tonumber(first[2]) > now then
      gone = none
    else
      gone, fresh = expired(h, now, nil), nil -- giving them back may empty it: the key may be new
    end
  else
    gone = expired(h, now, member)
  end
  if #gone > 0 or (delta and delta < 0) then announce(KEYS[1], channel) end
  release(h, gone, KEYS, hold_ps, n, now)
  if mode == '6' then
    local reply = replies[n]
    if not reply then
      reply = {}
      if n <= 16 then replies[n] = reply end
    end
    local last, e = evaluate(KEYS, 0, n, ARGV, 0, now, reply, 0)
    if not last then return e end
    local mask, bit, all = 0, 1, true
    for i = 1, n do
      local allowed = reply[6 * (i - 1) + 1] == 1
      if not hold_ps[i][5] and not allowed then all = false end
      if allowed or not hold_ps[i][5] then mask = mask + bit end
      bit = bit * 2
    end
    local cost = tonumber(ARGV[2])
    if all and cost > 0 then
      -- ARGV[2] is the estimate's digits, as the member has them (Go formats it so).
      redis.call('ZADD', h, int(now + tonumber(ARGV[6 + n])), ARGV[5 + n] .. ':' .. ARGV[2] .. ':' ..
        int(now) .. ':' .. int(mask) .. ':' .. hold_offsets(hold_ps, n, reply, cost))
      keep_holds(h, ARGV[7 + n], fresh)
    end
    return reply
  end
  local mask, at = tonumber(ARGV[9 + n]), tonumber(ARGV[4])
  if held and ARGV[5 + n] ~= '-' then redis.call('ZREM', h, member) end
  if delta < 0 then
    parse_offsets(ARGV[10 + n], n)
    settle_offsets(hold_ps, n, tonumber(ARGV[2]))
    refund_masked(KEYS, hold_ps, n, now, -delta, at, mask)
  elseif delta > 0 then
    overdraw(KEYS, hold_ps, n, now, delta, mask)
  end
  return {held and 1 or 0, now}
end

local function check(KEYS, ARGV)
  local now = begin(ARGV[1])
  local mode = ARGV[3]
  if mode == '6' or mode == '7' then return holds_call(KEYS, ARGV, now, mode) end
  local nk = #KEYS
  if mode == '4' or mode == '5' then nk = nk / 2 end -- then the leases' counts (see lease_keys)

  if mode == '2' or mode == '3' or mode == '5' then
    local cost = tonumber(ARGV[2])
    local at, fns = tonumber(ARGV[4]), refunds
    if mode == '3' then fns = renews end
    for i = 1, nk do -- every code is known before anything is written
      local p, err = spec_of(ARGV[4 + i])
      if not p then return err end
      if not fns[p[6]] then return redis.error_reply('ratelimit: algorithm code ' .. p[6] .. ' holds no slot to renew') end
      if mode == '5' and p[6] ~= 'fw' then return leases_only_fw() end
      if p[7] then hash_begin(KEYS[i]) end
    end
    if mode == '2' or mode == '5' and cost > 0 then -- a spent lease's end gives nothing back
      local channel = ARGV[4 + nk + 1]
      if channel == '' then channel = nil end
      announce(KEYS[1], channel)
    end
    local units = mode == '5' and tonumber(ARGV[4 + nk + 2])
    for i = 1, nk do
      local p = specs[ARGV[4 + i]] or spec_of(ARGV[4 + i])
      fns[p[6]](p[7] or KEYS[i], now, p[2], p[3], p[4], cost, at)
      if units then lease_ended(p[7] or KEYS[i], now, p[3], units, at) end
    end
    if hkey then hash_flush() end
    if mode == '3' then return {now} end
    return {}
  end

  local reply = replies[nk]
  if not reply then
    reply = {}
    if nk <= 16 then replies[nk] = reply end
  end
  local n, err = evaluate(KEYS, 0, nk, ARGV, 0, now, reply, 0)
  if not n then return err end
  return reply
end

-- run_one is one call of check_many: a check (mode "0" or "1"); it returns the index of its
-- reply's last integer in out, or nil and an error reply.
local function run_one(KEYS, k0, nk, ARGV, a0, server_now, out, o)
  local mode = ARGV[a0 + 3]
  if mode ~= '0' and mode ~= '1' and mode ~= '4' then
    return nil, redis.error_reply('ratelimit: check_many runs checks only, not mode ' .. tostring(mode))
  end
  if mode == '4' then nk = nk / 2 end -- then the leases' counts (see lease_keys)
  return evaluate(KEYS, k0, nk, ARGV, a0, begin(ARGV[a0 + 1], server_now), out, o)
end

-- max_error is the most bytes of an error check_many returns.
local max_error = 480

-- put_error writes the error message msg to out from out[o + 1] as integers, six bytes to each
-- (48 bits: exact in a Lua number and in a Redis integer), after its length in bytes, and
-- returns the index of the last.
local function put_error(out, o, msg)
  msg = string.sub(msg, 1, max_error)
  local n = #msg
  out[o + 1] = n
  o = o + 1
  for i = 1, n, 6 do
    local v = 0
    for j = i, i + 5 do v = v * 256 + (string.byte(msg, j) or 0) end
    out[o + 1], o = v, o + 1
  end
  return o
end

-- check_many runs the checks that a store's batcher merged (concurrent calls of check sent as
-- one, see package internal/rediscall), one after the other, each as check would alone. The
-- server's TIME is read once, for every call that asks for it: the calls happen at one instant,
-- as they do in one atomic script.
--
-- KEYS      the keys of every call, call after call
-- ARGV[1]   the number of calls m; then, per call, its number of keys, its number of arguments
--           and its arguments (check's ARGV)
--
-- Reply: one array of integers, per call its length n and then its n integers (check's reply);
-- or, for a call that failed, -n and then its error message (see put_error), as it would have
-- failed alone (what it wrote before the error stays written, as alone).
local function check_many(KEYS, ARGV)
  local m, out, o, k, a, server_now = tonumber(ARGV[1]), {}, 0, 0, 1, nil
  for _ = 1, m do
    local nk, na = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    a = a + 2
    local t = ARGV[a + 1]
    if not server_now and (t == '0' or t == 'e') then server_now = redis_now() end
    local ok, n, err = pcall(run_one, KEYS, k, nk, ARGV, a, server_now, out, o + 1)
    if ok and n then
      out[o + 1], o = n - o - 1, n
    else
      local msg = n -- what pcall caught: a string, or Redis's error table
      if ok then msg = err end -- an error reply
      if type(msg) == 'table' then msg = msg.err end
      local e = put_error(out, o + 1, tostring(msg))
      out[o + 1], o = o + 1 - e, e
    end
    k, a = k + nk, a + na
  end
  for i = #out, o + 1, -1 do out[i] = nil end -- what a failed last call left
  return out
end
