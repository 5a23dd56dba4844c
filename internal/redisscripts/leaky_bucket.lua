-- leaky_bucket.lua: algorithms.lb, the Lua form of algorithms.LeakyBucket (policing).
-- State: string "level:start of the current leak interval". Absent: an empty bucket.
algorithms.lb = function(key, now, limit, window, burst, cost)
  local capacity, interval = capacity_of(limit, burst), interval_of(limit, window)
  local level, last = 0, now
  local s = get_ints(key, 2)
  if s then level, last = s[1], s[2] end
  if now > last then
    local leaked = floor((now - last) / interval)
    if leaked > 0 then
      level = math.max(0, level - leaked)
      last = last + leaked * interval
    end
  end
  if level == 0 and last < now then last = now end
  local allowed = level + cost <= capacity
  local after, retry, reset = level, 0, 0
  if allowed then
    after = level + cost
  elseif cost > capacity then
    retry = -1
  else
    retry = last + (level + cost - capacity) * interval - now
  end
  if after > 0 then reset = last + after * interval - now end
  return {allowed and 1 or 0, capacity - after, reset, retry, 0}, function()
    set_ints(key, {after, last}, last + after * interval - now)
  end
end

refunds.lb = function(key, now, limit, window, burst, cost, at)
  local interval = interval_of(limit, window)
  local s = get_ints(key, 2)
  if not s then return end
  local level, last = s[1], s[2]
  if now > last then
    local leaked = floor((now - last) / interval)
    if leaked > 0 then
      level = math.max(0, level - leaked)
      last = last + leaked * interval
    end
  end
  level = math.max(0, level - floor(unspent(interval, now, cost, at) / interval))
  if level == 0 and last < now then last = now end
  put_ints(key, s, {level, last}, last + level * interval - now)
end
