-- fleet_gone.lua: deletes the records of instances gone from the fleet hash, those a reader
-- found expired or malformed, unless an instance recorded its state since: each record is
-- deleted only when its <field>:seen still holds what the reader read (fleet.lua rewrites it
-- at every record, with the server's TIME), so a record renewed meanwhile stays.
-- KEYS[1]: the fleet hash (rules.FleetKey). ARGV: for each record, three values: its state
-- field, its seen field, and the value the reader read in the seen field.
-- Reply: how many records were deleted.
local deleted = 0
for i = 1, #ARGV, 3 do
  if redis.call('HGET', KEYS[1], ARGV[i + 1]) == ARGV[i + 2] then
    redis.call('HDEL', KEYS[1], ARGV[i], ARGV[i + 1])
    deleted = deleted + 1
  end
end
return deleted
