//! The statements of the store, written once for its schema: each is one round trip.

use std::sync::Arc;

use crate::schema::quoted;

/// Every statement the store sends, for one schema.
pub(crate) struct Statements {
    pub(crate) read: Arc<str>,
    pub(crate) create: Arc<str>,
    pub(crate) commit: Arc<str>,
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
        let sql =
            |text: &str| -> Arc<str> { Arc::from(text.replace("{live}", live).replace("{s}", &s)) };
        Statements {
            read: sql(
                "SELECT version, status, body, created, updated, expires - {s}.now_ms() \
                 FROM {s}.tasks WHERE id = $1 AND owner = $2 AND {live}",
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
            origin: sql(
                "SELECT request_id, method FROM {s}.tasks WHERE id = $1 AND owner = $2 AND {live}",
            ),
            job: sql("SELECT job FROM {s}.tasks WHERE id = $1 AND owner = $2 AND {live}"),
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
