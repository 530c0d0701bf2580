//! The classes a thread can have. On its own so that the configuration
//! (whose rules name a class) and the classifier (which reads the
//! configuration) do not import each other.

use serde::{Deserialize, Serialize};

/// A thread's class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Light,
    Medium,
    Heavy,
    LatencyCritical,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Light => "light",
            Class::Medium => "medium",
            Class::Heavy => "heavy",
            Class::LatencyCritical => "latency-critical",
        }
    }
}
