//! The simulator's targets against this kernel (the fidelity issue's
//! acceptance), applied to a case's rows: CPU share within
//! [`SHARE_PP`] percentage points; wake-up latency and response time,
//! p50 and p99, within [`LATENCY_REL`] of the live figure or
//! [`LATENCY_ABS_US`]; migrations within a factor [`MIGRATIONS_FACTOR`].
//! Each miss names the model's known gaps that bear on its measure
//! ([`Measure::why`]), the `XXX` marks of `corral_sim::sched`.

use super::TaskRow;
use serde::Serialize;

pub const SHARE_PP: f64 = 3.0;
pub const LATENCY_REL: f64 = 0.20;
pub const LATENCY_ABS_US: f64 = 50.0;
pub const MIGRATIONS_FACTOR: f64 = 2.0;
/// Migrations fewer than this on both sides in the window are too few
/// to compare by a factor (0 against 3 is not "3 times as many").
pub const MIGRATIONS_FEW: u64 = 5;

/// What is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    Share,
    WakeupP50,
    WakeupP99,
    ResponseP50,
    ResponseP99,
    Migrations,
}

impl Measure {
    pub fn name(self) -> &'static str {
        match self {
            Measure::Share => "share",
            Measure::WakeupP50 => "wake-up latency p50",
            Measure::WakeupP99 => "wake-up latency p99",
            Measure::ResponseP50 => "response p50",
            Measure::ResponseP99 => "response p99",
            Measure::Migrations => "migrations",
        }
    }

    /// The model's known gaps that bear on this measure.
    pub fn why(self) -> &'static str {
        match self {
            Measure::Share => {
                "the 6.x balancer is modelled on one domain level, with active balancing \
                 only for a misfit task on CPUs of different capacities (on equal CPUs a \
                 running task never moves: need_active_balance after repeated failures is \
                 not modelled), and a task's arrival or departure does not reach its group \
                 entity's own load_avg (propagate_entity_load_avg; a new weight does, at \
                 once, as reweight_entity moves it): where a thread shares a CPU on one \
                 side and has one to itself on the other, its share differs"
            }
            Measure::WakeupP50 | Measure::ResponseP50 => {
                "a guest kernel may pack wake-ups: this machine's keeps a thread woken by a \
                 busy CPU beside its waker while that CPU has room, though its previous CPU \
                 idles (traced on mp3-short: 899 of 903 such wake-ups stayed). The model \
                 packs them under the threshold `corral lab placement` measures here (as \
                 upstream with --no-pack, or where the probe finds none), by a rule read off \
                 probes, not the vendor's source (where the rule sits and what else it changes are guesses); \
                 the scheduler's own work is charged at this machine's measured costs per \
                 switch, wake-up, timer wake-up, timer preemption, migration and tick, and the \
                 waker's own per wake-up (onto another CPU or its own), not per path taken \
                 (free with --no-costs)"
            }
            Measure::WakeupP99 | Measure::ResponseP99 => {
                "the tick is the only interrupt modelled. The machine's other threads \
                 (kdamond, kworkers, the lab itself) matter: one that runs before a periodic \
                 thread, or ran just before it woke and left the running task picked again \
                 with its slice protection (RUN_TO_PARITY) renewed, makes the wake-up wait \
                 for the next tick (traced on periodic-among-hogs: of 1003 wake-ups, 23 \
                 waited 0.3-6.6 ms: 9 behind another thread, 8 within 1.4 ms of the hog \
                 being picked again, 6 with the hog running longer). They are replayed \
                 (traced live, unless --no-others), every one that ran a µs or more (sets kept by \
                 earlier builds left out those with under 1 ms of CPU in all), but a re-pick \
                 the trace does not show (no switch) is not reproduced; the tail also holds other interrupts and the host's time \
                 (`others`, `steal`), and wake-ups packed onto a busy CPU, which the model \
                 makes by a rule read off probes (not with --no-pack). A timer's wake-up onto an \
                 idle CPU costs the measured timer wake-up times one of rt-app's own wake-ups \
                 after 5 ms asleep over their median, measured alone before the case run (sets \
                 kept by earlier builds: the measured figure each time); \
                 the host's tail moves from minute to minute, and inside a workload it was \
                 mostly heavier than alone"
            }
            Measure::Migrations => {
                "this machine's kernel packs wake-ups onto the waker's busy CPU while it runs \
                 only the waker, and its other \
                 CPUs, idle or busy, mostly leave a CPU with room alone, which the model does \
                 by a rule read off probes (see wake-up latency p50; not with --no-pack); the model's balancer has \
                 one domain level and active balancing only for misfit tasks, and its \
                 new-idle balancing runs as often as it lately pulled (NI_RANDOM), its \
                 generator seeded from each CPU's number and the run's seed (--seed) where the kernel's \
                 is random, so one draw of it stands for all; with \
                 every CPU busy the balancer acts on the root queues' load_avg, which a group's \
                 entity moves at once each time its runnable tasks on the CPU change \
                 (calc_group_shares, reweight_entity; traced on hackbench-groups at 250 Hz: \
                 the two CPUs' root load_avg differ by over 20 % at 31 % of ticks live, 28 % \
                 simulated)"
            }
        }
    }
}

/// One measure of one task outside its target.
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    pub task: String,
    pub measure: Measure,
    pub live: f64,
    pub sim: f64,
}

/// Whether a latency (µs) is within its target.
pub fn latency_within(live: f64, sim: f64) -> bool {
    (sim - live).abs() <= (LATENCY_REL * live).max(LATENCY_ABS_US)
}

/// Whether migration counts are within their target.
pub fn migrations_within(live: u64, sim: u64) -> bool {
    let (lo, hi) = (live.min(sim), live.max(sim));
    hi < MIGRATIONS_FEW || hi as f64 <= MIGRATIONS_FACTOR * lo as f64
}

/// The measures of `rows` outside their targets, in row order.
pub fn misses(rows: &[TaskRow]) -> Vec<Miss> {
    let mut out = Vec::new();
    for r in rows {
        let (l, s) = (&r.live, &r.sim);
        let mut miss = |measure, live: f64, sim: f64| {
            out.push(Miss {
                task: r.name.clone(),
                measure,
                live,
                sim,
            })
        };
        if r.share_diff_pp.abs() > SHARE_PP {
            miss(Measure::Share, l.share, s.share);
        }
        let lat = [
            (Measure::WakeupP50, l.wu_lat_p50_us, s.wu_lat_p50_us),
            (Measure::WakeupP99, l.wu_lat_p99_us, s.wu_lat_p99_us),
            (Measure::ResponseP50, l.resp_p50_us, s.resp_p50_us),
            (Measure::ResponseP99, l.resp_p99_us, s.resp_p99_us),
        ];
        for (m, a, b) in lat {
            if let (Some(a), Some(b)) = (a, b) {
                if !latency_within(a, b) {
                    miss(m, a, b);
                }
            }
        }
        if !migrations_within(l.migrations, s.migrations) {
            miss(
                Measure::Migrations,
                l.migrations as f64,
                s.migrations as f64,
            );
        }
    }
    out
}

/// How many measures `rows` compare (those with figures on both sides).
pub fn compared(rows: &[TaskRow]) -> usize {
    rows.iter()
        .map(|r| {
            let (l, s) = (&r.live, &r.sim);
            let pairs = [
                (l.wu_lat_p50_us, s.wu_lat_p50_us),
                (l.wu_lat_p99_us, s.wu_lat_p99_us),
                (l.resp_p50_us, s.resp_p50_us),
                (l.resp_p99_us, s.resp_p99_us),
            ];
            2 + pairs
                .iter()
                .filter(|(a, b)| a.is_some() && b.is_some())
                .count()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::Side;

    fn row(live: Side, sim: Side) -> TaskRow {
        TaskRow {
            name: "t".into(),
            group: "/".into(),
            share_diff_pp: (sim.share - live.share) * 100.0,
            live,
            sim,
            wu_lat_p50_rel: None,
            wu_lat_p99_rel: None,
            resp_p50_rel: None,
            resp_p99_rel: None,
        }
    }

    #[test]
    fn latency_is_within_20_percent_or_50_us() {
        assert!(latency_within(114.0, 107.0));
        assert!(latency_within(90.0, 139.0), "49 us off");
        assert!(!latency_within(90.0, 141.0));
        assert!(latency_within(1000.0, 1199.0));
        assert!(!latency_within(1000.0, 1201.0));
        assert!(!latency_within(1339.0, 0.0));
    }

    #[test]
    fn migrations_are_within_a_factor_2_unless_both_are_few() {
        assert!(migrations_within(15, 22));
        assert!(!migrations_within(15, 68));
        assert!(migrations_within(0, 4), "too few to compare");
        assert!(!migrations_within(0, 63));
        assert!(migrations_within(10, 20));
    }

    #[test]
    fn a_row_lists_each_measure_outside_its_target() {
        // handler-hogs with --costs this session: share +0.0 pp,
        // wake-up p50 1339/0 us, p99 5442/2616 us, response p50
        // 141.6/129.6 ms, p99 178.3/165.6 ms, migrations 33/22.
        let live = Side {
            share: 0.270,
            wu_lat_p50_us: Some(1339.0),
            wu_lat_p99_us: Some(5442.0),
            resp_p50_us: Some(141_600.0),
            resp_p99_us: Some(178_300.0),
            migrations: 33,
            ..Default::default()
        };
        let sim = Side {
            share: 0.270,
            wu_lat_p50_us: Some(0.0),
            wu_lat_p99_us: Some(2616.0),
            resp_p50_us: Some(129_600.0),
            resp_p99_us: Some(165_600.0),
            migrations: 22,
            ..Default::default()
        };
        let rows = [row(live, sim)];
        let m: Vec<Measure> = misses(&rows).iter().map(|m| m.measure).collect();
        assert_eq!(m, [Measure::WakeupP50, Measure::WakeupP99]);
        assert_eq!(compared(&rows), 6);
    }
}
