//! The two plots of the report: throughput against message size and against delta size,
//! drawn as SVG with log axes.

use super::*;

/// A line chart with logarithmic axes, written as SVG by hand.
struct Chart {
    title: String,
    x_label: &'static str,
    y_label: &'static str,
    series: Vec<(String, Vec<(f64, f64)>)>,
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#7f7f7f",
];

fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut t = 10f64.powf(lo.log10().floor());
    while t <= hi * 1.0001 {
        if t >= lo * 0.9999 {
            ticks.push(t);
        }
        t *= 10.0;
    }
    ticks
}

fn tick_label(v: f64) -> String {
    if v >= 1e4 {
        format!("{}k", v / 1e3)
    } else {
        format!("{v}")
    }
}

impl Chart {
    /// Draws the chart at (`ox`, `oy`) in a `w` × `h` box.
    fn draw(&self, svg: &mut String, ox: f64, oy: f64, w: f64, h: f64, x_ticks: &[f64]) {
        let points = self.series.iter().flat_map(|s| s.1.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in points {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            return;
        }
        let (y0, y1) = (
            10f64.powf(y0.log10().floor()),
            10f64.powf(y1.log10().ceil()),
        );
        let (x0, x1) = (x0 / 1.3, x1 * 1.3);
        let (left, top, right, bottom) = (ox + 60.0, oy + 30.0, ox + w - 200.0, oy + h - 45.0);
        let px =
            |x: f64| left + (x.log10() - x0.log10()) / (x1.log10() - x0.log10()) * (right - left);
        let py =
            |y: f64| bottom - (y.log10() - y0.log10()) / (y1.log10() - y0.log10()) * (bottom - top);
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
            left,
            oy + 18.0,
            self.title
        );
        let _ = writeln!(
            svg,
            r##"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#888"/>"##,
            right - left,
            bottom - top
        );
        for &t in x_ticks.iter().filter(|&&t| t >= x0 && t <= x1) {
            let x = px(t);
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
                bottom + 14.0,
                size_label(t as usize)
            );
        }
        for t in log_ticks(y0, y1) {
            let y = py(t);
            let _ = writeln!(
                svg,
                r##"<line x1="{left:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
                left - 4.0,
                y + 4.0,
                tick_label(t)
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
            (left + right) / 2.0,
            bottom + 32.0,
            self.x_label
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{}</text>"#,
            ox + 14.0,
            (top + bottom) / 2.0,
            ox + 14.0,
            (top + bottom) / 2.0,
            self.y_label
        );
        for (i, (name, pts)) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let path: Vec<String> = pts
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
                path.join(" ")
            );
            for &(x, y) in pts {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                    px(x),
                    py(y)
                );
            }
            let ly = top + 14.0 + 18.0 * i as f64;
            let _ = writeln!(
                svg,
                r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"/><text x="{:.1}" y="{:.1}" font-size="12">{name}</text>"#,
                right + 10.0,
                right + 30.0,
                right + 35.0,
                ly + 4.0
            );
        }
    }
}

fn svg_document(width: f64, height: f64, body: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{body}</svg>\n"
    )
}

pub(super) fn message_size_plot(r: &Results) -> String {
    let (w, h) = (640.0, 340.0);
    let mut body = String::new();
    let ticks: Vec<f64> = SIZES.iter().map(|&s| s as f64).collect();
    for (i, wl) in Workload::ALL.into_iter().enumerate() {
        let g = group_of(wl);
        let series = FEEDS
            .iter()
            .map(|(f, label)| {
                let pts = SIZES
                    .iter()
                    .filter_map(|&s| Some((s as f64, get(r, &g, f, s)?.mib_per_s()?)))
                    .collect();
                ((*label).to_owned(), pts)
            })
            .collect();
        let chart = Chart {
            title: g.clone(),
            x_label: "message size (bytes)",
            y_label: "MiB/s",
            series,
        };
        chart.draw(
            &mut body,
            (i % 2) as f64 * w,
            (i / 2) as f64 * h,
            w,
            h,
            &ticks,
        );
    }
    svg_document(2.0 * w, 2.0 * h, &body)
}

pub(super) fn delta_size_plot(r: &Results) -> String {
    let size = 1usize << 16;
    let series = Workload::ALL
        .iter()
        .map(|&wl| {
            let g = group_of(wl);
            let mut pts: Vec<(f64, f64)> = Vec::new();
            let mut add = |delta: f64, f: &str| {
                if let Some(v) = get(r, &g, f, size).and_then(Measurement::mib_per_s) {
                    pts.push((delta, v));
                }
            };
            add(1.0, "bytes");
            if let Some(t) = mean_token_bytes(wl) {
                add(t, "tokens");
            }
            for d in [16, 64, 256, 4096] {
                add(d as f64, &format!("delta_{d}"));
            }
            add(size as f64, "whole");
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (wl.name().to_owned(), pts)
        })
        .collect();
    let chart = Chart {
        title: "tam-parse at 64 KiB: throughput against delta size (tokens at their mean size)"
            .into(),
        x_label: "delta size (bytes)",
        y_label: "MiB/s",
        series,
    };
    let mut body = String::new();
    let ticks = [
        1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0,
    ];
    chart.draw(&mut body, 0.0, 0.0, 820.0, 420.0, &ticks);
    svg_document(820.0, 420.0, &body)
}
