-- fleet.lua: records the state of one instance watching the rules.
-- KEYS[1]: the fleet hash (rules.FleetKey). ARGV[1]: the instance's field, its name as
-- fleetField escapes it (no field is another's <field>:seen); ARGV[2]: its state,
-- JSON; ARGV[3]: how long the record lives unless renewed, in milliseconds.
-- The field <field> holds the state and <field>:seen "<seen>:<expires>", Unix milliseconds of
-- the server's TIME, so that every reader judges every record on one clock. The hash itself
-- expires when no instance renews any record: each record makes it live at least ten of its
-- own lifetimes, never less than it would have (instances may have different heartbeats).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], ARGV[1] .. ':seen', string.format('%d:%d', now, now + ttl))
if redis.call('PTTL', KEYS[1]) < 10 * ttl then
  redis.call('PEXPIRE', KEYS[1], 10 * ttl)
end
return now
