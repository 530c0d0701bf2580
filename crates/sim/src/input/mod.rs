//! What a simulation reads: rt-app workloads ([`rtapp`], through the JSON
//! reader of rt-app's dialect, [`json`]) and platform files ([`platform`]:
//! kernel model, HZ, CPUs and capacities, hot-plug, groups). Anything not
//! modelled is refused naming the file, line and key.

pub mod ftrace;
pub mod json;
pub mod platform;
pub mod recording;
pub mod rtapp;
