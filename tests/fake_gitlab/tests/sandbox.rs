//! The sandbox as a user starts it: `fake-gitlab --example topic-registry`.

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
