//! The schema: tables, indexes and the server-side functions every change runs in,
//! versioned and applied in order by [`migrate`], under an advisory lock, so that several
//! instances starting at once apply each migration exactly once.
//!
//! Conventions. Times are the server's clock (`clock_timestamp()`), in milliseconds since
//! the Unix epoch (`bigint`). A task row holds its version, status, record (`body`: the
//! core's stored form, opaque to SQL), created/updated, its expiry (`created + ttl`), the
//! originating request id (JSON) and method, the write id of its last write, the job of a
//! redeliverable task, and while a handler of some instance runs it, the deadline of its
//! lease (`0`: handed over), the attempt it runs and the instance that took it. An owner's creation sequence lives in
//! `owners` (its row also serializes the owner's creates, so that the per-owner limit is
//! counted exactly). `removed` keeps a removed task's fields and write id for a replay.
//!
//! The common create (without a per-owner limit) and the common commit are also written as
//! one plain statement each ([`statements`](crate::statements)), which lands only where the
//! function would write, and writes what it would; the function decides whatever else.
//!
//! Every function decides within one statement's call, on rows it locks (`FOR UPDATE`),
//! in `READ COMMITTED`: each statement inside a function reads what was committed before
//! it started, and the row lock makes a concurrent writer of the same task wait and then
//! see the latest version. That is all a version check needs; nothing here reads a set of
//! rows to decide a write except the per-owner count, which runs after the owner's row is
//! locked.
//!
//! Events. The event of a write is the task as written with its version,
//! `tag\nid\nnotify\nversion\nstatus\ncreated\nupdated\nrecord`, or without the record
//! (and the two times) when it would not fit a notification; of a removal `tag\nid\n0`; of
//! a hand-over `tag\nid\nclaimable`. Up to version 2, `create_task`, `commit_task` and
//! `remove_task` sent it in the writing transaction; since version 3 they send nothing when
//! their channel is `NULL`, which this build passes: the instance sends the events of its
//! committed writes itself, many in one transaction of a connection of its own
//! ([`announce`](crate::announce)), since PostgreSQL commits notifying transactions one at
//! a time. (An instance of an older build, still running while the schema is migrated,
//! passes its channel and keeps notifying in its writes.)

use tokio_postgres::Client;

/// The schema version this build writes and reads.
pub(crate) const VERSION: i32 = 5;

/// The advisory lock key migrations hold (any 64-bit number unlikely to be another's).
const MIGRATION_LOCK: i64 = 0x6d63_705f_7461_736b;

/// The migrations, in order: version and SQL (`{s}` stands for the quoted schema name).
const MIGRATIONS: &[(i32, &str)] = &[(1, V1), (2, V2), (3, V3), (4, V4), (5, V3)];

const V1: &str = r#"
CREATE TABLE {s}.tasks (
  id uuid PRIMARY KEY,
  owner text NOT NULL,
  seq bigint NOT NULL,
  version bigint NOT NULL,
  status text NOT NULL,
  body text NOT NULL,
  created bigint NOT NULL,
  updated bigint NOT NULL,
  expires bigint,
  request_id text NOT NULL,
  method text NOT NULL,
  write_id uuid NOT NULL,
  job text,
  lease bigint,
  lease_attempt integer,
  UNIQUE (owner, seq)
);
CREATE INDEX tasks_lease ON {s}.tasks (lease) WHERE lease IS NOT NULL;
CREATE INDEX tasks_expires ON {s}.tasks (expires) WHERE expires IS NOT NULL;
CREATE TABLE {s}.owners (owner text PRIMARY KEY, seq bigint NOT NULL);
CREATE TABLE {s}.removed (
  id uuid PRIMARY KEY,
  write_id uuid NOT NULL,
  status text NOT NULL,
  body text NOT NULL,
  created bigint NOT NULL,
  updated bigint NOT NULL,
  at bigint NOT NULL
);
CREATE INDEX removed_at ON {s}.removed (at);
CREATE TABLE {s}.settings (name text PRIMARY KEY, value text NOT NULL);

CREATE FUNCTION {s}.now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

CREATE FUNCTION {s}.finished(status text) RETURNS boolean LANGUAGE sql IMMUTABLE AS
$$ SELECT status IN ('completed', 'failed', 'cancelled') $$;

-- The event of a write (see the module docs); without the record if it would not fit.
CREATE FUNCTION {s}.event(channel text, tag text, id uuid, notify text, version bigint,
    status text, created bigint, updated bigint, body text) RETURNS void LANGUAGE plpgsql AS
$$
DECLARE
  head text := tag || E'\n' || id::text || E'\n' || notify || E'\n' || version::text
    || E'\n' || status;
BEGIN
  IF octet_length(head) + octet_length(body) + 42 <= 7900 THEN
    PERFORM pg_notify(channel, head || E'\n' || created::text || E'\n' || updated::text
      || E'\n' || body);
  ELSE
    PERFORM pg_notify(channel, head);
  END IF;
END
$$;

-- Creates a task. Answers ('ok', created), ('limit', count) or ('exists', 0); a replay of
-- a create that was applied answers ('ok', created) again, without an event.
CREATE FUNCTION {s}.create_task(p_id uuid, p_owner text, p_body text, p_ttl bigint,
    p_limit bigint, p_request_id text, p_method text, p_write uuid, p_lease bigint,
    p_job text, p_channel text)
  RETURNS TABLE (outcome text, at bigint) LANGUAGE plpgsql AS
$$
DECLARE
  written record;
  now bigint;
  position bigint;
  n bigint;
BEGIN
  SELECT t.write_id, t.created INTO written FROM {s}.tasks t WHERE t.id = p_id;
  IF FOUND THEN
    IF written.write_id = p_write THEN
      RETURN QUERY SELECT 'ok'::text, written.created;
    ELSE
      RETURN QUERY SELECT 'exists'::text, 0::bigint;
    END IF;
    RETURN;
  END IF;
  now := {s}.now_ms();
  -- The owner's row lock serializes its creates: the count below sees every earlier one.
  -- Sequence numbers grow with time, so they keep growing if the row is ever removed.
  INSERT INTO {s}.owners AS o (owner, seq) VALUES (p_owner, now)
    ON CONFLICT (owner) DO UPDATE SET seq = greatest(o.seq + 1, now)
    RETURNING o.seq INTO position;
  IF p_limit IS NOT NULL THEN
    SELECT count(*) INTO n FROM {s}.tasks t
      WHERE t.owner = p_owner AND (t.expires IS NULL OR t.expires > now);
    IF n >= p_limit THEN
      RETURN QUERY SELECT 'limit'::text, n;
      RETURN;
    END IF;
  END IF;
  INSERT INTO {s}.tasks (id, owner, seq, version, status, body, created, updated, expires,
      request_id, method, write_id, job, lease, lease_attempt)
    VALUES (p_id, p_owner, position, 1, 'working', p_body, now, now,
      CASE WHEN p_ttl IS NULL THEN NULL ELSE now + p_ttl END, p_request_id, p_method, p_write,
      p_job, CASE WHEN p_lease IS NULL THEN NULL ELSE now + p_lease END,
      CASE WHEN p_job IS NULL OR p_lease IS NULL THEN NULL ELSE 1 END);
  PERFORM {s}.event(p_channel, p_owner, p_id, '0', 1, 'working', now, now, p_body);
  RETURN QUERY SELECT 'ok'::text, now;
END
$$;

-- Writes a task decided by the caller on version p_version, if it is still at that
-- version and the move is one the spec's table allows; sends its event in the same
-- transaction. p_condition: '' (the version alone decides), 'lapsed' (only while the
-- task's lease is lapsed: the reaper's verdict) or 'claim' (only if the lease lapsed at
-- least p_backoff ms ago; then the caller holds a new lease of p_lease ms for attempt
-- p_attempt). p_ttl_set: the change sets the ttl to p_ttl (expiry = created + ttl).
-- Answers ('ok', version, -, -, -, updated, job of a claim), ('gone'), ('illegal', -,
-- status), ('renewed') when the lease condition failed, or ('stale', version, status,
-- body, created, updated): the task as it is, to decide again. A replay of a commit that
-- was applied (and not followed by another write) answers 'ok' again.
CREATE FUNCTION {s}.commit_task(p_id uuid, p_owner text, p_version bigint, p_status text,
    p_body text, p_ttl_set boolean, p_ttl bigint, p_notify boolean, p_write uuid,
    p_condition text, p_backoff bigint, p_lease bigint, p_attempt integer, p_channel text)
  RETURNS TABLE (outcome text, version bigint, status text, body text, created bigint,
    updated bigint, job text) LANGUAGE plpgsql AS
$$
DECLARE
  cur record;
  now bigint := {s}.now_ms();
  v_lease bigint;
  v_attempt integer;
  stamp bigint;
BEGIN
  SELECT t.version, t.status, t.body, t.created, t.updated, t.write_id, t.lease,
      t.lease_attempt, t.job
    INTO cur FROM {s}.tasks t
    WHERE t.id = p_id AND t.owner = p_owner AND (t.expires IS NULL OR t.expires > now)
    FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'gone'::text, NULL::bigint, NULL::text, NULL::text, NULL::bigint,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  IF cur.version <> p_version THEN
    IF cur.write_id = p_write AND cur.version = p_version + 1 THEN
      RETURN QUERY SELECT 'ok'::text, cur.version, NULL::text, NULL::text, NULL::bigint,
        cur.updated, cur.job;
    ELSE
      RETURN QUERY SELECT 'stale'::text, cur.version, cur.status, cur.body, cur.created,
        cur.updated, NULL::text;
    END IF;
    RETURN;
  END IF;
  v_lease := cur.lease;
  v_attempt := cur.lease_attempt;
  IF p_condition = 'lapsed' THEN
    IF cur.lease IS NULL OR cur.lease > now THEN
      RETURN QUERY SELECT 'renewed'::text, NULL::bigint, NULL::text, NULL::text,
        NULL::bigint, NULL::bigint, NULL::text;
      RETURN;
    END IF;
  ELSIF p_condition = 'claim' THEN
    IF cur.lease IS NULL OR cur.lease + p_backoff > now THEN
      RETURN QUERY SELECT 'renewed'::text, NULL::bigint, NULL::text, NULL::text,
        NULL::bigint, NULL::bigint, NULL::text;
      RETURN;
    END IF;
    v_lease := now + p_lease;
    v_attempt := p_attempt;
  END IF;
  -- The spec's table: an unfinished status moves to any other; a finished one to none.
  IF cur.status <> p_status AND {s}.finished(cur.status) THEN
    RETURN QUERY SELECT 'illegal'::text, NULL::bigint, cur.status, NULL::text, NULL::bigint,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  -- A finished task holds no lease (nothing renews or reaps it).
  IF {s}.finished(p_status) THEN
    v_lease := NULL;
  END IF;
  stamp := greatest(now, cur.updated);
  UPDATE {s}.tasks t SET version = p_version + 1, status = p_status, body = p_body,
      updated = stamp, write_id = p_write, lease = v_lease,
      lease_attempt = v_attempt,
      expires = CASE WHEN NOT p_ttl_set THEN t.expires
                     WHEN p_ttl IS NULL THEN NULL ELSE t.created + p_ttl END
    WHERE t.id = p_id;
  PERFORM {s}.event(p_channel, p_owner, p_id, CASE WHEN p_notify THEN '1' ELSE '0' END,
    p_version + 1, p_status, cur.created, stamp, p_body);
  RETURN QUERY SELECT 'ok'::text, p_version + 1, NULL::text, NULL::text, NULL::bigint, stamp,
    CASE WHEN p_condition = 'claim' THEN coalesce(cur.job, '') ELSE NULL END;
END
$$;

-- Removes a task and sends its removal, keeping its fields and the write id for
-- p_window ms (a replay answers them again). Answers the removed task's status, body,
-- created and updated, or no row.
CREATE FUNCTION {s}.remove_task(p_id uuid, p_owner text, p_write uuid, p_channel text,
    p_window bigint)
  RETURNS TABLE (status text, body text, created bigint, updated bigint) LANGUAGE plpgsql AS
$$
DECLARE
  gone record;
  now bigint := {s}.now_ms();
BEGIN
  DELETE FROM {s}.tasks t
    WHERE t.id = p_id AND t.owner = p_owner AND (t.expires IS NULL OR t.expires > now)
    RETURNING t.status, t.body, t.created, t.updated INTO gone;
  IF FOUND THEN
    DELETE FROM {s}.removed r WHERE r.at < now - p_window;
    INSERT INTO {s}.removed (id, write_id, status, body, created, updated, at)
      VALUES (p_id, p_write, gone.status, gone.body, gone.created, gone.updated, now)
      ON CONFLICT (id) DO NOTHING;
    PERFORM pg_notify(p_channel, p_owner || E'\n' || p_id::text || E'\n0');
    RETURN QUERY SELECT gone.status, gone.body, gone.created, gone.updated;
    RETURN;
  END IF;
  RETURN QUERY SELECT r.status, r.body, r.created, r.updated FROM {s}.removed r
    WHERE r.id = p_id AND r.write_id = p_write;
END
$$;

-- Renews, or gives up, the leases an instance holds, in id order (so that two renewals
-- never wait on each other's rows). Per lease: the op 'k' (keep: renew), 'r' (release:
-- the handle was detached) or 'h' (hand over: the lease lapses now, and the task is
-- claimable at once by another instance, told on the channel), and the attempt the lease
-- runs (NULL for a task that runs once): a lease of another attempt is not this one's.
-- Answers per lease, in the order given: 'ok' (renewed), 'released', 'gone' (gone,
-- finished, or holding no lease of this attempt) or 'lapsed' (too late).
CREATE FUNCTION {s}.renew_leases(p_ids uuid[], p_ops text[], p_attempts integer[],
    p_lease bigint, p_channel text)
  RETURNS text[] LANGUAGE plpgsql AS
$$
DECLARE
  now bigint := {s}.now_ms();
  fields record;
  verdicts text[] := array_fill(''::text, ARRAY[coalesce(array_length(p_ids, 1), 0)]);
  i integer;
BEGIN
  FOR i IN SELECT o.i FROM generate_subscripts(p_ids, 1) AS o(i) ORDER BY p_ids[o.i] LOOP
    SELECT t.owner, t.status, t.lease, t.lease_attempt INTO fields FROM {s}.tasks t
      WHERE t.id = p_ids[i] FOR UPDATE;
    IF NOT FOUND OR fields.lease IS NULL OR {s}.finished(fields.status) THEN
      verdicts[i] := 'gone';
    ELSIF p_attempts[i] IS NOT NULL AND fields.lease_attempt IS DISTINCT FROM p_attempts[i] THEN
      verdicts[i] := 'gone';
    ELSIF p_ops[i] = 'r' THEN
      UPDATE {s}.tasks SET lease = NULL WHERE id = p_ids[i];
      verdicts[i] := 'released';
    ELSIF fields.lease < now THEN
      verdicts[i] := 'lapsed';
    ELSIF p_ops[i] = 'h' THEN
      UPDATE {s}.tasks SET lease = 0 WHERE id = p_ids[i];
      PERFORM pg_notify(p_channel, fields.owner || E'\n' || p_ids[i]::text || E'\nclaimable');
      verdicts[i] := 'released';
    ELSE
      UPDATE {s}.tasks SET lease = now + p_lease WHERE id = p_ids[i];
      verdicts[i] := 'ok';
    END IF;
  END LOOP;
  RETURN verdicts;
END
$$;
"#;

/// Version 2: the store-wide position of a task (its sequence, then its id), indexed for
/// an operator's pages of every owner's tasks; the name of the instance holding a task's
/// lease (`lease_holder`, set by a leased create and a claim); a commit that keeps the
/// task's last update. The new `create_task` and `commit_task` take more parameters:
/// version 1's stay beside them (an overload), for instances of the older build still
/// running while the schema is migrated.
const V2: &str = r#"
CREATE INDEX tasks_position ON {s}.tasks (seq, id);
ALTER TABLE {s}.tasks ADD COLUMN lease_holder text;

-- Version 1's create_task, and: the lease (if any) is held by the instance p_holder.
-- Creates a task. Answers ('ok', created), ('limit', count) or ('exists', 0); a replay of
-- a create that was applied answers ('ok', created) again, without an event.
CREATE FUNCTION {s}.create_task(p_id uuid, p_owner text, p_body text, p_ttl bigint,
    p_limit bigint, p_request_id text, p_method text, p_write uuid, p_lease bigint,
    p_job text, p_channel text, p_holder text)
  RETURNS TABLE (outcome text, at bigint) LANGUAGE plpgsql AS
$$
DECLARE
  written record;
  now bigint;
  position bigint;
  n bigint;
BEGIN
  SELECT t.write_id, t.created INTO written FROM {s}.tasks t WHERE t.id = p_id;
  IF FOUND THEN
    IF written.write_id = p_write THEN
      RETURN QUERY SELECT 'ok'::text, written.created;
    ELSE
      RETURN QUERY SELECT 'exists'::text, 0::bigint;
    END IF;
    RETURN;
  END IF;
  now := {s}.now_ms();
  -- The owner's row lock serializes its creates: the count below sees every earlier one.
  -- Sequence numbers grow with time, so they keep growing if the row is ever removed.
  INSERT INTO {s}.owners AS o (owner, seq) VALUES (p_owner, now)
    ON CONFLICT (owner) DO UPDATE SET seq = greatest(o.seq + 1, now)
    RETURNING o.seq INTO position;
  IF p_limit IS NOT NULL THEN
    SELECT count(*) INTO n FROM {s}.tasks t
      WHERE t.owner = p_owner AND (t.expires IS NULL OR t.expires > now);
    IF n >= p_limit THEN
      RETURN QUERY SELECT 'limit'::text, n;
      RETURN;
    END IF;
  END IF;
  INSERT INTO {s}.tasks (id, owner, seq, version, status, body, created, updated, expires,
      request_id, method, write_id, job, lease, lease_attempt, lease_holder)
    VALUES (p_id, p_owner, position, 1, 'working', p_body, now, now,
      CASE WHEN p_ttl IS NULL THEN NULL ELSE now + p_ttl END, p_request_id, p_method, p_write,
      p_job, CASE WHEN p_lease IS NULL THEN NULL ELSE now + p_lease END,
      CASE WHEN p_job IS NULL OR p_lease IS NULL THEN NULL ELSE 1 END,
      CASE WHEN p_lease IS NULL THEN NULL ELSE p_holder END);
  PERFORM {s}.event(p_channel, p_owner, p_id, '0', 1, 'working', now, now, p_body);
  RETURN QUERY SELECT 'ok'::text, now;
END
$$;

-- Version 1's commit_task, and: p_keep keeps the task's last update as stored; a claim
-- leases the task to the instance p_holder.
-- Writes a task decided by the caller on version p_version, if it is still at that
-- version and the move is one the spec's table allows; sends its event in the same
-- transaction. p_condition: '' (the version alone decides), 'lapsed' (only while the
-- task's lease is lapsed: the reaper's verdict) or 'claim' (only if the lease lapsed at
-- least p_backoff ms ago; then the caller holds a new lease of p_lease ms for attempt
-- p_attempt). p_ttl_set: the change sets the ttl to p_ttl (expiry = created + ttl).
-- Answers ('ok', version, -, -, -, updated, job of a claim), ('gone'), ('illegal', -,
-- status), ('renewed') when the lease condition failed, or ('stale', version, status,
-- body, created, updated): the task as it is, to decide again. A replay of a commit that
-- was applied (and not followed by another write) answers 'ok' again.
CREATE FUNCTION {s}.commit_task(p_id uuid, p_owner text, p_version bigint, p_status text,
    p_body text, p_ttl_set boolean, p_ttl bigint, p_notify boolean, p_write uuid,
    p_condition text, p_backoff bigint, p_lease bigint, p_attempt integer, p_channel text,
    p_keep boolean, p_holder text)
  RETURNS TABLE (outcome text, version bigint, status text, body text, created bigint,
    updated bigint, job text) LANGUAGE plpgsql AS
$$
DECLARE
  cur record;
  now bigint := {s}.now_ms();
  v_lease bigint;
  v_attempt integer;
  v_holder text;
  stamp bigint;
BEGIN
  SELECT t.version, t.status, t.body, t.created, t.updated, t.write_id, t.lease,
      t.lease_attempt, t.job, t.lease_holder
    INTO cur FROM {s}.tasks t
    WHERE t.id = p_id AND t.owner = p_owner AND (t.expires IS NULL OR t.expires > now)
    FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'gone'::text, NULL::bigint, NULL::text, NULL::text, NULL::bigint,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  IF cur.version <> p_version THEN
    IF cur.write_id = p_write AND cur.version = p_version + 1 THEN
      RETURN QUERY SELECT 'ok'::text, cur.version, NULL::text, NULL::text, NULL::bigint,
        cur.updated, cur.job;
    ELSE
      RETURN QUERY SELECT 'stale'::text, cur.version, cur.status, cur.body, cur.created,
        cur.updated, NULL::text;
    END IF;
    RETURN;
  END IF;
  v_lease := cur.lease;
  v_attempt := cur.lease_attempt;
  v_holder := cur.lease_holder;
  IF p_condition = 'lapsed' THEN
    IF cur.lease IS NULL OR cur.lease > now THEN
      RETURN QUERY SELECT 'renewed'::text, NULL::bigint, NULL::text, NULL::text,
        NULL::bigint, NULL::bigint, NULL::text;
      RETURN;
    END IF;
  ELSIF p_condition = 'claim' THEN
    IF cur.lease IS NULL OR cur.lease + p_backoff > now THEN
      RETURN QUERY SELECT 'renewed'::text, NULL::bigint, NULL::text, NULL::text,
        NULL::bigint, NULL::bigint, NULL::text;
      RETURN;
    END IF;
    v_lease := now + p_lease;
    v_attempt := p_attempt;
    v_holder := p_holder;
  END IF;
  -- The spec's table: an unfinished status moves to any other; a finished one to none.
  IF cur.status <> p_status AND {s}.finished(cur.status) THEN
    RETURN QUERY SELECT 'illegal'::text, NULL::bigint, cur.status, NULL::text, NULL::bigint,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  -- A finished task holds no lease (nothing renews or reaps it).
  IF {s}.finished(p_status) THEN
    v_lease := NULL;
  END IF;
  stamp := CASE WHEN p_keep THEN cur.updated ELSE greatest(now, cur.updated) END;
  UPDATE {s}.tasks t SET version = p_version + 1, status = p_status, body = p_body,
      updated = stamp, write_id = p_write, lease = v_lease,
      lease_attempt = v_attempt, lease_holder = v_holder,
      expires = CASE WHEN NOT p_ttl_set THEN t.expires
                     WHEN p_ttl IS NULL THEN NULL ELSE t.created + p_ttl END
    WHERE t.id = p_id;
  PERFORM {s}.event(p_channel, p_owner, p_id, CASE WHEN p_notify THEN '1' ELSE '0' END,
    p_version + 1, p_status, cur.created, stamp, p_body);
  RETURN QUERY SELECT 'ok'::text, p_version + 1, NULL::text, NULL::text, NULL::bigint, stamp,
    CASE WHEN p_condition = 'claim' THEN coalesce(cur.job, '') ELSE NULL END;
END
$$;
"#;

/// Version 3: the writes may leave their events to the instance. `event`, `remove_task`
/// and `renew_leases` send nothing for a `NULL` channel; `commit_task` answers the task's creation time with
/// `ok` (the instance needs it for the event it sends). `{owner_is}` is `=` here, and
/// `IS NOT DISTINCT FROM` when version 5 applies the same text again.
const V3: &str = r#"
CREATE OR REPLACE FUNCTION {s}.event(channel text, tag text, id uuid, notify text,
    version bigint, status text, created bigint, updated bigint, body text)
  RETURNS void LANGUAGE plpgsql AS
$$
DECLARE
  head text;
BEGIN
  IF channel IS NULL THEN
    RETURN;
  END IF;
  head := tag || E'\n' || id::text || E'\n' || notify || E'\n' || version::text || E'\n'
    || status;
  IF octet_length(head) + octet_length(body) + 42 <= 7900 THEN
    PERFORM pg_notify(channel, head || E'\n' || created::text || E'\n' || updated::text
      || E'\n' || body);
  ELSE
    PERFORM pg_notify(channel, head);
  END IF;
END
$$;

-- Version 1's remove_task, sending nothing for a NULL p_channel.
CREATE OR REPLACE FUNCTION {s}.remove_task(p_id uuid, p_owner text, p_write uuid,
    p_channel text, p_window bigint)
  RETURNS TABLE (status text, body text, created bigint, updated bigint) LANGUAGE plpgsql AS
$$
DECLARE
  gone record;
  now bigint := {s}.now_ms();
BEGIN
  DELETE FROM {s}.tasks t
    WHERE t.id = p_id AND t.owner {owner_is} p_owner AND (t.expires IS NULL OR t.expires > now)
    RETURNING t.status, t.body, t.created, t.updated INTO gone;
  IF FOUND THEN
    DELETE FROM {s}.removed r WHERE r.at < now - p_window;
    INSERT INTO {s}.removed (id, write_id, status, body, created, updated, at)
      VALUES (p_id, p_write, gone.status, gone.body, gone.created, gone.updated, now)
      ON CONFLICT (id) DO NOTHING;
    IF p_channel IS NOT NULL THEN
      PERFORM pg_notify(p_channel, p_owner || E'\n' || p_id::text || E'\n0');
    END IF;
    RETURN QUERY SELECT gone.status, gone.body, gone.created, gone.updated;
    RETURN;
  END IF;
  RETURN QUERY SELECT r.status, r.body, r.created, r.updated FROM {s}.removed r
    WHERE r.id = p_id AND r.write_id = p_write;
END
$$;

-- Version 2's commit_task, answering the task's creation time with 'ok' too.
CREATE OR REPLACE FUNCTION {s}.commit_task(p_id uuid, p_owner text, p_version bigint,
    p_status text, p_body text, p_ttl_set boolean, p_ttl bigint, p_notify boolean,
    p_write uuid, p_condition text, p_backoff bigint, p_lease bigint, p_attempt integer,
    p_channel text, p_keep boolean, p_holder text)
  RETURNS TABLE (outcome text, version bigint, status text, body text, created bigint,
    updated bigint, job text) LANGUAGE plpgsql AS
$$
DECLARE
  cur record;
  now bigint := {s}.now_ms();
  v_lease bigint;
  v_attempt integer;
  v_holder text;
  stamp bigint;
BEGIN
  SELECT t.version, t.status, t.body, t.created, t.updated, t.write_id, t.lease,
      t.lease_attempt, t.job, t.lease_holder
    INTO cur FROM {s}.tasks t
    WHERE t.id = p_id AND t.owner {owner_is} p_owner AND (t.expires IS NULL OR t.expires > now)
    FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'gone'::text, NULL::bigint, NULL::text, NULL::text, NULL::bigint,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  IF cur.version <> p_version THEN
    IF cur.write_id = p_write AND cur.version = p_version + 1 THEN
      RETURN QUERY SELECT 'ok'::text, cur.version, cur.status, NULL::text, cur.created,
        cur.updated, cur.job;
    ELSE
      RETURN QUERY SELECT 'stale'::text, cur.version, cur.status, cur.body, cur.created,
        cur.updated, NULL::text;
    END IF;
    RETURN;
  END IF;
  v_lease := cur.lease;
  v_attempt := cur.lease_attempt;
  v_holder := cur.lease_holder;
  IF p_condition = 'lapsed' THEN
    IF cur.lease IS NULL OR cur.lease > now THEN
      RETURN QUERY SELECT 'renewed'::text, NULL::bigint, NULL::text, NULL::text,
        NULL::bigint, NULL::bigint, NULL::text;
      RETURN;
    END IF;
  ELSIF p_condition = 'claim' THEN
    IF cur.lease IS NULL OR cur.lease + p_backoff > now THEN
      RETURN QUERY SELECT 'renewed'::text, NULL::bigint, NULL::text, NULL::text,
        NULL::bigint, NULL::bigint, NULL::text;
      RETURN;
    END IF;
    v_lease := now + p_lease;
    v_attempt := p_attempt;
    v_holder := p_holder;
  END IF;
  -- The spec's table: an unfinished status moves to any other; a finished one to none.
  IF cur.status <> p_status AND {s}.finished(cur.status) THEN
    RETURN QUERY SELECT 'illegal'::text, NULL::bigint, cur.status, NULL::text, NULL::bigint,
      NULL::bigint, NULL::text;
    RETURN;
  END IF;
  -- A finished task holds no lease (nothing renews or reaps it).
  IF {s}.finished(p_status) THEN
    v_lease := NULL;
  END IF;
  stamp := CASE WHEN p_keep THEN cur.updated ELSE greatest(now, cur.updated) END;
  UPDATE {s}.tasks t SET version = p_version + 1, status = p_status, body = p_body,
      updated = stamp, write_id = p_write, lease = v_lease,
      lease_attempt = v_attempt, lease_holder = v_holder,
      expires = CASE WHEN NOT p_ttl_set THEN t.expires
                     WHEN p_ttl IS NULL THEN NULL ELSE t.created + p_ttl END
    WHERE t.id = p_id;
  PERFORM {s}.event(p_channel, p_owner, p_id, CASE WHEN p_notify THEN '1' ELSE '0' END,
    p_version + 1, p_status, cur.created, stamp, p_body);
  RETURN QUERY SELECT 'ok'::text, p_version + 1, p_status, NULL::text, cur.created, stamp,
    CASE WHEN p_condition = 'claim' THEN coalesce(cur.job, '') ELSE NULL END;
END
$$;

-- Version 1's renew_leases, sending nothing for a NULL p_channel.
-- Renews, or gives up, the leases an instance holds, in id order (so that two renewals
-- never wait on each other's rows). Per lease: the op 'k' (keep: renew), 'r' (release:
-- the handle was detached) or 'h' (hand over: the lease lapses now, and the task is
-- claimable at once by another instance, told on the channel), and the attempt the lease
-- runs (NULL for a task that runs once): a lease of another attempt is not this one's.
-- Answers per lease, in the order given: 'ok' (renewed), 'released', 'gone' (gone,
-- finished, or holding no lease of this attempt) or 'lapsed' (too late).
CREATE OR REPLACE FUNCTION {s}.renew_leases(p_ids uuid[], p_ops text[], p_attempts integer[],
    p_lease bigint, p_channel text)
  RETURNS text[] LANGUAGE plpgsql AS
$$
DECLARE
  now bigint := {s}.now_ms();
  fields record;
  verdicts text[] := array_fill(''::text, ARRAY[coalesce(array_length(p_ids, 1), 0)]);
  i integer;
BEGIN
  FOR i IN SELECT o.i FROM generate_subscripts(p_ids, 1) AS o(i) ORDER BY p_ids[o.i] LOOP
    SELECT t.owner, t.status, t.lease, t.lease_attempt INTO fields FROM {s}.tasks t
      WHERE t.id = p_ids[i] FOR UPDATE;
    IF NOT FOUND OR fields.lease IS NULL OR {s}.finished(fields.status) THEN
      verdicts[i] := 'gone';
    ELSIF p_attempts[i] IS NOT NULL AND fields.lease_attempt IS DISTINCT FROM p_attempts[i] THEN
      verdicts[i] := 'gone';
    ELSIF p_ops[i] = 'r' THEN
      UPDATE {s}.tasks SET lease = NULL WHERE id = p_ids[i];
      verdicts[i] := 'released';
    ELSIF fields.lease < now THEN
      verdicts[i] := 'lapsed';
    ELSIF p_ops[i] = 'h' THEN
      UPDATE {s}.tasks SET lease = 0 WHERE id = p_ids[i];
      IF p_channel IS NOT NULL THEN
        PERFORM pg_notify(p_channel, fields.owner || E'\n' || p_ids[i]::text || E'\nclaimable');
      END IF;
      verdicts[i] := 'released';
    ELSE
      UPDATE {s}.tasks SET lease = now + p_lease WHERE id = p_ids[i];
      verdicts[i] := 'ok';
    END IF;
  END LOOP;
  RETURN verdicts;
END
$$;
"#;

/// Version 4: task rows leave room on their page for their next versions (`fillfactor`
/// 70, for pages written from now on), so that a status update, which changes no indexed
/// column, is a heap-only update: no entry in any of the table's five indexes, and the
/// page's dead versions are pruned as it fills. (At the default of 100 every page filled
/// up at its inserts, and every update went to another page with an entry in each index.)
const V4: &str = r#"
ALTER TABLE {s}.tasks SET (fillfactor = 70);
"#;

/// Version 5 is version 3's text applied again (its functions replaced, with the same
/// parameters and answers, so that instances of an older build keep working while the
/// schema is migrated), with `{owner_is}` read as `IS NOT DISTINCT FROM`: `commit_task` and
/// `remove_task` find the task by its id and compare its owner with an operator no index
/// serves, so their plans take the primary key. (With `=`, a plan made while the table
/// was small took the `(owner, seq)` index and read every task of the owner; see
/// [`Statements`](crate::statements::Statements).)
const OWNER_IS_FROM: i32 = 5;

/// The schema name quoted as an SQL identifier.
pub(crate) fn quoted(schema: &str) -> String {
    format!("\"{}\"", schema.replace('"', "\"\""))
}

/// The SQL of `migration`, applied as `version`, for `schema`.
fn sql(migration: &str, version: i32, schema: &str) -> String {
    let owner_is = if version >= OWNER_IS_FROM {
        "IS NOT DISTINCT FROM"
    } else {
        "="
    };
    migration
        .replace("{owner_is}", owner_is)
        .replace("{s}", &quoted(schema))
}

/// Applies the migrations `schema` lacks, in one transaction under an advisory lock (so
/// that instances starting at once wait for each other and apply each once); answers the
/// version the schema is at. A schema newer than this build is refused.
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> Result<i32, String> {
    let transaction = client
        .transaction()
        .await
        .map_err(|err| format!("cannot start the migration: {err}"))?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|err| format!("cannot take the migration lock: {err}"))?;
    let name = quoted(schema);
    transaction
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {name}; \
             CREATE TABLE IF NOT EXISTS {name}.migrations \
               (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        ))
        .await
        .map_err(|err| format!("cannot create the schema `{schema}`: {err}"))?;
    let row = transaction
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {name}.migrations"),
            &[],
        )
        .await
        .map_err(|err| format!("cannot read the schema version: {err}"))?;
    let current: i32 = row.get(0);
    if current > VERSION {
        return Err(format!(
            "the schema `{schema}` is at version {current}, newer than this build's {VERSION}: \
             run every instance with the same (or a newer) build"
        ));
    }
    for (version, migration) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        transaction
            .batch_execute(&sql(migration, *version, schema))
            .await
            .map_err(|err| format!("migration {version} failed: {err}"))?;
        transaction
            .execute(
                &format!("INSERT INTO {name}.migrations (version) VALUES ($1)"),
                &[version],
            )
            .await
            .map_err(|err| format!("cannot record migration {version}: {err}"))?;
    }
    transaction
        .commit()
        .await
        .map_err(|err| format!("cannot commit the migrations: {err}"))?;
    Ok(VERSION)
}

/// Checks that `schema` is at this build's version (for instances that do not migrate).
pub(crate) async fn check(client: &Client, schema: &str) -> Result<i32, String> {
    let name = quoted(schema);
    let row = client
        .query_one(
            &format!("SELECT coalesce(max(version), 0) FROM {name}.migrations"),
            &[],
        )
        .await
        .map_err(|err| {
            format!(
                "the schema `{schema}` has no migrations table ({err}): run \
                 `PostgresTaskStore::migrate` (or build with migrations on) first"
            )
        })?;
    let current: i32 = row.get(0);
    if current == VERSION {
        Ok(current)
    } else {
        Err(format!(
            "the schema `{schema}` is at version {current}; this build needs {VERSION}: \
             migrate it first"
        ))
    }
}
