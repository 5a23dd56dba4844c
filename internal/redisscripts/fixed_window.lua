-- fixed_window.lua: algorithms.fw, the Lua form of algorithms.FixedWindow.
-- State: string "window index:cost admitted in it".
-- write_fw writes the state; same says the key holds state of the same window, whose expiry
-- (the window's end) it keeps.
local function write_fw(key, k, after, to_end, same)
  set_pair(key, k, after, to_end, same)
end

algorithms.fw = function(key, now, limit, window, burst, cost)
  local k = floor(now / window)
  local used, same = 0, false
  local sk, su = get_pair(key)
  if sk and sk > k then k = sk end -- the clock went back: stay in the state's window
  if sk == k then used, same = su, true end
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
  return allowed and 1 or 0, math.max(limit - after, 0), reset, retry, 0, to_end, write_fw, k, after, to_end, same
end

-- A fixed window that leases (Policy.Lease) also keeps, beside its state, the units that the
-- leases of its window hold, which a reset leaves counted (see reset.lua): "window index:units",
-- under the state's key followed by ":lease" (a field of that name, with hash state). A lease's
-- check adds its units (lease_taken); its end, the refund of what it did not use, takes them
-- off (lease_ended).
local function lease_get(key)
  local v
  if hkey then v = redis.call('HGET', hkey, key .. ':lease') else v = redis.call('GET', key .. ':lease') end
  if not v then return nil end
  return parse_ints(key .. ':lease', v, 2)
end

-- lease_taken counts units leased by a check that charged them in window index k, which ends
-- in to_end microseconds.
local function lease_taken(key, k, units, to_end)
  local s = lease_get(key)
  if s and s[1] == k then units = units + s[2] end
  set_ints(key .. ':lease', {k, units}, to_end)
end

-- lease_ended takes off the units of a lease that charged them at time at.
local function lease_ended(key, now, window, units, at)
  local s = lease_get(key)
  local k = floor(at / window)
  if not s or s[1] ~= k then return end
  local left, to_end = s[2] - units, (k + 1) * window - now
  if left <= 0 or to_end <= 0 then
    sdel(key .. ':lease')
  else
    set_ints(key .. ':lease', {k, left}, to_end)
  end
end

refunds.fw = function(key, now, limit, window, burst, cost, at)
  local s = get_ints(key, 2)
  if not s or s[1] ~= floor(at / window) then return end
  put_ints(key, s, {s[1], math.max(0, s[2] - cost)}, (s[1] + 1) * window - now)
end
