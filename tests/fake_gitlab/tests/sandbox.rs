//! The sandbox as a user starts it: `fake-gitlab --example topic-registry`.

// Tests may print diagnostics (libtest captures them).
#![allow(clippy::print_stderr)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut response = agent.get(url).call().expect("the sandbox answers");
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().expect("text"))
}

#[test]
fn the_example_sandbox_prints_the_environment_and_serves_the_merge_request() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
        .args(["--example", "topic-registry", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fake-gitlab");
    let stdout = child.stdout.take().expect("stdout");
    let _guard = Killed(child);
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("stdout is text");
        let last = line.contains("Stop the sandbox");
        lines.push(line);
        if last {
            break;
        }
    }
    let api = lines[0].clone();
    assert!(
        api.starts_with("http://127.0.0.1:") && api.ends_with("/api/v4"),
        "{api}"
    );
    let export = |name: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("export {name}=")))
            .unwrap_or_else(|| panic!("no export of {name} in:\n{}", lines.join("\n")))
            .to_owned()
    };
    assert_eq!(export("CI_API_V4_URL"), api);
    assert_eq!(export("CI_PROJECT_ID"), "1");
    assert_eq!(export("CI_MERGE_REQUEST_IID"), "1");
    assert_eq!(export("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"), "main");
    assert_eq!(export("ASSENT_TOKEN"), "glpat-sandbox-assent-bot");
    let head = export("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA");

    // The printed head is the MR's head, as GitLab reports it to the bot's token.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut mr = agent
        .get(format!("{api}/projects/1/merge_requests/1"))
        .header("PRIVATE-TOKEN", "glpat-sandbox-assent-bot")
        .call()
        .expect("the MR");
    let mr: serde_json::Value =
        serde_json::from_str(&mr.body_mut().read_to_string().expect("text")).expect("json");
    assert_eq!(mr["sha"], head.as_str());
    assert_eq!(mr["state"], "opened");

    let root = api.trim_end_matches("/api/v4");
    let (status, transcript) = get(&format!("{root}/__fake/transcript"));
    assert_eq!(status, 200);
    assert!(
        transcript.contains("platform/topic-registry !1") && transcript.contains("(no notes yet)"),
        "{transcript}"
    );
}

#[test]
fn an_unknown_example_is_refused_with_the_known_ones() {
    let output = Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
        .args(["--example", "nope"])
        .output()
        .expect("run fake-gitlab");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no example \"nope\"") && stderr.contains("topic-registry"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing served, nothing printed");
}

#[test]
fn identical_trees_are_refused_before_serving() {
    let dir = std::env::temp_dir().join(format!("fake-gitlab-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("topics")).expect("mkdir");
    std::fs::write(dir.join("topics/a.yaml"), "topics: []\n").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
        .arg("--target-tree")
        .arg(&dir)
        .arg("--source-tree")
        .arg(&dir)
        .output()
        .expect("run fake-gitlab");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("identical"), "{stderr}");
}

#[test]
fn the_sandbox_flags_do_not_mix_with_a_state_file() {
    let output = Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
        .args(["--example", "topic-registry", "--state", "x.yaml"])
        .stderr(Stdio::piped())
        .output()
        .expect("run fake-gitlab");
    assert_eq!(output.status.code(), Some(2));
    let mut text = String::new();
    output
        .stderr
        .as_slice()
        .read_to_string(&mut text)
        .expect("text");
    assert!(text.contains("usage:"), "{text}");
}

#[test]
fn help_is_printed_on_stdout_with_exit_0_and_a_wrong_flag_on_stderr_with_exit_2() {
    for flag in ["--help", "-h"] {
        let output = Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
            .arg(flag)
            .output()
            .expect("run fake-gitlab");
        assert_eq!(output.status.code(), Some(0), "{flag}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with("usage: fake-gitlab"), "{stdout}");
        assert!(stdout.contains("--example topic-registry"), "{stdout}");
        assert!(output.stderr.is_empty(), "{flag}");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
        .arg("--no-such-flag")
        .output()
        .expect("run fake-gitlab");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("usage: fake-gitlab"));
}

/// Starts a sandbox command and reads its stdout up to its last line of instructions.
fn start(mut command: Command) -> (Killed, Vec<String>, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fake-gitlab");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let guard = Killed(child);
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("stdout is text");
        let last = line.contains("Stop the sandbox");
        lines.push(line);
        if last {
            break;
        }
    }
    if lines.is_empty() {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        panic!("the sandbox did not start: {text}");
    }
    let root = lines[0].trim_end_matches("/api/v4").to_owned();
    (guard, lines, root)
}

fn get_as_bot(url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .get(url)
        .header("PRIVATE-TOKEN", "glpat-sandbox-assent-bot")
        .call()
        .expect("the sandbox answers");
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().expect("text"))
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read a folder") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fake-gitlab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

/// The examples are in the binary: a copy of it, run from another folder while the
/// repository's `fixtures/repos` is hidden (an empty mount over it, in a user namespace where
/// the system allows one), serves both example projects.
#[test]
fn the_binary_serves_the_examples_from_another_folder_with_the_source_tree_out_of_reach() {
    let dir = scratch("embedded");
    let binary = dir.join("fake-gitlab");
    std::fs::copy(env!("CARGO_BIN_EXE_fake-gitlab"), &binary).expect("copy the binary");
    let repos = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/repos")
        .canonicalize()
        .expect("the examples' folder");
    let policy = std::fs::read_to_string(repos.join("topic-registry/.assent/policies/topics.yaml"))
        .expect("the example's policy");
    let central = std::fs::read_to_string(
        repos.join("platform-policies/.assent/policies/retention-floor.yaml"),
    )
    .expect("the central policy");
    let can_hide = Command::new("unshare")
        .args(["-rm", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut command = if can_hide {
        let mut c = Command::new("unshare");
        c.args(["-rm", "sh", "-c"])
            .arg("mount -t tmpfs none \"$1\" && test -z \"$(ls -A \"$1\")\" && exec \"$2\" --example topic-registry --port 0")
            .arg("sh")
            .arg(&repos)
            .arg(&binary);
        c
    } else {
        eprintln!("no user namespace here: the copy runs with the source tree in place");
        let mut c = Command::new(&binary);
        c.args(["--example", "topic-registry", "--port", "0"]);
        c
    };
    command.current_dir(&dir).env_remove("CARGO_MANIFEST_DIR");
    let (_guard, _, root) = start(command);
    let raw = |project: u64, path: &str| {
        let (status, body) = get_as_bot(&format!(
            "{root}/api/v4/projects/{project}/repository/files/{}/raw?ref=main",
            path.replace('/', "%2F")
        ));
        assert_eq!(status, 200, "{path}: {body}");
        body
    };
    assert_eq!(raw(1, ".assent/policies/topics.yaml"), policy);
    assert_eq!(raw(2, ".assent/policies/retention-floor.yaml"), central);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fake-gitlab push`: a folder becomes the MR's new head, with GitLab's system note and a
/// new MR pipeline; the same folder again is nothing to commit.
#[test]
fn push_makes_a_folder_the_merge_requests_next_commit() {
    let (_guard, lines, root) = {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fake-gitlab"));
        c.args(["--example", "topic-registry", "--port", "0"]);
        start(c)
    };
    let head = lines
        .iter()
        .find_map(|l| l.strip_prefix("export CI_MERGE_REQUEST_SOURCE_BRANCH_SHA="))
        .expect("the head")
        .to_owned();
    // The author's checkout: the example with a longer retention than the MR's.
    let tree = scratch("push");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/repos/topic-registry");
    copy_tree(&example, &tree);
    let orders = tree.join("topics/orders.yaml");
    let text = std::fs::read_to_string(&orders).expect("the example's registry");
    let longer = text.replacen("retention_days: 30\n", "retention_days: 60\n", 1);
    assert_ne!(longer, text);
    std::fs::write(&orders, longer).expect("write");
    let push = || {
        Command::new(env!("CARGO_BIN_EXE_fake-gitlab"))
            .args(["push", "--url", &format!("{root}/api/v4"), "--source-tree"])
            .arg(&tree)
            .output()
            .expect("fake-gitlab push")
    };
    let out = push();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("pipeline #1 created"), "{said}");
    let (_, mr) = get_as_bot(&format!("{root}/api/v4/projects/1/merge_requests/1"));
    let mr: serde_json::Value = serde_json::from_str(&mr).expect("json");
    let new_head = mr["sha"].as_str().expect("a head").to_owned();
    assert_ne!(new_head, head);
    assert!(said.contains(&new_head), "{said}");
    assert_eq!(mr["head_pipeline"]["sha"], new_head.as_str());
    let (_, diffs) = get_as_bot(&format!("{root}/api/v4/projects/1/merge_requests/1/diffs"));
    let diffs: serde_json::Value = serde_json::from_str(&diffs).expect("json");
    let paths: Vec<&str> = diffs
        .as_array()
        .expect("a listing")
        .iter()
        .map(|d| d["new_path"].as_str().expect("a path"))
        .collect();
    assert_eq!(paths, ["topics/orders.yaml"]);
    assert!(
        diffs[0]["diff"]
            .as_str()
            .expect("a diff")
            .contains("-    retention_days: 30\n+    retention_days: 60\n"),
        "{diffs}"
    );
    let (_, transcript) = get(&format!("{root}/__fake/transcript"));
    assert!(transcript.contains("added 1 commit"), "{transcript}");

    let again = push();
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("nothing to commit"),
        "{again:?}"
    );
    let _ = std::fs::remove_dir_all(&tree);
}
