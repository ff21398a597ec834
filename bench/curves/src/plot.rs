//! PNG line charts of the curves' medians (log-scale x) with plotters' bitmap backend. Text
//! uses a TrueType font read from the machine at run time (DejaVu Sans by default), so no
//! font file lives in the repository. Called by main.rs; knows nothing about servers.

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::{Path, PathBuf};

const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// Registers the font every chart uses as "sans-serif"; `path` overrides the search.
pub fn register_font(path: Option<&Path>) -> Result<PathBuf> {
    let chosen = match path {
        Some(path) => path.to_path_buf(),
        None => FONT_CANDIDATES
            .iter()
            .map(PathBuf::from)
            .find(|candidate| candidate.exists())
            .ok_or_else(|| anyhow!("no TrueType font found; pass --font FILE.ttf"))?,
    };
    let bytes = std::fs::read(&chosen).with_context(|| format!("read font {chosen:?}"))?;
    // plotters keeps fonts for the life of the process and wants them 'static
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| anyhow!("{chosen:?} is not a usable TrueType font"))?;
    Ok(chosen)
}

pub struct Series {
    pub label: String,
    pub color: RGBColor,
    /// (x, median y), x ascending.
    pub points: Vec<(f64, f64)>,
}

pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x_format: fn(f64) -> String,
    pub y_format: fn(f64) -> String,
    /// Logarithmic y (for figures spanning orders of magnitude).
    pub log_y: bool,
    /// Legend in the upper left corner (for rising curves) instead of the upper right.
    pub legend_left: bool,
    pub series: Vec<Series>,
}

/// `value` in the largest unit it reaches, without decimals when it is (nearly) whole.
fn in_units(value: f64, units: &[(f64, &str)]) -> Option<String> {
    let (scale, suffix) = units.iter().find(|(scale, _)| value >= *scale)?;
    let scaled = value / scale;
    Some(if (scaled - scaled.round()).abs() < 0.05 {
        format!("{}{suffix}", scaled.round())
    } else {
        format!("{scaled:.1}{suffix}")
    })
}

/// 1000 -> "1K", 16384 -> "16.4K", 1e6 -> "1M".
pub fn format_count(value: f64) -> String {
    in_units(value, &[(1e9, "G"), (1e6, "M"), (1e3, "K")])
        .unwrap_or_else(|| format!("{}", value.round()))
}

/// 16384 -> "16KiB", 1048576 -> "1MiB".
pub fn format_bytes(value: f64) -> String {
    let units = [
        (1_073_741_824.0, "GiB"),
        (1_048_576.0, "MiB"),
        (1024.0, "KiB"),
    ];
    in_units(value, &units).unwrap_or_else(|| format!("{}B", value.round()))
}

/// Decimal units (store sizes are given as 100 MB .. 5 GB).
pub fn format_decimal_bytes(value: f64) -> String {
    let text = format_count(value);
    match text.chars().last() {
        Some(unit @ ('K' | 'M' | 'G')) => format!("{} {unit}B", &text[..text.len() - 1]),
        _ => format!("{text} B"),
    }
}

pub fn format_seconds(value: f64) -> String {
    if value < 1.0 {
        format!("{:.0}ms", value * 1000.0)
    } else {
        format!("{value:.1}s")
    }
}

pub fn draw(chart: &Chart, file: &Path) -> Result<()> {
    let all: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|series| series.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let x_min = all.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_max = all.iter().map(|p| p.0).fold(0.0, f64::max);
    let y_max = all.iter().map(|p| p.1).fold(0.0, f64::max);
    if all.is_empty() || x_min <= 0.0 {
        return Err(anyhow!("{}: nothing to plot", chart.title));
    }
    let root = BitMapBackend::new(file, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    // the same drawing for a linear and a logarithmic y axis (different coordinate types)
    macro_rules! render {
        ($y_range:expr) => {{
            let mut builder = ChartBuilder::on(&root)
                .caption(chart.title, ("sans-serif", 24))
                .margin(16)
                .x_label_area_size(48)
                .y_label_area_size(84)
                .build_cartesian_2d((x_min / 1.5..x_max * 1.5).log_scale(), $y_range)
                .map_err(plot_error)?;
            builder
                .configure_mesh()
                .x_desc(chart.x_label)
                .y_desc(chart.y_label)
                .x_label_formatter(&|x| (chart.x_format)(*x))
                .y_label_formatter(&|y| (chart.y_format)(*y))
                .label_style(("sans-serif", 15))
                .axis_desc_style(("sans-serif", 17))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(plot_error)?;
            for series in &chart.series {
                let color = series.color;
                let points: Vec<(f64, f64)> = series
                    .points
                    .iter()
                    .copied()
                    .filter(|(_, y)| y.is_finite())
                    .collect();
                builder
                    .draw_series(
                        LineSeries::new(points.clone(), color.stroke_width(3)).point_size(5),
                    )
                    .map_err(plot_error)?
                    .label(series.label.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
                    });
                // the value beside each point, so the PNG alone gives the figures
                builder
                    .draw_series(points.iter().map(|&(x, y)| {
                        EmptyElement::at((x, y))
                            + Text::new(
                                (chart.y_format)(y),
                                (7, -19),
                                ("sans-serif", 14).into_font().color(&color),
                            )
                    }))
                    .map_err(plot_error)?;
            }
            builder
                .configure_series_labels()
                .position(if chart.legend_left {
                    SeriesLabelPosition::UpperLeft
                } else {
                    SeriesLabelPosition::UpperRight
                })
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 16))
                .draw()
                .map_err(plot_error)?;
        }};
    }
    if chart.log_y {
        let y_min = all
            .iter()
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min)
            .max(1e-9);
        render!((y_min / 2.0..y_max * 2.0).log_scale());
    } else {
        render!(0.0..(y_max * 1.18).max(1e-9));
    }
    root.present().map_err(plot_error)?;
    Ok(())
}

fn plot_error<E: std::fmt::Debug>(error: E) -> anyhow::Error {
    anyhow!("plotting: {error:?}")
}
