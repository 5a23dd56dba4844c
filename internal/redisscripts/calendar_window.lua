-- calendar_window.lua: algorithms.cw, the Lua form of a FixedWindow counting one calendar
-- period (calendarWindow in package algorithms). The library finds the period on its clock and
-- passes it in the policy's string: its length in the window's place, its start (µs since the
-- epoch) in the burst's. State: string "period start:cost admitted in it", under a key of its
-- own per period, which lives until a minute (calendar_grace) after the period's end.
local calendar_grace = 60000000

-- cw_to_end is the time from now to the end of the period, at least 1: a server whose clock is
-- past the end (the library's clock picked the period, and runs behind) answers as at its last
-- instant.
local function cw_to_end(start, length, now)
  return math.max(start + length - now, 1)
end

local function write_cw(key, start, after, to_end)
  set_pair(key, start, after, to_end + calendar_grace)
end

-- The verdict's lines are algorithms.fw's (countUntil in Go, shared there): written out in
-- each, since a Lua function call is Redis time on every check.
algorithms.cw = function(key, now, limit, length, start, cost)
  -- A period over for more than the grace on the server's clock: the library's clock is that
  -- far behind, and its key is gone; counting it afresh would hand out its quota again.
  if now >= start + length + calendar_grace then
    return error('ratelimit: the calendar period of this check ended more than a minute ago on the Redis server\'s clock: the instance\'s clock is behind; set it right (NTP)')
  end
  local used = 0
  local ps, pu = get_pair(key)
  if ps == start then used = pu end
  local to_end = cw_to_end(start, length, now)
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
  return allowed and 1 or 0, math.max(limit - after, 0), reset, retry, 0, to_end, write_cw, start, after, to_end
end

refunds.cw = function(key, now, limit, length, start, cost, at)
  local s = get_ints(key, 2)
  if not s or s[1] ~= start then return end
  put_ints(key, s, {s[1], math.max(0, s[2] - cost)}, cw_to_end(start, length, now) + calendar_grace)
end
