-- reset.lua: forgets an identity's state.
-- KEYS: the state keys of the identity's policies (one cluster hash tag), n of them, then for
-- each the key of its leases' count (see lease_taken in fixed_window.lua: the state key and
-- ":lease"; for a field of the identity's hash, the hash again), declared so that a Cluster
-- node whose slot is moving answers TRYAGAIN when the two are split between the nodes, rather
-- than the reset reading no count on the one and forgetting what the leases hold (a script may
-- read a key it did not declare only where it is), then the key of the policy list's holds (see
-- holds.lua; the identity's hash tag), deleted with the state: a hold the reset forgot gives
-- nothing back when it expires, and its settle charges the whole actual. ARGV[1]: the channel
-- of announcements, for compact keys (see announce in check.lua); none, or "", for readable
-- keys. ARGV[1+i], for a store with hash state: the field of KEYS[i], the identity's hash,
-- that holds policy i's state, or "" for a policy with a key of its own.
-- Reply: the number of states deleted (a leasing fixed window's is set to its leases' units).
-- Like a refund, a reset first publishes the identity, as the keys hold it between their
-- braces, on the channel of the keys' prefix followed by "forget": a server that refuses it (an
-- ACL) fails the call before anything was deleted. Then it publishes the identity after a "!",
-- which says a reset: the instances that hear it end their quota leases of the identity (a
-- refund, which every lease's end makes, must not end the others'). Instances of a release
-- before this one hear the first message alone, as they did.
local k = KEYS[1]
local b = k and string.find(k, '{', 1, true)
local e = b and string.find(k, '}', b + 1, true)
local channel = ARGV[1]
if channel == '' then channel = nil end
if e then
  channel = channel or string.sub(k, 1, b - 1) .. 'forget'
  redis.call('PUBLISH', channel, string.sub(k, b + 1, e - 1))
  redis.call('PUBLISH', channel, '!' .. string.sub(k, b + 1, e - 1))
end
-- A fixed window's leases (see lease_taken in fixed_window.lua) keep the units they hold
-- counted: the state is reset to them, "window index:units", and each lease's end refunds what
-- it did not hand out. Units that a lease hands out after the reset, before its instance hears
-- of it (or never: a missed announcement), are so counted in the new window's count, and no
-- lease's refund gives back units that the reset forgot.
local n, nk = 0, (#KEYS - 1) / 2
redis.call('DEL', KEYS[#KEYS]) -- the holds: not a state, not counted
for i = 1, nk do
  local field = ARGV[1 + i]
  local leased
  if field and field ~= '' then
    n = n + redis.call('HDEL', KEYS[i], field)
    leased = redis.call('HGET', KEYS[i], field .. ':lease')
  else
    field = nil
    n = n + redis.call('DEL', KEYS[i])
    leased = redis.call('GET', KEYS[nk + i])
  end
  local w, units = string.match(leased or '', '^(%d+):(%d+)$')
  if units and units ~= '0' then
    if field then
      redis.call('HSET', KEYS[i], field, w .. ':' .. units) -- the hash lives as long as the lease's field
    else
      local ms = redis.call('PTTL', KEYS[nk + i])
      if ms > 0 then redis.call('SET', KEYS[i], w .. ':' .. units, 'PX', ms) end
    end
  end
end
return n
