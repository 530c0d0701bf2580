//! Paper 004's multi-level run queue for Linux 2.4: the single list of
//! [`crate::legacy::linux24`] split in three levels, scanned from the top, the
//! scan stopping at the first level that has a task this CPU may run.
//!
//! - Level 1: SCHED_FIFO / SCHED_RR tasks.
//! - Level 2: SCHED_OTHER tasks with `counter > MEASURE`.
//! - Level 3: SCHED_OTHER tasks with `counter ≤ MEASURE`.
//!
//! MEASURE (ticks) is a parameter; the paper tries 3, 4, 8 and 12 (at
//! 2.4's HZ 100 a nice-0 slice is 6 ticks and a sleeper's counter reaches
//! 11, so MEASURE 8 leaves hogs in level 3 and sleepers in level 2).
//! Within a level the pick is 2.4's: the best `goodness()`, the first in
//! list order on a tie. A task changes level as its counter changes (at
//! the tick, at a recalculation), going to the tail of its new level. On
//! removal (`dequeue`) the levels are searched for the task, level 2,
//! then 3, then 1 (level 1 is usually short), as the paper describes;
//! every task looked at is counted in [`Work::removal_scanned`]. Moves
//! between levels unlink directly (the old level is known from the
//! counter).
//!
//! Everything else — goodness, counters, recalculation, wake-up
//! preemption, the global-queue bookkeeping — is 2.4's, shared through
//! [`Sched24`]. One difference in behaviour follows from the levels: a
//! level-2 task runs before a level-3 one whatever their goodness (a
//! niced or cache-cold level-2 task can beat a better level-3 one). A
//! level whose only candidates yielded (goodness −1) gives way to a lower
//! level with a better one.
//!
//! [`Work::removal_scanned`]: crate::sched::kernel::Work::removal_scanned

use crate::legacy::linux24::{scan, Pick, RunQueue24, Sched24, Task24, Tunables24};
use crate::legacy::runq::Lists;
use crate::sched::kernel::TaskId;

/// The three levels (list 0 is level 1).
#[derive(Debug, Clone)]
pub struct Levels {
    measure: i32,
    lists: Lists,
}

/// Paper 004's scheduler: 2.4 over [`Levels`].
pub type Mlq = Sched24<Levels>;

impl Sched24<Levels> {
    /// The multi-level queue on `ncpus` CPUs at `hz`, with MEASURE
    /// `measure` ticks.
    pub fn new(ncpus: usize, hz: u32, measure: i32) -> Mlq {
        Sched24::with_queue(Levels::new(measure), ncpus, Tunables24::new(hz))
    }
}

impl Levels {
    pub fn new(measure: i32) -> Levels {
        Levels {
            measure,
            lists: Lists::new(3),
        }
    }

    pub fn measure(&self) -> i32 {
        self.measure
    }

    /// The list (0–2 for levels 1–3) a task belongs on.
    pub fn level(&self, task: &Task24) -> usize {
        if task.policy.is_rt() {
            0
        } else if task.counter > self.measure {
            1
        } else {
            2
        }
    }

    /// Tasks on each level (1, 2, 3).
    pub fn lens(&self) -> [usize; 3] {
        [self.lists.len(0), self.lists.len(1), self.lists.len(2)]
    }
}

impl RunQueue24 for Levels {
    fn name(&self) -> &'static str {
        "mlq"
    }

    fn insert(&mut self, t: TaskId, tasks: &[Task24], front: bool) {
        let l = self.level(&tasks[t]);
        if front {
            self.lists.push_front(l, t);
        } else {
            self.lists.push_back(l, t);
        }
    }

    /// The paper's removal: search level 2, then 3, then 1.
    fn remove(&mut self, t: TaskId, _: &[Task24]) -> u64 {
        let mut looked = 0;
        for l in [1, 2, 0] {
            for x in self.lists.iter(l) {
                looked += 1;
                if x == t {
                    self.lists.unlink(t);
                    return looked;
                }
            }
        }
        debug_assert!(false, "task {t} is on no level");
        looked
    }

    fn move_last(&mut self, t: TaskId, tasks: &[Task24]) {
        if self.lists.unlink(t).is_some() {
            self.lists.push_back(self.level(&tasks[t]), t);
        }
    }

    fn counter_changed(&mut self, t: TaskId, tasks: &[Task24]) {
        let want = self.level(&tasks[t]);
        if let Some(l) = self.lists.list_of(t) {
            if l != want {
                self.lists.unlink(t);
                self.lists.push_back(want, t);
            }
        }
    }

    /// After a recalculation counters only grow (`c/2 + N ≥ c` since a
    /// counter never exceeds `2N − 1`), so tasks only climb from level 3
    /// to level 2; they keep their order.
    fn recalculated(&mut self, tasks: &[Task24]) {
        for l in 0..3 {
            let moving: Vec<TaskId> = self
                .lists
                .iter(l)
                .filter(|&t| self.level(&tasks[t]) != l)
                .collect();
            for t in moving {
                self.lists.unlink(t);
                self.lists.push_back(self.level(&tasks[t]), t);
            }
        }
    }

    fn pick<F: Fn(TaskId) -> bool>(
        &self,
        cpu: usize,
        tasks: &[Task24],
        tun: &Tunables24,
        can_run: &F,
    ) -> Pick {
        let mut examined = 0;
        let mut yielded: Option<Pick> = None;
        for l in 0..3 {
            let p = scan(self.lists.iter(l), cpu, tasks, tun, can_run);
            examined += p.examined;
            match p.task {
                Some(_) if p.goodness >= 0 => return Pick { examined, ..p },
                Some(_) if yielded.is_none() => yielded = Some(p),
                _ => {}
            }
        }
        let p = yielded.unwrap_or(Pick {
            task: None,
            goodness: -1000,
            examined: 0,
        });
        Pick { examined, ..p }
    }

    fn iter(&self) -> impl Iterator<Item = TaskId> + '_ {
        (0..3).flat_map(move |l| self.lists.iter(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::linux24::Policy24;

    fn tasks() -> Vec<Task24> {
        let mut rt = Task24::other(0, 0, 0);
        rt.policy = Policy24::Rr;
        rt.rt_priority = 5;
        vec![
            Task24::other(0, 2, 0),  // level 3
            Task24::other(0, 9, 0),  // level 2
            Task24::other(0, 1, 0),  // level 3
            Task24::other(-5, 3, 0), // level 3, goodness 3 + 25 + 15 = 43
            rt,                      // level 1
        ]
    }

    #[test]
    fn tasks_go_by_policy_and_counter_and_the_scan_stops_at_the_first_level() {
        let tun = Tunables24::new(100);
        let ts = tasks();
        let mut q = Levels::new(3);
        for t in 0..5 {
            q.insert(t, &ts, false);
        }
        assert_eq!(q.lens(), [1, 1, 3]);
        // Level 1 first: the RR task, one task looked at.
        let p = q.pick(0, &ts, &tun, &|_| true);
        assert_eq!((p.task, p.examined), (Some(4), 1));
        // Without it, level 2's task wins over level 3's better goodness.
        let p = q.pick(0, &ts, &tun, &|t| t != 4);
        assert_eq!((p.task, p.examined), (Some(1), 2));
        // Without both: all of level 3, the best goodness.
        let p = q.pick(0, &ts, &tun, &|t| t != 4 && t != 1);
        assert_eq!((p.task, p.examined), (Some(3), 5));
    }

    #[test]
    fn removal_searches_level_2_then_3_then_1() {
        let ts = tasks();
        let mut q = Levels::new(3);
        for t in 0..5 {
            q.insert(t, &ts, false);
        }
        // The RR task: all of level 2 (1) and level 3 (3), then found.
        assert_eq!(q.remove(4, &ts), 5);
        // Task 2, second in level 3: level 2 (1) + 2.
        assert_eq!(q.remove(2, &ts), 3);
        assert_eq!(q.lens(), [0, 1, 2]);
    }

    #[test]
    fn a_task_moves_down_as_its_counter_falls_and_up_at_recalculation() {
        let mut ts = tasks();
        let mut q = Levels::new(3);
        for t in 0..5 {
            q.insert(t, &ts, false);
        }
        ts[1].counter = 3;
        q.counter_changed(1, &ts);
        assert_eq!(q.lens(), [1, 0, 4]);
        for t in &mut ts {
            t.counter = t.counter / 2 + 6;
        }
        q.recalculated(&ts);
        // Every SCHED_OTHER counter is now ≥ 6 > 3.
        assert_eq!(q.lens(), [1, 4, 0]);
    }
}
