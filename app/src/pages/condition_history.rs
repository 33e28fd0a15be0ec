//! A pool page's condition history, from the ledger: a timeline with one lane per condition
//! (charming), how long each condition held each status and reason over 24 h / 7 d / 30 d,
//! and its transitions (CoreWeave: Node Pool reference, "Node Pool Conditions"). History, not
//! live: read once per range chosen.

use charming::{
    Chart,
    component::{Axis, Grid},
    datatype::{DataPoint, DataPointItem},
    element::{AxisType, ItemStyle, Tooltip, Trigger},
    series::Bar,
};
use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::components::time::stamp;
use crate::domain::conditions::severity;
use crate::model::{ConditionHistory, ConditionTransition, Severity};
use crate::savings_api::load_condition_history;

/// The timeline's element id.
pub const CHART_ID: &str = "condition-timeline";

/// Lane colours by severity, readable on light and dark backgrounds.
fn colour(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "#3a9d5d",
        Severity::Progressing => "#4b7bec",
        Severity::Warning => "#e0a526",
        Severity::Error => "#d64545",
        Severity::Unknown => "#8a94a0",
    }
}

/// One state of one condition on the timeline.
struct Segment {
    hours: f64,
    /// `status (reason)`, shown on hover.
    label: String,
    severity: Severity,
}

/// The timeline of `transitions` over `[from, to]`: one lane per condition type, each state a
/// segment in hours since `from`, coloured by severity, named "status (reason)" for the
/// tooltip. Segments are stacked bars, the k-th series holding every lane's k-th segment.
pub fn timeline_chart(
    transitions: &[ConditionTransition],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Chart {
    let hours = |a: DateTime<Utc>, b: DateTime<Utc>| (b - a).num_seconds().max(0) as f64 / 3600.0;
    // Lanes in the order their conditions were first seen; each lane's segments in time order.
    let mut lanes: Vec<(String, DateTime<Utc>, Vec<Segment>)> = Vec::new();
    for (t, start, end) in crate::domain::conditions_history::held(transitions, from, to) {
        if lanes
            .last()
            .is_none_or(|(name, _, _)| name != t.type_.as_str())
        {
            lanes.push((t.type_.as_str().to_string(), t.since, Vec::new()));
        }
        let segments = &mut lanes.last_mut().expect("pushed above").2;
        // A lane that starts after `from` (first seen later) begins with an empty gap.
        let filled: f64 = segments.iter().map(|s| s.hours).sum();
        let gap = hours(from, start) - filled;
        if gap > 0.0 {
            segments.push(Segment {
                hours: gap,
                label: "not recorded".into(),
                severity: Severity::Unknown,
            });
        }
        segments.push(Segment {
            hours: hours(start, end),
            label: format!("{} ({})", t.status, t.reason),
            severity: severity(t.type_.as_str(), &t.status, &t.reason),
        });
    }
    lanes.sort_by_key(|(_, first, _)| *first);
    let depth = lanes.iter().map(|(_, _, s)| s.len()).max().unwrap_or(0);
    let mut chart = Chart::new()
        .tooltip(Tooltip::new().trigger(Trigger::Item))
        .grid(Grid::new().left("190").right("20"))
        .x_axis(
            Axis::new()
                .type_(AxisType::Value)
                .name("h")
                .max(hours(from, to)),
        )
        .y_axis(
            Axis::new()
                .type_(AxisType::Category)
                .data(lanes.iter().map(|(n, _, _)| n.clone()).collect()),
        );
    for k in 0..depth {
        let data: Vec<DataPoint> = lanes
            .iter()
            .map(|(_, _, segs)| match segs.get(k) {
                Some(seg) => DataPoint::Item(
                    DataPointItem::new(seg.hours)
                        .name(seg.label.clone())
                        .item_style(ItemStyle::new().color(colour(seg.severity))),
                ),
                None => DataPoint::Item(DataPointItem::new(0.0)),
            })
            .collect();
        chart = chart.series(Bar::new().stack("lane").bar_width(14).data(data));
    }
    chart
}

const RANGES: [&str; 3] = ["24h", "7d", "30d"];

/// `3 h 12 min`, `45 s`: a span's length, to the minute above an hour.
pub fn span_text(seconds: i64) -> String {
    let (d, h, m) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

#[component]
pub fn ConditionHistorySection(cluster: String, pool: String) -> impl IntoView {
    let range = RwSignal::new("7d".to_string());
    let history = Resource::new(
        move || (cluster.clone(), pool.clone(), range.get()),
        |(c, p, r)| load_condition_history(c, p, r),
    );
    crate::components::chart::dispose_on_unmount(CHART_ID);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(Ok(h)) = history.get()
            && let (Some(from), Some(to)) = (h.from, h.to)
            && !h.transitions.is_empty()
        {
            crate::components::chart::draw(CHART_ID, timeline_chart(&h.transitions, from, to));
        }
    });
    view! {
        <section class="condition-history" data-testid="condition-history">
            <h2>"Condition history"</h2>
            <label>"Over "
                <select name="history-range" on:change=move |ev| range.set(event_target_value(&ev))>
                    {RANGES.map(|r| view! { <option value=r selected=r == "7d">{r}</option> })}
                </select>
            </label>
            <Suspense fallback=|| view! { <p class="loading" role="status">"Reading the ledger…"</p> }>
                {move || history.get().map(|h| match h {
                    Err(e) => view! { <p class="error" role="alert">"Could not read the condition history: " {e.to_string()}</p> }.into_any(),
                    Ok(h) if h.transitions.is_empty() => view! { <p class="empty">"No condition recorded in this range."</p> }.into_any(),
                    Ok(h) => tables(h).into_any(),
                })}
            </Suspense>
        </section>
    }
}

fn tables(h: ConditionHistory) -> impl IntoView {
    view! {
        <div id=CHART_ID class="chart" role="img" aria-label="Each condition's states over the range, coloured by severity"></div>
        <div class="table-wrap" tabindex="0" role="region" aria-label="Time in each condition">
            <table class="condition-spans">
                <thead><tr>
                    <th scope="col">"Condition"</th><th scope="col">"Status"</th>
                    <th scope="col">"Reason"</th><th scope="col">"For"</th><th scope="col">"Entered"</th>
                </tr></thead>
                <tbody>
                    {h.spans.into_iter().map(|s| view! {
                        <tr data-condition=s.type_.as_str().to_string() data-reason=s.reason.clone()>
                            <th scope="row">{s.type_.as_str().to_string()}</th>
                            <td>{s.status}</td>
                            <td>{s.reason.clone()}</td>
                            <td class="num">{span_text(s.seconds)}</td>
                            <td class="num">{s.entered}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        <details class="transitions">
            <summary>{format!("{} transitions", h.transitions.len())}</summary>
            <ul>
                {h.transitions.into_iter().map(|t| view! {
                    <li>
                        {stamp(Some(t.since))} " · " <strong>{t.type_.as_str().to_string()}</strong>
                        {format!(" {} ({})", t.status, t.reason)}
                        {(!t.message.is_empty()).then(|| view! { <span class="muted">{format!(": {}", t.message)}</span> })}
                    </li>
                }).collect_view()}
            </ul>
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodepool::ConditionType;
    use chrono::{Duration, TimeZone};

    #[test]
    fn one_lane_per_condition_with_segments_in_hours_coloured_by_severity() {
        let from = Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap();
        let at = |h: i64| from + Duration::hours(h);
        let t = |type_: ConditionType, status: &str, reason: &str, h: i64| ConditionTransition {
            type_,
            status: status.into(),
            reason: reason.into(),
            since: at(h),
            ..Default::default()
        };
        let history = [
            t(ConditionType::Capacity, "True", "Sufficient", -5),
            t(
                ConditionType::Capacity,
                "False",
                "QueuedAwaitingCapacity",
                6,
            ),
            // First seen at 2 h: its lane starts with a gap.
            t(ConditionType::Quota, "True", "Under", 2),
        ];
        let json = serde_json::to_value(timeline_chart(&history, from, at(24))).unwrap();
        assert_eq!(
            json["yAxis"]["data"],
            serde_json::json!(["Capacity", "Quota"])
        );
        let series = json["series"].as_array().unwrap();
        assert_eq!(series.len(), 2, "the longest lane has two segments");
        // Capacity: 6 h sufficient, then 18 h queued; Quota: a 2 h gap, then 22 h.
        assert_eq!(series[0]["data"][0]["value"], 6.0);
        assert_eq!(
            series[0]["data"][0]["itemStyle"]["color"],
            colour(Severity::Ok)
        );
        assert_eq!(series[1]["data"][0]["value"], 18.0);
        assert_eq!(
            series[1]["data"][0]["name"],
            "False (QueuedAwaitingCapacity)"
        );
        assert_eq!(series[0]["data"][1]["name"], "not recorded");
        assert_eq!(series[1]["data"][1]["value"], 22.0);
    }

    #[test]
    fn spans_read_in_the_largest_units() {
        assert_eq!(span_text(45), "45 s");
        assert_eq!(span_text(600), "10 min");
        assert_eq!(span_text(3 * 3600 + 12 * 60), "3 h 12 min");
        assert_eq!(span_text(2 * 86_400 + 5 * 3600 + 59), "2 d 5 h");
    }
}
