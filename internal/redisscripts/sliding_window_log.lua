-- sliding_window_log.lua: algorithms.sl, the Lua form of algorithms.SlidingLog.
-- State: a sorted set with one member per admitted unit of cost, scored by its time. Members
-- that left the window are removed when the key is charged, as the Go transition does.
local function write_sl(key, now, window, at, n, cost, may_clash)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now - window))
  -- Members are "time:position". At a new time no member can clash; at the newest time
  -- (the clock stood still or went back) one may, so each is added only where it is new.
  if not may_clash then
    local args = {}
    for i = 1, cost do
      args[#args + 1] = int(at)
      args[#args + 1] = int(at) .. ':' .. int(n + i)
      if #args >= 1000 or i == cost then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
  else
    local pos = n
    for i = 1, cost do
      repeat pos = pos + 1 until redis.call('ZADD', key, 'NX', int(at), int(at) .. ':' .. int(pos)) == 1
    end
  end
  redis.call('PEXPIRE', key, int(ttl_ms(at + window - now)))
end

-- With timeless true it is algorithms['if'], whose next is 0 (see in_flight.lua).
algorithms.sl = function(key, now, limit, window, burst, cost, timeless)
  local since = '(' .. int(now - window)
  local n = redis.call('ZCOUNT', key, since, '+inf')
  local allowed = cost == 0 or n + cost <= limit -- cost 0 reads, even over a lowered limit
  local used, newest, retry, reset = n, 0, 0, 0
  if n > 0 then newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
  local at = now
  if n > 0 and newest > now then at = newest end -- the clock went back: keep the log in order
  local may_clash = n > 0 and newest >= now -- a member of time `at` may exist already
  if allowed then
    used = n + cost
    if cost > 0 then newest = at end
  elseif cost > limit then
    retry = -1
  else -- room comes when the (n+cost-limit)th oldest member leaves; n may exceed a lowered limit
    local i = n + cost - limit - 1
    retry = tonumber(redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', i, 1)[2]) + window - now
  end
  if used > 0 then reset = newest + window - now end
  local remaining = math.max(limit - used, 0)
  -- next: were remaining spent now, the log would hold used + remaining members, the last ones
  -- at `at`; one more fits when member number used + remaining - limit leaves (from 0).
  local next, i = 0, used + remaining - limit
  if timeless then -- a slot comes back when its request ends
  elseif i < n then
    next = tonumber(redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', i, 1)[2]) + window - now
  else
    next = at + window - now
  end
  return allowed and 1 or 0, remaining, reset, retry, 0, next, write_sl, now, window, at, n, cost, may_clash
end

refunds.sl = function(key, now, limit, window, burst, cost, at)
  local m = redis.call('ZCOUNT', key, int(at), int(at))
  local n = math.min(cost, m)
  if n <= 0 then return end
  local before = redis.call('ZCOUNT', key, '-inf', '(' .. int(at))
  redis.call('ZREMRANGEBYRANK', key, before + m - n, before + m - 1)
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
  if not newest then return end
  local ttl = tonumber(newest) + window - now
  if ttl <= 0 then
    redis.call('DEL', key) -- what is left has left the window
  else
    redis.call('PEXPIRE', key, int(ttl_ms(ttl)))
  end
end
