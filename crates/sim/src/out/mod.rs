//! What a run leaves: its summary ([`report`]), latency histograms in
//! fixed memory ([`hist`]), Perfetto traces, SVG Gantt charts and rt-app
//! logs ([`trace`]), and what the SVG and HTML outputs share ([`svg`]).

pub mod hist;
pub mod report;
pub mod svg;
pub mod trace;
