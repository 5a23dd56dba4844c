-- sliding_window_log.lua: algorithms.sl, the Lua form of algorithms.SlidingLog.
-- State: a sorted set with one member per admitted unit of cost, scored by its time.
algorithms.sl = function(key, now, limit, window, burst, cost)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now - window))
  local n = redis.call('ZCARD', key)
  local allowed = n + cost <= limit
  local used, newest, retry, reset = n, 0, 0, 0
  if n > 0 then newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
  if allowed then
    used = n + cost
    if cost > 0 then newest = now end
  elseif cost > limit then
    retry = -1
  else
    local i = n + cost - limit - 1
    retry = tonumber(redis.call('ZRANGE', key, i, i, 'WITHSCORES')[2]) + window - now
  end
  if used > 0 then reset = newest + window - now end
  return {allowed and 1 or 0, limit - used, reset, retry, 0}, function()
    -- Members are "time:position"; positions only grow while entries of one time live.
    local args = {}
    for i = 1, cost do
      args[#args + 1] = int(now)
      args[#args + 1] = int(now) .. ':' .. int(n + i)
      if #args >= 1000 or i == cost then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    redis.call('PEXPIRE', key, ttl_ms(window))
  end
end
