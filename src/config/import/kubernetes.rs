//! Kubernetes workloads (`Deployment`, `StatefulSet`, `ReplicaSet`,
//! `DaemonSet`, `Pod`): `replicas` pods become nodes, and the first
//! container's `readinessProbe` becomes the `kubernetes` active probe
//! (the kubelet's probing, seen by the proxy through the endpoints). The
//! proxy in front (kube-proxy, an ingress) is not in the file: the gateway
//! keeps hcsim's defaults.

use super::yaml::{self, Lines};
use super::{Draft, Format, Options, choose};
use crate::engine::SimDuration;
use crate::error::Error;
use serde_json::{Value, json};
use std::path::Path;

const KINDS: [&str; 5] = [
    "Deployment",
    "StatefulSet",
    "ReplicaSet",
    "DaemonSet",
    "Pod",
];

pub(super) fn import(path: &Path, text: &str, opts: &Options) -> Result<(Draft, String), Error> {
    let docs = yaml::documents(path, text)?;
    let lines = Lines::new(path, text);
    let (work, names) = yaml::named(&docs, &lines, &KINDS, "/metadata/name", "name");
    let kind = |i: usize| {
        work[i]
            .value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("workload")
            .to_string()
    };
    let i = choose(
        &names,
        &kind,
        opts.target.as_deref(),
        Format::Kubernetes,
        path,
    )?;
    let (w, name) = (work[i], names[i].0.clone());
    let anchor = w.line;
    let at = |keys: &[&str]| lines.at(lines.path(anchor, keys));
    let kind = w.value.get("kind").and_then(Value::as_str).unwrap_or("");
    let mut d = Draft::default();
    let replicas = match kind {
        "Pod" => 1,
        "DaemonSet" => {
            d.warn(&at(&["kind"]), "a DaemonSet runs one pod per cluster node: the model gets 3 (change with --nodes N)");
            opts.nodes.unwrap_or(3) as u64
        }
        _ => match w.value.pointer("/spec/replicas") {
            None => 1,
            Some(v) => yaml::uint(v).ok_or_else(|| {
                at(&["spec", "replicas"])
                    .error(format!("replicas: expected a whole number, found {v}"))
            })?,
        },
    };
    if replicas == 0 {
        return Err(at(&["spec", "replicas"]).error("replicas: 0 pods leave nothing to simulate"));
    }
    let rat = if w.value.pointer("/spec/replicas").is_some() {
        at(&["spec", "replicas"])
    } else {
        at(&["kind"])
    };
    d.numbered_nodes(&name, replicas, &rat)?;
    let pod = if kind == "Pod" {
        w.value.pointer("/spec")
    } else {
        w.value.pointer("/spec/template/spec")
    };
    let containers = pod
        .and_then(|p| p.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    lifecycle(&mut d, &lines, anchor, &w.value, pod, &containers)?;
    let mut probe = None;
    for c in &containers {
        let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
        let cline = lines.key_value(anchor, "name", cname);
        if let Some(p) = c.get("readinessProbe") {
            if probe.is_some() {
                d.warn(
                    &lines.at(lines.key(cline, "readinessProbe")),
                    "only the first container's readinessProbe is modelled",
                );
            } else {
                probe = Some((p, lines.key(cline, "readinessProbe")));
            }
        }
    }
    let Some((p, line)) = probe else {
        d.warn(
            &at(&["kind"]),
            "no readinessProbe: pods are Ready once started; the model has no health policy",
        );
        d.policy(json!({"kind": "none"}), &at(&["kind"]));
        return Ok((d, name));
    };
    let pat = lines.at(line);
    let mut policy = json!({"kind": "active_probe", "flavor": "kubernetes"});
    if p.get("httpGet").is_some() {
        policy["probe"] = json!("http");
    } else if p.get("tcpSocket").is_some() {
        policy["probe"] = json!("tcp");
    } else {
        let how = if p.get("grpc").is_some() {
            "grpc"
        } else {
            "exec"
        };
        d.warn(&pat, format!("a {how} readiness probe is modelled as an HTTP probe (it fails when the process hangs)"));
        policy["probe"] = json!("http");
    }
    if let Value::Object(fields) = kube_probe(p, line, &lines, "readinessProbe")? {
        policy
            .as_object_mut()
            .expect("a policy object")
            .extend(fields);
    }
    if p.get("terminationGracePeriodSeconds").is_some() {
        d.warn(&pat, "readinessProbe.terminationGracePeriodSeconds is not modelled (the API server refuses it on a readiness probe)");
    }
    d.policy(policy, &pat);
    d.notes
        .push("The proxy in front of the pods is not in the file: hcsim's default gateway.".into());
    Ok((d, name))
}

/// A probe's fields as `pods.<field>`: `initial_delay`, `period`, …
fn kube_probe(p: &Value, line: usize, lines: &Lines, what: &str) -> Result<Value, Error> {
    let mut out = serde_json::Map::new();
    for (key, field) in [
        ("initialDelaySeconds", "initial_delay"),
        ("periodSeconds", "period"),
        ("timeoutSeconds", "timeout"),
        ("failureThreshold", "failure_threshold"),
        ("successThreshold", "success_threshold"),
    ] {
        let Some(v) = p.get(key) else { continue };
        let kat = lines.at(lines.key(line, key));
        let n = yaml::uint(v).ok_or_else(|| {
            kat.error(format!("{what}.{key}: expected a whole number, found {v}"))
        })?;
        out.insert(
            field.into(),
            if key.ends_with("Seconds") {
                // Checked: seconds × 10⁶ must not wrap (2⁵⁸ + 5 s is not 5 s).
                json!(
                    SimDuration::try_from_secs(n)
                        .map_err(|e| kat.error(format!("{what}.{key}: {n}: {e}")))?
                )
            } else {
                json!(n)
            },
        );
    }
    Ok(Value::Object(out))
}

/// `sleep N` (or `sh -c "sleep N"`) in a preStop `exec` command: N seconds.
fn sleep_seconds(command: &[Value]) -> Option<f64> {
    let words: Vec<&str> = command.iter().filter_map(Value::as_str).collect();
    let script = match words.as_slice() {
        [sh, "-c", script] if sh.ends_with("sh") => *script,
        _ => {
            return match words.as_slice() {
                [sleep, n] if sleep.ends_with("sleep") => n.parse().ok(),
                _ => None,
            };
        }
    };
    let parts: Vec<&str> = script.split_whitespace().collect();
    match parts.as_slice() {
        ["sleep", n] => n.trim_end_matches(';').parse().ok(),
        _ => None,
    }
}

/// The pod lifecycle of a workload (`pods` in the model): the first
/// container's `livenessProbe`, `startupProbe` and `lifecycle.preStop`, the
/// pod's `terminationGracePeriodSeconds`, a Deployment's
/// `strategy.rollingUpdate`. Nothing when the workload has none of them.
fn lifecycle(
    d: &mut Draft,
    lines: &Lines,
    anchor: usize,
    workload: &Value,
    pod: Option<&Value>,
    containers: &[Value],
) -> Result<(), Error> {
    let mut pods = serde_json::Map::new();
    let mut first = true;
    for c in containers {
        let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
        let cline = lines.key_value(anchor, "name", cname);
        for (key, field) in [("livenessProbe", "liveness"), ("startupProbe", "startup")] {
            let Some(p) = c.get(key) else { continue };
            let line = lines.key(cline, key);
            let at = lines.at(line);
            if !first {
                d.warn(
                    &at,
                    format!(
                        "only the first container's {key} is modelled (a pod is one process here)"
                    ),
                );
                continue;
            }
            if p.get("httpGet").is_none() && p.get("tcpSocket").is_none() {
                d.warn(&at, format!("{key}: an exec or grpc probe is modelled as an HTTP probe through the workers (it fails when the process hangs)"));
            }
            let mut probe = kube_probe(p, line, lines, key)?;
            if p.get("tcpSocket").is_some() {
                probe["kind"] = json!("tcp");
            }
            if p.get("terminationGracePeriodSeconds").is_some() {
                d.warn(&lines.at(lines.key(line, "terminationGracePeriodSeconds")), format!("{key}.terminationGracePeriodSeconds is not modelled: the pod's grace period applies"));
            }
            pods.insert(field.into(), probe);
            d.origin(&format!("pods.{field}"), &at);
        }
        if let Some(pre) = c.pointer("/lifecycle/preStop") {
            let line = lines.key(lines.key(cline, "lifecycle"), "preStop");
            let at = lines.at(line);
            let secs = if let Some(cmd) = pre.pointer("/exec/command").and_then(Value::as_array) {
                sleep_seconds(cmd)
            } else {
                pre.pointer("/sleep/seconds")
                    .and_then(yaml::uint)
                    .map(|n| n as f64)
            };
            match secs {
                Some(s) if first && s.is_finite() && s >= 0.0 => {
                    let v = SimDuration::try_from_secs_f64(s)
                        .map_err(|e| at.error(format!("preStop: {e}")))?;
                    pods.insert("pre_stop".into(), json!(v));
                    d.origin("pods.pre_stop", &at);
                }
                _ if !first => d.warn(&at, "only the first container's preStop is modelled"),
                _ => d.warn(&at, "preStop: only a sleep (`exec: sleep N` or the `sleep` action) is modelled; this hook is left out"),
            }
        }
        first = false;
    }
    if let Some(v) = pod.and_then(|p| p.get("terminationGracePeriodSeconds")) {
        let line = lines.path(
            anchor,
            &["spec", "template", "spec", "terminationGracePeriodSeconds"],
        );
        let at = lines.at(if line == anchor {
            lines.key(anchor, "terminationGracePeriodSeconds")
        } else {
            line
        });
        let n = yaml::uint(v).ok_or_else(|| {
            at.error(format!(
                "terminationGracePeriodSeconds: expected a whole number, found {v}"
            ))
        })?;
        let g = SimDuration::try_from_secs(n)
            .map_err(|e| at.error(format!("terminationGracePeriodSeconds: {e}")))?;
        pods.insert("termination_grace_period".into(), json!(g));
        d.origin("pods.termination_grace_period", &at);
    }
    if let Some(s) = workload.pointer("/spec/strategy") {
        let at = lines.at(lines.path(anchor, &["spec", "strategy"]));
        match s.get("type").and_then(Value::as_str) {
            Some("Recreate") => d.warn(&at, "strategy Recreate is not modelled: a rolling_update with max_surge 0 and max_unavailable \"100%\" comes closest (it does not wait for the old pods to be gone)"),
            Some("OnDelete") => d.warn(&at, "updateStrategy OnDelete: pods are replaced only when deleted by hand; a rolling_update fault would not happen"),
            _ => {
                let mut strategy = serde_json::Map::new();
                for (key, field) in [("maxSurge", "max_surge"), ("maxUnavailable", "max_unavailable")] {
                    let Some(v) = s.pointer(&format!("/rollingUpdate/{key}")) else { continue };
                    let kat = lines.at(lines.key(lines.key(lines.path(anchor, &["spec", "strategy"]), "rollingUpdate"), key));
                    let value: crate::spec::IntOrPercent = serde_json::from_value(v.clone())
                        .map_err(|e| kat.error(format!("strategy.rollingUpdate.{key}: {e}")))?;
                    strategy.insert(field.into(), json!(value));
                    d.origin(&format!("pods.strategy.{field}"), &kat);
                }
                if !strategy.is_empty() {
                    pods.insert("strategy".into(), Value::Object(strategy));
                }
            }
        }
    }
    if !pods.is_empty() {
        d.notes.push("Its pods' lifecycle is the model's `pods` (add a `rolling_update` fault to see a deploy).".into());
        d.pods = Some(pods);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Options, Workload, read};

    #[test]
    fn a_statefulset_readiness_probe_and_the_target_among_workloads() {
        let dir = std::env::temp_dir().join(format!("hcsim-k8s-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("w.yaml");
        std::fs::write(
            &p,
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: db\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: db\n        readinessProbe:\n          tcpSocket: { port: 5432 }\n          periodSeconds: 3\n          failureThreshold: 5\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: one\nspec:\n  containers:\n  - name: c\n    image: x\n",
        )
        .unwrap();
        let e = read(&p, &Options::default(), &Workload::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("2 workloads, pick one with --target NAME: db"),
            "{e}"
        );
        let opts = Options {
            target: Some("db".into()),
            ..Options::default()
        };
        let im = read(&p, &opts, &Workload::default()).unwrap();
        let m = serde_json::to_value(im.model().unwrap().effective_spec()).unwrap();
        assert_eq!(m["nodes"][1]["name"], "db-1");
        assert_eq!(m["policy"]["flavor"], "kubernetes");
        assert_eq!(m["policy"]["probe"], "tcp");
        assert_eq!(m["policy"]["period"], "3s");
        assert_eq!(m["policy"]["failure_threshold"], 5);
        assert_eq!(m["policy"]["timeout"], "1s"); // the kubelet's default
        let opts = Options {
            target: Some("one".into()),
            ..Options::default()
        };
        let im = read(&p, &opts, &Workload::default()).unwrap();
        assert!(
            im.warnings[0]
                .to_string()
                .contains("w.yaml:22: no readinessProbe"),
            "{:?}",
            im.warnings
        );
    }
}
