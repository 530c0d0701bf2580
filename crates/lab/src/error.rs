//! The lab's one error type. Every message names the file, program,
//! option or daemon it concerns, and already includes its cause: a cause
//! is a field of its own (`error`), not chained as `source()`, so that
//! the CLI's `{:#}` prints it once (as the host layer's errors do). The
//! simulator's errors pass through unchanged.

use std::path::PathBuf;

/// Why an experiment or a workload program stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading, writing or creating a file or directory failed.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A program or thread could not be started. `program` is what the
    /// user knows it as (`` `corral lab work hog` ``, `the daemon`).
    #[error("cannot start {program}: {error}")]
    Spawn {
        program: String,
        error: std::io::Error,
    },
    /// A program that ran and failed: `why` completes the sentence
    /// (`failed (exit status: 1); its log, …`, `said "…": …`).
    #[error("{program} {why}")]
    Command { program: String, why: String },
    /// A file or log that does not hold what it should: `what` is the
    /// file (or `FILE:LINE`), `why` what is wrong with it.
    #[error("{what}: {why}")]
    Parse { what: String, why: String },
    /// What this machine lacks for the experiment (root, a cgroup
    /// hierarchy, a tool), and how to get it.
    #[error("{0}")]
    Environment(String),
    /// A bad option or request.
    #[error("{0}")]
    Invalid(String),
    /// A daemon (`corral run` or the in-process one) that would not start,
    /// answer or stop cleanly.
    #[error("{0}")]
    Daemon(String),
    /// The host layer refused (`what` says what was being done): reading
    /// the CPUs or cgroup mounts, the in-process daemon's loop.
    #[error("{what}: {error}")]
    Host {
        what: String,
        error: corral_linux::Error,
    },
    /// The simulator refused a workload or platform file, or stopped.
    #[error(transparent)]
    Sim(#[from] corral_sim::error::Error),
    /// An experiment that could not measure what it is for.
    #[error("{0}")]
    Measurement(String),
    /// Stopped by a signal (Ctrl-C) before the end.
    #[error("interrupted")]
    Interrupted,
    /// An error in one part of a larger step, named first (a case of
    /// `lab validate`, stopping a probe).
    #[error("{what}: {error}")]
    Within { what: String, error: Box<Error> },
    /// An error after which the experiment's logs were kept in `dir`.
    #[error("{error}\n(logs kept in {})", dir.display())]
    LogsKept { error: Box<Error>, dir: PathBuf },
}

/// The lab's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `error` on `path`, for `map_err`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |error| Error::Io { path, error }
    }

    /// `program` could not be started, for `map_err`.
    pub fn spawn(program: &str) -> impl FnOnce(std::io::Error) -> Error {
        let program = program.to_string();
        move |error| Error::Spawn { program, error }
    }

    /// The host layer refused while doing `what`, for `map_err`.
    pub fn host(what: &str) -> impl FnOnce(corral_linux::Error) -> Error {
        let what = what.to_string();
        move |error| Error::Host { what, error }
    }

    /// This error within `what` (`WHAT: ERROR`).
    pub fn within(self, what: impl Into<String>) -> Error {
        Error::Within {
            what: what.into(),
            error: Box::new(self),
        }
    }

    /// Whether it tells of one run of an experiment that went wrong (a
    /// program that ended early, a measurement that could not be made),
    /// which another run may not repeat; not of the machine, a file or
    /// a request, which every run would meet.
    pub fn is_one_draw(&self) -> bool {
        match self {
            Error::Command { .. } | Error::Measurement(_) => true,
            Error::Within { error, .. } | Error::LogsKept { error, .. } => error.is_one_draw(),
            _ => false,
        }
    }

    /// This error, followed by where the logs were kept.
    pub fn logs_kept(self, dir: impl Into<PathBuf>) -> Error {
        Error::LogsKept {
            error: Box::new(self),
            dir: dir.into(),
        }
    }
}

/// An rt-app workload the simulator refused is the simulator's error.
impl From<corral_sim::input::rtapp::Error> for Error {
    fn from(e: corral_sim::input::rtapp::Error) -> Error {
        Error::Sim(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_they_concern_and_say_the_cause_once() {
        let e = Error::io("/x/y")(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.to_string(), "/x/y: entity not found");
        assert!(std::error::Error::source(&e).is_none());
        let e = Error::spawn("`corral lab work hog`")(std::io::Error::other("no"));
        assert_eq!(e.to_string(), "cannot start `corral lab work hog`: no");
        let e = Error::Command {
            program: "workload 7".into(),
            why: "failed: exit status: 1".into(),
        };
        assert_eq!(e.to_string(), "workload 7 failed: exit status: 1");
        let e = Error::Interrupted.within("mp3-short").logs_kept("/tmp/k");
        assert_eq!(
            e.to_string(),
            "mp3-short: interrupted\n(logs kept in /tmp/k)"
        );
    }
}
