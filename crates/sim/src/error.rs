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
    /// (The cause is a field, not a chained `source()`: the message holds
    /// it once, and the CLI's `{:#}` would print a chained one again.)
    #[error("task {task:?}: {error}")]
    Task { task: String, error: Box<Error> },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_said_once_and_not_chained() {
        let e = Error::Task {
            task: "hog".into(),
            error: Box::new(Error::unsupported(
                "linux24",
                "no group scheduling (taskgroup \"/bg\")",
            )),
        };
        assert_eq!(
            e.to_string(),
            "task \"hog\": linux24: no group scheduling (taskgroup \"/bg\")"
        );
        assert!(std::error::Error::source(&e).is_none());
    }
}
