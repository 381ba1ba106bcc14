//! The handler API through a whole server, driven in process as a client would: typed
//! arguments, exits, panics, cancels a handler ignores, input asked from a task and in
//! 2026-07-28 rounds, and what a server refuses when it is built.

use std::time::{Duration, Instant};

use mcp_tasks_server::mcp_tasks::{InputRequest, InputRequests, JsonObject};
use mcp_tasks_server::testing::LineClient;
use mcp_tasks_server::{
    BuildError, Context, Elicited, Exit, NoArguments, Server, TaskSupport, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Wait {
    ms: u64,
}

async fn wait(ctx: Context, Wait { ms }: Wait) -> Result<String, Exit> {
    ctx.sleep(Duration::from_millis(ms)).await?;
    Ok(format!("waited {ms} ms"))
}

/// Ignores every cancel: sleeps on a plain timer.
async fn stubborn(_ctx: Context, Wait { ms }: Wait) -> Result<String, Exit> {
    futures_timer_sleep(Duration::from_millis(ms)).await;
    Ok("finished anyway".into())
}

async fn futures_timer_sleep(duration: Duration) {
    let deadline = Instant::now() + duration;
    while Instant::now() < deadline {
        // A plain poll loop on a thread: a future that never looks at its task.
        mcp_tasks_server::work::on_thread(|| std::thread::sleep(Duration::from_millis(20)))
            .await
            .ok();
    }
}

async fn panics(_ctx: Context, _: NoArguments) -> Result<String, Exit> {
    panic!("the handler broke")
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
struct Name {
    name: String,
}

async fn greet(ctx: Context, _: NoArguments) -> Result<String, Exit> {
    match ctx.elicit::<Name>("who", "Who are you?").await? {
        Elicited::Accept(Name { name }) => Ok(format!("Hello, {name}!")),
        Elicited::Decline | Elicited::Cancel => Ok("Hello, stranger!".into()),
    }
}

fn server() -> Server {
    Server::builder()
        .name("test", "0")
        .tool(
            Tool::new("wait")
                .task_support(TaskSupport::Optional)
                .run(wait),
        )
        .tool(
            Tool::new("stubborn")
                .task_support(TaskSupport::Optional)
                .run(stubborn),
        )
        .tool(
            Tool::new("panics")
                .task_support(TaskSupport::Optional)
                .run(panics),
        )
        .tool(
            Tool::new("greet")
                .task_support(TaskSupport::Optional)
                .asks_for_input()
                .run(greet),
        )
        .build()
        .expect("a server")
}

fn initialize(client: &mut LineClient) {
    let answer = client.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
}

fn task_id(created: &Value) -> String {
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned()
}

/// Polls `tasks/get` until the task is terminal.
fn terminal(client: &mut LineClient, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = client.request("tasks/get", json!({"taskId": id}));
        let status = task["result"]["status"].as_str().unwrap_or("").to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return task["result"].clone();
        }
        assert!(Instant::now() < deadline, "{id} never ended: {task}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn arguments_that_do_not_fit_are_refused_before_any_task_naming_the_field() {
    let mut client = LineClient::start(server());
    initialize(&mut client);
    let refused = client.request(
        "tools/call",
        json!({"name": "wait", "arguments": {"ms": "soon"}, "task": {}}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`ms`"), "{message}");
    let listed = client.request("tasks/list", json!({}));
    assert_eq!(listed["result"]["tasks"], json!([]), "no task was created");
}

#[test]
fn a_panicking_handler_fails_its_task_and_answers_its_call_and_the_server_goes_on() {
    let mut client = LineClient::start(server());
    initialize(&mut client);
    let created = client.request("tools/call", json!({"name": "panics", "task": {}}));
    let task = terminal(&mut client, &task_id(&created));
    assert_eq!(task["status"], "failed");
    let result = client.request("tasks/result", json!({"taskId": task_id(&created)}));
    assert_eq!(result["error"]["code"], -32603, "{result}");
    assert!(
        result["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("the handler broke")),
        "{result}"
    );
    let inline = client.request("tools/call", json!({"name": "panics"}));
    assert_eq!(inline["error"]["code"], -32603, "{inline}");
    let after = client.request(
        "tools/call",
        json!({"name": "wait", "arguments": {"ms": 1}}),
    );
    assert_eq!(after["result"]["content"][0]["text"], "waited 1 ms");
}

#[test]
fn a_cancel_request_the_handler_ignores_still_cancels_and_its_late_result_is_refused() {
    let mut client = LineClient::start(server());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    });
    let created = client.request(
        "tools/call",
        json!({"name": "stubborn", "arguments": {"ms": 400}, "_meta": meta}),
    );
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    let cancelled = client.request("tasks/cancel", json!({"taskId": id, "_meta": meta}));
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = client.request("tasks/get", json!({"taskId": id, "_meta": meta}));
        if task["result"]["status"] == "cancelled" {
            break;
        }
        assert_ne!(task["result"]["status"], "completed", "{task}");
        assert!(Instant::now() < deadline, "never cancelled: {task}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Long after the handler finished, the task is still cancelled.
    std::thread::sleep(Duration::from_millis(700));
    let task = client.request("tasks/get", json!({"taskId": id, "_meta": meta}));
    assert_eq!(task["result"]["status"], "cancelled", "{task}");
}

#[test]
fn a_task_asks_through_elicitation_and_the_answer_is_checked() {
    let mut client = LineClient::start(server());
    initialize(&mut client);
    for (answer, expected) in [
        (
            json!({"action": "accept", "content": {"name": "Ada"}}),
            json!({"completed": "Hello, Ada!"}),
        ),
        (
            json!({"action": "decline"}),
            json!({"completed": "Hello, stranger!"}),
        ),
        // Of another shape: never read as empty.
        (
            json!({"action": "accept", "content": {"name": 7}}),
            json!({"failed": -32602}),
        ),
    ] {
        let created = client.request("tools/call", json!({"name": "greet", "task": {}}));
        let id = task_id(&created);
        let asked = loop {
            let message = client
                .next(Duration::from_secs(10))
                .unwrap_or_else(|| panic!("no elicitation for {id}"));
            if message["method"] == "elicitation/create" {
                break message;
            }
        };
        assert_eq!(asked["params"]["message"], "Who are you?");
        assert_eq!(
            asked["params"]["requestedSchema"]["properties"]["name"]["type"],
            "string"
        );
        client.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}));
        let task = terminal(&mut client, &id);
        let result = client.request("tasks/result", json!({"taskId": id}));
        match expected.as_object().and_then(|e| e.iter().next()) {
            Some((status, text)) if status == "completed" => {
                assert_eq!(task["status"], "completed");
                assert_eq!(result["result"]["content"][0]["text"], *text, "{result}");
            }
            Some((_, code)) => {
                assert_eq!(task["status"], "failed");
                assert_eq!(result["error"]["code"], *code, "{result}");
            }
            None => unreachable!(),
        }
    }
}

#[test]
fn at_once_on_2026_a_handler_asks_in_rounds_and_runs_again_with_the_answers() {
    let mut client = LineClient::start(server());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    });
    let call = json!({"name": "greet", "_meta": meta});
    let asked = client.request("tools/call", call.clone());
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let request = &asked["result"]["inputRequests"]["who"];
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    let mut retry = call.clone();
    retry["inputResponses"] = json!({"who": {"action": "accept", "content": {"name": "Grace"}}});
    retry["requestState"] = asked["result"]["requestState"].clone();
    let answered = client.request("tools/call", retry.clone());
    assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
    assert_eq!(answered["result"]["content"][0]["text"], "Hello, Grace!");
    // A state changed by a byte is refused.
    let mut tampered = retry;
    let state = tampered["requestState"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut bytes = state.into_bytes();
    let last = bytes.len() - 1;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    tampered["requestState"] = json!(String::from_utf8(bytes).unwrap_or_default());
    let refused = client.request("tools/call", tampered);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // Without `elicitation` declared, asking is -32021 naming the capability.
    let undeclared = json!({"name": "greet", "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }});
    let refused = client.request("tools/call", undeclared);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[test]
fn a_tool_that_asks_first_asks_before_its_task_exists() {
    async fn named(ctx: Context, _: NoArguments) -> Result<String, Exit> {
        let name = ctx.elicit::<Name>("who", "Who?").await?;
        Ok(format!("{name:?}"))
    }
    let tool = Tool::new("named")
        .task_support(TaskSupport::Required)
        .ask_first(|_arguments: &JsonObject| {
            InputRequests::new().with("who", mcp_tasks_server::answers::form::<Name>("Who?"))
        })
        .run(named);
    let mut client = LineClient::start(Server::builder().tool(tool).build().expect("a server"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
    });
    let call = json!({"name": "named", "_meta": meta});
    let asked = client.request("tools/call", call.clone());
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let mut retry = call;
    retry["inputResponses"] = json!({"who": {"action": "accept", "content": {"name": "Lin"}}});
    retry["requestState"] = asked["result"]["requestState"].clone();
    let created = client.request("tools/call", retry);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let task = client.request("tasks/get", json!({"taskId": id, "_meta": meta}));
        if task["result"]["status"] == "completed" {
            let text = task["result"]["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(text.contains("Lin"), "{task}");
            break;
        }
        assert_ne!(
            task["result"]["status"], "input_required",
            "asked again: {task}"
        );
        assert!(Instant::now() < deadline, "{task}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_server_refuses_tools_it_cannot_serve_naming_them() {
    let tool = |name: &str| Tool::new(name).run(wait);
    let built = Server::builder()
        .tool(tool("twice"))
        .tool(tool("twice"))
        .build();
    assert_eq!(
        built.err(),
        Some(BuildError::Tool(ToolError::Duplicate {
            name: "twice".into()
        }))
    );
    let built = Server::builder().tool(tool("two words")).build();
    assert!(
        matches!(built.err(), Some(BuildError::Tool(ToolError::InvalidName { name })) if name == "two words")
    );
    let built = Server::builder()
        .tool(Tool::new("once").redelivery(3).run(wait))
        .build();
    assert!(matches!(
        built.err(),
        Some(BuildError::Tool(ToolError::RedeliveryWithoutTask { .. }))
    ));
    let built = Server::builder()
        .tool(
            Tool::new("zero")
                .task_support(TaskSupport::Optional)
                .redelivery(0)
                .run(wait),
        )
        .build();
    assert!(matches!(
        built.err(),
        Some(BuildError::Tool(ToolError::Attempts { attempts: 0, .. }))
    ));
    let built = Server::builder()
        .method("tools/call", |_ctx, _params| async { Ok(Value::Null) })
        .build();
    assert!(matches!(built.err(), Some(BuildError::Method { .. })));
    let short = Server::builder().request_state_key(b"short").build();
    assert!(matches!(short.err(), Some(BuildError::Setting(_))));
    let _ = InputRequest::roots();
}

#[test]
fn methods_the_server_does_not_serve_reach_the_applications_handler_or_are_not_found() {
    let server = Server::builder()
        .capability("prompts", json!({}))
        .method("prompts/list", |_ctx, _params| async {
            Ok(json!({"prompts": [{"name": "p"}]}))
        })
        .build()
        .expect("a server");
    let mut client = LineClient::start(server);
    initialize(&mut client);
    let listed = client.request("prompts/list", json!({}));
    assert_eq!(listed["result"]["prompts"][0]["name"], "p", "{listed}");
    let missing = client.request("resources/list", json!({}));
    assert_eq!(missing["error"]["code"], -32601, "{missing}");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let discovered = client.request("server/discover", json!({"_meta": meta}));
    assert_eq!(discovered["result"]["capabilities"]["prompts"], json!({}));
    let listed = client.request("prompts/list", json!({"_meta": meta}));
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    assert!(listed["result"]["ttlMs"].is_number(), "{listed}");
}

#[test]
fn a_capability_is_declared_by_an_object_only() {
    async fn declares(ctx: Context, _: NoArguments) -> Result<String, Exit> {
        Ok(ctx.client_declares("sampling").to_string())
    }
    let server = Server::builder()
        .tool(Tool::new("declares").run(declares))
        .build()
        .expect("a server");
    let mut client = LineClient::start(server);
    for (capabilities, declared) in [
        (json!({"sampling": {}}), "true"),
        (json!({"sampling": true}), "false"),
        (json!({"sampling": null}), "false"),
        (json!({}), "false"),
    ] {
        let called = client.request(
            "tools/call",
            json!({"name": "declares", "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities
            }}),
        );
        assert_eq!(
            called["result"]["content"][0]["text"], declared,
            "{capabilities}: {called}"
        );
    }
}

#[test]
fn a_request_to_the_client_goes_out_on_2025_11_25_only() {
    async fn sample(ctx: Context, _: NoArguments) -> Result<String, Exit> {
        match ctx
            .request("sampling/createMessage", json!({"maxTokens": 1}))
            .await
        {
            Ok(answer) => Ok(format!("answered {}", answer["model"])),
            Err(error) => Ok(format!("refused {}: {}", error.code, error.message)),
        }
    }
    let server = || {
        Server::builder()
            .tool(Tool::new("sample").run(sample))
            .build()
            .expect("a server")
    };
    // 2026-07-28 has no requests from server to client: nothing is sent, whatever the
    // transport could carry.
    let mut client = LineClient::start(server());
    let refused = client.request(
        "tools/call",
        json!({"name": "sample", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}
        }}),
    );
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("refused -32603"), "{refused}");
    assert!(client.next(Duration::from_millis(200)).is_none());
    // 2025-11-25: the request goes to the client on the call's connection.
    let mut client = LineClient::start(server());
    initialize(&mut client);
    client.send(
        &json!({"jsonrpc": "2.0", "id": "call", "method": "tools/call",
                        "params": {"name": "sample"}}),
    );
    let asked = loop {
        let message = client
            .next(Duration::from_secs(10))
            .expect("a request to the client");
        if message["method"] == "sampling/createMessage" {
            break message;
        }
    };
    client.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}}));
    let answered = client.answer(&json!("call")).expect("the call's answer");
    assert_eq!(answered["result"]["content"][0]["text"], "answered \"m\"");
}
