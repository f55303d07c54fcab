//! A chart's plot area: its axes, label areas and grid (`plot`), with the
//! rotated and spaced x labels.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::axis::{Axis, fmt_tick};
use super::error::DResult;

use super::theme::*;

/// Standard mesh styling for a chart whose axes are `Axis` values. How the x axis is
/// labelled (ticks, category names, nothing) is the [`PlotLayout`]'s `x_labels`.
#[derive(Clone, Copy)]
pub(crate) struct MeshOpts<'a> {
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// Number of numeric x ticks (a category axis has one per category).
    pub x_labels: usize,
    pub y_labels: usize,
    /// Vertical grid lines on a numeric x axis (a category axis has none).
    pub x_grid: bool,
    pub y_grid: bool,
}

impl Default for MeshOpts<'_> {
    fn default() -> Self {
        MeshOpts {
            x_desc: "",
            y_desc: "",
            x_labels: 10,
            y_labels: 8,
            x_grid: true,
            y_grid: true,
        }
    }
}

/// What the x axis shows under a plot.
#[derive(Debug, Clone, Copy)]
pub(crate) enum XLabels<'a> {
    /// Nothing, and no room is kept for it (a panel stacked above another on the same axis).
    Hidden,
    /// Numeric tick labels and the axis title.
    Ticks,
    /// One name per category, rotated to read bottom-to-top when they do not fit side by side.
    Names(&'a [String]),
}

/// Where a plot sits in its area: the margins around it and the label areas beside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlotLayout<'a> {
    pub margin_top: u32,
    pub margin_right: u32,
    /// Width of the y label area, see [`y_area_width`].
    pub y_area: u32,
    pub x_labels: XLabels<'a>,
}

impl<'a> PlotLayout<'a> {
    /// The layout of a chart with one plot under its frame: a little room at the top and more
    /// on the right, where the last x tick label overhangs the plot.
    pub(crate) fn single(theme: &Theme, y_area: u32, x_labels: XLabels<'a>) -> Self {
        PlotLayout {
            margin_top: theme.upx(6.0),
            margin_right: theme.upx(14.0),
            y_area,
            x_labels,
        }
    }
}

/// A chart's coordinate system on `f64` axes.
pub(crate) type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<Axis, Axis>>;

/// Builds the coordinate system of a plot on `area` as `layout` says, draws its axes, tick
/// labels, axis titles and grid, and returns it with the height of its x label area.
pub(crate) fn plot<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    theme: &Theme,
    layout: &PlotLayout,
    (x, y): (Axis, Axis),
    mesh: MeshOpts,
) -> DResult<(Plot<'a, DB>, u32)> {
    let (names, rotate, x_area) = match layout.x_labels {
        XLabels::Hidden => (None, false, 0),
        XLabels::Ticks => (None, false, x_area_height(area, theme)),
        XLabels::Names(names) => {
            let plot_w =
                area.dim_in_pixel().0 as i32 - layout.y_area as i32 - layout.margin_right as i32;
            let (rotate, x_area) = x_label_layout(area, theme, names, plot_w);
            (Some(names), rotate, x_area)
        }
    };
    let mut chart = ChartBuilder::on(area)
        .margin_top(layout.margin_top)
        .margin_right(layout.margin_right)
        .x_label_area_size(x_area)
        .y_label_area_size(layout.y_area)
        .build_cartesian_2d(x, y)?;
    let show_x_labels = match layout.x_labels {
        XLabels::Hidden => false,
        XLabels::Ticks => true,
        XLabels::Names(_) => !rotate,
    };
    let mesh = MeshOpts {
        x_labels: names.map_or(mesh.x_labels, <[String]>::len),
        x_grid: mesh.x_grid && names.is_none(),
        ..mesh
    };
    draw_mesh(&mut chart, theme, &mesh, show_x_labels)?;
    if let (true, Some(names)) = (rotate, names) {
        draw_rotated_x_labels(&chart, theme, names)?;
    }
    Ok((chart, x_area))
}

/// Draws axes, ticks, tick labels, axis titles and grid with the shared look.
fn draw_mesh<DB: DrawingBackend>(
    chart: &mut Plot<DB>,
    theme: &Theme,
    opts: &MeshOpts,
    show_x_labels: bool,
) -> DResult {
    let x_label = text(theme.label, TEXT, HPos::Center, VPos::Top);
    let y_label = text(theme.label, TEXT, HPos::Right, VPos::Center);
    let desc = text(theme.axis_desc, TEXT, HPos::Center, VPos::Top);
    let no_label = |_: &f64| String::new();

    let mut mesh = chart.configure_mesh();
    mesh.x_labels(opts.x_labels)
        .y_labels(opts.y_labels)
        .x_label_style(x_label)
        .y_label_style(y_label)
        .axis_desc_style(desc)
        .axis_style(AXIS.stroke_width(1))
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(WHITE.mix(0.0))
        .max_light_lines(0)
        .set_all_tick_mark_size(theme.upx(5.0));
    if !opts.x_desc.is_empty() {
        mesh.x_desc(opts.x_desc);
    }
    if !opts.y_desc.is_empty() {
        mesh.y_desc(opts.y_desc);
    }
    if !show_x_labels {
        mesh.x_label_formatter(&no_label);
    }
    if !opts.x_grid {
        mesh.disable_x_mesh();
    }
    if !opts.y_grid {
        mesh.disable_y_mesh();
    }
    mesh.draw()?;
    Ok(())
}

/// Draws category names under the x axis rotated to read bottom-to-top (for long names),
/// one per category centre, in place of the mesh's x labels.
fn draw_rotated_x_labels<DB: DrawingBackend>(
    chart: &Plot<DB>,
    theme: &Theme,
    names: &[String],
) -> DResult {
    let area = chart.plotting_area();
    let y_min = area.get_y_range().start;
    let (_, h) = area.dim_in_pixel();
    let base = area.get_base_pixel();
    let flat = area.strip_coord_spec();
    let style = text_up(theme.label, TEXT, HPos::Right, VPos::Center);
    // Skip names when there are more categories than rotated lines of text fit.
    let line_h = text_size(&flat, "Ag", &text(theme.label, TEXT, HPos::Left, VPos::Top)).1;
    let slot = area.map_coordinate(&(1.0, y_min)).0 - area.map_coordinate(&(0.0, y_min)).0;
    let step = ((line_h as i32 + 2) / slot.max(1) + 1).max(1) as usize;
    for (i, name) in names.iter().enumerate().step_by(step) {
        let (px, _) = area.map_coordinate(&(i as f64, y_min));
        flat.draw_text(name, &style, (px - base.0, h as i32 + theme.px(10.0)))?;
    }
    Ok(())
}

/// Decides whether category names on the x axis must be rotated to fit `plot_w` pixels and
/// returns `(rotate, label_area_height)` including room for the axis title.
fn x_label_layout<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
    names: &[String],
    plot_w: i32,
) -> (bool, u32) {
    let style = text(theme.label, TEXT, HPos::Center, VPos::Top);
    let line_h = line_height(area, theme.label);
    let desc_h = line_height(area, theme.axis_desc);
    let max_w = names
        .iter()
        .map(|n| text_size(area, n, &style).0)
        .max()
        .unwrap_or(0);
    let slot = plot_w / names.len().max(1) as i32;
    let rotate = max_w as i32 + theme.px(10.0) > slot;
    let labels_h = if rotate { max_w } else { line_h };
    (rotate, labels_h + desc_h + theme.upx(26.0))
}

/// Height in pixels of a line of text of font size `size`.
pub(crate) fn line_height<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, size: f64) -> u32 {
    text_size(area, "Ag", &text(size, TEXT, HPos::Center, VPos::Top)).1
}

/// Height of the x label area for numeric tick labels plus an axis title.
pub(crate) fn x_area_height<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
) -> u32 {
    line_height(area, theme.label) + line_height(area, theme.axis_desc) + theme.upx(26.0)
}

/// Width of the y label area for the widest of `labels` plus a rotated axis title.
pub(crate) fn y_area_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
    labels: &[String],
) -> u32 {
    let style = text(theme.label, TEXT, HPos::Right, VPos::Center);
    let max_w = labels
        .iter()
        .map(|l| text_size(area, l, &style).0)
        .max()
        .unwrap_or(0);
    max_w + line_height(area, theme.axis_desc) + theme.upx(28.0)
}

/// Width of the y label area for a numeric y axis over `range`: room for its end values
/// and for a tick label like `0.000`.
pub(crate) fn num_y_area_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    theme: &Theme,
    range: &Range<f64>,
) -> u32 {
    let labels = [fmt_tick(range.start), fmt_tick(range.end), "0.000".into()];
    y_area_width(area, theme, &labels)
}
