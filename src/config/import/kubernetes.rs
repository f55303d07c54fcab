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
    let i = choose(&names, opts.target.as_deref(), Format::Kubernetes, path)?;
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
    let mut probe = None;
    for c in &containers {
        let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
        let cline = lines.key_value(anchor, "name", cname);
        for other in ["livenessProbe", "startupProbe"] {
            if c.get(other).is_some() {
                d.warn(
                    &lines.at(lines.key(cline, other)),
                    format!("{other} is not modelled (container restarts)"),
                );
            }
        }
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
    for (key, field) in [
        ("periodSeconds", "period"),
        ("timeoutSeconds", "timeout"),
        ("initialDelaySeconds", "initial_delay"),
        ("failureThreshold", "failure_threshold"),
        ("successThreshold", "success_threshold"),
    ] {
        let Some(v) = p.get(key) else { continue };
        let kat = lines.at(lines.key(line, key));
        let n = yaml::uint(v).ok_or_else(|| {
            kat.error(format!(
                "readinessProbe.{key}: expected a whole number, found {v}"
            ))
        })?;
        policy[field] = if key.ends_with("Seconds") {
            // Checked: seconds × 10⁶ must not wrap (2⁵⁸ + 5 s is not 5 s).
            let t = SimDuration::try_from_secs(n)
                .map_err(|e| kat.error(format!("readinessProbe.{key}: {n}: {e}")))?;
            json!(t)
        } else {
            json!(n)
        };
    }
    if p.get("terminationGracePeriodSeconds").is_some() {
        d.warn(&pat, "terminationGracePeriodSeconds is not modelled");
    }
    d.policy(policy, &pat);
    d.notes
        .push("The proxy in front of the pods is not in the file: hcsim's default gateway.".into());
    Ok((d, name))
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
