//! `sched_feat` switches: the fair class's heuristics that an experiment
//! turns off one at a time, as `/sys/kernel/debug/sched/features` does on
//! a live kernel (writing `NO_NAME` turns NAME off, `NAME` back on).
//!
//! Only the switches of kernel/sched/features.h that the EEVDF model
//! reads are here, each on by default as in Linux 6.18 (NI_RANDOM from
//! 6.18.5, a backport of 6.19's):
//!
//! | switch | what it does (fair.c) |
//! |---|---|
//! | `PLACE_LAG` | a waking task keeps the lag it left with (`place_entity`); off: it starts at V |
//! | `PLACE_DEADLINE_INITIAL` | a new task's first deadline is half a slice away |
//! | `PLACE_REL_DEADLINE` | a migrating task keeps its deadline relative to its vruntime |
//! | `RUN_TO_PARITY` | curr is protected for the queue's smallest slice (`set_protect_slice`); off: for `normalized_sysctl_sched_base_slice` |
//! | `PREEMPT_SHORT` | a waking task with a shorter slice is weighed without curr's protection |
//! | `DELAY_DEQUEUE` | a task that sleeps while not eligible stays queued until it is |
//! | `DELAY_ZERO` | a delayed task's positive lag is dropped when it leaves or wakes |
//! | `SIS_UTIL` | `select_idle_cpu` scans only as many CPUs as the LLC's utilization leaves (`nr_idle_scan`) |
//! | `WA_IDLE` | `wake_affine` takes an idle waker's CPU, a sync waker's alone, or an idle prev |
//! | `WA_WEIGHT` | else it weighs the two CPUs' loads (`wake_affine_weight`) |
//! | `WA_BIAS` | …with prev's load discounted by half the domain's `imbalance_pct` |
//! | `NI_RANDOM` | new-idle balancing runs only as often as it lately pulled a task (6.18.5+) |
//!
//! The CFS era (2.6.32) reads none of them.

use std::fmt;
use std::str::FromStr;

/// One switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    PlaceLag,
    PlaceDeadlineInitial,
    PlaceRelDeadline,
    RunToParity,
    PreemptShort,
    DelayDequeue,
    DelayZero,
    SisUtil,
    WaIdle,
    WaWeight,
    WaBias,
    NiRandom,
}

impl Feature {
    /// Every switch, in features.h's order.
    pub const ALL: [Feature; 12] = [
        Feature::PlaceLag,
        Feature::PlaceDeadlineInitial,
        Feature::PlaceRelDeadline,
        Feature::RunToParity,
        Feature::PreemptShort,
        Feature::DelayDequeue,
        Feature::DelayZero,
        Feature::SisUtil,
        Feature::WaIdle,
        Feature::WaWeight,
        Feature::WaBias,
        Feature::NiRandom,
    ];

    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            Feature::PlaceLag => "PLACE_LAG",
            Feature::PlaceDeadlineInitial => "PLACE_DEADLINE_INITIAL",
            Feature::PlaceRelDeadline => "PLACE_REL_DEADLINE",
            Feature::RunToParity => "RUN_TO_PARITY",
            Feature::PreemptShort => "PREEMPT_SHORT",
            Feature::DelayDequeue => "DELAY_DEQUEUE",
            Feature::DelayZero => "DELAY_ZERO",
            Feature::SisUtil => "SIS_UTIL",
            Feature::WaIdle => "WA_IDLE",
            Feature::WaWeight => "WA_WEIGHT",
            Feature::WaBias => "WA_BIAS",
            Feature::NiRandom => "NI_RANDOM",
        }
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// A word that names no switch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown scheduler feature {word:?} (known: {}; NO_ before a name turns it off)",
    known()
)]
pub struct UnknownFeature {
    pub word: String,
}

fn known() -> String {
    Feature::ALL.map(Feature::name).join(", ")
}

/// Which switches are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features(u32);

impl Default for Features {
    /// Every switch on, as Linux 6.18.5 and later ship.
    fn default() -> Features {
        Features(Feature::ALL.iter().fold(0, |b, f| b | f.bit()))
    }
}

impl Features {
    pub fn on(self, f: Feature) -> bool {
        self.0 & f.bit() != 0
    }

    pub fn set(&mut self, f: Feature, on: bool) {
        if on {
            self.0 |= f.bit();
        } else {
            self.0 &= !f.bit();
        }
    }

    /// One word as the debugfs file takes it: `NAME` turns it on,
    /// `NO_NAME` off.
    pub fn apply(&mut self, word: &str) -> Result<(), UnknownFeature> {
        let (name, on) = match word.strip_prefix("NO_") {
            Some(n) => (n, false),
            None => (word, true),
        };
        let f = Feature::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| UnknownFeature { word: word.into() })?;
        self.set(f, on);
        Ok(())
    }
}

/// The defaults with each word (separated by commas or white space)
/// applied in turn.
impl FromStr for Features {
    type Err = UnknownFeature;

    fn from_str(s: &str) -> Result<Features, UnknownFeature> {
        let mut f = Features::default();
        for w in s.split([',', ' ', '\t', '\n']).filter(|w| !w.is_empty()) {
            f.apply(w)?;
        }
        Ok(f)
    }
}

/// As the debugfs file lists them: each name, `NO_` before those off.
impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, x) in Feature::ALL.into_iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let no = if self.on(x) { "" } else { "NO_" };
            write!(f, "{sep}{no}{}", x.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_turn_switches_off_and_on_as_debugfs_does() {
        let f: Features = "NO_RUN_TO_PARITY, NO_DELAY_DEQUEUE DELAY_DEQUEUE"
            .parse()
            .unwrap();
        assert!(!f.on(Feature::RunToParity));
        assert!(f.on(Feature::DelayDequeue));
        assert_eq!(
            f.to_string(),
            "PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE NO_RUN_TO_PARITY PREEMPT_SHORT \
             DELAY_DEQUEUE DELAY_ZERO SIS_UTIL WA_IDLE WA_WEIGHT WA_BIAS NI_RANDOM"
        );
        assert_eq!(f.to_string().parse::<Features>().unwrap(), f);
        assert_eq!("".parse::<Features>().unwrap(), Features::default());
        let e = "NO_NEXT_BUDDY".parse::<Features>().unwrap_err();
        assert!(e.to_string().contains("\"NO_NEXT_BUDDY\"") && e.to_string().contains("PLACE_LAG"));
    }
}
