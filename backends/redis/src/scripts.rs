//! The Lua scripts: every read-check-write of the Redis store is one of these, run
//! atomically by the server.
//!
//! Conventions. Times are the server's (`TIME`), in milliseconds. Numbers passed back to
//! `redis.call` go through `num` (`string.format('%d')`, or `'%.0f'` past 15 digits; Lua's
//! default formatting keeps 14 digits). A task hash holds `v` (version), `s` (status),
//! `b` (the record: everything else, opaque to Lua), `c` and `u` (created and updated, written only here), `q`
//! (creation sequence), `r` and `m` (the originating request id and method), `w` (the write
//! id of the last write), `j` (the job of a redeliverable task), and while a handler of
//! some instance runs the task, `l` (the deadline of its lease, `0` once handed over),
//! `la` (the attempt it runs) and `lh` (the name of the instance that took it). The owner's index (a sorted set of ids by sequence) and
//! sequence counter expire with the owner's last expiring task, and persist while one of
//! its tasks has no expiry. Outside a Redis Cluster, the store-wide index
//! `{prefix}:all` (task keys by a store-wide sequence, `{prefix}:all-n`) is what an
//! operator's listing across owners walks; its entries of tasks that expired are pruned by
//! the listing and by every instance's sweep ([`SWEEP`]).
//!
//! Replays are exact. The store sends a write again, on a fresh connection, when its
//! connection broke before the reply came back (a restart, a cut connection): the first
//! attempt may or may not have been applied. Each write carries a random write id, kept
//! with what it wrote, so a replay that finds its own write answers as the first attempt
//! did and changes nothing more: `CREATE` finds the task with its write id, `COMMIT` finds
//! version `v + 1` with its write id, `REMOVE` finds the tombstone it left (for
//! [`REPLAY_WINDOW_MS`]).
//!
//! Events. `CREATE` and `COMMIT` publish the task as written, with its version, on the
//! store's channel: `tag\nid\nnotify\nversion\nstatus\ncreated\nupdated\nrecord`
//! (`notify` is `'1'` when the wire-visible task changed, always `'0'` for a creation);
//! `REMOVE` publishes `tag\nid\n0`; a hand-over (`RENEW`) `tag\nid\nclaimable`: the text
//! [`ChangeEvent::parse`](mcp_tasks::backend::ChangeEvent::parse) reads. So every instance
//! holds the latest version of the unfinished tasks and decides a change on it, written in
//! one round trip when the version still holds.

/// Shared Lua helpers, prepended to the scripts that need them.
const HELPERS: &str = r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function num(n)
  if n < 1e15 and n > -1e15 then
    -- Integer formatting: half the time of '%.0f' (every number here is whole).
    return string.format('%d', n)
  end
  return string.format('%.0f', n)
end
local function finished(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
-- Keeps an owner's index or counter at least until `expires_at` (nil: forever), given its
-- `PEXPIRETIME` before this script wrote it (`-2`: it did not exist, `-1`: no expiry). A
-- key without expiry that existed stays so: one of the owner's tasks has no expiry.
-- `text`: `expires_at` formatted already, if it was.
local function keep(key, expires_at, current, text)
  if expires_at == nil then
    if current >= 0 then
      redis.call('PERSIST', key)
    end
  elseif current == -2 or (current >= 0 and current < expires_at) then
    redis.call('PEXPIREAT', key, text or num(expires_at))
  end
end
";

/// How long a removed task's tombstone lets a replayed `REMOVE` answer as the first one.
pub(crate) const REPLAY_WINDOW_MS: u64 = 30_000;

/// Creates a task.
///
/// KEYS: task, index, counter, then for a leased task the store's lease index, then where
/// the store-wide index is kept, it and its counter. ARGV: id, record, ttl (`''` =
/// unlimited), per-owner limit (`''` = none), request id (JSON), method, write id, lease
/// length in ms (`''` = no lease), channel, owner tag, the job of a redeliverable task
/// (`''` = none; kept in `j`), `'1'` where the store-wide index is kept, and the name of
/// the creating instance (kept in `lh` with a lease).
/// Returns (as strings) `{'ok', created}`, `{'limit', count}` or `{'exists'}`; a replay of
/// a create that was applied answers `{'ok', created}` again (without publishing).
pub(crate) const CREATE: &str = r"
local written = redis.call('HMGET', KEYS[1], 'w', 'c')
if written[2] then
  if written[1] == ARGV[7] then
    return {'ok', written[2]}
  end
  return {'exists'}
end
local limit = tonumber(ARGV[4])
if limit then
  local count = redis.call('ZCARD', KEYS[2])
  if count >= limit then
    -- Forget index entries of tasks that expired or were removed, then count again.
    local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[1])
    for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
      if redis.call('EXISTS', prefix .. id) == 0 then
        redis.call('ZREM', KEYS[2], id)
      end
    end
    count = redis.call('ZCARD', KEYS[2])
    if count >= limit then
      return {'limit', tostring(count)}
    end
  end
end
-- The task does not exist: every task's hash holds `c` (the first read).
local now = now_ms()
local ttl = tonumber(ARGV[3])
local expiry = ttl and num(now + ttl)
-- The owner's index keeps at least this task's expiry. Where it exists with an earlier
-- one (the common case), `GT` pushes it on in one command; otherwise (no expiry, a later
-- one, or no index yet: `GT` leaves each alone) `keep` decides on its `PEXPIRETIME`
-- once the index is written.
local index_expiry
local pushed = ttl and redis.call('PEXPIREAT', KEYS[2], expiry, 'GT') == 1
if not pushed then
  index_expiry = redis.call('PEXPIRETIME', KEYS[2])
end
-- The counter is written with the expiry `keep` would give it, in the same command.
local at = num(now)
local last
if pushed then
  -- The index expired before this task will, so every indexed task does (an index
  -- holding a task without expiry has none): the counter needs no more than this
  -- task's expiry, and no `PEXPIRETIME` of its own.
  last = redis.call('SET', KEYS[3], at, 'PXAT', expiry, 'GET')
else
  local counter_expiry = redis.call('PEXPIRETIME', KEYS[3])
  if not ttl then
    last = redis.call('SET', KEYS[3], at, 'GET')
  elseif counter_expiry == -2 or (counter_expiry >= 0 and counter_expiry < now + ttl) then
    last = redis.call('SET', KEYS[3], at, 'PXAT', expiry, 'GET')
  else
    last = redis.call('SET', KEYS[3], at, 'KEEPTTL', 'GET')
  end
end
-- Sequence numbers grow with time, so they keep growing if the counter expired. The
-- counter was written with the clock's time and answered the last number (one command);
-- where the sequence ran ahead of the clock, it is written again.
local seq = math.max(tonumber(last or '0') + 1, now)
local position = at
if seq ~= now then
  position = num(seq)
  redis.call('SET', KEYS[3], position, 'KEEPTTL')
end
local lease = tonumber(ARGV[8])
local extra = 4
if lease or ARGV[11] ~= '' then
  -- A leased or redeliverable task: its extra fields in the same write.
  local fields = {'v', '1', 's', 'working', 'b', ARGV[2], 'c', at, 'u', at, 'q', position,
    'r', ARGV[5], 'm', ARGV[6], 'w', ARGV[7]}
  if lease then
    local deadline = num(now + lease)
    table.insert(fields, 'l')
    table.insert(fields, deadline)
    table.insert(fields, 'lh')
    table.insert(fields, ARGV[13])
    redis.call('ZADD', KEYS[4], deadline, KEYS[1])
    extra = 5
  end
  if ARGV[11] ~= '' then
    table.insert(fields, 'j')
    table.insert(fields, ARGV[11])
    if lease then
      table.insert(fields, 'la')
      table.insert(fields, '1')
    end
  end
  redis.call('HSET', KEYS[1], unpack(fields))
else
  redis.call('HSET', KEYS[1], 'v', '1', 's', 'working', 'b', ARGV[2], 'c', at, 'u', at,
    'q', position, 'r', ARGV[5], 'm', ARGV[6], 'w', ARGV[7])
end
redis.call('ZADD', KEYS[2], position, ARGV[1])
if ARGV[12] == '1' then
  -- Creations across owners outrun the clock: one `INCR` then, a `SET` where it lags.
  local all = redis.call('INCR', KEYS[extra + 1])
  if all < now then
    all = now
    redis.call('SET', KEYS[extra + 1], at)
  end
  redis.call('ZADD', KEYS[extra], num(all), KEYS[1])
end
if ttl then
  redis.call('PEXPIREAT', KEYS[1], expiry)
end
if index_expiry then
  keep(KEYS[2], ttl and now + ttl, index_expiry, expiry)
end
redis.call('PUBLISH', ARGV[9], ARGV[10] .. '\n' .. ARGV[1] .. '\n0\n1\nworking\n' .. at .. '\n'
  .. at .. '\n' .. ARGV[2])
return {'ok', at}
";

/// Writes a task decided by the caller on version `v`, if it is still at `v` and the move
/// is one the spec's table allows; publishes the change in the same step.
///
/// KEYS: task, then for a claim the lease index, then where the change sets another ttl
/// (ARGV 11 below) the owner's index and counter. ARGV: version, status,
/// record, ttl (`''` = unlimited), notify (`'1'` when the wire-visible task changed),
/// channel, owner tag, id, write id, `'lapsed'` to write only if the task's lease has
/// lapsed or `'claim'` to write only if it lapsed at least a back-off ago and then hold a
/// new lease (`''` otherwise), `'1'` when the change sets another ttl than the task's at
/// that version (`''` otherwise: its expiry, and its owner's index and counter's, stay as
/// they are), the next version, for a claim the back-off, the new lease's length in ms and
/// the attempt it runs (kept in `la`; `''` each otherwise; a claim answers the task's job
/// after `updated`), `'1'` to keep the task's last update as stored (`''` otherwise), and
/// the writing instance's name (kept in `lh` by a claim).
///
/// The common change is four commands: read, clock, write, publish.
/// Returns (as strings) `{'ok', updated}`, `{'gone'}`, `{'illegal', status}`, or
/// `{'stale', version, status, record, created, updated}` (the task as it is, so the
/// change is decided again without another read), or `{'renewed'}` when the lease it
/// required lapsed was renewed; a replay of a commit that was applied (and not followed by
/// another write) answers `{'ok', updated}` again, without writing or publishing.
pub(crate) const COMMIT: &str = r"
local current = redis.call('HMGET', KEYS[1], 'v', 's', 'c', 'u', 'w')
if not current[1] then
  return {'gone'}
end
if current[1] ~= ARGV[1] then
  if current[5] == ARGV[9] and tonumber(current[1]) == tonumber(ARGV[1]) + 1 then
    return {'ok', current[4]}
  end
  return {'stale', current[1], current[2], redis.call('HGET', KEYS[1], 'b'), current[3],
    current[4]}
end
local now = now_ms()
if ARGV[10] == 'lapsed' then
  local lease = tonumber(redis.call('HGET', KEYS[1], 'l'))
  if not lease or lease > now then
    return {'renewed'}
  end
elseif ARGV[10] == 'claim' then
  local lease = tonumber(redis.call('HGET', KEYS[1], 'l'))
  if not lease or lease + tonumber(ARGV[13]) > now then
    return {'renewed'}
  end
  local deadline = num(now + tonumber(ARGV[14]))
  redis.call('HSET', KEYS[1], 'l', deadline, 'la', ARGV[15], 'lh', ARGV[17])
  redis.call('ZADD', KEYS[2], deadline, KEYS[1])
end
-- The spec's table: an unfinished status moves to any other; a finished one to none.
local from, to = current[2], ARGV[2]
if from ~= to and finished(from) then
  return {'illegal', from}
end
-- Each number is formatted once (formatting costs as much as a command).
local created, updated = current[3], current[4]
if ARGV[16] ~= '1' and now > tonumber(updated) then
  updated = num(now)
end
redis.call('HSET', KEYS[1], 'v', ARGV[12], 's', to, 'b', ARGV[3], 'u', updated, 'w', ARGV[9])
if ARGV[11] == '1' then
  -- The index and counter are the last two keys.
  local index, counter = KEYS[#KEYS - 1], KEYS[#KEYS]
  created = tonumber(created)
  local ttl = tonumber(ARGV[4])
  local index_expiry = redis.call('PEXPIRETIME', index)
  local counter_expiry = redis.call('PEXPIRETIME', counter)
  if ttl then
    redis.call('PEXPIREAT', KEYS[1], num(created + ttl))
    keep(index, created + ttl, index_expiry)
    keep(counter, created + ttl, counter_expiry)
  else
    redis.call('PERSIST', KEYS[1])
    keep(index, nil, index_expiry)
    keep(counter, nil, counter_expiry)
  end
end
redis.call('PUBLISH', ARGV[6], ARGV[7] .. '\n' .. ARGV[8] .. '\n' .. ARGV[5] .. '\n' .. ARGV[12]
  .. '\n' .. to .. '\n' .. current[3] .. '\n' .. updated .. '\n' .. ARGV[3])
if ARGV[10] == 'claim' then
  return {'ok', updated, redis.call('HGET', KEYS[1], 'j') or ''}
end
return {'ok', updated}
";

/// Removes a task and publishes it, leaving a tombstone (its fields and the write id) for
/// [`REPLAY_WINDOW_MS`].
///
/// KEYS: task, index, tombstone, and where it is kept the store-wide index. ARGV: id,
/// channel, owner tag, write id, replay window.
/// Returns `{status, record, created, updated}` or `{}` if there is no such task; a replay
/// of a remove that was applied answers the same fields again.
pub(crate) const REMOVE: &str = r"
local fields = redis.call('HMGET', KEYS[1], 's', 'b', 'c', 'u')
if not fields[1] then
  local gone = redis.call('HMGET', KEYS[3], 'w', 's', 'b', 'c', 'u')
  if gone[1] == ARGV[4] then
    return {gone[2], gone[3], gone[4], gone[5]}
  end
  return {}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[3], 'w', ARGV[4], 's', fields[1], 'b', fields[2], 'c', fields[3],
  'u', fields[4])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
redis.call('ZREM', KEYS[2], ARGV[1])
if KEYS[4] then
  redis.call('ZREM', KEYS[4], KEYS[1])
end
redis.call('PUBLISH', ARGV[2], ARGV[3] .. '\n' .. ARGV[1] .. '\n0')
return fields
";

/// Renews, or gives up, the leases an instance holds.
///
/// KEYS: the lease index. ARGV: lease length in ms, channel, then per lease the task key,
/// `'k'` (keep: renew), `'r'` (release: the handle was detached) or `'h'` (hand over: the
/// lease lapses now, and the task is claimable at once by another instance, told on the
/// channel as `tag\nid\nclaimable`), and the attempt the lease runs (`''` for a task
/// that runs once): a lease of another attempt (`la`) is not this one's, and answers
/// `'gone'`.
/// Returns per lease: `'ok'` (renewed), `'released'`, `'gone'` (the task is gone,
/// finished, or holds no lease) or `'lapsed'` (too late: it is failed or claimed by the
/// next instance that sees it, and this instance stops renewing it).
pub(crate) const RENEW: &str = r"
local now = now_ms()
local deadline = num(now + tonumber(ARGV[1]))
local out = {}
for i = 3, #ARGV, 3 do
  local key, op, attempt = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local fields = redis.call('HMGET', key, 's', 'l', 'la')
  local verdict
  if not fields[1] or not fields[2] or finished(fields[1]) then
    redis.call('ZREM', KEYS[1], key)
    verdict = 'gone'
  elseif attempt ~= '' and fields[3] ~= attempt then
    verdict = 'gone'
  elseif op == 'r' then
    redis.call('HDEL', key, 'l', 'lh')
    redis.call('ZREM', KEYS[1], key)
    verdict = 'released'
  elseif tonumber(fields[2]) < now then
    verdict = 'lapsed'
  elseif op == 'h' then
    redis.call('HSET', key, 'l', '0')
    redis.call('ZADD', KEYS[1], '0', key)
    local tag, id = string.match(key, '{([^}]*)}:t:(.*)$')
    redis.call('PUBLISH', ARGV[2], tag .. '\n' .. id .. '\nclaimable')
    verdict = 'released'
  else
    redis.call('HSET', key, 'l', deadline)
    redis.call('ZADD', KEYS[1], deadline, key)
    verdict = 'ok'
  end
  table.insert(out, verdict)
end
return out
";

/// Up to `count` lapsed leases, as task key and deadline pairs (flat), soonest first,
/// forgetting index entries of tasks that are gone, finished or no longer leased, and
/// re-filing those renewed since (entries that leave the range: the lapsed ones kept are
/// the first of what is left of it, so the next batch starts after them). It looks at no
/// more than ten times `count` entries.
///
/// KEYS: the lease index. ARGV: count.
pub(crate) const LAPSED: &str = r"
local now = now_ms()
local want = tonumber(ARGV[1])
local out = {}
local kept, looked = 0, 0
while kept < want and looked < 10 * want do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now), 'LIMIT', kept,
    want - kept)
  if #due == 0 then
    break
  end
  for _, key in ipairs(due) do
    looked = looked + 1
    local fields = redis.call('HMGET', key, 's', 'l')
    if not fields[1] or not fields[2] or finished(fields[1]) then
      redis.call('ZREM', KEYS[1], key)
    elseif tonumber(fields[2]) > now then
      redis.call('ZADD', KEYS[1], fields[2], key)
    else
      table.insert(out, key)
      table.insert(out, fields[2])
      kept = kept + 1
    end
  end
end
return out
";

/// One page of an owner's tasks after a sequence number, forgetting index entries of
/// tasks that are gone.
///
/// KEYS: index. ARGV: task key prefix, after (`''` = from the start), count.
/// Returns a flat array: id, sequence, status, record, created, updated; per task.
pub(crate) const LIST: &str = r"
local want = tonumber(ARGV[3])
local start = '-inf'
if ARGV[2] ~= '' then
  start = '(' .. ARGV[2]
end
local out = {}
local found = 0
while found < want do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[1], start, '+inf', 'WITHSCORES',
    'LIMIT', 0, want - found)
  if #batch == 0 then
    break
  end
  for i = 1, #batch, 2 do
    local id, seq = batch[i], batch[i + 1]
    local fields = redis.call('HMGET', ARGV[1] .. id, 's', 'b', 'c', 'u')
    if fields[1] then
      for _, value in ipairs({id, seq, fields[1], fields[2], fields[3], fields[4]}) do
        table.insert(out, value)
      end
      found = found + 1
    else
      redis.call('ZREM', KEYS[1], id)
    end
    start = '(' .. seq
  end
end
return out
";

/// One page of every owner's tasks after a store-wide sequence number, forgetting index
/// entries of tasks that are gone; it looks at no more than `budget` entries.
///
/// KEYS: the store-wide index. ARGV: after (`''` = from the start), count, budget, and the
/// statuses kept, as `,status,status,` (`''` = any).
/// Returns a flat array: where the next page starts (`''` once the end is reached), then
/// per task: task key, sequence, status, record, created, updated, lease deadline and
/// holder (`''` each for none, and for a finished task).
pub(crate) const PAGE_ALL: &str = r"
local want, budget = tonumber(ARGV[2]), tonumber(ARGV[3])
local start = '-inf'
if ARGV[1] ~= '' then
  start = '(' .. ARGV[1]
end
local out = {''}
local found, looked, last = 0, 0, ''
while found < want and looked < budget do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[1], start, '+inf', 'WITHSCORES',
    'LIMIT', 0, math.min(want - found, budget - looked))
  if #batch == 0 then
    return out
  end
  for i = 1, #batch, 2 do
    local key, seq = batch[i], batch[i + 1]
    looked = looked + 1
    local fields = redis.call('HMGET', key, 's', 'b', 'c', 'u', 'l', 'lh')
    if not fields[1] then
      redis.call('ZREM', KEYS[1], key)
    elseif ARGV[4] == '' or string.find(ARGV[4], ',' .. fields[1] .. ',', 1, true) then
      local lease, holder = fields[5] or '', fields[6] or ''
      if finished(fields[1]) then
        lease, holder = '', ''
      end
      for _, value in ipairs({key, seq, fields[1], fields[2], fields[3], fields[4], lease,
          holder}) do
        table.insert(out, value)
      end
      found = found + 1
    end
    last = seq
    start = '(' .. seq
  end
end
out[1] = last
return out
";

/// Forgets up to `count` entries of the store-wide index after a sequence number whose
/// task is gone (expired); answers where the next sweep starts (`''`: from the start).
///
/// KEYS: the store-wide index. ARGV: after (`''` = from the start), count.
pub(crate) const SWEEP: &str = r"
local start = '-inf'
if ARGV[1] ~= '' then
  start = '(' .. ARGV[1]
end
local batch = redis.call('ZRANGEBYSCORE', KEYS[1], start, '+inf', 'WITHSCORES', 'LIMIT', 0,
  tonumber(ARGV[2]))
local last = ''
for i = 1, #batch, 2 do
  if redis.call('EXISTS', batch[i]) == 0 then
    redis.call('ZREM', KEYS[1], batch[i])
  end
  last = batch[i + 1]
end
if #batch < 2 * tonumber(ARGV[2]) then
  return ''
end
return last
";

/// The source of a script with the helpers it uses.
pub(crate) fn source(script: &str) -> String {
    format!("{HELPERS}\n{script}")
}
