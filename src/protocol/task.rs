//! The protocol `Task` object: the serde form of [`AnyTask`] and [`Task<S>`].

use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::any::AnyTask;
use crate::clock::Timestamp;
use crate::id::TaskId;
use crate::input::{InputState, WorkingData};
use crate::status::{TaskState, TaskStatus};
use crate::task::Task;

/// The wire fields, borrowed for serialization.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskObjectRef<'a> {
    task_id: &'a TaskId,
    status: TaskStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'a str>,
    created_at: Timestamp,
    last_updated_at: Timestamp,
    ttl: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    poll_interval: Option<u64>,
}

/// The wire fields, owned for deserialization. Unknown fields are ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskObject {
    task_id: TaskId,
    status: TaskStatus,
    #[serde(default)]
    status_message: Option<String>,
    created_at: Timestamp,
    last_updated_at: Timestamp,
    /// Required, but may be `null`: `deserialize_with` turns off serde's "missing is None".
    #[serde(deserialize_with = "crate::millis::deserialize")]
    ttl: Option<u64>,
    #[serde(default, deserialize_with = "crate::millis::deserialize")]
    poll_interval: Option<u64>,
}

impl<S: TaskState> Task<S> {
    fn wire(&self) -> TaskObjectRef<'_> {
        TaskObjectRef {
            task_id: &self.id,
            status: S::STATUS,
            status_message: self.status_message.as_deref(),
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl: self.ttl.get(),
            poll_interval: self.poll_interval.get(),
        }
    }
}

impl<S: TaskState> Serialize for Task<S> {
    fn serialize<Ser: Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        self.wire().serialize(serializer)
    }
}

impl Serialize for AnyTask {
    fn serialize<Ser: Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        match self {
            AnyTask::Working(task) => task.serialize(serializer),
            AnyTask::InputRequired(task) => task.serialize(serializer),
            AnyTask::Completed(task) => task.serialize(serializer),
            AnyTask::Failed(task) => task.serialize(serializer),
            AnyTask::Cancelled(task) => task.serialize(serializer),
        }
    }
}

/// The common fields of a deserialized task, moved into status `S` with `data`.
fn build<S: TaskState>(wire: TaskObject, data: S::Data) -> AnyTask {
    Task::<S> {
        id: wire.task_id,
        status_message: wire.status_message.map(Arc::from),
        created_at: wire.created_at,
        // A task is never updated before it was created (as in every other reader).
        last_updated_at: wire.last_updated_at.max(wire.created_at),
        ttl: crate::millis::OptMillis::new(wire.ttl),
        poll_interval: crate::millis::OptMillis::new(wire.poll_interval),
        trace: None,
        tool: None,
        data,
        state: std::marker::PhantomData,
    }
    .into_any()
}

/// A task read from a peer: the `Task` object carries no payload, so an `input_required`
/// task has no known requests and a terminal task no known outcome.
impl<'de> Deserialize<'de> for AnyTask {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use crate::status::{Cancelled, Completed, Failed, InputRequired, Working};
        let wire = TaskObject::deserialize(deserializer)?;
        Ok(match wire.status {
            TaskStatus::Working => build::<Working>(wire, WorkingData::default()),
            TaskStatus::InputRequired => {
                build::<InputRequired>(wire, Arc::new(InputState::default()))
            }
            TaskStatus::Completed => build::<Completed>(wire, None),
            TaskStatus::Failed => build::<Failed>(wire, None),
            TaskStatus::Cancelled => build::<Cancelled>(wire, ()),
        })
    }
}

/// Reads a `Task` object and checks that its status is `S`.
impl<'de, S: TaskState> Deserialize<'de> for Task<S> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Task::try_from(AnyTask::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}
