//! The Linux scheduler, as the simulator models it: the class hooks
//! ([`kernel::SchedClass`], shaped like `struct sched_class`), the fair
//! class in two eras ([`fair`]) with its `sched_feat` switches
//! ([`features`]), the RT class ([`rt`]) stacked above it ([`classes`]),
//! and the kernel core's part — wake, block, tick, dispatch, hot-plug —
//! running rt-app threads on CPUs ([`machine`]).

pub mod classes;
pub mod fair;
pub mod features;
pub mod kernel;
pub mod machine;
pub mod pelt;
pub mod rt;
pub mod timeline;
