//! The overhead chart of BENCHMARKS.md (like Fig. 3.16 of the PPP thesis):
//! one group of bars per program, plus the suite's geometric mean, one bar
//! per instrumented mode, height = overhead in percent.
//!
//! Written as plain SVG text: a bar chart needs rectangles, lines and text
//! only, and this keeps a plotting library (and its build time) out of the
//! workspace, whose CI compiles this crate.

use std::fmt::Write;

use crate::render::{measured_modes, suite_geomean};
use crate::results::Results;

const W: f64 = 900.0;
const H: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
const COLORS: [&str; 4] = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b"];

/// One group of bars: a label and an overhead (percent) per mode.
struct Group {
    label: String,
    values: Vec<Option<f64>>,
}

/// The chart as an SVG document.
pub fn overhead_svg(r: &Results) -> String {
    let modes = measured_modes(r);
    let mut groups: Vec<Group> = r
        .programs
        .iter()
        .map(|p| Group {
            label: p.name.clone(),
            values: modes
                .iter()
                .map(|m| p.ratio(m).map(|x| (x - 1.0) * 100.0))
                .collect(),
        })
        .collect();
    groups.push(Group {
        label: "geomean".into(),
        values: modes
            .iter()
            .map(|m| suite_geomean(r, |p| p.ratio(m)).map(|x| (x - 1.0) * 100.0))
            .collect(),
    });
    let all = groups
        .iter()
        .flat_map(|g| g.values.iter().flatten().copied());
    let (lo, hi) = all.fold((0.0f64, 10.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let step = nice_step(hi - lo);
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    let y = |v: f64| TOP + (hi - v) / (hi - lo) * (H - TOP - BOTTOM);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">Execution-time overhead per program (median of {} runs, ref input)</text>"#,
        W / 2.0,
        r.runs
    );
    axis(&mut s, lo, hi, step, &y);
    bars(&mut s, &groups, &y);
    legend(&mut s, &modes);
    s.push_str("</svg>\n");
    s
}

/// A round step (1, 2 or 5 times a power of ten) giving about 6 ticks.
fn nice_step(range: f64) -> f64 {
    let raw = (range / 6.0).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

fn axis(s: &mut String, lo: f64, hi: f64, step: f64, y: &impl Fn(f64) -> f64) {
    let mut v = lo;
    while v <= hi + step * 1e-6 {
        let yy = y(v);
        let (stroke, width) = if v.abs() < step * 1e-6 {
            ("#000", 1.2)
        } else {
            ("#ddd", 0.8)
        };
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" y1="{yy:.1}" x2="{}" y2="{yy:.1}" stroke="{stroke}" stroke-width="{width}"/>"#,
            W - RIGHT
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{v:.0} %</text>"#,
            LEFT - 6.0,
            yy + 4.0
        );
        v += step;
    }
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">overhead (%)</text>"#,
        (TOP + H - BOTTOM) / 2.0
    );
}

fn bars(s: &mut String, groups: &[Group], y: &impl Fn(f64) -> f64) {
    let gw = (W - LEFT - RIGHT) / groups.len() as f64;
    for (gi, g) in groups.iter().enumerate() {
        let x0 = LEFT + gi as f64 * gw;
        let bw = gw * 0.8 / g.values.len().max(1) as f64;
        for (mi, v) in g.values.iter().enumerate() {
            let Some(v) = *v else { continue };
            let x = x0 + gw * 0.1 + mi as f64 * bw;
            let (top, bottom) = (y(v.max(0.0)), y(v.min(0.0)));
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {v:.1} %</title></rect>"#,
                bw * 0.92,
                (bottom - top).max(0.5),
                COLORS[mi % COLORS.len()],
                g.label
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="9">{v:.0}</text>"#,
                x + bw * 0.46,
                top - 3.0
            );
        }
        let weight = if g.label == "geomean" {
            "bold"
        } else {
            "normal"
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="{weight}">{}</text>"#,
            x0 + gw / 2.0,
            H - BOTTOM + 18.0,
            g.label
        );
    }
}

fn legend(s: &mut String, modes: &[String]) {
    for (i, m) in modes.iter().enumerate() {
        let x = LEFT + 10.0 + i as f64 * 110.0;
        let yy = H - 22.0;
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{yy}">{m}</text>"#,
            yy - 10.0,
            COLORS[i % COLORS.len()],
            x + 17.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::nice_step;

    #[test]
    fn nice_steps_are_round() {
        assert_eq!(nice_step(60.0), 10.0);
        assert_eq!(nice_step(11.0), 2.0);
        assert_eq!(nice_step(250.0), 50.0);
    }
}
