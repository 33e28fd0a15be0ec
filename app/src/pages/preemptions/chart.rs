//! The preemptions timeline (charming): a row per preempted node, its phases as stacked bars
//! in seconds since the earliest T=0 on the page, and a "now" line.

use charming::{
    Chart,
    component::{Axis, Legend, Title},
    element::{AxisType, ItemStyle, MarkLine, MarkLineData, MarkLineVariant, Tooltip, Trigger},
    series::Bar,
};
use chrono::{DateTime, Utc};

use crate::model::PreemptionView;

/// The chart's element id.
pub const CHART_ID: &str = "preemption-chart";

/// Nodes charted at most: the first in page order (active first, oldest T=0 first). A chart
/// of a 2,000-node wave has rows a pixel high and takes the tab a second to draw; the cards
/// below list every node.
pub const CHART_NODES: usize = 100;

/// The timeline of `nodes` as of `now`; `of` is how many nodes the page lists, which the
/// title names when the chart shows fewer.
pub fn timeline_chart(nodes: &[PreemptionView], of: usize, now: DateTime<Utc>) -> Chart {
    let base = nodes.iter().map(|v| v.timeline.t0).min().unwrap_or(now);
    let secs = |t: DateTime<Utc>| (t - base).num_milliseconds() as f64 / 1000.0;
    let names: Vec<String> = nodes.iter().map(|v| v.node.clone()).collect();
    // Phase names in first-seen order across providers; "removed" is a point, not a span.
    let mut phases: Vec<String> = Vec::new();
    for v in nodes {
        for p in &v.timeline.phases[..v.timeline.phases.len() - 1] {
            if !phases.contains(&p.name) {
                phases.push(p.name.clone());
            }
        }
    }
    let mut chart = Chart::new()
        .title(Title::new().text(if of > nodes.len() {
            format!(
                "Notice windows of the first {} of {of} nodes below, seconds since the first T=0",
                nodes.len()
            )
        } else {
            "Notice windows, seconds since the first T=0".to_string()
        }))
        .tooltip(Tooltip::new().trigger(Trigger::Axis))
        .legend(Legend::new().top("bottom"))
        .x_axis(Axis::new().type_(AxisType::Value).name("s"))
        .y_axis(Axis::new().type_(AxisType::Category).data(names))
        .series(
            Bar::new()
                .name("before T=0")
                .stack("t")
                .item_style(ItemStyle::new().color("transparent"))
                .data(
                    nodes
                        .iter()
                        .map(|v| secs(v.timeline.t0))
                        .collect::<Vec<f64>>(),
                )
                .mark_line(MarkLine::new().data(vec![MarkLineVariant::Simple(
                    MarkLineData::new().name("now").x_axis(secs(now)),
                )])),
        );
    for name in &phases {
        let spans: Vec<f64> = nodes
            .iter()
            .map(|v| {
                let ps = &v.timeline.phases;
                ps.iter()
                    .position(|p| &p.name == name)
                    .filter(|&i| i + 1 < ps.len())
                    .map(|i| {
                        let start = ps[i].observed.unwrap_or(ps[i].planned);
                        let end = ps[i + 1].observed.unwrap_or(ps[i + 1].planned);
                        (end - start).num_milliseconds().max(0) as f64 / 1000.0
                    })
                    .unwrap_or(0.0)
            })
            .collect();
        chart = chart.series(Bar::new().name(name.clone()).stack("t").data(spans));
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::preemption::timeline::{Observation, derive};
    use chrono::{Duration, TimeZone};
    use spotboard_core::Provider;

    #[test]
    fn one_row_per_node_with_stacked_phases_and_now() {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap();
        let view = |node: &str, provider, at: i64| PreemptionView {
            cluster: "c".into(),
            node: node.into(),
            uid: node.into(),
            pool: None,
            zone: None,
            instance_type: None,
            capacity_type: spotboard_core::CapacityType::Spot,
            timeline: derive(
                provider,
                &[Observation {
                    at: t0 + Duration::seconds(at),
                    notice: true,
                    draining: false,
                    gone: false,
                }],
            )
            .unwrap(),
            pods: None,
            pods_error: None,
            evictions: Vec::new(),
            drill: false,
        };
        let nodes = [view("a", Provider::Cks, 0), view("b", Provider::Gke, 60)];
        let json =
            serde_json::to_value(timeline_chart(&nodes, 2, t0 + Duration::seconds(200))).unwrap();
        let series = json["series"].as_array().unwrap();
        assert_eq!(
            series[0]["data"],
            serde_json::json!([0.0, 60.0]),
            "offsets from the first T=0"
        );
        assert_eq!(series[0]["markLine"]["data"][0]["xAxis"], 200.0);
        assert_eq!(
            json["title"][0]["text"],
            "Notice windows, seconds since the first T=0"
        );
        let part = serde_json::to_value(timeline_chart(&nodes[..1], 2, t0)).unwrap();
        assert_eq!(
            part["title"][0]["text"],
            "Notice windows of the first 1 of 2 nodes below, seconds since the first T=0"
        );
        let by_name = |n: &str| series.iter().find(|s| s["name"] == n).unwrap()["data"].clone();
        // CKS: notice 120 s, draining 300 s; GKE rows have none of those.
        assert_eq!(by_name("notice"), serde_json::json!([120.0, 0.0]));
        assert_eq!(by_name("draining"), serde_json::json!([300.0, 0.0]));
        assert_eq!(
            by_name("shutting down pods"),
            serde_json::json!([0.0, 15.0])
        );
    }
}
