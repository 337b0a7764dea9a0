//! Charts of a bench report (`dshc bench --report-dir`): per fixture, each
//! implementation's median per step with its p10–p90 range, and the scaling
//! curve (the `scaling-N` fixtures) on log axes, one line per
//! implementation; a baseline report, when given, is drawn beside the run.
//!
//! Drawn with plotters' SVG backend alone: its text is SVG `<text>` laid out
//! by the viewer, so no font library or font file is needed. Each chart is a
//! `.svg` file and stands inline in the bench's `index.html`, which needs no
//! network. The charts are written from the JSON report alone, and the same
//! reports give the same bytes.

use std::fmt::Write as _;

use plotters::prelude::*;

use dshc_reference::bench::{BenchReport, StepStats, format_ns};

use super::html::escape;

/// One chart: its file name, its title, and the SVG document.
#[derive(Clone, Debug)]
pub struct Chart {
    /// `fixture-<id>.svg` or `scaling.svg`.
    pub file_name: String,
    /// What it shows.
    pub title: String,
    /// The SVG text.
    pub svg: String,
}

/// Drawing a chart failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the chart {chart}: {message}")]
pub struct ChartError {
    /// Which chart.
    pub chart: String,
    /// What plotters said.
    pub message: String,
}

const WIDTH_PX: u32 = 960;
const ROW_HEIGHT_PX: u32 = 38;
const SERIES_COLORS: [RGBColor; 6] = [
    RGBColor(9, 105, 218),
    RGBColor(207, 34, 46),
    RGBColor(26, 127, 55),
    RGBColor(130, 80, 223),
    RGBColor(191, 135, 0),
    RGBColor(87, 96, 106),
];
const BASELINE_COLOR: RGBColor = RGBColor(140, 149, 159);

fn color(index: usize) -> RGBColor {
    SERIES_COLORS[index % SERIES_COLORS.len()]
}

/// A label safe for an SVG file: control characters (which XML forbids) as
/// spaces. plotters escapes the markup characters itself.
fn label(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn drawing_error(chart: &str) -> impl Fn(String) -> ChartError + '_ {
    move |message| ChartError {
        chart: chart.to_owned(),
        message,
    }
}

/// One bar of a fixture's chart: who, and its figures when it was measured.
struct Row {
    label: String,
    stats: Option<StepStats>,
    color: RGBColor,
}

/// Every chart of a report: one per fixture, then the scaling curve when
/// the report has two or more `scaling-N` fixtures.
pub fn bench_charts(
    report: &BenchReport,
    baseline: Option<&BenchReport>,
) -> Result<Vec<Chart>, ChartError> {
    let mut charts = Vec::new();
    for fixture in &report.fixtures {
        let before = baseline.and_then(|b| b.fixtures.iter().find(|f| f.id == fixture.id));
        let mut rows = Vec::new();
        for (index, result) in fixture.results.iter().enumerate() {
            rows.push(Row {
                label: label(&result.implementation),
                stats: result.stats.clone(),
                color: color(index),
            });
            let earlier = before.and_then(|b| {
                b.results
                    .iter()
                    .find(|r| r.implementation == result.implementation)
            });
            if let Some(earlier) = earlier {
                rows.push(Row {
                    label: label(&format!("{} (baseline)", result.implementation)),
                    stats: earlier.stats.clone(),
                    color: BASELINE_COLOR,
                });
            }
        }
        let title = format!("{}: time per step, median and p10–p90", fixture.id);
        let file_name = format!("fixture-{}.svg", super::file_stem_for(&fixture.id));
        let svg = fixture_chart(&label(&title), &rows).map_err(drawing_error(&file_name))?;
        charts.push(Chart {
            file_name,
            title,
            svg,
        });
    }
    if scaling_points(report).len() >= 2 {
        let title = "Scaling: time per step against registrations (log axes)".to_owned();
        let svg = scaling_chart(&title, report, baseline).map_err(drawing_error("scaling.svg"))?;
        charts.push(Chart {
            file_name: "scaling.svg".into(),
            title,
            svg,
        });
    }
    Ok(charts)
}

/// Horizontal error bars, one row per implementation (and baseline).
fn fixture_chart(title: &str, rows: &[Row]) -> Result<String, String> {
    let mut svg = String::new();
    let rows_count = rows.len().max(1);
    let height = 110 + ROW_HEIGHT_PX * rows_count as u32;
    let widest = rows
        .iter()
        .map(|row| row.label.chars().count())
        .max()
        .unwrap_or(0);
    let label_area = (widest as u32 * 7 + 16).clamp(80, 420);
    let largest = rows
        .iter()
        .filter_map(|row| row.stats.as_ref().map(|stats| stats.p90_ns))
        .fold(1.0_f64, f64::max);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        // Row i sits at y = rows - 1 - i (the first on top), with a free
        // slot below and above.
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0.0..largest * 1.1, -1..rows_count as i32)
            .map_err(|e| e.to_string())?;
        let row_label = |y: &i32| {
            usize::try_from(*y)
                .ok()
                .and_then(|slot| rows_count.checked_sub(slot + 1))
                .and_then(|index| rows.get(index))
                .map(|row| row.label.clone())
                .unwrap_or_default()
        };
        let time_label = |ns: &f64| format_ns(*ns);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows_count + 2)
            .y_label_formatter(&row_label)
            .x_label_formatter(&time_label)
            .x_desc("time per step")
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(|e| e.to_string())?;
        for (index, row) in rows.iter().enumerate() {
            let key = (rows_count - 1 - index) as i32;
            let Some(stats) = &row.stats else {
                continue;
            };
            let style = row.color.stroke_width(2);
            chart
                .draw_series([ErrorBar::new_horizontal(
                    key,
                    stats.p10_ns,
                    stats.median_ns,
                    stats.p90_ns,
                    style,
                    12,
                )])
                .map_err(|e| e.to_string())?;
            chart
                .draw_series([Circle::new((stats.median_ns, key), 5, row.color.filled())])
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// `(registrations, implementation, stats)` of every `scaling-N` fixture.
fn scaling_points(report: &BenchReport) -> Vec<(f64, &str, &StepStats)> {
    let mut points = Vec::new();
    for fixture in &report.fixtures {
        let Some(size) = fixture
            .id
            .strip_prefix("scaling-")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        for result in &fixture.results {
            if let Some(stats) = &result.stats {
                points.push((f64::from(size), result.implementation.as_str(), stats));
            }
        }
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// The implementations of a report, in the order first measured.
fn implementations(report: &BenchReport) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for result in report.fixtures.iter().flat_map(|f| &f.results) {
        if !names.contains(&result.implementation) {
            names.push(result.implementation.clone());
        }
    }
    names
}

fn scaling_chart(
    title: &str,
    report: &BenchReport,
    baseline: Option<&BenchReport>,
) -> Result<String, String> {
    let points = scaling_points(report);
    let earlier = baseline.map(scaling_points).unwrap_or_default();
    let all = points.iter().chain(&earlier);
    let (mut low_size, mut high_size, mut low_ns, mut high_ns) =
        (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (size, _, stats) in all {
        low_size = low_size.min(*size);
        high_size = high_size.max(*size);
        low_ns = low_ns.min(stats.p10_ns.max(1.0));
        high_ns = high_ns.max(stats.p90_ns.max(1.0));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PX, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(
                (low_size * 0.8..high_size * 1.25).log_scale(),
                (low_ns * 0.7..high_ns * 1.4).log_scale(),
            )
            .map_err(|e| e.to_string())?;
        let time_label = |ns: &f64| format_ns(*ns);
        let size_label = |size: &f64| format!("{size:.0}");
        chart
            .configure_mesh()
            .x_desc("registrations (fixture scaling-N)")
            .y_desc("time per step")
            .x_label_formatter(&size_label)
            .y_label_formatter(&time_label)
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(|e| e.to_string())?;
        for (index, name) in implementations(report).iter().enumerate() {
            let mine: Vec<_> = points.iter().filter(|p| p.1 == name).collect();
            let style = color(index).stroke_width(2);
            chart
                .draw_series(LineSeries::new(
                    mine.iter().map(|(size, _, stats)| (*size, stats.median_ns)),
                    style,
                ))
                .map_err(|e| e.to_string())?
                .label(label(name))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
            chart
                .draw_series(mine.iter().map(|(size, _, stats)| {
                    ErrorBar::new_vertical(
                        *size,
                        stats.p10_ns,
                        stats.median_ns,
                        stats.p90_ns,
                        style,
                        10,
                    )
                }))
                .map_err(|e| e.to_string())?;
            let theirs: Vec<_> = earlier.iter().filter(|p| p.1 == name).collect();
            if !theirs.is_empty() {
                let dashed = color(index).mix(0.6).stroke_width(2);
                chart
                    .draw_series(DashedLineSeries::new(
                        theirs
                            .iter()
                            .map(|(size, _, stats)| (*size, stats.median_ns)),
                        6,
                        4,
                        dashed,
                    ))
                    .map_err(|e| e.to_string())?
                    .label(label(&format!("{name} (baseline)")))
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], dashed));
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The bench's page: a table of the figures, then every chart inline.
pub fn bench_page(report: &BenchReport, charts: &[Chart], baseline_given: bool) -> String {
    let mut page = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>dshc bench</title>\n<style>\
         body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1000px;padding:0 1.5em 4em;color:#1b1f24}\
         table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:.2em .5em;text-align:left}\
         th{background:#f6f8fa}figure{margin:1.5em 0}svg{max-width:100%;height:auto}\
         </style>\n</head>\n<body>\n<h1>dshc bench</h1>\n",
    );
    let _ = writeln!(
        page,
        "<p>{} batches of {} steps per fixture and implementation; a step is one assemble and \
         its rendering.{}</p>",
        report.batches,
        report.iterations,
        if baseline_given {
            " The baseline is drawn beside the run (grey bars, dashed lines)."
        } else {
            ""
        }
    );
    page.push_str("<table>\n<tr><th>Fixture</th><th>Implementation</th><th>Median</th><th>p10</th><th>p90</th></tr>\n");
    for fixture in &report.fixtures {
        for result in &fixture.results {
            let figures = match (&result.stats, &result.error) {
                (Some(stats), _) => format!(
                    "<td>{}</td><td>{}</td><td>{}</td>",
                    format_ns(stats.median_ns),
                    format_ns(stats.p10_ns),
                    format_ns(stats.p90_ns)
                ),
                (None, error) => format!(
                    "<td colspan=\"3\">not measured: {}</td>",
                    escape(error.as_deref().unwrap_or_default())
                ),
            };
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{}</td>{figures}</tr>",
                escape(&fixture.id),
                escape(&result.implementation)
            );
        }
    }
    page.push_str("</table>\n");
    for chart in charts {
        let _ = writeln!(
            page,
            "<figure id=\"{}\">\n{}\n<figcaption>{} (<a href=\"{}\">{}</a>)</figcaption>\n</figure>",
            escape(&chart.file_name),
            chart.svg.trim_end(),
            escape(&chart.title),
            escape(&chart.file_name),
            escape(&chart.file_name)
        );
    }
    page.push_str("</body>\n</html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use dshc_reference::bench::{FixtureResult, ImplementationResult};

    fn stats(median_ns: f64) -> StepStats {
        StepStats {
            median_ns,
            p10_ns: median_ns * 0.9,
            p90_ns: median_ns * 1.2,
            steps: 10,
            output_bytes: 5,
        }
    }

    fn report(names: &[&str], scale: f64) -> BenchReport {
        let fixtures = ["standard", "scaling-10", "scaling-100", "scaling-1000"]
            .iter()
            .enumerate()
            .map(|(index, id)| FixtureResult {
                id: (*id).into(),
                results: names
                    .iter()
                    .map(|name| ImplementationResult {
                        implementation: (*name).into(),
                        stats: Some(stats(scale * 1000.0 * (index + 1) as f64)),
                        error: None,
                        ratio: None,
                    })
                    .collect(),
            })
            .collect();
        BenchReport {
            iterations: 10,
            batches: 1,
            fixtures,
        }
    }

    #[test]
    fn every_fixture_and_the_scaling_curve_get_a_chart() {
        let names = ["ref 1", "<script>alert(1)</script>\u{7} 2"];
        let run = report(&names, 1.0);
        let charts = bench_charts(&run, None).unwrap();
        let files: Vec<&str> = charts.iter().map(|c| c.file_name.as_str()).collect();
        assert_eq!(
            files,
            [
                "fixture-standard.svg",
                "fixture-scaling-10.svg",
                "fixture-scaling-100.svg",
                "fixture-scaling-1000.svg",
                "scaling.svg"
            ]
        );
        for chart in &charts {
            assert!(chart.svg.starts_with("<svg"), "{}", chart.svg);
            assert!(chart.svg.trim_end().ends_with("</svg>"));
            assert!(!chart.svg.contains("<script"), "{}", chart.svg);
            assert!(
                !chart.svg.contains('\u{7}'),
                "XML forbids control characters"
            );
            assert!(!chart.svg.contains("(baseline)"), "no baseline was given");
        }
        assert!(
            charts[0].svg.contains("&lt;script&gt;"),
            "the name is drawn"
        );
        let page = bench_page(&run, &charts, false);
        assert!(!page.contains("<script"));
        assert_eq!(page.matches("<svg").count(), charts.len(), "inline");
        assert_eq!(
            page,
            bench_page(&run, &bench_charts(&run, None).unwrap(), false)
        );
    }

    #[test]
    fn the_baseline_stands_beside_the_run() {
        let run = report(&["ref 1"], 1.0);
        let baseline = report(&["ref 1"], 2.0);
        let charts = bench_charts(&run, Some(&baseline)).unwrap();
        for chart in &charts {
            assert!(
                chart.svg.contains("ref 1 (baseline)"),
                "{}",
                chart.file_name
            );
        }
        // One error bar per row: the run's and the baseline's.
        let plain = bench_charts(&run, None).unwrap();
        assert!(charts[0].svg.matches("<circle").count() > plain[0].svg.matches("<circle").count());
    }

    #[test]
    fn a_report_without_scaling_fixtures_has_no_curve() {
        let mut run = report(&["ref 1"], 1.0);
        run.fixtures.truncate(2);
        let charts = bench_charts(&run, None).unwrap();
        assert_eq!(charts.len(), 2);
        assert!(charts.iter().all(|c| c.file_name != "scaling.svg"));
    }
}
