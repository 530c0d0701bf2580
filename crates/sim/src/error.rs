//! The simulator's one error type. Readers of files name the file, line
//! and key; a model refusing a request names the model; a paper's
//! scenario that cannot measure what it is for names the paper.

/// Why the simulator refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An rt-app workload it cannot run (file, line, task, key).
    #[error(transparent)]
    Workload(#[from] crate::input::rtapp::Error),
    /// A platform file or option it cannot use: `FILE:LINE: key: what`.
    #[error("{0}")]
    Platform(String),
    /// A model without the mechanism asked for (no RT class, no per-task
    /// slice, no group scheduling).
    #[error("{model}: {what}")]
    Unsupported { model: String, what: String },
    /// A request out of range or at odds with the machine's state (a
    /// CPU that does not exist, an RT priority of 0, a queued task moved).
    #[error("{0}")]
    Invalid(String),
    /// A workload's task the model refuses as written (its policy,
    /// priority or group).
    #[error("task {task:?}: {source}")]
    Task { task: String, source: Box<Error> },
    /// The daemon's loop on the simulated host stopped on a change the
    /// machine refused.
    #[error(transparent)]
    Host(#[from] crate::corral::host::SimError),
    /// A paper's scenario that did not run to what it measures.
    #[error("paper {paper}: {what}")]
    Scenario { paper: &'static str, what: String },
}

impl Error {
    pub fn unsupported(model: &str, what: impl Into<String>) -> Error {
        Error::Unsupported {
            model: model.into(),
            what: what.into(),
        }
    }
}

/// The simulator's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
