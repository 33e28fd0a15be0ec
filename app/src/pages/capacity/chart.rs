//! The Capacity Finder's chart: score against node count, one line per zone (charming,
//! rendered in the browser by ECharts served from our own origin at `/vendor/echarts.min.js`).

use charming::{
    Chart,
    component::{Axis, Legend, Title},
    element::{AxisType, Tooltip, Trigger},
    series::Line,
};

use crate::model::FinderResult;

/// The chart's element id.
pub const CHART_ID: &str = "finder-chart";

/// The ECharts option for `result`'s curves: x is the node count, y the score (0–100).
pub fn score_chart(result: &FinderResult) -> Chart {
    let counts: Vec<String> = result
        .curves
        .first()
        .map(|(_, points)| points.iter().map(|(n, _)| n.to_string()).collect())
        .unwrap_or_default();
    let mut chart = Chart::new()
        .title(Title::new().text(format!(
            "Score against node count, {}",
            result.instance_type
        )))
        .tooltip(Tooltip::new().trigger(Trigger::Axis))
        .legend(Legend::new().top("bottom"))
        .x_axis(
            Axis::new()
                .type_(AxisType::Category)
                .name("nodes")
                .data(counts),
        )
        .y_axis(
            Axis::new()
                .type_(AxisType::Value)
                .name("score")
                .min(0)
                .max(100),
        );
    for (zone, points) in &result.curves {
        chart = chart.series(
            Line::new()
                .name(zone.clone())
                .data(points.iter().map(|(_, s)| *s).collect::<Vec<f64>>()),
        );
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_zone_over_the_counts() {
        let result = FinderResult {
            instance_type: "gd-8xa100-i128".into(),
            curves: vec![
                ("A".into(), vec![(1, 90.0), (8, 50.0)]),
                ("B".into(), vec![(1, 70.0), (8, 0.0)]),
            ],
            ..Default::default()
        };
        let json: serde_json::Value = serde_json::to_value(score_chart(&result)).unwrap();
        // One axis serializes as an object, several as an array.
        let x = match &json["xAxis"] {
            serde_json::Value::Array(a) => a[0].clone(),
            other => other.clone(),
        };
        assert_eq!(x["data"], serde_json::json!(["1", "8"]));
        assert_eq!(json["series"].as_array().unwrap().len(), 2);
        assert_eq!(json["series"][1]["name"], "B");
        assert_eq!(json["series"][1]["data"], serde_json::json!([70.0, 0.0]));
    }
}
