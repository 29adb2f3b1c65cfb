//! `fake-gitlab --port 0 --state state.yaml [--dump-on-exit out.yaml]`
//! `fake-gitlab --example topic-registry [--port N]` (the local sandbox)
//! `fake-gitlab --target-tree DIR --source-tree DIR [--port N]` (a sandbox of your own trees)
//!
//! Prints the API base URL on its first stdout line and serves until killed; a sandbox then
//! prints the environment to export and what to try. On SIGTERM or SIGINT it writes the
//! current state to `--dump-on-exit` (when given) and exits 0.

// A command-line program: it prints its address, usage and errors.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fake_gitlab::{FakeGitLab, State, sandbox};

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

--example starts the local sandbox: the example repository as project {} with one open
merge request, and prints the environment to export for assent doctor, run and sweep.
--target-tree/--source-tree do the same with two directory trees of your own (the target
branch, and the MR's source branch).",
        sandbox::PROJECT_PATH
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
    let mut port: u16 = 0;
    let mut state_path: Option<String> = None;
    let mut dump: Option<String> = None;
    let mut example: Option<String> = None;
    let mut target_tree: Option<String> = None;
    let mut source_tree: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => {
                port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--state" => state_path = Some(args.next().unwrap_or_else(|| usage())),
            "--dump-on-exit" => dump = Some(args.next().unwrap_or_else(|| usage())),
            "--example" => example = Some(args.next().unwrap_or_else(|| usage())),
            "--target-tree" => target_tree = Some(args.next().unwrap_or_else(|| usage())),
            "--source-tree" => source_tree = Some(args.next().unwrap_or_else(|| usage())),
            "-h" | "--help" => {
                println!("{}", usage_text());
                return;
            }
            _ => usage(),
        }
    }
    let trees = match (&example, &target_tree, &source_tree, &state_path) {
        (None, None, None, _) => None,
        (Some(name), None, None, None) => {
            Some(sandbox::example(name).unwrap_or_else(|e| fail(&e.to_string())))
        }
        (None, Some(target), Some(source), None) => {
            let read = |dir: &str| {
                sandbox::read_tree(std::path::Path::new(dir))
                    .unwrap_or_else(|e| fail(&e.to_string()))
            };
            Some((read(target), read(source)))
        }
        _ => usage(),
    };
    let state: State = match (&trees, &state_path) {
        (Some((target, source)), _) => {
            sandbox::state(target, source).unwrap_or_else(|e| fail(&e.to_string()))
        }
        (None, None) => State::default(),
        (None, Some(p)) => {
            let text = std::fs::read_to_string(p).unwrap_or_else(|e| {
                eprintln!("fake-gitlab: cannot read {p}: {e}");
                std::process::exit(2)
            });
            let parsed = if p.ends_with(".json") {
                serde_json::from_str(&text).map_err(|e| e.to_string())
            } else {
                serde_yaml::from_str(&text).map_err(|e| e.to_string())
            };
            parsed.unwrap_or_else(|e| {
                eprintln!("fake-gitlab: invalid state file {p}: {e}");
                std::process::exit(2)
            })
        }
    };
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    // Test scaffolding: a libc call with no safe std equivalent; the workspace denies
    // `unsafe_code` everywhere else.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let fake = FakeGitLab::start_on(state, port).unwrap_or_else(|e| {
        eprintln!("fake-gitlab: cannot listen on 127.0.0.1:{port}: {e}");
        std::process::exit(2)
    });
    println!("{}", fake.base_url());
    if trees.is_some() {
        let state = fake.state();
        println!(
            "\nfake GitLab sandbox: project {} with open merge request !{}.\n\
             # In another shell, export the CI environment of its merge request job:\n{}\n{}\
             # Stop the sandbox with Ctrl-C; it keeps nothing.",
            sandbox::PROJECT_PATH,
            sandbox::MR_IID,
            sandbox::exports(&fake.base_url(), &state),
            sandbox::guide(&fake.base_url(), &state),
        );
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
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
