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

/// How near the median half the estimates of [`timer_origin`] must lie,
/// µs.
const ORIGIN_AGREE_US: i64 = 200;

/// Where rt-app's timers count from, µs after the use case's start: its
/// `t_zero`, which its first thread takes as it starts, and which every
/// thread's timers count from (`t_first = t_zero + delay`; `t_next =
/// t_first + period` at a timer's first use). The logs count from
/// `main_app_start`, earlier, so it is read off the live timer grid: an
/// iteration that ends with its own timer wakes at `t_first + Σ c_period
/// + wu_lat`, and the next iteration starts then (`rel_st`), so
///
/// ```text
/// t_zero ≈ rel_st(i+1) − wu_lat(i) − Σ_{j ≤ i} c_period(j) − delay
/// ```
///
/// over each thread's iterations up to its first late one (a late
/// relative timer starts its grid anew), for the threads `grid` gives a
/// delay for (those whose every phase ends with a timer of their own:
/// `grid_threads`); the median of every estimate. None with fewer than 3
/// estimates, or when fewer than half of them lie within
/// [`ORIGIN_AGREE_US`] of the median.
pub(super) fn timer_origin(logs: &[Vec<LogLine>], grid: &[Option<u64>]) -> Option<u64> {
    let mut est = Vec::new();
    for (log, delay) in logs.iter().zip(grid) {
        let Some(delay) = delay else { continue };
        let mut periods = 0;
        for pair in log.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.c_period <= 0 || a.slack < 0 {
                break;
            }
            periods += a.c_period;
            est.push(b.start_us - a.wu_lat - periods - *delay as i64);
        }
    }
    if est.len() < 3 {
        return None;
    }
    est.sort_unstable();
    let m = est[est.len() / 2];
    let agree = est
        .iter()
        .filter(|&&e| (e - m).abs() <= ORIGIN_AGREE_US)
        .count();
    if 2 * agree < est.len() {
        return None;
    }
    u64::try_from(m).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Live, periodic-among-hogs: rt-app's clock reference 346 µs after its
    /// start; the first iteration began at 712 µs (after the barrier), the
    /// third's timer woke 3.9 ms late, the fourth's came late (its grid
    /// starts anew: no estimate after it).
    #[test]
    fn the_timers_origin_is_read_off_the_live_grid() {
        let line = |rel_st, slack, wu_lat| LogLine {
            abs_start_us: 0,
            start_us: rel_st,
            end_us: rel_st + 30,
            slack,
            c_duration: 30,
            c_period: 10_000,
            wu_lat,
        };
        let log = vec![
            line(712, 9200, 34),
            line(10_380, 9900, 41),
            line(20_389, 9900, 3903),
            line(34_250, -100, 0),
            line(34_300, 9900, 20),
            line(44_400, 9900, 20),
        ];
        // 10380-34-10000, 20389-41-20000, 34250-3903-30000.
        assert_eq!(
            timer_origin(std::slice::from_ref(&log), &[Some(0)]),
            Some(347)
        );
        assert_eq!(
            timer_origin(&[log[..3].to_vec()], &[Some(0)]),
            None,
            "two estimates"
        );
        // A thread without a grid of its own is not read.
        assert_eq!(timer_origin(std::slice::from_ref(&log), &[None]), None);
        let untimed: Vec<LogLine> = log.iter().map(|l| LogLine { c_period: 0, ..*l }).collect();
        assert_eq!(timer_origin(&[untimed], &[Some(0)]), None);
        // A thread with a 500 ms delay: its grid 500 ms later, t_zero the
        // same.
        let delayed: Vec<LogLine> = log
            .iter()
            .map(|l| LogLine {
                start_us: l.start_us + 500_000,
                ..*l
            })
            .collect();
        assert_eq!(
            timer_origin(&[delayed, log.clone()], &[Some(500_000), Some(0)]),
            Some(347)
        );
        // Estimates that scatter (no grid): none.
        let scattered: Vec<LogLine> = (0..6)
            .map(|i| line(10_000 * i + 700 * (i % 3), 9000, 0))
            .collect();
        assert_eq!(timer_origin(&[scattered], &[Some(0)]), None);
    }

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
