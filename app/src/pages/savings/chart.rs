//! The savings chart: actual cost against the on-demand baseline per time bucket.

use charming::{
    Chart,
    component::{Axis, Legend, Title},
    element::{AxisType, Tooltip, Trigger},
    series::{Bar, Line},
};

use crate::model::SavingsReport;

/// The chart's element id.
pub const CHART_ID: &str = "savings-chart";

fn f(d: rust_decimal::Decimal) -> f64 {
    d.to_string().parse().unwrap_or(0.0)
}

/// Bars of actual USD and a line of the on-demand baseline per bucket.
pub fn cost_chart(r: &SavingsReport) -> Chart {
    let labels: Vec<String> = r
        .series
        .iter()
        .map(|b| crate::components::time::axis_label(b.start))
        .collect();
    Chart::new()
        .title(Title::new().text("Cost over time, USD"))
        .tooltip(Tooltip::new().trigger(Trigger::Axis))
        .legend(Legend::new().top("bottom"))
        .x_axis(Axis::new().type_(AxisType::Category).data(labels))
        .y_axis(Axis::new().type_(AxisType::Value).name("USD"))
        .series(
            Bar::new().name("actual").data(
                r.series
                    .iter()
                    .map(|b| f(b.actual_usd))
                    .collect::<Vec<f64>>(),
            ),
        )
        .series(
            Line::new().name("on-demand baseline").data(
                r.series
                    .iter()
                    .map(|b| f(b.baseline_usd))
                    .collect::<Vec<f64>>(),
            ),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CostBucket;
    use rust_decimal_macros::dec;

    #[test]
    fn two_series_over_the_buckets() {
        let r = SavingsReport {
            series: vec![CostBucket {
                start: chrono::DateTime::UNIX_EPOCH,
                actual_usd: dec!(9.65),
                baseline_usd: dec!(21.60),
            }],
            ..Default::default()
        };
        let json = serde_json::to_value(cost_chart(&r)).unwrap();
        assert_eq!(json["series"][0]["data"], serde_json::json!([9.65]));
        assert_eq!(json["series"][1]["data"], serde_json::json!([21.6]));
    }
}
