//! The older kernel models by name, for the command line and platform
//! files: `linux24` ([`crate::linux24`]), `mlq:N` (paper 004's multi-level
//! queue with MEASURE N ticks, [`crate::mlq`]), `o1` ([`crate::o1`]) and
//! `bfs` ([`crate::bfs`]).

use crate::bfs::Bfs;
use crate::kernel::SchedClass;
use crate::linux24::Linux24;
use crate::mlq::Mlq;
use crate::o1::O1;

/// The names [`old_model`] accepts.
pub const OLD_MODELS: &str = "linux24, mlq:N (MEASURE N ticks, e.g. mlq:4), o1, bfs";

/// The model called `name` on `ncpus` CPUs at `hz`.
pub fn old_model(name: &str, ncpus: usize, hz: u32) -> Result<Box<dyn SchedClass>, String> {
    match name {
        "linux24" => Ok(Box::new(Linux24::new(ncpus, hz))),
        "o1" => Ok(Box::new(O1::new(ncpus, hz))),
        "bfs" => Ok(Box::new(Bfs::new(ncpus))),
        _ => match name.strip_prefix("mlq:") {
            Some(m) => match m.parse::<i32>() {
                Ok(measure) if measure >= 0 => Ok(Box::new(Mlq::new(ncpus, hz, measure))),
                _ => Err(format!(
                    "{name:?}: MEASURE must be a whole number of ticks ≥ 0 (valid: {OLD_MODELS})"
                )),
            },
            None => Err(format!(
                "unknown kernel model {name:?} (valid: {OLD_MODELS})"
            )),
        },
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
            assert_eq!(old_model(name, 2, 100).unwrap().name(), want);
        }
        for bad in ["mlq", "mlq:", "mlq:-1", "mlq:x", "cfs", ""] {
            let e = old_model(bad, 2, 100).err().unwrap();
            assert!(e.contains("linux24") && e.contains("mlq:N"), "{bad}: {e}");
        }
    }
}
