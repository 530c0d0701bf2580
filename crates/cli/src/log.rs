//! The daemon's log lines, in the form their reader expects.
//!
//! - Under systemd (stderr is the journal's stream: `$JOURNAL_STREAM`
//!   names its device and inode, `systemd.exec(5)`): a `<N>` priority
//!   prefix (`sd-daemon(3)`), no timestamp (the journal keeps its own).
//! - On a terminal: a UTC timestamp and the level.
//! - Anywhere else (a pipe, a file, a test): `corral: [level: ]message`,
//!   as before there were levels.
//!
//! Written by hand, not with `log`/`env_logger`: the three forms above
//! and the syslog priorities are the whole of it, and env_logger's
//! formats have no journal priority prefix.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// syslog priorities (`sd-daemon(3)`: `SD_ERR` … `SD_DEBUG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 3,
    Warning = 4,
    Notice = 5,
    Info = 6,
    Debug = 7,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Notice => "notice",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Journal,
    Terminal,
    Plain,
}

static MAX: AtomicU8 = AtomicU8::new(Level::Info as u8);
static FORM: OnceLock<Form> = OnceLock::new();

/// Lines above `max` (less important) are dropped.
pub fn set_max(max: Level) {
    MAX.store(max as u8, Ordering::Relaxed);
}

/// Whether stderr is the journal's stream.
fn journal() -> bool {
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = stream.to_str().and_then(|s| s.split_once(':')) else {
        return false;
    };
    let Ok(st) = rustix::fs::fstat(std::io::stderr()) else {
        return false;
    };
    dev.parse::<u64>().is_ok_and(|d| d == st.st_dev)
        && ino.parse::<u64>().is_ok_and(|i| i == st.st_ino)
}

fn form() -> Form {
    *FORM.get_or_init(|| {
        if journal() {
            Form::Journal
        } else if std::io::stderr().is_terminal() {
            Form::Terminal
        } else {
            Form::Plain
        }
    })
}

/// One line (or several, each prefixed) at `level`.
pub fn log(level: Level, message: &str) {
    if level as u8 > MAX.load(Ordering::Relaxed) {
        return;
    }
    let line = format_line(form(), level, message, now_utc);
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

fn format_line(form: Form, level: Level, message: &str, now: fn() -> String) -> String {
    let mut out = String::new();
    for text in message.lines() {
        match form {
            Form::Journal => out.push_str(&format!("<{}>{text}\n", level as u8)),
            Form::Terminal => {
                out.push_str(&format!("{} {:<7} {text}\n", now(), level.word()));
            }
            Form::Plain => match level {
                Level::Error | Level::Warning => {
                    out.push_str(&format!("corral: {}: {text}\n", level.word()))
                }
                _ => out.push_str(&format!("corral: {text}\n")),
            },
        }
    }
    out
}

pub fn error(m: &str) {
    log(Level::Error, m)
}
pub fn warning(m: &str) {
    log(Level::Warning, m)
}
pub fn notice(m: &str) {
    log(Level::Notice, m)
}
pub fn info(m: &str) {
    log(Level::Info, m)
}
pub fn debug(m: &str) {
    log(Level::Debug, m)
}

/// `2026-11-25T13:04:17.123Z`.
fn now_utc() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (y, m, day) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_417), (2025, 11, 25));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn each_form_of_a_line() {
        let t = || "T".to_string();
        assert_eq!(
            format_line(Form::Journal, Level::Warning, "a\nb", t),
            "<4>a\n<4>b\n"
        );
        assert_eq!(
            format_line(Form::Terminal, Level::Info, "x", t),
            "T info    x\n"
        );
        assert_eq!(
            format_line(Form::Plain, Level::Error, "x", t),
            "corral: error: x\n"
        );
        assert_eq!(
            format_line(Form::Plain, Level::Debug, "x", t),
            "corral: x\n"
        );
    }
}
