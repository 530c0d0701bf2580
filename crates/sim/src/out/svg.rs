//! What the simulator's SVG and HTML outputs share (the Gantt chart,
//! the run-queue benchmark's chart, the papers' charts and report).

/// Text escaped for XML and HTML, attribute values included.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Colour `i` of a series: hues a golden angle (137.5°) apart, so
/// neighbours differ most, at the given saturation and lightness (%).
pub fn colour(i: usize, saturation: u8, lightness: u8) -> String {
    format!(
        "hsl({:.0},{saturation}%,{lightness}%)",
        (i as f64 * 137.508) % 360.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(esc(r#"a<b>&"c""#), "a&lt;b&gt;&amp;&quot;c&quot;");
    }

    #[test]
    fn colours_are_a_golden_angle_apart() {
        assert_eq!(colour(0, 60, 55), "hsl(0,60%,55%)");
        assert_eq!(colour(1, 60, 55), "hsl(138,60%,55%)");
        assert_eq!(colour(3, 65, 42), "hsl(53,65%,42%)");
    }
}
