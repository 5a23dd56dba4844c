-- reset.lua: forgets an identity's state.
-- KEYS: the state keys of the identity's policies (one cluster hash tag). ARGV[1]: the channel
-- of announcements, for compact keys (see announce in check.lua); none for readable keys.
-- Reply: the number of keys deleted. Like a refund, a reset first publishes the identity, as
-- the keys hold it between their braces, on the channel of the keys' prefix followed by
-- "forget": a server that refuses it (an ACL) fails the call before anything was deleted.
local k = KEYS[1]
local b = k and string.find(k, '{', 1, true)
local e = b and string.find(k, '}', b + 1, true)
if e then redis.call('PUBLISH', ARGV[1] or string.sub(k, 1, b - 1) .. 'forget', string.sub(k, b + 1, e - 1)) end
local n = 0
for i = 1, #KEYS do n = n + redis.call('DEL', KEYS[i]) end
return n
