//! [`TraceContext`]: the W3C trace context of the request that created a task, kept with
//! the task so that its work continues the caller's trace on whichever instance runs it.
//!
//! MCP carries trace context in a request's `params._meta` under the unprefixed keys
//! `traceparent`, `tracestate` and `baggage` (SEP-414; the OpenTelemetry MCP semantic
//! conventions). A task's work outlives the request and may move to another instance, so
//! a server puts the context on the [`TaskRequest`](crate::TaskRequest)
//! ([`with_trace_context`](crate::TaskRequest::with_trace_context)); the task keeps it
//! ([`Task::trace_context`](crate::Task::trace_context)) in every status and in its stored
//! form ([`backend::encode`](crate::backend::encode)), and never shows it on the wire.
//!
//! The size is bounded: a `traceparent` is 55 characters, a longer `tracestate` or
//! `baggage` than [`MAX_TRACESTATE`] / [`MAX_BAGGAGE`] bytes is dropped (the trace goes
//! on without it), and a malformed `traceparent` means no context at all. None of this is
//! ever an error for the request.

use serde_json::Value;

use crate::jsonrpc::JsonObject;

/// The longest `tracestate` a task keeps, in bytes (the W3C recommends propagating at
/// least 512 characters of it); a longer one is dropped.
pub const MAX_TRACESTATE: usize = 512;

/// The longest `baggage` a task keeps, in bytes; a longer one is dropped.
pub const MAX_BAGGAGE: usize = 1024;

/// The length of a version-`00` `traceparent`.
const TRACEPARENT_LEN: usize = 55;

/// A W3C trace context: a valid `traceparent`, and the `tracestate` and `baggage` that
/// came with it, each within its bound.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
    baggage: Option<String>,
}

impl TraceContext {
    /// The context of `traceparent`, if it is a valid W3C `traceparent`
    /// (`00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lowercase, ids not all
    /// zero; a later version's first four fields are kept).
    #[must_use]
    pub fn new(traceparent: &str) -> Option<Self> {
        let head = traceparent.get(..TRACEPARENT_LEN)?;
        let rest = &traceparent[TRACEPARENT_LEN..];
        let version = head.get(..2)?;
        let valid_tail = match version {
            "00" => rest.is_empty(),
            "ff" => false,
            _ => rest.is_empty() || rest.starts_with('-'),
        };
        let mut fields = head.split('-');
        let (Some(v), Some(trace), Some(parent), Some(flags), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return None;
        };
        let hex = |field: &str, len: usize| {
            field.len() == len
                && field
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let nonzero = |field: &str| field.bytes().any(|b| b != b'0');
        (valid_tail
            && hex(v, 2)
            && hex(trace, 32)
            && nonzero(trace)
            && hex(parent, 16)
            && nonzero(parent)
            && hex(flags, 2))
        .then(|| TraceContext {
            traceparent: head.to_owned(),
            tracestate: None,
            baggage: None,
        })
    }

    /// The same context with this `tracestate`, kept if it is printable ASCII of at most
    /// [`MAX_TRACESTATE`] bytes (otherwise the context goes on without one).
    #[must_use]
    pub fn with_tracestate(mut self, tracestate: Option<&str>) -> Self {
        self.tracestate = bounded(tracestate, MAX_TRACESTATE);
        self
    }

    /// The same context with this `baggage`, kept if it is printable ASCII of at most
    /// [`MAX_BAGGAGE`] bytes (otherwise the context goes on without one).
    #[must_use]
    pub fn with_baggage(mut self, baggage: Option<&str>) -> Self {
        self.baggage = bounded(baggage, MAX_BAGGAGE);
        self
    }

    /// The context in a `_meta` object (SEP-414: `traceparent`, `tracestate`, `baggage`),
    /// if it names a valid `traceparent`.
    #[must_use]
    pub fn from_meta(meta: &JsonObject) -> Option<Self> {
        let text = |key| meta.get(key).and_then(Value::as_str);
        Self::new(text("traceparent")?)
            .map(|context| context.with_tracestate(text("tracestate")))
            .map(|context| context.with_baggage(text("baggage")))
    }

    /// The context in a request's `params._meta`, if any.
    #[must_use]
    pub fn of_params(params: Option<&Value>) -> Option<Self> {
        params
            .and_then(|params| params.get("_meta"))
            .and_then(Value::as_object)
            .and_then(Self::from_meta)
    }

    /// Writes the context into a `_meta` object (as a client propagates it).
    pub fn write_meta(&self, meta: &mut JsonObject) {
        meta.insert("traceparent".into(), self.traceparent.clone().into());
        for (key, value) in [("tracestate", &self.tracestate), ("baggage", &self.baggage)] {
            if let Some(value) = value {
                meta.insert(key.into(), value.clone().into());
            }
        }
    }

    /// The `traceparent`.
    #[must_use]
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The trace id: 32 lowercase hex digits.
    #[must_use]
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The `tracestate`, if one was kept.
    #[must_use]
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The `baggage`, if one was kept.
    #[must_use]
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }
}

fn bounded(text: Option<&str>, max: usize) -> Option<String> {
    text.filter(|text| {
        !text.is_empty() && text.len() <= max && text.bytes().all(|b| (b' '..=b'~').contains(&b))
    })
    .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn only_a_valid_traceparent_makes_a_context() {
        let context = TraceContext::new(PARENT).expect("valid");
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        // A later version's extra fields are cut; version 00 has none.
        let later = format!("01{}-extra", &PARENT[2..]);
        assert_eq!(
            TraceContext::new(&later).map(|c| c.traceparent().to_owned()),
            Some(format!("01{}", &PARENT[2..]))
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            &format!("{PARENT}-x"),
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(TraceContext::new(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn oversize_or_odd_companions_are_dropped_not_refused() {
        let meta = json!({
            "traceparent": PARENT,
            "tracestate": "rojo=00f067aa0ba902b7",
            "baggage": "x".repeat(MAX_BAGGAGE + 1),
        });
        let context = TraceContext::from_meta(meta.as_object().unwrap()).expect("kept");
        assert_eq!(context.tracestate(), Some("rojo=00f067aa0ba902b7"));
        assert_eq!(context.baggage(), None);
        let odd = context.clone().with_tracestate(Some("a=\u{e9}"));
        assert_eq!(odd.tracestate(), None);
        let mut written = JsonObject::new();
        context.write_meta(&mut written);
        assert_eq!(TraceContext::from_meta(&written), Some(context));
        let params = json!({"name": "x", "_meta": {"traceparent": "nope"}});
        assert_eq!(TraceContext::of_params(Some(&params)), None);
    }

    #[test]
    fn a_task_keeps_its_context_through_the_store_and_never_shows_it() {
        use crate::{Owner, TaskRegistry, TaskRequest, TaskStore};
        let registry = TaskRegistry::default();
        let owner = Owner::new("alice");
        let context = TraceContext::new(PARENT).map(|c| c.with_baggage(Some("k=v")));
        let request = TaskRequest::new(1, "tools/call").with_trace_context(context.clone());
        let (handle, task) = registry.create(&owner, request).unwrap();
        assert_eq!(task.trace_context(), context.as_ref());
        let done = handle.complete(JsonObject::new()).unwrap();
        assert_eq!(done.trace_context(), context.as_ref());
        let done = registry.get(&owner, &task.id().to_string()).unwrap();
        assert_eq!(done.trace_context(), context.as_ref(), "kept when finished");
        let v1 = serde_json::to_string(&done).unwrap();
        let ext = serde_json::to_string(&crate::ext::DetailedTask::from(&done)).unwrap();
        for wire in [v1, ext] {
            assert!(
                !wire.contains("4bf92f35") && !wire.contains("k=v"),
                "{wire}"
            );
        }
    }
}
