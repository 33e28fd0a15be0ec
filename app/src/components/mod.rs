//! Reusable pieces of the pages.

pub mod badges;
pub mod chart;
pub mod header;
pub mod time;
pub mod typed;
pub mod virtual_rows;
