-- reset.lua: forgets an identity's state.
-- KEYS: the state keys of the identity's policies (one cluster hash tag). ARGV[1]: the channel
-- of announcements, for compact keys (see announce in check.lua); none, or "", for readable
-- keys. ARGV[1+i], for a store with hash state: the field of KEYS[i], the identity's hash,
-- that holds policy i's state, or "" for a policy with a key of its own.
-- Reply: the number of states deleted. Like a refund, a reset first publishes the identity, as
-- the keys hold it between their braces, on the channel of the keys' prefix followed by
-- "forget": a server that refuses it (an ACL) fails the call before anything was deleted.
local k = KEYS[1]
local b = k and string.find(k, '{', 1, true)
local e = b and string.find(k, '}', b + 1, true)
local channel = ARGV[1]
if channel == '' then channel = nil end
if e then redis.call('PUBLISH', channel or string.sub(k, 1, b - 1) .. 'forget', string.sub(k, b + 1, e - 1)) end
local n = 0
for i = 1, #KEYS do
  local field = ARGV[1 + i]
  if field and field ~= '' then
    n = n + redis.call('HDEL', KEYS[i], field)
  else
    n = n + redis.call('DEL', KEYS[i])
  end
end
return n
