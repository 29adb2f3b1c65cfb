//! Differential tests against the programs that read a registry after the merge: PyYAML
//! (`python3-yaml`, YAML 1.1), Go's `gopkg.in/yaml.v3` and Go's `encoding/json`
//! (`golang-go`, `golang-gopkg-yaml.v3-dev`), Python's `json`, and Python's `tomllib` (the
//! TOML reader of Python 3.11 and later).
//!
//! For every generated document assent accepts, each reader must read the same value tree
//! (compared as JSON, numbers by value); every hostile case must be refused; and the tables
//! behind two refusals are checked against the libraries' own: every Unicode format
//! character (Python's `unicodedata`) is refused in a key, and every pair of characters Go's
//! `unicode.SimpleFold` puts in one orbit makes two keys collide.
//!
//! They need the tools, so they are opt-in (`cargo test --test it consumers -- --ignored`,
//! which `.ci/run` runs after installing them); run so, a missing tool is a failure, never
//! a pass. `docs/policies.md` ("What assent refuses to parse, and why") lists the refusals.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use assent::core::semantic_diff::{Format, Limits, parse_document};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

const NEEDS: &str = "needs python3-yaml, golang-go, golang-gopkg-yaml.v3-dev";

/// The Python that Debian's `python3-yaml` installs PyYAML for.
const DEBIAN_PYTHON: &str = "/usr/bin/python3";

/// Reads a JSON array of documents on stdin and prints a JSON array with, for each, its
/// value tree or `{"error": …}`. Dates become their ISO text (assent keeps a `YYYY-MM-DD` date
/// as its string, which is the same date).
const PYTHON: &str = r#"
import datetime, json, sys, tomllib, unicodedata
import yaml
mode = sys.argv[1]
if mode == "cf":
    print(json.dumps([c for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]))
    sys.exit(0)
def plain(v):
    if isinstance(v, dict):
        return {str(k) if not isinstance(k, (bool, type(None))) else json.dumps(k): plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, (datetime.date, datetime.datetime, datetime.time)):
        return v.isoformat()
    return v
out = []
for doc in json.load(sys.stdin):
    try:
        read = {"yaml": yaml.safe_load, "toml": tomllib.loads}.get(mode, json.loads)
        v = plain(read(doc))
        # What JSON cannot carry (NaN, a lone surrogate) is an error entry, not a bad batch.
        json.dumps(v, allow_nan=False, ensure_ascii=False).encode("utf-8")
        out.append({"ok": v})
    except Exception as e:
        out.append({"error": repr(e)})
sys.stdout.write(json.dumps(out, ensure_ascii=False))
"#;

/// The Go twin of [`PYTHON`]: `yaml` reads with yaml.v3, `json` with `encoding/json`, both
/// into an `interface{}`; `folds` prints every `unicode.SimpleFold` pair.
const GO: &str = r#"
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

func plain(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = plain(x)
		}
		return t
	case map[interface{}]interface{}:
		m := map[string]interface{}{}
		for k, x := range t {
			switch key := plain(k).(type) {
			case nil:
				m["null"] = plain(x)
			default:
				m[fmt.Sprint(key)] = plain(x)
			}
		}
		return m
	case []interface{}:
		for i, x := range t {
			t[i] = plain(x)
		}
		return t
	case time.Time:
		if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
			return t.Format("2006-01-02")
		}
		return t.Format(time.RFC3339Nano)
	}
	return v
}

func main() {
	mode := os.Args[1]
	if mode == "folds" {
		var pairs [][2]rune
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if f := unicode.SimpleFold(r); f != r {
				pairs = append(pairs, [2]rune{r, f})
			}
		}
		out, _ := json.Marshal(pairs)
		fmt.Println(string(out))
		return
	}
	if mode == "bools" {
		// yaml.v3 into Go bool fields, as a typed consumer reads YAML 1.1 booleans.
		var docs []string
		if err := json.NewDecoder(os.Stdin).Decode(&docs); err != nil {
			panic(err)
		}
		var out []interface{}
		for _, doc := range docs {
			var v map[string]bool
			if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
				out = append(out, map[string]interface{}{"error": err.Error()})
			} else {
				out = append(out, map[string]interface{}{"ok": v})
			}
		}
		text, _ := json.Marshal(out)
		fmt.Println(string(text))
		return
	}
	var docs []string
	if err := json.NewDecoder(os.Stdin).Decode(&docs); err != nil {
		panic(err)
	}
	var out []map[string]interface{}
	for _, doc := range docs {
		var v interface{}
		var err error
		if mode == "yaml" {
			err = yaml.Unmarshal([]byte(doc), &v)
		} else {
			err = json.Unmarshal([]byte(doc), &v)
		}
		if err != nil {
			out = append(out, map[string]interface{}{"error": err.Error()})
			continue
		}
		if _, err := json.Marshal(plain(v)); err != nil {
			out = append(out, map[string]interface{}{"error": err.Error()})
			continue
		}
		out = append(out, map[string]interface{}{"ok": plain(v)})
	}
	text, _ := json.Marshal(out)
	fmt.Println(string(text))
}
"#;

/// Where the Go reader is built, once per test process.
fn go_reader() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("assent-consumers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        std::fs::write(dir.join("main.go"), GO).expect("write the Go reader");
        let out = Command::new("go")
            .args(["build", "-o", "readers", "main.go"])
            .current_dir(&dir)
            // Offline, against Debian's packaged module (golang-gopkg-yaml.v3-dev).
            .env("GO111MODULE", "off")
            .env("GOPATH", "/usr/share/gocode")
            .env("GOFLAGS", "")
            .env("GOCACHE", dir.join("cache"))
            .output()
            .unwrap_or_else(|e| panic!("`go` could not be started ({e}): {NEEDS}"));
        assert!(
            out.status.success(),
            "building the Go reader failed ({NEEDS}):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir.join("readers")
    })
}

/// Runs `program args` with `input` on stdin and parses its stdout as JSON.
fn run_json(program: &Path, args: &[&str], input: &str) -> Value {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} could not be started ({e}): {NEEDS}", program.display()));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{} {args:?} failed ({NEEDS}):\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the reader prints JSON")
}

fn read_in_python(mode: &str, docs: &[String]) -> Vec<Value> {
    let input = serde_json::to_string(docs).expect("JSON");
    // Debian's interpreter, which Debian's python3-yaml serves: a `python3` first on PATH
    // (a pyenv or a virtualenv) may lack PyYAML or carry another version of it.
    let out = run_json(Path::new(DEBIAN_PYTHON), &["-c", PYTHON, mode], &input);
    out.as_array().expect("a list").clone()
}

fn read_in_go(mode: &str, docs: &[String]) -> Vec<Value> {
    let input = serde_json::to_string(docs).expect("JSON");
    let out = run_json(go_reader(), &[mode], &input);
    out.as_array().expect("a list").clone()
}

/// Value equality as a reader of JSON sees it: numbers by value (`1500`, `1500.0` and
/// `1.5e3` are one number), everything else exactly.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn assent(format: Format, doc: &str) -> Result<Value, String> {
    parse_document("f", format, doc.as_bytes(), &Limits::default())
        .map(|tree| tree.to_value())
        .map_err(|e| e.to_string())
}

/// Checks that each reader reads every document assent accepts as assent does; returns how
/// many were accepted. TOML has one reader here, Python's `tomllib` (Go's standard library
/// reads no TOML).
fn readers_agree(format: Format, docs: &[String]) -> usize {
    let mode = match format {
        Format::Yaml => "yaml",
        Format::Json => "json",
        Format::Toml => "toml",
    };
    let py = read_in_python(mode, docs);
    let go = match format {
        Format::Toml => Vec::new(),
        _ => read_in_go(mode, docs),
    };
    let mut accepted = 0;
    for (i, doc) in docs.iter().enumerate() {
        let Ok(ours) = assent(format, doc) else {
            continue;
        };
        accepted += 1;
        let readers = [("Python", py.get(i)), ("Go", go.get(i))];
        for (reader, theirs) in readers.into_iter().filter_map(|(r, t)| Some((r, t?))) {
            let read = theirs.get("ok");
            assert!(
                read.is_some_and(|v| same(v, &ours)),
                "{reader} reads the accepted document otherwise:\n{doc}\nassent: {ours}\n\
                 {reader}: {theirs}"
            );
        }
    }
    accepted
}

/// Plain scalars covering every resolution rule, the risky ones among them.
const SCALARS: &[&str] = &[
    "30",
    "-1",
    "+1",
    "0",
    "-0",
    "007",
    "030",
    "012",
    "09",
    "0x1F",
    "0X1F",
    "-0x10",
    "0o17",
    "0b101",
    "0B11",
    "1_000",
    "1:30",
    "190:20:30",
    "1.5",
    "1.5e3",
    "1.5e+3",
    "1e3",
    "+.5",
    ".5",
    "5.",
    "007.5",
    "1.0e+400",
    ".inf",
    ".NaN",
    "-.nan",
    "~",
    "null",
    "NULL",
    "true",
    "True",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "2024-01-15",
    "2024-1-5",
    "2024-01-15 10:00:00",
    "<<",
    "=",
    "1.2.3",
    "orders.events.v1",
    "team-a",
    "9007199254740993",
    "9007199254740992",
    "18446744073709551615",
    "'030'",
    "\"yes\"",
    "\"<<\"",
    "'1:30'",
    "\"\\u200b\"",
];

/// Keys, among them look-alikes under case folding and keys with invisible characters.
const KEYS: &[&str] = &[
    "retention_days",
    "RETENTION_DAYS",
    "retention_day\u{17f}",
    "retention\u{200b}_days",
    "\"retention\\ufeff_days\"",
    "name",
    "Name",
    "partitions",
    "1",
    "yes",
    "<<",
    "\"<<\"",
    "n",
];

#[derive(Debug, Clone)]
enum Gen {
    Scalar(&'static str),
    Seq(Vec<Gen>),
    Map(Vec<(&'static str, Gen)>),
}

fn gen_node() -> impl Strategy<Value = Gen> {
    let leaf = prop::sample::select(SCALARS).prop_map(Gen::Scalar);
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Gen::Seq),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..4).prop_map(Gen::Map),
        ]
    })
}

fn yaml_flow(node: &Gen) -> String {
    match node {
        Gen::Scalar(s) => (*s).to_owned(),
        Gen::Seq(items) => format!(
            "[{}]",
            items.iter().map(yaml_flow).collect::<Vec<_>>().join(", ")
        ),
        Gen::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{k}: {}", yaml_flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn yaml_block(node: &Gen, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let nested = |v: &Gen| {
        matches!(v, Gen::Seq(i) if !i.is_empty()) || matches!(v, Gen::Map(e) if !e.is_empty())
    };
    match node {
        Gen::Seq(items) if !items.is_empty() => {
            for item in items {
                if nested(item) {
                    out.push_str(&format!("{pad}-\n"));
                    yaml_block(item, indent + 2, out);
                } else {
                    out.push_str(&format!("{pad}- {}\n", yaml_flow(item)));
                }
            }
        }
        Gen::Map(entries) if !entries.is_empty() => {
            for (key, value) in entries {
                if nested(value) {
                    out.push_str(&format!("{pad}{key}:\n"));
                    yaml_block(value, indent + 2, out);
                } else {
                    out.push_str(&format!("{pad}{key}: {}\n", yaml_flow(value)));
                }
            }
        }
        _ => out.push_str(&format!("{pad}{}\n", yaml_flow(node))),
    }
}

/// JSON text of a generated node: scalars become numbers where they are JSON numbers,
/// strings otherwise; keys are JSON-escaped.
fn json_text(node: &Gen) -> String {
    match node {
        Gen::Scalar(s) => {
            let bare = s.trim_matches(['\'', '"']);
            match serde_json::from_str::<Value>(bare) {
                Ok(Value::Number(_)) if *s == bare => bare.to_owned(),
                _ => serde_json::to_string(bare).expect("JSON"),
            }
        }
        Gen::Seq(items) => format!(
            "[{}]",
            items.iter().map(json_text).collect::<Vec<_>>().join(",")
        ),
        Gen::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| {
                    let key = serde_json::from_str::<String>(k).unwrap_or_else(|_| (*k).to_owned());
                    format!(
                        "{}:{}",
                        serde_json::to_string(&key).expect("JSON"),
                        json_text(v)
                    )
                })
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn generated(count: usize) -> Vec<Gen> {
    let mut runner = TestRunner::new(Config {
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        ..Config::default()
    });
    let strategy = gen_node();
    (0..count)
        .map(|_| strategy.new_tree(&mut runner).expect("a value").current())
        .collect()
}

#[test]
#[ignore = "needs python3-yaml, golang-go, golang-gopkg-yaml.v3-dev"]
fn every_accepted_yaml_document_reads_alike_in_pyyaml_and_yaml_v3() {
    let nodes = generated(600);
    let mut docs = Vec::new();
    for node in &nodes {
        let mut block = String::new();
        yaml_block(node, 0, &mut block);
        docs.push(block);
        docs.push(yaml_flow(node));
    }
    // Each scalar alone, as a value and as a key.
    for s in SCALARS {
        docs.push(format!("k: {s}\n"));
        docs.push(format!("- {s}\n"));
        docs.push(format!("{s}: v\n"));
    }
    let accepted = readers_agree(Format::Yaml, &docs);
    // The generator must reach both sides, or the test proves nothing.
    assert!(accepted > docs.len() / 10, "{accepted} of {}", docs.len());
    assert!(accepted < docs.len(), "nothing refused");
}

#[test]
#[ignore = "needs python3-yaml, golang-go, golang-gopkg-yaml.v3-dev"]
fn every_accepted_json_document_reads_alike_in_python_and_encoding_json() {
    let mut docs: Vec<String> = generated(600).iter().map(json_text).collect();
    docs.extend(
        [
            "-0",
            "-0.0",
            "[9007199254740993]",
            "[9007199254740992]",
            "99999999999999999999999",
            "1e23",
            "[0.1, 1e-7, 123456789.123456789]",
            "{\"a\":1,\"A\":2}",
            "\"\\ud800\"",
            "{\"\\u212aey\":1,\"key\":2}",
            "\"\\u200b\"",
        ]
        .map(str::to_owned),
    );
    let accepted = readers_agree(Format::Json, &docs);
    assert!(accepted > docs.len() / 10, "{accepted} of {}", docs.len());
    assert!(accepted < docs.len(), "nothing refused");
}

/// TOML text of a generated node, as the value of the key `v` (a TOML document is a table):
/// lists and maps inline, scalars as in [`json_text`] (JSON's string escapes are TOML's).
fn toml_text(node: &Gen) -> String {
    fn inline(node: &Gen) -> String {
        match node {
            Gen::Scalar(_) => json_text(node),
            Gen::Seq(items) => format!(
                "[{}]",
                items.iter().map(inline).collect::<Vec<_>>().join(", ")
            ),
            Gen::Map(entries) => format!(
                "{{ {} }}",
                entries
                    .iter()
                    .map(|(k, v)| {
                        let key =
                            serde_json::from_str::<String>(k).unwrap_or_else(|_| (*k).to_owned());
                        format!(
                            "{} = {}",
                            serde_json::to_string(&key).expect("JSON"),
                            inline(v)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    format!("v = {}\n", inline(node))
}

#[test]
#[ignore = "needs python3 (3.11 or later, for tomllib)"]
fn every_accepted_toml_document_reads_alike_in_tomllib() {
    let mut docs: Vec<String> = generated(600).iter().map(toml_text).collect();
    docs.extend(
        [
            "a = 9007199254740993\nb = -0\nc = 1e3\nd = 0x1F\ne = 0o17\nf = 1_000\n",
            "day = 1979-05-27\nlocal = 1979-05-27T07:32:00\ntime = 07:32:00\n",
            "[t]\nx = 1\n[t.u]\ny = [1, \"a\", { z = true }]\n[[list]]\nname = \"a\"\n[[list]]\nname = \"b\"\n",
            "# a comment with U+2028 \u{2028} and U+0085 \u{85} in it\r\na = \"x\u{2029}y\"\r\n",
            "a = 1\nA = 2\n",
            "\"retention\\u200b_days\" = 1\n",
            "a = 1\na = 2\n",
            "a = nan\n",
            "a = 99999999999999999999\n",
        ]
        .map(str::to_owned),
    );
    let accepted = readers_agree(Format::Toml, &docs);
    assert!(accepted > docs.len() / 10, "{accepted} of {}", docs.len());
    assert!(accepted < docs.len(), "nothing refused");
}

/// Keys a parser library gives a meaning of its own (the `toml` crate's datetime marker,
/// `serde_spanned`'s span fields, `serde_json`'s private number and raw-value keys), written
/// in a document beside other keys: every reader reads them as data, and so does assent,
/// with the other keys of their table.
const RESERVED_KEYS: &[&str] = &[
    "$__toml_private_datetime",
    "$__toml_private_Datetime",
    "$__serde_spanned_private_start",
    "$__serde_spanned_private_end",
    "$__serde_spanned_private_value",
    "$__serde_spanned_private_Spanned",
    "$serde_json::private::Number",
    "$serde_json::private::RawValue",
];

#[test]
#[ignore = "needs python3-yaml, golang-go, golang-gopkg-yaml.v3-dev"]
fn keys_a_parser_library_reserves_read_alike_in_every_reader() {
    let mut toml = Vec::new();
    let mut yaml = Vec::new();
    let mut json = Vec::new();
    for key in RESERVED_KEYS {
        for value in ["\"1979-05-27\"", "1979-05-27", "1", "[1, 2]", "{ a = 1 }"] {
            toml.push(format!("[t]\n\"{key}\" = {value}\nretention_days = 1\n"));
            toml.push(format!(
                "t = {{ \"{key}\" = {value}, retention_days = 1 }}\n"
            ));
            toml.push(format!("\"{key}\" = {value}\nretention_days = 1\n"));
        }
        for value in ["\"1979-05-27\"", "1", "[1, 2]", "{a: 1}"] {
            yaml.push(format!("t:\n  \"{key}\": {value}\n  retention_days: 1\n"));
            yaml.push(format!("\"{key}\": {value}\n"));
        }
        for value in ["\"1979-05-27\"", "1", "[1, 2]", "{\"a\": 1}"] {
            json.push(format!(
                "{{\"t\": {{\"{key}\": {value}, \"retention_days\": 1}}}}"
            ));
            json.push(format!("{{\"{key}\": {value}}}"));
        }
    }
    for (format, docs) in [
        (Format::Toml, toml),
        (Format::Yaml, yaml),
        (Format::Json, json),
    ] {
        // Never refused, and never read in another shape (a table read as one string).
        assert_eq!(readers_agree(format, &docs), docs.len(), "{format:?}");
    }
}

/// Each hostile case: a registry some reader reads with a risky value while assent, without
/// the refusal, read a safe one.
const HOSTILE: &[(Format, &str)] = &[
    (
        Format::Yaml,
        "topics:\n  - name: a\n    retention_days: 30\n    <<: {retention_days: 1}\n",
    ),
    (
        Format::Yaml,
        "topics:\n  - name: a\n    <<:\n      retention_days: 1\n    retention_days: 30\n",
    ),
    (Format::Yaml, "retention_days: 030\n"),
    (Format::Yaml, "partitions: 012\n"),
    (Format::Yaml, "retention_days: 1_000\n"),
    (Format::Yaml, "retention_days: 1:30\n"),
    (Format::Yaml, "retention_days: 190:20:30\n"),
    (Format::Yaml, "retention_days: 0o17\n"),
    (Format::Yaml, "retention_days: 0X1F\n"),
    (Format::Yaml, "retention_days: 09\n"),
    (Format::Yaml, "retention_days: 1e3\n"),
    (Format::Yaml, "compacted: yes\n"),
    (Format::Yaml, "compacted: off\n"),
    (Format::Yaml, "compacted: n\n"),
    (
        Format::Yaml,
        "retention_days: 30\nretention_day\u{17f}: 1\n",
    ),
    (Format::Yaml, "retention_days: 30\nRETENTION_DAYS: 1\n"),
    (Format::Yaml, "retention\u{feff}_days: 1\n"),
    (Format::Yaml, "retention\u{200b}_days: 1\n"),
    (Format::Yaml, "retention_days: 9007199254740993\n"),
    (
        Format::Json,
        "{\"retention_days\": 30, \"RETENTION_DAYS\": 1}",
    ),
    (
        Format::Json,
        "{\"retention_days\": 30, \"retention_day\u{17f}\": 1}",
    ),
    (Format::Json, "{\"retention\\ufeff_days\": 1}"),
    (Format::Json, "{\"retention_days\": 9007199254740993}"),
    (Format::Json, "{\"retention_days\": -0}"),
    (Format::Json, "{\"retention_days\": \"\\ud800\"}"),
    (Format::Toml, "retention_days = 30\nRETENTION_DAYS = 1\n"),
    (Format::Toml, "\"retention\\u200b_days\" = 1\n"),
];

#[test]
#[ignore = "needs python3-yaml, golang-go, golang-gopkg-yaml.v3-dev"]
fn every_hostile_case_is_refused_and_a_reader_reads_it_otherwise() {
    let mut yaml = Vec::new();
    for &(format, doc) in HOSTILE {
        assert!(assent(format, doc).is_err(), "accepted: {doc}");
        if format == Format::Yaml {
            yaml.push(doc.to_owned());
        }
    }
    // Each YAML case is read by PyYAML or yaml.v3 otherwise than assent would with the
    // scalar or key quoted or written out: at least, the two readers do not both read what
    // a YAML 1.2 reader with exact, byte-compared keys would.
    let (py, go) = (read_in_python("yaml", &yaml), read_in_go("yaml", &yaml));
    let go_bools = read_in_go("bools", &yaml);
    assert_doubles_round_wide_integers();
    for (i, doc) in yaml.iter().enumerate() {
        let strict = strict_yaml_reading(doc);
        let differs = |r: &Value| r.get("ok").is_none_or(|v| Some(v) != strict.as_ref());
        // `compacted: n` is the string "n" to every reader but a Go bool field's false.
        let typed_bool = doc.starts_with("compacted:") && go_bools[i].get("ok").is_some();
        // An integer past a double's precision: the readers that hold doubles, below.
        let wide = doc.contains("9007199254740993");
        assert!(
            differs(&py[i])
                || differs(&go[i])
                || typed_bool
                || wide
                || is_case_or_invisible_case(doc),
            "no reader reads it otherwise: {doc}\nPyYAML {}\nyaml.v3 {}",
            py[i],
            go[i]
        );
    }
}

/// What the wide-integer cases guard against: a reader that keeps doubles reads another number.
fn assert_doubles_round_wide_integers() {
    let read = read_in_go("json", &["[9007199254740993]".to_owned()]);
    assert_eq!(
        read[0]["ok"],
        serde_json::json!([9007199254740992u64]),
        "{read:?}"
    );
}

/// The cases whose risk is not in how the libraries build a tree but in how programs look
/// keys up (case-insensitive struct fields, a key that displays as another).
fn is_case_or_invisible_case(doc: &str) -> bool {
    doc.contains("RETENTION") || doc.contains('\u{17f}') || !doc.is_ascii()
}

/// The tree `serde_yaml` (YAML 1.2, no merge keys) reads, as what a strict reader sees.
fn strict_yaml_reading(doc: &str) -> Option<Value> {
    serde_yaml::from_str::<Value>(doc).ok()
}

#[test]
#[ignore = "needs python3-yaml, golang-go, golang-gopkg-yaml.v3-dev"]
fn every_unicode_format_character_is_refused_in_a_key() {
    let cf = run_json(Path::new("python3"), &["-c", PYTHON, "cf"], "");
    let cf: Vec<u32> = serde_json::from_value(cf).expect("code points");
    assert!(cf.len() > 150, "Python's unicodedata lists {} Cf", cf.len());
    for c in cf.into_iter().filter_map(char::from_u32) {
        let doc = format!("{{\"retention{c}_days\": 1}}");
        assert!(
            assent(Format::Json, &doc).is_err(),
            "U+{:04X} accepted",
            u32::from(c)
        );
    }
}

#[test]
#[ignore = "needs python3-yaml, golang-go, golang-gopkg-yaml.v3-dev"]
fn every_simple_case_folding_pair_of_go_collides() {
    let pairs = run_json(go_reader(), &["folds"], "");
    let pairs: Vec<(u32, u32)> = serde_json::from_value(pairs).expect("pairs");
    assert!(pairs.len() > 2000, "{} pairs", pairs.len());
    for (a, b) in pairs {
        let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) else {
            continue;
        };
        let doc = format!("{{\"k{a}\": 1, \"k{b}\": 2}}");
        assert!(
            assent(Format::Json, &doc).is_err(),
            "U+{:04X} and U+{:04X} accepted as two keys",
            u32::from(a),
            u32::from(b)
        );
    }
}
