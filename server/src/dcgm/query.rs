//! The PromQL sent for GPU utilisation and the reading of Prometheus' answer.
//!
//! One instant query per poll (Prometheus HTTP API, `GET /api/v1/query`): each GPU's
//! `DCGM_FI_DEV_GPU_UTIL` (DCGM exporter's "GPU utilization (in %)" gauge, one series per GPU)
//! averaged over the range, then averaged over the GPUs of each node:
//! `avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h]))`. So every GPU weighs the
//! same, whether its exporter was scraped often or not.

use std::collections::HashMap;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::Deserialize;

/// DCGM exporter's GPU utilisation gauge, percent 0–100 (DCGM field 203,
/// `DCGM_FI_DEV_GPU_UTIL`, in the exporter's default collectors).
pub const METRIC: &str = "DCGM_FI_DEV_GPU_UTIL";

/// How an error that is Prometheus' own answer begins.
pub const REFUSED: &str = "Prometheus refused the query";

/// The most nodes read from one answer: more than any cluster has (EKS' 100,000-node limit,
/// twice). Past it the answer is refused rather than cut, so no fleet reads half measured.
pub const MAX_NODES: usize = 200_000;

/// The longest range accepted: `avg_over_time` reads every sample in it, and a month of
/// 15-second samples of every GPU is a query that a shared Prometheus should not be sent
/// once a minute.
pub const MAX_RANGE_SECONDS: u64 = 7 * 24 * 3600;

/// A Prometheus duration of one unit (`30m`, `1h`, `7d`), between one minute and
/// [`MAX_RANGE_SECONDS`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range(String);

impl Range {
    /// The duration as Prometheus reads it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Range {
    type Err = String;

    /// Errors: not digits and one of `s m h d w`, or outside one minute to seven days.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "expected a Prometheus duration such as 15m, 1h or 1d, between 1m and 7d (got {s:?})"
            )
        };
        let unit = s.chars().last().ok_or_else(bad)?;
        let scale: u64 = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return Err(bad()),
        };
        let digits = &s[..s.len() - 1];
        if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let seconds = digits.parse::<u64>().map_err(|_| bad())? * scale;
        if !(60..=MAX_RANGE_SECONDS).contains(&seconds) {
            return Err(bad());
        }
        Ok(Range(s.to_string()))
    }
}

/// Checks a Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`), so that it can be written into
/// the query as is.
///
/// Errors: a sentence saying what a label name may hold.
pub fn label_name(s: &str) -> Result<String, String> {
    let mut chars = s.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(s.to_string())
    } else {
        Err(format!(
            "not a Prometheus label name (letters, digits and _, not starting with a digit): {s:?}"
        ))
    }
}

/// The query: each node's GPUs' mean utilisation over `range`, by `node_label` (DCGM
/// exporter's `Hostname`, or the label a relabelling put the node name in).
pub fn promql(node_label: &str, range: &Range) -> String {
    format!(
        "avg by ({node_label}) (avg_over_time({METRIC}[{}]))",
        range.as_str()
    )
}

/// Prometheus' answer envelope (`status`, `data`, `errorType`, `error`).
#[derive(Deserialize)]
struct Answer {
    status: String,
    data: Option<Data>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Sample>,
}

/// One instant-vector sample: its labels and `[unix seconds, "value"]`.
#[derive(Deserialize)]
struct Sample {
    metric: HashMap<String, String>,
    value: (serde_json::Value, String),
}

/// What one answer gave.
#[derive(Debug, Default, PartialEq)]
pub struct Reading {
    /// Utilisation by node name, percent 0–100, to one decimal (half away from zero).
    pub by_node: HashMap<String, Decimal>,
    /// Series left out: no node label, or a value that is not a percentage (`NaN`, `+Inf`,
    /// outside 0–100: a metric that is not DCGM exporter's percent gauge).
    pub skipped: usize,
}

/// A figure from Prometheus to one decimal, half away from zero. Prometheus' `avg` keeps a
/// running mean in floating point, so eight GPUs whose mean is 76.25 come back as
/// `76.24999999999999`: rounded at 6 decimals first, that noise does not flip the last digit.
fn percent(v: Decimal) -> Decimal {
    use rust_decimal::RoundingStrategy::MidpointAwayFromZero;
    v.round_dp_with_strategy(6, MidpointAwayFromZero)
        .round_dp_with_strategy(1, MidpointAwayFromZero)
}

/// Reads an answer of `GET /api/v1/query` for [`promql`].
///
/// Errors: a sentence for an answer that is not Prometheus JSON, a PromQL error (Prometheus'
/// own `errorType: error`), a result that is not a vector, or more than [`MAX_NODES`] nodes.
pub fn read(body: &[u8], node_label: &str) -> Result<Reading, String> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    let answer: Answer = serde_path_to_error::deserialize(de).map_err(|e| {
        format!(
            "not a Prometheus query answer at {}: {}",
            e.path(),
            e.inner()
        )
    })?;
    if answer.status != "success" {
        return Err(format!(
            "{REFUSED}: {}: {}",
            answer.error_type.as_deref().unwrap_or("error"),
            answer.error.as_deref().unwrap_or("no reason given")
        ));
    }
    let data = answer
        .data
        .ok_or_else(|| "Prometheus answered success without data".to_string())?;
    if data.result_type != "vector" {
        return Err(format!(
            "expected an instant vector, Prometheus answered a {}",
            data.result_type
        ));
    }
    if data.result.len() > MAX_NODES {
        return Err(format!(
            "{} nodes in the answer, more than the {MAX_NODES} read",
            data.result.len()
        ));
    }
    let mut reading = Reading::default();
    for sample in data.result {
        let value = Decimal::from_str(sample.value.1.trim())
            .ok()
            .filter(|v| (Decimal::ZERO..=Decimal::ONE_HUNDRED).contains(v));
        match (sample.metric.get(node_label), value) {
            (Some(node), Some(v)) if !node.is_empty() => {
                reading.by_node.insert(node.clone(), percent(v));
            }
            _ => reading.skipped += 1,
        }
    }
    Ok(reading)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_are_one_unit_between_a_minute_and_a_week() {
        for good in ["1m", "60s", "15m", "1h", "24h", "7d", "1w"] {
            assert_eq!(good.parse::<Range>().unwrap().as_str(), good);
        }
        for bad in [
            "", "h", "1", "30s", "8d", "2w", "1h30m", "-1h", "1.5h", "1H", "9999999m", "1h]",
        ] {
            assert!(bad.parse::<Range>().is_err(), "{bad}");
        }
    }

    /// The label goes into the query as is, so nothing but a label name passes: a value
    /// that closes the `by (…)` and adds its own selector is refused.
    #[test]
    fn label_names_only() {
        assert_eq!(label_name("Hostname").unwrap(), "Hostname");
        assert_eq!(label_name("_node_2").unwrap(), "_node_2");
        for bad in [
            "",
            "2node",
            "node name",
            "node) or vector(1",
            "kubernetes.io/hostname",
            "nœud",
        ] {
            assert!(label_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            promql("Hostname", &"1h".parse().unwrap()),
            "avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h]))"
        );
    }

    /// An answer as Prometheus 2.x writes it (the HTTP API's documented envelope).
    #[test]
    fn reads_each_node_and_skips_what_is_not_a_percentage() {
        let body = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"Hostname":"gpu-a"},"value":[1764400000.123,"87.25"]},
            {"metric":{"Hostname":"gpu-b"},"value":[1764400000.123,"0"]},
            {"metric":{"Hostname":"gpu-e"},"value":[1764400000.123,"76.24999999999999"]},
            {"metric":{"Hostname":"gpu-c"},"value":[1764400000.123,"NaN"]},
            {"metric":{"Hostname":"gpu-d"},"value":[1764400000.123,"250"]},
            {"metric":{},"value":[1764400000.123,"50"]}
        ]}}"#;
        let r = read(body, "Hostname").unwrap();
        assert_eq!(r.by_node.len(), 3);
        assert_eq!(r.by_node["gpu-a"], dec("87.3"));
        assert_eq!(
            r.by_node["gpu-e"],
            dec("76.3"),
            "a float's noise does not flip the digit"
        );
        assert_eq!(r.by_node["gpu-b"], dec("0"));
        assert_eq!(r.skipped, 3);
    }

    /// Bad answers: each a sentence, none a panic or an empty fleet read as idle.
    #[test]
    fn bad_answers_are_errors_that_say_what() {
        let refused =
            br#"{"status":"error","errorType":"bad_data","error":"parse error at char 4"}"#;
        let e = read(refused, "Hostname").unwrap_err();
        assert!(e.contains("bad_data") && e.contains("parse error"), "{e}");
        let matrix = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(read(matrix, "Hostname").unwrap_err().contains("matrix"));
        assert!(
            read(b"<html>proxy login</html>", "Hostname")
                .unwrap_err()
                .contains("not a Prometheus")
        );
        let bad_value = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":"x"}]}}"#;
        assert!(
            read(bad_value, "Hostname")
                .unwrap_err()
                .contains("data.result")
        );
        let mut many =
            String::from(r#"{"status":"success","data":{"resultType":"vector","result":["#);
        for i in 0..=MAX_NODES {
            if i > 0 {
                many.push(',');
            }
            many.push_str(&format!(
                r#"{{"metric":{{"Hostname":"n{i}"}},"value":[0,"1"]}}"#
            ));
        }
        many.push_str("]}}");
        assert!(
            read(many.as_bytes(), "Hostname")
                .unwrap_err()
                .contains("more than")
        );
    }
}
