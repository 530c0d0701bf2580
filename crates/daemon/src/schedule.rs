//! When the control loop acts. One schedule for the live daemon
//! ([`crate::server::run`], on the monotonic clock) and the simulated one
//! (`corral_sim::corral::policy::run`, on the simulator's clock), so that what the
//! simulator predicts is what the daemon does, instant for instant:
//!
//! - a full step at the start, then every `interval`, timed from the start
//!   of the previous full step (a step that overruns its interval is
//!   followed by the next one at once, never by a burst of catch-up steps);
//! - quick steps ([`crate::Daemon::quick_step`]) every `fast` between
//!   them, the first `fast` after a full step; a late quick step moves the
//!   next one no earlier than its own end;
//! - while boosts are in force, a look at the boosted threads every
//!   [`BOOST_POLL_NS`] ([`crate::Daemon::check_boosts`]).
//!
//! ```text
//! next_step  = start of the last full step + interval
//! next_quick = start of the last full step + fast,  then max(next_quick + fast, end of the quick step)
//! wake       = min(next_step, next_quick, now + BOOST_POLL_NS if boosting)
//! ```

/// How often boosted threads are looked at: a boost ends as soon as its
/// thread blocks after running.
pub const BOOST_POLL_NS: u64 = 1_000_000;

/// What the loop must do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// A full step (sample, classify, plan, apply).
    Step,
    /// A quick step (new threads, exits).
    Quick,
    /// Nothing before [`Schedule::wake_at`].
    Wait,
}

/// The loop's timetable, in ns on the caller's clock.
#[derive(Debug, Clone)]
pub struct Schedule {
    interval: u64,
    fast: Option<u64>,
    next_step: u64,
    next_quick: u64,
}

impl Schedule {
    /// Full steps every `interval_ns` from `start_ns`; quick steps every
    /// `fast_ns` between them when given.
    pub fn new(interval_ns: u64, fast_ns: Option<u64>, start_ns: u64) -> Schedule {
        Schedule {
            interval: interval_ns.max(1),
            fast: fast_ns.filter(|&f| f > 0),
            next_step: start_ns,
            next_quick: u64::MAX,
        }
    }

    /// What is due at `now`: a full step comes before a quick one.
    pub fn due(&self, now: u64) -> Due {
        if now >= self.next_step {
            Due::Step
        } else if now >= self.next_quick {
            Due::Quick
        } else {
            Due::Wait
        }
    }

    /// A full step began at `started`.
    pub fn stepped(&mut self, started: u64) {
        self.next_step = started + self.interval;
        self.next_quick = self.fast.map_or(u64::MAX, |f| started + f);
    }

    /// The quick step that was due ran; it ended at `now`.
    pub fn quick_stepped(&mut self, now: u64) {
        if let Some(f) = self.fast {
            self.next_quick = (self.next_quick.saturating_add(f)).max(now);
        }
    }

    /// When the loop must act next, at the latest: the next full or quick
    /// step, or the next look at the boosted threads while `boosting`.
    pub fn wake_at(&self, now: u64, boosting: bool) -> u64 {
        let at = self.next_step.min(self.next_quick);
        if boosting {
            at.min(now + BOOST_POLL_NS)
        } else {
            at
        }
    }

    /// When the next full step is due.
    pub fn next_step(&self) -> u64 {
        self.next_step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the schedule for `until` ns the way both loops do (acting
    /// whenever something is due, else sleeping to `wake_at`), every
    /// action taking `cost` ns; returns what ran and when.
    fn trace(mut s: Schedule, until: u64, cost: u64, boosting: bool) -> Vec<(Due, u64)> {
        let mut now = 0;
        let mut out = Vec::new();
        while now < until {
            match s.due(now) {
                Due::Step => {
                    out.push((Due::Step, now));
                    s.stepped(now);
                    now += cost;
                }
                Due::Quick => {
                    out.push((Due::Quick, now));
                    now += cost;
                    s.quick_stepped(now);
                }
                Due::Wait => {
                    let at = s.wake_at(now, boosting);
                    if boosting && at == now + BOOST_POLL_NS {
                        out.push((Due::Wait, at));
                    }
                    now = at;
                }
            }
        }
        out
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn steps_every_interval_and_quick_steps_between() {
        let t = trace(
            Schedule::new(100 * MS, Some(40 * MS), 0),
            250 * MS,
            0,
            false,
        );
        let want = [
            (Due::Step, 0),
            (Due::Quick, 40 * MS),
            (Due::Quick, 80 * MS),
            (Due::Step, 100 * MS),
            (Due::Quick, 140 * MS),
            (Due::Quick, 180 * MS),
            (Due::Step, 200 * MS),
            (Due::Quick, 240 * MS),
        ];
        assert_eq!(t, want);
    }

    #[test]
    fn an_overrun_step_is_followed_at_once_without_catch_up() {
        // Each step costs 150 ms of a 100-ms interval.
        let t = trace(Schedule::new(100 * MS, None, 0), 400 * MS, 150 * MS, false);
        assert_eq!(
            t,
            [(Due::Step, 0), (Due::Step, 150 * MS), (Due::Step, 300 * MS)]
        );
    }

    #[test]
    fn a_late_quick_step_moves_the_next_no_earlier_than_its_end() {
        let mut s = Schedule::new(1000 * MS, Some(40 * MS), 0);
        s.stepped(0);
        assert_eq!(s.due(40 * MS), Due::Quick);
        // It ran late and long: ended at 130 ms.
        s.quick_stepped(130 * MS);
        assert_eq!(s.wake_at(130 * MS, false), 130 * MS);
        s.quick_stepped(131 * MS);
        assert_eq!(s.wake_at(131 * MS, false), 170 * MS);
    }

    #[test]
    fn boosts_are_looked_at_every_millisecond() {
        let t = trace(Schedule::new(10 * MS, None, 0), 10 * MS, 0, true);
        assert_eq!(t[0], (Due::Step, 0));
        // A look a millisecond until the next step (the last with it).
        let looks: Vec<u64> = t[1..].iter().map(|&(_, at)| at).collect();
        assert_eq!(looks, (1..=10).map(|i| i * MS).collect::<Vec<_>>());
    }

    #[test]
    fn no_fast_interval_means_no_quick_steps() {
        let t = trace(Schedule::new(100 * MS, Some(0), 0), 300 * MS, 0, false);
        assert!(t.iter().all(|&(d, _)| d == Due::Step), "{t:?}");
    }
}
