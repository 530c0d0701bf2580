//! The host layer's error type.

use corral_core::ParseCpuListError;
use std::io;
use std::path::{Path, PathBuf};

/// A failure to read or change the host. Every variant names the file or
/// the call it concerns, and its message already includes the cause (so
/// the cause is not also chained as `source()`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
    /// A file held a malformed CPU list.
    #[error("{}: {error}", path.display())]
    CpuList {
        path: PathBuf,
        error: ParseCpuListError,
    },
    /// A file held something other than what the kernel writes there.
    #[error("{}: expected {expected}, found {value:?}", path.display())]
    Parse {
        path: PathBuf,
        value: String,
        expected: &'static str,
    },
    /// A group that could not be removed: tasks kept it busy (`held` says
    /// which, with their state and name, as `/proc` gave them).
    #[error("{}: still busy after {secs} s of draining; it holds {held}", path.display())]
    Busy {
        path: PathBuf,
        secs: u64,
        held: String,
    },
    /// The process does not exist (or exited while being read).
    #[error("no process with PID {0}")]
    NoSuchProcess(u32),
    /// A system call failed.
    #[error("{call}: {error}")]
    Syscall {
        call: &'static str,
        error: io::Error,
    },
}

/// The host layer's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: &Path, error: io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            error,
        }
    }

    pub(crate) fn parse(path: &Path, value: &str, expected: &'static str) -> Error {
        Error::Parse {
            path: path.to_path_buf(),
            value: value.trim().to_string(),
            expected,
        }
    }

    /// Whether the thing read has gone away (ENOENT, ESRCH): a thread or
    /// process that exited between two reads, which is normal.
    pub fn is_gone(&self) -> bool {
        let gone = |e: &io::Error| {
            e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc_esrch())
        };
        match self {
            Error::Io { error, .. } | Error::Syscall { error, .. } => gone(error),
            Error::NoSuchProcess(_) => true,
            _ => false,
        }
    }
}

fn libc_esrch() -> i32 {
    rustix::io::Errno::SRCH.raw_os_error()
}
