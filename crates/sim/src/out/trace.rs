//! What a recorded run writes out: a Chrome/Perfetto trace (JSON trace
//! event format: one track per CPU, a slice per stretch a task ran, an
//! instant per wake-up), an SVG Gantt chart of a time window, and rt-app
//! log files so the same scripts read simulated and live runs.

use crate::engine::Ns;
use crate::out::svg::{colour, esc};
use crate::sched::kernel::SchedClass;
use crate::sched::machine::Machine;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn us(ns: Ns) -> f64 {
    ns as f64 / 1e3
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// The run as Chrome trace event JSON (opens in ui.perfetto.dev and
/// chrome://tracing). The machine must have been [`Machine::record`]ed.
/// `marks` (a simulated corral's changes, with their times) go on a
/// track of their own after the CPUs'.
pub fn perfetto<K: SchedClass>(m: &Machine<K>, marks: &[(Ns, String)]) -> String {
    let names: Vec<String> = m.stats().into_iter().map(|s| s.name).collect();
    let ncpus = m.cpu_busy().len();
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let _ = write!(
        out,
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{{\"name\":{}}}}}",
        json_str(&format!("corral sim ({})", m.kernel().name()))
    );
    for cpu in 0..ncpus {
        let _ = write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{},\"args\":{{\"name\":\"CPU {cpu}\"}}}}",
            cpu + 1
        );
        let _ = write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":{},\"args\":{{\"sort_index\":{cpu}}}}}",
            cpu + 1
        );
    }
    for s in m.slices() {
        let _ = write!(
            out,
            ",\n{{\"ph\":\"X\",\"name\":{},\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3}}}",
            json_str(&names[s.task]),
            s.cpu + 1,
            us(s.start),
            us(s.end - s.start)
        );
    }
    for &(at, t, cpu) in m.wake_marks() {
        let _ = write!(
            out,
            ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"pid\":1,\"tid\":{},\"ts\":{:.3}}}",
            json_str(&format!("wakeup {}", names[t])),
            cpu + 1,
            us(at)
        );
    }
    if !marks.is_empty() {
        let tid = ncpus + 1;
        let _ = write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":\"corral\"}}}}"
        );
        for (at, text) in marks {
            let _ = write!(
                out,
                ",\n{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"pid\":1,\"tid\":{tid},\"ts\":{:.3}}}",
                json_str(text),
                us(*at)
            );
        }
    }
    out.push_str("\n]}\n");
    out
}

/// A step of about a tenth of `span` that reads well (1, 2 or 5 × 10^k ns).
fn nice_step(span: Ns) -> Ns {
    let raw = (span / 10).max(1);
    let mag = 10u64.pow(raw.ilog10());
    [1, 2, 5, 10]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10 * mag)
}

fn fmt_time(ns: Ns) -> String {
    if ns >= 1_000_000_000 && ns.is_multiple_of(1_000_000) {
        format!("{} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{} ms", ns as f64 / 1e6)
    } else {
        format!("{} µs", ns as f64 / 1e3)
    }
}

/// An SVG Gantt chart of `[from, to)`: a row per CPU, a bar per stretch a
/// task ran, a tick per wake-up, and a legend.
pub fn svg<K: SchedClass>(m: &Machine<K>, from: Ns, to: Ns) -> String {
    let names: Vec<String> = m.stats().into_iter().map(|s| s.name).collect();
    let ncpus = m.cpu_busy().len();
    let to = to.max(from + 1);
    let (left, width, row, top) = (70.0, 1100.0, 26.0, 30.0);
    let x = |t: Ns| left + (t.clamp(from, to) - from) as f64 / (to - from) as f64 * width;
    let legend_rows = names.len().div_ceil(6);
    let height = top + row * ncpus as f64 + 40.0 + 18.0 * legend_rows as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"11\">",
        left + width + 20.0
    );
    let _ = writeln!(
        o,
        "<text x=\"{left}\" y=\"16\" font-size=\"13\">corral sim, {}: {} to {}</text>",
        esc(m.kernel().name()),
        fmt_time(from),
        fmt_time(to)
    );
    for cpu in 0..ncpus {
        let y = top + row * cpu as f64;
        let _ = writeln!(
            o,
            "<text x=\"4\" y=\"{:.1}\">CPU {cpu}</text><rect x=\"{left}\" y=\"{y:.1}\" width=\"{width}\" height=\"{:.1}\" fill=\"#f4f4f4\"/>",
            y + row * 0.65,
            row - 4.0
        );
    }
    for s in m.slices().iter().filter(|s| s.end > from && s.start < to) {
        let (x0, x1) = (x(s.start), x(s.end));
        let y = top + row * s.cpu as f64;
        let _ = write!(
            o,
            "<rect x=\"{x0:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{}\"><title>{} on CPU {}: {} to {}</title></rect>",
            (x1 - x0).max(0.3),
            row - 4.0,
            colour(s.task, 60, 55),
            esc(&names[s.task]),
            s.cpu,
            fmt_time(s.start),
            fmt_time(s.end)
        );
        if x1 - x0 > 7.0 * names[s.task].len() as f64 {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"white\">{}</text>",
                x0 + 2.0,
                y + row * 0.62,
                esc(&names[s.task])
            );
        }
        o.push('\n');
    }
    for &(at, _, cpu) in m.wake_marks().iter().filter(|w| w.0 >= from && w.0 < to) {
        let y = top + row * cpu as f64;
        let _ = writeln!(
            o,
            "<line x1=\"{0:.2}\" x2=\"{0:.2}\" y1=\"{y:.1}\" y2=\"{1:.1}\" stroke=\"black\" stroke-width=\"0.6\"/>",
            x(at),
            y + 5.0
        );
    }
    let axis_y = top + row * ncpus as f64 + 4.0;
    let step = nice_step(to - from);
    let mut t = from.div_ceil(step) * step;
    while t <= to {
        let _ = writeln!(
            o,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#888\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>",
            x(t),
            axis_y,
            axis_y + 5.0,
            axis_y + 17.0,
            fmt_time(t)
        );
        t += step;
    }
    for (i, name) in names.iter().enumerate() {
        let (col, r) = (i % 6, i / 6);
        let (lx, ly) = (left + col as f64 * 180.0, axis_y + 32.0 + r as f64 * 18.0);
        let _ = writeln!(
            o,
            "<rect x=\"{lx:.0}\" y=\"{:.0}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.0}\" y=\"{ly:.0}\">{}</text>",
            ly - 10.0,
            colour(i, 60, 55),
            lx + 16.0,
            esc(name)
        );
    }
    o.push_str("</svg>\n");
    o
}

/// Writes one rt-app log per thread into `dir` (`rt-app-NAME-IDX.log`, the
/// columns of rt-app's `log_timing`, µs; `perf` is 0: nothing is
/// calibrated in a simulation). Returns the files written.
pub fn rtapp_logs<K: SchedClass>(m: &Machine<K>, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    let stats = m.stats();
    for (t, st) in stats.iter().enumerate() {
        let spec = m.spec_of(t);
        let policy = spec.policy.name();
        let mut text = format!(
            "# Policy : {policy} priority : {}\n#idx\t    perf\t     run\t  period\t          start\t            end\t         rel_st\t     slack\tc_duration\t  c_period\t    wu_lat\n",
            spec.priority
        );
        for l in m.log(t) {
            let _ = writeln!(
                text,
                "{:4}\t{:8}\t{:8}\t{:8}\t{:15}\t{:15}\t{:15}\t{:10}\t{:10}\t{:10}\t{:10}",
                l.idx,
                0,
                l.run / 1000,
                l.period / 1000,
                l.start / 1000,
                l.end / 1000,
                l.rel_st / 1000,
                l.slack / 1000,
                l.c_duration / 1000,
                l.c_period / 1000,
                l.wu_lat / 1000
            );
        }
        let safe: String = st
            .name
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("rt-app-{safe}-{t}.log"));
        std::fs::write(&path, text)?;
        files.push(path);
    }
    Ok(files)
}
