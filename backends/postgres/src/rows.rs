//! What the driver makes of rows: columns, ids and parameters.

use mcp_tasks::Error;
use tokio_postgres::Row;

/// A random write id, chosen before a call so that a replay recognizes its own write.
pub(crate) fn write_id() -> uuid::Uuid {
    uuid::Uuid::new_v4()
}

/// A millisecond count (or any whole number) as a `bigint` parameter.
pub(crate) fn bigint(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

pub(crate) fn unexpected(what: &str) -> Error {
    Error::store(format!(
        "unexpected answer from a function of the task store: {what} (do all instances run \
         the same version?)"
    ))
}

/// A column of `row`, or a store error naming it.
pub(crate) fn column<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r Row,
    index: usize,
) -> Result<T, Error> {
    row.try_get(index)
        .map_err(|err| Error::store_caused("a row of the task store is unreadable", err))
}

/// The task a row holds from column `at` on: status, body, created, updated.
pub(crate) fn task_at(row: &Row, id: &uuid::Uuid, at: usize) -> Result<mcp_tasks::AnyTask, Error> {
    let status: String = column(row, at)?;
    let body: String = column(row, at + 1)?;
    let created: i64 = column(row, at + 2)?;
    let updated: i64 = column(row, at + 3)?;
    mcp_tasks::backend::decode(&id.to_string(), &status, created, updated, &body)
}
