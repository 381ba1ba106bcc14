//! placeholder
#![deny(missing_docs)]

mod any;
mod clock;
mod error;
mod id;
mod input;
pub mod jsonrpc;
mod outcome;
pub mod protocol;
mod registry;
mod status;
mod task;

pub use any::{AnyTask, StatusMismatch, Transition, TransitionError};
pub use clock::{Clock, InvalidTimestamp, ManualClock, SystemClock, Timestamp};
pub use error::{Error, LimitScope};
pub use id::TaskId;
pub use input::{InputRequest, InputRequests};
pub use jsonrpc::{JsonObject, JsonRpcError, RequestId};
pub use outcome::Outcome;
pub use registry::{
    Limits, MAX_PAGE_SIZE, Owner, RegistryBuilder, StatusChange, SubscriptionId, TaskHandle,
    TaskOrigin, TaskPage, TaskRegistry, TaskRequest, TtlPolicy,
};
pub use status::{
    CanRequireInput, CanResume, Cancelled, Completed, Failed, InputRequired, NonTerminal,
    TaskState, TaskStatus, UnknownStatus, Working,
};
pub use task::{Change, Finished, Task};
