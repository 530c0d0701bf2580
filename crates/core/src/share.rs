//! CPU weights of groups, and paper 002's analysis: the share of a CPU a
//! thread can count on through the group hierarchy.
//!
//! Group scheduling makes a cgroup one scheduling entity in its parent's
//! run queue, weighted by its `cpu.shares` (v1) or `cpu.weight` (v2); its
//! members share what the group gets. A group's vruntime advances as
//! `VR += w0 · runtime / F` (F = its shares), so a 52-share group beside a
//! 1024-share group advances ~20× faster and is picked ~20× less often:
//! 52 / (52 + 1024) ≈ 4.8 % of the CPU when both want it all.

use serde::Serialize;

/// The nice-0 load weight, and the default `cpu.shares`.
pub const NICE_0_WEIGHT: u64 = 1024;
/// `cpu.shares` limits (kernel/sched/sched.h: MIN_SHARES, MAX_SHARES).
pub const MIN_SHARES: u64 = 2;
pub const MAX_SHARES: u64 = 1 << 18;
/// `cpu.weight` limits and default (include/linux/cgroup.h: CGROUP_WEIGHT_*).
pub const MIN_WEIGHT: u64 = 1;
pub const MAX_WEIGHT: u64 = 10_000;
pub const DFL_WEIGHT: u64 = 100;

/// The kernel's nice → load weight table (kernel/sched/core.c,
/// `sched_prio_to_weight`): each nice step is ~1.25×.
pub const NICE_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The load weight of a SCHED_OTHER thread at `nice` (clamped to −20..19).
pub fn nice_to_weight(nice: i32) -> u64 {
    NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// v1 `cpu.shares` → v2 `cpu.weight`, rounding up so a guarantee computed
/// in shares still holds (the kernel maps back with
/// `sched_weight_from_cgroup`: shares = weight · 1024 / 100, rounded).
pub fn shares_to_weight(shares: u64) -> u64 {
    (shares * DFL_WEIGHT)
        .div_ceil(NICE_0_WEIGHT)
        .clamp(MIN_WEIGHT, MAX_WEIGHT)
}

/// v2 `cpu.weight` → the v1 shares the kernel uses for it.
pub fn weight_to_shares(weight: u64) -> u64 {
    (weight * NICE_0_WEIGHT + DFL_WEIGHT / 2) / DFL_WEIGHT
}

/// The `cpu.shares` a group of `members` medium threads needs so that each
/// can count on `min_cpu` of a CPU when the group competes with a group of
/// weight `other_shares` on `cpus` CPUs, everything runnable;
/// `other_members` of that group want CPU like the medium threads do (0:
/// none, and only the guarantee counts).
///
/// ```text
///   the group gets   cpus · w / (w + w_other)   CPUs
///   it must be ≥     members · min_cpu          =: need
///   ⇒  w ≥ w_other · need / (cpus − need)       (cpus > need)
///   and              w / members ≥ w_other / other_members   (parity)
/// ```
///
/// Parity: a guarantee is a floor, never less than a member of the other
/// group gets, which is what the kernel alone (everyone in one group)
/// would give. Without it, one medium thread beside two CPU-bound ones on
/// 2 CPUs got 342 against 1024, half a CPU to their 0.75 each, and three
/// identical `stress-ng --cpu` workers finished 1.06 x later than
/// without corral (`lab real`, the last worker's time).
///
/// v1: with 2 medium threads on 3 shared CPUs against the 1024-share shared
/// group, need = 1.0 and w ≥ 1024 · 1 / 2 = 512. v2: the same in weights,
/// 100 · 1 / 2 = 50, which [`shares_to_weight`] gives from 512 (rounding
/// up).
///
/// The weight is capped at `members · w_other`: the other group then still
/// competes like one more medium thread, gets 1/(members + 1) of the CPUs,
/// and is never starved. Past the cap (cpus < (members + 1) · min_cpu for
/// min_cpu = 0.5) the guarantee cannot hold, and the result says so with
/// `false`. Without the cap, a weight chasing an impossible guarantee
/// would take the maximum, 262144, and leave the rest 0.4 % of a CPU.
pub fn medium_group_shares(
    members: u32,
    min_cpu: f64,
    cpus: u32,
    other_shares: u64,
    other_members: u32,
) -> (u64, bool) {
    let need = members as f64 * min_cpu;
    let cpus = cpus as f64;
    if need <= 0.0 {
        return (MIN_SHARES, true);
    }
    let cap = (members as u64 * other_shares).clamp(MIN_SHARES, MAX_SHARES);
    if cpus <= need {
        return (cap, false);
    }
    let guarantee = (other_shares as f64 * need / (cpus - need)).ceil() as u64;
    if guarantee > cap {
        return (cap, false);
    }
    let parity = if other_members == 0 {
        0
    } else {
        (members as u64 * other_shares).div_ceil(other_members as u64)
    };
    (guarantee.max(parity).clamp(MIN_SHARES, cap), true)
}

/// The nice value each of `members` medium threads needs on the
/// per-thread backend (no group weight: a unit's threads compete by their
/// own load weights) to count on `min_cpu` of a CPU beside
/// `other_members` nice-0 threads wanting CPU like it, on `cpus` CPUs.
///
/// A CPU is shared by weight among the entities on its run queue, and the
/// load balancer evens out load, not who is where: a thread that sleeps
/// part of each period finds about ⌈other / cpus⌉ of the others on its
/// run queue when it wakes. So the weight must hold there, and no less
/// than the medium group's weight ([`medium_group_shares`], the others'
/// own weights as the other group's) split over the members; never more
/// than the others together; then the highest nice whose load weight
/// reaches it.
///
/// ```text
///   k        = ⌈other / cpus⌉
///   w_rq     = k · 1024 · min_cpu / (1 − min_cpu)      (w / (w + k·1024) ≥ min_cpu)
///   w_pool   = medium_group_shares(members, min_cpu, cpus, 1024 · other, other) / members
///   w        = min(max(w_rq, w_pool), 1024 · other)
///   nice     = max { n ≤ 0 : sched_prio_to_weight[n] ≥ w }
/// ```
///
/// One medium thread beside eight CPU hogs on 2 CPUs: k = 4, w = 4096,
/// nice −7 (4904; −6 is 3906): 4904 / (4904 + 4096) = 0.54 of its CPU,
/// where nice 0 gives 1/5. `None` when nothing competes (the guarantee
/// holds at nice 0). The pool alone (w_pool = 2731, nice −5) gave 0.31 of
/// a CPU for 0.35 wanted in `corral lab medium` here (cgroup weights:
/// 0.35). XXX: the weights compete only inside one cgroup (a unit);
/// against threads of other units the units' weights decide, and the plan
/// does not know which thread is in which unit.
pub fn medium_nice(members: u32, min_cpu: f64, cpus: u32, other_members: u32) -> Option<i32> {
    if members == 0 || other_members == 0 || cpus == 0 {
        return None;
    }
    let other = other_members as u64 * NICE_0_WEIGHT;
    let k = other_members.div_ceil(cpus) as f64;
    let min_cpu = min_cpu.clamp(0.0, 0.99);
    let w_rq = (k * NICE_0_WEIGHT as f64 * min_cpu / (1.0 - min_cpu)).ceil() as u64;
    let (group, _) = medium_group_shares(members, min_cpu, cpus, other, other_members);
    let w_pool = group.div_ceil(members as u64);
    let w = w_rq.max(w_pool).min(other);
    let nice = (-20..=0)
        .rev()
        .find(|&n| nice_to_weight(n) >= w)
        .unwrap_or(-20);
    (nice < 0).then_some(nice)
}

/// One level of the hierarchy above a thread: its own entity's weight
/// and the total weight of the entities competing at that level (its own
/// included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Level {
    pub weight: u64,
    pub total: u64,
}

/// The share of one CPU a thread can count on when every entity at every
/// level wants CPU: the product of its fractions down the hierarchy,
/// times the CPUs it may use, capped at one CPU (a thread runs on one
/// CPU at a time).
///
/// ```text
///   share = min(1, cpus · Π_levels weight / total)
/// ```
///
/// It treats the CPUs as one pool, which is what load balancing aims at;
/// with fewer runnable entities than CPUs the real share is higher.
pub fn effective_share(levels: &[Level], cpus: u32) -> f64 {
    let fraction: f64 = levels
        .iter()
        .map(|l| l.weight as f64 / l.total.max(1) as f64)
        .product();
    (fraction * cpus as f64).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medium_nice_beside_eight_hogs_on_two_cpus_is_minus_7() {
        assert_eq!(medium_nice(1, 0.5, 2, 8), Some(-7));
        // What nice -7 gives it on a run queue with 4 of the hogs.
        let w = nice_to_weight(-7) as f64;
        let share = w / (w + 4.0 * 1024.0);
        assert!((0.5..0.6).contains(&share), "{share}");
        // Sixteen on 4 CPUs is the same per run queue.
        assert_eq!(medium_nice(1, 0.5, 4, 16), Some(-7));
    }

    #[test]
    fn medium_nice_leaves_nice_0_when_nothing_competes_or_it_suffices() {
        assert_eq!(medium_nice(1, 0.5, 2, 0), None);
        assert_eq!(medium_nice(0, 0.5, 2, 4), None);
        // One other thread on 2 CPUs: each gets a CPU at nice 0.
        assert_eq!(medium_nice(1, 0.5, 2, 1), None);
    }

    #[test]
    fn medium_nice_holds_the_guarantee_on_its_run_queue_wherever_it_can() {
        for members in 1..6u32 {
            for cpus in 1..9u32 {
                for others in 1..40u32 {
                    let nice = medium_nice(members, 0.5, cpus, others).unwrap_or(0);
                    assert!((-20..=0).contains(&nice));
                    let w = nice_to_weight(nice) as f64;
                    let k = others.div_ceil(cpus) as f64;
                    let on_rq = w / (w + k * 1024.0);
                    // The nice table's coarse steps only ever round up,
                    // until nice -20 (88761) runs out.
                    assert!(
                        on_rq >= 0.5 - 1e-9 || nice == -20,
                        "{members} {cpus} {others}: {on_rq}"
                    );
                    // Never more than the others together, but for one
                    // nice step (~1.25x) of rounding up.
                    assert!(
                        w <= 1.26 * others as f64 * 1024.0,
                        "{members} {cpus} {others}"
                    );
                }
            }
        }
    }

    #[test]
    fn paper_002_background_group_gets_4_8_percent() {
        // A 52-share group beside a 1024-share group on one CPU.
        let share = effective_share(
            &[Level {
                weight: 52,
                total: 52 + 1024,
            }],
            1,
        );
        assert!((share - 0.0483).abs() < 0.0001, "{share}");
        // One of two equal threads inside that group gets half of it.
        let share = effective_share(
            &[
                Level {
                    weight: 52,
                    total: 1076,
                },
                Level {
                    weight: 1024,
                    total: 2048,
                },
            ],
            1,
        );
        assert!((share - 0.02416).abs() < 0.0001, "{share}");
        // Alone in a 1024-share group on two CPUs against a busy sibling: a whole CPU.
        assert_eq!(
            effective_share(
                &[Level {
                    weight: 1024,
                    total: 2048
                }],
                2
            ),
            1.0
        );
    }

    #[test]
    fn medium_weight_arithmetic() {
        // Against 8 light threads the guarantee decides.
        assert_eq!(medium_group_shares(2, 0.5, 3, 1024, 8), (512, true));
        assert_eq!(shares_to_weight(512), 50);
        // One medium thread on one shared CPU: need 0.5 of 1 -> equal weight.
        assert_eq!(medium_group_shares(1, 0.5, 1, 1024, 8), (1024, true));
        // Two on one CPU cannot each be guaranteed half of it: capped at
        // 2 x 1024, the shared group keeps a third of the CPU.
        assert_eq!(medium_group_shares(2, 0.5, 1, 1024, 8), (2048, false));
        assert_eq!(medium_group_shares(3, 0.5, 1, 1024, 8), (3072, false));
        assert_eq!(medium_group_shares(0, 0.5, 1, 1024, 8), (MIN_SHARES, true));
        // Against two CPU-bound threads on 2 CPUs parity decides: 342
        // would guarantee half a CPU, 512 gives each of the three 2/3.
        assert_eq!(medium_group_shares(1, 0.5, 2, 1024, 2), (512, true));
        // The guarantee and parity hold: cpus * w / (w + other) >= need,
        // w / members >= other / other_members.
        for (m, c, o) in [
            (1u32, 2u32, 1u32),
            (3, 4, 2),
            (5, 8, 20),
            (1, 1, 0),
            (2, 4, 1),
        ] {
            let (w, ok) = medium_group_shares(m, 0.5, c, 1024, o);
            assert!(ok, "{m} {c} {o}");
            assert!(c as f64 * w as f64 / (w + 1024) as f64 >= m as f64 * 0.5 - 1e-9);
            assert!(
                o == 0 || w * o as u64 >= 1024 * m as u64,
                "parity {m} {c} {o}: {w}"
            );
        }
    }

    #[test]
    fn weight_conversions() {
        assert_eq!(shares_to_weight(1024), 100);
        assert_eq!(shares_to_weight(10240), 1000);
        assert_eq!(shares_to_weight(2), 1);
        assert_eq!(shares_to_weight(MAX_SHARES), MAX_WEIGHT);
        assert_eq!(weight_to_shares(100), 1024);
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(5), 335);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(99), 15);
    }
}
