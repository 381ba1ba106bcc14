//! The statements of the store, written once for its schema: each is one round trip.

use std::sync::Arc;

use tokio_postgres::types::Type;

use crate::schema::quoted;

/// The types of `create`'s (and `create_fast`'s) parameters: id, owner tag, record, ttl,
/// per-owner limit, request id, method, write id, lease, job, channel, holder.
pub(crate) const CREATE_TYPES: &[Type] = &[
    Type::UUID,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::UUID,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
];

/// The types of `commit`'s (and `commit_fast`'s) parameters: id, owner tag, version,
/// status, record, whether the ttl changed, ttl, notify, write id, condition, backoff,
/// lease, attempt, channel, whether the last update stays, holder.
pub(crate) const COMMIT_TYPES: &[Type] = &[
    Type::UUID,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::BOOL,
    Type::INT8,
    Type::BOOL,
    Type::UUID,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::INT4,
    Type::TEXT,
    Type::BOOL,
    Type::TEXT,
];

/// Every statement the store sends, for one schema.
pub(crate) struct Statements {
    pub(crate) read: Arc<str>,
    pub(crate) create: Arc<str>,
    pub(crate) create_fast: Arc<str>,
    pub(crate) commit: Arc<str>,
    pub(crate) commit_fast: Arc<str>,
    pub(crate) remove: Arc<str>,
    pub(crate) list: Arc<str>,
    pub(crate) page_all: Arc<str>,
    pub(crate) origin: Arc<str>,
    pub(crate) job: Arc<str>,
    pub(crate) renew: Arc<str>,
    pub(crate) lapsed: Arc<str>,
    pub(crate) sweep: Arc<str>,
    pub(crate) now: Arc<str>,
    pub(crate) share_secret: Arc<str>,
}

impl Statements {
    pub(crate) fn new(schema: &str) -> Self {
        let s = quoted(schema);
        let live = "(expires IS NULL OR expires > {s}.now_ms())";
        // A task by its id and owner. The owner is compared with `IS NOT DISTINCT FROM`
        // (the same as `=` on a column that is never NULL), which no index serves: so the
        // plan looks the task up by its primary key. With `owner = $2`, a plan made while
        // the table is small (a generic plan made on an empty table) looked it up through
        // the `(owner, seq)` index and then read every task of the owner: in the
        // concurrency bench, 85 rows per status update, and more as tasks accumulate.
        let task = "id = $1 AND owner IS NOT DISTINCT FROM $2";
        // The time of the fast statements, in the functions' unit (`now_ms()`'s): when the
        // statement started (`statement_timestamp()`, stable, so one value wherever the
        // statement reads it). `now_ms()` is volatile: each reference would read the clock
        // again, so the statements used to read it once in a `MATERIALIZED` CTE joined to
        // the written rows, a join whose setup and run cost PostgreSQL ~10 us a statement
        // (a third of a status update's executor time).
        let now = "(extract(epoch FROM statement_timestamp()) * 1000)::bigint";
        let sql = |text: &str| -> Arc<str> {
            Arc::from(
                text.replace("{now}", now)
                    .replace("{live}", live)
                    .replace("{task}", task)
                    .replace("{s}", &s),
            )
        };
        Statements {
            read: sql(
                "SELECT version, status, body, created, updated, expires - {s}.now_ms() \
                 FROM {s}.tasks WHERE {task} AND {live}",
            ),
            create: sql(
                "SELECT outcome, at FROM {s}.create_task($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 $10, $11, $12)",
            ),
            commit: sql(
                "SELECT outcome, version, status, body, created, updated, job FROM \
                 {s}.commit_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
                 $15, $16)",
            ),
            // `create_task` without a per-owner limit in one plain statement (no PL/pgSQL
            // call): it inserts the task as `create_task` would, answering its creation
            // time; no row when a task with this id exists (then `create_task` answers:
            // a replay, or `exists`). Takes `create`'s parameters, in its order, of the
            // types [`CREATE_TYPES`] ($5, the limit, must be NULL; $11, the channel, is
            // not used).
            create_fast: sql(
                "WITH position AS (INSERT INTO {s}.owners AS o (owner, seq) \
                   VALUES ($2::text, {now}) \
                   ON CONFLICT (owner) DO UPDATE SET seq = greatest(o.seq + 1, excluded.seq) \
                   RETURNING o.seq) \
                 INSERT INTO {s}.tasks (id, owner, seq, version, status, body, created, \
                   updated, expires, request_id, method, write_id, job, lease, lease_attempt, \
                   lease_holder) \
                 SELECT $1::uuid, $2::text, position.seq, 1, 'working', $3::text, {now}, {now}, \
                   {now} + $4::bigint, $6::text, $7::text, $8::uuid, $10::text, \
                   {now} + $9::bigint, \
                   CASE WHEN $10::text IS NULL OR $9::bigint IS NULL THEN NULL ELSE 1 END, \
                   CASE WHEN $9::bigint IS NULL THEN NULL ELSE $12::text END \
                 FROM position WHERE $5::bigint IS NULL \
                 ON CONFLICT (id) DO NOTHING \
                 RETURNING created",
            ),
            // The common case of `commit_task` in one plain `UPDATE` (no PL/pgSQL call, whose
            // expressions PostgreSQL prepares again in every transaction): it lands only
            // when `commit_task` would write, and then writes what it would, answering
            // the version, creation and last update written (and a claim's job). No row:
            // `commit_task` decides (stale, gone, illegal, held, or a replay). Takes
            // `commit`'s parameters, in its order, of the types [`COMMIT_TYPES`] ($8,
            // notify, and $14, the channel, are not used: the announcer sends the event).
            commit_fast: sql(
                "UPDATE {s}.tasks t SET version = $3::bigint + 1, status = $4::text, \
                 body = $5::text, \
                 updated = CASE WHEN $15::boolean THEN t.updated \
                   ELSE greatest({now}, t.updated) END, \
                 write_id = $9::uuid, \
                 lease = CASE WHEN {s}.finished($4::text) THEN NULL \
                   WHEN $10::text = 'claim' THEN {now} + $12::bigint ELSE t.lease END, \
                 lease_attempt = CASE WHEN $10::text = 'claim' THEN $13::integer \
                   ELSE t.lease_attempt END, \
                 lease_holder = CASE WHEN $10::text = 'claim' THEN $16::text \
                   ELSE t.lease_holder END, \
                 expires = CASE WHEN NOT $6::boolean THEN t.expires \
                   WHEN $7::bigint IS NULL THEN NULL ELSE t.created + $7::bigint END \
                 WHERE t.id = $1::uuid AND t.owner IS NOT DISTINCT FROM $2::text \
                 AND (t.expires IS NULL OR t.expires > {now}) AND t.version = $3::bigint \
                 AND ($10::text <> 'lapsed' OR t.lease <= {now}) \
                 AND ($10::text <> 'claim' OR t.lease + $11::bigint <= {now}) \
                 AND (t.status = $4::text OR NOT {s}.finished(t.status)) \
                 RETURNING t.version, t.created, t.updated, \
                 CASE WHEN $10::text = 'claim' THEN coalesce(t.job, '') END",
            ),
            remove: sql(
                "SELECT status, body, created, updated FROM {s}.remove_task($1, $2, $3, $4, $5)",
            ),
            list: sql(
                "SELECT id, seq, status, body, created, updated FROM {s}.tasks \
                 WHERE owner = $1 AND seq > $2 AND {live} ORDER BY seq LIMIT $3",
            ),
            page_all: sql("SELECT id, owner, seq, status, body, created, updated, \
                 CASE WHEN {s}.finished(status) THEN NULL ELSE lease END, \
                 CASE WHEN lease IS NULL OR {s}.finished(status) THEN NULL ELSE lease_holder END \
                 FROM {s}.tasks \
                 WHERE (seq, id) > ($1, $2) AND {live} \
                 AND ($3::text[] IS NULL OR status = ANY($3)) ORDER BY seq, id LIMIT $4"),
            origin: sql("SELECT request_id, method FROM {s}.tasks WHERE {task} AND {live}"),
            job: sql("SELECT job FROM {s}.tasks WHERE {task} AND {live}"),
            renew: sql("SELECT {s}.renew_leases($1, $2, $3, $4, $5)"),
            lapsed: sql(
                "SELECT id, owner, lease FROM {s}.tasks WHERE lease IS NOT NULL \
                 AND lease <= (SELECT {s}.now_ms()) AND NOT {s}.finished(status) \
                 ORDER BY lease LIMIT $1",
            ),
            sweep: sql(
                "WITH gone AS (DELETE FROM {s}.tasks WHERE id IN (SELECT id FROM {s}.tasks \
                 WHERE expires <= (SELECT {s}.now_ms()) LIMIT $1) RETURNING 1) \
                 SELECT count(*) FROM gone",
            ),
            now: sql("SELECT {s}.now_ms()"),
            // `DO UPDATE` (to the value already there) rather than `DO NOTHING`: it waits
            // for an instance inserting at the same moment and answers the value it wrote,
            // where a read in the same statement would not see it.
            share_secret: sql(
                "INSERT INTO {s}.settings AS t (name, value) VALUES ('cursor-secret', $1) \
                 ON CONFLICT (name) DO UPDATE SET value = t.value RETURNING t.value",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use mcp_tasks_test_support::postgres::{shared_psql, shared_url};

    use tokio_postgres::types::Type;

    use super::{COMMIT_TYPES, Statements};

    /// The plan `sql` (with parameters of `types`) gets as a generic plan, made while the
    /// tasks table is empty.
    fn generic_plan(schema: &str, sql: &str, types: &[Type]) -> String {
        let names: Vec<&str> = types.iter().map(Type::name).collect();
        let nulls = vec!["NULL"; types.len()].join(", ");
        shared_psql(&format!(
            "SET plan_cache_mode = force_generic_plan; PREPARE p ({}) AS {sql}; \
             EXPLAIN EXECUTE p({nulls})",
            names.join(", ")
        ))
        .unwrap_or_else(|| panic!("no plan in {schema}"))
    }

    #[test]
    fn a_task_is_looked_up_by_its_primary_key_even_on_an_empty_table() {
        let Some(url) = shared_url() else { return };
        let schema = format!("plans_{}", uuid::Uuid::new_v4().simple());
        let _store = crate::PostgresTaskStore::builder(&url)
            .schema(&schema)
            .build()
            .expect("a store on the shared server");
        let sql = Statements::new(&schema);
        let key: &[Type] = &[Type::UUID, Type::TEXT];
        for (name, statement, types) in [
            ("read", &sql.read, key),
            ("commit_fast", &sql.commit_fast, COMMIT_TYPES),
            ("origin", &sql.origin, key),
            ("job", &sql.job, key),
        ] {
            let plan = generic_plan(&schema, statement, types);
            assert!(
                plan.contains("tasks_pkey") && !plan.contains("tasks_owner_seq_key"),
                "{name}: {plan}"
            );
        }
        // The functions this build calls compare the owner so too (schema version 5).
        let functions = shared_psql(&format!(
            "SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '{schema}' \
             AND p.prosrc LIKE '%t.owner IS NOT DISTINCT FROM p_owner%'"
        ));
        assert_eq!(functions.as_deref(), Some("commit_task,remove_task"));
    }
}
