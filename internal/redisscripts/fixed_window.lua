-- fixed_window.lua: algorithms.fw, the Lua form of algorithms.FixedWindow.
-- State: string "window index:cost admitted in it".
local function write_fw(key, k, after, to_end)
  set_ints(key, {k, after}, to_end)
end

algorithms.fw = function(key, now, limit, window, burst, cost)
  local k = floor(now / window)
  local used = 0
  local s = get_ints(key, 2)
  if s and s[1] > k then k = s[1] end -- the clock went back: stay in the state's window
  if s and s[1] == k then used = s[2] end
  local to_end = (k + 1) * window - now
  local allowed = cost == 0 or used + cost <= limit -- cost 0 reads, even over a lowered limit
  local after, retry, reset = used, 0, 0
  if allowed then
    after = used + cost
  elseif cost > limit then
    retry = -1
  else
    retry = to_end
  end
  if after > 0 then reset = to_end end
  return allowed and 1 or 0, math.max(limit - after, 0), reset, retry, 0, to_end, write_fw, k, after, to_end
end

refunds.fw = function(key, now, limit, window, burst, cost, at)
  local s = get_ints(key, 2)
  if not s or s[1] ~= floor(at / window) then return end
  put_ints(key, s, {s[1], math.max(0, s[2] - cost)}, (s[1] + 1) * window - now)
end
