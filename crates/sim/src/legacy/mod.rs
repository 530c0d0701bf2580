//! The older run-queue models, each one run queue's structure and pick
//! rule, behind the same [`crate::sched::kernel::SchedClass`] hooks:
//! [`linux24`] (Linux 2.4's one list and `goodness()`), [`mlq`] (paper
//! 004's multi-level queue over 2.4's rules), [`o1`] (Linux 2.6.0–2.6.22's
//! priority arrays) and [`bfs`] (BFS's one queue by virtual deadline);
//! [`runq`] holds what they share.

pub mod bfs;
pub mod linux24;
pub mod mlq;
pub mod o1;
pub mod runq;
