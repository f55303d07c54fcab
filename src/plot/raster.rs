//! PNG drawing backend: plotters' bitmap backend with our own glyph placement for text.
//!
//! plotters 0.3.7 positions ab_glyph glyphs at whole pixels and ignores each glyph's left side
//! bearing, which makes small text look unevenly spaced. This wrapper delegates all shapes to
//! `BitMapBackend` and rasterises text itself with sub-pixel glyph positions, using the same
//! text-box metrics as plotters (width = advances + kerning, height = size / 1.24) so layout
//! matches the SVG output.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont, point};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// The bitmap backend's error type (not re-exported by plotters under a name).
type BitmapError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

/// Bitmap backend with crisp text; see the module docs.
pub(crate) struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

impl<'a> PngBackend<'a> {
    /// Draws into an RGB8 buffer of `w * h * 3` bytes.
    pub(crate) fn new(buf: &'a mut [u8], size: (u32, u32), font: FontRef<'static>) -> Self {
        PngBackend {
            inner: BitMapBackend::with_buffer(buf, size),
            font,
        }
    }

    /// Width (sum of advances and kerning) in pixels, matching plotters' ab_glyph layout.
    fn text_width(&self, text: &str, size: f32) -> f32 {
        let font = self.font.as_scaled(PxScale::from(size));
        let mut width = 0.0;
        let mut prev = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                width += font.kern(p, id);
            }
            width += font.h_advance(id);
            prev = Some(id);
        }
        width
    }
}

type Res = Result<(), DrawingErrorKind<BitmapError>>;

impl DrawingBackend for PngBackend<'_> {
    type ErrorType = BitmapError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Res {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Res {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Res {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Res {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Res {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Res {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let size = style.size() as f32;
        Ok((self.text_width(text, size) as u32, (size / 1.24) as u32))
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Res {
        let color = style.color();
        let size = style.size() as f32;
        if color.alpha == 0.0 || size.is_nan() || size <= 0.0 || text.is_empty() {
            return Ok(());
        }
        let scale = PxScale::from(size);
        let font = self.font.as_scaled(scale);

        // Text box in local (unrotated) coordinates, anchored like plotters does it.
        let width = self.text_width(text, size);
        let height = size / 1.24;
        let x0 = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -width / 2.0,
            HPos::Right => -width,
        };
        let top = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -height / 2.0,
            VPos::Bottom => -height,
        };
        // Capital letters are centred in the box.
        let cap = self
            .font
            .outline_glyph(font.scaled_glyph('H'))
            .map(|g| -g.px_bounds().min.y)
            .unwrap_or(size * 0.63);
        let baseline = top + (height + cap) / 2.0;

        let trans = style.transform();
        let mut caret = x0;
        let mut prev = None;
        let mut result: Res = Ok(());
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                caret += font.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(scale, point(caret, baseline));
            caret += font.h_advance(id);
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            let inner = &mut self.inner;
            outline.draw(|gx, gy, coverage| {
                if result.is_err() || coverage <= 0.0 {
                    return;
                }
                let lx = b.min.x as i32 + gx as i32;
                let ly = b.min.y as i32 + gy as i32;
                let (tx, ty) = trans.transform(lx, ly);
                let px = BackendColor {
                    alpha: color.alpha * f64::from(coverage.min(1.0)),
                    rgb: color.rgb,
                };
                result = inner.draw_pixel((pos.0 + tx, pos.1 + ty), px);
            });
            if result.is_err() {
                break;
            }
        }
        result
    }
}
