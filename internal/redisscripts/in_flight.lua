-- in_flight.lua: algorithms['if'], the Lua form of algorithms.InFlight: the sliding log's, with
-- the window as a slot's lifetime, no next (a slot comes back when its request ends), and a renewal.
-- The sliding log is looked up when called, so the order the files load in does not matter.
algorithms['if'] = function(key, now, limit, window, burst, cost)
  return algorithms.sl(key, now, limit, window, burst, cost, true)
end

refunds['if'] = function(key, now, limit, window, burst, cost, at)
  return refunds.sl(key, now, limit, window, burst, cost, at)
end

-- Gives back the slots taken at `at`, then takes them again at now, whatever the others hold:
-- their request is still running.
renews['if'] = function(key, now, limit, window, burst, cost, at)
  refunds.sl(key, now, limit, window, burst, cost, at)
  local _, _, _, _, _, _, write, v1, v2, v3, v4, v5, v6 = algorithms.sl(key, now, limit, window, burst, cost, true)
  write(key, v1, v2, v3, v4, v5, v6)
end
