//! The pod row of `kubectl get pods`: READY, the aggregate STATUS and RESTARTS, derived from
//! container statuses the way kubectl's pod printer derives them.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::age::human_duration;

fn s<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `Signal:9` / `ExitCode:1` for a terminated state without a reason.
fn exit_text(terminated: &Value) -> String {
    match terminated
        .get("signal")
        .and_then(Value::as_i64)
        .unwrap_or(0)
    {
        0 => format!(
            "ExitCode:{}",
            terminated
                .get("exitCode")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        ),
        sig => format!("Signal:{sig}"),
    }
}

struct Tally {
    restarts: i64,
    last_restart: Option<DateTime<Utc>>,
}

impl Tally {
    fn add(&mut self, status: &Value) {
        self.restarts += status
            .get("restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let finished = s(status, "/lastState/terminated/finishedAt");
        if let Ok(t) = DateTime::parse_from_rfc3339(finished) {
            let t = t.with_timezone(&Utc);
            self.last_restart = Some(self.last_restart.map_or(t, |l| l.max(t)));
        }
    }
}

/// Cells for the pod columns of `printers::columns(Kind::Pods)`.
pub fn pod_cells(pod: &Value, name: Value, age: Value, now: DateTime<Utc>) -> Vec<Value> {
    let total = items(pod, "/spec/containers").len();
    let mut reason = match s(pod, "/status/reason") {
        "" => s(pod, "/status/phase").to_string(),
        r => r.to_string(),
    };
    let mut tally = Tally {
        restarts: 0,
        last_restart: None,
    };
    let mut ready = 0;

    let init_total = items(pod, "/spec/initContainers").len();
    let mut initializing = false;
    for (i, c) in items(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        tally.add(c);
        let terminated = c.pointer("/state/terminated");
        if terminated
            .and_then(|t| t.get("exitCode"))
            .and_then(Value::as_i64)
            == Some(0)
        {
            continue;
        }
        let waiting = s(c, "/state/waiting/reason");
        reason = match terminated {
            Some(t) => match t.get("reason").and_then(Value::as_str) {
                Some(r) if !r.is_empty() => format!("Init:{r}"),
                _ => format!("Init:{}", exit_text(t)),
            },
            None if !waiting.is_empty() && waiting != "PodInitializing" => {
                format!("Init:{waiting}")
            }
            None => format!("Init:{i}/{init_total}"),
        };
        initializing = true;
        break;
    }

    if !initializing {
        tally = Tally {
            restarts: 0,
            last_restart: None,
        };
        let mut has_running = false;
        for c in items(pod, "/status/containerStatuses").iter().rev() {
            tally.add(c);
            let waiting = s(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                reason = match t.get("reason").and_then(Value::as_str) {
                    Some(r) if !r.is_empty() => r.to_string(),
                    _ => exit_text(t),
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && c.pointer("/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = items(pod, "/status/conditions").iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            });
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        reason = if s(pod, "/status/reason") == "NodeLost" {
            "Unknown"
        } else {
            "Terminating"
        }
        .to_string();
    }

    let restarts = match tally.last_restart {
        Some(t) if tally.restarts > 0 => format!(
            "{} ({} ago)",
            tally.restarts,
            human_duration((now - t).num_seconds())
        ),
        _ => tally.restarts.to_string(),
    };
    let gates = items(pod, "/spec/readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                let t = s(g, "/conditionType");
                items(pod, "/status/conditions").iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some(t)
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    let or_none = |v: &str| json!(if v.is_empty() { "<none>" } else { v });
    vec![
        name,
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        age,
        or_none(s(pod, "/status/podIP")),
        or_none(s(pod, "/spec/nodeName")),
        or_none(s(pod, "/status/nominatedNodeName")),
        json!(gates_cell),
    ]
}
