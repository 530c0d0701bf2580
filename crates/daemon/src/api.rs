//! The socket protocol: JSON lines, one request and one response per line,
//! versioned. Documented in `docs/api.md`.

use corral_core::classify::Class;
use corral_core::plan::GroupKind;
use corral_core::sample::ThreadStats;
use corral_core::share::Level;
use corral_core::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The protocol version this build speaks; a request with another `v` is
/// refused with an error saying which it speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// A request: `{"v":1,"cmd":"status"}`, `{"v":1,"cmd":"explain","tid":42}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub v: u32,
    #[serde(flatten)]
    pub command: Command,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case")]
pub enum Command {
    Status,
    Explain {
        tid: u32,
    },
    /// Raise `tid` until it blocks after running, exits, is unboosted, or
    /// `max_ms` passes (the configured default when absent).
    Boost {
        tid: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_ms: Option<u64>,
    },
    Unboost {
        tid: u32,
    },
    /// The Prometheus text exposition (a JSON string).
    Metrics,
}

/// The answer to `boost`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoostReply {
    pub tid: u32,
    /// The cap, ms from now.
    pub max_ms: u64,
    /// Whether the thread was already boosted (the boost was extended).
    pub extended: bool,
    /// The CPU it has to itself while boosted, when hogs were moved off it.
    pub cpu: Option<u32>,
}

/// A response: `{"v":1,"ok":true,"result":…}` or `{"v":1,"ok":false,"error":"…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub v: u32,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    pub fn ok(result: impl Serialize) -> Response {
        Response {
            v: PROTOCOL_VERSION,
            ok: true,
            result: Some(serde_json::to_value(result).unwrap_or(serde_json::Value::Null)),
            error: None,
        }
    }

    pub fn error(message: impl Into<String>) -> Response {
        Response {
            v: PROTOCOL_VERSION,
            ok: false,
            result: None,
            error: Some(message.into()),
        }
    }
}

/// One of corral's groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupStatus {
    pub name: String,
    pub kind: GroupKind,
    pub cpus: CpuSet,
    /// cpu.shares (v1 units).
    pub shares: u64,
    pub members: usize,
}

/// A managed thread in `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadStatus {
    pub tid: u32,
    pub pid: u32,
    pub comm: String,
    pub class: Option<Class>,
    pub group: Option<String>,
    pub util: Option<f64>,
    pub peak: f64,
    /// Mean run-queue delay per timeslice over the last interval, ms.
    #[serde(default)]
    pub delay_ms: Option<f64>,
    /// The CPU it last ran on.
    #[serde(default)]
    pub cpu: u32,
}

/// A boost in force or recently ended, for `status` (and `corral top`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoostRecord {
    pub tid: u32,
    pub comm: String,
    /// How long ago it began, ms.
    pub ago_ms: u64,
    /// How long it lasted, ms; `None` while in force.
    pub lasted_ms: Option<u64>,
}

/// The answer to `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub backend: String,
    pub interval_ms: u64,
    pub step: u64,
    pub online: CpuSet,
    pub heterogeneous: bool,
    pub groups: Vec<GroupStatus>,
    /// The threads boosted now.
    #[serde(default)]
    pub boosted: Vec<u32>,
    /// Threads per class, plus `unmanaged` and `new`.
    pub counts: BTreeMap<String, usize>,
    pub threads: Vec<ThreadStatus>,
    pub notes: Vec<String>,
    pub errors: Vec<String>,
    pub last_step_us: u64,
    /// The configuration file in force (`None`: the built-in defaults).
    #[serde(default)]
    pub config: Option<String>,
    /// What the daemon manages, in words.
    #[serde(default)]
    pub scope: String,
    /// The boosts in force and the last ones that ended, newest first.
    #[serde(default)]
    pub boost_log: Vec<BoostRecord>,
}

/// The answer to `explain`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explain {
    pub tid: u32,
    pub pid: u32,
    pub comm: String,
    pub class: Option<Class>,
    /// Why it has its class (or is not managed), in words.
    pub why: String,
    pub peak: f64,
    pub stats: Option<ThreadStats>,
    pub nice: i32,
    pub cpu: u32,
    /// Its cgroup in the cpu hierarchy when first seen.
    pub cgroup: Option<String>,
    /// corral's group for it, if placed.
    pub group: Option<String>,
    /// The share of one CPU it can count on through the hierarchy now.
    pub effective_share: f64,
    pub share_levels: Vec<Level>,
    pub share_cpus: u32,
}

/// Parses a request line, checking the version.
pub fn parse_request(line: &str) -> Result<Command, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    match value.get("v").and_then(|v| v.as_u64()) {
        Some(v) if v == PROTOCOL_VERSION as u64 => {}
        Some(v) => {
            return Err(format!(
                "protocol version {v} is not supported; this daemon speaks {PROTOCOL_VERSION}"
            ))
        }
        None => {
            return Err(format!(
                "missing \"v\": send {{\"v\":{PROTOCOL_VERSION},\"cmd\":…}}"
            ))
        }
    }
    serde_json::from_value::<Request>(value)
        .map(|r| r.command)
        .map_err(|e| format!("bad request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_are_checked() {
        assert_eq!(
            parse_request(r#"{"v":1,"cmd":"status"}"#),
            Ok(Command::Status)
        );
        assert_eq!(
            parse_request(r#"{"v":1,"cmd":"explain","tid":7}"#),
            Ok(Command::Explain { tid: 7 })
        );
        assert!(parse_request(r#"{"v":2,"cmd":"status"}"#)
            .unwrap_err()
            .contains("speaks 1"));
        assert!(parse_request(r#"{"cmd":"status"}"#)
            .unwrap_err()
            .contains("missing"));
        assert!(parse_request(r#"{"v":1,"cmd":"reboot"}"#)
            .unwrap_err()
            .contains("bad request"));
        assert!(parse_request("nope").unwrap_err().contains("not JSON"));
        let line = serde_json::to_string(&Request {
            v: 1,
            command: Command::Explain { tid: 3 },
        })
        .unwrap();
        assert_eq!(line, r#"{"v":1,"cmd":"explain","tid":3}"#);
    }
}
