//! The answers that show a stored result, written from its JSON text: a completed task's
//! 2026-07-28 `tasks/get` (the result inlined, with its `resultType`) and its 2025-11-25
//! `tasks/result` (the result, tagged with the related-task `_meta`).
//!
//! The typed messages of the core ([`ext::GetTaskResult`], [`GetTaskPayloadResult`](mcp_tasks::protocol::GetTaskPayloadResult))
//! own their result as a map, so showing a stored one through them reads the text a store
//! keeps ([`AnyTask::result_json`]) back into a tree of maps only to print and drop it.
//! Here the text's top-level members are read as they are written (no value in them is
//! read into a tree) and written again with the one key the message sets merged in at its
//! place in the map's order: the same text, byte for byte (the tests compare the two).
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use std::borrow::Cow;
use std::fmt;

use mcp_tasks::ext::{self, TaskFields};
use mcp_tasks::protocol::RELATED_TASK_META_KEY;
use mcp_tasks::{AnyTask, TaskId, TaskStatus};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;

/// The member every 2026-07-28 result carries, and its value for a finished result.
const RESULT_TYPE: &str = "resultType";
const COMPLETE: &str = "complete";

/// The JSON text of `tasks/get` on 2026-07-28 ([`ext::GetTaskResult::new`]) for `task`.
pub(crate) fn ext_get_text(task: &AnyTask) -> serde_json::Result<String> {
    if ext::wire_status(task) != TaskStatus::Completed {
        return serde_json::to_string(&ext::GetTaskResult::new(task));
    }
    let text = task.result_json();
    let members = match &text {
        Some(text) => serde_json::from_str(text)?,
        None => Members::default(),
    };
    serde_json::to_string(&CompletedGet {
        result_type: COMPLETE,
        task: TaskFields::from(task),
        result: Merged {
            members: &members,
            key: RESULT_TYPE,
            value: Set::IfAbsent(COMPLETE),
        },
    })
}

/// The JSON text of `tasks/result` on 2025-11-25 for the `result` of `task_id`, given as
/// JSON text ([`GetTaskPayloadResult::new`](mcp_tasks::protocol::GetTaskPayloadResult::new)).
pub(crate) fn payload_text(result: &str, task_id: &TaskId) -> serde_json::Result<String> {
    let members: Members<'_> = serde_json::from_str(result)?;
    let related = Related(task_id);
    let own_meta = match members.get("_meta") {
        Some(meta) if meta.get().starts_with('{') => Some(serde_json::from_str(meta.get())?),
        _ => None,
    };
    let meta = match &own_meta {
        Some(own) => Set::Replace(Meta::Merged(Merged {
            members: own,
            key: RELATED_TASK_META_KEY,
            value: Set::Replace(related),
        })),
        None => Set::Replace(Meta::Only(related)),
    };
    serde_json::to_string(&Merged {
        members: &members,
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

/// The members of a JSON object's text in their order, each value as it is written.
#[derive(Default)]
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl Members<'_> {
    fn get(&self, key: &str) -> Option<&RawValue> {
        self.0
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| *value)
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some((Key(name), value)) = map.next_entry()? {
                    members.push((name, value));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Object)
    }
}

/// A member's name: borrowed from the text unless it is written with escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> Visitor<'de> for Name {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// What a merged key's value is.
enum Set<V> {
    /// The object's own value if it has the key, else this one.
    IfAbsent(V),
    /// This one, whether or not the object has the key.
    Replace(V),
}

/// An object's `members` with `key` set as `value` says, in the members' order (printed
/// from a `serde_json::Map`, a B-tree map here: ordered by key bytes).
struct Merged<'a, V> {
    members: &'a Members<'a>,
    key: &'static str,
    value: Set<V>,
}

impl<V: Serialize> Serialize for Merged<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let present = self.members.get(self.key).is_some();
        let len = self.members.0.len() + usize::from(!present);
        let mut out = serializer.serialize_map(Some(len))?;
        let mut pending = !present;
        for (key, value) in &self.members.0 {
            if pending && &**key > self.key {
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
    use mcp_tasks::{
        JsonObject, Outcome, Owner, RequestId, Task, TaskRegistry, TaskRequest, TaskStore,
        Timestamp,
    };
    use serde_json::{Value, json};

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
            json!({"a\"b": {"\u{1}": "\\"}, "_meta": {"\n": 1}, "\u{e9}": [{}]}),
            json!({"deep": deep(200), "resultType": 1}),
        ]
        .into_iter()
        .map(object)
        .collect()
    }

    /// An array nested `levels` deep: deeper than `serde_json` reads into a value.
    fn deep(levels: usize) -> Value {
        (0..levels).fold(json!(1), |inner, _| json!([inner]))
    }

    fn id() -> TaskId {
        TaskId::from("0f5d9f9e-2c1b-4f7e-9a3b-5a7c1e2d3f40")
    }

    #[test]
    fn a_payload_is_written_as_the_typed_message_writes_it() {
        for result in results() {
            let typed = protocol::GetTaskPayloadResult::new(result.clone(), &id());
            assert_eq!(
                payload_text(&serde_json::to_string(&result).unwrap(), &id()).unwrap(),
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

    #[test]
    fn a_result_text_that_is_not_an_object_is_an_error_that_says_so() {
        for text in ["[]", "1", "\"a\"", "{\"a\":"] {
            let error = payload_text(text, &id()).unwrap_err().to_string();
            assert!(
                text.starts_with('{') || error.contains("expected a JSON object"),
                "{text}: {error}"
            );
        }
    }

    /// Read from a registry, whose copies keep their result as text: the answers are
    /// written from that text as the typed messages write the result read back.
    #[test]
    fn a_stored_result_is_written_from_its_text_as_the_typed_messages_write_it() {
        let registry = TaskRegistry::new();
        let owner = Owner::new("alice");
        for (n, result) in (0..).zip(results()) {
            let request = TaskRequest::new(RequestId::Number(n), "tools/call");
            let (handle, task) = registry.create(&owner, request).unwrap();
            let _completed = handle.complete(result.clone()).unwrap();
            let stored = registry.get(&owner, &task.id().to_string()).unwrap();
            // Kept as text unless too deep to read back (the result of `deep`).
            let text = serde_json::to_string(&result).unwrap();
            let reads_back = serde_json::from_str::<Value>(&text).is_ok();
            let lent = matches!(stored.result_json(), Some(Cow::Borrowed(_)));
            assert_eq!(lent, reads_back, "{result:?}");
            assert_eq!(
                ext_get_text(&stored).unwrap(),
                serde_json::to_string(&ext::GetTaskResult::new(&stored)).unwrap(),
                "{result:?}"
            );
            let typed = protocol::GetTaskPayloadResult::new(result, task.id());
            assert_eq!(
                payload_text(&stored.result_json().unwrap(), task.id()).unwrap(),
                serde_json::to_string(&typed).unwrap(),
            );
        }
    }
}
