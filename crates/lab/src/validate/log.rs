//! rt-app's log files (and the simulator's, which have the same columns).

use super::*;

/// The columns of a log line this experiment uses, µs; `start_us` and
/// `end_us` are from the use case's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LogLine {
    /// The log's `start` column: CLOCK_MONOTONIC live, simulated time in
    /// the simulator.
    pub(super) abs_start_us: i64,
    pub(super) start_us: i64,
    pub(super) end_us: i64,
    pub(super) slack: i64,
    pub(super) c_duration: i64,
    pub(super) c_period: i64,
    pub(super) wu_lat: i64,
}

/// Parses an rt-app log (`#idx perf run period start end rel_st slack
/// c_duration c_period wu_lat`). rt-app's `rel_st` counts from the use
/// case's start; the simulator's `start` and `end` are simulated time,
/// whose 0 is the use case's start (its `rel_st` counts from the
/// thread's own first iteration instead). A last line without its
/// newline is one rt-app was writing when it stopped: it is left out (a
/// full run once ended a log with 10 of its 11 columns).
pub(super) fn parse_log(text: &str, file: &Path, live: bool) -> Result<Vec<LogLine>> {
    let mut v = Vec::new();
    let complete = match text.rfind('\n') {
        Some(i) if !text[i + 1..].trim().is_empty() => &text[..i + 1],
        Some(_) => text,
        None => "",
    };
    for (n, line) in complete.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: String| Error::Parse {
            what: format!("{}:{}", file.display(), n + 1),
            why,
        };
        let f: Vec<i64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, std::num::ParseIntError>>()
            .map_err(|e| bad(e.to_string()))?;
        if f.len() < 11 {
            return Err(bad(format!("{} columns, rt-app writes 11", f.len())));
        }
        let (start, end) = if live {
            (f[6], f[6] + f[3])
        } else {
            (f[4], f[5])
        };
        v.push(LogLine {
            abs_start_us: f[4],
            start_us: start,
            end_us: end,
            slack: f[7],
            c_duration: f[8],
            c_period: f[9],
            wu_lat: f[10],
        });
    }
    Ok(v)
}

pub(super) fn read_log(path: &Path, live: bool) -> Result<Vec<LogLine>> {
    let text = std::fs::read_to_string(path).map_err(Error::io(path))?;
    parse_log(&text, path, live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_last_line_cut_short_is_left_out_and_any_other_is_an_error() {
        let full = "#idx perf run period start end rel_st slack c_duration c_period wu_lat\n\
                    0 1 1000 10000 5 6 0 9000 1000 10000 12\n";
        let cut = format!("{full}0 1 1000 10000 5 6 10000 9000 1000 10");
        let p = Path::new("x.log");
        assert_eq!(parse_log(full, p, true).unwrap().len(), 1);
        assert_eq!(parse_log(&cut, p, true).unwrap().len(), 1);
        let bad = format!("{full}0 1 1000 10000 5 6 10000 9000 1000 10\n");
        let e = parse_log(&bad, p, true).unwrap_err().to_string();
        assert!(e.contains("x.log:3") && e.contains("10 columns"), "{e}");
    }
}
