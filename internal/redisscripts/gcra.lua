-- gcra.lua: algorithms.gc (GCRA) and algorithms.ls (leaky bucket, shaping), the Lua form of
-- algorithms.GCRA and algorithms.LeakyBucket{Shaping: true}, which share one transition.
-- State: string "theoretical arrival time" (an integer, so Redis stores it as a number).
local function tat_check(key, now, limit, window, burst, cost, shaping)
  local capacity, interval = capacity_of(limit, burst), interval_of(limit, window)
  local tat = tonumber(redis.call('GET', key) or now)
  if not tat then return error('ratelimit: malformed state at key ' .. key) end
  if tat < now then tat = now end
  local horizon = now + capacity * interval
  local nxt = tat + cost * interval
  local allowed = nxt <= horizon
  local after, retry, delay = tat, 0, 0
  if allowed then
    after = nxt
    if shaping and cost > 0 then delay = tat - now end
  elseif cost > capacity then
    retry = -1
  else
    retry = nxt - horizon
  end
  return {allowed and 1 or 0, floor(math.max(0, horizon - after) / interval), after - now, retry, delay}, function()
    redis.call('SET', key, int(after), 'PX', ttl_ms(after - now))
  end
end

algorithms.gc = function(key, now, limit, window, burst, cost)
  return tat_check(key, now, limit, window, burst, cost, false)
end

algorithms.ls = function(key, now, limit, window, burst, cost)
  return tat_check(key, now, limit, window, burst, cost, true)
end

local function tat_refund(key, now, limit, window, burst, cost, at)
  local tat = tonumber(redis.call('GET', key))
  if not tat or tat <= now then return end
  tat = math.max(now, tat - unspent(interval_of(limit, window), now, cost, at))
  if tat == now then
    redis.call('DEL', key) -- back to fresh
  else
    redis.call('SET', key, int(tat), 'PX', ttl_ms(tat - now))
  end
end

refunds.gc, refunds.ls = tat_refund, tat_refund
