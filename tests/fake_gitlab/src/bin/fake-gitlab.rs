//! `fake-gitlab --port 0 --state state.yaml [--dump-on-exit out.yaml]`
//! `fake-gitlab --example topic-registry [--port N]` (the local sandbox)
//! `fake-gitlab --target-tree DIR --source-tree DIR [--port N]` (a sandbox of your own trees)
//! `fake-gitlab push --url URL --source-tree DIR [--project PATH] [--mr IID]` (a push to a
//! running sandbox)
//!
//! Prints the API base URL on its first stdout line and serves until killed; a sandbox then
//! prints the environment to export and what to try. `--webhook-url`/`--webhook-secret`
//! deliver GitLab's webhooks, `--run-pipelines` plays the runner (each MR pipeline runs
//! `assent run`). On SIGTERM or SIGINT it writes the current state to `--dump-on-exit` (when
//! given) and exits 0.

// A command-line program: it prints its address, usage, finished jobs and errors.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fake_gitlab::{FakeGitLab, Runner, State, sandbox};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// What `--help` prints on stdout, and a wrong command line on stderr before exit 2.
fn usage_text() -> String {
    format!(
        "usage: fake-gitlab [--port N] [--state FILE.yaml|FILE.json] [--dump-on-exit FILE]
       fake-gitlab --example topic-registry [--port N] [--dump-on-exit FILE]
       fake-gitlab --target-tree DIR --source-tree DIR [--port N] [--dump-on-exit FILE]
       fake-gitlab push --url URL --source-tree DIR [--project PATH] [--mr IID]

--example starts the local sandbox: the example repository as project {} with open
merge requests !1 (a retention change) and !2 (a policy change), the central policy project
{}, and prints the environment to export for assent doctor, run and sweep, and
the merge requests' pages, where threads are resolved as alice, bob or carol.
--target-tree/--source-tree do the same with two directory trees of your own (the target
branch, and the MR's source branch).

With every form:
  --webhook-url URL       deliver GitLab's merge request, note and pipeline webhooks to URL
  --webhook-secret S      sent as X-Gitlab-Token (what assent serve's ASSENT_WEBHOOK_SECRET is)
  --run-pipelines         play the runner: each MR pipeline runs `assent run` with the
                          variables of a GitLab MR job; its status follows the exit code and its
                          log is at the job's page
  --assent PATH           the assent binary the runner runs (implies --run-pipelines;
                          default: assent on PATH)
  --jobs-dir DIR          the jobs' folders (pipeline-<id>: its receipt), default a temporary one
  --job-env NAME=VALUE    one more variable for every job, or another value for one the job
                          has (ASSENT_POLICY_PROJECT=…; ASSENT_TOKEN=… for a --state file's bot)

push sends DIR as a new commit on the merge request's source branch (--project defaults to
{}, --mr to 1): the head moves, the MR webhook is sent and a pipeline is created.",
        sandbox::PROJECT_PATH,
        sandbox::POLICY_PROJECT_PATH,
        sandbox::PROJECT_PATH,
    )
}

fn usage() -> ! {
    eprintln!("{}", usage_text());
    std::process::exit(2);
}

fn fail(message: &str) -> ! {
    eprintln!("fake-gitlab: {message}");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("push") {
        push(&args[1..]);
        return;
    }
    let mut port: u16 = 0;
    let mut state_path: Option<String> = None;
    let mut dump: Option<String> = None;
    let mut example: Option<String> = None;
    let mut target_tree: Option<String> = None;
    let mut source_tree: Option<String> = None;
    let mut webhook_url: Option<String> = None;
    let mut webhook_secret = String::new();
    let mut run_pipelines = false;
    let mut assent: Option<String> = None;
    let mut jobs_dir: Option<String> = None;
    let mut job_env: Vec<(String, String)> = Vec::new();
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--port" => port = value().parse().unwrap_or_else(|_| usage()),
            "--state" => state_path = Some(value()),
            "--dump-on-exit" => dump = Some(value()),
            "--example" => example = Some(value()),
            "--target-tree" => target_tree = Some(value()),
            "--source-tree" => source_tree = Some(value()),
            "--webhook-url" => webhook_url = Some(value()),
            "--webhook-secret" => webhook_secret = value(),
            "--run-pipelines" => run_pipelines = true,
            "--assent" => {
                assent = Some(value());
                run_pipelines = true;
            }
            "--jobs-dir" => jobs_dir = Some(value()),
            "--job-env" => {
                let pair = value();
                let (name, v) = pair.split_once('=').unwrap_or_else(|| usage());
                job_env.push((name.to_owned(), v.to_owned()));
            }
            "-h" | "--help" => {
                println!("{}", usage_text());
                return;
            }
            _ => usage(),
        }
    }
    let state: Option<State> = match (&example, &target_tree, &source_tree, &state_path) {
        (None, None, None, _) => None,
        (Some(name), None, None, None) => {
            Some(sandbox::example_state(name).unwrap_or_else(|e| fail(&e.to_string())))
        }
        (None, Some(target), Some(source), None) => {
            let read = |dir: &str| {
                sandbox::read_tree(Path::new(dir)).unwrap_or_else(|e| fail(&e.to_string()))
            };
            Some(
                sandbox::state(&read(target), &read(source))
                    .unwrap_or_else(|e| fail(&e.to_string())),
            )
        }
        _ => usage(),
    };
    let is_sandbox = state.is_some();
    let state: State = match (state, &state_path) {
        (Some(state), _) => state,
        (None, None) => State::default(),
        (None, Some(p)) => {
            let text = std::fs::read_to_string(p)
                .unwrap_or_else(|e| fail(&format!("cannot read {p}: {e}")));
            let parsed = if p.ends_with(".json") {
                serde_json::from_str(&text).map_err(|e| e.to_string())
            } else {
                serde_yaml::from_str(&text).map_err(|e| e.to_string())
            };
            parsed.unwrap_or_else(|e| fail(&format!("invalid state file {p}: {e}")))
        }
    };
    let runner_program = run_pipelines.then(|| find_assent(assent.as_deref()));
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    // Test scaffolding: a libc call with no safe std equivalent; the workspace denies
    // `unsafe_code` everywhere else.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let fake = FakeGitLab::start_on(state, port)
        .unwrap_or_else(|e| fail(&format!("cannot listen on 127.0.0.1:{port}: {e}")));
    if is_sandbox {
        // Every web_url the sandbox serves is a page of its own.
        fake.use_own_web_url();
    }
    if let Some(url) = &webhook_url {
        fake.add_webhook(url, &webhook_secret);
    }
    let jobs_folder = runner_program.map(|program| {
        let dir = match &jobs_dir {
            Some(dir) => PathBuf::from(dir),
            None => std::env::temp_dir().join(format!("fake-gitlab-jobs-{}", std::process::id())),
        };
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", dir.display())));
        let mut env = vec![
            ("CI_API_V4_URL".to_owned(), fake.base_url()),
            ("ASSENT_TOKEN".to_owned(), sandbox::BOT_TOKEN.to_owned()),
            ("ASSENT_ALLOW_HTTP".to_owned(), "1".to_owned()),
        ];
        // A later value of a variable wins, so --job-env can replace the sandbox's token.
        env.extend(job_env.iter().cloned());
        fake.set_runner(Runner {
            program,
            args: vec!["run".into()],
            env,
            dir: dir.clone(),
        });
        fake.set_runner_job_dirs(true);
        dir
    });
    println!("{}", fake.base_url());
    if is_sandbox {
        let state = fake.state();
        println!(
            "\nfake GitLab sandbox: project {} with open merge request !{}.\n\
             # In another shell, export the CI environment of its merge request job:\n{}\n{}",
            sandbox::PROJECT_PATH,
            sandbox::MR_IID,
            sandbox::exports(&fake.base_url(), &state),
            sandbox::guide(&fake.base_url(), &state),
        );
        if let Some(url) = &webhook_url {
            println!("# Webhooks go to {url}");
        }
        if let Some(dir) = &jobs_folder {
            println!(
                "# Each MR pipeline runs `assent run` in a folder of its own under {} (its log: the job log link)",
                dir.display()
            );
        }
        println!("# Stop the sandbox with Ctrl-C; it keeps nothing.");
    }
    let _ = std::io::stdout().flush();
    let mut reported = 0;
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        let runs = fake.runner_runs();
        for run in runs.iter().skip(reported) {
            let url = fake
                .state()
                .projects
                .iter()
                .find(|p| p.pipelines.iter().any(|pl| pl.id == run.pipeline_id))
                .map(|p| {
                    format!(
                        "{}/{}/-/jobs/{}",
                        fake.root_url(),
                        p.path_with_namespace,
                        run.pipeline_id
                    )
                })
                .unwrap_or_default();
            println!(
                "pipeline #{} of !{}: {} (exit code {}); job log: {url}",
                run.pipeline_id,
                run.iid,
                if run.exit_code == Some(0) {
                    "success"
                } else {
                    "failed"
                },
                run.exit_code
                    .map_or_else(|| "none".into(), |c| c.to_string()),
            );
            let _ = std::io::stdout().flush();
        }
        reported = runs.len();
    }
    if let Some(path) = dump {
        let state = fake.state();
        let text = if path.ends_with(".json") {
            serde_json::to_string_pretty(&state).expect("json")
        } else {
            serde_yaml::to_string(&state).expect("yaml")
        };
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("fake-gitlab: cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
}

/// The assent binary the runner runs: `given`, or `assent` on `PATH`, as an absolute path
/// (the jobs run with GitLab's variables only, no `PATH`).
fn find_assent(given: Option<&str>) -> String {
    if let Some(path) = given {
        let path = Path::new(path);
        if !path.is_file() {
            fail(&format!(
                "--assent {}: no such file; give the path of the assent binary (target/debug/assent after cargo build)",
                path.display()
            ));
        }
        return std::path::absolute(path)
            .unwrap_or_else(|_| path.to_owned())
            .display()
            .to_string();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("assent"))
        .find(|candidate| candidate.is_file())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| {
            fail("--run-pipelines: no assent on PATH; install it (cargo install --locked --path .) or give --assent PATH")
        })
}

/// `fake-gitlab push`: the tree of `--source-tree` as a new commit on the MR's branch.
fn push(args: &[String]) {
    use base64::Engine;
    let mut url: Option<String> = None;
    let mut tree: Option<String> = None;
    let mut project = sandbox::PROJECT_PATH.to_owned();
    let mut mr = sandbox::MR_IID;
    let mut args = args.iter();
    while let Some(a) = args.next() {
        let mut value = || args.next().cloned().unwrap_or_else(|| usage());
        match a.as_str() {
            "--url" => url = Some(value()),
            "--source-tree" => tree = Some(value()),
            "--project" => project = value(),
            "--mr" => mr = value().parse().unwrap_or_else(|_| usage()),
            "-h" | "--help" => {
                println!("{}", usage_text());
                return;
            }
            _ => usage(),
        }
    }
    let (Some(url), Some(dir)) = (url, tree) else {
        usage()
    };
    let files = sandbox::read_tree(Path::new(&dir)).unwrap_or_else(|e| fail(&e.to_string()));
    let files: serde_json::Map<String, serde_json::Value> = files
        .into_iter()
        .map(|(path, content)| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(content);
            (path, serde_json::Value::String(encoded))
        })
        .collect();
    let body = serde_json::json!({"project": project, "mr": mr, "files": files}).to_string();
    // The sandbox's address: the API base it printed, or its root.
    let root = url.trim_end_matches('/').trim_end_matches("/api/v4");
    let authority = root
        .strip_prefix("http://")
        .unwrap_or_else(|| fail(&format!("--url {url}: the sandbox speaks plain http://")));
    let (status, answer) = post(authority, "/__fake/push", &body)
        .unwrap_or_else(|e| fail(&format!("cannot reach the sandbox at {root}: {e}")));
    if status != 201 {
        fail(&format!("the push was refused ({status}): {answer}"));
    }
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap_or_default();
    println!(
        "pushed {} to !{mr} of {project}; pipeline #{} created: {root}/{project}/-/merge_requests/{mr}",
        answer["sha"].as_str().unwrap_or("?"),
        answer["pipeline"]
    );
}

/// One plain HTTP/1.1 POST of a JSON body; the status and the body of the answer.
fn post(authority: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(authority)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |x| x.1).to_owned();
    Ok((status, body))
}
