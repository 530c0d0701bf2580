//! A log-log line chart in SVG, written by hand as `corral_sim::out::trace`
//! writes its Gantt chart: the run-queue benchmark's cost per operation
//! (y) against the number of runnable tasks (x), one line per run-queue
//! structure, the points where two lines cross marked, numbered and listed
//! under the panel.
//!
//! Two lines cross between two neighbouring x values they were both
//! measured at when their order changes there; the crossing is where the
//! straight lines joining the points meet on the log-log axes:
//! with `d = ln y_a − ln y_b` at the two x values (`d₀`, `d₁` of opposite
//! signs), `t = d₀ / (d₀ − d₁)`, `ln x = ln x₀ + t·(ln x₁ − ln x₀)` and
//! `ln y = ln y_a₀ + t·(ln y_a₁ − ln y_a₀)`. A line that meets another
//! exactly at a measured x (d₁ = 0) crosses there.

use corral_sim::out::svg::{colour, esc};
use std::fmt::Write as _;

/// One line: a name and its (x, y) points, x increasing, all > 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart panel: a title and its lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
}

/// Where two lines cross.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub a: String,
    pub b: String,
    pub x: f64,
    pub y: f64,
}

/// Every crossing of two lines of `series` (see the module doc), by x.
pub fn crossings(series: &[Series]) -> Vec<Crossing> {
    let mut out = Vec::new();
    for (i, a) in series.iter().enumerate() {
        for b in &series[i + 1..] {
            // The x values both were measured at, with both y values.
            let common: Vec<(f64, f64, f64)> = a
                .points
                .iter()
                .filter_map(|&(x, ya)| {
                    let &(_, yb) = b.points.iter().find(|p| p.0 == x)?;
                    (x > 0.0 && ya > 0.0 && yb > 0.0).then_some((x, ya, yb))
                })
                .collect();
            for w in common.windows(2) {
                let ((x0, ya0, yb0), (x1, ya1, yb1)) = (w[0], w[1]);
                let (d0, d1) = (ya0.ln() - yb0.ln(), ya1.ln() - yb1.ln());
                let (x, y) = if d0 != 0.0 && d1 != 0.0 && (d0 < 0.0) != (d1 < 0.0) {
                    let t = d0 / (d0 - d1);
                    let lx = x0.ln() + t * (x1.ln() - x0.ln());
                    let ly = ya0.ln() + t * (ya1.ln() - ya0.ln());
                    (lx.exp(), ly.exp())
                } else if d1 == 0.0 && d0 != 0.0 {
                    (x1, ya1)
                } else {
                    continue;
                };
                out.push(Crossing {
                    a: a.name.clone(),
                    b: b.name.clone(),
                    x,
                    y,
                });
            }
        }
    }
    out.sort_by(|p, q| p.x.total_cmp(&q.x));
    out
}

/// A number as a short label: 1, 10, 100, 1k, 10k; 0.1; 1e6.
fn label(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("1e{}", v.log10().round()),
        v if v >= 1e3 => format!("{}k", v / 1e3),
        v => format!("{v}"),
    }
}

/// Decades spanning `lo..=hi` (both > 0).
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil());
    (lo, if hi > lo { hi } else { lo * 10.0 })
}

/// Caption lines of a panel's crossings, numbered as on the chart.
pub fn crossing_lines(c: &[Crossing], unit: &str) -> Vec<String> {
    c.iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{}: {} × {} at {:.0} tasks, {:.1} {unit}",
                i + 1,
                c.a,
                c.b,
                c.x,
                c.y
            )
        })
        .collect()
}

/// The chart: `panels` side by side, each log-log with axes labelled
/// `x_label` and `y_label` (`y_unit` in the caption), its lines, points,
/// legend, numbered crossing marks and the list of crossings below.
pub fn svg(title: &str, x_label: &str, y_label: &str, y_unit: &str, panels: &[Panel]) -> String {
    let (pw, ph, ml, mt, gap) = (520.0, 360.0, 70.0, 60.0, 90.0);
    let legend_w = 150.0;
    let lists: Vec<Vec<Crossing>> = panels.iter().map(|p| crossings(&p.series)).collect();
    let caption_rows = lists.iter().map(|l| l.len().max(1)).max().unwrap_or(1);
    let width = ml + panels.len() as f64 * (pw + legend_w + gap);
    let height = mt + ph + 60.0 + 16.0 * caption_rows as f64 + 30.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        o,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/><text x=\"{ml}\" y=\"22\" font-size=\"15\">{}</text>",
        esc(title)
    );
    for (pi, (panel, cross)) in panels.iter().zip(&lists).enumerate() {
        let left = ml + pi as f64 * (pw + legend_w + gap);
        let labels = (x_label, y_label, y_unit);
        draw_panel(&mut o, panel, cross, (left, mt, pw, ph), labels);
    }
    o.push_str("</svg>\n");
    o
}

/// One panel at `(left, top, width, height)`: its title and frame, decade
/// grid and labels, a line and points per series with its legend, the
/// crossings marked and listed under it.
fn draw_panel(
    o: &mut String,
    panel: &Panel,
    cross: &[Crossing],
    (left, mt, pw, ph): (f64, f64, f64, f64),
    (x_label, y_label, y_unit): (&str, &str, &str),
) {
    let all: Vec<(f64, f64)> = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|&(x, y)| x > 0.0 && y > 0.0)
        .collect();
    let fold = |f: fn(f64, f64) -> f64, init: f64, sel: fn(&(f64, f64)) -> f64| {
        all.iter().map(sel).fold(init, f)
    };
    let (x0, x1) = decades(
        fold(f64::min, f64::INFINITY, |p| p.0).min(1e300),
        fold(f64::max, 0.0, |p| p.0).max(1e-300),
    );
    let (y0, y1) = decades(
        fold(f64::min, f64::INFINITY, |p| p.1).min(1e300),
        fold(f64::max, 0.0, |p| p.1).max(1e-300),
    );
    let px = |x: f64| left + (x.log10() - x0.log10()) / (x1.log10() - x0.log10()) * pw;
    let py = |y: f64| mt + ph - (y.log10() - y0.log10()) / (y1.log10() - y0.log10()) * ph;
    let _ = writeln!(
        o,
        "<text x=\"{left}\" y=\"{:.0}\" font-size=\"13\">{}</text>",
        mt - 12.0,
        esc(&panel.title)
    );
    let _ = writeln!(
        o,
        "<rect x=\"{left}\" y=\"{mt}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#888\"/>"
    );
    // Decade grid lines and labels.
    let mut d = x0;
    while d <= x1 * 1.0001 {
        let _ = writeln!(
            o,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{mt}\" y2=\"{1:.1}\" stroke=\"#e4e4e4\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{3}</text>",
            px(d),
            mt + ph,
            mt + ph + 16.0,
            label(d)
        );
        d *= 10.0;
    }
    let mut d = y0;
    while d <= y1 * 1.0001 {
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"#e4e4e4\"/><text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{4}</text>",
            left + pw,
            py(d),
            left - 6.0,
            py(d) + 4.0,
            label(d)
        );
        d *= 10.0;
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        left + pw / 2.0,
        mt + ph + 34.0,
        esc(x_label)
    );
    let _ = writeln!(
        o,
        "<text transform=\"translate({:.1},{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        left - 48.0,
        mt + ph / 2.0,
        esc(y_label)
    );
    draw_series(o, panel, &px, &py, (left, mt, pw), y_unit);
    draw_crossings(o, cross, &px, &py, (left, mt, ph), y_unit);
}

/// Each series' line and points, and its legend entry right of the panel.
fn draw_series(
    o: &mut String,
    panel: &Panel,
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
    (left, mt, pw): (f64, f64, f64),
    y_unit: &str,
) {
    for (i, s) in panel.series.iter().enumerate() {
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|&&(x, y)| x > 0.0 && y > 0.0)
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            o,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" points=\"{}\"><title>{}</title></polyline>",
            colour(i, 65, 42),
            pts.join(" "),
            esc(&s.name)
        );
        for &(x, y) in s.points.iter().filter(|&&(x, y)| x > 0.0 && y > 0.0) {
            let _ = writeln!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"><title>{}: {} tasks, {:.1} {}</title></circle>",
                px(x),
                py(y),
                colour(i, 65, 42),
                esc(&s.name),
                x,
                y,
                esc(y_unit)
            );
        }
        let ly = mt + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            o,
            "<line x1=\"{0:.1}\" x2=\"{1:.1}\" y1=\"{2:.1}\" y2=\"{2:.1}\" stroke=\"{3}\" stroke-width=\"2.5\"/><text x=\"{4:.1}\" y=\"{5:.1}\">{6}</text>",
            left + pw + 12.0,
            left + pw + 32.0,
            ly,
            colour(i, 65, 42),
            left + pw + 36.0,
            ly + 4.0,
            esc(&s.name)
        );
    }
}

/// The crossings: marked and numbered on the panel, listed under it.
fn draw_crossings(
    o: &mut String,
    cross: &[Crossing],
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
    (left, mt, ph): (f64, f64, f64),
    y_unit: &str,
) {
    for (n, c) in cross.iter().enumerate() {
        let (cx, cy) = (px(c.x), py(c.y));
        let _ = writeln!(
            o,
            "<g class=\"crossing\"><circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"5\" fill=\"none\" stroke=\"black\" stroke-width=\"1.2\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text><title>{} × {}: {:.0} tasks, {:.1} {}</title></g>",
            cx + 6.0,
            cy - 6.0,
            n + 1,
            esc(&c.a),
            esc(&c.b),
            c.x,
            c.y,
            esc(y_unit)
        );
    }
    let cap_y = mt + ph + 56.0;
    let lines = crossing_lines(cross, y_unit);
    let lines = if lines.is_empty() {
        vec!["no lines cross".to_string()]
    } else {
        lines
    };
    let _ = writeln!(
        o,
        "<text x=\"{left}\" y=\"{cap_y:.1}\" font-weight=\"bold\">Crossings</text>"
    );
    for (k, l) in lines.iter().enumerate() {
        let _ = writeln!(
            o,
            "<text x=\"{left}\" y=\"{:.1}\">{}</text>",
            cap_y + 16.0 * (k + 1) as f64,
            esc(l)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str, pts: &[(f64, f64)]) -> Series {
        Series {
            name: name.into(),
            points: pts.to_vec(),
        }
    }

    #[test]
    fn one_polyline_per_series_and_a_mark_where_two_cross() {
        // a rises as x, b is flat at 20: they cross at x = 20, y = 20 (on
        // log-log axes the joining lines are straight). c stays above both.
        let a = series("a", &[(1.0, 1.0), (10.0, 10.0), (100.0, 100.0)]);
        let b = series("b", &[(1.0, 20.0), (10.0, 20.0), (100.0, 20.0)]);
        let c = series("c", &[(1.0, 1000.0), (10.0, 1000.0), (100.0, 1000.0)]);
        let cross = crossings(&[a.clone(), b.clone(), c.clone()]);
        assert_eq!(cross.len(), 1, "{cross:?}");
        assert_eq!((cross[0].a.as_str(), cross[0].b.as_str()), ("a", "b"));
        assert!((cross[0].x - 20.0).abs() < 1e-9 && (cross[0].y - 20.0).abs() < 1e-9);
        let panel = Panel {
            title: "pick".into(),
            series: vec![a, b, c],
        };
        let s = svg("t", "tasks", "ns", "ns", &[panel]);
        assert_eq!(s.matches("<polyline").count(), 3);
        assert_eq!(s.matches("class=\"crossing\"").count(), 1);
        assert!(s.contains("1: a × b at 20 tasks, 20.0 ns"));
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
    }

    #[test]
    fn touching_at_a_measured_point_is_one_crossing_and_parallel_lines_none() {
        let a = series("a", &[(1.0, 1.0), (10.0, 5.0), (100.0, 50.0)]);
        let b = series("b", &[(1.0, 2.0), (10.0, 5.0), (100.0, 10.0)]);
        let cross = crossings(&[a.clone(), b]);
        assert_eq!(cross.len(), 1);
        assert_eq!((cross[0].x, cross[0].y), (10.0, 5.0));
        let p = series("p", &[(1.0, 2.0), (10.0, 10.0), (100.0, 100.0)]);
        assert!(crossings(&[a, p]).is_empty());
    }
}
