//! The columns `kubectl get` shows for each kind, computed server-side as a real API server
//! does (kubectl only lays out what it receives).
//!
//! Core kinds follow kubectl's own printers (`NAME STATUS ROLES AGE VERSION` for nodes, ...);
//! custom resources use their CRD's `additionalPrinterColumns`, evaluated with
//! [`JsonPath`](super::jsonpath::JsonPath), or `NAME AGE` when the CRD declares none, as a real
//! API server does.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::age::since;
use super::resources::{Kind, PrinterColumnDef};

/// One `columnDefinitions` entry of a `Table`.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// `name` for the column that identifies the row.
    pub format: String,
    pub description: String,
    /// 0 is always shown; higher only with `-o wide`.
    pub priority: i32,
}

impl Column {
    fn new(name: &str, type_: &str, description: &str, priority: i32) -> Self {
        Self {
            name: name.into(),
            type_: type_.into(),
            format: if name == "Name" {
                "name".into()
            } else {
                String::new()
            },
            description: description.into(),
            priority,
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.type_, "format": self.format,
               "description": self.description, "priority": self.priority})
    }
}

const NAME_DOC: &str = "Name must be unique within a namespace.";
const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this \
                       object was created.";

/// A custom resource's printer columns (without `Name`); `None` when its CRD declares none.
fn custom_columns(kind: Kind) -> Option<&'static [PrinterColumnDef]> {
    kind.info()
        .crd
        .as_ref()
        .map(|c| c.printer_columns.as_slice())
        .filter(|c| !c.is_empty())
}

/// The column definitions of `kind`'s table.
pub fn columns(kind: Kind) -> Vec<Column> {
    let c = Column::new;
    match kind {
        Kind::Namespaces => vec![
            c("Name", "string", NAME_DOC, 0),
            c("Status", "string", "The status of the namespace", 0),
            c("Age", "string", AGE_DOC, 0),
        ],
        Kind::Nodes => vec![
            c("Name", "string", NAME_DOC, 0),
            c("Status", "string", "The status of the node", 0),
            c("Roles", "string", "The roles of the node", 0),
            c("Age", "string", AGE_DOC, 0),
            c(
                "Version",
                "string",
                "Kubelet Version reported by the node.",
                0,
            ),
            c(
                "Internal-IP",
                "string",
                "List of addresses reachable to the node.",
                1,
            ),
            c(
                "External-IP",
                "string",
                "List of addresses reachable to the node.",
                1,
            ),
            c("OS-Image", "string", "OS Image reported by the node.", 1),
            c(
                "Kernel-Version",
                "string",
                "Kernel Version reported by the node.",
                1,
            ),
            c(
                "Container-Runtime",
                "string",
                "Container Runtime Version reported by the node.",
                1,
            ),
        ],
        Kind::Pods => vec![
            c("Name", "string", NAME_DOC, 0),
            c(
                "Ready",
                "string",
                "The aggregate readiness state of this pod for accepting traffic.",
                0,
            ),
            c(
                "Status",
                "string",
                "The aggregate status of the containers in this pod.",
                0,
            ),
            c(
                "Restarts",
                "string",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                0,
            ),
            c("Age", "string", AGE_DOC, 0),
            c("IP", "string", "IP address allocated to the pod.", 1),
            c(
                "Node",
                "string",
                "Name of the Node this pod is assigned to.",
                1,
            ),
            c(
                "Nominated Node",
                "string",
                "Name of the node nominated by the scheduler.",
                1,
            ),
            c("Readiness Gates", "string", "Pod readiness gates.", 1),
        ],
        Kind::Events => vec![
            c(
                "Last Seen",
                "string",
                "Time when the most recent occurrence of this event was recorded.",
                0,
            ),
            c("Type", "string", "Type of this event (Normal, Warning).", 0),
            c("Reason", "string", "Why the action was taken.", 0),
            c(
                "Object",
                "string",
                "The object that this event is about.",
                0,
            ),
            c(
                "Subobject",
                "string",
                "The field of the object this event is about.",
                1,
            ),
            c("Source", "string", "The component reporting this event.", 1),
            c(
                "Message",
                "string",
                "A human-readable description of the status of this operation.",
                0,
            ),
            c(
                "First Seen",
                "string",
                "The time at which the event was first recorded.",
                1,
            ),
            c(
                "Count",
                "string",
                "The number of times this event has occurred.",
                1,
            ),
            c("Name", "string", NAME_DOC, 1),
        ],
        Kind::Custom(_) => match custom_columns(kind) {
            Some(defs) => std::iter::once(c("Name", "string", NAME_DOC, 0))
                .chain(defs.iter().map(|d| Column {
                    name: d.name.clone(),
                    type_: d.type_.clone(),
                    format: d.format.clone(),
                    description: d.description.clone(),
                    priority: d.priority,
                }))
                .collect(),
            None => vec![
                c("Name", "string", NAME_DOC, 0),
                c("Age", "string", AGE_DOC, 0),
            ],
        },
        Kind::Crds => vec![
            c("Name", "string", NAME_DOC, 0),
            c("Created At", "date", AGE_DOC, 0),
        ],
        Kind::PodDisruptionBudgets => vec![
            c("Name", "string", NAME_DOC, 0),
            c("Min Available", "string", "spec.minAvailable", 0),
            c("Max Unavailable", "string", "spec.maxUnavailable", 0),
            c(
                "Allowed Disruptions",
                "integer",
                "status.disruptionsAllowed",
                0,
            ),
            c("Age", "string", AGE_DOC, 0),
        ],
        // kubectl's own printer for leases: who holds it.
        Kind::Leases => vec![
            c("Name", "string", NAME_DOC, 0),
            c("Holder", "string", "spec.holderIdentity", 0),
            c("Age", "string", AGE_DOC, 0),
        ],
    }
}

/// A budget field as kubectl prints it: the number or percentage, or `N/A`.
fn budget(obj: &Value, path: &str) -> Value {
    match obj.pointer(path) {
        Some(Value::Number(n)) => json!(n.to_string()),
        Some(Value::String(v)) => json!(v),
        _ => json!("N/A"),
    }
}

fn s<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn or_none(v: &str) -> Value {
    Value::String(if v.is_empty() { "<none>" } else { v }.to_string())
}

/// The cells of `obj`'s row, one per column of [`columns`].
pub fn cells(kind: Kind, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let name = json!(s(obj, "/metadata/name"));
    let age = json!(since(s(obj, "/metadata/creationTimestamp"), now));
    match kind {
        Kind::Namespaces => vec![name, json!(s(obj, "/status/phase")), age],
        Kind::Nodes => node_cells(obj, name, age),
        Kind::Pods => super::pod_printer::pod_cells(obj, name, age, now),
        Kind::Events => event_cells(obj, name, now),
        Kind::Custom(_) => match custom_columns(kind) {
            Some(defs) => std::iter::once(name)
                .chain(defs.iter().map(|d| {
                    let value = d.path.as_ref().and_then(|p| p.find(obj).first().copied());
                    cell_for(&d.type_, value, now)
                }))
                .collect(),
            None => vec![name, age],
        },
        Kind::Crds => vec![name, json!(s(obj, "/metadata/creationTimestamp"))],
        Kind::PodDisruptionBudgets => vec![
            name,
            budget(obj, "/spec/minAvailable"),
            budget(obj, "/spec/maxUnavailable"),
            json!(
                obj.pointer("/status/disruptionsAllowed")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            ),
            age,
        ],
        Kind::Leases => vec![name, json!(s(obj, "/spec/holderIdentity")), age],
    }
}

/// A CRD column cell, typed as the API server's table convertor types it; `null` (printed
/// empty) when the path finds nothing or the value has the wrong type.
fn cell_for(type_: &str, value: Option<&Value>, now: DateTime<Utc>) -> Value {
    let Some(v) = value else { return Value::Null };
    match (type_, v) {
        ("string", Value::String(_)) => v.clone(),
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => v.clone(),
        ("date", Value::String(t)) => json!(since(t, now)),
        _ => Value::Null,
    }
}

fn node_cells(node: &Value, name: Value, age: Value) -> Vec<Value> {
    let conditions = node.pointer("/status/conditions").and_then(Value::as_array);
    let ready = conditions
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    let mut status = vec![
        match ready.and_then(|c| c.get("status")).and_then(Value::as_str) {
            Some("True") => "Ready",
            Some(_) => "NotReady",
            None => "Unknown",
        },
    ];
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<String> = node
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role.to_string()),
            _ if k == "kubernetes.io/role" => v.as_str().map(str::to_string),
            _ => None,
        })
        .collect();
    roles.sort();
    roles.dedup();
    let address = |t: &str| {
        node.pointer("/status/addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(t))
            .and_then(|a| a.get("address").and_then(Value::as_str))
            .unwrap_or("")
            .to_string()
    };
    let unknown = |v: &str| json!(if v.is_empty() { "<unknown>" } else { v });
    vec![
        name,
        json!(status.join(",")),
        or_none(&roles.join(",")),
        age,
        json!(s(node, "/status/nodeInfo/kubeletVersion")),
        or_none(&address("InternalIP")),
        or_none(&address("ExternalIP")),
        unknown(s(node, "/status/nodeInfo/osImage")),
        unknown(s(node, "/status/nodeInfo/kernelVersion")),
        unknown(s(node, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

fn event_cells(ev: &Value, name: Value, now: DateTime<Utc>) -> Vec<Value> {
    let first_ts = match s(ev, "/firstTimestamp") {
        "" => s(ev, "/eventTime"),
        t => t,
    };
    let first = since(first_ts, now);
    let last = match (s(ev, "/series/lastObservedTime"), s(ev, "/lastTimestamp")) {
        ("", "") => first.clone(),
        ("", t) | (t, _) => since(t, now),
    };
    let count = ev
        .pointer("/series/count")
        .or_else(|| ev.get("count"))
        .and_then(Value::as_i64)
        .filter(|c| *c > 0)
        .unwrap_or(1);
    let (kind, obj_name) = (
        s(ev, "/involvedObject/kind").to_lowercase(),
        s(ev, "/involvedObject/name"),
    );
    let target = if obj_name.is_empty() {
        kind
    } else {
        format!("{kind}/{obj_name}")
    };
    let source = match (s(ev, "/source/component"), s(ev, "/source/host")) {
        ("", _) => [s(ev, "/reportingComponent"), s(ev, "/reportingInstance")]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(", "),
        (c, "") => c.to_string(),
        (c, h) => format!("{c}, {h}"),
    };
    vec![
        json!(last),
        json!(s(ev, "/type")),
        json!(s(ev, "/reason")),
        json!(target),
        json!(s(ev, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(ev, "/message").trim()),
        json!(first),
        json!(count),
        name,
    ]
}

#[cfg(test)]
mod tests;
