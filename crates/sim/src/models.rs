//! Every kernel model by name, the one registry the command line
//! (`--kernel`) and platform files (`kernel = "…"`) use:
//!
//! | name | model |
//! |---|---|
//! | `eevdf` | the fair class of Linux 6.6+ ([`crate::sched::fair`]) under RT |
//! | `cfs` | the fair class of Linux 2.6.32–3.0 under RT |
//! | `linux24` | Linux 2.4 ([`crate::legacy::linux24`]) |
//! | `mlq:N` | paper 004's multi-level queue, MEASURE N ticks ([`crate::legacy::mlq`]) |
//! | `o1` | Linux 2.6.0–2.6.22's O(1) ([`crate::legacy::o1`]) |
//! | `bfs` | BFS ([`crate::legacy::bfs`]) |

use crate::legacy::bfs::Bfs;
use crate::legacy::linux24::Linux24;
use crate::legacy::mlq::Mlq;
use crate::legacy::o1::O1;
use crate::sched::fair::Flavour;
use crate::sched::kernel::SchedClass;
use std::fmt;
use std::str::FromStr;

/// The names [`Model`] parses, for help and error texts.
pub const NAMES: &str = "eevdf, cfs, linux24, mlq:N (MEASURE N ticks, e.g. mlq:4), o1, bfs";

/// A kernel model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// The fair class in one of its eras, with RT above it and group
    /// scheduling.
    Fair(Flavour),
    Linux24,
    /// Paper 004's multi-level queue with MEASURE `measure` ticks (≥ 0).
    Mlq {
        measure: i32,
    },
    O1,
    Bfs,
}

/// A name [`Model`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("unknown kernel model {0:?} (valid: {NAMES})")]
    Unknown(String),
    #[error("{0:?}: MEASURE must be a whole number of ticks ≥ 0 (valid: {NAMES})")]
    Measure(String),
}

impl FromStr for Model {
    type Err = ModelError;

    fn from_str(name: &str) -> Result<Model, ModelError> {
        Ok(match name {
            "eevdf" => Model::Fair(Flavour::Eevdf),
            "cfs" => Model::Fair(Flavour::Cfs),
            "linux24" => Model::Linux24,
            "o1" => Model::O1,
            "bfs" => Model::Bfs,
            _ => match name.strip_prefix("mlq:") {
                Some(m) => match m.parse::<i32>() {
                    Ok(measure) if measure >= 0 => Model::Mlq { measure },
                    _ => return Err(ModelError::Measure(name.into())),
                },
                None => return Err(ModelError::Unknown(name.into())),
            },
        })
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Model::Fair(Flavour::Eevdf) => f.write_str("eevdf"),
            Model::Fair(Flavour::Cfs) => f.write_str("cfs"),
            Model::Linux24 => f.write_str("linux24"),
            Model::Mlq { measure } => write!(f, "mlq:{measure}"),
            Model::O1 => f.write_str("o1"),
            Model::Bfs => f.write_str("bfs"),
        }
    }
}

impl Model {
    /// The fair class's era, for the models that have one (group
    /// scheduling, RT above).
    pub fn flavour(self) -> Option<Flavour> {
        match self {
            Model::Fair(f) => Some(f),
            _ => None,
        }
    }

    /// One of the older run-queue models on `ncpus` CPUs at `hz`; `None`
    /// for the fair class (built with its groups by
    /// [`crate::input::platform::build`]).
    pub fn run_queue(self, ncpus: usize, hz: u32) -> Option<Box<dyn SchedClass>> {
        Some(match self {
            Model::Fair(_) => return None,
            Model::Linux24 => Box::new(Linux24::new(ncpus, hz)),
            Model::Mlq { measure } => Box::new(Mlq::new(ncpus, hz, measure)),
            Model::O1 => Box::new(O1::new(ncpus, hz)),
            Model::Bfs => Box::new(Bfs::new(ncpus)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_make_models_and_errors_list_the_valid_ones() {
        for (name, want) in [
            ("linux24", "linux24"),
            ("mlq:4", "mlq"),
            ("mlq:12", "mlq"),
            ("o1", "o1"),
            ("bfs", "bfs"),
        ] {
            let m: Model = name.parse().unwrap();
            assert_eq!(m.to_string(), name);
            assert_eq!(m.run_queue(2, 100).unwrap().name(), want);
        }
        for (name, flavour) in [("eevdf", Flavour::Eevdf), ("cfs", Flavour::Cfs)] {
            let m: Model = name.parse().unwrap();
            assert_eq!((m.flavour(), m.to_string().as_str()), (Some(flavour), name));
            assert!(m.run_queue(2, 100).is_none());
        }
        for bad in ["mlq", "mlq:", "mlq:-1", "mlq:x", "CFS", ""] {
            let e = bad.parse::<Model>().unwrap_err().to_string();
            assert!(
                e.contains("eevdf") && e.contains("linux24") && e.contains("mlq:N"),
                "{bad}: {e}"
            );
        }
    }
}
