//! The answers that show a stored result, serialized from the stored object itself: a
//! completed task's 2026-07-28 `tasks/get` (the result inlined, with its `resultType`) and
//! its 2025-11-25 `tasks/result` (the result, tagged with the related-task `_meta`).
//!
//! The typed messages of the core ([`ext::GetTaskResult`], [`GetTaskPayloadResult`](mcp_tasks::protocol::GetTaskPayloadResult))
//! own their result, so showing a stored one through them copies it (a `serde_json` map is
//! a B-tree: a copy allocates and fills a node per object) only to serialize the copy and
//! drop it. Here the stored object is written as it is, with the one key the message sets
//! merged in at its place in the map's order: the same text, byte for byte (the tests
//! compare the two).
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use mcp_tasks::ext::{self, TaskFields};
use mcp_tasks::protocol::RELATED_TASK_META_KEY;
use mcp_tasks::{AnyTask, JsonObject, Outcome, TaskId, TaskStatus};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// The member every 2026-07-28 result carries, and its value for a finished result.
const RESULT_TYPE: &str = "resultType";
const COMPLETE: &str = "complete";

/// The JSON text of `tasks/get` on 2026-07-28 ([`ext::GetTaskResult::new`]) for `task`.
pub(crate) fn ext_get_text(task: &AnyTask) -> serde_json::Result<String> {
    if ext::wire_status(task) != TaskStatus::Completed {
        return serde_json::to_string(&ext::GetTaskResult::new(task));
    }
    let empty = JsonObject::new();
    let result = match task.outcome() {
        Some(Outcome::Result(result)) => result,
        _ => &empty,
    };
    serde_json::to_string(&CompletedGet {
        result_type: COMPLETE,
        task: TaskFields::from(task),
        result: Merged {
            map: result,
            key: RESULT_TYPE,
            value: Set::IfAbsent(COMPLETE),
        },
    })
}

/// The JSON text of `tasks/result` on 2025-11-25 for the stored `result` of `task_id`
/// ([`GetTaskPayloadResult::new`](mcp_tasks::protocol::GetTaskPayloadResult::new)).
pub(crate) fn payload_text(result: &JsonObject, task_id: &TaskId) -> serde_json::Result<String> {
    let related = Related(task_id);
    let meta = match result.get("_meta") {
        Some(Value::Object(meta)) => Set::Replace(Meta::Merged(Merged {
            map: meta,
            key: RELATED_TASK_META_KEY,
            value: Set::Replace(related),
        })),
        _ => Set::Replace(Meta::Only(related)),
    };
    serde_json::to_string(&Merged {
        map: result,
        key: "_meta",
        value: meta,
    })
}

/// A completed task's `tasks/get` result: the fields in the order
/// [`ext::GetTaskResult`] writes them (`resultType`, the task's fields, `result`; a
/// completed task has no `inputRequests`, `error` or `_meta` there).
#[derive(serde::Serialize)]
struct CompletedGet<'a> {
    #[serde(rename = "resultType")]
    result_type: &'static str,
    #[serde(flatten)]
    task: TaskFields,
    result: Merged<'a, &'static str>,
}

/// What a merged key's value is.
enum Set<V> {
    /// The map's own value if it has the key, else this one.
    IfAbsent(V),
    /// This one, whether or not the map has the key.
    Replace(V),
}

/// `map` with `key` set as `value` says, in the key order of `map` (a `serde_json::Map`
/// here is a B-tree map, ordered by key bytes).
struct Merged<'a, V> {
    map: &'a JsonObject,
    key: &'static str,
    value: Set<V>,
}

impl<V: Serialize> Serialize for Merged<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let present = self.map.contains_key(self.key);
        let len = self.map.len() + usize::from(!present);
        let mut out = serializer.serialize_map(Some(len))?;
        let mut pending = !present;
        for (key, value) in self.map {
            if pending && key.as_str() > self.key {
                self.value_entry(&mut out)?;
                pending = false;
            }
            if key == self.key {
                match &self.value {
                    Set::IfAbsent(_) => out.serialize_entry(key, value)?,
                    Set::Replace(_) => self.value_entry(&mut out)?,
                }
            } else {
                out.serialize_entry(key, value)?;
            }
        }
        if pending {
            self.value_entry(&mut out)?;
        }
        out.end()
    }
}

impl<V: Serialize> Merged<'_, V> {
    fn value_entry<M: SerializeMap>(&self, out: &mut M) -> Result<(), M::Error> {
        match &self.value {
            Set::IfAbsent(value) | Set::Replace(value) => out.serialize_entry(self.key, value),
        }
    }
}

/// The related-task entry's value: `{"taskId": ...}`.
struct Related<'a>(&'a TaskId);

impl Serialize for Related<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(1))?;
        out.serialize_entry("taskId", &self.0.to_string())?;
        out.end()
    }
}

/// The `_meta` of a `tasks/result`: the result's own with the related-task key merged in,
/// or that key alone.
enum Meta<'a> {
    Merged(Merged<'a, Related<'a>>),
    Only(Related<'a>),
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Meta::Merged(merged) => merged.serialize(serializer),
            Meta::Only(related) => {
                let mut out = serializer.serialize_map(Some(1))?;
                out.serialize_entry(RELATED_TASK_META_KEY, related)?;
                out.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks::protocol;
    use mcp_tasks::{Task, Timestamp};
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => unreachable!("an object"),
        }
    }

    /// Results with keys before, at and after the merged keys (`_meta`, `resultType`), a
    /// `_meta` that is not an object, one with and without the related-task key, and none.
    fn results() -> Vec<JsonObject> {
        [
            json!({}),
            json!({"content": [{"type": "text", "text": "slept 0 ms"}], "isError": false}),
            json!({"content": [], "isError": true}),
            json!({"resultType": "other", "structuredContent": {"a": 1}}),
            json!({"A": 1, "_meta": {"x": 2}, "zz": "\u{e9}\"\n"}),
            json!({"_meta": 3, "content": []}),
            json!({"_meta": {"io.modelcontextprotocol/related-task": {"taskId": "old"}, "k": 1}}),
            json!({"_meta": {"a": 1, "zzz": [1, 2.5, null]}, "resultTypf": 1, "resultTypd": 0}),
        ]
        .into_iter()
        .map(object)
        .collect()
    }

    fn id() -> TaskId {
        TaskId::from("0f5d9f9e-2c1b-4f7e-9a3b-5a7c1e2d3f40")
    }

    #[test]
    fn a_payload_is_written_as_the_typed_message_writes_it() {
        for result in results() {
            let typed = protocol::GetTaskPayloadResult::new(result.clone(), &id());
            assert_eq!(
                payload_text(&result, &id()).unwrap(),
                serde_json::to_string(&typed).unwrap(),
                "{result:?}"
            );
        }
    }

    #[test]
    fn a_completed_get_is_written_as_the_typed_message_writes_it() {
        let at = Timestamp::from_unix_millis(1_700_000_000_123);
        let working = Task::new(id(), at)
            .with_ttl(Some(60_000))
            .with_poll_interval(Some(50));
        let mut tasks = vec![
            working.clone().into_any(),
            working
                .clone()
                .fail(Outcome::error(-32000, "broke"), at)
                .into_any(),
        ];
        for result in results() {
            let mut ended = working.clone();
            ended.set_status_message(Some("done".into()), at);
            tasks.push(ended.clone().complete(result.clone(), at).into_any());
            tasks.push(ended.fail(Outcome::Result(result), at).into_any());
        }
        for task in &tasks {
            assert_eq!(
                ext_get_text(task).unwrap(),
                serde_json::to_string(&ext::GetTaskResult::new(task)).unwrap(),
                "{task:?}"
            );
        }
    }
}
