//! The papers' bar charts (SVG) and the HTML report.

use super::Paper;
use crate::out::svg::esc;
use std::fmt::Write as _;

/// One bar of a chart: the simulated figure and, where the paper gives
/// one, the paper's.
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub simulated: f64,
    pub paper: Option<f64>,
}

impl Bar {
    pub(super) fn sim(label: &str, simulated: f64) -> Bar {
        Bar {
            label: label.into(),
            simulated,
            paper: None,
        }
    }

    pub(super) fn both(label: &str, simulated: f64, paper: f64) -> Bar {
        Bar {
            label: label.into(),
            simulated,
            paper: Some(paper),
        }
    }
}

/// A round step for `n` or fewer ticks up to `max`: 1, 2 or 5 × 10^k.
fn tick_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

/// A horizontal bar chart, hand-written SVG: per item the simulated bar
/// and, beneath it, the paper's figure in grey where the paper gives one
/// ("paper: -" where it does not); an x axis from 0 with round ticks and
/// `axis` (the quantity and its unit) under it; a legend; `note` at the
/// foot. A negative value draws no bar; its figure is printed.
pub fn bars(title: &str, axis: &str, items: &[Bar], note: &str) -> String {
    let (w, bar, thin, gap, left, right) = (760.0, 18.0, 8.0, 12.0, 230.0, 90.0);
    let top = 56.0;
    let row = bar + thin + 2.0 + gap;
    let plot_h = items.len() as f64 * row;
    let h = top + plot_h + 70.0;
    let max = items
        .iter()
        .flat_map(|i| [i.simulated, i.paper.unwrap_or(0.0)])
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let step = tick_step(max, 5.0);
    let end = (max / step).ceil() * step;
    let span = w - left - right;
    let x = |v: f64| left + span * (v.max(0.0) / end);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<text x="10" y="22" font-size="14" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="32" width="12" height="10" fill="#4a7fc1"/><text x="{}" y="41">simulated</text><rect x="{}" y="34" width="12" height="6" fill="#999"/><text x="{}" y="41">paper</text>"##,
        left + 16.0,
        left + 90.0,
        left + 106.0
    );
    // Grid lines and ticks.
    let mut t = 0.0;
    while t <= end + step * 1e-6 {
        let tx = x(t);
        let _ = writeln!(
            s,
            r##"<line x1="{tx:.1}" y1="{top}" x2="{tx:.1}" y2="{:.1}" stroke="#ddd"/><text x="{tx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            top + plot_h,
            top + plot_h + 16.0,
            tick_label(t, step)
        );
        t += step;
    }
    let _ = writeln!(
        s,
        r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="#333"/>"##,
        top + plot_h,
        left + span,
        top + plot_h,
        top + plot_h
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + span / 2.0,
        top + plot_h + 34.0,
        esc(axis)
    );
    for (i, item) in items.iter().enumerate() {
        let y = top + gap / 2.0 + i as f64 * row;
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{:.1}" text-anchor="end">{}</text><rect x="{left}" y="{y:.1}" width="{:.1}" height="{bar}" fill="#4a7fc1"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            left - 6.0,
            y + bar * 0.75,
            esc(&item.label),
            x(item.simulated) - left,
            x(item.simulated) + 4.0,
            y + bar * 0.75,
            fmt_value(item.simulated)
        );
        let py = y + bar + 2.0;
        match item.paper {
            Some(p) => {
                let _ = writeln!(
                    s,
                    r##"<rect x="{left}" y="{py:.1}" width="{:.1}" height="{thin}" fill="#999"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#555">paper {}</text>"##,
                    x(p) - left,
                    x(p) + 4.0,
                    py + thin,
                    fmt_value(p)
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#555">paper: -</text>"##,
                    left + 4.0,
                    py + thin
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r##"<text x="10" y="{:.1}" font-size="11" fill="#555">{}</text>"##,
        top + plot_h + 56.0,
        esc(note)
    );
    s.push_str("</svg>\n");
    s
}

/// A tick's value with as many decimals as its step needs.
fn tick_label(v: f64, step: f64) -> String {
    let decimals = (-step.log10()).ceil().max(0.0) as usize;
    format!("{v:.decimals$}")
}

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// One HTML page: per paper its set-up, table, claims and chart.
pub fn html(papers: &[Paper]) -> String {
    let mut s = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>corral: the papers on the simulator</title>\n\
         <style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}\
         td,th{border:1px solid #bbb;padding:.25em .6em}.no{color:#b00;font-weight:bold}.yes{color:#070}</style>\
         </head><body>\n<h1>corral: the five papers on the simulator</h1>\n\
         <p>Regenerate with <code>corral sim --paper all --report DIR</code>.</p>\n",
    );
    // The summary first: per paper, how many of its claims hold.
    s.push_str(
        "<h2>Summary</h2>\n<p>A claim holds when the simulation shows the effect the \
         paper states, in its direction and past the stated threshold; the sizes \
         can differ (each table gives both figures).</p>\n\
         <table><tr><th>paper</th><th>title</th><th>claims</th><th>hold</th><th>disagree</th></tr>\n",
    );
    for p in papers {
        let hold = p.claims.iter().filter(|c| c.holds).count();
        let _ = writeln!(
            s,
            "<tr><td><a href=\"#p{id}\">{id}</a></td><td>{}</td><td>{}</td><td class=\"yes\">{hold}</td><td class=\"{}\">{}</td></tr>",
            esc(p.title),
            p.claims.len(),
            if hold < p.claims.len() { "no" } else { "yes" },
            p.claims.len() - hold,
            id = p.id,
        );
    }
    s.push_str("</table>\n");
    for p in papers {
        let _ = writeln!(
            s,
            "<h2 id=\"p{}\">{} — {}</h2>\n<p>{}</p>",
            p.id,
            p.id,
            esc(p.title),
            esc(&p.setup)
        );
        s.push_str("<table><tr>");
        for h in &p.header {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr>\n");
        for r in &p.rows {
            s.push_str("<tr>");
            for c in r {
                let _ = write!(s, "<td>{}</td>", esc(c));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n<h3>Claims</h3>\n<table><tr><th>claim</th><th>paper</th><th>simulated</th><th>holds when</th><th></th></tr>\n");
        for c in &p.claims {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
                esc(&c.claim),
                esc(&c.paper),
                esc(&c.simulated),
                esc(&c.test),
                if c.holds { "yes" } else { "no" },
                if c.holds { "holds" } else { "disagrees" }
            );
        }
        s.push_str("</table>\n");
        s.push_str(&p.chart);
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_chart_has_both_figures_an_axis_and_its_unit() {
        let svg = bars(
            "t",
            "time (s)",
            &[Bar::sim("a", 1.0), Bar::both("b<", 2.0, 4.0)],
            "n",
        );
        // Two legend swatches, two simulated bars, one paper bar.
        assert_eq!(svg.matches("<rect").count(), 5);
        assert!(svg.contains("b&lt;"));
        assert!(
            svg.contains("paper 4.00") && svg.contains("paper: -"),
            "{svg}"
        );
        assert!(svg.contains(">time (s)</text>"), "{svg}");
        // Ticks 0, 1, 2, 3, 4 (step 1 for a maximum of 4); the paper's 4
        // reaches the axis's end (440 wide), the simulated 2 half of it.
        assert!(svg.contains(r#"width="440.0" height="8""#), "{svg}");
        assert!(svg.contains(r#"width="220.0" height="18""#), "{svg}");
        assert_eq!(svg.matches("text-anchor=\"middle\">").count(), 6, "{svg}");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(4.0, 5.0), 1.0);
        assert_eq!(tick_step(290.0, 5.0), 100.0);
        assert_eq!(tick_step(43.31, 5.0), 10.0);
        assert_eq!(tick_step(0.7, 5.0), 0.2);
        assert_eq!(tick_label(20.0, 10.0), "20");
        assert_eq!(tick_label(0.4, 0.2), "0.4");
    }
}
