-- token_bucket.lua: algorithms.tb, the Lua form of algorithms.TokenBucket.
-- State: string "tokens:start of the current refill interval". Absent: a full bucket.
algorithms.tb = function(key, now, limit, window, burst, cost)
  local capacity, interval = capacity_of(limit, burst), interval_of(limit, window)
  local tokens, last = capacity, now
  local s = get_ints(key, 2)
  if s then tokens, last = s[1], s[2] end
  if now > last then
    local add = floor((now - last) / interval)
    if add > 0 then
      tokens = math.min(capacity, tokens + add)
      last = last + add * interval
    end
  end
  if tokens >= capacity and last < now then last = now end
  local allowed = cost <= tokens
  local after, retry, reset = tokens, 0, 0
  if allowed then
    after = tokens - cost
  elseif cost > capacity then
    retry = -1
  else
    retry = last + (cost - tokens) * interval - now
  end
  if after < capacity then reset = last + (capacity - after) * interval - now end
  return {allowed and 1 or 0, after, reset, retry, 0}, function()
    set_ints(key, {after, last}, last + (capacity - after) * interval - now)
  end
end

refunds.tb = function(key, now, limit, window, burst, cost, at)
  local capacity, interval = capacity_of(limit, burst), interval_of(limit, window)
  local s = get_ints(key, 2)
  if not s then return end
  local tokens, last = s[1], s[2]
  if now > last then
    local add = floor((now - last) / interval)
    if add > 0 then
      tokens = math.min(capacity, tokens + add)
      last = last + add * interval
    end
  end
  if tokens >= capacity and last < now then last = now end
  tokens = math.min(capacity, tokens + floor(unspent(interval, now, cost, at) / interval))
  put_ints(key, s, {tokens, last}, last + (capacity - tokens) * interval - now)
end
