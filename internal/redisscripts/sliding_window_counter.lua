-- sliding_window_counter.lua: algorithms.sc, the Lua form of algorithms.SlidingCounter.
-- State: string "window index:current window's cost:previous window's cost".
-- The float expressions keep the Go code's order of operations, so both agree to the bit.
local function write_sc(key, k, after, prev, ttl)
  set_ints(key, {k, after, prev}, ttl)
end

-- fits is the Go counterFits: whether, at time at, the estimate of a state holding cur in
-- window k and prev in the one before admits cost, computed as the check computes it.
local function fits(k, window, limit, cur, prev, cost, at)
  local est = 0
  local ka = floor(at / window)
  if ka == k then
    est = prev * (window - (at - k * window)) / window + cur
  elseif ka == k + 1 then
    est = cur * (window - (at - (k + 1) * window)) / window + 0
  end
  return est + cost <= limit
end

-- room_at is when, in window k holding cur with prev in the one before, the estimate leaves
-- room for cost, which it does not now (the Go counterRoom): solved for, then moved on a
-- microsecond at a time, at most 16, until the estimate admits cost.
local function room_at(k, window, limit, cur, prev, cost)
  local at
  local room = limit - cur - cost
  if room >= 0 then
    at = k * window + ceil(window - room * window / prev)
  else
    at = (k + 1) * window
    local e = window - (limit - cost) * window / cur
    if e > 0 then at = at + ceil(e) end
  end
  local i = 0
  while i < 16 and not fits(k, window, limit, cur, prev, cost, at) do
    at, i = at + 1, i + 1
  end
  return at
end

algorithms.sc = function(key, now, limit, window, burst, cost)
  local k = floor(now / window)
  local cur, prev = 0, 0
  local s = get_ints(key, 3)
  if s and s[1] > k then k = s[1] end -- the clock went back: stay in the state's window
  if s then
    if s[1] == k then
      cur, prev = s[2], s[3]
    elseif s[1] == k - 1 then
      prev = s[2]
    end
  end
  local elapsed = now - k * window
  if elapsed < 0 then elapsed = 0 end -- the clock went back before the state's window
  local est = prev * (window - elapsed) / window + cur
  local allowed = cost == 0 or est + cost <= limit
  local after, retry, reset = cur, 0, 0
  if allowed then
    est = est + cost
    after = cur + cost
  elseif cost > limit then
    retry = -1
  else
    retry = room_at(k, window, limit, cur, prev, cost) - now
  end
  local remaining = floor(limit - est)
  if remaining < 0 then remaining = 0 end
  if after > 0 then
    reset = (k + 2) * window - now
  elseif prev > 0 then
    reset = (k + 1) * window - now
  end
  local next = room_at(k, window, limit, after + remaining, prev, 1) - now
  return allowed and 1 or 0, remaining, reset, retry, 0, next, write_sc, k, after, prev, (k + 2) * window - now
end

refunds.sc = function(key, now, limit, window, burst, cost, at)
  local s = get_ints(key, 3)
  if not s then return end
  local k = floor(now / window)
  if s[1] > k then k = s[1] end
  local cur, prev = 0, 0
  if s[1] == k then
    cur, prev = s[2], s[3]
  elseif s[1] == k - 1 then
    prev = s[2]
  end
  local ka = floor(at / window)
  if ka == k then
    cur = math.max(0, cur - cost)
  elseif ka == k - 1 then
    prev = math.max(0, prev - cost)
  end
  put_ints(key, s, {k, cur, prev}, (k + 2) * window - now)
end
