use super::parse_time;
use crate::config::import::{Imported, Options, Workload, read};
use crate::engine::SimDuration;
use serde_json::Value;

fn import(files: &[(&str, &str)], target: Option<&str>) -> Result<Imported, String> {
    let dir = std::env::temp_dir().join(format!(
        "hcsim-nginx-{}-{}",
        std::process::id(),
        files[0].1.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    let opts = Options {
        target: target.map(String::from),
        ..Options::default()
    };
    read(&dir.join(files[0].0), &opts, &Workload::default()).map_err(|e| e.to_string())
}

fn model(im: &Imported) -> Value {
    serde_json::to_value(im.model().unwrap().effective_spec()).unwrap()
}

#[test]
fn times_follow_ngx_parse_time() {
    let s = SimDuration::from_secs;
    assert_eq!(parse_time("60", false).unwrap(), s(60)); // bare = seconds
    assert_eq!(
        parse_time("500ms", false).unwrap(),
        SimDuration::from_millis(500)
    );
    assert_eq!(parse_time("1m30s", false).unwrap(), s(90));
    assert_eq!(parse_time("1h 30m", false).unwrap(), s(5400));
    assert_eq!(parse_time("10s", true).unwrap(), s(10));
    assert!(parse_time("500ms", true).is_err()); // fail_timeout: whole seconds
    assert!(parse_time("30s1m", false).is_err()); // largest unit first
    assert!(parse_time("5x", false).is_err());
    assert!(parse_time("", false).is_err());
}

#[test]
fn proxy_settings_are_inherited_http_server_location() {
    let im = import(
        &[(
            "nginx.conf",
            "http {\n proxy_read_timeout 7s;\n proxy_next_upstream_timeout 9s;\n upstream u { server 10.0.0.1; server 10.0.0.2; }\n server {\n  proxy_connect_timeout 1s;\n  location / {\n   location /deep/ {\n    proxy_connect_timeout 250ms;\n    if ($x) { proxy_pass http://u; }\n   }\n  }\n }\n}\n",
        )],
        None,
    )
    .unwrap();
    let g = &model(&im)["gateway"];
    assert_eq!(g["proxy_read_timeout"], "7s");
    assert_eq!(g["proxy_next_upstream_timeout"], "9s");
    assert_eq!(g["proxy_connect_timeout"], "250ms");
    assert_eq!(
        g["proxy_next_upstream"],
        serde_json::json!(["error", "timeout"])
    );
}

#[test]
fn a_snippet_without_http_and_a_tengine_check() {
    let im = import(
        &[(
            "u.conf",
            "upstream u {\n random two;\n server a:80 max_fails=0;\n server b:80 max_fails=0 max_conns=10 down;\n check interval=3000 rise=2 fall=4 timeout=1000 type=http;\n check_http_expect_alive http_2xx;\n}\n",
        )],
        None,
    )
    .unwrap();
    let m = model(&im);
    assert_eq!(m["gateway"]["balancer"], "random_two");
    assert_eq!(m["nodes"][1]["max_conns"], 10);
    assert_eq!(m["nodes"][1]["down"], true);
    let p = &m["policies"];
    assert_eq!(p[0]["max_fails"], 0);
    assert_eq!(p[1]["flavor"], "tengine");
    assert_eq!(p[1]["interval"], "3s");
    assert_eq!(p[1]["fall"], 4);
    assert_eq!(p[1]["probe"], "http");
    assert_eq!(p[1]["expect_alive"], serde_json::json!(["http2xx"]));
}

#[test]
fn includes_are_relative_to_the_main_file_and_a_missing_one_warns() {
    let im = import(
        &[
            (
                "nginx.conf",
                "http {\n  include sub/*.conf;\n  include nowhere.conf;\n}\n",
            ),
            (
                "sub/u.conf",
                "upstream u {\n  server 10.0.0.1:80 weight=4;\n}\n",
            ),
        ],
        None,
    )
    .unwrap();
    assert_eq!(model(&im)["nodes"][0]["weight"], 4);
    assert_eq!(im.warnings.len(), 2, "{:?}", im.warnings); // missing include, no proxy_pass
    assert!(
        im.warnings[0]
            .to_string()
            .contains("nginx.conf:3: include \"nowhere.conf\"")
    );
    assert!(
        im.origins
            .iter()
            .any(|(f, at)| f == "nodes[0]" && at.to_string().ends_with("sub/u.conf:2"))
    );
}

#[test]
fn per_server_settings_that_differ_are_warnings() {
    let im = import(
        &[(
            "n.conf",
            "upstream u {\n server a max_fails=3 fail_timeout=30s;\n server b max_fails=1;\n sticky cookie x;\n}\n",
        )],
        None,
    )
    .unwrap();
    let w: Vec<String> = im.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter()
            .any(|w| w.contains("n.conf:3: max_fails=1 fail_timeout=10s differs")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.contains("n.conf:4: sticky balancing is not modelled")),
        "{w:?}"
    );
    assert_eq!(model(&im)["policy"]["max_fails"], 3);
}

#[test]
fn a_model_error_in_an_imported_field_names_the_config_line() {
    let im = import(
        &[(
            "z.conf",
            "upstream u {\n server a;\n}\nserver {\n location / {\n  proxy_pass http://u;\n  proxy_connect_timeout 0;\n }\n}\n",
        )],
        None,
    )
    .unwrap();
    let e = im.model().unwrap_err().to_string();
    assert!(
        e.ends_with("z.conf:7: gateway.proxy_connect_timeout: must be positive"),
        "{e}"
    );
}

#[test]
fn ip_hash_and_hash_are_read_with_their_lines_and_bad_arguments_exit() {
    let conf = |balancer: &str| {
        format!(
            "upstream u {{\n {balancer}\n server a:80;\n server b:80;\n}}\nserver {{\n location / {{\n  proxy_pass http://u;\n }}\n}}\n"
        )
    };
    let im = import(&[("h1.conf", &conf("hash $remote_addr;"))], None).unwrap();
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    let m = model(&im);
    assert_eq!(
        m["gateway"]["balancer"],
        serde_json::json!({"hash": {"key": "$remote_addr", "consistent": false}})
    );
    assert_eq!(m["clients"]["keys"], 1000);
    let e = import(&[("h2.conf", &conf("hash $uri consistant;"))], None)
        .err()
        .unwrap();
    assert!(
        e.ends_with("h2.conf:2: invalid parameter \"consistant\" of `hash`: expected `consistent`"),
        "{e}"
    );
    let e = import(&[("h3.conf", &conf("ip_hash on;"))], None)
        .err()
        .unwrap();
    assert!(
        e.ends_with("h3.conf:2: `ip_hash` takes no arguments"),
        "{e}"
    );
    // A backup server is refused by the model, at its line.
    let text = conf("ip_hash;").replace("server b:80;", "server b:80 backup;");
    let im = import(&[("h4.conf", &text)], None).unwrap();
    let e = im.model().unwrap_err().to_string();
    assert!(
        e.ends_with(
            "h4.conf:4: nodes[1].backup: nginx does not allow `backup` servers with `ip_hash`"
        ),
        "{e}"
    );
    // The same address twice under consistent hashing: a warning.
    let text = conf("hash $request_uri consistent;").replace("server b:80;", "server a:80;");
    let im = import(&[("h5.conf", &text)], None).unwrap();
    assert_eq!(im.warnings.len(), 1, "{:?}", im.warnings);
    assert!(
        im.warnings[0].message.contains("a:80#2"),
        "{:?}",
        im.warnings
    );
    // NGINX Plus balancers keep their warning.
    let im = import(&[("h6.conf", &conf("least_time header;"))], None).unwrap();
    assert!(
        im.warnings[0]
            .message
            .contains("least_time balancing is not modelled")
    );
}

#[test]
fn proxy_send_timeout_is_a_note_not_a_warning() {
    // `ngx_http_upstream_send_request` arms proxy_send_timeout only while a
    // write to the upstream blocks; the model's requests never block.
    let im = import(
        &[(
            "nginx.conf",
            "http {\n upstream u { server 10.0.0.1; }\n server {\n  location / {\n   proxy_send_timeout 2s;\n   proxy_pass http://u;\n  }\n }\n}\n",
        )],
        None,
    )
    .unwrap();
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    let description = im.doc["description"].as_str().unwrap();
    assert!(
        description.contains("proxy_send_timeout 2s (") && description.contains("nginx.conf:5)"),
        "{description}"
    );
}
