//! A handler as a tool keeps it: its typed arguments read from the call (`-32602` naming
//! the field when they do not fit, before any work), its answer turned into a result, and a
//! panic turned into `-32603`, whatever kind it is (async, or blocking on a thread).

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as Cx, Poll};

use mcp_tasks::{JsonObject, JsonRpcError, jsonrpc};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::{Context, Exit};
use crate::result::{IntoToolResult, Produced};

/// What a tool takes as its arguments: a type that deserializes from the call's
/// `arguments` object, with a JSON Schema (its input schema in `tools/list`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's arguments",
    label = "a tool's arguments derive `serde::Deserialize` and `schemars::JsonSchema` (and are `Send + 'static`)"
)]
pub trait Arguments: DeserializeOwned + JsonSchema + Send + 'static {}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> Arguments for T {}

/// The arguments of a tool that takes none: `{}` (any members are ignored). Its input
/// schema is `{"type": "object", "properties": {}}`: an object with no properties said
/// outright, as clients that read `properties` expect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[schemars(extend("properties" = {}))]
pub struct NoArguments {}

/// An async handler: `async fn(Context, Args) -> Result<R, Exit>` (or a closure returning
/// such a future), where `R` is what a tool answers ([`IntoToolResult`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an async tool handler",
    label = "`run` takes an `async fn(Context, Args) -> Result<R, Exit>`; give a blocking `fn(Context, Args) -> Result<R, Exit>` to `run_blocking`"
)]
pub trait Handler<A>: Send + Sync + 'static {
    /// What it answers.
    type Output: IntoToolResult;
    /// Its future.
    type Future: Future<Output = Result<Self::Output, Exit>> + Send + 'static;

    /// Starts the handler on one call.
    fn call(&self, context: Context, arguments: A) -> Self::Future;
}

impl<F, A, Fut, R> Handler<A> for F
where
    F: Fn(Context, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, Exit>> + Send + 'static,
    R: IntoToolResult,
{
    type Output = R;
    type Future = Fut;

    fn call(&self, context: Context, arguments: A) -> Fut {
        self(context, arguments)
    }
}

/// A blocking handler: `fn(Context, Args) -> Result<R, Exit>` (or such a closure), run on a
/// thread of its own.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a blocking tool handler",
    label = "`run_blocking` takes a `fn(Context, Args) -> Result<R, Exit>`; give an `async fn` to `run`"
)]
pub trait BlockingHandler<A>: Send + Sync + 'static {
    /// What it answers.
    type Output: IntoToolResult;

    /// Runs the handler on one call, to its end.
    ///
    /// # Errors
    /// How the call ended without a result ([`Exit`]).
    fn call(&self, context: Context, arguments: A) -> Result<Self::Output, Exit>;
}

impl<F, A, R> BlockingHandler<A> for F
where
    F: Fn(Context, A) -> Result<R, Exit> + Send + Sync + 'static,
    R: IntoToolResult,
{
    type Output = R;

    fn call(&self, context: Context, arguments: A) -> Result<R, Exit> {
        self(context, arguments)
    }
}

/// A boxed future of what a handler produced.
pub(crate) type Running = Pin<Box<dyn Future<Output = Result<Produced, Exit>> + Send>>;

/// A call whose arguments were read, ready to run with its context.
pub(crate) enum Prepared {
    /// An async handler.
    Async(Box<dyn FnOnce(Context) -> Running + Send>),
    /// A blocking handler (to run on a thread that may block).
    Blocking(Box<dyn FnOnce(Context) -> Result<Produced, Exit> + Send>),
}

impl Prepared {
    /// Whether it blocks the thread it runs on.
    pub(crate) fn is_blocking(&self) -> bool {
        matches!(self, Prepared::Blocking(_))
    }
}

/// A handler with its arguments' type erased.
pub(crate) trait Erased: Send + Sync {
    /// Reads `arguments` (the call's, as sent) into the handler's type.
    fn prepare(&self, tool: &str, arguments: JsonObject) -> Result<Prepared, JsonRpcError>;
}

struct AsyncErased<H, A> {
    handler: Arc<H>,
    arguments: std::marker::PhantomData<fn() -> A>,
}

impl<H: Handler<A>, A: Arguments> Erased for AsyncErased<H, A> {
    fn prepare(&self, tool: &str, arguments: JsonObject) -> Result<Prepared, JsonRpcError> {
        let arguments: A = read_arguments(tool, arguments)?;
        let handler = Arc::clone(&self.handler);
        Ok(Prepared::Async(Box::new(move |context| {
            let future = handler.call(context, arguments);
            Box::pin(async move { future.await.and_then(IntoToolResult::produce) })
        })))
    }
}

struct BlockingErased<H, A> {
    handler: Arc<H>,
    arguments: std::marker::PhantomData<fn() -> A>,
}

impl<H: BlockingHandler<A>, A: Arguments> Erased for BlockingErased<H, A> {
    fn prepare(&self, tool: &str, arguments: JsonObject) -> Result<Prepared, JsonRpcError> {
        let arguments: A = read_arguments(tool, arguments)?;
        let handler = Arc::clone(&self.handler);
        Ok(Prepared::Blocking(Box::new(move |context| {
            handler
                .call(context, arguments)
                .and_then(IntoToolResult::produce)
        })))
    }
}

pub(crate) fn erase_async<A: Arguments, H: Handler<A>>(handler: H) -> Arc<dyn Erased> {
    Arc::new(AsyncErased {
        handler: Arc::new(handler),
        arguments: std::marker::PhantomData,
    })
}

pub(crate) fn erase_blocking<A: Arguments, H: BlockingHandler<A>>(handler: H) -> Arc<dyn Erased> {
    Arc::new(BlockingErased {
        handler: Arc::new(handler),
        arguments: std::marker::PhantomData,
    })
}

/// Reads a call's `arguments` as `A`.
///
/// # Errors
/// `-32602` naming the tool, the field (its path) and what is wrong with it.
pub(crate) fn read_arguments<A: DeserializeOwned>(
    tool: &str,
    arguments: JsonObject,
) -> Result<A, JsonRpcError> {
    serde_path_to_error::deserialize(Value::Object(arguments)).map_err(|err| {
        let path = err.path().to_string();
        let why = mcp_tasks::backend::shorten(&err.inner().to_string());
        let message = if path == "." {
            format!("invalid params: the arguments of `{tool}`: {why}")
        } else {
            format!("invalid params: the arguments of `{tool}`: `{path}`: {why}")
        };
        JsonRpcError::new(jsonrpc::INVALID_PARAMS, message)
    })
}

/// `T`'s JSON Schema as a tool shows it: draft 2020-12 (MCP's default dialect, so no
/// `$schema`), subschemas inline where the type allows, no root `title` or `description`.
pub(crate) fn schema_object<T: JsonSchema>() -> JsonObject {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(object) => object,
        // `true`/`false` schemas: any object.
        _ => JsonObject::new(),
    };
    // The tool says what it is; the type's own title and doc comment are noise there.
    object.remove("title");
    object.remove("description");
    object
}

/// The input schema of a tool taking `A`: `A`'s schema, which must describe an object.
pub(crate) fn input_schema<A: JsonSchema>() -> JsonObject {
    let mut schema = schema_object::<A>();
    if schema.is_empty() {
        schema.insert("type".into(), Value::String("object".into()));
    }
    schema
}

/// A future whose panic is caught: `Err` with the panic's message.
pub(crate) struct CatchUnwind<F: ?Sized>(pub(crate) Pin<Box<F>>);

impl<F: Future + ?Sized> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Cx<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(move || inner.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

/// Runs `work`, catching its panic: `Err` with the panic's message.
pub(crate) fn catch<R>(work: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| panic_message(payload.as_ref()))
}

/// A panic's message, when it has one (a `&str` or `String` payload).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// The `-32603` a handler's panic becomes.
pub(crate) fn panicked(tool: &str, message: &str) -> JsonRpcError {
    JsonRpcError::new(
        jsonrpc::INTERNAL_ERROR,
        format!(
            "the handler of `{tool}` panicked: {}",
            mcp_tasks::backend::shorten(message)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Sleep {
        /// How long.
        ms: u64,
        #[serde(default)]
        label: Option<String>,
    }

    #[test]
    fn arguments_that_do_not_fit_name_the_field() {
        let arguments = |value: Value| value.as_object().cloned().unwrap_or_default();
        let read: Sleep =
            read_arguments("sleep", arguments(serde_json::json!({"ms": 5}))).expect("fits");
        assert_eq!(read, Sleep { ms: 5, label: None });
        let wrong = read_arguments::<Sleep>("sleep", arguments(serde_json::json!({"ms": "x"})))
            .expect_err("a string");
        assert_eq!(wrong.code, jsonrpc::INVALID_PARAMS);
        assert!(wrong.message.contains("`ms`"), "{}", wrong.message);
        assert!(wrong.message.contains("`sleep`"), "{}", wrong.message);
        let missing =
            read_arguments::<Sleep>("sleep", JsonObject::new()).expect_err("ms is required");
        assert!(
            missing.message.contains("missing field `ms`"),
            "{}",
            missing.message
        );
    }

    #[test]
    fn the_input_schema_is_the_arguments_object_schema() {
        let schema = input_schema::<Sleep>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], serde_json::json!(["ms"]));
        assert_eq!(schema["properties"]["ms"]["description"], "How long.");
        assert!(!schema.contains_key("$schema") && !schema.contains_key("title"));
        let none = input_schema::<NoArguments>();
        assert_eq!(
            Value::Object(none),
            serde_json::json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn a_panic_is_caught_with_its_message() {
        assert_eq!(catch(|| 3), Ok(3));
        let caught = catch(|| -> u32 { panic!("boom {}", 7) });
        assert_eq!(caught, Err("boom 7".to_owned()));
        let future = CatchUnwind(Box::pin(async { panic!("async boom") }));
        assert_eq!(
            crate::work::block_on(future),
            Err::<(), _>("async boom".to_owned())
        );
    }
}
