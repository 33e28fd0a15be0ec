//! Pure domain logic, unit-tested natively and used by both the server and the browser.

pub mod alerts;
pub mod allocation;
pub mod capacity;
pub mod conditions;
pub mod conditions_history;
pub mod cost;
pub mod departures;
pub mod fallback;
pub mod fleet;
pub mod form_text;
pub mod kueue;
pub mod manifest;
pub mod numbers;
pub mod paging;
pub mod pools_view;
pub mod preemption;
pub mod prices;
pub mod quantity;
pub mod savings;
pub mod selector;
pub mod showback;
pub mod survival;
pub mod text;
pub mod validation;
pub mod virtual_rows;
pub mod waiting;
