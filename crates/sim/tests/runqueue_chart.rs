//! The run-queue benchmark's chart (`benches/runqueue_chart.rs`, bench-only
//! code kept out of the library) under `cargo test`.

#[path = "../benches/runqueue_chart.rs"]
#[allow(dead_code)]
mod runqueue_chart;
