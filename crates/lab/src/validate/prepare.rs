//! The workload text both sides read.

use super::*;

/// The case's JSON as both sides run it: `taskgroup` keys under `root`
/// (the root itself for tasks without one), and in `global` the use
/// case's `duration`, the measured `calibration` and where rt-app writes
/// its logs. `log_size` is dropped: without it rt-app logs to the files
/// as it goes (Debian's 1.0 inverts its string values: "file" there turns
/// logging off).
///
/// A key repeated in one object is numbered (`run`, `run1`, `run2`):
/// Debian's rt-app parses with json-c 0.16, which keeps only the *last*
/// value of a repeated key, at the first one's place, while Debian's own
/// examples repeat `run`, `sleep` and `resume` within a phase (in
/// `browser-short.json` the first phase's 400 ms sleep and 15 ms run
/// vanish). rt-app and the simulator both match event keys by prefix, so
/// numbered keys make the live run execute every event the file lists,
/// in order — the workload the simulator reads.
pub(super) fn prepare(
    text: &str,
    label: &str,
    root: &str,
    seconds: u64,
    calibration: u32,
    logdir: &Path,
    groups: &[(&str, u64)],
) -> Result<String> {
    let bad = |why: String| Error::Parse {
        what: label.into(),
        why,
    };
    let mut v = json::parse(text).map_err(|e| bad(e.to_string()))?;
    number_repeated_keys(&mut v);
    let Kind::Object(top) = &mut v.kind else {
        return Err(bad("not a JSON object".into()));
    };
    let Some((_, tasks)) = top.iter_mut().find(|(k, _)| k == "tasks") else {
        return Err(bad("no \"tasks\"".into()));
    };
    let Kind::Object(tasks) = &mut tasks.kind else {
        return Err(bad("\"tasks\" is not an object".into()));
    };
    for (name, task) in tasks.iter_mut() {
        let Kind::Object(keys) = &mut task.kind else {
            return Err(bad(format!("task {name:?} is not an object")));
        };
        let own = keys
            .iter()
            .find(|(k, _)| k == "taskgroup")
            .and_then(|(_, v)| v.as_str())
            .unwrap_or("")
            .to_string();
        let own = own.trim_end_matches('/');
        if own.matches('/').count() > 1 {
            return Err(bad(format!(
                "task {name:?}: taskgroup {own:?}: only one level (\"/name\") is supported"
            )));
        }
        if !own.is_empty() && !groups.iter().any(|(g, _)| *g == own) {
            return Err(bad(format!(
                "task {name:?}: taskgroup {own:?} has no shares in the case"
            )));
        }
        set(keys, "taskgroup", string(&format!("{root}{own}")));
    }
    let global = match top.iter_mut().position(|(k, _)| k == "global") {
        Some(i) => &mut top[i].1,
        None => {
            top.push((
                "global".into(),
                Value {
                    line: 0,
                    kind: Kind::Object(Vec::new()),
                },
            ));
            &mut top.last_mut().expect("pushed").1
        }
    };
    let Kind::Object(g) = &mut global.kind else {
        return Err(bad("\"global\" is not an object".into()));
    };
    set(g, "duration", number(seconds as f64));
    set(g, "calibration", number(calibration as f64));
    set(g, "logdir", string(&logdir.display().to_string()));
    set(g, "log_basename", string("rt-app"));
    g.retain(|(k, _)| k != "log_size");
    let mut out = String::new();
    write_json(&v, 0, &mut out);
    out.push('\n');
    Ok(out)
}

/// Renames the second and later uses of a key in each object `key1`,
/// `key2`, … (skipping names the object already has).
pub(super) fn number_repeated_keys(v: &mut Value) {
    match &mut v.kind {
        Kind::Object(entries) => {
            let mut used: std::collections::HashSet<String> =
                entries.iter().map(|(k, _)| k.clone()).collect();
            let mut seen = std::collections::HashSet::new();
            for (k, x) in entries.iter_mut() {
                if !seen.insert(k.clone()) {
                    let base = k.clone();
                    let mut n = 1;
                    while used.contains(&format!("{base}{n}")) {
                        n += 1;
                    }
                    *k = format!("{base}{n}");
                    used.insert(k.clone());
                }
                number_repeated_keys(x);
            }
        }
        Kind::Array(items) => items.iter_mut().for_each(number_repeated_keys),
        _ => {}
    }
}

pub(super) fn set(o: &mut Vec<(String, Value)>, key: &str, v: Value) {
    o.retain(|(k, _)| k != key);
    o.push((key.to_string(), v));
}

pub(super) fn string(s: &str) -> Value {
    Value {
        line: 0,
        kind: Kind::String(s.to_string()),
    }
}

pub(super) fn number(n: f64) -> Value {
    Value {
        line: 0,
        kind: Kind::Number(n),
    }
}

/// Writes `v` as JSON with tabs, keeping the order and duplicates of
/// object keys (rt-app's event lists).
pub(super) fn write_json(v: &Value, depth: usize, out: &mut String) {
    let pad = |d: usize, out: &mut String| out.extend(std::iter::repeat_n('\t', d));
    match &v.kind {
        Kind::Null => out.push_str("null"),
        Kind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Kind::Number(n) => match v.as_i64() {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => {
                let _ = write!(out, "{n}");
            }
        },
        Kind::String(s) => {
            out.push_str(&serde_json::to_string(s).expect("strings serialise"));
        }
        Kind::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(x, depth + 1, out);
            }
            out.push(']');
        }
        Kind::Object(entries) => {
            if entries.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{\n");
            for (i, (k, x)) in entries.iter().enumerate() {
                pad(depth + 1, out);
                out.push_str(&serde_json::to_string(k).expect("strings serialise"));
                out.push_str(": ");
                write_json(x, depth + 1, out);
                if i + 1 < entries.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(depth, out);
            out.push('}');
        }
    }
}
