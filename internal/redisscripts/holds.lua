-- holds.lua: the holds of Limiter.Reserve, check.lua's modes "6" (reserve) and "7" (settle).
--
-- A hold is a charge made on an estimate, which a settle turns into the actual cost: the
-- estimate is charged to the policies at once, as a check of mode "1" charges (so every
-- admission after it counts what the holds of others take), and recorded in the list's holds
-- key, a sorted set, as the member "id:estimate:at:mask:o1,...,on" scored by the instant the
-- hold expires: id names it (the instance's), at is the time of the charge, mask the policies
-- it charged (bit i-1 for policy i: a shadow policy is charged only with what it admits) and
-- o_i the offset from at of the time its refund is made at on policy i: 0, but for a TAT the
-- start of the charge in it (the TAT after the charge, rounded up, less the charge's length,
-- rounded down), so that the holds of one instant each give back what still weighs of their
-- own part (a refund at at would take the time that passed off each of them). A settle
-- removes the member and charges the difference: less than the estimate is refunded as far as
-- the charge still weighs (the refunds of each algorithm), more is charged beyond the limit,
-- an overdraft that refuses the next requests until time repays it. A hold that outlives its
-- lifetime (its instance died, or never settled) is refunded whole by the next reserve or
-- settle of the list (release), as if it had been cancelled: it charged nothing.
--
-- KEYS[n+1]  the list's holds key (its identity's hash tag, so in the state keys' slot)
-- ARGV[4]    "0" with "6"; with "7", the time of the hold's charge (its at)
-- ARGV[5+n]  the hold's id
-- ARGV[6+n]  with "6", its lifetime in µs; with "7", the estimate it charged
-- ARGV[7+n]  the holds key's lifetime in ms: the longest hold's and the longest window's
-- ARGV[8+n]  the channel of announcements for compact keys, or "" (see announce)
-- ARGV[9+n]  with "7", the hold's mask
-- ARGV[10+n] with "7", the hold's offsets, "o1,...,on"
--
-- Reply of "6": check's. Reply of "7": {1 when the hold was still held, 0 when it had expired
-- (or been reset): then the whole actual is charged; the time}.

-- max_release bounds the expired holds one call gives back: twice what the estimates' bounds
-- let stand at once (maxHolds in holds.go: 1,024, twice as many across a window's end or a
-- bucket's refill), and twice that again, so that every call gives back every hold that
-- expired, as the memory store does, and no call of a list's holds takes longer than that.
-- A string: Redis formats each number a script passes it (Redis 7.0 measurably so).
local max_release = '4096'

-- hold_codes are the algorithms whose charges a hold may make: not the in-flight slots (their
-- charges are holds already) nor a shaping bucket (a charge that waits cannot be settled).
local hold_codes = {fw = true, cw = true, sl = true, sc = true, gc = true, tb = true, lb = true}

-- tat_codes keep their capacity in the burst: an overdraft raises that; the others' limit.
local tat_codes = {gc = true, tb = true, lb = true}

-- holds_specs parses the n policies of a call with holds into out, or returns nil and an error
-- reply.
local function holds_specs(n, ARGV, spec_of, out)
  for i = 1, n do
    local p, err = spec_of(ARGV[4 + i])
    if not p then return nil, err end
    if not hold_codes[p[6]] then
      return nil, redis.error_reply('ratelimit: algorithm code ' .. p[6] .. ' takes no holds')
    end
    out[i] = p
  end
  return true
end

-- on runs fn(key) on the state of policy p of KEYS[i]: a field of the identity's hash is read
-- and written in a hash call of its own, so that two changes of one field in a call (a hold
-- given back, then an overdraft) each read what the other wrote.
local function on(KEYS, i, p, fn)
  if not p[7] then return fn(KEYS[i]) end
  hash_begin(KEYS[i])
  fn(p[7])
  hash_flush()
end

-- offs holds the offsets of a hold's refunds (see above), reused.
local offs = {}

-- parse_offsets reads "o1,...,on" into offs.
local function parse_offsets(s, n)
  local i = 0
  for o in string.gmatch(s, '-?%d+') do
    i = i + 1
    offs[i] = tonumber(o)
  end
  for j = i + 1, n do offs[j] = 0 end
end

-- settle_offsets moves the offsets (offs) of a hold settled at actual, less than its estimate,
-- to the end of the actual's part of its charge in a TAT: what is given back is the charge's
-- tail, beyond the actual, which time has used only once it is past that point.
local function settle_offsets(ps, n, actual)
  for i = 1, n do
    local p = ps[i]
    if tat_codes[p[6]] then offs[i] = offs[i] + tat_span(p[2], p[3], p[4], actual) end
  end
end

-- refund_masked gives back cost charged at at to the policies of mask, each at at and its
-- offset (offs).
local function refund_masked(KEYS, ps, n, now, cost, at, mask)
  for i = 1, n do
    if mask % 2 == 1 then
      local p, t = ps[i], at + offs[i]
      on(KEYS, i, p, function(key) refunds[p[6]](key, now, p[2], p[3], p[4], cost, t) end)
    end
    mask = floor(mask / 2)
  end
end

-- hold_offsets returns the offsets of the refunds of a reservation of cost at now whose check
-- replied reply (see above).
local offset_parts = {}
local function hold_offsets(ps, n, reply, cost)
  if n == 1 then
    local p = ps[1]
    if not tat_codes[p[6]] then return '0' end
    return int(reply[3] - tat_span(p[2], p[3], p[4], cost))
  end
  for i = 1, n do
    local p, o = ps[i], '0'
    if tat_codes[p[6]] then o = int(reply[6 * (i - 1) + 3] - tat_span(p[2], p[3], p[4], cost)) end
    offset_parts[i] = o
  end
  for i = n + 1, #offset_parts do offset_parts[i] = nil end
  return table.concat(offset_parts, ',')
end

-- expired returns the members of holds key h that expired by now (all of them: see
-- max_release), but skip (a settle's own hold, which it settles).
local function expired(h, now, skip)
  local gone = redis.call('ZRANGEBYSCORE', h, '-inf', int(now), 'LIMIT', '0', max_release)
  if skip then
    for i = #gone, 1, -1 do
      if gone[i] == skip then table.remove(gone, i) end
    end
  end
  return gone
end

-- release gives back the expired holds gone of holds key h, whole, and forgets them.
local function release(h, gone, KEYS, ps, n, now)
  for _, m in ipairs(gone) do
    local _, cost, at, mask, o = string.match(m, '^([^:]+):(%d+):(%d+):(%d+):([%d,%-]*)$')
    if cost then
      parse_offsets(o, n)
      refund_masked(KEYS, ps, n, now, tonumber(cost), tonumber(at), tonumber(mask))
    end
  end
  if #gone > 0 then redis.call('ZREM', h, unpack(gone)) end
end

-- overdraw charges cost at now to the policies of mask whatever their capacity: each algorithm
-- runs with a capacity that admits it (a TAT's burst raised, another's limit), which changes
-- its verdict but not the state it writes, and writes what it charged. A sliding log, which
-- keeps a member per unit, is charged at most its capacity: more refuses no longer.
local function overdraw(KEYS, ps, n, now, cost, mask)
  local huge = 2 ^ 52
  for i = 1, n do
    if mask % 2 == 1 then
      local p = ps[i]
      local limit, burst, c = p[2], p[4], cost
      if tat_codes[p[6]] then
        burst = huge
      else
        limit = huge
        if p[6] == 'sl' then c = math.min(cost, p[2]) end
      end
      on(KEYS, i, p, function(key)
        local ok, _, _, _, _, _, write, v1, v2, v3, v4, v5, v6 = p[1](key, now, limit, p[3], burst, c)
        if ok == 1 then write(key, v1, v2, v3, v4, v5, v6) end
      end)
    end
    mask = floor(mask / 2)
  end
end

-- hold_channel is the channel of a call's announcements (see announce in check.lua): nil for
-- readable keys, whose prefix names it.
local function hold_channel(ARGV, n)
  local channel = ARGV[8 + n]
  if channel == '' then return nil end
  return channel
end

-- none is the empty list of the holds a call gives back (never written to).
local none = {}

-- keep_holds makes the holds key h live ms milliseconds, never shorter than it does: a key
-- new in this call (fresh true) gets it; an older one (false) is lengthened by GT on Redis 7.0
-- and later; one that may be either (nil: its holds given back may have emptied it) in one
-- call when it is new (NX: no expiry yet), else by GT. Before 7.0, its time to live is asked.
local function keep_holds(h, ms, fresh)
  if fresh then
    redis.call('PEXPIRE', h, ms)
  elseif expire_gt then
    if fresh == false then
      redis.call('PEXPIRE', h, ms, 'GT')
    elseif redis.call('PEXPIRE', h, ms, 'NX') == 0 then
      redis.call('PEXPIRE', h, ms, 'GT')
    end
  elseif redis.call('PTTL', h) < tonumber(ms) then
    redis.call('PEXPIRE', h, ms)
  end
end
