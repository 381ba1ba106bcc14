//! The `tasks` capabilities and the tool-level `execution.taskSupport`.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A capability leaf: present means supported. Serialized as `{}`; any object reads as
/// present (members are ignored).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Supported;

impl Serialize for Supported {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

impl<'de> Deserialize<'de> for Supported {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = Supported;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object (a capability leaf such as {})")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Supported, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Supported)
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// `capabilities.tasks` of a server: `{list?, cancel?, requests?: {tools?: {call?}}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerTasksCapability {
    /// The server serves `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Supported>,
    /// The server serves `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Supported>,
    /// The request types the server accepts as tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ServerTaskRequests>,
}

/// `capabilities.tasks.requests` of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerTaskRequests {
    /// Tool requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsTaskRequests>,
}

/// `capabilities.tasks.requests.tools` of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolsTaskRequests {
    /// Task-augmented `tools/call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Supported>,
}

impl ServerTasksCapability {
    /// A server that lists, cancels, and accepts `tools/call` as a task.
    #[must_use]
    pub fn all() -> Self {
        Self {
            list: Some(Supported),
            cancel: Some(Supported),
            requests: Some(ServerTaskRequests {
                tools: Some(ToolsTaskRequests {
                    call: Some(Supported),
                }),
            }),
        }
    }

    /// Whether `tasks.requests.tools.call` is declared.
    #[must_use]
    pub fn tools_call(&self) -> bool {
        self.requests
            .as_ref()
            .and_then(|r| r.tools.as_ref())
            .is_some_and(|t| t.call.is_some())
    }
}

/// `capabilities.tasks` of a client:
/// `{list?, cancel?, requests?: {sampling?: {createMessage?}, elicitation?: {create?}}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientTasksCapability {
    /// The client serves `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Supported>,
    /// The client serves `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Supported>,
    /// The request types the client accepts as tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ClientTaskRequests>,
}

/// `capabilities.tasks.requests` of a client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientTaskRequests {
    /// Sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingTaskRequests>,
    /// Elicitation requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationTaskRequests>,
}

/// `capabilities.tasks.requests.sampling` of a client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingTaskRequests {
    /// Task-augmented `sampling/createMessage`.
    #[serde(
        default,
        rename = "createMessage",
        skip_serializing_if = "Option::is_none"
    )]
    pub create_message: Option<Supported>,
}

/// `capabilities.tasks.requests.elicitation` of a client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElicitationTaskRequests {
    /// Task-augmented `elicitation/create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<Supported>,
}

/// Whether a tool can be called as a task (`Tool.execution.taskSupport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Never as a task (the default when absent).
    #[default]
    Forbidden,
    /// As a task or as a normal request.
    Optional,
    /// Only as a task.
    Required,
}

/// `Tool.execution`: how a tool runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool can run as a task; absent means `forbidden`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

impl ToolExecution {
    /// An execution object declaring `task_support`.
    #[must_use]
    pub fn new(task_support: TaskSupport) -> Self {
        Self {
            task_support: Some(task_support),
        }
    }

    /// The effective task support (`forbidden` when absent).
    #[must_use]
    pub fn task_support(&self) -> TaskSupport {
        self.task_support.unwrap_or_default()
    }
}
