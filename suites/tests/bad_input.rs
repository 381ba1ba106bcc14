//! One table of hostile inputs and the typed error and JSON-RPC code each must get, through
//! the public API: the dispatcher, the registry, `augmentation` + `accept`, serde, and (in
//! its own table) the stdio server example.
//!
//! Every row runs against one registry holding tasks of every status for several owners.
//! For every row the registry's contents (every task of every owner, read through `list`
//! and `get`, and the task count) are compared before and after: a rejected input must
//! leave them unchanged; an accepted `task` param adds exactly its one task.
//!
//! How raw input becomes an answer, as a server does it: JSON text that does not parse is
//! `-32700` (serde's syntax and end-of-input errors); text that parses but does not fit the
//! expected type is `-32602` (serde's data errors); the dispatcher and the registry give
//! their own codes ([`Error::code`]).

use std::time::Duration;

use mcp_tasks::TaskStore;
use mcp_tasks::ext::ExtDispatcher;
use mcp_tasks::protocol::{
    Augmentation, CreateTaskResult, Dispatcher, ListTasksParams, TaskIdParams, TaskMetadata,
    TaskSupport, augmentation,
};
use mcp_tasks::{
    AnyTask, Error, JsonObject, JsonRpcError, Limits, ManualClock, Outcome, Owner, RequestId, Task,
    TaskRegistry, TaskRequest, TaskStatus, Timestamp, TtlPolicy, Working, jsonrpc,
};
use mcp_tasks_servers::child::LineChild;
use mcp_tasks_suites::server_binary;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const MAX_TTL: u64 = 600_000;
const MB: usize = 1 << 20;

// ---------------------------------------------------------------------------------------
// The registry under attack
// ---------------------------------------------------------------------------------------

/// The owners' tasks, by name, and real cursors.
struct Fixture {
    dispatcher: Dispatcher,
    alice: Owner,
    bob: Owner,
    anonymous: Owner,
    /// Alice's tasks.
    working: String,
    input_required: String,
    completed: String,
    failed: String,
    cancelled: String,
    bob_working: String,
    anonymous_working: String,
    /// A task of another registry (of alice there too).
    foreign: String,
    /// Alice's cursor after her first task.
    alice_cursor: String,
    bob_cursor: String,
    anonymous_cursor: String,
    /// A cursor another registry issued to alice.
    foreign_cursor: String,
}

#[derive(Debug, PartialEq)]
struct Snapshot {
    tasks: Vec<Vec<AnyTask>>,
    len: usize,
}

fn registry() -> TaskRegistry {
    TaskRegistry::builder()
        .clock(ManualClock::new(
            Timestamp::parse("2025-11-25T10:30:00Z").expect("a valid timestamp"),
        ))
        .ttl_policy(TtlPolicy::new(Some(60_000)).with_max(MAX_TTL))
        .limits(Limits::none())
        .build()
        .expect("a valid policy")
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

impl Fixture {
    fn new() -> Self {
        let registry = registry();
        let (alice, bob, anonymous) = (Owner::new("alice"), Owner::new("bob"), Owner::anonymous());
        let new = |registry: &TaskRegistry, owner: &Owner| {
            registry
                .insert(owner, TaskRequest::new(1, "tools/call"))
                .expect("no limits")
                .id()
                .to_string()
        };
        let working = new(&registry, &alice);
        let input_required = new(&registry, &alice);
        registry
            .update_status(&alice, &input_required, TaskStatus::InputRequired, None)
            .expect("working -> input_required");
        let completed = new(&registry, &alice);
        registry
            .store_result(
                &alice,
                &completed,
                TaskStatus::Completed,
                Outcome::Result(object(json!({"content": []}))),
            )
            .expect("completes");
        let failed = new(&registry, &alice);
        registry
            .store_result(
                &alice,
                &failed,
                TaskStatus::Failed,
                Outcome::error(-32000, "tool exploded"),
            )
            .expect("fails");
        let cancelled = new(&registry, &alice);
        let _ = registry.cancel(&alice, &cancelled, None).expect("cancels");
        let bob_working = new(&registry, &bob);
        let _bob_second = new(&registry, &bob);
        let anonymous_working = new(&registry, &anonymous);
        let _anonymous_second = new(&registry, &anonymous);
        let cursor = |registry: &TaskRegistry, owner: &Owner| {
            registry
                .list(owner, None, 1)
                .expect("first page")
                .next_cursor
                .expect("more than one task")
        };
        let other = self::registry();
        let foreign = new(&other, &alice);
        let _ = new(&other, &alice);
        Fixture {
            alice_cursor: cursor(&registry, &alice),
            bob_cursor: cursor(&registry, &bob),
            anonymous_cursor: cursor(&registry, &anonymous),
            foreign_cursor: cursor(&other, &alice),
            dispatcher: Dispatcher::new(registry)
                .with_page_size(2)
                .with_result_timeout(Some(Duration::from_millis(1))),
            alice,
            bob,
            anonymous,
            working,
            input_required,
            completed,
            failed,
            cancelled,
            bob_working,
            anonymous_working,
            foreign,
        }
    }

    fn registry(&self) -> &TaskRegistry {
        self.dispatcher.store()
    }

    fn owners(&self) -> [Owner; 5] {
        [
            self.alice.clone(),
            self.bob.clone(),
            self.anonymous.clone(),
            Owner::new(""),
            Owner::new("Alice"),
        ]
    }

    /// Every task of every owner, through `list` (following the cursors) and `get`.
    fn snapshot(&self) -> Snapshot {
        let registry = self.registry();
        let tasks = self
            .owners()
            .iter()
            .map(|owner| {
                let mut tasks = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let page = registry
                        .list(owner, cursor.as_deref(), 2)
                        .expect("the registry's own cursor");
                    tasks.extend(page.tasks);
                    match page.next_cursor {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                    assert!(tasks.len() < 1_000, "the cursors do not end");
                }
                for task in &tasks {
                    assert_eq!(
                        &registry
                            .get(owner, &task.id().to_string())
                            .expect("visible"),
                        task
                    );
                }
                tasks
            })
            .collect();
        Snapshot {
            tasks,
            len: registry.len(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------

/// What a row must get.
#[derive(Debug, Clone)]
enum Expect {
    /// An error with this JSON-RPC code whose message contains the fragment, and for rows
    /// that reach a typed [`Error`], that variant (its `Debug` name).
    Refused {
        code: i64,
        fragment: &'static str,
        variant: Option<&'static str>,
    },
    /// Accepted (an edge case that is valid): the answer contains the fragment.
    Accepted(&'static str),
}

fn refused(code: i64, fragment: &'static str) -> Expect {
    Expect::Refused {
        code,
        fragment,
        variant: None,
    }
}

fn refused_as(code: i64, fragment: &'static str, variant: &'static str) -> Expect {
    Expect::Refused {
        code,
        fragment,
        variant: Some(variant),
    }
}

/// A registry operation, for rows that use the registry directly.
enum Op {
    Get(String),
    Cancel(String),
    Result(String),
    Wait(String),
    Remove(String),
    Origin(String),
    List(Option<String>),
    UpdateStatus(String, TaskStatus),
    StoreResult(String, TaskStatus, Outcome),
}

type Parse = fn(&[u8]) -> Result<Value, serde_json::Error>;

enum Input {
    /// JSON text as the params of a task method, from `owner`.
    Text {
        owner: Owner,
        method: &'static str,
        text: Vec<u8>,
    },
    /// Params already parsed (or absent), from `owner`.
    Params {
        owner: Owner,
        method: &'static str,
        params: Option<Value>,
    },
    /// `tools/call` params for a tool with `support` on a server that declared
    /// `tasks.requests.tools.call` (or not); a task decision is then accepted for alice.
    Augment {
        support: TaskSupport,
        declared: bool,
        text: Vec<u8>,
    },
    /// Text read as a typed message.
    Serde { parse: Parse, text: Vec<u8> },
    /// A status string read with `FromStr`.
    Status(&'static str),
    /// The registry, directly.
    Registry { owner: Owner, op: Op },
    /// A request to the tasks extension's dispatcher, which `declared` the extension or not.
    Ext {
        owner: Owner,
        method: &'static str,
        params: Option<Value>,
        declared: bool,
    },
}

struct Row {
    name: String,
    input: Input,
    expect: Expect,
}

/// A typed parse for [`Input::Serde`] as a server does it: the text to a `Value` (a syntax
/// error is `-32700`), then the `Value` to `T` (a data error is `-32602`). Answers with the
/// value's JSON.
fn typed<T: DeserializeOwned + Serialize>(text: &[u8]) -> Result<Value, serde_json::Error> {
    let value: Value = serde_json::from_slice(text)?;
    serde_json::from_value::<T>(value).and_then(|value| serde_json::to_value(value))
}

/// A typed parse straight from the text. (serde_json reports a wrong JSON type for an
/// enum, e.g. `"status": null` read from text, as a syntax error, "expected value"; read
/// from a `Value` it is the data error it is.)
fn typed_from_text<T: DeserializeOwned + Serialize>(
    text: &[u8],
) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<T>(text).and_then(|value| serde_json::to_value(value))
}

/// A serde error as a server answers it: syntax → `-32700`, data → `-32602`.
fn serde_error(err: &serde_json::Error) -> JsonRpcError {
    use serde_json::error::Category;
    match err.classify() {
        Category::Syntax | Category::Eof => {
            JsonRpcError::new(jsonrpc::PARSE_ERROR, format!("parse error: {err}"))
        }
        Category::Data => {
            JsonRpcError::new(jsonrpc::INVALID_PARAMS, format!("invalid params: {err}"))
        }
        Category::Io => JsonRpcError::new(jsonrpc::INTERNAL_ERROR, err.to_string()),
    }
}

/// The typed error as `(code, message, variant)`.
fn typed_error(err: &Error) -> (JsonRpcError, String) {
    let debug = format!("{err:?}");
    let variant = debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned();
    (err.to_jsonrpc(), variant)
}

type Answer = Result<Value, (JsonRpcError, Option<String>)>;

fn to_json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("serializes")
}

/// Runs one row; returns the answer, and the task an accepted `task` param created.
fn run(fixture: &Fixture, input: &Input) -> (Answer, Option<AnyTask>) {
    let registry = fixture.registry();
    let typed_err = |err: Error| {
        let (error, variant) = typed_error(&err);
        Err((error, Some(variant)))
    };
    let answer = match input {
        Input::Text {
            owner,
            method,
            text,
        } => match serde_json::from_slice::<Value>(text) {
            Err(err) => Err((serde_error(&err), None)),
            Ok(params) => fixture
                .dispatcher
                .dispatch(owner, method, Some(&params))
                .map_err(|error| (error, None)),
        },
        Input::Params {
            owner,
            method,
            params,
        } => fixture
            .dispatcher
            .dispatch(owner, method, params.as_ref())
            .map_err(|error| (error, None)),
        Input::Augment {
            support,
            declared,
            text,
        } => {
            let params = match serde_json::from_slice::<Value>(text) {
                Err(err) => return (Err((serde_error(&err), None)), None),
                Ok(params) => object(params),
            };
            match augmentation(*support, *declared, &params) {
                Augmentation::Normal => Ok(json!("normal")),
                Augmentation::Refuse(err) => typed_err(err),
                Augmentation::Task { ttl } => {
                    match fixture.dispatcher.accept(
                        &fixture.alice,
                        RequestId::from(1),
                        "tools/call",
                        ttl,
                    ) {
                        Ok((handle, created)) => {
                            let _ = handle.detach();
                            let task = created.task.clone();
                            return (Ok(to_json(&created)), Some(task));
                        }
                        Err(err) => typed_err(err),
                    }
                }
            }
        }
        Input::Serde { parse, text } => parse(text).map_err(|err| (serde_error(&err), None)),
        Input::Ext {
            owner,
            method,
            params,
            declared,
        } => ExtDispatcher::new(registry.clone())
            .dispatch(owner, method, params.as_ref(), *declared)
            .map_err(|error| (error, None)),
        Input::Status(text) => match text.parse::<TaskStatus>() {
            Ok(status) => Ok(to_json(&status)),
            Err(err) => Err((
                JsonRpcError::new(jsonrpc::INVALID_PARAMS, err.to_string()),
                Some("UnknownStatus".to_owned()),
            )),
        },
        Input::Registry { owner, op } => {
            let result = match op {
                Op::Get(id) => registry.get(owner, id).map(|task| to_json(&task)),
                Op::Cancel(id) => registry.cancel(owner, id, None).map(|task| to_json(&task)),
                Op::Result(id) => registry.result(owner, id).map(|task| to_json(&task)),
                Op::Wait(id) => registry
                    .wait(owner, id, Some(Duration::from_millis(1)))
                    .map(|task| to_json(&task)),
                Op::Remove(id) => registry.remove(owner, id).map(|task| to_json(&task)),
                Op::Origin(id) => registry
                    .origin(owner, id)
                    .map(|origin| json!(origin.method.as_ref())),
                Op::List(cursor) => registry
                    .list(owner, cursor.as_deref(), 10)
                    .map(|page| json!(page.tasks.len())),
                Op::UpdateStatus(id, status) => registry
                    .update_status(owner, id, *status, None)
                    .map(|task| to_json(&task)),
                Op::StoreResult(id, status, outcome) => registry
                    .store_result(owner, id, *status, outcome.clone())
                    .map(|task| to_json(&task)),
            };
            match result {
                Ok(value) => Ok(value),
                Err(err) => typed_err(err),
            }
        }
    };
    (answer, None)
}

/// JSON text for a tasks method's params.
fn text(value: Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// `depth` nested arrays: `[[[...]]]`.
fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `depth` nested objects: `{"a":{"a":...{}}}`.
fn nested_objects(depth: usize) -> String {
    format!("{}{{}}{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

/// A Task object with `field` set to the raw JSON `raw`.
fn task_with(field: &str, raw: &str) -> Vec<u8> {
    let mut task = object(json!({
        "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
        "status": "working",
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:30:00Z",
        "ttl": 60000
    }));
    task.insert(field.to_owned(), json!("__RAW__"));
    Value::Object(task)
        .to_string()
        .replace("\"__RAW__\"", raw)
        .into_bytes()
}

/// A Task object without `field`.
fn task_without(field: &str) -> Vec<u8> {
    let mut task = object(serde_json::from_slice(&task_with("x", "0")).expect("json"));
    task.remove(field);
    text(Value::Object(task))
}

fn rows(fx: &Fixture) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut add = |name: String, input: Input, expect: Expect| {
        rows.push(Row {
            name,
            input,
            expect,
        });
    };
    let alice = &fx.alice;
    let get = |params: Vec<u8>| Input::Text {
        owner: fx.alice.clone(),
        method: "tasks/get",
        text: params,
    };
    let list = |params: Vec<u8>| Input::Text {
        owner: fx.alice.clone(),
        method: "tasks/list",
        text: params,
    };
    let not_found = || refused(-32602, "task not found");
    let deep = 100_000;

    // --- Malformed JSON: -32700 before anything reaches the registry.
    for (name, raw, fragment) in [
        (
            "truncated",
            r#"{"taskId": "#.to_owned(),
            "EOF while parsing",
        ),
        ("empty", String::new(), "EOF while parsing"),
        (
            "unquoted key",
            r#"{taskId: "x"}"#.to_owned(),
            "key must be a string",
        ),
        (
            "single quotes",
            r#"{"taskId": 'x'}"#.to_owned(),
            "expected value",
        ),
        (
            "trailing comma",
            r#"{"taskId": "x",}"#.to_owned(),
            "trailing comma",
        ),
        (
            "two values",
            r#"{"taskId": "x"} {}"#.to_owned(),
            "trailing characters",
        ),
        ("NaN", r#"{"taskId": NaN}"#.to_owned(), "expected value"),
        (
            "lone surrogate escape",
            r#"{"taskId": "\ud800"}"#.to_owned(),
            "hex escape",
        ),
        (
            "lone trailing surrogate escape",
            r#"{"taskId": "\udc00"}"#.to_owned(),
            "hex escape",
        ),
        (
            "bad escape",
            r#"{"taskId": "\x41"}"#.to_owned(),
            "invalid escape",
        ),
        (
            "control character in a string",
            "{\"taskId\": \"a\u{1}b\"}".to_owned(),
            "control character",
        ),
        (
            "number out of range",
            r#"{"taskId": 1e400}"#.to_owned(),
            "number out of range",
        ),
        (
            "100,000 nested arrays",
            nested_arrays(deep),
            "recursion limit exceeded",
        ),
        (
            "100,000 nested objects",
            nested_objects(deep),
            "recursion limit exceeded",
        ),
        (
            "100,000 nested arrays beside a valid taskId",
            format!(
                r#"{{"taskId": "{}", "x": {}}}"#,
                fx.working,
                nested_arrays(deep)
            ),
            "recursion limit exceeded",
        ),
    ] {
        add(
            format!("malformed JSON: {name}"),
            get(raw.into_bytes()),
            refused(-32700, fragment),
        );
    }
    add(
        "malformed JSON: invalid UTF-8 in a string".into(),
        get(b"{\"taskId\": \"\xff\xfe\"}".to_vec()),
        refused(-32700, "invalid unicode code point"),
    );
    add(
        "malformed JSON: a UTF-16 surrogate encoded in UTF-8".into(),
        get(b"{\"taskId\": \"\xed\xa0\x80\"}".to_vec()),
        refused(-32700, "invalid unicode code point"),
    );
    // 127 levels parse; the dispatcher refuses the shape, not the depth.
    add(
        "deep but within serde's limit: 127 nested arrays as params".into(),
        get(nested_arrays(127).into_bytes()),
        refused(-32602, "`params` must be an object"),
    );
    add(
        "deep in memory: 1,000 nested arrays beside a valid taskId are ignored".into(),
        Input::Params {
            owner: alice.clone(),
            method: "tasks/get",
            params: Some({
                let mut deep = json!([]);
                for _ in 0..1_000 {
                    deep = json!([deep]);
                }
                json!({"taskId": fx.working, "x": deep})
            }),
        },
        Expect::Accepted("\"status\":\"working\""),
    );

    // --- Wrong types.
    for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
        for (name, params) in [
            ("a number", json!({"taskId": 42})),
            ("null", json!({"taskId": null})),
            ("an object", json!({"taskId": {"id": fx.working}})),
            ("an array", json!({"taskId": [fx.working]})),
            ("a boolean", json!({"taskId": true})),
            ("a float", json!({"taskId": 1.5})),
        ] {
            add(
                format!("{method}: taskId is {name}"),
                Input::Text {
                    owner: alice.clone(),
                    method,
                    text: text(params),
                },
                refused(-32602, "`taskId` must be a string"),
            );
        }
        for (name, params) in [
            ("empty params", Some(json!({}))),
            ("null params", Some(Value::Null)),
            ("no params", None),
            ("taskId misspelled", Some(json!({"TaskId": fx.working}))),
            ("snake_case task_id", Some(json!({"task_id": fx.working}))),
            (
                "taskId only in the related-task _meta",
                Some(
                    json!({"_meta": {"io.modelcontextprotocol/related-task": {"taskId": fx.working}}}),
                ),
            ),
        ] {
            add(
                format!("{method}: {name}"),
                Input::Params {
                    owner: alice.clone(),
                    method,
                    params,
                },
                refused(-32602, "missing `taskId`"),
            );
        }
        for (name, params) in [
            ("an array", json!([fx.working])),
            ("a string", json!(fx.working)),
            ("a number", json!(7)),
            ("a boolean", json!(false)),
        ] {
            add(
                format!("{method}: params are {name}"),
                Input::Text {
                    owner: alice.clone(),
                    method,
                    text: text(params),
                },
                refused(-32602, "`params` must be an object"),
            );
        }
    }
    for (name, params) in [
        ("a number", json!({"cursor": 5})),
        ("an object", json!({"cursor": {}})),
        ("an array", json!({"cursor": [fx.alice_cursor]})),
        ("a boolean", json!({"cursor": true})),
    ] {
        add(
            format!("tasks/list: cursor is {name}"),
            list(text(params)),
            refused(-32602, "`cursor` must be a string"),
        );
    }
    add(
        "tasks/list: params are an array".into(),
        list(text(json!([]))),
        refused(-32602, "`params` must be an object"),
    );
    add(
        "tasks/list: a null cursor is the first page".into(),
        list(text(json!({"cursor": null}))),
        Expect::Accepted("nextCursor"),
    );
    for method in [
        "tasks/create",
        "",
        "TASKS/GET",
        "tasks/get ",
        "tasks/get\0",
        "notifications/tasks/status",
    ] {
        add(
            format!("unknown method {method:?}"),
            Input::Params {
                owner: alice.clone(),
                method,
                params: Some(json!({"taskId": fx.working})),
            },
            refused(-32601, "method not found"),
        );
    }

    // --- Ids that are not this registry's UUIDs, and other owners' ids.
    let upper = fx.working.to_uppercase();
    let simple = fx.working.replace('-', "");
    let bad_ids = [
        ("empty", String::new()),
        ("1 MB", "a".repeat(MB)),
        ("1 MB of a valid id repeated", fx.working.repeat(MB / 36)),
        ("uppercase UUID", upper),
        ("braced UUID", format!("{{{}}}", fx.working)),
        ("urn UUID", format!("urn:uuid:{}", fx.working)),
        ("simple UUID", simple),
        ("UUID and a space", format!("{} ", fx.working)),
        ("UUID and a newline", format!("{}\n", fx.working)),
        ("UUID and a NUL", format!("{}\0", fx.working)),
        ("SQL", "'; DROP TABLE tasks; --".to_owned()),
        ("path", "../../../etc/passwd".to_owned()),
        ("unicode", "タスク🙂\u{202e}".to_owned()),
        (
            "nil UUID",
            "00000000-0000-0000-0000-000000000000".to_owned(),
        ),
        (
            "max UUID",
            "ffffffff-ffff-ffff-ffff-ffffffffffff".to_owned(),
        ),
        ("36 hyphens", "-".repeat(36)),
        ("another registry's id", fx.foreign.clone()),
    ];
    for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
        for (name, id) in &bad_ids {
            add(
                format!("{method}: id {name}"),
                Input::Params {
                    owner: alice.clone(),
                    method,
                    params: Some(json!({"taskId": id})),
                },
                not_found(),
            );
        }
        for (name, owner, id) in [
            ("bob asks for alice's task", &fx.bob, &fx.working),
            ("alice asks for bob's task", &fx.alice, &fx.bob_working),
            (
                "anonymous asks for alice's task",
                &fx.anonymous,
                &fx.working,
            ),
            (
                "alice asks for an anonymous task",
                &fx.alice,
                &fx.anonymous_working,
            ),
            (
                "owner \"\" asks for an anonymous task",
                &Owner::new(""),
                &fx.anonymous_working,
            ),
            (
                "owner \"Alice\" asks for alice's task",
                &Owner::new("Alice"),
                &fx.completed,
            ),
            (
                "owner \"alice \" asks for alice's task",
                &Owner::new("alice "),
                &fx.failed,
            ),
        ] {
            add(
                format!("{method}: {name}"),
                Input::Params {
                    owner: owner.clone(),
                    method,
                    params: Some(json!({"taskId": id})),
                },
                not_found(),
            );
        }
    }
    for (name, op) in [
        ("get", Op::Get(fx.working.to_uppercase())),
        ("cancel", Op::Cancel(fx.bob_working.clone())),
        ("result", Op::Result(fx.bob_working.clone())),
        ("wait", Op::Wait(fx.anonymous_working.clone())),
        ("remove", Op::Remove(fx.bob_working.clone())),
        ("origin", Op::Origin(fx.bob_working.clone())),
        (
            "update_status",
            Op::UpdateStatus(fx.bob_working.clone(), TaskStatus::Cancelled),
        ),
        (
            "store_result",
            Op::StoreResult(
                fx.bob_working.clone(),
                TaskStatus::Completed,
                Outcome::Result(JsonObject::new()),
            ),
        ),
        ("get with a 1 MB id", Op::Get("0".repeat(MB))),
    ] {
        add(
            format!("registry {name}: another owner's or a malformed id"),
            Input::Registry {
                owner: alice.clone(),
                op,
            },
            refused_as(-32602, "task not found", "TaskNotFound"),
        );
    }

    // --- Moves the table forbids, and results that do not exist yet.
    for (name, op, expect) in [
        (
            "cancel a completed task",
            Op::Cancel(fx.completed.clone()),
            refused_as(
                -32602,
                "already in terminal status `completed`",
                "AlreadyTerminal",
            ),
        ),
        (
            "cancel a cancelled task",
            Op::Cancel(fx.cancelled.clone()),
            refused_as(
                -32602,
                "already in terminal status `cancelled`",
                "AlreadyTerminal",
            ),
        ),
        (
            "store a result in a cancelled task",
            Op::StoreResult(
                fx.cancelled.clone(),
                TaskStatus::Completed,
                Outcome::Result(JsonObject::new()),
            ),
            refused_as(-32602, "was cancelled", "TaskCancelled"),
        ),
        (
            "store a second result",
            Op::StoreResult(
                fx.completed.clone(),
                TaskStatus::Failed,
                Outcome::error(-1, "late"),
            ),
            refused_as(-32602, "terminal tasks never change", "IllegalTransition"),
        ),
        (
            "store an error as completed",
            Op::StoreResult(
                fx.working.clone(),
                TaskStatus::Completed,
                Outcome::error(-1, "x"),
            ),
            refused_as(-32602, "status `failed`", "InvalidParams"),
        ),
        (
            "store a result with status working",
            Op::StoreResult(
                fx.working.clone(),
                TaskStatus::Working,
                Outcome::Result(JsonObject::new()),
            ),
            refused_as(-32602, "not `working`", "InvalidParams"),
        ),
        (
            "set status completed without a result",
            Op::UpdateStatus(fx.working.clone(), TaskStatus::Completed),
            refused_as(-32602, "store the result", "InvalidParams"),
        ),
        (
            "move a failed task back to working",
            Op::UpdateStatus(fx.failed.clone(), TaskStatus::Working),
            refused_as(-32602, "terminal tasks never change", "IllegalTransition"),
        ),
        (
            "the same status again is a message update",
            Op::UpdateStatus(fx.input_required.clone(), TaskStatus::InputRequired),
            Expect::Accepted("input_required"),
        ),
        (
            "the result of a working task, now",
            Op::Result(fx.working.clone()),
            refused_as(-32602, "not ready yet", "NotFinished"),
        ),
        (
            "the result of a working task, waiting 1 ms",
            Op::Wait(fx.working.clone()),
            refused_as(-32603, "did not finish", "Timeout"),
        ),
    ] {
        add(
            format!("registry: {name}"),
            Input::Registry {
                owner: alice.clone(),
                op,
            },
            expect,
        );
    }
    add(
        "tasks/cancel of a completed task".into(),
        get_method(fx, "tasks/cancel", &fx.completed),
        refused(-32602, "already in terminal status"),
    );
    add(
        "tasks/result of a cancelled task".into(),
        get_method(fx, "tasks/result", &fx.cancelled),
        refused(-32602, "was cancelled"),
    );
    add(
        "tasks/result of a working task (1 ms wait)".into(),
        get_method(fx, "tasks/result", &fx.input_required),
        refused(-32603, "did not finish"),
    );
    add(
        "tasks/result of a task that failed with an error: that error".into(),
        get_method(fx, "tasks/result", &fx.failed),
        refused(-32000, "tool exploded"),
    );

    // --- Cursors.
    let forge = |cursor: &str, at: usize| {
        let mut bytes = cursor.as_bytes().to_vec();
        bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
        String::from_utf8(bytes).expect("ascii")
    };
    let bad_cursors = [
        ("empty", String::new(), "the cursor is empty"),
        (
            "1 MB of hex",
            "0".repeat(MB),
            "not a cursor this server issued",
        ),
        (
            "1 MB of a real cursor repeated",
            fx.alice_cursor.repeat(MB / 32),
            "not a cursor this server issued",
        ),
        (
            "forged tag",
            forge(&fx.alice_cursor, 31),
            "not a cursor this server issued",
        ),
        (
            "forged position",
            forge(&fx.alice_cursor, 15),
            "not a cursor this server issued",
        ),
        (
            "uppercase",
            fx.alice_cursor.to_uppercase(),
            "not a cursor this server issued",
        ),
        (
            "truncated",
            fx.alice_cursor[..31].to_owned(),
            "not a cursor this server issued",
        ),
        (
            "with a space",
            format!("{} ", fx.alice_cursor),
            "not a cursor this server issued",
        ),
        (
            "with a sign",
            format!("+{}", &fx.alice_cursor[1..]),
            "not a cursor this server issued",
        ),
        ("not hex", "z".repeat(32), "not a cursor this server issued"),
        (
            "32 bytes of unicode",
            "é".repeat(16),
            "not a cursor this server issued",
        ),
        (
            "all zeros",
            "0".repeat(32),
            "not a cursor this server issued",
        ),
        (
            "bob's",
            fx.bob_cursor.clone(),
            "not a cursor this server issued",
        ),
        (
            "the anonymous owner's",
            fx.anonymous_cursor.clone(),
            "not a cursor this server issued",
        ),
        (
            "another registry's",
            fx.foreign_cursor.clone(),
            "not a cursor this server issued",
        ),
        (
            "a task id",
            fx.working.clone(),
            "not a cursor this server issued",
        ),
    ];
    for (name, cursor, fragment) in &bad_cursors {
        add(
            format!("tasks/list: cursor {name}"),
            Input::Params {
                owner: alice.clone(),
                method: "tasks/list",
                params: Some(json!({"cursor": cursor})),
            },
            refused(-32602, fragment),
        );
    }
    add(
        "registry list: bob's cursor".into(),
        Input::Registry {
            owner: alice.clone(),
            op: Op::List(Some(fx.bob_cursor.clone())),
        },
        refused_as(-32602, "not a cursor this server issued", "InvalidCursor"),
    );
    add(
        "registry list: alice's cursor, as the anonymous owner".into(),
        Input::Registry {
            owner: fx.anonymous.clone(),
            op: Op::List(Some(fx.alice_cursor.clone())),
        },
        refused_as(-32602, "not a cursor this server issued", "InvalidCursor"),
    );
    add(
        "registry list: empty cursor".into(),
        Input::Registry {
            owner: alice.clone(),
            op: Op::List(Some(String::new())),
        },
        refused_as(-32602, "the cursor is empty", "InvalidCursor"),
    );
    add(
        "tasks/list: alice's own cursor still works".into(),
        Input::Params {
            owner: alice.clone(),
            method: "tasks/list",
            params: Some(json!({"cursor": fx.alice_cursor})),
        },
        Expect::Accepted("\"status\":\"input_required\""),
    );

    // --- Unknown status strings.
    for status in [
        "done",
        "WORKING",
        "Working",
        "input-required",
        "inputRequired",
        "",
        "cancelled ",
        "canceled",
    ] {
        add(
            format!("Task object: status {status:?}"),
            Input::Serde {
                parse: typed::<AnyTask>,
                text: task_with("status", &json!(status).to_string()),
            },
            refused(-32602, "unknown variant"),
        );
        add(
            format!("TaskStatus::from_str({status:?})"),
            Input::Status(status),
            refused_as(-32602, "unknown task status", "UnknownStatus"),
        );
        add(
            format!("TaskStatus from JSON {status:?}"),
            Input::Serde {
                parse: typed::<TaskStatus>,
                text: text(json!(status)),
            },
            refused(-32602, "unknown variant"),
        );
    }
    for (name, raw, fragment) in [
        ("null", "null", "invalid type: null"),
        ("a number", "3", "invalid type: integer"),
        ("an object", "{}", "invalid value: map"),
    ] {
        add(
            format!("Task object: status is {name}"),
            Input::Serde {
                parse: typed::<AnyTask>,
                text: task_with("status", raw),
            },
            refused(-32602, fragment),
        );
    }
    add(
        "Task<Working> from a completed Task object".into(),
        Input::Serde {
            parse: typed::<Task<Working>>,
            text: task_with("status", "\"completed\""),
        },
        refused(-32602, "expected a `working` task"),
    );
    for (field, fragment) in [
        ("taskId", "missing field `taskId`"),
        ("status", "missing field `status`"),
        ("createdAt", "missing field `createdAt`"),
        ("ttl", "missing field `ttl`"),
    ] {
        add(
            format!("Task object without {field}"),
            Input::Serde {
                parse: typed::<AnyTask>,
                text: task_without(field),
            },
            refused(-32602, fragment),
        );
    }
    for (name, raw) in [
        ("a date only", "\"2025-11-25\""),
        ("a word", "\"yesterday\""),
        (
            "year 9999 (beyond i64 nanoseconds)",
            "\"9999-01-01T00:00:00Z\"",
        ),
        ("year 1600", "\"1600-01-01T00:00:00Z\""),
        ("no offset", "\"2025-11-25T10:30:00\""),
        ("a number", "1764066600"),
    ] {
        add(
            format!("Task object: createdAt is {name}"),
            Input::Serde {
                parse: typed::<AnyTask>,
                text: task_with("createdAt", raw),
            },
            refused(
                -32602,
                if raw.starts_with('"') {
                    "invalid timestamp"
                } else {
                    "invalid type"
                },
            ),
        );
    }
    let duplicate_id = {
        let mut bytes = task_with("status", "\"working\"");
        bytes.pop();
        bytes.extend_from_slice(br#","taskId":"other"}"#);
        bytes
    };
    add(
        "Task object from text: a duplicate taskId".into(),
        Input::Serde {
            parse: typed_from_text::<AnyTask>,
            text: duplicate_id.clone(),
        },
        refused(-32602, "duplicate field `taskId`"),
    );
    add(
        "Task object through a Value: a duplicate taskId, the last one wins".into(),
        Input::Serde {
            parse: typed::<AnyTask>,
            text: duplicate_id,
        },
        Expect::Accepted("\"taskId\":\"other\""),
    );

    // --- TTL values: in the `task` param (augmentation, then accept), in TaskMetadata, in
    // Task objects.
    let bad_ttls = [
        ("negative", "-1"),
        ("negative zero point five", "-0.5"),
        ("fractional", "1.5"),
        ("tiny fraction", "0.000001"),
        ("1e30", "1e30"),
        ("u64::MAX", "18446744073709551615"),
        ("2^64", "18446744073709551616"),
        ("2^64 as a float", "1.8446744073709552e19"),
        ("i64::MIN", "-9223372036854775808"),
        ("a string", "\"60000\""),
        ("a boolean", "true"),
        ("an array", "[60000]"),
        ("an object", "{\"ms\": 60000}"),
    ];
    for (name, raw) in bad_ttls {
        let tool_call = format!(r#"{{"name": "sleep", "task": {{"ttl": {raw}}}}}"#);
        add(
            format!("augmentation: task.ttl {name}"),
            Input::Augment {
                support: TaskSupport::Optional,
                declared: true,
                text: tool_call.clone().into_bytes(),
            },
            refused_as(
                -32602,
                "`task.ttl` must be a non-negative integer",
                "InvalidParams",
            ),
        );
        add(
            format!("augmentation without the capability: task.ttl {name} is ignored"),
            Input::Augment {
                support: TaskSupport::Required,
                declared: false,
                text: tool_call.into_bytes(),
            },
            Expect::Accepted("normal"),
        );
        let is_type_error = raw.starts_with(['"', 't', '[', '{']);
        add(
            format!("TaskMetadata: ttl {name}"),
            Input::Serde {
                parse: typed::<TaskMetadata>,
                text: format!(r#"{{"ttl": {raw}}}"#).into_bytes(),
            },
            refused(
                -32602,
                if is_type_error {
                    "invalid type"
                } else {
                    "a whole, non-negative number of milliseconds"
                },
            ),
        );
        for field in ["ttl", "pollInterval"] {
            add(
                format!("Task object: {field} {name}"),
                Input::Serde {
                    parse: typed::<AnyTask>,
                    text: task_with(field, raw),
                },
                refused(
                    -32602,
                    if is_type_error {
                        "invalid type"
                    } else {
                        "a whole, non-negative number of milliseconds"
                    },
                ),
            );
        }
    }
    add(
        "augmentation: task.ttl 1e400".into(),
        Input::Augment {
            support: TaskSupport::Optional,
            declared: true,
            text: br#"{"name": "sleep", "task": {"ttl": 1e400}}"#.to_vec(),
        },
        refused(-32700, "number out of range"),
    );
    for (name, raw) in [
        ("a number", "5"),
        ("a string", "\"x\""),
        ("an array", "[]"),
        ("true", "true"),
    ] {
        add(
            format!("augmentation: task is {name}"),
            Input::Augment {
                support: TaskSupport::Optional,
                declared: true,
                text: format!(r#"{{"name": "sleep", "task": {raw}}}"#).into_bytes(),
            },
            refused_as(-32602, "`task` must be an object", "InvalidParams"),
        );
    }
    add(
        "augmentation: a task-forbidden tool called as a task".into(),
        Input::Augment {
            support: TaskSupport::Forbidden,
            declared: true,
            text: br#"{"name": "echo", "task": {}}"#.to_vec(),
        },
        refused_as(-32601, "does not support tasks", "TaskNotSupported"),
    );
    add(
        "augmentation: a task-required tool called without task".into(),
        Input::Augment {
            support: TaskSupport::Required,
            declared: true,
            text: br#"{"name": "confirm"}"#.to_vec(),
        },
        refused_as(-32601, "must be called as a task", "TaskRequired"),
    );
    add(
        "augmentation: a 1 MB tool name is not echoed whole".into(),
        Input::Augment {
            support: TaskSupport::Required,
            declared: true,
            text: text(json!({"name": "n".repeat(MB)})),
        },
        refused_as(-32601, "must be called as a task", "TaskRequired"),
    );
    // Accepted edge cases: whole floats are integers, and huge TTLs are clamped.
    for (name, raw, fragment) in [
        ("a whole float", "60000.0", "\"ttl\":60000"),
        ("an exponent", "6e4", "\"ttl\":60000"),
        (
            "u64::MAX - 1, clamped",
            "18446744073709551614",
            "\"ttl\":600000",
        ),
        ("1e19, clamped", "1e19", "\"ttl\":600000"),
        ("null: the default", "null", "\"ttl\":60000"),
    ] {
        add(
            format!("augmentation + accept: task.ttl {name}"),
            Input::Augment {
                support: TaskSupport::Optional,
                declared: true,
                text: format!(r#"{{"name": "sleep", "task": {{"ttl": {raw}}}}}"#).into_bytes(),
            },
            Expect::Accepted(fragment),
        );
    }
    for (name, raw) in [
        ("60000.0", "60000.0"),
        ("u64::MAX - 1", "18446744073709551614"),
    ] {
        add(
            format!("TaskMetadata: ttl {name} is accepted"),
            Input::Serde {
                parse: typed::<TaskMetadata>,
                text: format!(r#"{{"ttl": {raw}}}"#).into_bytes(),
            },
            Expect::Accepted("\"ttl\""),
        );
    }

    // --- Other typed messages.
    add(
        "Task object from text: status null is misreported by serde_json as a syntax error".into(),
        Input::Serde {
            parse: typed_from_text::<AnyTask>,
            text: task_with("status", "null"),
        },
        refused(-32700, "expected value"),
    );
    add(
        "TaskIdParams: taskId is a number".into(),
        Input::Serde {
            parse: typed::<TaskIdParams>,
            text: br#"{"taskId": 5}"#.to_vec(),
        },
        refused(-32602, "invalid type"),
    );
    add(
        "TaskIdParams: 100,000 nested arrays in an unknown member are skipped without recursion"
            .into(),
        Input::Serde {
            parse: typed_from_text::<TaskIdParams>,
            text: format!(r#"{{"taskId": "t", "x": {}}}"#, nested_arrays(deep)).into_bytes(),
        },
        Expect::Accepted("\"taskId\":\"t\""),
    );
    add(
        "ListTasksParams from text: 100,000 nested arrays in _meta".into(),
        Input::Serde {
            parse: typed_from_text::<ListTasksParams>,
            text: format!(r#"{{"_meta": {{"x": {}}}}}"#, nested_arrays(deep)).into_bytes(),
        },
        refused(-32700, "recursion limit exceeded"),
    );
    add(
        "ListTasksParams: cursor is a number".into(),
        Input::Serde {
            parse: typed::<ListTasksParams>,
            text: br#"{"cursor": 5}"#.to_vec(),
        },
        refused(-32602, "invalid type"),
    );
    add(
        "CreateTaskResult: task missing".into(),
        Input::Serde {
            parse: typed::<CreateTaskResult>,
            text: b"{}".to_vec(),
        },
        refused(-32602, "missing field `task`"),
    );
    add(
        "RequestId: a float".into(),
        Input::Serde {
            parse: typed::<RequestId>,
            text: b"1.5".to_vec(),
        },
        refused(-32602, "did not match any variant"),
    );
    // --- The tasks extension's dispatcher.
    let ext = |owner: &Owner, method: &'static str, params: Value, declared: bool| Input::Ext {
        owner: owner.clone(),
        method,
        params: Some(params),
        declared,
    };
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        add(
            format!("extension {method}: the extension not declared"),
            ext(
                alice,
                method,
                json!({"taskId": fx.working, "inputResponses": {}}),
                false,
            ),
            refused(-32021, "needs the tasks extension"),
        );
        add(
            format!("extension {method}: taskId is a number"),
            ext(
                alice,
                method,
                json!({"taskId": 5, "inputResponses": {}}),
                true,
            ),
            refused(-32602, "`taskId` must be a string"),
        );
        add(
            format!("extension {method}: a 1 MB id"),
            ext(
                alice,
                method,
                json!({"taskId": "x".repeat(MB), "inputResponses": {}}),
                true,
            ),
            not_found(),
        );
        add(
            format!("extension {method}: bob names alice's task"),
            ext(
                &fx.bob,
                method,
                json!({"taskId": fx.input_required, "inputResponses": {}}),
                true,
            ),
            not_found(),
        );
        add(
            format!("extension {method}: params are an array"),
            ext(alice, method, json!([fx.working]), true),
            refused(-32602, "`params` must be an object"),
        );
    }
    for method in ["tasks/result", "tasks/list"] {
        add(
            format!("extension {method}: removed by the extension"),
            ext(alice, method, json!({"taskId": fx.completed}), true),
            refused(-32601, "the tasks extension removed"),
        );
    }
    for (name, responses, fragment) in [
        ("missing", None, "missing `inputResponses`"),
        (
            "an array",
            Some(json!([])),
            "`inputResponses` must be an object",
        ),
        (
            "a string",
            Some(json!("yes")),
            "`inputResponses` must be an object",
        ),
        (
            "null",
            Some(Value::Null),
            "`inputResponses` must be an object",
        ),
    ] {
        let mut params = json!({"taskId": fx.input_required});
        if let Some(responses) = responses {
            params["inputResponses"] = responses;
        }
        add(
            format!("extension tasks/update: inputResponses {name}"),
            ext(alice, "tasks/update", params, true),
            refused(-32602, fragment),
        );
    }
    add(
        "extension tasks/update: answers to requests the task never made are ignored".into(),
        ext(
            alice,
            "tasks/update",
            json!({"taskId": fx.input_required, "inputResponses": {"nope": {"action": "accept"}, "x": 5}}),
            true,
        ),
        Expect::Accepted("complete"),
    );
    add(
        "extension tasks/update: answers to a completed task are ignored".into(),
        ext(
            alice,
            "tasks/update",
            json!({"taskId": fx.completed, "inputResponses": {"ask": {"action": "accept"}}}),
            true,
        ),
        Expect::Accepted("complete"),
    );
    add(
        "extension tasks/cancel: a terminal task is left as it is".into(),
        ext(alice, "tasks/cancel", json!({"taskId": fx.cancelled}), true),
        Expect::Accepted("complete"),
    );
    rows
}

fn get_method(fx: &Fixture, method: &'static str, id: &str) -> Input {
    Input::Params {
        owner: fx.alice.clone(),
        method,
        params: Some(json!({"taskId": id})),
    }
}

#[test]
fn every_hostile_input_gets_its_error_and_leaves_the_registry_unchanged() {
    let fixture = Fixture::new();
    let rows = rows(&fixture);
    let mut failures = Vec::new();
    for row in &rows {
        let before = fixture.snapshot();
        let (answer, created) = run(&fixture, &row.input);
        let after = fixture.snapshot();
        let mut fail = |why: String| failures.push(format!("{}: {why}", row.name));
        match (&row.expect, &answer) {
            (
                Expect::Refused {
                    code,
                    fragment,
                    variant,
                },
                Err((error, got_variant)),
            ) => {
                if error.code != *code {
                    fail(format!(
                        "code {} instead of {code}: {}",
                        error.code, error.message
                    ));
                }
                if !error.message.contains(fragment) {
                    fail(format!("message without {fragment:?}: {}", error.message));
                }
                if let Some(variant) = variant
                    && got_variant.as_deref() != Some(*variant)
                {
                    fail(format!("variant {got_variant:?} instead of {variant}"));
                }
                if error.message.len() > 400 {
                    fail(format!(
                        "a message of {} bytes echoes the input",
                        error.message.len()
                    ));
                }
                if before != after {
                    fail("the rejected input changed the registry".into());
                }
            }
            (Expect::Accepted(fragment), Ok(value)) => {
                let shown = value.to_string();
                if !shown.contains(fragment) {
                    fail(format!("answer without {fragment:?}: {shown}"));
                }
                // Accepting a `task` param adds exactly its task; nothing else changes.
                let mut expected = before;
                if let Some(task) = created {
                    assert!(task.ttl().is_some_and(|ttl| ttl <= MAX_TTL), "clamped");
                    expected.tasks[0].push(task);
                    expected.len += 1;
                }
                if expected != after {
                    fail("the accepted input changed more than it should".into());
                }
            }
            (expect, answer) => fail(format!(
                "expected {expect:?}, got {}",
                match answer {
                    Ok(value) => format!("Ok({})", shorten(&value.to_string())),
                    Err((error, variant)) => format!("{variant:?} {error}"),
                }
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    assert!(rows.len() > 300, "the table has {} rows", rows.len());
}

/// Another owner's id is answered exactly like an id that never existed: no oracle.
#[test]
fn another_owners_task_is_indistinguishable_from_a_missing_one() {
    let fx = Fixture::new();
    let missing = "786512e2-9e0d-44bd-8f29-789f320fe840";
    for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
        let answer = |owner: &Owner, id: &str| {
            let error = fx
                .dispatcher
                .dispatch(owner, method, Some(&json!({"taskId": id})))
                .expect_err("refused");
            (error.code, error.message.replace(id, "<id>"), error.data)
        };
        assert_eq!(
            answer(&fx.bob, &fx.working),
            answer(&fx.bob, missing),
            "{method}"
        );
        assert_eq!(
            answer(&fx.anonymous, &fx.working),
            answer(&fx.anonymous, missing),
            "{method}"
        );
    }
    let list = |cursor: &str| {
        fx.dispatcher
            .dispatch(&fx.alice, "tasks/list", Some(&json!({"cursor": cursor})))
            .expect_err("refused")
    };
    assert_eq!(list(&fx.bob_cursor), list(&"0".repeat(32)));
}

fn shorten(text: &str) -> String {
    text.chars().take(200).collect()
}

// ---------------------------------------------------------------------------------------
// The stdio server example
// ---------------------------------------------------------------------------------------

struct Server {
    child: LineChild,
    next_id: u64,
}

impl Server {
    fn start() -> Self {
        Server {
            child: LineChild::spawn(server_binary("stdio_server")),
            next_id: 1_000,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.child.send_line(bytes);
    }

    /// Sends a request and returns the messages that arrived before its answer (without
    /// status notifications) and the answer.
    fn request(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(request.to_string().as_bytes());
        let mut before = Vec::new();
        loop {
            let line = self
                .child
                .line_within(Duration::from_secs(20))
                .unwrap_or_else(|| panic!("no answer to {method} within 20 s"));
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|err| {
                panic!("the server wrote a line that is not JSON ({err}): {line}")
            });
            if message["id"] == id {
                return (before, message);
            }
            if message["method"] != "notifications/tasks/status" {
                before.push(message);
            }
        }
    }
}

/// The expected answer to one line sent to the stdio server.
enum Line {
    /// An error with this code and fragment, without an `id` (the request was not
    /// identified).
    Anonymous(i64, &'static str),
    /// An error answering the request with this `id`.
    Answer(i64, i64, &'static str),
    /// Nothing at all.
    Silence,
}

#[test]
fn the_stdio_server_answers_junk_and_keeps_serving() {
    let mut server = Server::start();
    let (_, init) = server.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bad_input", "version": "0"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    // A task that ends at once (the `fail` tool), to watch for loss.
    let (_, created) = server.request(
        "tools/call",
        json!({"name": "fail", "arguments": {}, "task": {"ttl": 600_000}}),
    );
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();
    for _ in 0..200 {
        let (_, got) = server.request("tasks/get", json!({"taskId": task_id}));
        if got["result"]["status"] == "failed" {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let (_, listed) = server.request("tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"][0]["status"], "failed", "{listed}");

    let deep = nested_arrays(100_000);
    let rows: Vec<(&str, Vec<u8>, Line)> = vec![
        ("not JSON", b"{not json".to_vec(), Line::Anonymous(-32700, "parse error")),
        ("invalid UTF-8", b"\xff\xfe\xfd".to_vec(), Line::Anonymous(-32700, "invalid utf-8")),
        (
            "invalid UTF-8 inside a valid request",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xc3\x28\"}}".to_vec(),
            Line::Anonymous(-32700, "invalid utf-8"),
        ),
        ("an overlong encoding", b"\"\xc0\xaf\"".to_vec(), Line::Anonymous(-32700, "invalid utf-8")),
        ("a UTF-8 surrogate", b"\"\xed\xa0\x80\"".to_vec(), Line::Anonymous(-32700, "invalid utf-8")),
        ("a NUL byte", b"\0".to_vec(), Line::Anonymous(-32700, "parse error")),
        ("a lone surrogate escape", br#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#.to_vec(), Line::Anonymous(-32700, "hex escape")),
        ("100,000 nested arrays", deep.clone().into_bytes(), Line::Anonymous(-32700, "recursion limit exceeded")),
        (
            "100,000 nested arrays as params",
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{deep}}}"#).into_bytes(),
            Line::Anonymous(-32700, "recursion limit exceeded"),
        ),
        ("1 MB of junk", vec![b'x'; MB], Line::Anonymous(-32700, "parse error")),
        ("a 5 MB line, over the 4 MiB message limit", vec![b'x'; 5 * MB], Line::Anonymous(-32600, "at most 4194304 bytes")),
        ("a truncated request", br#"{"jsonrpc":"2.0","id":3,"method":"pi"#.to_vec(), Line::Anonymous(-32700, "EOF while parsing")),
        ("a batch", b"[1,2,3]".to_vec(), Line::Anonymous(-32600, "batches are not supported")),
        ("an empty batch", b"[]".to_vec(), Line::Anonymous(-32600, "one JSON-RPC object per line")),
        ("a number", b"42".to_vec(), Line::Anonymous(-32600, "one JSON-RPC object per line")),
        ("a string", b"\"ping\"".to_vec(), Line::Anonymous(-32600, "one JSON-RPC object per line")),
        ("null", b"null".to_vec(), Line::Anonymous(-32600, "one JSON-RPC object per line")),
        ("method is a number", br#"{"jsonrpc":"2.0","id":4,"method":5}"#.to_vec(), Line::Answer(4, -32600, "`method` must be a string")),
        ("id is an object", br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#.to_vec(), Line::Anonymous(-32600, "`id` must be a string or an integer")),
        ("id is a float", br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_vec(), Line::Anonymous(-32600, "`id` must be a string or an integer")),
        ("id is null", br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_vec(), Line::Anonymous(-32600, "`id` must be a string or an integer")),
        ("no method", br#"{"jsonrpc":"2.0"}"#.to_vec(), Line::Anonymous(-32600, "no `method`")),
        ("an empty object", b"{}".to_vec(), Line::Anonymous(-32600, "no `method`")),
        ("an answer to a request never sent", br#"{"jsonrpc":"2.0","id":99,"result":{}}"#.to_vec(), Line::Silence),
        ("a notification of an unknown method", br#"{"jsonrpc":"2.0","method":"nope"}"#.to_vec(), Line::Silence),
        ("only whitespace", b" \t\r".to_vec(), Line::Silence),
        ("taskId is a number", br#"{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":42}}"#.to_vec(), Line::Answer(5, -32602, "`taskId` must be a string")),
        ("an unknown id", br#"{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"nope"}}"#.to_vec(), Line::Answer(6, -32602, "task not found")),
        ("a forged cursor", br#"{"jsonrpc":"2.0","id":7,"method":"tasks/list","params":{"cursor":"00000000000000000000000000000000"}}"#.to_vec(), Line::Answer(7, -32602, "not a cursor this server issued")),
        ("an unknown method", br#"{"jsonrpc":"2.0","id":8,"method":"nope/nope"}"#.to_vec(), Line::Answer(8, -32601, "method not found")),
        ("a negative ttl", br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"task":{"ttl":-1}}}"#.to_vec(), Line::Answer(9, -32602, "`task.ttl`")),
        ("a huge ttl", br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"task":{"ttl":1e30}}}"#.to_vec(), Line::Answer(10, -32602, "`task.ttl`")),
        ("a task-forbidden tool as a task", br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"task":{}}}"#.to_vec(), Line::Answer(11, -32601, "does not support tasks")),
        ("tools/call params an array", br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":[]}"#.to_vec(), Line::Answer(12, -32602, "object `params`")),
        (
            "cancel the terminal task",
            format!(r#"{{"jsonrpc":"2.0","id":13,"method":"tasks/cancel","params":{{"taskId":"{task_id}"}}}}"#).into_bytes(),
            Line::Answer(13, -32602, "already in terminal status"),
        ),
        (
            "the task's id in uppercase",
            format!(r#"{{"jsonrpc":"2.0","id":14,"method":"tasks/get","params":{{"taskId":"{}"}}}}"#, task_id.to_uppercase()).into_bytes(),
            Line::Answer(14, -32602, "task not found"),
        ),
    ];
    let mut failures = Vec::new();
    for (name, bytes, expected) in &rows {
        server.send_raw(bytes);
        let (before, pong) = server.request("ping", json!({}));
        if pong["result"] != json!({}) {
            failures.push(format!("{name}: the server stopped answering ping: {pong}"));
            break;
        }
        let ok = match expected {
            Line::Silence => before.is_empty(),
            Line::Anonymous(code, fragment) => {
                matches!(before.as_slice(), [answer] if answer.get("id").is_none()
                    && answer["error"]["code"] == *code
                    && answer["error"]["message"].as_str().is_some_and(|m| m.contains(fragment) && m.len() <= 400))
            }
            Line::Answer(id, code, fragment) => {
                matches!(before.as_slice(), [answer] if answer["id"] == *id
                    && answer["error"]["code"] == *code
                    && answer["error"]["message"].as_str().is_some_and(|m| m.contains(fragment)))
            }
        };
        if !ok {
            let shown: Vec<String> = before.iter().map(|m| shorten(&m.to_string())).collect();
            failures.push(format!("{name}: got {shown:?}"));
        }
    }
    // Nothing was lost: the task list is exactly what it was.
    let (_, relisted) = server.request("tasks/list", json!({}));
    assert_eq!(
        relisted,
        json!({"jsonrpc": "2.0", "id": relisted["id"], "result": listed["result"]})
    );
    server.child.close_stdin();
    let status = server
        .child
        .exit_within(Duration::from_secs(20))
        .expect("the server exits on EOF");
    assert!(status.success(), "the server exited with {status}");
    assert!(
        failures.is_empty(),
        "{} of {} lines:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// The example's `tools/call` answers an unknown tool with the whole name in the message
/// (`examples/common/server.rs` and `examples/common/tools.rs`,
/// ``invalid(&format!("unknown tool `{name}`"))``), while the crate's own errors cut echoed
/// input to 80 bytes (`src/error.rs`, `shorten`). A client sending a 1 MB name gets 1 MB
/// back.
#[test]
fn the_stdio_server_does_not_echo_a_huge_tool_name() {
    let mut server = Server::start();
    let (_, answer) = server.request(
        "tools/call",
        json!({"name": "n".repeat(MB), "arguments": {}}),
    );
    assert_eq!(
        answer["error"]["code"],
        -32602,
        "{}",
        shorten(&answer.to_string())
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.len() <= 400,
        "an error message of {} bytes",
        message.len()
    );
}
