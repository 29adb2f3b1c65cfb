//! `assent completions SHELL`: scripts a shell accepts, naming every command.

use std::process::Command;

use crate::ASSENT;

fn completions(shell: &str) -> String {
    let out = Command::new(ASSENT)
        .args(["completions", shell])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_shell_script_names_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = completions(shell);
        for command in [
            "run",
            "doctor",
            "lint",
            "test",
            "replay",
            "sweep",
            "serve",
            "completions",
        ] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
    }
}

#[test]
fn bash_loads_the_script_and_completes_the_commands() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("assent.bash");
    std::fs::write(&script, completions("bash")).unwrap();
    // Ask the completion function what follows `assent sw`, as bash would at a prompt.
    let probe = format!(
        "source {}; COMP_WORDS=(assent sw); COMP_CWORD=1; _assent assent sw assent; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .expect("bash is on every machine the tests run on");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let offered: Vec<&str> = stdout.lines().collect();
    assert_eq!(offered, ["sweep"], "{stdout}");
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let out = Command::new(ASSENT)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tcsh"));
}
