//! `gleaner projects`, MCP `list_projects` and the web's `/projects`, on both backends: one row
//! per project with its working directory, sessions (warm-ups counted), first and last activity,
//! messages and tokens (as `usage --by project` counts them).

use serde_json::Value;

use crate::both_backends;
use crate::common::*;
use crate::tool_search::frob_edits;

async fn projects(backend: Backend) {
    let env = TestEnv::new(backend).await;
    frob_edits(&env);
    env.ingest();

    let out = env
        .cmd()
        .args(["projects", "--json"])
        .output()
        .expect("projects");
    assert_ok(&out);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = v.as_array().expect("array");
    assert_eq!(rows.len(), 1, "{v}");
    let p = &rows[0];
    assert_eq!(p["project"], "-w-frob");
    assert_eq!(p["cwd"], "/w/frob");
    assert_eq!(p["sessions"], 2, "the warm-up counts: {p}");
    assert_eq!(p["first_activity"], "2026-11-01T10:00:00Z");
    assert_eq!(p["last_activity"], "2026-11-01T11:00:00Z");
    assert_eq!(p["tokens"], 45, "three replies of 15 tokens: {p}");
    assert!(p["messages"].as_i64().unwrap_or(0) >= 9, "{p}");

    // The table names the working directory; a filter that matches nothing says so.
    let out = env.cmd().arg("projects").output().expect("projects");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("/w/frob") && text.contains("SESSIONS"),
        "{text}"
    );
    let out = env
        .cmd()
        .args(["projects", "--project", "nothing-like-it"])
        .output()
        .expect("projects");
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no projects"));
    let out = env
        .cmd()
        .args(["projects", "--project", " "])
        .output()
        .expect("projects");
    assert_eq!(out.status.code(), Some(2));

    let mut c = crate::mcp::Client::ready(&env);
    let v = c
        .call("list_projects", serde_json::json!({"limit": 5}))
        .expect("list_projects");
    assert_eq!(v["projects"][0]["cwd"], "/w/frob", "{v}");

    let web = crate::web::start_web(&env, &env.projects, "127.0.0.1:0");
    let base = web.url.trim_end_matches('/').to_string();
    let (status, body) = crate::web::get(&format!("{base}/projects"));
    assert_eq!(status, 200);
    assert!(
        body.contains("/w/frob") && body.contains("/sessions?project=-w-frob"),
        "{body}"
    );
    // The sessions page shows working directories, and hides the warm-up unless asked.
    let (_, body) = crate::web::get(&format!("{base}/sessions"));
    assert!(
        body.contains("/w/frob") && !body.contains("Warmup"),
        "{body}"
    );
    let (_, body) = crate::web::get(&format!("{base}/sessions?all=1"));
    assert!(body.contains("Warmup"), "{body}");
    drop(web);
    env.cleanup().await;
}
both_backends!(projects_in_every_door, projects);
