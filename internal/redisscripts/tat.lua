-- tat.lua: algorithms.gc, .tb, .lb and .ls, the Lua form of the tat model in package
-- algorithms, shared by GCRA, the token bucket and the leaky bucket (policing and shaping).
-- State: string "us" or "us:fr:den", the theoretical arrival time us + fr/den microseconds
-- (0 < fr < den), where den is that of the emission interval window/limit, num/den microseconds
-- in lowest terms, of the policy that wrote it. A store with compact state on the server's clock
-- keeps a whole TAT in the key's expiry instead: the key expires at millisecond ms + 1, where ms
-- is the TAT's, and holds the microseconds past ms (0 to 999), an integer Redis shares among all
-- keys rather than storing it (see store; read by parse_tat, for compact stores only). Every product below is at most burst × num,
-- which the Go validation keeps below 2^53.

-- rate returns the policy's capacity and its interval num/den in lowest terms.
local function rate(limit, window, burst)
  local a, b = window, limit
  while b ~= 0 do a, b = b, a % b end
  return capacity_of(limit, burst), window / a, limit / a
end

-- plus moves the instant (us, fr) k intervals ahead.
local function plus(num, den, us, fr, k)
  local units = k * num + fr
  local q = idiv(units, den)
  return us + q, units - q * den
end

local function before(aus, afr, bus, bfr)
  return aus < bus or (aus == bus and afr < bfr)
end

-- ceil_to is the time from now to (us, fr) in whole microseconds, rounded up.
local function ceil_to(us, fr, now)
  if fr > 0 then return us - now + 1 end
  return us - now
end

-- past is the time from (bus, bfr) to (aus, afr), which is after it, in whole microseconds,
-- rounded up.
local function past(aus, afr, bus, bfr)
  if afr > bfr then return aus - bus + 1 end
  return aus - bus
end

-- parse_tat returns the TAT of key's stored value v. A fraction of another denominator (written
-- under another limit) rounds the TAT up to the next whole microsecond, as the Go instantOf
-- does. read returns the stored TAT of key, nil when absent.
local function parse_tat(key, v, den)
  local us = tonumber(v) -- the common state, a whole microsecond, without parsing
  if us and us == floor(us) then
    if compact and us >= 0 and us < 1000 then -- a TAT in the key's expiry (see store)
      local at = redis.call('PEXPIRETIME', key)
      if at <= 0 then return error('ratelimit: malformed state at ' .. state_at(key)) end
      return (at - 1) * 1000 + us, 0
    end
    return us, 0
  end
  local s = parse_ints(key, v, nil)
  if #s == 1 then return s[1], 0 end
  if #s ~= 3 or s[2] <= 0 or s[2] >= s[3] then
    return error('ratelimit: malformed state at ' .. state_at(key))
  end
  if s[3] ~= den then return s[1] + 1, 0 end
  return s[1], s[2]
end

local function read(key, den)
  local v = sget(key)
  if not v then return nil end
  return parse_tat(key, v, den)
end

-- load returns the TAT of key, or now when it has passed (the bucket is full).
local function load(key, now, den)
  local us, fr = read(key, den)
  if not us or before(us, fr, now, 0) then return now, 0 end
  return us, fr
end

local function store(key, us, fr, den, now)
  if expiry_write and fr == 0 then -- the TAT in the key's expiry (see the state above)
    local ms = idiv(us, 1000)
    redis.call('SET', key, int(us - ms * 1000), 'PXAT', int(ms + 1))
    return
  end
  local v = int(us) -- digits, which Redis keeps as an integer
  if fr > 0 then v = v .. ':' .. int(fr) .. ':' .. int(den) end
  if hkey then
    sset(key, v, ttl_ms(ceil_to(us, fr, now)))
  else -- sset's own path, without the call: every check of GCRA and the buckets comes here
    redis.call('SET', key, v, 'PX', int(ttl_ms(ceil_to(us, fr, now))))
  end
end

-- whole_check is tat_check where the interval is a whole number of microseconds (den = 1): every
-- fraction is then 0 (a fraction stored under another limit rounds up, as read does), and each
-- step of tat_check reduces to the integer arithmetic below, step for step.
local function whole_check(key, now, capacity, num, cost, shaping)
  local tus = now
  local v
  if hkey then v = sget(key) else v = redis.call('GET', key) end -- sget, without its call
  if v then
    local us = parse_tat(key, v, 1) -- a fraction written under another limit rounds up
    if us > now then tus = us end
  end
  local hus = now + capacity * num -- the latest TAT the bucket can hold
  local allowed, retry, delay = 0, 0, 0
  local aus = tus
  if cost > capacity then
    retry = -1
  else
    local nus = tus + cost * num
    if cost == 0 or nus <= hus then
      allowed, aus = 1, nus
      if shaping and cost > 0 then delay = tus - now end
    else
      retry = nus - hus
    end
  end
  local remaining = 0
  if aus < hus then remaining = idiv(hus - aus, num) end
  return allowed, remaining, aus - now, retry, delay, aus + remaining * num + num - hus,
    store, aus, 0, 1, now
end

local function tat_check(key, now, limit, window, burst, cost, shaping)
  local capacity, num, den = rate(limit, window, burst)
  if den == 1 then return whole_check(key, now, capacity, num, cost, shaping) end
  local tus, tfr = load(key, now, den)
  local hus, hfr = plus(num, den, now, 0, capacity) -- the latest TAT the bucket can hold
  local allowed, retry, delay = false, 0, 0
  local aus, afr = tus, tfr
  if cost > capacity then
    retry = -1
  else
    local nus, nfr = plus(num, den, tus, tfr, cost)
    if cost == 0 or not before(hus, hfr, nus, nfr) then
      allowed, aus, afr = true, nus, nfr
      if shaping and cost > 0 then delay = ceil_to(tus, tfr, now) end
    else
      retry = past(nus, nfr, hus, hfr)
    end
  end
  local remaining = 0
  if before(aus, afr, hus, hfr) then
    remaining = idiv((hus - aus) * den + hfr - afr, num)
  end
  -- next: one unit more than remaining fits when the horizon has moved an interval past the
  -- TAT remaining would leave (two steps, as in Go: each product stays below burst × num)
  local rus, rfr = plus(num, den, aus, afr, remaining)
  rus, rfr = plus(num, den, rus, rfr, 1)
  return allowed and 1 or 0, remaining, ceil_to(aus, afr, now), retry, delay, past(rus, rfr, hus, hfr),
    store, aus, afr, den, now
end

local function tat_refund(key, now, limit, window, burst, cost, at)
  local _, num, den = rate(limit, window, burst)
  local us, fr = read(key, den)
  if not us then return end
  if not before(now, 0, us, fr) then return end
  local units = cost * num -- the charge, in 1/den µs
  if now > at then
    local cus, cfr = plus(num, den, at, 0, cost)
    if now - at >= ceil_to(cus, cfr, at) then return end -- refilled already
    units = units - (now - at) * den
  end
  local total = fr - units
  local q = idiv(total, den)
  us, fr = us + q, total - q * den
  if not before(now, 0, us, fr) then
    sdel(key) -- back to fresh
  else
    store(key, us, fr, den, now)
  end
end

algorithms.gc = function(key, now, limit, window, burst, cost)
  return tat_check(key, now, limit, window, burst, cost, false)
end
algorithms.tb, algorithms.lb = algorithms.gc, algorithms.gc
algorithms.ls = function(key, now, limit, window, burst, cost)
  return tat_check(key, now, limit, window, burst, cost, true)
end
refunds.gc, refunds.tb, refunds.lb, refunds.ls = tat_refund, tat_refund, tat_refund, tat_refund

-- tat_span is the length of a charge of cost, in whole microseconds rounded down: a hold's
-- refund is made at the start of its charge in the TAT (see holds.lua).
local function tat_span(limit, window, burst, cost)
  local _, num, den = rate(limit, window, burst)
  local us = plus(num, den, 0, 0, cost)
  return us
end
