//! Which rows of a long list a page draws (a virtualised list): the rows inside the viewport
//! and a margin either side, with the height of the rows left out kept by two spacers so the
//! scroll bar and every drawn row stay where they would be if the whole list were drawn.
//!
//! Why: at 100k nodes a pool page's node table, the Node Pools table at 500 rows a page and a
//! wave's 2,000 preemption cards each put tens of thousands of elements in the page, and the
//! browser styled, laid out and kept every one of them (issue 40's S6: at most 2,000 elements
//! a page whatever the fleet's size).
//!
//! All lengths are CSS pixels. Heights come from the drawn rows, measured by the browser; a row
//! never drawn counts at an estimate, so the spacers are exact for rows already seen and close
//! for the rest.

use std::ops::Range;

/// Where the viewport is over the list, in CSS pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    /// From the list's top edge down to the viewport's top edge: negative while the list
    /// starts below the top of the viewport (the page above it is on screen).
    pub top: f64,
    /// The viewport's height.
    pub height: f64,
}

impl Viewport {
    /// What a page assumes before the browser has measured anything (the server's render and
    /// the first hydrated render, which must agree): the list's top at the viewport's top and
    /// a tall screen (1,440 px), so a page that is never measured still shows its first rows.
    pub const INITIAL: Self = Self {
        top: 0.0,
        height: 1440.0,
    };
}

/// The rows to draw and the space that stands in for the others.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// Indices of the rows to draw, in list order.
    pub rows: Range<usize>,
    /// Height of the rows before `rows` (the top spacer), CSS pixels.
    pub before: f64,
    /// Height of the rows after `rows` (the bottom spacer), CSS pixels.
    pub after: f64,
}

/// The rows of a list whose row heights are `heights` (CSS pixels, in list order) that fall
/// within `viewport` widened by `margin` pixels each side.
///
/// A row is drawn when any part of it is inside the widened viewport. A viewport wholly above
/// or below the list draws no row (an empty range at the list's start or end), and the
/// spacers then add up to the whole list. Negative or non-finite heights count as 0.
pub fn drawn(heights: impl IntoIterator<Item = f64>, viewport: Viewport, margin: f64) -> Drawn {
    let from = viewport.top - margin;
    let to = viewport.top + viewport.height + margin;
    let (mut start, mut end, mut count) = (None, 0, 0);
    let (mut before, mut inside, mut total) = (0.0, 0.0, 0.0);
    for (i, h) in heights.into_iter().enumerate() {
        let h = if h.is_finite() { h.max(0.0) } else { 0.0 };
        let (top, bottom) = (total, total + h);
        total = bottom;
        count = i + 1;
        if bottom <= from {
            before = bottom;
        } else if top < to {
            start.get_or_insert(i);
            end = i + 1;
            inside += h;
        } else if start.is_none() {
            // The viewport ends above this row and every row before it ended above the
            // viewport: nothing is drawn, and the empty range sits here.
            start = Some(i);
            end = i;
        }
    }
    // No row reached the viewport's top: it is below the whole list.
    let rows = match start {
        Some(start) => start..end,
        None => count..count,
    };
    Drawn {
        rows,
        before,
        after: (total - before - inside).max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(top: f64, height: f64) -> Viewport {
        Viewport { top, height }
    }

    #[test]
    fn the_viewport_and_its_margins_draw_the_rows_they_touch() {
        // Ten rows of 30 px (0..300). The viewport shows 95..155, widened by 20 to 75..175:
        // rows 2 (60..90) to 5 (150..180) touch it. Worked by hand: 2 rows (60 px) before,
        // 4 rows (120 px) after.
        let d = drawn([30.0; 10], at(95.0, 60.0), 20.0);
        assert_eq!(d.rows, 2..6);
        assert_eq!(d.before, 60.0);
        assert_eq!(d.after, 120.0);
    }

    #[test]
    fn a_row_that_only_meets_the_edge_is_not_drawn() {
        // Row 1 ends at 60, exactly where the viewport starts; row 4 starts at 120, where it ends.
        let d = drawn([30.0; 10], at(60.0, 60.0), 0.0);
        assert_eq!(d.rows, 2..4);
        assert_eq!(d.before + d.after + 60.0, 300.0);
    }

    #[test]
    fn rows_of_different_heights_are_placed_by_their_own_heights() {
        // Cards of 240, 100, 400, 240 px: tops at 0, 240, 340, 740. A viewport at 300..500
        // meets the second (240..340) and the third (340..740).
        let d = drawn([240.0, 100.0, 400.0, 240.0], at(300.0, 200.0), 0.0);
        assert_eq!(d.rows, 1..3);
        assert_eq!(d.before, 240.0);
        assert_eq!(d.after, 240.0);
    }

    #[test]
    fn a_list_below_the_viewport_draws_nothing_until_it_comes_near() {
        // The page above the list fills the screen: the list starts 1,000 px below the top.
        let d = drawn([30.0; 10], at(-1000.0, 800.0), 100.0);
        assert_eq!(d.rows, 0..0);
        assert_eq!((d.before, d.after), (0.0, 300.0));
        // Within the margin, its first rows are drawn.
        let d = drawn([30.0; 10], at(-850.0, 800.0), 100.0);
        assert_eq!(d.rows, 0..2);
    }

    #[test]
    fn a_viewport_past_the_list_draws_nothing_and_keeps_its_height() {
        let d = drawn([30.0; 10], at(1000.0, 500.0), 100.0);
        assert_eq!(d.rows, 10..10);
        assert_eq!((d.before, d.after), (300.0, 0.0));
    }

    #[test]
    fn an_empty_list_and_odd_heights_give_an_empty_range() {
        let d = drawn(std::iter::empty(), Viewport::INITIAL, 200.0);
        assert_eq!(
            d,
            Drawn {
                rows: 0..0,
                before: 0.0,
                after: 0.0
            }
        );
        // A NaN or negative height (a row the browser could not measure) takes no room: the
        // 30 px row after two of them starts at the list's top.
        let d = drawn([f64::NAN, -5.0, 30.0], at(0.0, 10.0), 0.0);
        assert_eq!(d.rows, 2..3);
        assert_eq!((d.before, d.after), (0.0, 0.0));
    }

    #[test]
    fn the_spacers_and_drawn_rows_always_add_up_to_the_list() {
        // Every viewport position over a list of mixed heights: the drawn rows are the ones
        // that overlap it, counted directly, and the three parts add up to the whole.
        let heights: Vec<f64> = (0..50).map(|i| 20.0 + f64::from(i % 7) * 13.0).collect();
        let total: f64 = heights.iter().sum();
        for top in (-600..(total as i32 + 600)).step_by(17) {
            let v = at(f64::from(top), 333.0);
            let d = drawn(heights.iter().copied(), v, 50.0);
            let (from, to) = (v.top - 50.0, v.top + v.height + 50.0);
            let mut y = 0.0;
            let overlapping: Vec<usize> = heights
                .iter()
                .enumerate()
                .filter_map(|(i, h)| {
                    let (a, b) = (y, y + h);
                    y = b;
                    (b > from && a < to).then_some(i)
                })
                .collect();
            if let (Some(first), Some(last)) = (overlapping.first(), overlapping.last()) {
                assert_eq!(d.rows, *first..last + 1, "at {top}");
            } else {
                assert!(d.rows.is_empty(), "at {top}");
            }
            let inside: f64 = heights[d.rows.clone()].iter().sum();
            assert!(
                (d.before + inside + d.after - total).abs() < 1e-6,
                "at {top}"
            );
            let above: f64 = heights[..d.rows.start].iter().sum();
            assert!((d.before - above).abs() < 1e-6, "at {top}");
        }
    }
}
