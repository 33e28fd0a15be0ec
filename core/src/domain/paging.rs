//! Pages of a long table: which rows of a sorted list one page shows.
//!
//! The Node Pools table at 2,000 pools rendered (and hydrated) 2,000 rows of live cells, most
//! of the two seconds and more before `/` answered a click; a page of 100 rows reads the same
//! and the filters, sort and totals still cover every pool.

use std::ops::Range;

use super::numbers::thousands;

/// Rows per page a person can choose (`per=` in the URL).
pub const PAGE_SIZES: [usize; 6] = [10, 25, 50, 100, 250, 500];

/// Rows per page when the URL does not say.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// One page of `total` rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// 1-based number of the page shown: the one asked for, or the last page when the list
    /// became shorter than that (a filter, pools deleted).
    pub number: usize,
    /// How many pages `total` rows make; 1 for an empty list.
    pub count: usize,
    /// Indices into the sorted list of the rows on this page.
    pub rows: Range<usize>,
    /// Rows in the whole list.
    pub total: usize,
}

impl Page {
    /// Page `asked` (1-based; 0 reads as 1) of `total` rows at `per` rows per page (0 reads as
    /// [`DEFAULT_PAGE_SIZE`]).
    pub fn of(asked: usize, per: usize, total: usize) -> Self {
        let per = if per == 0 { DEFAULT_PAGE_SIZE } else { per };
        let count = total.div_ceil(per).max(1);
        let number = asked.clamp(1, count);
        let start = (number - 1) * per;
        Self {
            number,
            count,
            rows: start..(start + per).min(total),
            total,
        }
    }

    /// "101–200 of 2,000": the rows shown, 1-based, for a person.
    pub fn label(&self) -> String {
        if self.total == 0 {
            return "0 of 0".into();
        }
        format!(
            "{}–{} of {}",
            thousands(&(self.rows.start + 1).to_string()),
            thousands(&self.rows.end.to_string()),
            thousands(&self.total.to_string())
        )
    }
}

/// A page size from the URL: one of [`PAGE_SIZES`], else the default.
pub fn page_size(asked: Option<&str>) -> usize {
    asked
        .and_then(|s| s.parse().ok())
        .filter(|n| PAGE_SIZES.contains(n))
        .unwrap_or(DEFAULT_PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_the_list_once_and_the_last_is_short() {
        let pages: Vec<Page> = (1..=3).map(|n| Page::of(n, 100, 250)).collect();
        assert_eq!(pages[0].rows, 0..100);
        assert_eq!(pages[1].rows, 100..200);
        assert_eq!(pages[2].rows, 200..250);
        assert!(pages.iter().all(|p| p.count == 3 && p.total == 250));
        assert_eq!(pages[2].label(), "201–250 of 250");
        assert_eq!(Page::of(2, 100, 2000).label(), "101–200 of 2,000");
    }

    #[test]
    fn a_page_past_the_end_shows_the_last_and_page_zero_the_first() {
        let p = Page::of(9, 100, 250);
        assert_eq!((p.number, p.rows.clone()), (3, 200..250));
        assert_eq!(Page::of(0, 100, 250).number, 1);
        let empty = Page::of(4, 100, 0);
        assert_eq!(
            (empty.number, empty.count, empty.rows.clone()),
            (1, 1, 0..0)
        );
        assert_eq!(empty.label(), "0 of 0");
        assert_eq!(
            Page::of(1, 0, 150).rows,
            0..100,
            "per 0 reads as the default"
        );
    }

    #[test]
    fn only_offered_page_sizes_are_read_from_the_url() {
        assert_eq!(page_size(Some("25")), 25);
        assert_eq!(page_size(Some("7")), DEFAULT_PAGE_SIZE);
        assert_eq!(page_size(Some("many")), DEFAULT_PAGE_SIZE);
        assert_eq!(page_size(None), DEFAULT_PAGE_SIZE);
    }
}
