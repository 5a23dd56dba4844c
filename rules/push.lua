-- push.lua: replaces the rules document stored at a key, and announces its version.
-- KEYS[1]: the hash of the stored document; its name is also the channel's.
-- ARGV[1]: the document's version; ARGV[2]: its file name; ARGV[3]: the document.
-- Reply: pushed_at as stored, the Unix milliseconds of the server's TIME, as a string.
--
-- The hash is replaced whole (no field of an older document survives) and the version
-- published in the same atomic step: a reader sees the old document or the new one, and a
-- subscriber hears of the new one only once it is there. pushed_at is written from TIME's
-- seconds and microseconds as text, so no number passes through Lua's doubles.
local t = redis.call('TIME')
local ms = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'name', ARGV[2], 'document', ARGV[3], 'pushed_at', ms)
redis.call('PUBLISH', KEYS[1], ARGV[1])
return ms
