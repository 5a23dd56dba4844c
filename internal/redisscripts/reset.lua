-- reset.lua: forgets an identity's state.
-- KEYS: the state keys of the identity's policies (one cluster hash tag). ARGV: none.
-- Reply: the number of keys deleted.
local n = 0
for i = 1, #KEYS do n = n + redis.call('DEL', KEYS[i]) end
return n
