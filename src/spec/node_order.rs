//! How a [`NodeSpec`] is written. In the order its fields are declared,
//! name first: what `hcsim import` and `hcsim check` print. With its keys
//! sorted while `summary.json` writes the model (`model_spec`, every
//! object's keys sorted, as a `serde_json::Value` orders them): that
//! writer sorts whatever comes out of order, at a cost that was a tenth
//! of a 1,000-node run; a node that comes sorted is written in place.
//!
//! Both views take the node apart without `..`, so a field added to
//! [`NodeSpec`] does not compile until it is written in both.

use super::charts::ChartSpec;
use super::haproxy::{OnMarkedDown, OnMarkedUp};
use super::model_spec::{
    ClientsSpec, FaultSpec, GatewaySpec, LatencySpec, MeasureSpec, ModelSpec, NodeSpec, PodSpec,
};
use crate::engine::SimDuration;
use crate::policy::PolicySpec;
use serde::{Serialize, Serializer};
use std::cell::Cell;
use std::net::IpAddr;

thread_local! {
    /// Set while nodes are written with their keys sorted.
    static SORTED_KEYS: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every [`NodeSpec`] written on this thread with its keys
/// sorted (and restores the setting after, also on unwinding).
pub fn with_sorted_keys<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SORTED_KEYS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(SORTED_KEYS.with(|c| c.replace(true)));
    f()
}

/// A [`ModelSpec`] with its keys sorted, for [`with_sorted_keys`]'s
/// writer: the model's own fields in key order (`$schema` first), so the
/// sorted writer writes the whole model, nodes and all, in place instead
/// of gathering it aside to sort (a 1,000-node model is 250 KB of text).
/// The same fields and conditions as [`ModelSpec`]'s derive.
#[derive(Serialize)]
pub struct SortedModel<'a> {
    #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
    schema: Option<&'a String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    charts: &'a [ChartSpec],
    clients: &'a ClientsSpec,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    duration: &'a SimDuration,
    faults: &'a [FaultSpec],
    gateway: &'a GatewaySpec,
    latency_thresholds: &'a [SimDuration],
    #[serde(skip_serializing_if = "Option::is_none")]
    measure: Option<&'a MeasureSpec>,
    name: &'a str,
    nodes: &'a [NodeSpec],
    #[serde(skip_serializing_if = "Option::is_none")]
    pods: Option<&'a PodSpec>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    policies: &'a [PolicySpec],
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<&'a PolicySpec>,
    seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline_bucket: Option<&'a SimDuration>,
}

impl<'a> SortedModel<'a> {
    pub fn of(spec: &'a ModelSpec) -> Self {
        let ModelSpec {
            schema,
            name,
            description,
            seed,
            duration,
            measure,
            timeline_bucket,
            latency_thresholds,
            clients,
            gateway,
            nodes,
            faults,
            pods,
            policy,
            policies,
            charts,
        } = spec;
        SortedModel {
            schema: schema.as_ref(),
            charts,
            clients,
            description,
            duration,
            faults,
            gateway,
            latency_thresholds,
            measure: measure.as_ref(),
            name,
            nodes,
            pods: pods.as_ref(),
            policies,
            policy: policy.as_ref(),
            seed: *seed,
            timeline_bucket: timeline_bucket.as_ref(),
        }
    }
}

/// The newtype name by which a value tells `summary.json`'s writer that
/// its keys, and those of every object inside it, come sorted: it is then
/// written as it comes, without the sorting's bookkeeping (every other
/// serializer sees the value itself, as serde's newtypes are).
pub static PRESORTED: &str = "$hcsim::json::presorted";

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The fields in declaration order.
#[derive(Serialize)]
struct Declared<'a> {
    name: &'a str,
    weight: u32,
    backup: bool,
    down: bool,
    max_conns: u32,
    #[serde(skip_serializing_if = "is_zero")]
    max_queue: u32,
    workers: u32,
    backlog: u32,
    service_time: &'a LatencySpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    keepalive_timeout: Option<&'a SimDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keepalive_requests: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_addr: Option<&'a IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    on_marked_down: Option<&'a OnMarkedDown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    on_marked_up: Option<&'a OnMarkedUp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod: Option<&'a PodSpec>,
}

/// The same fields, sorted by key.
#[derive(Serialize)]
struct Sorted<'a> {
    backlog: u32,
    backup: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_addr: Option<&'a IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check_port: Option<u16>,
    down: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    keepalive_requests: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keepalive_timeout: Option<&'a SimDuration>,
    max_conns: u32,
    #[serde(skip_serializing_if = "is_zero")]
    max_queue: u32,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    on_marked_down: Option<&'a OnMarkedDown>,
    #[serde(skip_serializing_if = "Option::is_none")]
    on_marked_up: Option<&'a OnMarkedUp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod: Option<&'a PodSpec>,
    service_time: &'a LatencySpec,
    weight: u32,
    workers: u32,
}

impl Serialize for NodeSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let NodeSpec {
            name,
            weight,
            backup,
            down,
            max_conns,
            max_queue,
            workers,
            backlog,
            service_time,
            keepalive_timeout,
            keepalive_requests,
            check_port,
            check_addr,
            on_marked_down,
            on_marked_up,
            pod,
        } = self;
        if SORTED_KEYS.with(Cell::get) {
            let sorted = Sorted {
                backlog: *backlog,
                backup: *backup,
                check_addr: check_addr.as_ref(),
                check_port: *check_port,
                down: *down,
                keepalive_requests: *keepalive_requests,
                keepalive_timeout: keepalive_timeout.as_ref(),
                max_conns: *max_conns,
                max_queue: *max_queue,
                name,
                on_marked_down: on_marked_down.as_ref(),
                on_marked_up: on_marked_up.as_ref(),
                pod: pod.as_ref(),
                service_time,
                weight: *weight,
                workers: *workers,
            };
            // Sorted all the way down, but for a pod's settings and a
            // uniform time's `min` before `max`: those the writer sorts. (No
            // wildcard: a distribution added must say where its keys fall.)
            let time_in_order = match service_time {
                LatencySpec::Constant { .. }
                | LatencySpec::Exponential { .. }
                | LatencySpec::Lognormal { .. } => true,
                LatencySpec::Uniform { .. } => false,
            };
            if pod.is_none() && time_in_order {
                s.serialize_newtype_struct(PRESORTED, &sorted)
            } else {
                sorted.serialize(s)
            }
        } else {
            Declared {
                name,
                weight: *weight,
                backup: *backup,
                down: *down,
                max_conns: *max_conns,
                max_queue: *max_queue,
                workers: *workers,
                backlog: *backlog,
                service_time,
                keepalive_timeout: keepalive_timeout.as_ref(),
                keepalive_requests: *keepalive_requests,
                check_port: *check_port,
                check_addr: check_addr.as_ref(),
                on_marked_down: on_marked_down.as_ref(),
                on_marked_up: on_marked_up.as_ref(),
                pod: pod.as_ref(),
            }
            .serialize(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// A node with every optional field set.
    fn full() -> NodeSpec {
        serde_json::from_value(serde_json::json!({
            "name": "a", "weight": 2, "backup": true, "down": false, "max_conns": 3,
            "max_queue": 4, "workers": 5, "backlog": 6,
            "service_time": {"dist": "uniform", "min": "1ms", "max": "2ms"},
            "keepalive_timeout": "5s", "keepalive_requests": 100, "check_port": 8081,
            "check_addr": "10.0.0.9", "on_marked_down": "shutdown_sessions",
            "on_marked_up": "shutdown_backup_sessions",
            "pod": {}
        }))
        .expect("a valid node")
    }

    #[test]
    fn both_orders_write_every_field_of_the_schema() {
        let node = full();
        let declared = serde_json::to_string(&node).unwrap();
        let sorted = with_sorted_keys(|| serde_json::to_string(&node).unwrap());
        let key_order = |text: &str| -> Vec<String> {
            let mut de = serde_json::Deserializer::from_str(text);
            let v: Vec<(String, Value)> = {
                use serde::de::{Deserializer as _, MapAccess, Visitor};
                struct Pairs;
                impl<'de> Visitor<'de> for Pairs {
                    type Value = Vec<(String, Value)>;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<A: MapAccess<'de>>(
                        self,
                        mut m: A,
                    ) -> Result<Self::Value, A::Error> {
                        let mut out = vec![];
                        while let Some(kv) = m.next_entry()? {
                            out.push(kv);
                        }
                        Ok(out)
                    }
                }
                (&mut de).deserialize_map(Pairs).unwrap()
            };
            v.into_iter().map(|(k, _)| k).collect()
        };
        let declared_keys = key_order(&declared);
        let sorted_keys = key_order(&sorted);
        // Every property of the schema (the struct's fields) is written.
        let schema = serde_json::to_value(schemars::schema_for!(NodeSpec)).unwrap();
        let props = &schema["properties"];
        let mut schema_keys: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
        schema_keys.sort();
        let mut all = declared_keys.clone();
        all.sort();
        assert_eq!(all, schema_keys, "every field of NodeSpec is written");
        assert_eq!(declared_keys[0], "name", "declared order, name first");
        let mut in_order = sorted_keys.clone();
        in_order.sort();
        assert_eq!(sorted_keys, in_order, "the sorted view is sorted");
        // The same document either way.
        let a: Value = serde_json::from_str(&declared).unwrap();
        let b: Value = serde_json::from_str(&sorted).unwrap();
        assert_eq!(a, b);
        // And it reads back as the node it came from.
        let back: NodeSpec = serde_json::from_str(&declared).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), declared);
    }
}
