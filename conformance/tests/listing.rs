//! What a server with the fixtures shows: every fixture in `tools/list`, in order and with
//! its task support, on both wires; the instructions, `logging`, the prompt and the
//! resources, declared only where the fixtures are registered.

mod support;

use mcp_tasks_conformance::{INSTRUCTIONS, core, input, tasks};
use mcp_tasks_server::Server;
use mcp_tasks_server::testing::LineClient;
use serde_json::{Value, json};
use support::{error_code, framed, result, start, start_v2025, undeclared};

/// Each fixture's task support as 2025-11-25 shows it (`None`: never a task).
const SUPPORT: [(&str, Option<&str>); 33] = [
    ("test_simple_text", None),
    ("greet", None),
    ("slow_compute", Some("optional")),
    ("failing_job", Some("required")),
    ("protocol_error_job", Some("optional")),
    ("confirm_delete", Some("required")),
    ("multi_input", Some("required")),
    ("test_tool_with_task", Some("required")),
    ("test_reconnection", None),
    ("test_missing_capability", None),
    ("test_streaming_elicitation", None),
    ("test_logging_tool", None),
    ("test_custom_header", None),
    ("test_image_content", None),
    ("test_audio_content", None),
    ("test_embedded_resource", None),
    ("test_multiple_content_types", None),
    ("test_error_handling", None),
    ("test_tool_with_progress", Some("optional")),
    ("test_tool_with_logging", Some("optional")),
    ("test_sampling", None),
    ("test_elicitation", None),
    ("test_elicitation_sep1034_defaults", None),
    ("test_elicitation_sep1330_enums", None),
    ("json_schema_2020_12_tool", None),
    ("test_input_required_result_elicitation", None),
    ("test_input_required_result_sampling", None),
    ("test_input_required_result_list_roots", None),
    ("test_input_required_result_request_state", None),
    ("test_input_required_result_multiple_inputs", None),
    ("test_input_required_result_multi_round", None),
    ("test_input_required_result_tampered_state", None),
    ("test_input_required_result_capabilities", None),
];

fn tools(listed: &Value) -> Vec<Value> {
    result(listed)["tools"].as_array().expect("tools").clone()
}

#[test]
fn every_fixture_is_listed_in_order_with_its_task_support_on_both_wires() {
    let mut client = start_v2025(json!({}));
    let listed = tools(&client.request("tools/list", json!({})));
    let names: Vec<&str> = listed
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    let expected: Vec<&str> = tasks::NAMES
        .iter()
        .chain(&core::NAMES)
        .chain(&input::NAMES)
        .copied()
        .collect();
    assert_eq!(names, expected);
    assert_eq!(names, SUPPORT.map(|(name, _)| name));
    // The suite calls the first listed tool with `{}`: one that needs nothing.
    assert_eq!(listed[0]["name"], "test_simple_text");
    for ((name, support), tool) in SUPPORT.iter().zip(&listed) {
        assert_eq!(
            tool["execution"]["taskSupport"].as_str(),
            *support,
            "{name}: {tool}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        let description = tool["description"].as_str().unwrap_or_default();
        assert!(description.contains("conformance fixture"), "{tool}");
    }
    // 2026-07-28: the same tools, in the same order, without `execution` (running as a
    // task is the server's decision there).
    let ext = client.request("tools/list", undeclared(json!({})));
    assert_eq!(result(&ext)["resultType"], "complete", "{ext}");
    let ext = tools(&ext);
    let ext_names: Vec<&str> = ext
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(ext_names, expected);
    assert!(ext.iter().all(|tool| tool.get("execution").is_none()));
}

#[test]
fn the_input_schemas_say_what_the_fixtures_take() {
    let mut client = start_v2025(json!({}));
    let listed = tools(&client.request("tools/list", json!({})));
    let schema = |name: &str| -> Value {
        listed
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["inputSchema"].clone())
            .unwrap_or_else(|| panic!("{name} is listed"))
    };
    assert_eq!(
        schema("test_simple_text"),
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        schema("greet"),
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );
    let slow = schema("slow_compute");
    assert_eq!(slow["required"], json!(["seconds"]), "{slow}");
    assert_eq!(slow["properties"]["seconds"]["type"], "number");
    assert_eq!(slow["properties"]["seconds"]["minimum"], 0);
    assert_eq!(slow["properties"]["seconds"]["maximum"], 3600);
    // A client mirrors `region` into `Mcp-Param-Region` (SEP-2243).
    assert_eq!(
        schema("test_custom_header"),
        json!({"type": "object",
               "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
               "required": ["region"]})
    );
    assert_eq!(
        schema("test_sampling")["properties"]["prompt"]["description"],
        "The prompt to send to the LLM"
    );
    // Handed on untouched: what a derived schema cannot say.
    let draft = schema("json_schema_2020_12_tool");
    assert_eq!(draft["$schema"], core::DRAFT_2020_12);
    assert_eq!(draft["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(draft["additionalProperties"], false);
    assert_eq!(draft["if"]["properties"]["contactMethod"]["const"], "phone");
    assert_eq!(draft["then"]["required"], json!(["phone"]));
    assert_eq!(draft["else"]["required"], json!(["email"]));
    assert_eq!(draft["allOf"][0]["anyOf"][1]["required"], json!(["email"]));
}

#[test]
fn the_built_tools_are_the_listed_ones() {
    let built: Vec<String> = tasks::tools()
        .iter()
        .chain(&core::tools())
        .chain(&input::tools())
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(built, SUPPORT.map(|(name, _)| name));
    let header = tasks::tools()
        .into_iter()
        .find(|tool| tool.name() == "test_custom_header")
        .expect("test_custom_header");
    assert_eq!(
        header.header_params(),
        [("region".to_owned(), "Region".to_owned())]
    );
    assert!(
        tasks::tools()
            .iter()
            .filter(|tool| tool.name() != "test_custom_header")
            .all(|tool| tool.header_params().is_empty())
    );
}

#[test]
fn register_sets_the_instructions_logging_the_prompt_and_the_resources() {
    let mut client = start();
    let initialized = client.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let initialized = result(&initialized);
    assert_eq!(initialized["instructions"], INSTRUCTIONS);
    for capability in ["logging", "prompts", "resources", "tools"] {
        assert_eq!(
            initialized["capabilities"][capability],
            json!({}),
            "{capability}: {initialized}"
        );
    }
    let set = client.request("logging/setLevel", json!({"level": "debug"}));
    assert_eq!(result(&set), &json!({}));
    let discovered = client.request("server/discover", undeclared(json!({})));
    let discovered = result(&discovered);
    assert_eq!(discovered["instructions"], INSTRUCTIONS);
    assert_eq!(discovered["capabilities"]["prompts"], json!({}));
    assert_eq!(discovered["capabilities"]["resources"], json!({}));
    // 2026-07-28 has no logging/setLevel: a request asks for its level in `_meta`.
    let gone = client.request("logging/setLevel", undeclared(json!({"level": "debug"})));
    assert_eq!(error_code(&gone), -32601, "{gone}");
}

#[test]
fn without_the_fixtures_none_of_it_is_served() {
    let mut client = LineClient::start(Server::builder().build().expect("a server"));
    let initialized = client.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    let capabilities = &result(&initialized)["capabilities"];
    for capability in ["logging", "prompts", "resources"] {
        assert!(capabilities.get(capability).is_none(), "{capabilities}");
    }
    for method in ["logging/setLevel", "prompts/list", "resources/list"] {
        let answer = client.request(method, json!({"level": "debug"}));
        assert_eq!(error_code(&answer), -32601, "{method}: {answer}");
    }
    let refused = client.request("tools/call", json!({"name": "test_simple_text"}));
    assert_eq!(error_code(&refused), -32602, "{refused}");
    let discovered = client.request("server/discover", framed(json!({}), json!({})));
    assert!(result(&discovered)["capabilities"].get("prompts").is_none());
}
